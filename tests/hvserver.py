"""Shared bits of the tests that run hviske-server as a whole process
(test_server.py, test_server_metrics.py, test_streaming.py, test_fleet.py):
a server on a free loopback port, plain HTTP requests, multipart forms, the
JSON access log, and a strict parser of the Prometheus text format
(version 0.0.4)."""
import http.client
import json
import math
import os
import re
import signal
import socket
import subprocess
import uuid

from hvtest import report, wait_until

SERVER = os.environ.get("HV_SERVER", "hviske-server")
TIMEOUT = 300


class Server:
    """hviske-server on 127.0.0.1 with --port 0 (env: its environment,
    None for ours); the port is read from its "listening on" line. stderr
    (with the access log, unless --access-log) goes to a file."""

    def __init__(self, model, *args, tmp, name=None, env=None):
        self.name = name or uuid.uuid4().hex
        self.log_path = os.path.join(tmp, f"server-{self.name}.log")
        self.log = open(self.log_path, "wb")
        self.args = [SERVER, "-m", model, "--host", "127.0.0.1", "--port",
                     "0"] + [str(a) for a in args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=self.log, env=env)
        self.rc = None

        def listening():
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)",
                          self.stderr_bytes())
            if m:
                return int(m.group(1))
            return "exited" if self.proc.poll() is not None else None

        port = wait_until(listening, interval=0.05)
        self.port = port if isinstance(port, int) else None

    def started(self, what):
        """True when the server listens; else the case `what` fails with
        the server's stderr, and the server is stopped."""
        if self.port:
            return True
        report(what, False, self.stderr())
        self.stop()
        return False

    def stderr_bytes(self):
        with open(self.log_path, "rb") as f:
            return f.read()

    def stderr(self):
        return self.stderr_bytes().decode("utf-8", "replace")

    def rss_kib(self):
        """The server's resident memory (VmRSS), KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def sanitized(self):
        """True when the server runs under AddressSanitizer (its RSS then
        holds ASan's quarantine of freed memory)."""
        try:
            with open(f"/proc/{self.proc.pid}/maps") as f:
                return "libasan" in f.read()
        except OSError:
            return False

    def access_lines(self, text=None):
        """The JSON lines of the access log in text (default: stderr)."""
        text = self.stderr() if text is None else text
        return [json.loads(line) for line in text.splitlines()
                if line.startswith("{")]

    def stop(self, sig=signal.SIGTERM, timeout=TIMEOUT):
        """Signals the server (sig None: it was) and waits; returns its
        exit status."""
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.rc = ("timeout", self.proc.wait())
        if not self.log.closed:
            self.log.close()
        return self.rc

    def kill(self):
        """For cleanup after a failure: SIGKILL if still running."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.log.closed:
            self.log.close()

    def clean_exit(self):
        """(ok, why) after stop(): exit 0 and no sanitizer report."""
        err = self.stderr()
        bad = [m for m in ("Sanitizer", "runtime error", "LeakSanitizer")
               if m in err]
        return self.rc == 0 and not bad, f"rc={self.rc} stderr={err[-1500:]!r}"


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __str__(self):
        return f"[{self.status} {self.headers} {self.body[:300]!r}]"


def request(port, method, path, body=None, headers=None, timeout=TIMEOUT):
    """One request on a new connection; status 0 when no answer came."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return Reply(r.status, {k.lower(): v for k, v in r.getheaders()},
                     r.read())
    except (OSError, http.client.HTTPException) as e:
        return Reply(0, {}, str(e).encode())
    finally:
        c.close()


def recv_all(sock):
    """Everything the peer sends on sock until it closes the connection."""
    data = b""
    while True:
        b = sock.recv(65536)
        if not b:
            return data
        data += b


