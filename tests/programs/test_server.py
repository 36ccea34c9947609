#!/usr/bin/env python3
"""Tests of `hviske-server`: a real server on 127.0.0.1 (a free port, chosen
by the server with --port 0 and read from its first line), real HTTP.

Environment (set by CTest, see tests/CMakeLists.txt):
  HV_SERVER      the hviske-server program
  HV_CLI         the hviske program (the oracle for every response)
  HV_FIXTURES    generated fixtures (manifest.json, models/*/, audio)
  HV_SOURCE_DIR  the source tree (README.md, examples/)

Covers, on the fixture model multi-f32 and the fixture audio:
  * /health (its counts of workers, running and queued requests),
    /v1/models; every response_format (json, text, verbose_json,
    srt, vtt) against the CLI's output for the same file and options
    (jsonl, txt, json, srt, vtt), and the decoding fields (temperature,
    seed, top_k, top_p, num_beams, length_penalty, punctuation, language,
    hotwords, hotwords_score, repetition_penalty, no_repeat_ngram_size,
    max_tokens) against the CLI's options; temperature lists (the
    fallback) too, each verbose_json segment reporting the temperature
    whose decoding alone gives its text;
  * concurrency: 8 client threads, 50 requests, --workers 2: every answer
    the CLI's text, none lost; memory flat over a second batch (VmRSS);
  * the queue limit: one worker, a queue of one, filled by two long
    requests, then six concurrent short ones: some 503 with Retry-After,
    the rest the right text;
  * hostile requests, each followed by a good request: truncated
    multipart, missing / empty / non-audio file, oversized upload (by
    Content-Length, with Expect: 100-continue, chunked), audio too long,
    huge header, huge URL, garbage request line, wrong method, unknown
    path, wrong content type, every field's bad values, unknown and
    repeated fields, too many parts, a client stalled in its headers or
    its body and one trickling its body (timed out while others are
    served);
  * --api-key: missing or wrong key 401, right key 200, /health open;
  * SIGTERM during a request: it and the one queued behind it finish,
    exit 0; a second signal answers the queued ones 503; SIGTERM given
    to OpenBLAS's thread (which does not block it) drains as well;
  * the curl command of README.md's "Server" section, verbatim but for the
    port.
Every server must exit 0 on SIGTERM / SIGINT with no sanitizer report.
No case depends on the machine's speed: where one needs a state (a request
running, others queued, a signal taken) it polls /health or the server's
log for it (hvtest.wait_until), and time limits are checked from the
server's side with wide margins.
Prints one line per case and ends with "N passed, M failed".
"""
import ctypes
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, EXAMPLE, FIXTURES, SOURCE_DIR, WAIT, finish,  # noqa: E402
                    fixtures_manifest, readme_section, report, wait_until)
from hvserver import SERVER, Server  # noqa: E402

MODEL_NAME = "multi-f32"
TIMEOUT = 300
ERROR_KEYS = {"message", "type", "param", "code"}


# ------------------------------------------------------------- requests

def multipart(fields, file=None, filename="audio.wav", boundary=None):
    """(body, content type) of a multipart/form-data form: fields is a list
    of (name, value) pairs; file, if not None, the bytes of the 'file'
    part."""
    b = boundary or "hv" + uuid.uuid4().hex
    parts = []
    for k, v in fields:
        if isinstance(v, str):
            v = v.encode("utf-8")
        parts.append(f'--{b}\r\nContent-Disposition: form-data; name="{k}"'
                     f'\r\n\r\n'.encode() + v + b"\r\n")
    if file is not None:
        parts.append(f'--{b}\r\nContent-Disposition: form-data; name="file";'
                     f' filename="{filename}"\r\nContent-Type: '
                     f'application/octet-stream\r\n\r\n'.encode() + file
                     + b"\r\n")
    return (b"".join(parts) + f"--{b}--\r\n".encode(),
            f"multipart/form-data; boundary={b}")


class Reply:
    def __init__(self, status=None, headers=None, body=b"", error=None):
        self.status = status
        self.headers = headers or {}
        self.body = body
        self.error = error

    def json(self):
        try:
            return json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None

    def text(self):
        return self.body.decode("utf-8", "replace")

    def __str__(self):
        return (f"status={self.status} error={self.error} "
                f"body={self.body[:300]!r}")


def request(port, method, path, body=None, headers=None, timeout=TIMEOUT,
            chunked=False):
    """One request on a new connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {},
                  encode_chunked=chunked)
        r = c.getresponse()
        data = r.read()
        return Reply(r.status, {k.lower(): v for k, v in r.getheaders()},
                     data)
    except (OSError, http.client.HTTPException) as e:
        return Reply(error=repr(e))
    finally:
        c.close()


def transcribe(port, audio, fields=(), headers=None, filename="audio.wav"):
    body, ctype = multipart(list(fields), audio, filename)
    h = {"Content-Type": ctype}
    h.update(headers or {})
    return request(port, "POST", "/v1/audio/transcriptions", body, h)


def wait_health(srv, cond, gone=lambda: False):
    """Polls srv's GET /health until cond(its JSON object) holds, for the
    state a case needs (requests running or queued) instead of sleeping;
    returns '' then, else why not: WAIT seconds passed, the server exited,
    or gone() became true (the state can no longer come)."""
    seen = []

    def probe():
        if srv.proc.poll() is not None:
            return f"the server exited (rc={srv.proc.returncode})"
        if gone():
            return "it can no longer come"
        o = request(srv.port, "GET", "/health", timeout=WAIT).json()
        seen[:] = [o]
        return "ok" if isinstance(o, dict) and cond(o) else None

    got = wait_until(probe, interval=0.05)
    if got == "ok":
        return ""
    why = got or f"not within {WAIT} s"
    return f"{why}; last /health {seen[0] if seen else None}"


def raw_exchange(port, data, timeout=60):
    """Sends data on a raw socket and reads until the server closes;
    (response bytes, error)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out, err = b"", None
    try:
        s.sendall(data)
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError as e:
        err = repr(e)
    finally:
        s.close()
    return out, err


def raw_status(resp):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", resp)
    return int(m.group(1)) if m else None


def is_error(reply, status, param="", code=None):
    """reply is status with OpenAI's error shape (and the given param)."""
    o = reply.json()
    if reply.status != status or not isinstance(o, dict) or set(o) != {"error"}:
        return False
    e = o["error"]
    if not isinstance(e, dict) or set(e) != ERROR_KEYS:
        return False
    if not isinstance(e["message"], str) or not e["message"]:
        return False
    if not isinstance(e["type"], str):
        return False
    if param != "" and e["param"] != param:
        return False
    if code is not None and e["code"] != code:
        return False
    return reply.headers.get("content-type", "").startswith("application/json")


