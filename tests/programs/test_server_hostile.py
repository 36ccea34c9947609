#!/usr/bin/env python3
"""Hostile clients of `hviske-server` (issue #18, round two), over real
HTTP on 127.0.0.1, with the helpers of tests/programs/test_server.py.

Environment: as tests/programs/test_server.py (HV_SERVER, HV_CLI, HV_FIXTURES).

Covers:
  * clients that half-close: 3 rounds of 16 concurrent clients, each
    sending a whole request, then shutdown(SHUT_WR), then reading: every
    one gets its 200 and the CLI's text (libmicrohttpd 0.9.75 closed a
    resumed connection whose peer had half-closed: 5-33% were lost);
    refused requests from half-closing clients get their answer too;
  * refused requests (401, 404, 405, 415) are answered at their headers,
    with Connection: close, while the client still owes its whole body;
  * --min-upload-rate: a body trickled at 4 bytes/s is cut off after
    the --timeout grace, while a normal upload on the same server works;
  * headers trickled a byte at a time: the connection is closed once
    --timeout seconds pass without complete headers (MHD's idle timeout
    alone never fires: each byte resets it);
  * --max-connections full of stalled clients: /health still answers,
    other requests get a quick 503 (too_many_connections, Retry-After),
    and beyond the reserve every request, /health too, gets one;
  * multipart parts (issue 5c): an empty part hides no repeated field, and
    every part, empty or not, counts against the limit of 32;
    timestamp_granularities[] as one part per value still works;
  * JSON form fields (issue #43): chunking_strategy with trailing data or
    a key twice (type, threshold, apart) is a 400 naming the field;
  * an upload at 1 Hz (issue #43) is a 400 naming the rate, not 3000 s of
    audio upsampled;
  * a stream the client abandons (issue #43) is logged with status 499
    and error client_closed, and counted as unanswered in /metrics;
  * request framing (issue #51): two Content-Lengths, Content-Length
    with Transfer-Encoding, codings other than one chunked last, white
    space before a colon, Host missing or twice: one 400 (501) and the
    connection closed, the request hidden in the body never answered
    (hvserver.FRAMING_CASES; tests/deploy/test_framing.py sends them
    through nginx too);
  * the multipart boundary (issue #51): the Content-Type's parameter as
    RFC 2045/7578 define it (any case, a value up to ';' or quoted), a
    malformed one a 400 naming it; preambles, padding, epilogues, parts
    without data; malformed bodies a 400;
  * each limit its own code (issue #51): 65 channels a 400
    too_many_channels, audio over the library's memory budget a 413
    naming the budget (not --max-audio-seconds), over
    --max-audio-seconds a 413 naming the option;
  * over --max-connections-per-ip (issue #51) a 503 with Retry-After,
    not a connection closed unanswered;
  * clients gone (issue #51): queued requests (streams and not) whose
    client reset are skipped before decoding (the worker runs 3 jobs of
    7), half-closed ones are answered, and a reset while a request runs
    stops it;
  * --api-key values no client can send (empty, blank, a space or tab at
    either end, control characters) are usage errors (issue #62);
  * the browser's reach (issue #51): every answer of the API (errors
    echoing the path too) with X-Content-Type-Options: nosniff;
    num_beams over --max-beams (default 16) a 400 naming it; a Host that
    is not localhost, an IP address or an --allow-host a 403 naming the
    option; a page of another origin refused with 403 naming
    --allow-origin, or answered with CORS headers when listed.
Waits are for states (a 503 seen, a connection closed), never fixed
sleeps; the tricklers' pauses are their attack's pace, and the limits
checked are the server's own (a few seconds) with wide margins.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import socket
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, WAIT, finish, fixtures_manifest, report,  # noqa: E402
                    wait_until)
import test_server as ts  # noqa: E402
import hvserver  # noqa: E402

URL = "/v1/audio/transcriptions"
RESERVE = 4  # server/server_http.c: connections beyond --max-connections


def post_bytes(audio, fields=(), extra_headers="", boundary=None):
    """A whole POST of a multipart form, as bytes."""
    body, ctype = ts.multipart(list(fields), audio, boundary=boundary)
    head = (f"POST {URL} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n{extra_headers}\r\n").encode()
    return head + body


def read_all(s):
    """Reads until the server closes; (bytes, error or None)."""
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return out, None
            out += b
    except OSError as e:
        return out, repr(e)


def split_response(resp):
    """(status, {header: value}, body) of one raw HTTP response."""
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return ts.raw_status(resp), headers, body


def half_closed(port, data):
    """Sends data, shuts down the write side, reads the answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=ts.TIMEOUT)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return read_all(s)
    finally:
        s.close()


# ------------------------------------------------------------------ cases

def test_half_close(port, wav, want):
    data = post_bytes(ts.read(wav))
    for rnd in range(3):
        results = [None] * 16

        def one(i):
            results[i] = half_closed(port, data)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bad = []
        for resp, err in results:
            st, _, body = split_response(resp)
            try:
                ok = st == 200 and json.loads(body) == {"text": want}
            except ValueError:
                ok = False
            if not ok:
                bad.append(f"{resp[:80]!r} {err}")
        report(f"half-closing clients, round {rnd + 1}: 16 concurrent, "
               f"every one answered 200 with the CLI's text",
               not bad, f"{len(bad)} lost or wrong: {bad[:3]}")
    for label, req, status in (
            ("unknown path", b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404),
            ("bad multipart", post_bytes(b"x", [("temperature", "hot")]), 400)):
        resp, err = half_closed(port, req)
        report(f"half-closing client, {label}: {status}",
               ts.raw_status(resp) == status, f"{resp[:200]!r} {err}")


