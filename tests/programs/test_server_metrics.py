"""hviske-server's endpoints for load balancers and monitoring (issue #15,
docs/SERVER.md "Metrics, readiness and the access log"), over real HTTP
with the demo model:

  * GET /metrics parses as the Prometheus text format (a strict parser in
    hvserver.py) and its counters move exactly with the requests sent, one
    per route and status (200, 400, 404, 405, 413, 415 and the 503 of a
    draining server); routes outside the fixed list count as "other", so
    hostile paths add no label values;
  * GET /ready: 200 when idle, 503 "busy" while a request fills --workers 1
    --queue 0, 503 "draining" after SIGTERM while /health stays 200 and
    new work gets 503 with Connection: close; the request begun before the
    signal finishes with its text, then the server exits 0;
  * X-Request-Id: echoed when 1..128 visible ASCII characters, generated
    (unique, hv-<16 hex>-<n>) otherwise, on every answer;
  * the access log: a JSON line per request with exactly its fields, on
    stderr, in --access-log FILE instead, or nowhere with -q; request ids
    with quotes and backslashes escaped.

Every state is waited for (hvtest.wait_until), never slept for.
"""
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, EXAMPLE, WAIT, finish, report, wait_until  # noqa: E402
from hvserver import (Server, metric, multipart, parse_metrics, recv_all,  # noqa: E402
                      request, scrape, scrape_settled, transcribe)

WANT = "I morgen bliver det gråt med minus tyve grader."
T = "/v1/audio/transcriptions"
LOG_KEYS = {"time", "request_id", "method", "route", "path", "status",
            "audio_seconds", "duration", "client"}
GEN_ID = re.compile(r"hv-[0-9a-f]{16}-[1-9][0-9]*")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def long_wav(path, copies):
    """The example said `copies` times over, one WAV file."""
    with wave.open(EXAMPLE, "rb") as w:
        params, frames = w.getparams(), w.readframes(w.getnframes())
    with wave.open(path, "wb") as o:
        o.setparams(params)
        o.writeframes(frames * copies)
    return path


def counts(samples):
    """{(route, status): n} of hviske_http_requests_total."""
    out = {}
    for (name, labels), v in samples.items():
        if name == "hviske_http_requests_total":
            d = dict(labels)
            out[(d["route"], d["status"])] = v
    return out


def delta(after, before):
    return {k: v - before.get(k, 0) for k, v in after.items()
            if v != before.get(k, 0)}