# ------------------------------------------------------------ the oracle

def cli(args):
    p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True,
                       timeout=TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(f"{CLI} {args}: rc={p.returncode} "
                           f"{p.stderr.decode('utf-8', 'replace')}")
    return p.stdout


def cli_texts(model, files, opts=()):
    """{file: text} from one --format jsonl run."""
    out = cli(["-m", model, "-t", "1", "-q", "--format", "jsonl"]
              + list(opts) + list(files))
    texts = {}
    for line in out.decode("utf-8").splitlines():
        o = json.loads(line)
        texts[o["file"]] = o["text"]
    return texts


def cli_docs(model, files, fmt, tmp, opts=()):
    """{file: bytes} of --format fmt, one document per input."""
    d = tempfile.mkdtemp(dir=tmp)
    cli(["-m", model, "-t", "1", "-q", "--format", fmt, "--output-dir", d]
        + list(opts) + list(files))
    docs = {}
    for f in files:
        base = os.path.splitext(os.path.basename(f))[0]
        with open(os.path.join(d, f"{base}.{fmt}"), "rb") as h:
            docs[f] = h.read()
    return docs


def read(path):
    with open(path, "rb") as f:
        return f.read()


_SPACES = re.compile("[\\s\x00-\x1f\x7f\x85\u2028\u2029]+")


def verbose_ok(o, want, words):
    """Why the verbose_json o is not the CLI's transcript (want, its JSON)
    with segments made of the words (its --word-timestamps words) in
    order, each with OpenAI's keys; "" when it is."""
    if not isinstance(o, dict) or o.get("task") != "transcribe":
        return "not a verbose_json transcription"
    for key in ("language", "duration", "text"):
        if o.get(key) != want[key]:
            return f"{key} {o.get(key)!r} != {want[key]!r}"
    segs, k, toks = o.get("segments"), 0, want["tokens"]
    if not isinstance(segs, list) or (words and not segs):
        return "no segments"
    for i, g in enumerate(segs):
        if g.get("id") != i or not isinstance(g.get("seek"), int) or g.get("temperature") != 0:
            return f"segment {i}: id, seek or temperature {g}"
        if not (isinstance(g.get("avg_logprob"), (int, float)) and g["avg_logprob"] <= 1e-4):
            return f"segment {i}: avg_logprob {g.get('avg_logprob')}"
        rest, mine = _SPACES.sub(" ", g.get("text", "")).strip(), []
        while rest and k < len(words):
            w = _SPACES.sub(" ", words[k]["word"]).strip()
            if not w:  # a word that shows nothing is in no cue
                k += 1
                continue
            if not (rest == w or rest.startswith(w + " ")):
                return f"segment {i} {g.get('text')!r}: not word {words[k]['word']!r}"
            rest = rest[len(w):].lstrip()
            mine.append(words[k])
            k += 1
        if rest or not mine:
            return f"segment {i} {g.get('text')!r}: not whole words"
        if abs(g.get("start", -1) - mine[0]["start"]) > 0.0015 or g.get("end", -1) <= g["start"]:
            return f"segment {i}: {g.get('start')}..{g.get('end')}, first word at {mine[0]}"
        if not g.get("tokens") or " ".join(map(str, g["tokens"])) not in " ".join(map(str, toks)):
            return f"segment {i}: tokens {g.get('tokens')} not a run of {toks}"
    return "" if k == len(words) else f"{len(words) - k} words in no segment"


def write_wav(path, frames, rate=16000):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return path


def long_wav(path, seconds, clips):
    """The fixture sentences (16 kHz) in turn with 0.5 s pauses."""
    pause = b"\0\0" * 8000
    parts, size, i, n = [], 0, 0, int(seconds * 16000) * 2
    while size < n:
        parts += [clips[i % len(clips)], pause]
        size += len(clips[i % len(clips)]) + len(pause)
        i += 1
    return write_wav(path, b"".join(parts)[:n])


# ------------------------------------------------------------------ cases

def test_basics(port, workers):
    r = request(port, "GET", "/health")
    report("GET /health: status ok, the workers, none running or queued",
           r.status == 200 and r.json() == {"status": "ok", "workers": workers,
                                            "running": 0, "queued": 0},
           str(r))
    r = request(port, "GET", "/v1/models")
    o = r.json()
    ok = (r.status == 200 and isinstance(o, dict) and o.get("object") == "list"
          and isinstance(o.get("data"), list) and len(o["data"]) == 1
          and o["data"][0].get("object") == "model"
          and o["data"][0].get("owned_by") == "hviske"
          and isinstance(o["data"][0].get("id"), str))
    report("GET /v1/models", ok, str(r))
    r = request(port, "HEAD", "/health")
    report("HEAD /health", r.status == 200 and r.body == b"", str(r))
    # two requests on one keep-alive connection
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        statuses = []
        for _ in range(2):
            c.request("GET", "/health")
            resp = c.getresponse()
            resp.read()
            statuses.append(resp.status)
        report("keep-alive: two requests on one connection",
               statuses == [200, 200], f"{statuses}")
    except (OSError, http.client.HTTPException) as e:
        report("keep-alive: two requests on one connection", False, repr(e))
    finally:
        c.close()