def test_refused_at_once(model, tmp):
    """Refusals at the headers: the body is never waited for."""
    srv = ts.Server(model, "-t", "1", "--api-key", "k3y", "--timeout", "60",
                    "--request-timeout", "600", tmp=tmp)
    report("refusals server starts", srv.port is not None, srv.stderr())
    if not srv.port:
        return
    key = "Authorization: Bearer k3y\r\n"
    mp = "multipart/form-data; boundary=xyz"
    cases = [
        ("no API key", f"POST {URL}", f"Content-Type: {mp}\r\n", 401),
        ("unknown path", "POST /v1/nothing", key, 404),
        ("wrong method", f"PUT {URL}", key + f"Content-Type: {mp}\r\n", 405),
        ("wrong Content-Type", f"POST {URL}",
         key + "Content-Type: text/plain\r\n", 415),
    ]
    for label, line, headers, status in cases:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
        t0 = time.monotonic()
        try:
            # the headers promise 1 MB that never comes
            s.sendall(f"{line} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}"
                      f"Content-Length: 1000000\r\n\r\n".encode())
            resp, err = read_all(s)
        finally:
            s.close()
        dt = time.monotonic() - t0
        st, h, _ = split_response(resp)
        report(f"{label}: {status} at the headers, body not awaited, "
               f"connection closed ({dt:.1f} s)",
               st == status and h.get("connection", "").lower() == "close"
               and err is None,
               f"{resp[:300]!r} {err}")
    srv.stop()
    report("refusals server: SIGTERM, exit 0, clean", *srv.clean_exit())


