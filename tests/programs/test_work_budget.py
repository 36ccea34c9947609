#!/usr/bin/env python3
"""One work budget per request (issue #62, findings 1, 2 and 4;
docs/DECODING.md "Work budget"), on the demo model:

  * hviske-server --max-beams 4: POST /inference and POST
    /v1/audio/transcriptions go through one check (hv_work_check). Beams
    over the cap are a 400 naming beam_size or num_beams and --max-beams
    on both (/inference took beam_size up to 64 whatever --max-beams
    said); a temperature list whose decodings (beams at each 0, one draw
    at each temperature above 0) come to more than 4 a chunk is a 400
    naming temperature (temperature_inc on /inference) and --max-beams;
    lists of more than 6 temperatures are refused (32 were taken);
    requests at the budget are answered (200) on both;
  * the CLI: a list of 7 temperatures, and --beams 64 with a list that
    tries a second temperature, are usage errors (exit 2) naming the
    limit, before any input is read;
  * Python: best_of over 64, a list of 7 temperatures and beams=64 with
    [0, 0] raise InvalidArgument naming the limit, before the audio is
    read (a path that does not exist is never opened); faster-whisper's
    defaults (beam_size 5, best_of 5, six temperatures: 30 decodings) run.

The refusals never decode, so the test takes seconds. Prints one line per
case and ends with "N passed, M failed".
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, SOURCE_DIR, Run, finish_in, report,  # noqa: E402
                    sanitized)
from hvserver import Server, multipart, request  # noqa: E402

BINARY = os.path.abspath(os.environ.get("HV_BINARY_DIR", os.path.join(SOURCE_DIR, "build")))
T = "/v1/audio/transcriptions"
STEPS = "0,0.2,0.4,0.6,0.8,1"


def post(port, path, fields, audio):
    body, ctype = multipart(list(fields), audio)
    return request(port, "POST", path, body, {"Content-Type": ctype})


def error_of(r):
    o = r.json() if r.status else None
    return (o or {}).get("error", {}) if isinstance(o, dict) else {}


def refused(r, param, *words):
    """A 400 naming param, whose message holds every one of words."""
    e = error_of(r)
    msg = e.get("message", "")
    return r.status == 400 and e.get("param") == param and all(w in msg for w in words)


def test_server(tmp):
    with open(EXAMPLE, "rb") as f:
        audio = f.read()
    srv = Server(DEMO_MODEL, "-t", "1", "--max-beams", "4", tmp=tmp)
    if not srv.started("server --max-beams 4 starts"):
        return
    try:
        port = srv.port
        for path, beams, temp, extra in ((T, "num_beams", "temperature", []),
                                         ("/inference", "beam_size", "temperature", [])):
            r = post(port, path, [(beams, "4")], audio)
            report(f"{path} {beams}=4 (at --max-beams 4): 200", r.status == 200, str(r))
            for n in ("5", "64"):
                r = post(port, path, [(beams, n)], audio)
                report(f"{path} {beams}={n}: 400 naming {beams} and --max-beams 4",
                       refused(r, beams, "--max-beams is 4", "from 1 to 4"), str(r))
            r = post(port, path, [(beams, "2"), (temp, "0,0.2,0.4")], audio)
            report(f"{path} {beams}=2 with temperature 0,0.2,0.4 (4 decodings): 200",
                   r.status == 200, str(r))
            for fields, what in (([(beams, "2"), (temp, "0,0,0.2")], "5 decodings"),
                                 ([(temp, "0,0,0,0,0")], "5 zeros"),
                                 ([(beams, "4"), (temp, "0,1")], "4 beams and a draw")):
                r = post(port, path, fields, audio)
                report(f"{path} {fields} ({what}): 400 naming temperature and the budget",
                       refused(r, "temperature", "work budget of 4", "--max-beams is 4"), str(r))
            r = post(port, path, [(temp, "0,0,0,0,0,0,0")], audio)
            report(f"{path} 7 temperatures: 400 naming temperature and its 6",
                   refused(r, "temperature", "at most 6"), str(r))
        # whisper-server's fallback: temperature, then up by temperature_inc
        r = post(port, "/inference", [("beam_size", "2"), ("temperature", "0"),
                                      ("temperature_inc", "0.5")], audio)
        report("/inference beam_size=2, temperature_inc 0.5 (0,0.5,1: 4 decodings): 200",
               r.status == 200, str(r))
        r = post(port, "/inference", [("beam_size", "3"), ("temperature", "0"),
                                      ("temperature_inc", "0.5")], audio)
        report("/inference beam_size=3, temperature_inc 0.5 (5 decodings): 400 naming "
               "temperature_inc and --max-beams",
               refused(r, "temperature_inc", "work budget of 4", "--max-beams is 4"), str(r))
        r = post(port, "/inference", [("temperature", "0"), ("temperature_inc", "0.04")], audio)
        report("/inference temperature_inc 0.04 (26 temperatures): 400 naming temperature_inc",
               refused(r, "temperature_inc", "more than 6"), str(r))
    finally:
        srv.stop()
    report("server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())


def test_cli():
    missing = "/nonexistent/never-read.wav"
    for args, words in ((["--temperature", "0,0,0,0,0,0,0"], "at most 6"),
                        (["--beams", "64", "--temperature", "0,0.2"], "work budget of 64"),
                        (["-bs", "5", "-tp", "0", "-tpi", "0.1"], "at most 6")):
        r = Run(["-m", DEMO_MODEL] + args + [missing])
        report(f"CLI {' '.join(args)}: exit 2 naming the limit, before the input is read",
               r.rc == 2 and words in r.err and "never-read" not in r.err, str(r))
    r = Run(["-m", DEMO_MODEL, "-t", "1", "--beams", "2", "--temperature", STEPS, EXAMPLE])
    report("CLI --beams 2 with whisper's six steps (7 decodings): runs", r.rc == 0 and r.out,
           str(r))


PY = """
import os, sys
sys.path.insert(0, sys.argv[1])
import hviske
m = hviske.Model(sys.argv[2], threads=1)
for kw in ({"best_of": 65, "temperature": [0.5]}, {"best_of": 2**31 - 1, "temperature": [0.5]},
           {"temperature": [0.0] * 7}, {"beams": 64, "temperature": [0.0, 0.0]},
           {"beams": 8, "best_of": 12, "temperature": [0, 0.2, 0.4, 0.6, 0.8, 1]}):
    try:
        m.transcribe("/nonexistent/never-read.wav", **kw)
        print("taken", sorted(kw))
    except hviske.InvalidArgument as e:
        print("refused:", e)
    except Exception as e:
        print("other:", type(e).__name__, e)