def abandon_stream(port, data):
    """Sends the request bytes data (a stream=true upload), reads until
    the first transcript.text.delta event, then resets the connection (a
    client gone at once, not a polite close); the bytes read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.sendall(data)
    got = b""
    while b"transcript.text.delta" not in got:
        k = s.recv(65536)
        if not k:
            break
        got += k
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    s.close()
    return got


# ------------------------------------------------ request framing (#51)

def smuggled(case):
    """A request hidden in a misframed body: answered, it would be a
    second request smuggled past a proxy that frames the body otherwise.
    Its X-Request-Id names the case, to find it in an access log."""
    return (f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"X-Request-Id: smuggled-{case}\r\n\r\n").encode()


def _framing_cases():
    """(name, request bytes, status, own): requests whose body has no one
    framing (RFC 9112 section 6) or whose headers are malformed, each
    with a request hidden where one of the framings would find it; the
    status the server answers, and whether the answer is the server's
    own (False: libmicrohttpd's, before the server sees the request)."""
    h = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    out = []

    def case(name, head, body, status, own=True):
        out.append((name, (head + "\r\n").encode() + body + smuggled(name), status, own))

    case("two-lengths", h + "Content-Length: 5\r\nContent-Length: 120\r\n", b"XXXXX", 400)
    case("two-equal-lengths", h + "Content-Length: 5\r\nContent-Length: 5\r\n", b"XXXXX", 400)
    case("length-and-chunked", h + "Content-Length: 90\r\nTransfer-Encoding: chunked\r\n",
         b"0\r\n\r\n", 400)
    case("chunked-and-length", h + "Transfer-Encoding: chunked\r\nContent-Length: 90\r\n",
         b"0\r\n\r\n", 400)
    case("te-gzip", h + "Transfer-Encoding: gzip\r\n", b"0\r\n\r\n", 400)
    case("te-chunked-identity", h + "Transfer-Encoding: chunked, identity\r\n",
         b"0\r\n\r\n", 400)
    case("te-gzip-chunked", h + "Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n", 501)
    case("te-twice", h + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
         b"0\r\n\r\n", 400)
    case("te-space-colon", h + "Transfer-Encoding : chunked\r\n", b"0\r\n\r\n", 400)
    case("length-space-colon", h + "Content-Length : 5\r\n", b"XXXXX", 400)
    case("te-http10", "GET /health HTTP/1.0\r\nTransfer-Encoding: chunked\r\n",
         b"0\r\n\r\n", 400)
    case("two-hosts", h + "Host: 127.0.0.2\r\n", b"", 400)
    case("no-host", "GET /health HTTP/1.1\r\n", b"", 400)
    # a Content-Length that is not one number: libmicrohttpd's own answer
    for name, v in (("length-minus", "-1"), ("length-plus", "+5"),
                    ("length-list", "5, 5"), ("length-hex", "0x5")):
        case(name, h + f"Content-Length: {v}\r\n", b"XXXXX", 400, own=False)
    case("length-huge", h + "Content-Length: 99999999999999999999999\r\n", b"XXXXX", 413,
         own=False)
    return out


FRAMING_CASES = _framing_cases()


def exchange(port, data, timeout=TIMEOUT):
    """Sends data on a new connection and reads until the peer closes it
    (a reset counts as closed); (bytes read, closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = b""
    try:
        s.sendall(data)
        while True:
            b = s.recv(65536)
            if not b:
                return got, True
            got += b
    except socket.timeout:
        return got, False
    except OSError:
        return got, True
    finally:
        s.close()


def status_lines(data):
    """The statuses of every HTTP status line in data, in order."""
    return [int(m) for m in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]


def multipart(fields, file=None, filename="audio.wav"):
    """(body, content type) of a multipart/form-data form."""
    b = "hv" + uuid.uuid4().hex
    parts = []
    for k, v in fields:
        parts.append(f"--{b}\r\nContent-Disposition: form-data; "
                     f"name=\"{k}\"\r\n\r\n{v}\r\n".encode())
    if file is not None:
        parts.append(f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; "
                     f"filename=\"{filename}\"\r\nContent-Type: audio/wav"
                     f"\r\n\r\n".encode() + file + b"\r\n")
    parts.append(f"--{b}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={b}"


def transcribe(port, audio, request_id=None, fields=()):
    body, ctype = multipart(list(fields), audio)
    h = {"Content-Type": ctype}
    if request_id is not None:
        h["X-Request-Id"] = request_id
    return request(port, "POST", "/v1/audio/transcriptions", body, h)


# ------------------------------------------------- Prometheus text format

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _value(s):
    """A sample value as the format writes it (Go's ParseFloat)."""
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise ValueError(f"bad value {s!r}")
    return float(s)


def _labels(s, line):
    """Parses 'a="x",b="y"' (escapes \\\\, \\" and \\n) into a dict."""
    out = {}
    i = 0
    while i < len(s):
        m = re.compile(_LABEL + r'="').match(s, i)
        if not m:
            raise ValueError(f"bad label at {s[i:]!r} in {line!r}")
        name = s[i:m.end() - 2]
        i = m.end()
        v = []
        while True:
            if i >= len(s):
                raise ValueError(f"unterminated label value in {line!r}")
            ch = s[i]
            if ch == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ValueError(f"bad escape in {line!r}")
                v.append("\n" if nxt == "n" else nxt)
                i += 2
            elif ch == '"':
                i += 1
                break
            elif ch == "\n":
                raise ValueError(f"newline in a label value in {line!r}")
            else:
                v.append(ch)
                i += 1
        if name in out:
            raise ValueError(f"label {name} twice in {line!r}")
        out[name] = "".join(v)
        if i < len(s):
            if s[i] != ",":
                raise ValueError(f"expected ',' in {line!r}")
            i += 1
    return out


def parse_metrics(text, prefix="hviske_"):
    """Parses a whole exposition strictly; raises ValueError naming the
    first problem. Returns (samples, types): samples maps (name,
    frozenset of label items) to the value, types a family name to its
    TYPE. Checks: the text ends with a newline; every family has one HELP
    and one TYPE line, before its samples, and its samples are together;
    every sample name belongs to a declared family (for histograms:
    _bucket, _sum, _count) and starts with prefix; no series twice;
    histogram buckets are cumulative, end with le="+Inf", and equal
    _count."""
    if not text.endswith("\n"):
        raise ValueError("the exposition does not end with a newline")
    samples, types, helps, done = {}, {}, {}, set()
    current = None
    for line in text[:-1].split("\n"):
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (" + _NAME + r") (.*)", line)
            if not m:
                continue  # a comment
            kind, name, rest = m.groups()
            if name in done:
                raise ValueError(f"{kind} of {name} after its samples ended")
            if kind == "TYPE":
                if rest not in _TYPES:
                    raise ValueError(f"bad type in {line!r}")
                if name in types:
                    raise ValueError(f"two TYPE lines for {name}")
                types[name] = rest
            else:
                if name in helps:
                    raise ValueError(f"two HELP lines for {name}")
                helps[name] = rest
            if current and current != name:
                done.add(current)
            current = name
            continue
        if not line.strip():
            raise ValueError("an empty line")
        m = re.fullmatch(r"(" + _NAME + r")(?:\{(.*)\})? (\S+)( -?\d+)?", line)
        if not m:
            raise ValueError(f"bad sample line {line!r}")
        name, lab, val = m.group(1), m.group(2) or "", m.group(3)
        if not name.startswith(prefix):
            raise ValueError(f"{name} lacks the prefix {prefix}")
        fam = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and \
                    types.get(name[:-len(suffix)]) == "histogram":
                fam = name[:-len(suffix)]
        if fam not in types or fam not in helps:
            raise ValueError(f"{name}: no TYPE and HELP before it")
        if fam != current:
            raise ValueError(f"{name}: its family's samples are not together")
        labels = _labels(lab, line)
        key = (name, frozenset(labels.items()))
        if key in samples:
            raise ValueError(f"{line!r}: the series twice")
        samples[key] = _value(val)
    for fam, t in types.items():
        if fam not in helps:
            raise ValueError(f"{fam}: TYPE without HELP")
        if t != "histogram":
            continue
        series = {}
        for (name, labels), v in samples.items():
            if name == fam + "_bucket":
                d = dict(labels)
                le = d.pop("le", None)
                if le is None:
                    raise ValueError(f"{fam}_bucket without le")
                series.setdefault(frozenset(d.items()), []).append(
                    (_value(le), v))
        for rest, buckets in series.items():
            buckets.sort()
            if buckets[-1][0] != math.inf:
                raise ValueError(f"{fam}{dict(rest)}: no le=\"+Inf\" bucket")
            if any(b[1] > c[1] for b, c in zip(buckets, buckets[1:])):
                raise ValueError(f"{fam}{dict(rest)}: buckets not cumulative")
            count = samples.get((fam + "_count", rest))
            if count != buckets[-1][1] or (fam + "_sum", rest) not in samples:
                raise ValueError(f"{fam}{dict(rest)}: _count/_sum missing or "
                                 f"not the +Inf bucket")
    return samples, types


def metric(samples, name, **labels):
    """A sample's value; 0 when the series is absent (counters print only
    the label sets seen)."""
    return samples.get((name, frozenset(labels.items())), 0)


def scrape(port):
    """(samples, types, Reply) of GET /metrics; samples None on a bad
    answer."""
    r = request(port, "GET", "/metrics", timeout=60)
    if r.status != 200:
        return None, None, r
    s, t = parse_metrics(r.body.decode("utf-8"))
    return s, t, r


def scrape_settled(port, in_flight=1):
    """Scrapes until hviske_http_requests_in_flight is in_flight (this
    scrape included): every other request has then been counted."""
    def settled():
        s, _, _ = scrape(port)
        if s is not None and metric(s, "hviske_http_requests_in_flight") == in_flight:
            return s
        return None
    return wait_until(settled, interval=0.05)