def test_formats(port, model, files, tmp):
    """Every response_format of every file against the CLI."""
    texts = cli_texts(model, files)
    txt = cli(["-m", model, "-t", "1", "-q", "--format", "txt"] + files)
    # several inputs: each line starts with its input and ": "
    txt_lines = [x[len(f) + 2:] for f, x in zip(files, txt.decode("utf-8").split("\n"))]
    docs = {fmt: cli_docs(model, files, fmt, tmp)
            for fmt in ("json", "srt", "vtt")}
    docs["words"] = cli_docs(model, files, "json", tmp, ["--word-timestamps"])
    for i, f in enumerate(files):
        name = os.path.basename(f)
        audio = read(f)
        r = transcribe(port, audio, [("model", "hviske"),
                                     ("response_format", "json")],
                       filename=name)
        report(f"json {name}", r.status == 200 and r.json() ==
               {"text": texts[f]} and r.headers.get("openai-model") ==
               "hviske", f"{r} want {texts[f]!r}")
        r = transcribe(port, audio, [("response_format", "text")])
        report(f"text {name}", r.status == 200 and r.text() ==
               txt_lines[i] + "\n" and "text/plain" in
               r.headers.get("content-type", ""), f"{r} want {txt_lines[i]!r}")
        r = transcribe(port, audio, [("response_format", "verbose_json")])
        o, want = r.json(), json.loads(docs["json"][f])
        words = json.loads(docs["words"][f])["words"]
        report(f"verbose_json {name}: readable segments of the words",
               r.status == 200 and verbose_ok(o, want, words) == "" and "words" not in o,
               f"{verbose_ok(o, want, words)} {r}")
        for grans, keys in ((["word"], ("words",)), (["segment", "word"], ("segments", "words")),
                            (["segment"], ("segments",))):
            fields = [("response_format", "verbose_json")] + [
                ("timestamp_granularities[]", g) for g in grans]
            r = transcribe(port, audio, fields)
            o = r.json() or {}
            ok = (r.status == 200 and all(k in o for k in keys) and
                  not any(k in o for k in ("segments", "words") if k not in keys) and
                  ("words" not in o or o["words"] == words) and
                  ("segments" not in o or verbose_ok(o, want, words) == ""))
            report(f"verbose_json {name} timestamp_granularities {grans}: {', '.join(keys)}"
                   " (words as the CLI's --word-timestamps)", ok, f"{r}")
        for fmt in ("srt", "vtt"):
            r = transcribe(port, audio, [("response_format", fmt)])
            report(f"{fmt} {name}", r.status == 200 and
                   r.body == docs[fmt][f], f"{r} want {docs[fmt][f]!r}")
    return texts


def test_decoding(port, model, wav):
    """The decoding fields give what the CLI's options give."""
    cases = [
        ([("temperature", "0")], []),
        ([("temperature", "0.7"), ("seed", "5")],
         ["--sample", "--temperature", "0.7", "--seed", "5"]),
        ([("temperature", "1.3"), ("top_k", "5"), ("seed", "11")],
         ["--sample", "--temperature", "1.3", "--top-k", "5", "--seed", "11"]),
        ([("temperature", "1"), ("top_p", "0.8"), ("seed", "18446744073709551615")],
         ["--sample", "--top-p", "0.8", "--seed", "18446744073709551615"]),
        ([("num_beams", "3"), ("length_penalty", "1.5")],
         ["--beams", "3", "--length-penalty", "1.5"]),
        ([("punctuation", "false")], ["--no-punctuation"]),
        ([("language", "en")], ["-l", "en"]),
        ([("max_tokens", "5")], ["--max-tokens", "5"]),
        ([("hotwords", "Aarhus, Mette"), ("hotwords_score", "3")],
         ["--hotwords", "Aarhus, Mette", "--hotwords-score", "3"]),
        ([("repetition_penalty", "1.2"), ("no_repeat_ngram_size", "3"), ("num_beams", "2")],
         ["--repetition-penalty", "1.2", "--no-repeat-ngram-size", "3", "--beams", "2"]),
        ([("diarize", "false")], []),
        ([("prompt", "Ignored context, any text: æøå"),
          ("stream", "false"), ("timestamp_granularities[]", "segment")], []),
    ]
    audio = read(wav)
    for fields, opts in cases:
        want = cli_texts(model, [wav], opts)[wav]
        r = transcribe(port, audio, fields)
        label = " ".join(f"{k}={v}" for k, v in fields)
        report(f"decoding {label} = CLI {' '.join(opts) or '(defaults)'}",
               r.status == 200 and r.json() == {"text": want},
               f"{r} want {want!r}")


def test_fallback(port, model, wav):
    """temperature as a list is the CLI's temperature fallback; each
    verbose_json segment reports the temperature its chunk was decoded
    at, whose decoding alone gives the same text (one chunk)."""
    audio = read(wav)
    for temps, extra in (("0,0.2,0.4", []), ("5,0", []), ("1.6,1", []), ("0.7", []),
                         ("0.5,0", [("num_beams", "2")])):
        opts = ["--temperature", temps, "--seed", "7"] + sum(
            ([f"--{k.replace('num_beams', 'beams')}", v] for k, v in extra), [])
        want = cli_texts(model, [wav], opts)[wav]
        r = transcribe(port, audio, [("temperature", temps), ("seed", "7"),
                                     ("response_format", "verbose_json")] + extra)
        o = r.json() if r.status == 200 else {}
        used = {g.get("temperature") for g in o.get("segments", [])}
        t = used.pop() if len(used) == 1 else None
        alone = cli_texts(model, [wav], ["--temperature", str(t), "--seed", "7"] +
                          (["--beams", "2"] if extra and t == 0 else []))[wav] \
            if t is not None else None
        if want == "":  # the no_speech_threshold's silence (this model's is random)
            report(f"temperature={temps}: silence, as the CLI's: no text, no segment",
                   r.status == 200 and o.get("text") == "" and o.get("segments") == [], str(r))
            continue
        report(f"temperature={temps} {extra or ''}: the CLI's text; the segments' "
               f"temperature ({t}) one of the list, whose decoding alone gives it",
               o.get("text") == want and t in [float(x) for x in temps.split(",")] and
               alone == want, f"{r} want {want!r}, alone {alone!r}")


