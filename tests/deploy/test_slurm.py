"""Archive batches under a real Slurm (docs/SCALING.md, "Archive batches").

Starts a single-node Slurm cluster of its own in a temporary directory
(Debian's slurm-wlm and munge, as root: munged, slurmctld and slurmd with
their own key, socket, ports, state, spool, pid and log files), submits
deploy/slurm/hviske-array.sbatch as a job array over a list of demo-model
clips, kills one task with SIGKILL while it transcribes its second input,
resubmits the array (numbered from 10, so the shard comes from
SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN), and checks that every input
was transcribed exactly once (the tasks' --summary lines: one "ok" per
input over both submissions, "skipped" for what the first one finished),
with outputs byte-identical to one `hviske --files-from` run without
shards. Every daemon it started is stopped by its pid file, and any
process left that carries this run's SLURM_CONF is killed, whatever
happened.

Needs root and slurm-wlm and munge (scripts/install-deps.sh installs them);
without them it is skipped with the reason (a failure when CI is set).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish, report,  # noqa: E402
                    skip_or_fail, wait_until)

SCRIPT = os.path.join(SOURCE_DIR, "deploy", "slurm", "hviske-array.sbatch")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")
STARTUP = 120     # seconds for a daemon or the node to come up
JOB_WAIT = 900    # seconds for an array to finish (the ASan build is slow)
SCHEDULER_ENV = ("JOB_COMPLETION_INDEX",)
N_TASKS = 3


def find_program(name):
    for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return shutil.which(name)


def free_ports(n):
    """n distinct TCP ports that are free now (bound to port 0, then
    released): every run gets its own, so runs side by side do not meet."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def stop_pid(pid, wait=30):
    """SIGTERM, then SIGKILL if it has not gone after wait seconds."""
    if not pid or not pid_alive(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if not wait_until(lambda: not pid_alive(pid), timeout=wait):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        wait_until(lambda: not pid_alive(pid), timeout=wait)


def pids_with_env(marker):
    """The processes whose environment holds the line marker (this run's
    SLURM_CONF=...): the daemons, slurmstepd and the jobs' processes."""
    found = []
    want = marker.encode() + b"\0"
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if (b"\0" + env).find(b"\0" + want) >= 0 and pid_alive(int(d)):
            found.append(int(d))
    return found


class Cluster:
    """A single-node Slurm cluster in directory d."""

    def __init__(self, d):
        self.d = d
        self.conf = os.path.join(d, "slurm.conf")
        self.sock = os.path.join(d, "munge", "munge.socket")
        self.host = socket.gethostname().split(".")[0]
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("SLURM_") and k not in SCHEDULER_ENV}
        self.env["SLURM_CONF"] = self.conf
        self.marker = "SLURM_CONF=" + self.conf
        self.pid_files = {
            "munged": os.path.join(d, "munge", "munged.pid"),
            "slurmctld": os.path.join(d, "slurmctld.pid"),
            "slurmd": os.path.join(d, "slurmd.pid"),
        }
        self.started = []

    def log(self, name):
        p = os.path.join(self.d, name + ".log")
        try:
            with open(p, errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return "(no log)"

    def run(self, args, timeout=60):
        return subprocess.run(args, capture_output=True, text=True, env=self.env,
                              timeout=timeout)

    def start(self):
        d = self.d
        munge_dir = os.path.join(d, "munge")
        os.makedirs(munge_dir)
        os.chmod(munge_dir, 0o755)  # munged: the socket directory open to all
        key = os.path.join(munge_dir, "munge.key")
        with open("/dev/urandom", "rb") as f, open(key, "wb") as k:
            k.write(f.read(1024))
        os.chmod(key, 0o400)
        self.started.append("munged")
        r = self.run([find_program("munged"), "--socket=" + self.sock,
                      "--key-file=" + key, "--pid-file=" + self.pid_files["munged"],
                      "--log-file=" + os.path.join(munge_dir, "munged.log"),
                      "--seed-file=" + os.path.join(munge_dir, "munged.seed")])
        if r.returncode != 0:
            return f"munged failed: {r.stderr.strip()}"
        if not wait_until(lambda: os.path.exists(self.sock), timeout=STARTUP):
            return "munged's socket did not appear"

        for sub in ("state", "spool", "logs"):
            os.makedirs(os.path.join(d, sub))
        ctld_port, slurmd_port = free_ports(2)
        with open("/proc/meminfo") as f:
            mem_mb = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) // 1024
        cpus = min(2, os.cpu_count() or 1)
        with open(self.conf, "w") as f:
            f.write(f"""\
ClusterName=hvtest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.sock}
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={self.pid_files["slurmctld"]}
SlurmdPidFile={self.pid_files["slurmd"]}
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
KillWait=5
MinJobAge=3600
InactiveLimit=0
SlurmctldTimeout=60
SlurmdTimeout=60
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mb * 8 // 10} State=UNKNOWN
PartitionName=hvtest Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        self.started.append("slurmctld")
        r = self.run([find_program("slurmctld"), "-f", self.conf, "-i"])
        if r.returncode != 0:
            return f"slurmctld failed: {r.stderr.strip()} {self.log('slurmctld')}"
        if not wait_until(lambda: self.run(["scontrol", "ping"]).stdout.count("UP") > 0,
                          timeout=STARTUP, interval=0.2):
            return f"slurmctld did not answer: {self.log('slurmctld')}"
        self.started.append("slurmd")
        r = self.run([find_program("slurmd"), "-f", self.conf, "-N", self.host])
        if r.returncode != 0:
            return f"slurmd failed: {r.stderr.strip()} {self.log('slurmd')}"
        if not wait_until(lambda: self.node_state() == "idle", timeout=STARTUP, interval=0.2):
            return (f"the node is not idle ({self.node_state()!r}): "
                    f"{self.log('slurmd')} {self.log('slurmctld')}")
        return None

    def node_state(self):
        r = self.run(["sinfo", "-h", "-N", "-n", self.host, "-o", "%t"])
        return r.stdout.strip()

    def jobs(self, job):
        """The array's tasks still in the queue (pending, running,
        completing)."""
        r = self.run(["squeue", "-h", "-j", str(job), "-o", "%i %t"])
        if r.returncode != 0 and "Invalid job id" in r.stderr:
            return []
        return r.stdout.split("\n")[:-1] if r.returncode == 0 else None

    def task_states(self, job):
        """{array task id: JobState} of a finished array (slurmctld keeps
        finished jobs for MinJobAge)."""
        r = self.run(["scontrol", "-o", "show", "job", str(job)])
        states = {}
        for line in r.stdout.split("\n"):
            m = re.search(r"ArrayTaskId=(\d+) .*JobState=(\S+)", line)
            if m:
                states[int(m.group(1))] = m.group(2)
        return states

    def stop(self):
        """Cancels every job, stops the daemons by their pid files, then
        kills whatever still carries this cluster's SLURM_CONF."""
        problems = []
        if "slurmctld" in self.started:
            try:
                r = self.run(["squeue", "-h", "-o", "%A"], timeout=30)
                ids = sorted(set(r.stdout.split()))
                if ids:
                    self.run(["scancel"] + ids, timeout=30)
                    wait_until(lambda: not self.run(["squeue", "-h"], timeout=30).stdout.strip(),
                               timeout=60, interval=0.2)
            except (subprocess.SubprocessError, OSError) as e:
                problems.append(f"cancelling jobs: {e}")
        for name in ("slurmd", "slurmctld", "munged"):
            if name in self.started:
                stop_pid(read_pid(self.pid_files[name]))
        left = pids_with_env(self.marker)
        for pid in left:
            stop_pid(pid, wait=10)
        return problems, left


