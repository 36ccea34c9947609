"""Results as they come: hviske --stream and hviske-server's stream=true,
on the demo model (models/demo) and examples/da-example.wav.

  * CLI: --stream writes, for txt, one line per segment (the segments'
    texts); for srt and vtt, byte for byte what the plain run writes (the test audio's segments lie 6 s apart, more than
    the pause that ends a cue anyway); for jsonl one {"file", "segment"}
    line per segment, equal in order to the closing line's "segments",
    and the closing line equal to the plain run's but for the timings,
    with and without --word-timestamps; each input's lines are out before
    the next input is read (standard input held open); --stream with -o
    FILE, --output-dir or --format json is a usage error;
  * server, read by a plain SSE parser: stream=true answers
    text/event-stream with a transcript.text.delta event per segment (the
    CLI's segments, in order) and one transcript.text.done event whose
    text is the deltas joined and the plain answer's text, for
    response_format json and text, and with a temperature list (the
    fallback from sampling at 1.6 to greedy); stream with srt, and an upload that is
    no audio, get the ordinary JSON 400 before any event; README's curl -N
    line streams;
  * a client that closes the connection after the first event stops the
    transcription: the server logs it, stopped well before the last of 80
    segments, /metrics shows no transcription running, and the one worker
    serves the next request;
  * the official OpenAI Node SDK (openai from npm, tests/node, installed by
    scripts/install-deps.sh) reads the stream unchanged
    (tests/node/stream.mjs), and the Node example of README.md's Server
    section runs as written.
"""
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, SOURCE_DIR, TIMEOUT, Run,  # noqa: E402
                    finish, readme_section, report, sentences_wav, skip_or_fail,
                    wait_until)
from hvserver import Server, abandon_stream, multipart, recv_all  # noqa: E402

NODE_DIR = os.path.join(SOURCE_DIR, "tests", "node")



# ------------------------------------------------------------------ CLI

def without_timings(line):
    o = json.loads(line)
    o.pop("timings", None)
    return o


