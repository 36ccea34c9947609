"""The console: hviske on a terminal, run in a real pseudo-terminal (pty),
on the demo model (models/demo) and examples/da-example.wav.

What the terminal shows is rebuilt from the bytes the program wrote by a
minimal terminal (carriage return, erase to the end of the line, line
feed; rows of unlimited width), so text that progress erased would be
missing from the rebuilt screen.

  * txt on a terminal, stdout and stderr the same pty: one
    "[MM:SS.mmm --> MM:SS.mmm] text" line per segment, equal to what
    --print-timestamps writes into a pipe; every line is on the screen at
    the end, and the progress line (drawn between chunks) is gone;
  * --stream (plain, -q: no timestamps) on a terminal: one line per
    segment, the same texts, none erased;
  * standard output a pipe, stderr a terminal: today's plain text, one
    line per input;
  * --progress with stderr a file: one line per chunk in the documented
    form, the last at 100%; without it nothing is written there;
  * several inputs, one missing: every txt line starts with its input's
    name, the failure is on stderr and the run exits 1;
  * whisper-cli's -nt: the plain transcript on a terminal; with several
    inputs the progress line says "file 1 of 2"; every output file
    written is named ("hviske: wrote FILE"), but with -q or -np; Ctrl-C
    while the progress line is shown erases it.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, TIMEOUT, Run, finish, in_pty, render,  # noqa: E402
                    report, sentences_wav)

LINE = re.compile(r"^\[(\d\d):(\d\d)\.(\d{3}) --> (\d\d):(\d\d)\.(\d{3})\] (.+)$")
PROGRESS = re.compile(r"^hviske: (.+): progress (\d+\.\d)% done_s=(\d+\.\d\d) "
                      r"total_s=(\d+\.\d\d) speed=(\d+\.\d\d) eta_s=(\d+)$")



def main():
    tmp = tempfile.mkdtemp(prefix="hv-console-")
    long_wav = sentences_wav(os.path.join(tmp, "long.wav"), 4, 2.0)
    # fixed 2 s chunks: several chunks, so progress is drawn between them
    base = ["-m", DEMO_MODEL, "-t", "1", "--chunking", "fixed", "--chunk-seconds", "2"]

    ref = Run(base + ["-q", "--print-timestamps", long_wav])
    want = ref.lines()
    report("--print-timestamps into a pipe: one timed line per segment",
           ref.rc == 0 and len(want) >= 3 and all(LINE.match(x) for x in want), str(ref))

    rc, data, _ = in_pty(base + [long_wav])
    screen = render(data)
    report("terminal: timed segment lines, none erased, progress gone at the end",
           rc == 0 and screen == want and b"\x1b[K" in data,
           f"rc={rc}\nscreen={screen!r}\nwant={want!r}\nbytes={data[-800:]!r}")
    report("terminal: the progress line was drawn between segments",
           b"s of audio per second" in data, repr(data[-800:]))

    plain = Run(base + ["-q", "--stream", long_wav])
    texts = [LINE.match(x).group(7) for x in want if LINE.match(x)]
    report("--stream into a pipe: one plain line per segment",
           plain.rc == 0 and plain.lines() == texts, f"{plain}\nwant={texts!r}")
    rc, data, _ = in_pty(base + ["--stream", "-q", long_wav])
    report("--stream -q on a terminal: one line per segment, none erased",
           rc == 0 and render(data) == texts, f"rc={rc} screen={render(data)!r}")
    rc, data, _ = in_pty(base + ["--stream", long_wav])
    report("--stream with progress on a terminal: timed lines, none erased",
           rc == 0 and render(data) == want, f"rc={rc} screen={render(data)!r}")

    one = Run(base + ["-q", long_wav])
    rc, data, out = in_pty(base + [long_wav], stdout_pty=False)
    report("stdout a pipe: the plain transcript, one line per input",
           rc == 0 and out.decode() == one.out and out.count(b"\n") == 1
           and not out.startswith(b"["), f"rc={rc} out={out!r}")

    err_path = os.path.join(tmp, "progress.txt")
    with open(err_path, "wb") as ef:
        p = subprocess.run([CLI] + base + ["--progress", long_wav], stdout=subprocess.PIPE,
                           stderr=ef, timeout=TIMEOUT)
    with open(err_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    m = [PROGRESS.match(x) for x in lines]
    report("--progress on a file: one parseable line per chunk, the last at 100%",
           p.returncode == 0 and len(lines) >= 3 and all(m) and
           all(x.group(1) == long_wav for x in m) and m[-1].group(2) == "100.0" and
           all(float(a.group(3)) <= float(b.group(3)) for a, b in zip(m, m[1:])),
           repr(lines))
    with open(err_path, "wb") as ef:
        p = subprocess.run([CLI] + base + [long_wav], stdout=subprocess.PIPE, stderr=ef,
                           timeout=TIMEOUT)
    report("without --progress a file gets no progress", os.path.getsize(err_path) == 0,
           open(err_path).read())

    missing = os.path.join(tmp, "missing.wav")
    r = Run(["-m", DEMO_MODEL, "-t", "1", "-q", long_wav, missing, EXAMPLE])
    report("several inputs: each line names its input, the failure on stderr",
           r.rc == 1 and len(r.lines()) == 2 and r.lines()[0].startswith(long_wav + ": ") and
           r.lines()[1].startswith(EXAMPLE + ": ") and missing in r.err, str(r))
    r = Run(["-m", DEMO_MODEL, "-t", "1", "-q", "--print-timestamps", long_wav, EXAMPLE])
    report("several inputs with timestamps: FILE: [times] text",
           r.rc == 0 and all(x.startswith((long_wav + ": [", EXAMPLE + ": [")) for x in r.lines()),
           str(r))

    # whisper-cli's -nt: no times on a terminal either
    rc, data, _ = in_pty(base + ["-nt", long_wav])
    report("-nt on a terminal: the plain transcript, progress gone",
           rc == 0 and render(data) == one.lines(), f"rc={rc} screen={render(data)!r}")
    # several inputs: the progress line says which
    rc, data, _ = in_pty(base + ["-q", "--progress", long_wav, long_wav], stdout_pty=False)
    report("several inputs: the progress line says 'file 1 of 2', then 'file 2 of 2'",
           rc == 0 and b"long.wav (file 1 of 2):" in data and b"long.wav (file 2 of 2):" in data,
           repr(data[-600:]))
    # output files written are named on a terminal, not with -q or -np
    d = os.path.join(tmp, "wrote")
    os.makedirs(d)
    rc, data, _ = in_pty(base + ["-osrt", "-otxt", long_wav], cwd=d)
    screen = render(data)
    report("on a terminal each file written is named",
           rc == 0 and f"hviske: wrote {long_wav}.srt" in screen and
           f"hviske: wrote {long_wav}.txt" in screen, f"{screen!r}")
    rc, data, _ = in_pty(base + ["-o", os.path.join(d, "all.srt"), long_wav])
    report("-o FILE on a terminal: named when written",
           rc == 0 and render(data) == [f"hviske: wrote {os.path.join(d, 'all.srt')}"],
           f"{render(data)!r}")
    for quiet in ("-q", "-np"):
        rc, data, _ = in_pty(base + [quiet, "-o", os.path.join(d, "q.srt"), long_wav])
        report(f"{quiet}: no notice", rc == 0 and render(data) == [], f"{render(data)!r}")

    # Ctrl-C while the progress line is shown: the line is erased
    sent = []

    def interrupt(p, data):
        rows = render(data)
        if not sent and rows and "ETA" in rows[-1]:
            p.send_signal(signal.SIGINT)
            sent.append(rows[-1])
    rc, data, _ = in_pty(base + [long_wav], on_data=interrupt)
    rows = render(data)
    report("Ctrl-C while progress is shown: the run ends by SIGINT, the line erased",
           sent and rc == -signal.SIGINT and not any("ETA" in r for r in rows),
           f"rc={rc} sent={sent} screen={rows!r}")
    sys.exit(finish())


if __name__ == "__main__":
    main()