def make_clips(d):
    """The inputs: the bundled example and clips made from it with sox;
    position 3 (the second input of task 0 of 3) is long, so that task 0
    can be killed while it transcribes it."""
    audio = os.path.join(d, "audio")
    os.makedirs(audio)
    clips = [
        ("a.wav", []),
        ("b.flac", ["tempo", "1.1"]),
        ("c.wav", ["pad", "1", "1"]),
        ("d-long.wav", None),
        ("e.wav", ["gain", "-8"]),
        ("f.flac", ["rate", "22050"]),
        ("g.wav", ["repeat", "1"]),
    ]
    names = []
    for name, effects in clips:
        out = os.path.join(audio, name)
        if effects is None:  # about 240 s: the example 80 times
            cmd = ["sox"] + [EXAMPLE] * 80 + [out]
        else:
            cmd = ["sox", EXAMPLE, out] + effects
        subprocess.run(cmd, check=True, capture_output=True)
        names.append("audio/" + name)
    return names


def read_summaries(d):
    """{task id: [summary objects]} of the files summaries/task-ID.jsonl."""
    out = {}
    sdir = os.path.join(d, "out", "summaries")
    if not os.path.isdir(sdir):
        return out
    for name in os.listdir(sdir):
        m = re.fullmatch(r"task-(\d+)\.jsonl", name)
        if m:
            with open(os.path.join(sdir, name), encoding="utf-8") as f:
                # whole lines only: a task may be writing the next one
                lines = f.read().split("\n")[:-1]
            out[int(m.group(1))] = [json.loads(x) for x in lines]
    return out