from hviske.whisper import WhisperModel
segs, info = WhisperModel(sys.argv[2], cpu_threads=1).transcribe(sys.argv[3])
print("faster-whisper defaults:", len(list(segs)) > 0)
"""


def test_python():
    env = dict(os.environ, HVISKE_LIBRARY=os.path.join(BINARY, "libhviske.so"))
    env.pop("HVISKE_VAD_MODEL", None)
    if sanitized():  # the interpreter needs the sanitizers' runtimes first
        libs = [os.path.realpath(subprocess.run(["cc", "-print-file-name=" + n],
                                                capture_output=True, text=True).stdout.strip())
                for n in ("libasan.so", "libubsan.so")]
        env.update(LD_PRELOAD=":".join(p for p in libs if os.path.isfile(p)),
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
    p = subprocess.run([sys.executable, "-c", PY, os.path.join(SOURCE_DIR, "python"), DEMO_MODEL,
                        EXAMPLE], capture_output=True, text=True, env=env, timeout=600)
    lines = p.stdout.splitlines()
    want = ("invalid best_of '65' (expected an integer from 1 to 64)",
            "invalid best_of '2147483647' (expected an integer from 1 to 64)", "at most 6",
            "work budget of 64", "work budget of 64")
    for i, w in enumerate(want):
        got = lines[i] if i < len(lines) else ""
        report(f"Python case {i}: InvalidArgument naming '{w}', before the audio is read",
               got.startswith("refused:") and w in got, f"{got!r} {p.stderr[-600:]!r}")
    report("Python: faster-whisper's defaults (30 decodings a chunk) run",
           p.returncode == 0 and "faster-whisper defaults: True" in p.stdout,
           f"{p.stdout[-300:]!r} {p.stderr[-600:]!r}")


def main():
    tmp = tempfile.mkdtemp(prefix="hv-test-work-budget-")
    test_server(tmp)
    test_cli()
    test_python()
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
