#!/usr/bin/env python3
"""The official OpenAI Python SDK (openai, pinned in
tests/oracle/requirements.lock) against hviske-server on the demo model,
beside the Node SDK's test (tests/programs/test_streaming.py,
tests/node/stream.mjs). The SDK is used as a user's program uses it
(OpenAI(base_url=..., api_key=..., max_retries=0)):

  * client.audio.transcriptions.create in every response_format (json,
    text, srt, vtt, verbose_json): what the SDK returns is the server's
    answer to the same form sent by hand (the text, the subtitle bytes,
    verbose_json's text, language, duration, segments);
  * timestamp_granularities ["word", "segment"] and ["word"]: the SDK's
    words and segments are the server's;
  * stream=True: transcript.text.delta events whose deltas join to the
    transcript.text.done event's text, which is the json answer's;
  * errors as the SDK's exception types: 400 (an unknown language, srt
    with stream) BadRequestError, 401 (--api-key, a wrong key)
    AuthenticationError, 413 (a file over --max-upload-mb) APIStatusError
    with status 413, 503 (the worker busy and the queue full)
    InternalServerError; the server answers no 429 (docs/SERVER.md: a full
    server is 503);
  * timeouts: with the one worker held by a long transcription, a request
    queued behind it with timeout=1 is the SDK's APITimeoutError.
The busy cases wait for the server's /ready to say so (running and queued),
never for time; the long request is then reset, which stops it.

Environment: HV_SERVER, HV_SOURCE_DIR. One line per case, then "N passed,
M failed".
"""

import os
import socket
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, finish_in, oracle_import, report,  # noqa: E402
                    sentences_wav, wait_until)
import hvserver as HS  # noqa: E402

openai = oracle_import("openai")

FORMATS = ("json", "text", "srt", "vtt", "verbose_json")


def client(port, key="unused", timeout=HS.TIMEOUT):
    return openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key=key, max_retries=0,
                         timeout=timeout)


def by_hand(port, audio, fields, key=None):
    body, ctype = HS.multipart([("model", "hviske")] + fields, audio)
    h = {"Content-Type": ctype}
    if key:
        h["Authorization"] = "Bearer " + key
    return HS.request(port, "POST", "/v1/audio/transcriptions", body, h)


def create(c, path, **kw):
    with open(path, "rb") as f:
        return c.audio.transcriptions.create(file=f, model="hviske", **kw)


def raised(fn):
    """The exception fn() raises, or None."""
    try:
        fn()
    except Exception as e:  # the case checks its type
        return e
    return None


def test_formats(port, audio_bytes):
    c = client(port)
    for fmt in FORMATS:
        r = by_hand(port, audio_bytes, [("response_format", fmt)])
        try:
            got = create(c, EXAMPLE, response_format=fmt)
        except openai.OpenAIError as e:
            report("response_format=%s" % fmt, False, repr(e))
            continue
        if fmt == "json":
            ok = r.status == 200 and got.text == r.json()["text"] and got.text
            detail = "%r vs %r" % (got, r.body[:200])
        elif fmt == "verbose_json":
            want = r.json()
            mine = got.model_dump(exclude_none=True)
            ok = r.status == 200 and all(mine.get(k) == want.get(k) for k in (
                "text", "language", "duration", "segments")) and mine["segments"]
            detail = "%r vs %r" % (mine, want)
        else:
            ok = r.status == 200 and isinstance(got, str) and got == r.body.decode("utf-8") and got
            detail = "%r vs %r" % (got, r.body[:200])
        report("response_format=%s: the SDK's answer is the server's" % fmt, ok, detail)
    for gran in (["word", "segment"], ["word"]):
        fields = [("response_format", "verbose_json")] + [
            ("timestamp_granularities[]", g) for g in gran]
        want = by_hand(port, audio_bytes, fields).json()
        got = create(c, EXAMPLE, response_format="verbose_json",
                     timestamp_granularities=gran).model_dump(exclude_none=True)
        ok = (got.get("words") == want.get("words") and got.get("words") and
              all({"word", "start", "end"} <= set(w) for w in got["words"]) and
              got.get("segments") == want.get("segments"))
        report("timestamp_granularities=%s: words and segments the server's" % gran, ok,
               "%r vs %r" % (got, want))