def trickle(port, first, pace, limit):
    """Sends first, then one byte every pace seconds until the server
    closes the connection or limit seconds pass; (seconds, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=limit)
    t0 = time.monotonic()
    closed = False
    try:
        s.sendall(first)
        s.setblocking(False)
        while time.monotonic() - t0 < limit:
            try:
                if s.recv(65536) == b"":
                    closed = True
                    break
            except BlockingIOError:
                pass
            s.sendall(b"a")
            time.sleep(pace)  # the trickler's pace, not a wait for a state
    except OSError:
        closed = True
    finally:
        s.close()
    return time.monotonic() - t0, closed


def test_slow_uploads(model, wav, want, tmp):
    srv = ts.Server(model, "-t", "1", "--timeout", "2", "--min-upload-rate",
                    "1000", "--request-timeout", "600", tmp=tmp)
    report("slow-upload server starts", srv.port is not None, srv.stderr())
    if not srv.port:
        return
    body, ctype = ts.multipart([], ts.read(wav))
    head = (f"POST {URL} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    result = {}

    def run():
        result["body"] = trickle(srv.port, head + body[:50], 0.25, 40)

    t = threading.Thread(target=run)
    t.start()
    r = ts.transcribe(srv.port, ts.read(wav))
    report("trickled body: a normal upload is served meanwhile",
           r.status == 200 and r.json() == {"text": want}, str(r))
    t.join()
    dt, closed = result["body"]
    report(f"body trickled at 4 bytes/s: cut off after {dt:.1f} s "
           f"(--timeout 2 --min-upload-rate 1000; --request-timeout 600)",
           closed and 1.5 <= dt <= 25, f"closed={closed} dt={dt:.1f}")
    dt, closed = trickle(srv.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ",
                         0.25, 40)
    report(f"headers trickled a byte at a time: closed after {dt:.1f} s "
           f"(--timeout 2)", closed and 1.5 <= dt <= 25,
           f"closed={closed} dt={dt:.1f}")
    r = ts.request(srv.port, "GET", "/health")
    report("slow-upload server: /health afterwards", r.status == 200, str(r))
    srv.stop()
    report("slow-upload server: SIGTERM, exit 0, clean", *srv.clean_exit())


class Stalls:
    """Connections that send half a request's headers and then wait. The
    server learns of a connection the test closed a moment after the close,
    and until then still counts it: a new connection beyond a limit is
    then refused as it comes, and the test would wait for a state it can
    never reach. repair() replaces every stalled connection the server
    has answered or closed, so a test polls for the state it needs."""

    def __init__(self, port, n):
        self.port, self.conns = port, []
        self.add(n)

    def add(self, n):
        for _ in range(n):
            self.conns.append(self._stall())

    def _stall(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Stall: ")
        return s

    @staticmethod
    def _alive(s):
        s.setblocking(False)
        try:
            s.recv(1, socket.MSG_PEEK)  # an answer or the end: refused
            return False
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            s.settimeout(WAIT)

    def repair(self):
        for i, s in enumerate(self.conns):
            if not self._alive(s):
                s.close()
                self.conns[i] = self._stall()

    def close(self):
        for s in self.conns:
            s.close()


def test_connection_slots(model, tmp):
    srv = ts.Server(model, "-t", "1", "--max-connections", "2", "--timeout",
                    "120", tmp=tmp)
    report("slots server starts", srv.port is not None, srv.stderr())
    if not srv.port:
        return
    stalls = Stalls(srv.port, 2)
    try:
        last = {}

        def crowded():
            stalls.repair()
            r = ts.request(srv.port, "GET", "/v1/models", timeout=WAIT)
            last["r"] = r
            return ts.is_error(r, 503, code="too_many_connections")

        ok = wait_until(crowded, interval=0.05)
        report("--max-connections 2 held by stalled clients: others get a "
               "quick 503 too_many_connections",
               ok and last["r"].headers.get("retry-after") == "1",
               str(last.get("r")))
        r = ts.request(srv.port, "GET", "/health", timeout=WAIT)
        report("--max-connections 2 held by stalled clients: /health answers",
               r.status == 200 and isinstance(r.json(), dict), str(r))
        stalls.add(RESERVE)

        def refused():
            # the stalled connections may not all be counted yet: a probe
            # that still gets a slot is answered 200 on a kept-alive
            # connection, so it is not read to the end but tried again
            stalls.repair()
            t0 = time.monotonic()
            resp, err = b"", None
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT)
            try:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    resp += b
                    if b"\r\n\r\n" in resp and ts.raw_status(resp) != 503:
                        break
            except OSError as e:
                err = repr(e)
            finally:
                s.close()
            last["raw"] = (resp[:300], err, time.monotonic() - t0)
            return (ts.raw_status(resp) == 503
                    and b'"too_many_connections"' in resp
                    and b"Retry-After: 1" in resp)
        report("beyond the reserve: even /health gets a 503 at once, and "
               "the connection is closed",
               wait_until(refused, interval=0.05) and last["raw"][2] < WAIT / 2,
               str(last.get("raw")))
    finally:
        stalls.close()
    served_again(srv.port, "stalled clients gone: /health answers again")
    srv.stop()
    report("slots server: SIGTERM, exit 0, clean", *srv.clean_exit())


def served_again(port, label):
    """Reports label: /health answers 200 (once the server has seen the
    stalled connections close)."""
    last = {}

    def healthy():
        last["r"] = ts.request(port, "GET", "/health", timeout=WAIT)
        return last["r"].status == 200
    report(label, wait_until(healthy, interval=0.05), str(last.get("r")))


def test_per_ip(model, tmp):
    """Issue #51, finding 8: over --max-connections-per-ip a connection
    got no answer at all (libmicrohttpd closed it as it came); now it
    gets 503 too_many_connections_per_ip with Retry-After, as every other
    limit answers, and a slot freed serves again."""
    srv = ts.Server(model, "-t", "1", "--max-connections-per-ip", "2", "--timeout", "120",
                    tmp=tmp)
    if not srv.started("per-address server starts"):
        return
    stalls = Stalls(srv.port, 2)
    last = {}
    try:
        def refused():
            stalls.repair()
            got, closed = hvserver.exchange(srv.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                            b"\r\n", timeout=WAIT)
            last["raw"] = (got[:400], closed)
            return (ts.raw_status(got) == 503 and b'"too_many_connections_per_ip"' in got
                    and b"Retry-After: 1" in got and b"--max-connections-per-ip" in got
                    and closed)
        report("a third connection from 127.0.0.1 over --max-connections-per-ip 2: 503 "
               "too_many_connections_per_ip, Retry-After, closed",
               wait_until(refused, interval=0.05), str(last.get("raw")))
    finally:
        stalls.close()
    served_again(srv.port, "the stalled connections gone: served again")
    srv.stop()
    report("per-address server: SIGTERM, exit 0, clean", *srv.clean_exit())


def test_parts(port, wav, want):
    audio = ts.read(wav)
    g = "timestamp_granularities[]"
    for fields, param, label in (
            ([("temperature", ""), ("temperature", "0")], "temperature",
             "an empty part, then the same field"),
            ([("temperature", "0"), ("temperature", "")], "temperature",
             "a field, then an empty part of it"),
            ([("model", ""), ("model", "")], "model", "two empty parts"),
    ):
        r = ts.transcribe(port, audio, fields)
        report(f"{label}: 400", ts.is_error(r, 400, param), str(r))
    r = ts.transcribe(port, audio, [(g, "")] * 40)
    report("40 empty timestamp_granularities[] parts: 400 too_many_parts",
           ts.is_error(r, 400, code="too_many_parts"), str(r))
    r = ts.transcribe(port, audio, [(g, "segment")] * 2 + [(g, "")] * 31)
    report("2 parts and 31 empty ones: 400 too_many_parts",
           ts.is_error(r, 400, code="too_many_parts"), str(r))
    r = ts.transcribe(port, audio, [(g, "")] * 31)
    report("31 empty parts and the file (32 parts): not too many, 400 for "
           "the empty value", ts.is_error(r, 400, g, code="invalid_value"),
           str(r))
    r = ts.transcribe(port, audio, [("response_format", "verbose_json"),
                                    (g, "word"), (g, "segment")])
    o = r.json()
    report("timestamp_granularities[] word and segment as two parts: 200",
           r.status == 200 and isinstance(o, dict) and "words" in o
           and "segments" in o, str(r))
    # the same form, its bytes sent one by one: parts split across reads
    data = post_bytes(audio, [("model", "m"), ("language", ""),
                              ("prompt", "p")], boundary="b" + uuid.uuid4().hex)
    s = socket.create_connection(("127.0.0.1", port), timeout=ts.TIMEOUT)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head_end = data.index(b"\r\n\r\n") + 4
        s.sendall(data[:head_end])
        for i in range(head_end, head_end + 600):
            s.sendall(data[i:i + 1])
        s.sendall(data[head_end + 600:])
        resp, err = b"", None
        while b"\r\n\r\n" not in resp or len(resp) < 40:
            b = s.recv(65536)
            if not b:
                break
            resp += b
    finally:
        s.close()
    report("a form trickled byte by byte with an empty part: 400 language "
           "(the empty value), no false repeat",
           ts.raw_status(resp) == 400 and b'"param":"language"' in resp
           and b"more than once" not in resp, f"{resp[:300]!r}")


def form_body(boundary, parts, preamble=b"", pad=b"", epilogue=b""):
    """A multipart body of parts, each (header lines, data) as bytes, with
    a preamble, transport padding after every delimiter and an epilogue."""
    b = boundary.encode()
    out = [preamble + (b"\r\n" if preamble else b"")]
    for head, data in parts:
        out.append(b"--" + b + pad + b"\r\n" + head + b"\r\n" + data + b"\r\n")
    return b"".join(out) + b"--" + b + b"--" + pad + epilogue


def post_form(port, ctype, body):
    return ts.request(port, "POST", URL, body, {"Content-Type": ctype})


def test_boundary(port, wav, want):
    """Issue #51, finding 6: the boundary is the Content-Type's parameter
    as RFC 2045 and RFC 7578 define it (a name matched without case, a
    value up to ';' or quoted), not everything after "boundary="; a
    malformed one is a 400 that names it. The body's syntax (RFC 2046):
    a preamble, padding after delimiters, an epilogue, header names
    without case, a part without data."""
    audio = ts.read(wav)
    disp = b'Content-Disposition: form-data; name="file"; filename="a.wav"\r\n'
    for ctype, boundary in (
            ("multipart/form-data; boundary=XyZb; charset=utf-8", "XyZb"),
            ("multipart/form-data; Boundary=XyZb", "XyZb"),
            ("multipart/form-data;BOUNDARY=XyZb ;charset=utf-8", "XyZb"),
            ('multipart/form-data; charset="utf-8;"; boundary="Xy Zb:1"', "Xy Zb:1"),
            ('Multipart/Form-Data; boundary="a\\b"', "ab"),
            ("multipart/form-data; boundary=a=b?c", "a=b?c")):
        r = post_form(port, ctype, form_body(boundary, [(disp, audio)]))
        report(f"Content-Type {ctype!r}: the boundary {boundary!r}, 200 with the CLI's text",
               r.status == 200 and r.json() == {"text": want}, str(r))
    for ctype, named in (
            ("multipart/form-data", "no boundary parameter"),
            ("multipart/form-data; charset=utf-8", "no boundary parameter"),
            ("multipart/form-data; boundary=", "a parameter without a value"),
            ('multipart/form-data; boundary="abc', "an unterminated quoted value"),
            ("multipart/form-data; boundary=a@b", "'a@b'"),
            ("multipart/form-data; boundary=" + "b" * 71, "'" + "b" * 40 + "...'"),
            ('multipart/form-data; boundary="ab "', "'ab '"),
            ("multipart/form-data; boundary=a; boundary=b", "twice"),
            ('multipart/form-data; boundary=a"b', "'\"' in an unquoted value"),
            ('multipart/form-data; boundary="a;b"', "'a;b'"),
            ('multipart/form-data; boundary="a"b', "text after a quoted value")):
        r = post_form(port, ctype, form_body("a", [(disp, audio)]))
        o = r.json()
        msg = o.get("error", {}).get("message", "") if isinstance(o, dict) else ""
        report(f"Content-Type {ctype[:60]!r}: 400 invalid_multipart naming {named!r}",
               ts.is_error(r, 400, code="invalid_multipart") and named in msg, str(r))
    ct = "multipart/form-data; boundary=XyZb"
    for label, body in (
            ("a preamble, padding after each delimiter, an epilogue",
             form_body("XyZb", [(disp, audio)], b"This is a preamble.", b" \t ",
                       b"\r\nepilogue --XyZb\r\n")),
            ("header names in lower case, Content-Transfer-Encoding binary",
             form_body("XyZb", [(b'content-disposition: form-data; name=file\r\n'
                                 b"content-transfer-encoding: binary\r\n", audio)])),
            ("a part with no data at all (its blank line is the delimiter's CRLF)",
             b'--XyZb\r\nContent-Disposition: form-data; name="prompt"\r\n\r\n'
             + form_body("XyZb", [(disp, audio)]))):
        r = post_form(port, ct, body)
        report(f"a body with {label}: 200 with the CLI's text",
               r.status == 200 and r.json() == {"text": want}, str(r))
    for label, body in (
            ("no closing delimiter", form_body("XyZb", [(disp, audio)])[:-8]),
            ("a delimiter followed by other text",
             form_body("XyZb", [(disp, audio)]).replace(b"--XyZb\r\n", b"--XyZbX\r\n", 1)),
            ("a part without Content-Disposition",
             form_body("XyZb", [(b"Content-Type: audio/wav\r\n", audio)])),
            ("a part without a name",
             form_body("XyZb", [(b'Content-Disposition: form-data; filename="a"\r\n', audio)])),
            ("a part named twice",
             form_body("XyZb", [(b'Content-Disposition: form-data; name=file; name=x\r\n',
                                 audio)])),
            ("Content-Transfer-Encoding base64",
             form_body("XyZb", [(disp + b"Content-Transfer-Encoding: base64\r\n", audio)])),
            ("a folded header line",
             form_body("XyZb", [(b"Content-Disposition: form-data;\r\n name=file\r\n", audio)])),
            ("9000 bytes of part headers",
             form_body("XyZb", [(disp + b"X-Pad: " + b"p" * 9000 + b"\r\n", audio)]))):
        r = post_form(port, ct, body)
        report(f"a body with {label}: 400 invalid_multipart",
               ts.is_error(r, 400, code="invalid_multipart"), str(r))


def test_json_fields(port, wav):
    """Issue #43, finding 5: every field that carries JSON is parsed
    strictly: nothing after the value, no key twice (at any depth)."""
    audio = ts.read(wav)
    cs = "chunking_strategy"
    for value, label in (
            ('{"type":"server_vad"} xyz', "trailing data"),
            ('{"type":"server_vad"}{}', "a second value"),
            ('{"type":"server_vad","type":"foo"}', "type twice (the second bad)"),
            ('{"type":"server_vad","type":"server_vad"}', "type twice (both good)"),
            ('{"type":"server_vad","threshold":0.5,"threshold":0.6}', "threshold twice"),
            ('{"type":"server_vad","silence_duration_ms":500,"prefix_padding_ms":30,'
             '"silence_duration_ms":600}', "a key twice, apart"),
            ('{"type":"server_vad"', "cut short"),
    ):
        r = ts.transcribe(port, audio, [(cs, value)])
        report(f"{cs} {label}: 400 naming the field", ts.is_error(r, 400, cs), str(r))
    r = ts.transcribe(port, audio, [(cs, ' {"type":"server_vad","threshold":0.5} \n')])
    report(f"{cs} with white space around it: 200", r.status == 200, str(r))


def test_rate_floor(port, tmp):
    """Issue #43, finding 4: a 6 KB upload at 1 Hz counted as 3000 s of
    audio (and was upsampled to it): rates below 1000 Hz are a 400 naming
    the rate, at once."""
    import wave
    path = os.path.join(tmp, "rate1.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(1)
        w.writeframes(b"\0\1" * 3000)
    r = ts.transcribe(port, ts.read(path))
    o = r.json()
    msg = o.get("error", {}).get("message", "") if isinstance(o, dict) else ""
    report("a 6 KB upload at 1 Hz: 400 naming the rate and the floor",
           ts.is_error(r, 400, "file") and "1 Hz" in msg and "1000" in msg, str(r))


def flac_claiming(path, total):
    """The FLAC at path with its STREAMINFO's total samples (bytes 18..25,
    low 36 bits) set to total: a header claiming that length."""
    b = bytearray(ts.read(path))
    assert b[:4] == b"fLaC" and b[7] == 34
    v = int.from_bytes(b[18:26], "big")
    v = (v & ~((1 << 36) - 1)) | total
    b[18:26] = v.to_bytes(8, "big")
    return bytes(b)


def test_limit_codes(model, port, tmp, flac):
    """Issue #51, finding 7: each limit its own code and message, a hint
    at an option only where that option would help. 65 channels was 413
    audio_too_long with a hint at --max-audio-seconds."""
    import wave
    path = os.path.join(tmp, "ch65.wav")
    with wave.open(path, "wb") as w:
        w.setnchannels(65)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\1" * 65 * 1600)
    r = ts.transcribe(port, ts.read(path))
    o = r.json()
    msg = o.get("error", {}).get("message", "") if isinstance(o, dict) else ""
    report("65 channels: 400 too_many_channels naming the count, no --max-audio-seconds",
           ts.is_error(r, 400, "file", code="too_many_channels") and "65 channels" in msg
           and "--max-audio-seconds" not in msg, str(r))
    # --max-audio-seconds above the library's memory budget of a call
    # (2 GiB of samples at 16 kHz: 33554.4 s): the budget is the limit
    srv = ts.Server(model, "-t", "1", "--max-audio-seconds", "100000", tmp=tmp)
    if not srv.started("budget server starts"):
        return
    r = ts.request(srv.port, "GET", "/v1/models")
    m = ((r.json() or {}).get("data") or [{}])[0]
    report("--max-audio-seconds 100000: /v1/models says the budget's 33554.4 s",
           abs(m.get("max_audio_seconds", 0) - 33554.4) < 0.1, str(r))
    r = ts.transcribe(srv.port, flac_claiming(flac, 1 << 35))
    o = r.json()
    msg = o.get("error", {}).get("message", "") if isinstance(o, dict) else ""
    report("a FLAC claiming 2^35 samples, over the budget: 413 audio_too_long naming the "
           "budget, not --max-audio-seconds",
           ts.is_error(r, 413, "file", code="audio_too_long") and "memory budget" in msg
           and "33554.4" in msg and "--max-audio-seconds" not in msg, str(r))
    srv.stop()
    report("budget server: SIGTERM, exit 0, clean", *srv.clean_exit())
    r = ts.transcribe(port, flac_claiming(flac, 16000 * 7200))
    o = r.json()
    msg = o.get("error", {}).get("message", "") if isinstance(o, dict) else ""
    report("a FLAC claiming 7200 s, over --max-audio-seconds 3600: 413 audio_too_long "
           "naming the option",
           ts.is_error(r, 413, "file", code="audio_too_long") and "--max-audio-seconds" in msg,
           str(r))


def test_abandoned_stream(model, tmp):
    """Issue #43, finding 6: a stream the client abandons is logged as
    client_closed with status 499 and counted as unanswered, not as a
    200."""
    from test_streaming import sentences_wav
    path = sentences_wav(os.path.join(tmp, "long40.wav"), 40, 4)
    srv = ts.Server(model, "-t", "1", "--workers", "1", "--max-upload-mb", "64", tmp=tmp)
    if not srv.started("stream server starts"):
        return
    data = post_bytes(ts.read(path), [("stream", "true")],
                      extra_headers="X-Request-Id: abandoned-stream\r\n")
    got = hvserver.abandon_stream(srv.port, data)

    def logged():
        return [a for a in srv.access_lines() if a.get("request_id") == "abandoned-stream"]
    lines = wait_until(logged, interval=0.05) or []
    a = lines[0] if lines else {}
    report("an abandoned stream: the access log says status 499, error client_closed",
           b"transcript.text.delta" in got and a.get("status") == 499
           and a.get("error") == "client_closed", f"{lines} {got[:200]!r}")
    samples = hvserver.scrape_settled(srv.port)
    route = "/v1/audio/transcriptions"
    unanswered = samples and hvserver.metric(samples, "hviske_http_requests_unanswered_total",
                                       route=route)
    ok200 = samples and hvserver.metric(samples, "hviske_http_requests_total", route=route,
                                  status="200")
    report("... and /metrics counts it unanswered, not under status 200",
           unanswered == 1 and not ok200, f"unanswered={unanswered} 200={ok200}")
    srv.stop()
    report("stream server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())


def test_framing(model, tmp):
    """Issue #51, finding 5: a request whose body has no one framing (two
    Content-Lengths, Content-Length with Transfer-Encoding, a coding
    other than chunked last, white space before a header's colon) is
    answered 400 (501 for a coding before chunked) with Connection:
    close, and the connection is closed: the request hidden in its body
    is never answered. A Content-Length that is not a number is refused
    by libmicrohttpd itself, before the server sees the request (its
    header block comes twice: libmicrohttpd 0.9.75), and closed too.
    --timeout 3: a connection left open ends in seconds, not minutes."""
    srv = ts.Server(model, "-t", "1", "--timeout", "3", tmp=tmp)
    if not srv.started("framing server starts"):
        return
    for name, data, status, own in hvserver.FRAMING_CASES:
        got, closed = hvserver.exchange(srv.port, data, timeout=WAIT)
        lines = hvserver.status_lines(got)
        _, headers, body = split_response(got)
        if own:
            try:
                code = json.loads(body)["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = None
            ok = lines == [status] and code is not None
        else:
            ok = lines and set(lines) == {status}
        report(f"framing {name}: {status}{'' if own else ' (libmicrohttpd)'}, Connection: "
               f"close, closed, the hidden request not answered",
               ok and closed and headers.get("connection", "").lower() == "close",
               f"closed={closed} {got[:400]!r}")
    r = ts.request(srv.port, "GET", "/health")
    report("framing server: a plain request afterwards", r.status == 200, str(r))
    srv.stop()
    hidden = [a for a in srv.access_lines() if a.get("request_id", "").startswith("smuggled-")]
    report("framing: no hidden request in the access log", hidden == [], str(hidden[:3]))
    report("framing server: SIGTERM, exit 0, clean", *srv.clean_exit())


def health(port):
    o = ts.request(port, "GET", "/health", timeout=WAIT).json()
    return o if isinstance(o, dict) else {}


def test_gone_clients(tmp):
    """Issue #51, finding 9: a queued request whose client has gone was
    still decoded, scanned for speech and transcribed. The worker now
    asks the socket before each stage (when it takes the job, after
    decoding, before each chunk and decoder step) and skips the job of a
    client that reset its connection; a client that half-closes (a FIN)
    is answered. One worker is held by a long request (600 s of speech,
    16 beams) while the others queue; that it still runs when they have
    gone is checked, not assumed."""
    from hvtest import sentences_wav
    holder = ts.read(sentences_wav(os.path.join(tmp, "speech200.wav"), 200, 0.3))
    short = ts.read(EXAMPLE)
    srv = ts.Server(DEMO_MODEL, "-t", "1", "--workers", "1", "--queue", "8",
                    "--max-upload-mb", "32", tmp=tmp)
    if not srv.started("gone-clients server starts"):
        return
    port = srv.port
    base = hvserver.scrape_settled(port) or {}
    jobs0 = hvserver.metric(base, "hviske_worker_jobs_total")
    held = {}
    t = threading.Thread(target=lambda: held.setdefault("r", ts.transcribe(
        port, holder, [("num_beams", "16")], headers={"X-Request-Id": "holder"})))
    t.start()
    wait_until(lambda: health(port).get("running") == 1, interval=0.02)
    ids = [f"gone-stream-{i}" for i in range(3)] + ["gone-reset"]
    gone = []
    for i, rid in enumerate(ids):  # three streams and a plain request
        c = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        c.sendall(post_bytes(short, [("stream", "true")] if i < 3 else [],
                             f"X-Request-Id: {rid}\r\n"))
        wait_until(lambda: health(port).get("queued") == i + 1, interval=0.02)
        gone.append(c)
    for c in gone:  # a reset, as a client that gives up abruptly
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        c.close()
    halves = []
    for i, fields in enumerate(([("stream", "true")], [])):  # half-closed: answered
        c = socket.create_connection(("127.0.0.1", port), timeout=ts.TIMEOUT)
        c.sendall(post_bytes(short, fields, f"X-Request-Id: half-closed-{i}\r\n"))
        c.shutdown(socket.SHUT_WR)
        wait_until(lambda: health(port).get("queued") == 5 + i, interval=0.02)
        halves.append(c)
    h = health(port)
    report("the one worker still runs the long request with 6 queued, 4 of whose clients "
           "have reset", h.get("running") == 1 and h.get("queued") == 6, str(h))
    for c, what, mark in zip(halves, ("a stream", "not a stream"),
                             (b"transcript.text.done", b'"text"')):
        got, err = read_all(c)
        c.close()
        report(f"a half-closed client's request ({what}): answered 200",
               ts.raw_status(got) == 200 and mark in got, f"{got[:200]!r} {err}")
    t.join()
    report("the long request: 200", held["r"].status == 200, str(held["r"])[:200])
    wait_until(lambda: health(port).get("running") == 0 and health(port).get("queued") == 0,
               interval=0.02)
    log = srv.stderr()
    for rid in ids:
        report(f"{rid}: skipped before decoding ('went away while it waited')",
               f"request {rid}: the client went away while it waited: skipped" in log,
               log[-600:])
    samples = hvserver.scrape_settled(port) or {}
    jobs = hvserver.metric(samples, "hviske_worker_jobs_total") - jobs0
    report(f"the worker ran 3 jobs (the long one, the half-closed ones), not 7: {jobs:g}",
           jobs == 3, str(jobs))
    lines = {a.get("request_id"): a for a in srv.access_lines()}
    bad = [(rid, lines.get(rid)) for rid in ids
           if not (lines.get(rid, {}).get("status") == 499
                   and lines[rid].get("error") == "client_closed")]
    report("the skipped requests are logged 499 client_closed", not bad, str(bad[:2]))

    # a client that resets while its request is transcribed stops it
    c = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    c.sendall(post_bytes(holder, [("num_beams", "16")], "X-Request-Id: reset-running\r\n"))
    wait_until(lambda: health(port).get("running") == 1, interval=0.02)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    c.close()
    wait_until(lambda: "reset-running" in lines_of(srv), interval=0.05)
    log = srv.stderr()
    # running: decoding or transcribing, whichever it was in at the reset
    report("a client that resets while its request runs stops it",
           any(f"request reset-running: the client went away {w}: skipped" in log
               for w in ("while its audio was decoded", "during its transcription")),
           log[-600:])
    r = ts.transcribe(port, short)
    report("... and the worker answers the next request", r.status == 200, str(r))
    srv.stop()
    report("gone-clients server: SIGTERM, exit 0, clean", *srv.clean_exit())


def lines_of(srv):
    return {a.get("request_id") for a in srv.access_lines()}


def test_nosniff(port, wav):
    """Issue #51, finding 10: JSON errors echo the path (404, 405): every
    answer of the API says X-Content-Type-Options: nosniff, so that a
    browser never takes one for HTML."""
    audio = ts.read(wav)
    for label, r in (
            ("404 echoing a path of HTML",
             ts.request(port, "GET", "/<img%20src=x%20onerror=alert(1)>")),
            ("405", ts.request(port, "PUT", "/health")),
            ("400", ts.transcribe(port, audio, [("temperature", "hot")])),
            ("200 /v1/models", ts.request(port, "GET", "/v1/models")),
            ("200 /health", ts.request(port, "GET", "/health")),
            ("200 /metrics", ts.request(port, "GET", "/metrics")),
            ("200 a transcription", ts.transcribe(port, audio)),
            ("200 a stream", ts.transcribe(port, audio, [("stream", "true")]))):
        report(f"{label}: X-Content-Type-Options: nosniff",
               r.headers.get("x-content-type-options") == "nosniff", str(r)[:300])


def test_max_beams(model, port, wav, tmp):
    """Issue #51, finding 10: a request could buy 6.7 times a normal
    one's time with num_beams=64. --max-beams (default 16) caps it; more
    is a 400 naming the limit, and /v1/models gives it."""
    audio = ts.read(wav)
    r = ts.transcribe(port, audio, [("num_beams", "16")])
    report("num_beams 16 (the default --max-beams): 200", r.status == 200, str(r))
    for n in ("17", "64"):
        r = ts.transcribe(port, audio, [("num_beams", n)])
        o = r.json()
        msg = o.get("error", {}).get("message", "") if isinstance(o, dict) else ""
        report(f"num_beams {n}: 400 naming --max-beams and its 16",
               ts.is_error(r, 400, "num_beams") and "--max-beams" in msg and "to 16" in msg,
               str(r))
    m = ((ts.request(port, "GET", "/v1/models").json() or {}).get("data") or [{}])[0]
    report("/v1/models: max_beams 16", m.get("max_beams") == 16, str(m))
    srv = ts.Server(model, "-t", "1", "--max-beams", "64", tmp=tmp)
    if not srv.started("--max-beams 64 server starts"):
        return
    r = ts.transcribe(srv.port, audio, [("num_beams", "64")])
    report("--max-beams 64: num_beams 64 is taken", r.status == 200, str(r))
    r = ts.transcribe(srv.port, audio, [("num_beams", "65")])
    report("--max-beams 64: num_beams 65 is a 400", ts.is_error(r, 400, "num_beams"), str(r))
    srv.stop()
    report("--max-beams 64 server: SIGTERM, exit 0, clean", *srv.clean_exit())


def error_message(r):
    o = r.json()
    return o.get("error", {}).get("message", "") if isinstance(o, dict) else ""


def test_host(model, port, wav, tmp):
    """Issue #51, finding 10: with DNS rebinding, a web page points a name
    of its own at 127.0.0.1 and reads a key-less local server's answers.
    A server on loopback answers only a Host that is localhost, an IP
    address, its --host or an --allow-host; others get 403 naming the
    option."""
    audio = ts.read(wav)
    for host in ("evil.example", f"evil.example:{port}", "evil.example.", "rebind.127.0.0.1.nip.io"):
        for label, r in (("GET /health", ts.request(port, "GET", "/health", headers={"Host": host})),
                         ("a transcription", ts.transcribe(port, audio, headers={"Host": host}))):
            report(f"Host {host!r}, {label}: 403 host_not_allowed naming --allow-host",
                   ts.is_error(r, 403, code="host_not_allowed") and "--allow-host" in
                   error_message(r) and r.headers.get("connection", "").lower() == "close",
                   str(r))
    for host in (f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LOCALHOST.",
                 "app.localhost", f"[::1]:{port}", "10.1.2.3:80", ""):
        r = ts.request(port, "GET", "/health", headers={"Host": host})
        report(f"Host {host!r}: answered", r.status == 200, str(r))
    for host in ("a b", "x:port", "x:123456", "[::1", "a/b"):
        r = ts.request(port, "GET", "/health", headers={"Host": host})
        report(f"Host {host!r}: 400 invalid_host", ts.is_error(r, 400, code="invalid_host"),
               str(r))
    srv = ts.Server(model, "-t", "1", "--allow-host", "hviske.example", "--allow-host",
                    "Other.Example", tmp=tmp)
    if srv.started("--allow-host server starts"):
        for host, status in (("hviske.example:8443", 200), ("other.example", 200),
                             ("evil.example", 403), ("127.0.0.1", 200)):
            r = ts.request(srv.port, "GET", "/v1/models", headers={"Host": host})
            report(f"--allow-host hviske.example --allow-host Other.Example: Host {host!r} "
                   f"{status}", r.status == status, str(r))
        srv.stop()
        report("--allow-host server: SIGTERM, exit 0, clean", *srv.clean_exit())
    srv = ts.Server(model, "-t", "1", "--allow-host", "*", tmp=tmp)
    if srv.started("--allow-host '*' server starts"):
        r = ts.request(srv.port, "GET", "/v1/models", headers={"Host": "anything.example"})
        report("--allow-host '*': any Host", r.status == 200, str(r))
        srv.stop()
        report("--allow-host '*' server: SIGTERM, exit 0, clean", *srv.clean_exit())


def test_origin(model, port, wav, tmp):
    """Issue #51, finding 10: any web page could make a key-less local
    server transcribe. A request from another origin's page is refused
    with 403 naming --allow-origin, unless that option lists it: then it
    is answered with CORS headers, its preflight too. The page's own
    origin, and requests without Origin (curl, SDKs), are answered."""
    audio = ts.read(wav)
    own = f"http://127.0.0.1:{port}"
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null",
                   "http://127.0.0.1:1", f"http://localhost:{port}"):
        r = ts.transcribe(port, audio, headers={"Origin": origin})
        report(f"a transcription from a page of {origin!r}: 403 origin_not_allowed naming "
               f"--allow-origin", ts.is_error(r, 403, code="origin_not_allowed") and
               "--allow-origin" in error_message(r), str(r))
    r = ts.request(port, "GET", "/v1/models", headers={"Origin": "http://evil.example"})
    report("GET /v1/models from another origin: 403", r.status == 403, str(r))
    for origin in (own, f"HTTP://127.0.0.1:{port}"):
        r = ts.transcribe(port, audio, headers={"Origin": origin})
        report(f"a transcription from the page's own origin {origin!r}: 200, no CORS header",
               r.status == 200 and "access-control-allow-origin" not in r.headers, str(r))
    r = ts.request(port, "GET", "/", headers={"Origin": "http://evil.example"})
    report("the page's own files, asked with another Origin: 200", r.status == 200, str(r))
    app = "http://app.example:3000"
    srv = ts.Server(model, "-t", "1", "--allow-origin", app, "--api-key", "k3y", tmp=tmp)
    if srv.started("--allow-origin server starts"):
        key = {"Authorization": "Bearer k3y"}
        r = ts.transcribe(srv.port, audio, headers=dict(key, Origin=app))
        report(f"--allow-origin {app}: its page's transcription 200, with "
               f"Access-Control-Allow-Origin and Vary: Origin",
               r.status == 200 and r.headers.get("access-control-allow-origin") == app
               and "Origin" in r.headers.get("vary", "")
               and "X-Request-Id" in r.headers.get("access-control-expose-headers", ""), str(r))
        r = ts.request(srv.port, "OPTIONS", URL, headers={
            "Origin": app, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization"})
        report("... its preflight, without the key: 204 allowing POST and Authorization",
               r.status == 204 and r.headers.get("access-control-allow-origin") == app
               and r.headers.get("access-control-allow-methods") == "POST"
               and "Authorization" in r.headers.get("access-control-allow-headers", ""), str(r))
        r = ts.request(srv.port, "OPTIONS", URL, headers={
            "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        report("... another origin's preflight: 403", r.status == 403, str(r))
        r = ts.transcribe(srv.port, audio, headers=dict(key, Origin="http://app.example"))
        report("... the same host without its port: 403", r.status == 403, str(r))
        srv.stop()
        report("--allow-origin server: SIGTERM, exit 0, clean", *srv.clean_exit())
    srv = ts.Server(model, "-t", "1", "--allow-origin", "*", tmp=tmp)
    if srv.started("--allow-origin '*' server starts"):
        r = ts.request(srv.port, "GET", "/v1/models", headers={"Origin": "http://any.example"})
        report("--allow-origin '*': any page, answered with its origin",
               r.status == 200 and r.headers.get("access-control-allow-origin") ==
               "http://any.example", str(r))
        srv.stop()
        report("--allow-origin '*' server: SIGTERM, exit 0, clean", *srv.clean_exit())


def test_usage(model):
    import subprocess
    for args in (["--min-upload-rate", "x"], ["--min-upload-rate", "-1"],
                 ["--min-upload-rate", "1073741825"], ["--max-beams", "0"],
                 ["--max-beams", "65"], ["--allow-host", "a b"], ["--allow-host", ""],
                 ["--allow-host", "x/y"], ["--allow-origin", "evil.example"],
                 ["--allow-origin", "http://x/path"], ["--allow-origin", "://x"],
                 ["--allow-host", "h"] * 33):
        p = subprocess.run([ts.SERVER, "-m", model] + args,
                           capture_output=True, timeout=60)
        report(f"usage error {' '.join(args)}: exit 2",
               p.returncode == 2, f"rc={p.returncode} {p.stderr[-300:]!r}")


def test_api_key_values(model, tmp):
    """Issue #62: an --api-key no client can send ('Bearer KEY' is
    compared with its ends trimmed, and a header holds no control
    character) is a usage error, not a server nobody can use."""
    for key in ("", " ", "\t", "key ", " key", "\tkey", "a\x01b", "a\x1bb", "k\x7f", "a\nb"):
        srv = ts.Server(model, "--api-key", key, tmp=tmp)
        if srv.port:
            srv.stop()
        report(f"--api-key {key!r}: exit 2 naming --api-key, never listening",
               not srv.port and srv.proc.returncode == 2 and "--api-key" in srv.stderr(),
               f"port {srv.port} rc={srv.proc.returncode} {srv.stderr()[-300:]!r}")
    srv = ts.Server(model, "--api-key", "a key\twith inner blanks", tmp=tmp)
    if srv.started("--api-key with inner blanks starts"):
        r = ts.request(srv.port, "GET", "/v1/models",
                       headers={"Authorization": "Bearer a key\twith inner blanks"})
        report("--api-key with inner blanks: the client's key is taken", r.status == 200, str(r))
        srv.stop()


def main():
    manifest = fixtures_manifest()
    if manifest is None:
        return finish()
    model = os.path.join(ts.FIXTURES, "models", ts.MODEL_NAME)
    audio = {a["name"]: os.path.join(ts.FIXTURES, a["path"])
             for a in manifest["audio"]}
    wav = audio["da1_16k"]
    want = ts.cli_texts(model, [wav])[wav]
    print(f"# {ts.SERVER}\n# model {model}")
    t_start = time.time()
    import tempfile
    with tempfile.TemporaryDirectory(prefix="hv-test-hostile-") as tmp:
        test_usage(model)
        test_api_key_values(model, tmp)
        srv = ts.Server(model, "--workers", "2", "-t", "1", "--queue", "64",
                        tmp=tmp)
        report("server starts", srv.port is not None, srv.stderr())
        if srv.port:
            test_half_close(srv.port, wav, want)
            test_parts(srv.port, wav, want)
            test_boundary(srv.port, wav, want)
            test_json_fields(srv.port, wav)
            test_rate_floor(srv.port, tmp)
            test_limit_codes(model, srv.port, tmp, audio["da5_16k_flac"])
            test_nosniff(srv.port, wav)
            test_max_beams(model, srv.port, wav, tmp)
            test_host(model, srv.port, wav, tmp)
            test_origin(model, srv.port, wav, tmp)
        srv.stop()
        report("main server: SIGTERM, exit 0, no sanitizer report",
               *srv.clean_exit())
        test_refused_at_once(model, tmp)
        test_framing(model, tmp)
        test_slow_uploads(model, wav, want, tmp)
        test_connection_slots(model, tmp)
        test_per_ip(model, tmp)
        test_abandoned_stream(DEMO_MODEL, tmp)
        test_gone_clients(tmp)
    print(f"# {time.time() - t_start:.1f} s")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