def run_batch(port, jobs, n_threads):
    """Sends jobs [(audio bytes, format, expected body check)] from
    n_threads threads; returns the list of failures."""
    lock = threading.Lock()
    todo = list(enumerate(jobs))
    problems = []
    done = []

    def client():
        while True:
            with lock:
                if not todo:
                    return
                i, (audio, fields, check) = todo.pop()
            r = transcribe(port, audio, fields)
            ok = r.status == 200 and check(r)
            with lock:
                done.append(i)
                if not ok:
                    problems.append(f"#{i}: {r}")

    threads = [threading.Thread(target=client) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(done) != len(jobs):
        problems.append(f"{len(done)} of {len(jobs)} answered")
    return problems


def test_concurrency(srv, files, texts):
    jobs = []
    for i in range(50):
        f = files[i % len(files)]
        want = texts[f]
        if i % 2:
            jobs.append((read(f), [("response_format", "json")],
                         lambda r, w=want: r.json() == {"text": w}))
        else:
            jobs.append((read(f), [("response_format", "verbose_json")],
                         lambda r, w=want: (r.json() or {}).get("text") == w))
    t0 = time.time()
    problems = run_batch(srv.port, jobs, 8)
    report(f"concurrency: 8 clients, 50 requests, 2 workers "
           f"({time.time() - t0:.1f} s)", not problems, "; ".join(problems[:5]))
    rss0 = srv.rss_kib()
    problems = run_batch(srv.port, jobs, 8)
    rss1 = srv.rss_kib()
    report("concurrency: a second batch of 50", not problems,
           "; ".join(problems[:5]))
    if srv.sanitized():
        report(f"memory after a second batch: {rss0} -> {rss1} KiB "
               "(not compared under ASan: its quarantine holds freed memory)",
               True)
    else:
        margin = 4096 + rss0 // 10
        report(f"memory flat over a second batch: VmRSS {rss0} -> {rss1} KiB",
               rss1 <= rss0 + margin, f"grew by {rss1 - rss0} KiB (margin "
               f"{margin})")


def check_alive(port, wav, want, label):
    r = transcribe(port, read(wav), [("response_format", "json")])
    report(f"  ... then a good request: {label}",
           r.status == 200 and r.json() == {"text": want}, str(r))


def test_hostile(port, wav, want, tmp, too_long):
    audio = read(wav)
    url = "/v1/audio/transcriptions"

    def after(label):
        check_alive(port, wav, want, label)

    # truncated multipart: the body stops inside the file part
    body, ctype = multipart([("model", "hviske")], audio)
    cut = body[:len(body) // 2]
    r = request(port, "POST", url, cut, {"Content-Type": ctype})
    report("truncated multipart body: 400", is_error(r, 400), str(r))
    r = request(port, "POST", url, body[:-10], {"Content-Type": ctype})
    report("multipart without its closing boundary: 400", is_error(r, 400),
           str(r))
    r = request(port, "POST", url, b"", {"Content-Type": ctype})
    report("empty multipart body: 400 (no file)",
           is_error(r, 400, "file"), str(r))
    after("truncated multipart")

    body, ctype = multipart([("response_format", "json")], audio)
    r = request(port, "POST", url,
                (body[i:i + 1000] for i in range(0, len(body), 1000)),
                {"Content-Type": ctype, "Transfer-Encoding": "chunked"},
                chunked=True)
    report("chunked upload within the limit: 200",
           r.status == 200 and r.json() == {"text": want}, str(r))
    b = "hvhugepart"
    body = (f'--{b}\r\nContent-Disposition: form-data; name="{"n" * 50000}"'
            f'\r\n\r\nv\r\n--{b}--\r\n').encode()
    r = request(port, "POST", url, body,
                {"Content-Type": f"multipart/form-data; boundary={b}"})
    report("a part header of 50 kB: 400", is_error(r, 400), str(r))
    r = transcribe(port, None, [("model", "hviske")])
    report("missing file: 400 param=file", is_error(r, 400, "file"), str(r))
    r = transcribe(port, b"", [])
    report("0-byte file: 400 param=file", is_error(r, 400, "file"), str(r))
    r = transcribe(port, os.urandom(5000), [])
    report("random bytes as the file: 400", is_error(r, 400, "file"), str(r))
    short = os.path.join(tmp, "short.wav")
    write_wav(short, b"\1\0" * 100)
    r = transcribe(port, read(short), [])
    report("audio of 100 samples (too short): 400 param=file",
           is_error(r, 400, "file"), str(r))
    r = transcribe(port, audio[:40], [])
    report("a WAV cut inside its header: 400", is_error(r, 400, "file"),
           str(r))
    r = transcribe(port, b"RIFF\xff\xff\xff\x7fWAVEfmt " + os.urandom(2000), [])
    report("a WAV header with garbage: 400", is_error(r, 400, "file"), str(r))
    after("non-audio files")

    # uploads over --max-upload-mb 1
    big = os.urandom(3 << 20)
    body, ctype = multipart([], big)
    resp, err = raw_exchange(port, (
        f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n").encode())
    report("oversized upload (Content-Length): 413 before the body, naming --max-upload-mb",
           raw_status(resp) == 413 and b'"error"' in resp and b"--max-upload-mb" in resp,
           f"{resp[:300]!r} {err}")
    resp, err = raw_exchange(port, (
        f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
        f"Expect: 100-continue\r\nContent-Length: {len(body)}\r\n\r\n").encode())
    report("oversized upload with Expect: 100-continue: 413, no 100",
           raw_status(resp) == 413, f"{resp[:300]!r} {err}")
    body, ctype = multipart([], os.urandom((1 << 20) + 1000))
    r = request(port, "POST", url, body, {"Content-Type": ctype})
    report("file just over the limit, body within it: 413",
           is_error(r, 413, "file"), str(r))
    msg = r.json()["error"]["message"] if is_error(r, 413) else ""
    report("413 names the limit and --max-upload-mb",
           "--max-upload-mb" in msg and "1048576 bytes" in msg, msg)
    body, ctype = multipart([], big)
    r = request(port, "POST", url,
                (body[i:i + 65536] for i in range(0, len(body), 65536)),
                {"Content-Type": ctype, "Transfer-Encoding": "chunked"},
                chunked=True)
    report("oversized chunked upload: 413", is_error(r, 413), str(r))
    resp, err = raw_exchange(port, (
        f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: 99999999999999999999999\r\n\r\n").encode())
    report("absurd Content-Length: 4xx", (raw_status(resp) or 0) in
           (400, 413), f"{resp[:300]!r} {err}")
    after("oversized uploads")

    r = transcribe(port, read(too_long), [])
    report("audio over --max-audio-seconds: 413 naming the option",
           is_error(r, 413, "file") and "--max-audio-seconds" in r.json()["error"]["message"],
           str(r))

    # headers and URL beyond MHD's per-connection memory
    resp, err = raw_exchange(port, (
        f"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Junk: {'a' * 100000}\r\n\r\n"
    ).encode())
    report("huge header: 4xx, connection closed",
           400 <= (raw_status(resp) or 0) < 500 or (not resp and err is None),
           f"{resp[:200]!r} {err}")
    resp, err = raw_exchange(port, (
        f"GET /{'a' * 100000} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").encode())
    report("huge URL: 4xx",
           400 <= (raw_status(resp) or 0) < 500 or (not resp and err is None),
           f"{resp[:200]!r} {err}")
    resp, err = raw_exchange(port, b"\x00\xffGARBAGE \x01\r\n\r\n")
    report("garbage request line: 4xx or closed",
           not resp or 400 <= (raw_status(resp) or 400) < 500,
           f"{resp[:200]!r} {err}")
    after("huge headers and garbage")

    r = request(port, "GET", url)
    report("GET /v1/audio/transcriptions: 405 Allow: POST",
           is_error(r, 405) and r.headers.get("allow") == "POST", str(r))
    r = request(port, "DELETE", "/v1/models")
    report("DELETE /v1/models: 405", is_error(r, 405), str(r))
    body, ctype = multipart([], audio)
    r = request(port, "PUT", url, body, {"Content-Type": ctype})
    report("PUT with a body: 405", is_error(r, 405), str(r))
    r = request(port, "GET", "/v1/nothing")
    report("unknown path: 404", is_error(r, 404), str(r))
    r = request(port, "POST", "/v1/audio/speech", body,
                {"Content-Type": ctype})
    report("POST to an unknown path with a body: 404", is_error(r, 404),
           str(r))
    after("wrong method and path")

    for ct in ("application/json", "application/x-www-form-urlencoded",
               "text/plain", "multipart/form-datax; boundary=x"):
        r = request(port, "POST", url, b'{"file": "x"}', {"Content-Type": ct})
        report(f"Content-Type {ct}: 415", is_error(r, 415), str(r))
    r = request(port, "POST", url, b"abc")
    report("no Content-Type: 415", is_error(r, 415), str(r))
    r = request(port, "POST", url, b"abc",
                {"Content-Type": "multipart/form-data"})
    report("multipart without a boundary: 400", is_error(r, 400), str(r))
    after("wrong content types")

    bad = [
        ("temperature", ["-1", "nan", "inf", "1e999", "0x1", "", " 0.5",
                         "0.5 ", "1;5", "--1", "1e", ".", "0,", ",0", "0,,1", "0,-1",
                         "0, 1", ",".join(["0"] * 33)]),
        ("num_beams", ["0", "65", "1.5", "-1", "+2", "", "99999999999999999999"]),
        ("length_penalty", ["0", "-1", "nan", "x"]),
        ("top_k", ["-1", "1.0", "2147483648", "k"]),
        ("top_p", ["0", "1.01", "-0.5", "nan"]),
        ("seed", ["-1", "18446744073709551616", "1.0", "0x10", " 1"]),
        ("max_tokens", ["0", "-5", "100000", "x"]),
        ("hotwords_score", ["0", "101", "nan", "x"]),
        ("repetition_penalty", ["0", "-1", "nan", "inf"]),
        ("no_repeat_ngram_size", ["-1", "1.5", "x"]),
        ("diarize", ["yes", "TRUE", "2", ""]),
        ("diarize_voice", ["-0.1", "1.01", "nan", "x"]),
        ("punctuation", ["yes", "TRUE ", "", "2"]),
        ("response_format", ["xml", "JSON", "", "srt\n"]),
        ("language", ["xx", "", "da\x00", "d" * 31]),
        ("model", ["", "two words", "m\r\nX-Evil: 1"]),
        ("stream", ["maybe", "TRUE", "1"]),
        ("timestamp_granularities[]", ["word", "words", "", "segment,word"]),
    ]
    for field, values in bad:
        results = []
        for v in values:
            r = transcribe(port, audio, [(field, v)])
            if not is_error(r, 400, field):
                results.append(f"{v!r}: {r}")
        report(f"bad {field} values {values!r}: 400 param={field}",
               not results, "; ".join(results))
    r = transcribe(port, audio, [("temperature", "0.5"), ("num_beams", "2")])
    report("temperature > 0 with num_beams > 1: 400",
           is_error(r, 400, "num_beams"), str(r))
    r = transcribe(port, audio, [("colour", "blue")])
    report("unknown field: 400", is_error(r, 400, "colour"), str(r))
    r = transcribe(port, audio, [("temperature", "0"), ("temperature", "0")])
    report("repeated field: 400", is_error(r, 400, "temperature"), str(r))
    body, ctype = multipart([("file", "x")], audio)
    r = request(port, "POST", url, body, {"Content-Type": ctype})
    report("two file parts: 400", is_error(r, 400, "file"), str(r))
    r = transcribe(port, audio, [("language", "d" * 100)])
    report("field too long: 400", is_error(r, 400, "language"), str(r))
    r = transcribe(port, audio, [("prompt", "p" * 20000)])
    report("prompt too long: 400", is_error(r, 400, "prompt"), str(r))
    r = transcribe(port, audio, [("model", "m")] * 40)
    report("too many parts: 400", is_error(r, 400), str(r))
    after("bad field values")


def test_slow_clients(port, wav, want, timeout):
    """Clients that stall or trickle: the server times them out and keeps
    serving others meanwhile."""
    url = "/v1/audio/transcriptions"
    audio = read(wav)

    def stalled(first, label, limit):
        # a thread reads until the server closes and notes when, while
        # another request is served (however long that takes here)
        s = socket.create_connection(("127.0.0.1", port), timeout=limit + 60)
        t0 = time.time()
        s.sendall(first)
        seen = {}

        def reader():
            try:
                data = s.recv(65536)
                while data:
                    more = s.recv(65536)
                    if not more:
                        break
                    data += more
                closed = True
            except OSError as e:
                data, closed = repr(e).encode(), "reset" in repr(e).lower()
            seen.update(dt=time.time() - t0, data=data, closed=closed)

        t = threading.Thread(target=reader)
        t.start()
        r = transcribe(port, audio, [])
        report(f"{label}: others are served meanwhile",
               r.status == 200 and r.json() == {"text": want}, str(r))
        t.join()
        s.close()
        dt = seen["dt"]
        report(f"{label}: closed after {dt:.1f} s (limit {limit} s)",
               seen["closed"] and limit - 1 <= dt <= limit + 20,
               f"{seen['data'][:200]!r}")

    stalled(f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty".encode(),
            "client stalled in its headers", timeout)
    body, ctype = multipart([], audio)
    stalled((f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
             f"Content-Length: {len(body)}\r\n\r\n").encode() + body[:100],
            "client stalled in its body", timeout)

    # trickling: a byte every 0.5 s never trips the idle timeout; the
    # minimum upload rate (after the --timeout 2 grace) or the request
    # deadline (--request-timeout 4) cuts it off
    result = {}
    trickling = threading.Event()

    def trickle():
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        t0 = time.time()
        try:
            s.sendall((f"POST {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                       f"{ctype}\r\nContent-Length: {len(body)}\r\n\r\n")
                      .encode())
            for b in body[:120]:
                s.sendall(bytes([b]))
                trickling.set()
                time.sleep(0.5)
            result["outcome"] = "still open after 60 s"
        except OSError as e:
            result["outcome"] = f"closed ({e!r})"
        result["dt"] = time.time() - t0
        trickling.set()
        s.close()

    t = threading.Thread(target=trickle)
    t.start()
    trickling.wait(WAIT)  # its headers and a first byte are sent
    r = transcribe(port, audio, [])
    report("trickling client: others are served meanwhile",
           r.status == 200 and r.json() == {"text": want}, str(r))
    t.join()
    report(f"trickling client: cut off after {result.get('dt', 0):.1f} s "
           f"(--min-upload-rate, --request-timeout 4)",
           result.get("outcome", "").startswith("closed")
           and result["dt"] < 30, str(result))


def test_api_key(model, wav, want, tmp):
    key = "s3cr3t-key"
    srv = Server(model, "--api-key", key, "-t", "1", tmp=tmp)
    if not srv.started("--api-key server starts"):
        return
    p = srv.port
    r = request(p, "GET", "/v1/models")
    report("--api-key: no key: 401", is_error(r, 401) and
           "bearer" in r.headers.get("www-authenticate", "").lower(), str(r))
    for h in (f"Bearer {key}x", f"Bearer {key[:-1]}", "Bearer ", key,
              f"Basic {key}", f"Bearer {key} {key}"):
        r = request(p, "GET", "/v1/models", headers={"Authorization": h})
        report(f"--api-key: Authorization {h!r}: 401", is_error(r, 401),
               str(r))
    r = transcribe(p, read(wav), [], headers={"Authorization": "Bearer nope"})
    report("--api-key: transcription with a wrong key: 401",
           is_error(r, 401), str(r))
    r = request(p, "GET", "/v1/models",
                headers={"Authorization": f"Bearer {key}"})
    report("--api-key: right key: 200", r.status == 200, str(r))
    r = request(p, "GET", "/v1/models",
                headers={"Authorization": f"bearer  {key}"})
    report("--api-key: scheme in any case: 200", r.status == 200, str(r))
    r = transcribe(p, read(wav), [],
                   headers={"Authorization": f"Bearer {key}"})
    report("--api-key: transcription with the right key: 200",
           r.status == 200 and r.json() == {"text": want}, str(r))
    r = request(p, "GET", "/health")
    report("--api-key: /health needs no key", r.status == 200, str(r))
    srv.stop(signal.SIGINT)
    report("--api-key server: SIGINT, exit 0", *srv.clean_exit())


def test_queue_limit(model, long_path, wav, want_short, tmp):
    """Two long requests fill one worker and a queue of one (seen on
    /health); six concurrent short ones then find the server full."""
    want = cli_texts(model, [long_path])[long_path]
    srv = Server(model, "--workers", "1", "--queue", "1", "-t", "1",
                 "--max-upload-mb", "16", tmp=tmp)
    if not srv.started("queue server starts"):
        return
    body, ctype = multipart([("response_format", "json")], read(long_path))
    short, ct_short = multipart([("response_format", "json")], read(wav))
    replies = [None] * 8
    go = threading.Barrier(6)

    def client(i):
        if i >= 2:
            go.wait()
        replies[i] = request(srv.port, "POST", "/v1/audio/transcriptions",
                             *((body, {"Content-Type": ctype}) if i < 2 else
                               (short, {"Content-Type": ct_short})))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads[:2]:
        t.start()
    why = wait_health(srv, lambda o: o["running"] == 1 and o["queued"] == 1,
                      lambda: replies[0] or replies[1])
    report("queue of 1, one worker: /health shows the two long requests "
           "running and queued", not why, why)
    for t in threads[2:]:
        t.start()
    for t in threads:
        t.join()
    ok200 = [r for r in replies if r.status == 200]
    busy = [r for r in replies if r.status == 503]
    retry_ok = all(re.fullmatch(r"[1-9]\d*", r.headers.get("retry-after", ""))
                   and is_error(r, 503) for r in busy)
    right = all(r.json() == {"text": want if i < 2 else want_short}
                for i, r in enumerate(replies) if r.status == 200)
    report(f"queue full, then 6 concurrent: {len(ok200)} x 200, "
           f"{len(busy)} x 503",
           replies[0].status == replies[1].status == 200 and busy
           and len(ok200) + len(busy) == 8 and retry_ok and right,
           "; ".join(str(r) for r in replies))
    r = transcribe(srv.port, read(long_path), [])
    report("after the burst: served again", r.status == 200 and
           r.json() == {"text": want}, str(r))
    srv.stop()
    report("queue server: SIGTERM, exit 0", *srv.clean_exit())


def threads_taking(pid, sig):
    """The threads of process pid, but its main thread, that do not block
    sig (/proc's SigBlk)."""
    tids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/status") as f:
            m = re.search(r"^SigBlk:\s*([0-9a-f]+)", f.read(), re.M)
        if int(t) != pid and m and not int(m.group(1), 16) >> (sig - 1) & 1:
            tids.append(int(t))
    return tids


def test_signal_to_library_thread(model, tmp):
    """SIGTERM given to a thread that a library started before main (the
    kernel may give a process's signal to any thread that does not block
    it; OpenBLAS's pool blocks none) drains the server like one the main
    thread takes, instead of killing it with the signal's default action."""
    # two OpenBLAS threads: its pool has a thread of its own on any host
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    srv = Server(model, "--workers", "1", "-t", "1", tmp=tmp, env=env)
    if not srv.started("signal to a library's thread: server starts"):
        return
    tids = threads_taking(srv.proc.pid, signal.SIGTERM)
    report("signal to a library's thread: OpenBLAS's thread does not block "
           "SIGTERM", bool(tids), f"threads: {os.listdir(f'/proc/{srv.proc.pid}/task')}")
    sent = False
    if tids:
        libc = ctypes.CDLL(None, use_errno=True)
        sent = libc.tgkill(srv.proc.pid, tids[0], signal.SIGTERM) == 0
        report("signal to a library's thread: tgkill", sent,
               os.strerror(ctypes.get_errno()))
    srv.stop(None if sent else signal.SIGTERM)
    ok, why = srv.clean_exit()
    report("signal to a library's thread: the server drains and exits 0",
           ok and "SIGTERM: finishing" in srv.stderr(), why)


def test_sigterm(model, long_path, wav, want_short, tmp):
    """SIGTERM while one request runs and another waits: both finish."""
    want = cli_texts(model, [long_path])[long_path]
    # 64 beams: about three times as long, to be running when the signal
    # comes
    want_longer = cli_texts(model, [long_path], ["--beams", "64"])[long_path]
    srv = Server(model, "--workers", "1", "-t", "1", "--max-upload-mb", "16",
                 "--max-beams", "64", tmp=tmp)
    if not srv.started("SIGTERM server starts"):
        return
    replies = {}
    body_long, ct_long = multipart([], read(long_path))
    body_longer, ct_longer = multipart([("num_beams", "64")], read(long_path))
    body_short, ct_short = multipart([], read(wav))

    def send(key, body, ctype):
        replies[key] = request(srv.port, "POST", "/v1/audio/transcriptions",
                               body, {"Content-Type": ctype})

    threads = [threading.Thread(target=send, args=("long", body_longer,
                                                   ct_longer)),
               threading.Thread(target=send, args=("short", body_short,
                                                   ct_short))]
    threads[0].start()
    why = wait_health(srv, lambda o: o["running"] == 1 and o["queued"] == 0,
                      lambda: replies)
    if not why:
        threads[1].start()
        why = wait_health(srv, lambda o: o["running"] == 1 and
                          o["queued"] == 1, lambda: replies)
    else:
        threads[1].start()
    report("SIGTERM: /health shows the long request running and the short "
           "one queued", not why, why)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join()
    srv.stop(None)
    dt = time.time() - t0
    r1, r2 = replies.get("long"), replies.get("short")
    log = srv.stderr()
    sig_at = log.find("SIGTERM: finishing")
    ok200 = '"path":"/v1/audio/transcriptions","status":200,'  # access log
    done_at = log.find(ok200)
    second_at = log.find(ok200, done_at + 1)
    report("SIGTERM during a request: it finishes (200, right text)",
           r1 and r1.status == 200 and r1.json() == {"text": want_longer},
           str(r1))
    report("SIGTERM came while it ran and the other waited (the server's "
           "log: the signal, then both answers)",
           0 <= sig_at < done_at < second_at, log[-1000:])
    report("SIGTERM: the request queued behind it finishes too",
           r2 and r2.status == 200 and r2.json() == {"text": want_short},
           str(r2))
    report(f"SIGTERM: exit 0 {dt:.1f} s after the signal, clean",
           *srv.clean_exit())

    # a second signal answers the queued requests with 503 at once
    srv = Server(model, "--workers", "1", "-t", "1", "--max-upload-mb", "16",
                 "--queue", "8", tmp=tmp)
    if not srv.started("second-signal server starts"):
        return
    replies = {}
    stop_trickle = threading.Event()

    def trickle():
        # an upload in progress, a byte every 0.3 s: not waited for after
        # the second signal
        try:
            with socket.create_connection(("127.0.0.1", srv.port),
                                          timeout=60) as t:
                t.sendall((f"POST /v1/audio/transcriptions HTTP/1.1\r\n"
                           f"Host: 127.0.0.1\r\nContent-Type: {ct_long}\r\n"
                           f"Content-Length: {len(body_long)}\r\n\r\n")
                          .encode())
                for b in body_long:
                    if stop_trickle.is_set():
                        break
                    t.sendall(bytes([b]))
                    time.sleep(0.3)
        except OSError:
            pass

    trickler = threading.Thread(target=trickle)
    trickler.start()
    threads = [threading.Thread(target=send, args=(i, body_long, ct_long))
               for i in range(5)]
    for t in threads:
        t.start()

    def answered():
        return sum(1 for r in list(replies.values()) if r.status == 200)

    # all five in: one running, the rest queued (or, on a machine that
    # uploads slower than it transcribes, answered already)
    why = wait_health(srv, lambda o: o["running"] == 1 and o["queued"] >= 1
                      and o["running"] + o["queued"] + answered() == 5,
                      lambda: len(replies) == 5)
    report("second SIGTERM: /health shows one request running and the "
           "others queued", not why, why)
    srv.proc.send_signal(signal.SIGTERM)
    # the server has taken the first signal (two pending ones would be one)
    if not wait_until(lambda: "SIGTERM: finishing" in srv.stderr()
                      or srv.proc.poll() is not None):
        report("second SIGTERM: the server logs the first one", False,
               f"not within {WAIT} s: {srv.stderr()[-500:]!r}")
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join()
    srv.stop(None)
    dt = time.time() - t0
    stop_trickle.set()
    trickler.join()
    statuses = sorted((replies[i].status or 0) if i in replies else 0
                      for i in range(5))  # 0: no answer
    report(f"second SIGTERM: the running request finishes, the queued ones "
           f"get 503 ({statuses})",
           200 in statuses and 503 in statuses and
           all(s in (200, 503) for s in statuses) and
           all(is_error(r, 503) for r in replies.values()
               if r.status == 503) and
           all(r.json() == {"text": want} for r in replies.values()
               if r.status == 200), str(statuses))
    # the request running at the second signal is waited for, the
    # trickling upload (days at its pace) is not: the exit comes within
    # the longest request's time (from the server's log) and a margin
    took = [float(x) for x in re.findall(
        r'"path":"/v1/audio/transcriptions","status":200,"audio_seconds":[^,]*,'
        r'"duration":([0-9.eE+-]+)', srv.stderr())]
    job = max(took) if took else 0.0
    ok, why = srv.clean_exit()
    report(f"second SIGTERM: exit 0 {dt:.1f} s after it (a request took "
           f"{job:.1f} s), not waiting for a trickling upload, clean",
           ok and dt < job + 30, why)


def readme_curl():
    """The curl command of README.md's Server section."""
    section = readme_section(SOURCE_DIR, "Server")
    if section is None:
        return None
    for line in section.splitlines():
        if line.startswith("curl http://127.0.0.1:8080/v1/audio/transcriptions"):
            return line
    return None


def test_readme_curl(port, model):
    line = readme_curl()
    if not line:
        report("README's Server section has the curl example", False,
               "no line starting with 'curl http://127.0.0.1:8080/v1/audio/"
               "transcriptions'")
        return
    if not shutil.which("curl"):
        print("skip  README curl command: curl is not installed")
        return
    args = [a.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
            for a in shlex.split(line)]
    p = subprocess.run(args + ["-sS"], capture_output=True, cwd=SOURCE_DIR,
                       timeout=TIMEOUT)
    wav = EXAMPLE
    want = cli_texts(model, [wav])[wav]
    try:
        o = json.loads(p.stdout.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        o = None
    report(f"README curl command: {line}", p.returncode == 0 and
           o == {"text": want}, f"rc={p.returncode} out={p.stdout[:300]!r} "
           f"err={p.stderr[:300]!r} want {want!r}")


def test_include(port, model, wav):
    """include[]: logprobs in OpenAI's shape with json (the CLI's tokens'
    log-probabilities); other values and other formats ignored with a
    Warning header; no include[]: no logprobs, no warning."""
    ref = json.loads(cli(["-m", model, "-t", "1", "-q", "--json", wav]))
    audio = read(wav)
    r = transcribe(port, audio, [("include[]", "logprobs")])
    o = r.json()
    lp = o.get("logprobs") if isinstance(o, dict) else None
    ok = (r.status == 200 and isinstance(lp, list) and o.get("text") == ref["text"] and
          len(lp) == len(ref["token_logprobs"]) and
          all(set(e) == {"token", "logprob", "bytes"} and isinstance(e["token"], str) and
              all(isinstance(b, int) and 0 <= b < 256 for b in e["bytes"]) and
              abs(e["logprob"] - x) <= 1e-4 for e, x in zip(lp, ref["token_logprobs"])) and
          b"".join(bytes(e["bytes"]) for e in lp).decode("utf-8", "replace").strip() ==
          ref["text"] and "warning" not in r.headers)
    report("include[]=logprobs: json with OpenAI's logprobs, the CLI's values", ok,
           f"{r} {lp!r:.300}")
    r = transcribe(port, audio, [("include[]", "logprobs"), ("include[]", "bogus")])
    report("include[]=bogus too: 200, logprobs, a Warning header naming bogus",
           r.status == 200 and "logprobs" in r.json() and
           "bogus" in r.headers.get("warning", "") and
           r.headers["warning"].startswith("299 "), f"{r} {r.headers}")
    r = transcribe(port, audio, [("include", "logprobs"), ("response_format", "text")])
    report("include=logprobs with text: 200, the text, a Warning header",
           r.status == 200 and r.text().strip() == ref["text"] and
           "logprobs" in r.headers.get("warning", ""), f"{r} {r.headers}")
    r = transcribe(port, audio, [])
    report("no include[]: no logprobs, no warning",
           r.status == 200 and set(r.json()) == {"text"} and "warning" not in r.headers, str(r))


def test_weight_type(model, wav, tmp):
    """--weight-type: a q8_0 server answers, as the CLI with the same type."""
    want = json.loads(cli(["-m", model, "-t", "1", "-q", "--json", "--weight-type", "q8_0",
                           wav]))["text"]
    srv = Server(model, "--weight-type", "q8_0", "-t", "1", tmp=tmp)
    r = transcribe(srv.port, read(wav), []) if srv.port else None
    report("--weight-type q8_0: the CLI's q8_0 text",
           r is not None and r.status == 200 and r.json() == {"text": want},
           f"{r} want {want!r} {srv.stderr()[-300:]}")
    srv.stop()
    report("--weight-type server: clean exit", *srv.clean_exit())


def test_usage(model):
    for args in (["--weight-type", "q2"], ["--port", "70000"], ["--workers", "0"], ["-t", "x"],
                 ["--queue", "-1"], ["--max-upload-mb", "0"],
                 ["--max-audio-seconds", "nan"], ["--api-key", ""],
                 ["--timeout", "0"], ["--max-connections-per-ip", "x"],
                 ["--bogus"], ["stray"]):
        p = subprocess.run([SERVER, "-m", model] + args, capture_output=True,
                           timeout=60)
        report(f"usage error {' '.join(args)}: exit 2",
               p.returncode == 2 and b"hviske-server: " in p.stderr,
               f"rc={p.returncode} {p.stderr[-300:]!r}")
    p = subprocess.run([SERVER, "-m", "/nonexistent", "--port", "0"],
                       capture_output=True, timeout=60)
    report("missing model: exit 1 with a message",
           p.returncode == 1 and b"/nonexistent" in p.stderr,
           f"rc={p.returncode} {p.stderr[-300:]!r}")


def main():
    manifest = fixtures_manifest()
    if manifest is None:
        return finish()
    model = os.path.join(FIXTURES, "models", MODEL_NAME)
    audio = {a["name"]: os.path.join(FIXTURES, a["path"])
             for a in manifest["audio"]}
    files = [audio[n] for n in ("da1_16k", "da2_44100_stereo", "da3_8k",
                                "da5_16k_flac") if n in audio]
    all_files = sorted(set(audio.values()))
    print(f"# {SERVER}\n# model {model}\n# audio {len(all_files)} files")
    t_start = time.time()

    with tempfile.TemporaryDirectory(prefix="hv-test-server-") as tmp:
        clips = []
        for n in ("da1_16k", "da2_16k", "da3_16k", "da4_16k", "da5_16k"):
            with wave.open(audio[n], "rb") as w:
                clips.append(w.readframes(w.getnframes()))
        long_path = long_wav(os.path.join(tmp, "long300.wav"), 300, clips)
        too_long = os.path.join(tmp, "long25_8k.wav")
        write_wav(too_long, b"\0\0" * (25 * 8000), rate=8000)

        test_usage(model)
        srv = Server(model, "--workers", "2", "-t", "1", "--max-upload-mb",
                     "1", "--max-audio-seconds", "20", "--timeout", "2",
                     "--request-timeout", "4", tmp=tmp)
        report("server starts and prints its port", srv.port is not None,
               srv.stderr())
        if srv.port:
            wav = audio["da1_16k"]
            test_basics(srv.port, 2)
            texts = test_formats(srv.port, model, files, tmp)
            texts.update(cli_texts(model, all_files))
            want = texts[wav]
            test_decoding(srv.port, model, audio["da2_16k"])
            test_fallback(srv.port, model, audio["da2_16k"])
            test_concurrency(srv, all_files, texts)
            test_hostile(srv.port, wav, want, tmp, too_long)
            test_slow_clients(srv.port, wav, want, 2)
            test_readme_curl(srv.port, model)
            test_include(srv.port, model, wav)
        srv.stop()
        report("main server: SIGTERM, exit 0, no sanitizer report",
               *srv.clean_exit())
        if srv.port:
            test_api_key(model, wav, want, tmp)
            test_queue_limit(model, long_path, wav, want, tmp)
            test_sigterm(model, long_path, wav, want, tmp)
            test_signal_to_library_thread(model, tmp)
            test_weight_type(model, wav, tmp)

    print(f"# {time.time() - t_start:.1f} s")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