def test_stream(port):
    c = client(port)
    plain = create(c, EXAMPLE).text
    events = list(create(c, EXAMPLE, stream=True))
    kinds = [e.type for e in events]
    deltas = "".join(e.delta for e in events if e.type == "transcript.text.delta")
    ok = (kinds and kinds[-1] == "transcript.text.done" and
          set(kinds[:-1]) == {"transcript.text.delta"} and events[-1].text == plain and
          deltas == plain)
    report("stream=True: deltas join to the done event's text, the json answer's", ok,
           "%r plain %r" % (events, plain))


def test_errors(port):
    c = client(port)
    e = raised(lambda: create(c, EXAMPLE, language="xx"))
    report("400 (language xx): BadRequestError", isinstance(e, openai.BadRequestError) and
           e.status_code == 400, repr(e))
    e = raised(lambda: list(create(c, EXAMPLE, response_format="srt", stream=True)))
    report("400 (srt with stream): BadRequestError", isinstance(e, openai.BadRequestError) and
           e.status_code == 400, repr(e))


def test_key(tmp):
    srv = HS.Server(DEMO_MODEL, "-t", "1", "--api-key", "s3cret", tmp=tmp, name="key")
    if not srv.started("server with --api-key"):
        return
    try:
        e = raised(lambda: create(client(srv.port, "wrong"), EXAMPLE))
        report("401 (wrong key): AuthenticationError", isinstance(
            e, openai.AuthenticationError) and e.status_code == 401, repr(e))
        got = create(client(srv.port, "s3cret"), EXAMPLE)
        report("the right key: transcribed", bool(got.text), repr(got))
    finally:
        srv.stop()


def test_too_large(tmp):
    srv = HS.Server(DEMO_MODEL, "-t", "1", "--max-upload-mb", "1", tmp=tmp, name="large")
    if not srv.started("server with --max-upload-mb 1"):
        return
    try:
        big = sentences_wav(os.path.join(tmp, "big.wav"), 12, 0.5)
        e = raised(lambda: create(client(srv.port), big))
        report("413 (file over --max-upload-mb): APIStatusError, status 413",
               type(e) is openai.APIStatusError and e.status_code == 413, repr(e))
    finally:
        srv.stop()


def ready(port):
    r = HS.request(port, "GET", "/ready")
    try:
        return r.status, r.json()
    except ValueError:
        return r.status, {}


def hold(port, audio_bytes):
    """A long transcription sent by hand, its answer never read: the socket."""
    body, ctype = HS.multipart([("model", "hviske"), ("num_beams", "16")], audio_bytes)
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "Content-Type: %s\r\nContent-Length: %d\r\n\r\n" % (port, ctype, len(body))
               ).encode() + body)
    return s


def reset(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_busy(tmp):
    srv = HS.Server(DEMO_MODEL, "-t", "1", "--workers", "1", "--queue", "1", tmp=tmp,
                    name="busy")
    if not srv.started("server with --workers 1 --queue 1"):
        return
    held = []
    try:
        with open(sentences_wav(os.path.join(tmp, "long.wav"), 200, 0.3), "rb") as f:
            long_bytes = f.read()
        held.append(hold(srv.port, long_bytes))
        running = wait_until(lambda: ready(srv.port)[1].get("running") == 1)
        e = raised(lambda: create(client(srv.port, timeout=1.0), EXAMPLE))
        report("timeout: a request queued behind a held worker, timeout=1: APITimeoutError",
               running and isinstance(e, openai.APITimeoutError), "running=%r %r" % (running, e))
        held.append(hold(srv.port, long_bytes))
        full = wait_until(lambda: ready(srv.port)[0] == 503)
        e = raised(lambda: create(client(srv.port), EXAMPLE))
        report("503 (worker busy, queue full): InternalServerError",
               full and isinstance(e, openai.InternalServerError) and e.status_code == 503,
               "ready=%r %r" % (ready(srv.port), e))
    finally:
        for s in held:
            reset(s)
        srv.stop()


def main():
    tmp = tempfile.mkdtemp(prefix="hv-openai-py-")
    print("# openai %s" % openai.__version__)
    with open(EXAMPLE, "rb") as f:
        audio_bytes = f.read()
    srv = HS.Server(DEMO_MODEL, "-t", "2", tmp=tmp, name="main")
    if srv.started("hviske-server on the demo model"):
        try:
            test_formats(srv.port, audio_bytes)
            test_stream(srv.port)
            test_errors(srv.port)
        finally:
            srv.stop()
    test_key(tmp)
    test_too_large(tmp)
    test_busy(tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