def test_metrics(tmp):
    srv = Server(DEMO_MODEL, "-t", "1", "--max-upload-mb", "1", tmp=tmp,
                 name="metrics")
    if not srv.started("metrics server starts"):
        return
    try:
        r = request(srv.port, "GET", "/metrics")
        ok = r.status == 200 and r.headers.get("content-type") == \
            "text/plain; version=0.0.4; charset=utf-8"
        try:
            samples, types = parse_metrics(r.body.decode("utf-8"))
            why = ""
        except ValueError as e:
            samples, types, why = None, None, str(e)
        report("GET /metrics: 200, text format 0.0.4, parses strictly",
               ok and samples is not None, f"{why} {r}")
        if samples is None:
            return
        want_types = {
            "hviske_build_info": "gauge", "hviske_http_requests_total": "counter",
            "hviske_http_requests_unanswered_total": "counter",
            "hviske_http_requests_in_flight": "gauge",
            "hviske_http_request_duration_seconds": "histogram",
            "hviske_queue_depth": "gauge", "hviske_queue_capacity": "gauge",
            "hviske_transcriptions_running": "gauge", "hviske_workers": "gauge",
            "hviske_audio_seconds_total": "counter",
            "hviske_processing_seconds_total": "counter",
            "hviske_model_load_seconds": "gauge", "hviske_ready": "gauge",
            "hviske_draining": "gauge"}
        missing = {k: v for k, v in want_types.items() if types.get(k) != v}
        report("/metrics: every family with its type", not missing, str(missing))
        build = [dict(lab) for (n, lab) in samples if n == "hviske_build_info"]
        report("/metrics: hviske_build_info{version} 1",
               len(build) == 1 and re.fullmatch(r"\d+\.\d+\.\d+.*", build[0]["version"])
               and metric(samples, "hviske_build_info", **build[0]) == 1, str(build))
        report("/metrics: capacity 17 (1 worker + queue 16), nothing queued, "
               "model load time > 0",
               metric(samples, "hviske_queue_capacity") == 17
               and metric(samples, "hviske_queue_depth") == 0
               and metric(samples, "hviske_workers") == 1
               and metric(samples, "hviske_model_load_seconds") > 0, "")

        before_s = scrape_settled(srv.port)
        before = counts(before_s)
        audio_before = metric(before_s, "hviske_audio_seconds_total")
        sent = []
        r = transcribe(srv.port, read(EXAMPLE))
        sent.append((T, "200", r.status == 200 and r.json() == {"text": WANT}))
        r = transcribe(srv.port, read(EXAMPLE), fields=[("temperature", "hot")])
        sent.append((T, "400", r.status == 400))
        body, ctype = multipart([], b"RIFF not audio")
        r = request(srv.port, "POST", T, body, {"Content-Type": ctype})
        sent.append((T, "400", r.status == 400))
        r = request(srv.port, "POST", T, b"x", {"Content-Type": "text/plain"})
        sent.append((T, "415", r.status == 415))
        r = request(srv.port, "POST", T, b"", {
            "Content-Type": "multipart/form-data; boundary=x",
            "Content-Length": str(1 << 30)})
        sent.append((T, "413", r.status == 413))
        r = request(srv.port, "GET", T)
        sent.append((T, "405", r.status == 405))
        # (libmicrohttpd unescapes the path, and a NUL ends it: "/%00..."
        # would be "/", the web page)
        for path in ("/nothing", "/v1/../etc/passwd", "/x%00%ff", "/" + "x" * 500):
            r = request(srv.port, "GET", path)
            sent.append(("other", "404", r.status == 404))
        r = request(srv.port, "GET", "/v1/models")
        sent.append(("/v1/models", "200", r.status == 200))
        r = request(srv.port, "POST", "/health", b"")
        sent.append(("/health", "405", r.status == 405))
        r = request(srv.port, "GET", "/ready")
        sent.append(("/ready", "200", r.status == 200 and
                     r.json() == {"status": "ready", "running": 0, "queued": 0,
                                  "capacity": 17}))
        after_s = scrape_settled(srv.port)
        want = {}
        for route, status, _ in sent:
            want[(route, status)] = want.get((route, status), 0) + 1
        got = delta(counts(after_s), before)
        # the scrapes themselves: at least the one that gave `before`
        scrapes = got.pop(("/metrics", "200"), 0)
        report("each request got the status it was sent for",
               all(ok for _, _, ok in sent), str(sent))
        report(f"hviske_http_requests_total moved by exactly the requests "
               f"sent ({sum(want.values())}), and the scrapes ({scrapes})",
               got == want and scrapes >= 1, f"got {got} want {want}")
        labels = {dict(lab).get("route") for (n, lab) in after_s
                  if n.startswith("hviske_http_request")}
        report("routes: the fixed list and \"other\" only (hostile paths add "
               "no label values)",
               labels <= {T, "/v1/models", "/health", "/ready", "/metrics", "/inference",
                          "other", None}, str(labels))
        audio = metric(after_s, "hviske_audio_seconds_total") - audio_before
        report(f"hviske_audio_seconds_total grew by the one transcribed file "
               f"({audio:.3f} s)", abs(audio - 3.025) < 0.01, str(audio))
        n_t = metric(after_s, "hviske_http_request_duration_seconds_count", route=T)
        report("duration histogram counts every transcription request",
               n_t == sum(v for (rt, _), v in counts(after_s).items() if rt == T)
               and metric(after_s, "hviske_processing_seconds_total") > 0, str(n_t))

        # X-Request-Id
        for rid in ("client-id-1", 'q"uo\\te', "x" * 128):
            r = request(srv.port, "GET", "/health", headers={"X-Request-Id": rid})
            report(f"X-Request-Id {rid[:20]!r}... ({len(rid)} chars) echoed",
                   r.headers.get("x-request-id") == rid, str(r))
        for rid, why in (("x" * 129, "129 characters"), ("a b", "a space"),
                         ("", "empty")):
            r = request(srv.port, "GET", "/health", headers={"X-Request-Id": rid})
            report(f"X-Request-Id with {why}: a generated one instead",
                   GEN_ID.fullmatch(r.headers.get("x-request-id", "")), str(r))
        with socket.create_connection(("127.0.0.1", srv.port), timeout=60) as s:
            s.sendall(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"X-Request-Id: caf\xc3\xa9\x01\r\nConnection: close\r\n\r\n")
            raw = recv_all(s)
        m = re.search(rb"\r\nX-Request-Id: ([^\r]*)\r\n", raw)
        report("X-Request-Id with bytes outside ASCII: generated; on a 404 too",
               raw.startswith(b"HTTP/1.1 404") and m and
               GEN_ID.fullmatch(m.group(1).decode()), repr(raw[:300]))
        ids = [request(srv.port, "GET", "/health").headers.get("x-request-id")
               for _ in range(20)]
        report("generated ids: unique", len(set(ids)) == 20 and
               all(GEN_ID.fullmatch(i or "") for i in ids), str(ids[:3]))
        r = transcribe(srv.port, read(EXAMPLE), request_id="trace-42")
        report("a transcription's answer carries its X-Request-Id",
               r.status == 200 and r.headers.get("x-request-id") == "trace-42", str(r))
    finally:
        srv.stop()
    report("metrics server: SIGTERM, exit 0, clean", *srv.clean_exit())

    # the access log on stderr: a line per request, exactly its fields
    lines = srv.access_lines()
    keys_ok = all(set(o) == LOG_KEYS for o in lines)
    by_id = {o["request_id"]: o for o in lines}
    t = by_id.get("trace-42", {})
    report("access log on stderr: one JSON line per request, exactly the fields",
           len(lines) > 40 and keys_ok, str(lines[:2]))
    report("access log: the transcription's line (route, status, audio seconds, "
           "duration, client, time)",
           t.get("route") == T and t.get("status") == 200 and t.get("method") == "POST"
           and abs((t.get("audio_seconds") or 0) - 3.025) < 0.01
           and 0 < t.get("duration", 0) < 600 and t.get("client") == "127.0.0.1"
           and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", t.get("time", "")),
           str(t))
    q = by_id.get('q"uo\\te', {})
    report("access log: a client's id with a quote and a backslash is escaped "
           "(the line parses, the id round-trips)",
           q.get("route") == "/health" and q.get("audio_seconds") is None, str(q))
    o = [x for x in lines if x["path"].startswith("/xxxx")]
    report("access log: a hostile path is logged (bounded) under route other",
           len(o) == 1 and o[0]["route"] == "other" and o[0]["status"] == 404
           and len(o[0]["path"]) < 64, str(o))


