"""A fleet of hviske-server replicas behind a real load balancer (issue #15,
docs/SCALING.md "Server fleet"): Debian's nginx, run in the foreground with
deploy/nginx/hviske.conf (its replica ports, listen address and log
directory replaced), in front of two replicas of the demo model on
loopback ports.

  1. The expected text of each clip: one direct request per clip.
  2. Throughput: 40 requests from 8 clients straight to one replica, then
     the same 40 through nginx to both (requests/s printed; the note of
     issue #15 reports them).
  3. Drain: 40 requests from 8 clients through nginx; once 20 are
     answered, a long request of our own goes straight to B (so that what
     nginx sends B waits in its queue), and once B runs a request with
     another queued (a state, not a time), B gets SIGTERM. Every one of
     the 40 must come back 200 with its clip's text and its X-Request-Id:
     nginx retries what B refuses (503) on A, and what B had accepted
     finishes. B is kept alive after
     its queue empties by an upload of our own begun before the signal
     (sent straight to B, finished at the end), so its final /metrics can
     be read; then the counts must add up exactly: the 200s of both
     replicas' hviske_http_requests_total are the 40 requests, their 503s
     the 503s in nginx's $upstream_status (the long request apart: 200
     when B took it before the signal, 503 when after), and each
     replica's JSON access log agrees with its metrics, request id by
     request id.

Every process is stopped in `finally`, whatever fails; the temporary
directory (configs, logs, nginx's temp paths) goes with it. Works as root
(nginx's workers then run as nobody) and as any other user.
"""
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, SOURCE_DIR, WAIT, finish, report,  # noqa: E402
                    skip_or_fail, wait_until)
from hvserver import Server, multipart, request, scrape_settled, transcribe  # noqa: E402

FIXTURES = os.environ.get("HV_FIXTURES", "")
T = "/v1/audio/transcriptions"
N_REQUESTS = 40
N_CLIENTS = 8
CONF = os.path.join(SOURCE_DIR, "deploy", "nginx", "hviske.conf")
REPLICA_ARGS = ["-t", "1", "--workers", "1",
                # the held upload of the drain phase waits as long as needed
                "--timeout", "600", "--min-upload-rate", "0"]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def clips():
    """The example and two short fixture clips (espeak-ng Danish)."""
    out = [EXAMPLE]
    for name in ("da1_16k.wav", "da2_16k.wav"):
        p = os.path.join(FIXTURES, "audio", name)
        if os.path.isfile(p):
            out.append(p)
    return out