def test_cli(long7, tmp):
    base = ["-m", DEMO_MODEL, "-t", "2", "-q"]
    a = Run(base + ["--format", "jsonl", long7])
    b = Run(base + ["--stream", "--format", "txt", long7])
    texts = [g["text"] for g in json.loads(a.out)["segments"]] if a.rc == 0 else None
    report("--stream --format txt: one line per segment, its text",
           b.rc == 0 and texts and b.lines() == texts, f"\n{a}\n{b}")
    for fmt in ("srt", "vtt"):
        a = Run(base + ["--format", fmt, long7])
        b = Run(base + ["--stream", "--format", fmt, long7])
        report(f"--stream --format {fmt}: byte for byte the plain output",
               a.rc == 0 and b.rc == 0 and a.raw == b.raw and len(a.raw) > 100,
               f"\n{a}\n{b}")
    for words in ([], ["--word-timestamps"]):
        a = Run(base + ["--format", "jsonl"] + words + [long7])
        b = Run(base + ["--stream", "--format", "jsonl"] + words + [long7])
        lines = b.lines()
        try:
            objs = [json.loads(x) for x in lines]
            segs = [o["segment"] for o in objs[:-1]]
            ok = (b.rc == 0 and len(objs) == 8 and
                  all(set(o) == {"file", "segment"} and o["file"] == long7
                      for o in objs[:-1]) and
                  segs == objs[-1]["segments"] and
                  without_timings(lines[-1]) == without_timings(a.lines()[0]) and
                  (not words or all(s["words"] for s in segs)))
        except (ValueError, KeyError, IndexError) as e:
            ok, objs = False, str(e)
        report(f"--stream --format jsonl {' '.join(words)}: 7 segment lines, in order the "
               "closing line's segments; the closing line is the plain one", ok,
               f"\n{a}\n{b}")

    # each input's lines go out before the next input is read: the second
    # input is standard input, held open until the first's lines are in
    p = subprocess.Popen([CLI] + base + ["--stream", "--format", "jsonl", long7, "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    got = []

    def reader():
        for line in p.stdout:
            got.append(line)
    t = threading.Thread(target=reader)
    t.start()
    first_done = wait_until(lambda: any(b'"segments"' in x for x in got))
    running = p.poll() is None
    with open(EXAMPLE, "rb") as f:
        p.stdin.write(f.read())
    p.stdin.close()
    rc = p.wait(timeout=TIMEOUT)
    t.join()
    err = p.stderr.read().decode("utf-8", "replace")
    files = [json.loads(x)["file"] for x in got]
    report("--stream: an input's segments and result are out before the next input "
           "is read (standard input still open)",
           first_done and running and rc == 0 and files == [long7] * 8 + ["-"] * 2,
           f"rc={rc} files={files} err={err[-300:]!r}")

    for args in (["-o", os.path.join(tmp, "x.txt")], ["--output-dir", tmp],
                 ["--format", "json"]):
        r = Run(base + ["--stream"] + args + [EXAMPLE])
        report(f"--stream {' '.join(args)}: usage error (exit 2)",
               r.rc == 2 and "--stream" in r.err, str(r))
    r = Run(base + ["--stream", "-o", "-", EXAMPLE])
    report("--stream -o -: standard output", r.rc == 0 and r.out.startswith("I morgen"),
           str(r))


# ---------------------------------------------------------------- server

def request_bytes(port, fields, file_bytes, path="/v1/audio/transcriptions"):
    body, ctype = multipart(fields, file_bytes, filename="a.wav")
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode() + body


def dechunk(body):
    out, i = b"", 0
    while True:
        j = body.index(b"\r\n", i)
        n = int(body[i:j].split(b";")[0], 16)
        if n == 0:
            return out
        out += body[j + 2:j + 2 + n]
        i = j + 2 + n + 2


def http(port, fields, file_bytes, path="/v1/audio/transcriptions"):
    """(status, headers dict (lower-case names), body) of one request."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(request_bytes(port, fields, file_bytes, path))
        data = recv_all(s)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for x in lines[1:]:
        k, _, v = x.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    return status, headers, body


def get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = recv_all(s)
    head, _, body = data.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        body = dechunk(body)
    return int(head.split()[1]), body.decode("utf-8", "replace")


def sse_events(body):
    """A plain Server-Sent Events parser (the WHATWG rules that matter
    here): events end at a blank line, "data:" lines are joined with
    newlines, lines starting with ':' are comments. The JSON of each
    event's data."""
    events, data = [], []
    for line in body.decode("utf-8").split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if line == "":
            if data:
                events.append(json.loads("\n".join(data)))
            data = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            v = line[5:]
            data.append(v[1:] if v.startswith(" ") else v)
        else:
            raise ValueError(f"unexpected SSE line {line!r}")
    if data:
        raise ValueError("an event without its blank line")
    return events


def check_events(name, events, want_text, want_segments):
    deltas = [e for e in events[:-1]]
    ok = (len(events) == len(want_segments) + 1 and
          all(e == {"type": "transcript.text.delta", "delta": e.get("delta")} for e in deltas) and
          events[-1] == {"type": "transcript.text.done", "text": want_text} and
          "".join(e["delta"] for e in deltas) == want_text and
          [e["delta"].strip() for e in deltas] == want_segments)
    report(name, ok, f"events={events!r} want {want_text!r} {want_segments!r}")


def test_server_sse(port, long7, want_text, want_segments):
    with open(long7, "rb") as f:
        audio = f.read()
    for fmt in ("json", "text"):
        st, h, body = http(port, [("model", "hviske"), ("stream", "true"),
                                  ("response_format", fmt)], audio)
        ok = (st == 200 and h.get("content-type") == "text/event-stream" and
              h.get("transfer-encoding", "").lower() == "chunked")
        try:
            events = sse_events(body)
        except (ValueError, UnicodeDecodeError) as e:
            events, ok = [], False
            report(f"stream=true {fmt}: parses as SSE", False, f"{e}: {body[:300]!r}")
        report(f"stream=true response_format {fmt}: 200 text/event-stream, chunked", ok,
               f"{st} {h}")
        check_events(f"stream=true {fmt}: a delta per segment (the CLI's), then done with "
                     "the whole text", events, want_text, want_segments)
    # a client that half-closes after its request still reads every event
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(request_bytes(port, [("model", "hviske"), ("stream", "true")], audio))
        s.shutdown(socket.SHUT_WR)
        data = recv_all(s)
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        events = sse_events(dechunk(body))
    except (ValueError, UnicodeDecodeError):
        events = []
    check_events("stream=true, the client half-closing after its request: every event",
                 events, want_text, want_segments)
    # a temperature list (the fallback) streams as it transcribes: 1.6 alone
    # garbles the demo model's sentences, the list falls back to greedy
    st, h, body = http(port, [("stream", "true"), ("temperature", "1.6,0"), ("seed", "7")],
                       audio)
    try:
        events = sse_events(body)
    except (ValueError, UnicodeDecodeError):
        events = []
    check_events("stream=true temperature=1.6,0: every chunk falls back to greedy, the "
                 "greedy segments", events, want_text, want_segments)
    st, h, body = http(port, [("model", "hviske"), ("stream", "false")], audio)
    report("stream=false: the plain JSON answer",
           st == 200 and json.loads(body) == {"text": want_text}, f"{st} {body[:300]!r}")
    st, h, body = http(port, [("model", "hviske"), ("stream", "true"),
                              ("response_format", "srt")], audio)
    err = json.loads(body).get("error", {}) if body.startswith(b"{") else {}
    report("stream=true with srt: 400 JSON error, param stream",
           st == 400 and err.get("param") == "stream", f"{st} {body[:300]!r}")
    st, h, body = http(port, [("model", "hviske"), ("stream", "true")], b"not audio at all")
    err = json.loads(body).get("error", {}) if body.startswith(b"{") else {}
    report("stream=true with a file that is no audio: the JSON 400 before any event",
           st == 400 and h.get("content-type") == "application/json" and
           err.get("param") == "file", f"{st} {h} {body[:300]!r}")


def test_readme_curl_stream(port, want_text):
    section = readme_section(SOURCE_DIR, "Server") or ""
    line = next((x for x in section.splitlines()
                 if x.startswith("curl -N http://127.0.0.1:8080/")), None)
    if not line:
        report("README's Server section has the curl -N streaming line", False, "not found")
        return
    if not shutil.which("curl"):
        print("skip  README curl -N: curl is not installed")
        return
    args = [a.replace("127.0.0.1:8080", f"127.0.0.1:{port}") for a in shlex.split(line)]
    p = subprocess.run(args + ["-sS"], capture_output=True, cwd=SOURCE_DIR, timeout=TIMEOUT)
    try:
        events = sse_events(p.stdout)
    except (ValueError, UnicodeDecodeError):
        events = []
    report(f"README curl command: {line}",
           p.returncode == 0 and events and events[-1] == {"type": "transcript.text.done",
                                                          "text": want_text},
           f"rc={p.returncode} out={p.stdout[:300]!r} err={p.stderr[:300]!r}")


def running_transcriptions(port):
    st, body = get(port, "/metrics")
    if st == 200:
        m = re.search(r"^hviske_transcriptions_running (\d+)", body, re.M)
        if m:
            return int(m.group(1))
    st, body = get(port, "/health")
    return json.loads(body)["running"]


def test_disconnect(tmp, want_one):
    path = sentences_wav(os.path.join(tmp, "long80.wav"), 80, 4)
    with open(path, "rb") as f:
        audio = f.read()
    srv = Server(DEMO_MODEL, "-t", "2", "--workers", "1", "--queue", "1", "--max-upload-mb",
                 "64", tmp=tmp)
    if not srv.started("server for the disconnect test starts"):
        return
    data = abandon_stream(
        srv.port, request_bytes(srv.port, [("model", "hviske"), ("stream", "true")], audio))
    stopped = wait_until(lambda: re.search(
        r"the client went away: transcription stopped after (\d+) segment", srv.stderr()))
    n = int(stopped.group(1)) if stopped else None
    report(f"a client gone mid-stream stops its transcription (the server logs it: after "
           f"{n} of 80 segments)",
           stopped is not None and b"HTTP/1.1 200" in data and n < 80,
           f"segments sent {n}; stderr={srv.stderr()[-800:]!r}")
    idle = wait_until(lambda: running_transcriptions(srv.port) == 0)
    report("... and frees its worker: no transcription running (/metrics)", idle is not None,
           srv.stderr()[-500:])
    with open(EXAMPLE, "rb") as f:
        st, h, body = http(srv.port, [("model", "hviske")], f.read())
    report("... which serves the next request",
           st == 200 and json.loads(body) == {"text": want_one}, f"{st} {body[:300]!r}")
    srv.stop()
    report("disconnect server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())


# ------------------------------------------------------------------ node

def node_problem():
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "openai")):
        return "tests/node/node_modules lacks openai"
    return None


def readme_node_example():
    section = readme_section(SOURCE_DIR, "Server") or ""
    m = re.search(r"^```js\n(.*?)^```", section, re.S | re.M)
    return m.group(1) if m else None


def test_node(port, long7, want_text, want_segments, want_one, tmp):
    problem = node_problem()
    if problem:
        skip_or_fail("the OpenAI Node SDK reads the stream", problem)
        return
    base = f"http://127.0.0.1:{port}/v1"
    p = subprocess.run(["node", os.path.join(NODE_DIR, "stream.mjs"), base, long7],
                       capture_output=True, timeout=TIMEOUT)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    report("Node SDK: stream.mjs runs", p.returncode == 0 and out is not None,
           f"rc={p.returncode} out={p.stdout[:300]!r} err={p.stderr[-800:]!r}")
    if out:
        check_events("Node SDK stream: the delta events, then done", out["events"],
                     want_text, want_segments)
        check_events("Node SDK stream with response_format text", out["text_events"],
                     want_text, want_segments)
        report("Node SDK: the plain answer's text is the streamed one",
               out["plain"] == want_text, out["plain"])
        e = out["error"] or {}
        report("Node SDK: stream with srt raises BadRequestError (400, param stream)",
               e.get("name") == "BadRequestError" and e.get("status") == 400 and
               e.get("param") == "stream", str(e))
    code = readme_node_example()
    if not code:
        report("README's Server section has the Node example (```js)", False, "not found")
        return
    # run exactly as written, from the repository's root (it reads
    # examples/da-example.wav), with the SDK of tests/node
    d = tempfile.mkdtemp(dir=tmp)
    os.symlink(os.path.join(NODE_DIR, "node_modules"), os.path.join(d, "node_modules"))
    with open(os.path.join(d, "example.mjs"), "w", encoding="utf-8") as f:
        f.write(code)
    p = subprocess.run(["node", os.path.join(d, "example.mjs")], capture_output=True,
                       cwd=SOURCE_DIR, timeout=TIMEOUT,
                       env=dict(os.environ, HVISKE_URL=base))
    report("README's Node SDK example runs as written and prints the transcript",
           p.returncode == 0 and p.stdout.decode("utf-8") == want_one + "\n",
           f"rc={p.returncode} out={p.stdout[:300]!r} err={p.stderr[-600:]!r}")


def main():
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="hv-test-streaming-") as tmp:
        long7 = sentences_wav(os.path.join(tmp, "long7.wav"), 7, 6)
        test_cli(long7, tmp)
        r = Run(["-m", DEMO_MODEL, "-t", "2", "-q", "--stream", "--format", "jsonl", long7])
        want_segments = [json.loads(x)["segment"]["text"] for x in r.lines()[:-1]]
        want_text = json.loads(r.lines()[-1])["text"] if r.lines() else ""
        want_one = Run(["-m", DEMO_MODEL, "-t", "2", "-q", EXAMPLE]).out.strip()
        report("CLI reference: 7 segments", len(want_segments) == 7 and want_one, str(r))
        srv = Server(DEMO_MODEL, "-t", "2", "--workers", "1", tmp=tmp)
        report("server starts", srv.port is not None, srv.stderr())
        if srv.port:
            test_server_sse(srv.port, long7, want_text, want_segments)
            test_readme_curl_stream(srv.port, want_one)
            test_node(srv.port, long7, want_text, want_segments, want_one, tmp)
        srv.stop()
        report("server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())
        test_disconnect(tmp, want_one)
    print(f"# {time.time() - t0:.1f} s")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