def test_log_options(tmp):
    path = os.path.join(tmp, "access.log")
    srv = Server(DEMO_MODEL, "-t", "1", "--access-log", path, tmp=tmp, name="logfile")
    ok = bool(srv.port)
    if ok:
        r = transcribe(srv.port, read(EXAMPLE), request_id="to-the-file")
        ok = r.status == 200
    srv.stop()
    with open(path) as f:
        lines = [json.loads(x) for x in f.read().splitlines()]
    report("--access-log FILE: the lines go to the file, none to stderr",
           ok and [x["request_id"] for x in lines] == ["to-the-file"]
           and set(lines[0]) == LOG_KEYS and not srv.access_lines(), str(lines))
    report("--access-log server: exit 0, clean", *srv.clean_exit())

    srv = Server(DEMO_MODEL, "-t", "1", "-q", tmp=tmp, name="quiet")
    ok = bool(srv.port) and request(srv.port, "GET", "/health").status == 200
    srv.stop()
    report("-q: no access log", ok and not srv.access_lines(), srv.stderr()[-300:])

    srv = Server(DEMO_MODEL, "--access-log", os.path.join(tmp, "no", "such", "dir"),
                 tmp=tmp, name="badlog")
    rc = srv.stop(None, timeout=WAIT)
    report("--access-log in a missing directory: exit 1 naming it",
           srv.port is None and rc == 1 and "no/such/dir" in srv.stderr(), srv.stderr())


def test_ready_busy(tmp):
    """--workers 1 --queue 0: a running request fills the server; /ready is
    then 503 "busy" (seen while /health shows it running)."""
    long_path = long_wav(os.path.join(tmp, "long.wav"), 12)
    srv = Server(DEMO_MODEL, "-t", "1", "--workers", "1", "--queue", "0", tmp=tmp,
                 name="busy")
    if not srv.started("busy server starts"):
        return
    try:
        r = request(srv.port, "GET", "/ready")
        report("/ready idle: 200 ready", r.status == 200 and
               r.json()["status"] == "ready", str(r))
        seen = None
        for attempt in range(5):  # until a /ready lands while it runs
            reply = {}
            t = threading.Thread(target=lambda: reply.setdefault(
                "r", transcribe(srv.port, read(long_path))))
            t.start()
            while seen is None and t.is_alive():
                r = request(srv.port, "GET", "/ready")
                if r.status == 503:
                    seen = r
            t.join()
            if seen is not None:
                break
        report("/ready while a request fills workers + queue: 503 busy, "
               "Retry-After",
               seen is not None and (seen.json() or {}).get("status") == "busy"
               and seen.json().get("capacity") == 1
               # running, or queued until the worker takes it
               and seen.json().get("running", 0) + seen.json().get("queued", 0) == 1
               and seen.headers.get("retry-after") == "1", str(seen))
        r = request(srv.port, "GET", "/ready")
        report("/ready after it: 200 again", r.status == 200, str(r))
        s = scrape_settled(srv.port)
        report("/metrics counts the /ready 503s", metric(
            s, "hviske_http_requests_total", route="/ready", status="503") >= 1, "")
    finally:
        srv.stop()
    report("busy server: exit 0, clean", *srv.clean_exit())