def repeat_wav(path, copies):
    """The WAV file at path said `copies` times over, as bytes."""
    with wave.open(path, "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    out = io.BytesIO()
    with wave.open(out, "wb") as o:
        o.setparams(params)
        o.writeframes(frames * copies)
    return out.getvalue()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx -c CONF -p PREFIX -g 'daemon off;' in the foreground, with
    deploy/nginx/hviske.conf included and everything under tmp."""

    def __init__(self, tmp, ports):
        self.tmp = tmp
        self.proc = None
        self.port = None
        with open(CONF) as f:
            site = f.read()
        self.conf_ok = all(s in site for s in (
            "127.0.0.1:8081", "127.0.0.1:8082", "listen 127.0.0.1:8080;",
            "/var/log/nginx/"))
        self.site = site.replace("127.0.0.1:8081", f"127.0.0.1:{ports[0]}") \
                        .replace("127.0.0.1:8082", f"127.0.0.1:{ports[1]}") \
                        .replace("/var/log/nginx/", tmp + "/")
        self.access_log = os.path.join(tmp, "hviske-access.log")
        self.error_log = os.path.join(tmp, "nginx-error.log")

    def start(self, binary):
        # as root, nginx's workers run as an unprivileged user: it must be
        # able to enter tmp
        user = ""
        if os.geteuid() == 0:
            user = "user nobody nogroup;\n"
            os.chmod(self.tmp, 0o755)
        for attempt in range(5):  # a free port taken meanwhile: another
            port = free_port()
            with open(os.path.join(self.tmp, "hviske.conf"), "w") as f:
                f.write(self.site.replace("listen 127.0.0.1:8080;",
                                          f"listen 127.0.0.1:{port};"))
            conf = os.path.join(self.tmp, "nginx.conf")
            with open(conf, "w") as f:
                f.write(f"""{user}worker_processes 1;
pid {self.tmp}/nginx.pid;
error_log {self.error_log} warn;
events {{ worker_connections 512; }}
http {{
    client_body_temp_path {self.tmp}/client_body;
    proxy_temp_path {self.tmp}/proxy;
    fastcgi_temp_path {self.tmp}/fastcgi;
    uwsgi_temp_path {self.tmp}/uwsgi;
    scgi_temp_path {self.tmp}/scgi;
    include {self.tmp}/hviske.conf;
}}
""")
            self.proc = subprocess.Popen(
                [binary, "-e", self.error_log, "-c", conf, "-p", self.tmp + "/",
                 "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT)

            def up():
                if self.proc.poll() is not None:
                    return "exited"
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=5):
                        return "up"
                except OSError:
                    return None
            state = wait_until(up, interval=0.05)
            if state == "up":
                self.port = port
                return True
            self.stop()
            if "in use" not in self.errors():
                return False
        return False

    def errors(self):
        try:
            with open(self.error_log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log(self):
        """nginx's access log, one JSON object per line."""
        try:
            with open(self.access_log) as f:
                return [json.loads(x) for x in f.read().splitlines() if x]
        except OSError:
            return []

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful
            try:
                self.proc.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_clients(port, audios, prefix, on_answer=None):
    """N_REQUESTS requests from N_CLIENTS threads; request i sends clip
    i % len(audios) with X-Request-Id PREFIX-i. Returns ({i: Reply},
    seconds)."""
    replies = {}
    lock = threading.Lock()
    todo = list(range(N_REQUESTS))

    def client():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
            r = transcribe(port, audios[i % len(audios)], request_id=f"{prefix}-{i}")
            with lock:
                replies[i] = r
                if on_answer:
                    on_answer()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(N_CLIENTS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    return replies, threads, t0, lock


def join(threads, t0):
    for t in threads:
        t.join()
    return time.monotonic() - t0


def all_right(replies, prefix, want):
    """(ok, why): every request answered 200 with its clip's text and id."""
    bad = []
    for i in range(N_REQUESTS):
        r = replies.get(i)
        if not (r and r.status == 200 and r.json() == {"text": want[i % len(want)]}
                and r.headers.get("x-request-id") == f"{prefix}-{i}"):
            bad.append((i, str(r)))
    return not bad, f"{len(bad)} wrong: {bad[:3]}"


def read_response(sock):
    """(status, JSON body) of one HTTP/1.1 answer with a Content-Length."""
    raw = b""
    while True:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        if sep and m and len(rest) >= int(m.group(1)):
            break
        chunk = sock.recv(65536)
        if not chunk:
            break
        raw += chunk
    m = re.match(rb"HTTP/1\.1 (\d{3})", raw)
    try:
        body = json.loads(rest)
    except ValueError:
        body = rest[:300]
    return (int(m.group(1)) if m else 0), body


def counts(samples):
    """{status: n} of the transcription route's hviske_http_requests_total."""
    out = {}
    for (name, labels), v in samples.items():
        d = dict(labels)
        if name == "hviske_http_requests_total" and d["route"] == T:
            out[d["status"]] = int(v)
    return out


def log_counts(lines, prefix):
    """{status: n} of the access log lines of ids PREFIX-*."""
    out = {}
    for o in lines:
        if o["request_id"].startswith(prefix + "-") and o["route"] == T:
            k = str(o["status"])
            out[k] = out.get(k, 0) + 1
    return out


def delta(after, before):
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def fleet(tmp, nginx_bin, sanitized_hint):
    audios_paths = clips()
    audios = [read(p) for p in audios_paths]
    a = Server(DEMO_MODEL, *REPLICA_ARGS, tmp=tmp, name="A")
    b = Server(DEMO_MODEL, *REPLICA_ARGS, tmp=tmp, name="B")
    ngx = None
    held = None
    try:
        if not (a.port and b.port):
            report("two replicas start", False, a.stderr() + b.stderr())
            return
        ngx = Nginx(tmp, [a.port, b.port])
        report("deploy/nginx/hviske.conf has the replica, listen and log lines "
               "the test replaces", ngx.conf_ok, CONF)
        if not ngx.start(nginx_bin):
            report("nginx starts with deploy/nginx/hviske.conf", False, ngx.errors()[-2000:])
            return
        r = wait_until(lambda: (lambda x: x if x.status == 200 else None)(
            request(ngx.port, "GET", "/ready", timeout=10)), interval=0.05)
        report(f"nginx on port {ngx.port} in front of replicas {a.port} and "
               f"{b.port}: /ready through it is 200", r is not None, ngx.errors()[-500:])
        if r is None:
            return
        r = request(ngx.port, "GET", "/metrics")
        report("nginx refuses /metrics (scraped per replica)", r.status == 404, str(r))

        # 1. the expected texts, from one direct request each
        want = []
        for p, audio in zip(audios_paths, audios):
            r = transcribe(a.port, audio, request_id="expect")
            want.append((r.json() or {}).get("text") if r.status == 200 else None)
        long_audio = repeat_wav(audios_paths[0], 12)
        r = transcribe(a.port, long_audio, request_id="expect-long")
        want_long = (r.json() or {}).get("text") if r.status == 200 else None
        report(f"expected texts of {len(audios)} clips and a long one (the "
               f"example 12 times) from a direct request",
               all(w for w in want) and want_long, f"{want} {want_long!r}")
        if not (all(want) and want_long):
            return

        # 2. throughput: one replica straight, then two through nginx
        replies, threads, t0, _ = run_clients(a.port, audios, "one")
        dt1 = join(threads, t0)
        ok, why = all_right(replies, "one", want)
        report(f"{N_REQUESTS} requests, {N_CLIENTS} clients, one replica: all "
               f"right ({N_REQUESTS / dt1:.1f} requests/s)", ok, why)
        replies, threads, t0, _ = run_clients(ngx.port, audios, "two")
        dt2 = join(threads, t0)
        ok, why = all_right(replies, "two", want)
        report(f"{N_REQUESTS} requests, {N_CLIENTS} clients, nginx and two "
               f"replicas: all right ({N_REQUESTS / dt2:.1f} requests/s)", ok, why)
        print(f"throughput: one replica {N_REQUESTS / dt1:.2f} requests/s "
              f"({dt1:.2f} s), two replicas behind nginx {N_REQUESTS / dt2:.2f} "
              f"requests/s ({dt2:.2f} s), {os.cpu_count()} cores"
              f"{sanitized_hint}")

        # 3. drain B midway
        base_a = counts(scrape_settled(a.port))
        base_b = counts(scrape_settled(b.port))
        body, ctype = multipart([], audios[0])
        held = socket.create_connection(("127.0.0.1", b.port), timeout=120)
        held.sendall((f"POST {T} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
                      f"X-Request-Id: held\r\nContent-Length: {len(body)}\r\n\r\n")
                     .encode() + body[:1000])
        report("an upload of our own begun on replica B",
               scrape_settled(b.port, in_flight=2) is not None, "")
        answered = [0]
        half = threading.Event()

        def on_answer():  # under the clients' lock
            answered[0] += 1
            if answered[0] == N_REQUESTS // 2:
                half.set()

        replies, threads, t0, lock = run_clients(ngx.port, audios, "drain", on_answer)
        # midway, a long request of our own straight to B holds its worker,
        # so that the requests nginx sends B meanwhile wait in its queue
        # (counted apart, id "long"; when it comes after the signal, it gets
        # 503 like any other)
        half.wait(timeout=600)
        long_reply = {}
        long_thread = threading.Thread(target=lambda: long_reply.setdefault(
            "r", transcribe(b.port, long_audio, request_id="long")), daemon=True)
        long_thread.start()

        def b_busy():
            with lock:
                if answered[0] >= N_REQUESTS:
                    return "done"
            o = request(b.port, "GET", "/health", headers={"X-Request-Id": "busy-check"},
                        timeout=10).json() or {}
            return "busy" if o.get("running", 0) >= 1 and o.get("queued", 0) >= 1 else None
        state = wait_until(b_busy, timeout=600, interval=0.01)
        b.proc.send_signal(signal.SIGTERM)
        report(f"SIGTERM to replica B midway: {answered[0]} of {N_REQUESTS} "
               f"answered, B running a request with others queued",
               state == "busy", str(state))
        took = wait_until(lambda: "SIGTERM: finishing" in b.stderr())
        r1 = request(b.port, "GET", "/ready")
        r2 = request(b.port, "GET", "/health")
        report("draining B: /ready 503, /health 200",
               took and r1.status == 503 and r2.status == 200, f"{r1} {r2}")
        join(threads, t0)
        long_thread.join()
        ok, why = all_right(replies, "drain", want)
        report(f"all {N_REQUESTS} requests answered 200 with the right text and "
               f"their X-Request-Id, none lost", ok, why)

        # the final counts: every request other than the scrape (and, on
        # B, the held upload) has ended
        fin_a = scrape_settled(a.port)
        fin_b = scrape_settled(b.port, in_flight=2)
        if fin_a is None or fin_b is None:
            report("final /metrics of both replicas", False, "not settled")
            return
        # B's long request: 200 when B took it before the signal, else 503
        # (refused at its headers: the client, still uploading, may see the
        # connection reset before the answer), as B's log says
        long_st = [o["status"] for o in b.access_lines() if o["request_id"] == "long"]
        r = long_reply.get("r")
        report(f"B's own long request: {long_st} in B's log; 200 with its text, "
               f"or refused with 503 when it came after the signal",
               (long_st == [200] and r and r.status == 200 and
                r.json() == {"text": want_long}) or
               (long_st == [503] and r and r.status in (503, 0)), f"{long_st} {r}")
        da = delta(counts(fin_a), base_a)
        db = delta(counts(fin_b), base_b)
        db_drain = dict(db)  # less the long request
        if long_st:
            k = str(long_st[0])
            db_drain[k] = db_drain.get(k, 0) - 1
        db_drain = {k: v for k, v in db_drain.items() if v}
        n200 = da.get("200", 0) + db_drain.get("200", 0)
        n503 = da.get("503", 0) + db_drain.get("503", 0)
        report(f"metrics: 200s of A ({da.get('200', 0)}) and B "
               f"({db_drain.get('200', 0)}, its long request apart) add up to "
               f"{N_REQUESTS}, nothing but 200 and 503",
               n200 == N_REQUESTS and set(da) | set(db_drain) <= {"200", "503"},
               f"A {da} B {db} (long: {long_st})")
        lines = [o for o in ngx.log() if o["request_id"].startswith("drain-")]
        ups = [s.strip() for o in lines for s in re.split(r"[,:]", o["upstream_status"])]
        report(f"nginx: {N_REQUESTS} requests, all 200; its upstream statuses hold "
               f"as many 503s ({ups.count('503')}) as the replicas' metrics ({n503}) "
               f"and nothing but 200 and 503",
               len(lines) == N_REQUESTS and all(o["status"] == 200 for o in lines)
               and ups.count("503") == n503 and set(ups) <= {"200", "503"},
               str([o for o in lines if o["upstream_status"] != "200"][:5]))

        # B: finish the held upload; it answers, then exits by itself
        held.sendall(body[1000:])
        status, answer = read_response(held)
        report("B: the upload begun before the signal is answered 200, its text",
               status == 200 and answer == {"text": want[0]}, f"{status} {answer}")
        held.close()
        held = None
        b.stop(None)
        report("B: exits 0 by itself once drained, clean", *b.clean_exit())
        a.stop()
        report("A: SIGTERM, exit 0, clean", *a.clean_exit())

        la, lb = a.access_lines(), b.access_lines()
        report("access logs: per replica, the drain requests' statuses equal its "
               "metrics",
               log_counts(la, "drain") == da and log_counts(lb, "drain") == db_drain,
               f"A {log_counts(la, 'drain')} vs {da}, B {log_counts(lb, 'drain')} vs {db}")
        ids = [o["request_id"] for o in la + lb
               if o["request_id"].startswith("drain-") and o["status"] == 200]
        report(f"access logs: each of the {N_REQUESTS} ids answered 200 exactly once",
               sorted(ids) == sorted(f"drain-{i}" for i in range(N_REQUESTS)),
               str(sorted(ids)[:5]))
        # what B had queued when its last /health said busy, just before the
        # signal, it had accepted and had not begun: it finishes after the
        # signal (the "SIGTERM: finishing" line itself may come after the
        # running request and even the queued ones have ended: another
        # thread writes it)
        text = b.stderr()
        checks = [o["time"] for o in lb if o["request_id"] == "busy-check"]
        late200 = [o for o in lb if checks and o["time"] >= checks[-1] and o["status"] == 200
                   and (o["request_id"].startswith("drain-") or o["request_id"] == "long")]
        report(f"B finished {len(late200)} accepted request(s) queued when the signal came",
               "SIGTERM: finishing" in text and late200, text[-800:])
        own = [o["status"] for o in lb if o["request_id"] == "held"]
        report("B's log: the held upload, 200", own == [200], str(own))
    finally:
        if held:
            held.close()
        for s in (b, a):
            if s.proc.poll() is None:
                s.stop(signal.SIGTERM, timeout=WAIT)
            s.kill()
        if ngx:
            ngx.stop()


def nginx_binary():
    """Debian's nginx (in /usr/sbin, which may not be on PATH), or None."""
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.access(
        "/usr/sbin/nginx", os.X_OK) else None)


def main():
    nginx_bin = nginx_binary()
    if not nginx_bin:
        skip_or_fail("the fleet behind nginx", "nginx is not installed")
        return finish()
    if not os.path.isdir(DEMO_MODEL):
        report("demo model present", False, DEMO_MODEL)
        return finish()
    sanitized = ""
    try:
        out = subprocess.run(["ldd", os.environ.get("HV_SERVER", "hviske-server")],
                             capture_output=True, text=True).stdout
        if "libasan" in out:
            sanitized = " (sanitizer build: not a measurement)"
    except OSError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        fleet(tmp, nginx_bin, sanitized)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