def output_name(inp):
    return os.path.splitext(os.path.basename(inp))[0] + ".txt"


def run_test(cluster, d):
    inputs = make_clips(d)
    with open(os.path.join(d, "list.txt"), "w") as f:
        f.write("".join(x + "\n" for x in inputs))

    # the reference: one process, no shards
    env = dict(cluster.env)
    del env["SLURM_CONF"]
    ref = subprocess.run([CLI, "-m", DEMO_MODEL, "-t", "1", "-q", "--files-from", "list.txt",
                          "--output-dir", "ref"], cwd=d, env=env, capture_output=True,
                         text=True, timeout=JOB_WAIT)
    report("reference run without shards", ref.returncode == 0 and sorted(
        os.listdir(os.path.join(d, "ref"))) == sorted(map(output_name, inputs)),
        f"rc={ref.returncode} {ref.stderr[-500:]}")

    # the array script reads these, as docs/SCALING.md shows
    cluster.env.update({"HVISKE": CLI, "MODEL": DEMO_MODEL, "LIST": "list.txt", "OUT": "out",
                        "WEIGHTS": "auto"})

    def submit(array):
        r = cluster.run(["sbatch", "--parsable", f"--array={array}", "--cpus-per-task=1",
                         "--mem=1G", f"--chdir={d}", f"--output={d}/logs/%A_%a.log",
                         SCRIPT])
        if r.returncode != 0:
            return None, f"sbatch failed: {r.stderr.strip()}"
        return r.stdout.strip().split(";")[0], None

    def wait_done(job):
        return wait_until(lambda: cluster.jobs(job) == [], timeout=JOB_WAIT, interval=0.2)

    # first submission: kill task 0 after it reported its first input,
    # while it transcribes the long second one
    job1, err = submit(f"0-{N_TASKS - 1}")
    if not job1:
        report("first submission", False, err)
        return
    first = inputs[0]
    killed = wait_until(lambda: any(x.get("input") == first
                                    for x in read_summaries(d).get(0, [])),
                        timeout=JOB_WAIT, interval=0.02)
    r = cluster.run(["scancel", "--signal=KILL", "--full", f"{job1}_0"])
    report("task 0 reached its first input and was sent SIGKILL",
           killed and r.returncode == 0,
           f"rc={r.returncode} {r.stderr} logs: {cluster.log('slurmd')}")
    done = wait_done(job1)
    states1 = cluster.task_states(job1)
    report("first submission: tasks 1 and 2 completed, task 0 killed",
           done and states1.get(1) == "COMPLETED" and states1.get(2) == "COMPLETED"
           and states1.get(0) not in (None, "COMPLETED"),
           f"queue {cluster.jobs(job1)} states {states1}")
    sums1 = read_summaries(d)
    lines1 = {t: len(v) for t, v in sums1.items()}
    long_input = inputs[N_TASKS]
    task0 = [x["input"] for x in sums1.get(0, [])]
    report("task 0 was killed midway (its first input done, the long one not)",
           task0 == [first] and not os.path.exists(
               os.path.join(d, "out", output_name(long_input))),
           f"task 0's summary: {sums1.get(0)}")

    # second submission of the same script, numbered from 10: the shards
    # come from SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN
    job2, err = submit(f"10-{10 + N_TASKS - 1}")
    if not job2:
        report("second submission", False, err)
        return
    done = wait_done(job2)
    states2 = cluster.task_states(job2)
    report("second submission: every task completed",
           done and states2 == {10 + k: "COMPLETED" for k in range(N_TASKS)},
           f"queue {cluster.jobs(job2)} states {states2} logs "
           f"{os.listdir(os.path.join(d, 'logs'))}")

    sums2 = read_summaries(d)
    round1 = [x for t in range(N_TASKS) for x in sums2.get(t, [])]
    round2 = [x for t in range(N_TASKS) for x in sums2.get(10 + t, [])]
    ok_count = {i: 0 for i in inputs}
    for x in round1 + round2:
        if x["status"] == "ok":
            ok_count[x["input"]] = ok_count.get(x["input"], 0) + 1
    report("every input transcribed exactly once over both submissions",
           ok_count == {i: 1 for i in inputs} and all(
               x["status"] in ("ok", "skipped") and x["error"] is None
               for x in round1 + round2),
           f"ok per input {ok_count}; summaries {sums2}")
    done1 = {x["input"] for x in round1 if x["status"] == "ok"}
    report("the second submission skipped exactly what the first finished",
           sorted(x["input"] for x in round2) == sorted(inputs) and all(
               (x["status"] == "skipped") == (x["input"] in done1) for x in round2)
           and lines1 == {t: len(sums2.get(t, [])) for t in range(N_TASKS)},
           f"first {sorted(done1)} second {round2}")
    by_task = {k: [x["input"] for x in sums2.get(10 + k, [])] for k in range(N_TASKS)}
    report("shard K holds the inputs at positions i mod 3 = K, in order",
           by_task == {k: inputs[k::N_TASKS] for k in range(N_TASKS)}, f"{by_task}")

    outs = sorted(n for n in os.listdir(os.path.join(d, "out")) if n != "summaries")
    same = outs == sorted(map(output_name, inputs))
    diff = []
    for n in outs:
        with open(os.path.join(d, "out", n), "rb") as a, \
                open(os.path.join(d, "ref", n), "rb") as b:
            if a.read() != b.read():
                diff.append(n)
    report("outputs byte-identical to one run without shards, no other files",
           same and not diff, f"outputs {outs} differing {diff}")


def main():
    if os.geteuid() != 0:
        print("skip  slurm: needs root to run munged, slurmctld and slurmd as a "
              "cluster of its own")
        return finish()
    missing = [p for p in DAEMONS if not find_program(p)]
    missing += [p for p in CLIENTS + ("sox",) if not shutil.which(p)]
    if missing:
        skip_or_fail("slurm", f"missing {' '.join(missing)}")
        return finish()
    d = tempfile.mkdtemp(prefix="hv-slurm-")
    os.chmod(d, 0o755)
    cluster = Cluster(d)
    try:
        err = cluster.start()
        report("single-node Slurm cluster up (munged, slurmctld, slurmd)", err is None,
               err or "")
        if err is None:
            run_test(cluster, d)
    finally:
        problems, left = cluster.stop()
        still = pids_with_env(cluster.marker)
        if left:
            print(f"note  processes left after the daemons stopped, killed by pid: {left}")
        report("every daemon and job process stopped", not problems and not still,
               f"{problems} left running: {still} (were: {left})")
        if not still:
            shutil.rmtree(d, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