def test_drain(tmp):
    """SIGTERM with an upload begun: /ready 503, /health 200, new work 503
    with Connection: close; the upload finishes and is answered."""
    path = os.path.join(tmp, "drain.log")
    srv = Server(DEMO_MODEL, "-t", "1", "--timeout", "600", "--min-upload-rate", "0",
                 "--access-log", path, tmp=tmp, name="drain")
    if not srv.started("drain server starts"):
        return
    held = None
    signalled = False
    try:
        body, ctype = multipart([], read(EXAMPLE))
        held = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
        held.sendall((f"POST {T} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
                      f"X-Request-Id: held\r\nContent-Length: {len(body)}\r\n\r\n")
                     .encode() + body[:1000])
        s = scrape_settled(srv.port, in_flight=2)
        report("an upload begun (in flight on /metrics)", s is not None, "")
        srv.proc.send_signal(signal.SIGTERM)
        signalled = True
        ok = wait_until(lambda: "SIGTERM: finishing" in srv.stderr())
        report("SIGTERM taken", ok, srv.stderr()[-300:])
        r = request(srv.port, "GET", "/ready")
        report("draining: /ready 503 draining at once",
               r.status == 503 and r.json()["status"] == "draining", str(r))
        r = request(srv.port, "GET", "/health")
        report("draining: /health still 200 (alive), status draining",
               r.status == 200 and r.json()["status"] == "draining", str(r))
        r = transcribe(srv.port, read(EXAMPLE), request_id="late")
        report("draining: a new transcription gets 503 shutting_down with "
               "Connection: close and its X-Request-Id",
               r.status == 503 and (r.json() or {}).get("error", {}).get("code") ==
               "shutting_down" and r.headers.get("connection") == "close"
               and r.headers.get("x-request-id") == "late", str(r))
        # the late request is counted when the server has finished it,
        # which can be after its client has read the answer: wait until
        # only the held upload and this scrape are in flight
        s = scrape_settled(srv.port, in_flight=2)
        report("draining: /metrics answers, hviske_draining 1, hviske_ready 0, "
               "the 503 counted",
               s is not None and metric(s, "hviske_draining") == 1
               and metric(s, "hviske_ready") == 0 and metric(
                   s, "hviske_http_requests_total", route=T, status="503") == 1,
               str(s and {k[0]: v for k, v in s.items() if k[0] in ("hviske_draining",
                                                                     "hviske_ready")}))
        held.sendall(body[1000:])
        raw = b""
        while True:
            b = held.recv(65536)
            if not b:
                break
            raw += b
            if b"\r\n\r\n" in raw:
                head, _, rest = raw.partition(b"\r\n\r\n")
                m = re.search(rb"Content-Length: (\d+)", head)
                if m and len(rest) >= int(m.group(1)):
                    break
        head, _, rest = raw.partition(b"\r\n\r\n")
        report("the upload begun before the signal finishes: 200, its text",
               head.startswith(b"HTTP/1.1 200") and json.loads(rest or b"null") ==
               {"text": WANT}, repr(raw[:300]))
    finally:
        if held:
            held.close()
        rc = srv.stop(None if signalled else signal.SIGTERM)
    report(f"drained server exits 0 by itself ({rc}), clean", *srv.clean_exit())
    with open(path) as f:
        lines = [json.loads(x) for x in f.read().splitlines()]
    st = {o["request_id"]: o["status"] for o in lines}
    report("access log: the held request 200, the late one 503",
           st.get("held") == 200 and st.get("late") == 503, str(st))


def main():
    if not os.path.isdir(DEMO_MODEL):
        report("demo model present", False, DEMO_MODEL)
        return finish()
    with tempfile.TemporaryDirectory() as tmp:
        test_metrics(tmp)
        test_log_options(tmp)
        test_ready_busy(tmp)
        test_drain(tmp)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
