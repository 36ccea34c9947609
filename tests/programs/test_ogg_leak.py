#!/usr/bin/env python3
"""Truncated Ogg Vorbis input keeps no memory (issue #51, finding 1).

libsndfile 1.2.0 (with libvorbis 1.3.7) leaked 5.8 KB for good every time
it failed to open a Vorbis stream, so each truncated OGG upload grew a
server by that much (20,000 uploads: 111 MB). hviske decodes Vorbis with
libvorbisfile instead (src/audio/vorbis.c). Here:

  * a release hviske-server gets 10,000 uploads of an OGG cut at 100
    bytes and cut inside its setup header (half each): every one a 400
    naming the file, and its VmRSS (/proc/PID/status) grows by less than
    4 MiB between the first 1,000 and the last (printed: before, after);
  * a long-running Python process (the hviske package) transcribes 4,000
    cut OGG files' bytes and paths: each a FormatError naming the input,
    and its VmRSS grows by less than 4 MiB;
  * the same, fewer, under the sanitizers: the server and the package
    then leave LeakSanitizer nothing to report (RSS is not compared: ASan
    holds freed memory in its quarantine).

Prints one line per case and ends with "N passed, M failed".
"""
import http.client
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish_in, reexec_with_sanitizers,  # noqa: E402
                    report, sanitized)
import hvserver  # noqa: E402

URL = "/v1/audio/transcriptions"
GROWTH_KIB = 4096


def cut_oggs(tmp):
    """(cut at 100 bytes, cut inside the setup header) of the example as
    OGG Vorbis (sox)."""
    full = os.path.join(tmp, "example.ogg")
    subprocess.run(["sox", EXAMPLE, full], check=True)
    with open(full, "rb") as f:
        data = f.read()
    # the setup header ends with the second page (the first page holds the
    # identification header alone)
    first = 27 + data[26] + sum(data[27:27 + data[26]])
    nseg = data[first + 26]
    second = first + 27 + nseg + sum(data[first + 27:first + 27 + nseg])
    return data[:100], data[:second - 10]


def uploads(port, bodies, count, threads=4):
    """Sends count uploads (bodies in turn) over keep-alive connections
    from `threads` clients; a list of the unexpected answers."""
    bad, lock = [], threading.Lock()
    forms = [hvserver.multipart([("model", "hviske")], b, filename="cut.ogg") for b in bodies]

    def client(k):
        conn = None
        for i in range(k, count, threads):
            body, ctype = forms[i % len(forms)]
            for attempt in range(2):
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                try:
                    conn.request("POST", URL, body, {"Content-Type": ctype})
                    r = conn.getresponse()
                    text = r.read()
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                    break
                except (OSError, http.client.HTTPException) as e:
                    conn.close()
                    conn = None
                    if attempt:
                        with lock:
                            bad.append(f"#{i}: {e}")
                    continue
            else:
                continue
            if r.status != 400 or b"not a readable audio file" not in text:
                with lock:
                    bad.append(f"#{i}: {r.status} {text[:200]!r}")
        if conn is not None:
            conn.close()

    ts = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return bad


def test_server(tmp, cuts):
    # LeakSanitizer on in the server, whatever this script runs with
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1")
    srv = hvserver.Server(DEMO_MODEL, "--workers", "2", "--queue", "16", "-q", tmp=tmp,
                          name="ogg", env=env)
    if not srv.started("server: starts"):
        return
    try:
        asan = srv.sanitized()
        warm, more = (100, 400) if asan else (1000, 10000)
        bad = uploads(srv.port, cuts, warm)
        rss0 = srv.rss_kib()
        bad += uploads(srv.port, cuts, more)
        rss1 = srv.rss_kib()
        report(f"server: {warm + more} truncated OGG uploads each answered 400 naming the file",
               not bad, "; ".join(bad[:5]))
        if asan:
            report(f"server: VmRSS {rss0} -> {rss1} KiB over {more} uploads (not compared "
                   "under ASan: its quarantine holds freed memory)", True)
        else:
            report(f"server: VmRSS {rss0} -> {rss1} KiB over {more} truncated OGG uploads "
                   f"({rss1 - rss0:+d} KiB)", rss1 - rss0 < GROWTH_KIB,
                   f"grew by {rss1 - rss0} KiB (at most {GROWTH_KIB})")
    finally:
        srv.stop()
    ok, why = srv.clean_exit()
    report("server: exits cleanly, nothing for LeakSanitizer" if asan else
           "server: exits cleanly", ok, why)


PY_CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import hviske
cuts = [open(p, "rb").read() for p in sys.argv[4:]]
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
def run(n):
    bad = 0
    for i in range(n):
        src = cuts[i % len(cuts)] if i % 2 else sys.argv[4 + i % len(cuts)]
        try:
            m.transcribe(src, chunking="energy")
            bad += 1
        except hviske.FormatError as e:
            bad += "not a readable audio file" not in str(e)
    return bad
with hviske.Model(sys.argv[2], threads=1) as m:
    n = int(sys.argv[3])
    bad = run(n // 4)
    r0 = rss()
    bad += run(n)
    print("rss", r0, rss(), "bad", bad)
"""


def test_python(tmp, cuts):
    paths = []
    for k, c in enumerate(cuts):
        p = os.path.join(tmp, f"cut{k}.ogg")
        with open(p, "wb") as f:
            f.write(c)
        paths.append(p)
    binary = os.environ.get("HV_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
    env = dict(os.environ, HVISKE_LIBRARY=os.path.join(binary, "libhviske.so"))
    asan = sanitized()
    n = 400 if asan else 4000
    p = subprocess.run([sys.executable, "-c", PY_CHILD, os.path.join(SOURCE_DIR, "python"),
                        DEMO_MODEL, str(n)] + paths, capture_output=True, text=True, env=env,
                       timeout=1800)
    fields = p.stdout.split()
    if p.returncode != 0 or len(fields) != 5:
        report("python: transcribes cut OGG files", False, p.stdout + p.stderr[-2000:])
        return
    r0, r1, bad = int(fields[1]), int(fields[2]), int(fields[4])
    report(f"python: {n + n // 4} cut OGG inputs (bytes and paths) each a FormatError",
           bad == 0, f"{bad} were not")
    if asan:
        report(f"python: VmRSS {r0} -> {r1} KiB (not compared under ASan)", True)
    else:
        report(f"python: VmRSS {r0} -> {r1} KiB over {n} cut OGG inputs ({r1 - r0:+d} KiB)",
               r1 - r0 < GROWTH_KIB, f"grew by {r1 - r0} KiB (at most {GROWTH_KIB})")


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()  # the Python case loads the sanitized libhviske
    tmp = tempfile.mkdtemp(prefix="hv-ogg-leak-")
    cuts = cut_oggs(tmp)
    test_server(tmp, cuts)
    test_python(tmp, cuts)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
