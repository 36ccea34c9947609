#!/usr/bin/env python3
"""Request framing behind the deploy recipe's nginx (issue #51, finding 5;
docs/SERVER.md "Security"): the requests of hvserver.FRAMING_CASES, each
a body with no one framing (two Content-Lengths, Content-Length with
Transfer-Encoding, a coding other than chunked last, white space before
a colon, a Content-Length that is not a number) with a request hidden in
it, sent to a replica of the demo model directly and through Debian's
nginx running deploy/nginx/hviske.conf (as tests/deploy/test_fleet.py
runs it, both upstream lines on the one replica).

Directly, the server answers each with one refusal and closes the
connection (tests/programs/test_server_hostile.py checks the statuses);
through nginx, nginx refuses what it cannot frame and forwards only
requests it framed itself. Either way the connection ends with a
refusal and the hidden request never reaches the replica: its access log
holds none of their ids. A plain request through nginx still works.
Prints one line per case and ends with "N passed, M failed".
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, WAIT, finish, report, skip_or_fail  # noqa: E402
from hvserver import (FRAMING_CASES, Server, exchange, request,  # noqa: E402
                      status_lines)
from test_fleet import Nginx, nginx_binary  # noqa: E402


def run(tmp, nginx_bin):
    srv = Server(DEMO_MODEL, "-t", "1", "--timeout", "3", tmp=tmp)
    ngx = None
    try:
        if not srv.started("the replica starts"):
            return
        ngx = Nginx(tmp, [srv.port, srv.port])
        if not ngx.start(nginx_bin):
            report("nginx starts with deploy/nginx/hviske.conf", False, ngx.errors()[-2000:])
            return
        r = request(ngx.port, "GET", "/health", timeout=WAIT)
        report(f"nginx on port {ngx.port} in front of the replica on {srv.port}: "
               f"/health through it", r.status == 200, str(r))
        for name, data, status, own in FRAMING_CASES:
            direct, dclosed = exchange(srv.port, data, timeout=WAIT)
            via, vclosed = exchange(ngx.port, data, timeout=WAIT)
            d, v = status_lines(direct), status_lines(via)
            report(f"{name}: directly {d}, through nginx {v}: both end in a refusal and "
                   f"close the connection",
                   dclosed and vclosed and d and v and d[-1] >= 400 and v[-1] >= 400
                   and set(d) == {status},
                   f"direct closed={dclosed} {direct[:300]!r} nginx closed={vclosed} "
                   f"{via[:300]!r}")
        r = request(ngx.port, "GET", "/v1/models", timeout=WAIT)
        report("a plain request through nginx afterwards", r.status == 200, str(r))
        srv.stop()
        hidden = [a["request_id"] for a in srv.access_lines()
                  if a.get("request_id", "").startswith("smuggled-")]
        report(f"no hidden request reached the replica ({len(FRAMING_CASES)} cases, "
               f"directly and through nginx)", hidden == [], str(hidden))
        report("the replica: SIGTERM, exit 0, clean", *srv.clean_exit())
    finally:
        if srv.proc.poll() is None:
            srv.stop()
        srv.kill()
        if ngx:
            ngx.stop()


def main():
    nginx_bin = nginx_binary()
    if not nginx_bin:
        skip_or_fail("request framing behind nginx", "nginx is not installed")
        return finish()
    with tempfile.TemporaryDirectory() as tmp:
        run(tmp, nginx_bin)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
