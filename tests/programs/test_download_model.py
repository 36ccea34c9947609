"""scripts/download-model.sh (docs/CLI.md "Model paths") against a server
on 127.0.0.1 that serves checkpoints in the Hugging Face hub's URL layout
(/OWNER/NAME/resolve/REVISION/FILE), with HEAD, byte ranges and the hub's
redirect of large files (X-Linked-Size); nothing is fetched from
elsewhere. The checkpoints are the demo model (models/demo) as it is and
split into two shards with an index, written by the test.

  * the sharded checkpoint: every file fetched, byte for byte, no .part
    left, and hviske transcribes the example with it as with the demo;
  * HF_TOKEN: a checkpoint that needs one is refused without it (saying
    so) and with a wrong one, fetched with it, the token sent as
    "Authorization: Bearer"; HF_ENDPOINT with a trailing slash;
    HF_REVISION picks the revision;
  * a download cut off halfway fails, keeps FILE.part and no FILE; run
    again, it resumes with a Range request from where it stopped and ends
    with the same bytes;
  * a run over a complete directory fetches nothing again;
  * a file whose size is not the server's, and a safetensors file whose
    size is not what its header says, are refused, naming the file,
    without a file of the final name;
  * a name the hub does not have: exit 1 naming it, no directory made;
    bad usage: exit 2;
  * a hostile endpoint (issue #62), each run into the directory of a
    complete download, which must stay byte for byte as it was, without
    a .part left: config.json answered 200 with an HTML page ("Rate
    limited"; it replaced the file, exit 0), a tokenizer.model body that
    never ends (written without limit; now cut at the 64 MiB ceiling, the
    server seeing the client leave), one claiming 200 MB (fetched and
    moved into place), 1 MiB of zeros for tokenizer.model (not a
    SentencePiece model), an empty generation_config.json ("stat: cannot
    statx"; now named with its URL), an index naming "*.safetensors"
    (globbed into a file the index does not name), shards whose weights
    do not add up to the index's total_size: exit 1 naming the file.
"""
import http.server
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, EXAMPLE, SOURCE_DIR, TIMEOUT, Run, finish_in, report  # noqa: E402

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "download-model.sh")
FILES = ["config.json", "generation_config.json", "tokenizer.model"]


def split_safetensors(src, out_dir, n):
    """Writes src's tensors as n shards and model.safetensors.index.json."""
    with open(src, "rb") as f:
        hlen = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(hlen))
        data = f.read()
    names = [k for k in header if k != "__metadata__"]
    weight_map = {}
    for s in range(n):
        part = names[s::n]
        shard = f"model-{s + 1:05d}-of-{n:05d}.safetensors"
        h, blob, off = {}, b"", 0
        for k in part:
            a, b = header[k]["data_offsets"]
            h[k] = dict(header[k], data_offsets=[off, off + b - a])
            blob += data[a:b]
            off += b - a
            weight_map[k] = shard
        hj = json.dumps(h).encode()
        hj += b" " * (-len(hj) % 8)
        with open(os.path.join(out_dir, shard), "wb") as f:
            f.write(struct.pack("<Q", len(hj)) + hj + blob)
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": len(data)}, "weight_map": weight_map}, f)


class Hub(http.server.BaseHTTPRequestHandler):
    """The hub's layout: /OWNER/NAME/resolve/REV/FILE; .safetensors files
    redirect (302, X-Linked-Size) to /lfs/OWNER/NAME/FILE as the hub's do.
    repos: {"owner/name": (dir, revision, token or None)}. cut: files whose
    next GET stops halfway. lies: {file: size} the HEAD claims. hostile:
    {(repo, file): how} answered badly (html, endless, huge, empty); sent:
    {file: bytes} of the endless bodies."""
    protocol_version = "HTTP/1.1"
    repos = {}
    log = []
    cut = set()
    lies = {}
    hostile = {}
    sent = {}

    def hostile_answer(self, how, name):
        if how == "html":
            return self.send(200, [("Content-Type", "text/html")],
                             b"<html><body><h1>Rate limited</h1></body></html>\n")
        if how == "empty":
            return self.send(200, [("Content-Type", "application/octet-stream")], b"")
        if how == "huge":  # 200 MB of zeros, announced
            n = 200 << 20
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
        else:  # endless: no length, zeros until the client leaves (at most 1 GiB)
            n = 1 << 30
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
        if self.command == "HEAD":
            return
        block, done = b"\0" * (1 << 16), 0
        try:
            while done < n:
                self.wfile.write(block)
                done += len(block)
        except OSError:
            pass
        Hub.sent[name] = done

    def log_message(self, *args):
        pass

    def send(self, code, headers=(), body=b""):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if not any(k == "Content-Length" for k, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def find(self):
        parts = self.path.split("/")
        if len(parts) == 6 and parts[3] == "resolve":
            repo, rev, name, lfs = f"{parts[1]}/{parts[2]}", parts[4], parts[5], False
        elif len(parts) == 5 and parts[1] == "lfs":
            repo, rev, name, lfs = f"{parts[2]}/{parts[3]}", None, parts[4], True
        else:
            return None
        if repo not in self.repos:
            return None
        d, want_rev, token = self.repos[repo]
        return repo, d, rev, want_rev, token, name, lfs

    def handle_any(self):
        Hub.log.append((self.command, self.path, self.headers.get("Range"),
                        self.headers.get("Authorization")))
        found = self.find()
        if not found:
            return self.send(404, [("Content-Type", "text/plain")], b"Repository not found")
        repo, d, rev, want_rev, token, name, lfs = found
        if token and self.headers.get("Authorization") != f"Bearer {token}":
            return self.send(401, [("Content-Type", "text/plain")], b"unauthorized")
        how = Hub.hostile.get((repo, name))
        if how:
            return self.hostile_answer(how, name)
        path = os.path.join(d, name)
        if (rev is not None and rev != want_rev) or not os.path.isfile(path):
            return self.send(404, [("Content-Type", "text/plain")], b"Entry not found")
        size = os.path.getsize(path)
        if name.endswith(".safetensors") and not lfs:
            return self.send(302, [("Location", f"/lfs/{repo}/{name}"),
                                   ("X-Linked-Size", str(Hub.lies.get(name, size)))])
        with open(path, "rb") as f:
            data = f.read()
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= size:
                return self.send(416, [("Content-Range", f"bytes */{size}")])
        body = data[start:]
        headers = [("Content-Type", "application/octet-stream"),
                   ("Content-Length", str(len(body)))]
        if start:
            headers.append(("Content-Range", f"bytes {start}-{size - 1}/{size}"))
        if self.command == "HEAD" and name in Hub.lies and not lfs:
            headers[1] = ("Content-Length", str(Hub.lies[name]))
        if self.command == "GET" and name in Hub.cut:
            Hub.cut.discard(name)
            self.send_response(206 if start else 200)
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send(206 if start else 200, headers, body)

    do_GET = do_HEAD = handle_any


def run(args, cwd, env=None):
    return subprocess.run(["bash", SCRIPT] + args, cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT, env=dict(os.environ, **(env or {})))


def same_files(a, b, names):
    for n in names:
        with open(os.path.join(a, n), "rb") as x, open(os.path.join(b, n), "rb") as y:
            if x.read() != y.read():
                return False
    return True


def test_hostile(tmp, work, env):
    """Issue #62: a hostile endpoint never replaces a complete checkpoint."""
    victim = os.path.join(work, "victim")
    p = run(["test/demo", victim], work, env)
    names = FILES + ["model.safetensors"]
    report("a complete download to attack", p.returncode == 0 and
           same_files(victim, DEMO_MODEL, names), p.stderr)
    zeros = os.path.join(tmp, "hub-zeros")
    os.makedirs(zeros)
    for f in FILES[:2] + ["model.safetensors"]:
        shutil.copy(os.path.join(DEMO_MODEL, f), zeros)
    with open(os.path.join(zeros, "tokenizer.model"), "wb") as f:
        f.write(b"\0" * (1 << 20))
    globbed = os.path.join(tmp, "hub-glob")
    os.makedirs(globbed)
    for f in FILES:
        shutil.copy(os.path.join(DEMO_MODEL, f), globbed)
    with open(os.path.join(globbed, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {"a": "*.safetensors"}}, f)
    with open(os.path.join(work, "x.safetensors"), "wb") as f:  # what the glob finds
        f.write(b"not in the index")
    total = os.path.join(tmp, "hub-total")
    shutil.copytree(os.path.join(tmp, "hub-sharded"), total)
    with open(os.path.join(total, "model.safetensors.index.json")) as f:
        index = json.load(f)
    index["metadata"]["total_size"] += 4
    with open(os.path.join(total, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    Hub.repos.update({"test/html": (DEMO_MODEL, "main", None),
                      "test/endless": (DEMO_MODEL, "main", None),
                      "test/huge": (DEMO_MODEL, "main", None),
                      "test/empty": (DEMO_MODEL, "main", None),
                      "test/zeros": (zeros, "main", None),
                      "test/glob": (globbed, "main", None),
                      "test/total": (total, "main", None)})
    Hub.hostile = {("test/html", "config.json"): "html",
                   ("test/endless", "tokenizer.model"): "endless",
                   ("test/huge", "tokenizer.model"): "huge",
                   ("test/empty", "generation_config.json"): "empty"}
    for repo, what, words in (
            ("test/html", "config.json answered with an HTML page", ["config.json", "not JSON"]),
            ("test/endless", "a tokenizer.model that never ends",
             ["tokenizer.model", "more than 67108864 bytes"]),
            ("test/huge", "a tokenizer.model of 200 MB", ["tokenizer.model", "209715200"]),
            ("test/zeros", "1 MiB of zeros as tokenizer.model",
             ["tokenizer.model", "not a SentencePiece model"]),
            ("test/empty", "an empty generation_config.json",
             ["generation_config.json", "sent nothing", "/test/empty/resolve/main/"]),
            ("test/glob", "an index naming *.safetensors", ["'*.safetensors'"]),
            ("test/total", "shards short of the index's total_size", ["the index says"])):
        Hub.log.clear()
        p = run([repo, victim], work, env)
        left = [f for f in os.listdir(victim) if f not in names]
        report(f"{what}: exit 1 naming it, the complete checkpoint as it was, nothing left",
               p.returncode == 1 and all(w in p.stderr for w in words) and
               same_files(victim, DEMO_MODEL, names) and not left and
               "stat:" not in p.stderr, f"rc={p.returncode} {p.stderr[-500:]!r} left {left}")
    report("the endless body: the server saw the client leave before 1 GiB",
           0 < Hub.sent.get("tokenizer.model", 0) < 1 << 30, str(Hub.sent))
    report("the globbed name: nothing the index does not name was asked for",
           not [x for x in Hub.log if "x.safetensors" in x[1]], str(Hub.log[-4:]))
    Hub.hostile = {}


def main():
    tmp = tempfile.mkdtemp(prefix="hv-download-")
    sharded = os.path.join(tmp, "hub-sharded")
    os.makedirs(sharded)
    for f in FILES:
        shutil.copy(os.path.join(DEMO_MODEL, f), sharded)
    split_safetensors(os.path.join(DEMO_MODEL, "model.safetensors"), sharded, 2)
    shards = sorted(f for f in os.listdir(sharded) if f.endswith(".safetensors"))
    Hub.repos = {"test/demo-sharded": (sharded, "main", None),
                 "test/demo": (DEMO_MODEL, "main", None),
                 "test/private": (DEMO_MODEL, "v2", "s3cret")}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{httpd.server_address[1]}"
    env = {"HF_ENDPOINT": endpoint}
    env.pop("HF_TOKEN", None)
    os.environ.pop("HF_TOKEN", None)
    os.environ.pop("HF_REVISION", None)
    want = Run(["-m", DEMO_MODEL, "-t", "1", "-q", EXAMPLE])
    try:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        p = run(["test/demo-sharded"], work, env)
        got = os.path.join(work, "demo-sharded")
        names = FILES + ["model.safetensors.index.json"] + shards
        report("a sharded checkpoint: every file, byte for byte, into NAME's last part",
               p.returncode == 0 and os.path.isdir(got) and
               sorted(os.listdir(got)) == sorted(names) and same_files(got, sharded, names),
               f"rc={p.returncode} {p.stderr} {os.listdir(got) if os.path.isdir(got) else None}")
        r = Run(["-m", got, "-t", "1", "-q", EXAMPLE])
        report("hviske transcribes with it as with the demo model",
               r.rc == 0 and r.out == want.out and want.out.strip(), f"{r}\n{want}")
        report("the shards came through the hub's redirect",
               all(("GET", f"/lfs/test/demo-sharded/{s}", None, None) in Hub.log
                   for s in shards), f"{Hub.log[-6:]}")

        Hub.log.clear()
        p = run(["test/demo-sharded", got], work, env)
        report("run again over the complete directory: nothing fetched again",
               p.returncode == 0 and not [x for x in Hub.log if x[0] == "GET"],
               f"{p.stderr} {Hub.log}")

        p = run(["test/private", "priv"], work, env)
        report("a checkpoint that needs a token, without HF_TOKEN: refused, saying so",
               p.returncode == 1 and "HF_TOKEN" in p.stderr and
               not os.path.exists(os.path.join(work, "priv")), p.stderr)
        p = run(["test/private", "priv"], work, dict(env, HF_TOKEN="wrong", HF_REVISION="v2"))
        report("a wrong HF_TOKEN: refused", p.returncode == 1 and "HF_TOKEN" in p.stderr, p.stderr)
        Hub.log.clear()
        p = run(["test/private", "priv"], work,
                {"HF_ENDPOINT": endpoint + "/", "HF_TOKEN": "s3cret", "HF_REVISION": "v2"})
        got = os.path.join(work, "priv")
        report("HF_TOKEN as 'Authorization: Bearer', HF_REVISION, HF_ENDPOINT with a slash",
               p.returncode == 0 and same_files(got, DEMO_MODEL, FILES + ["model.safetensors"])
               and all(x[3] == "Bearer s3cret" for x in Hub.log if x[1].startswith("/test/"))
               and any("/resolve/v2/" in x[1] for x in Hub.log), f"{p.stderr} {Hub.log[:3]}")
        p = run(["test/demo", "wrong-rev"], work, dict(env, HF_REVISION="v9"))
        report("a revision the hub does not have: exit 1 naming the file",
               p.returncode == 1 and "config.json" in p.stderr and "404" in p.stderr, p.stderr)

        # cut off halfway, then resumed
        Hub.cut = {"model.safetensors"}
        p = run(["test/demo", "cut"], work, env)
        got = os.path.join(work, "cut")
        part = os.path.join(got, "model.safetensors.part")
        size = os.path.getsize(os.path.join(DEMO_MODEL, "model.safetensors"))
        have = os.path.getsize(part) if os.path.exists(part) else -1
        report("a download cut off: exit 1, FILE.part kept, no FILE",
               p.returncode == 1 and 0 < have < size and
               not os.path.exists(os.path.join(got, "model.safetensors")) and
               "model.safetensors" in p.stderr, f"rc={p.returncode} {p.stderr} part={have}")
        Hub.log.clear()
        p = run(["test/demo", "cut"], work, env)
        report(f"run again: resumed with a Range from byte {have}, the same bytes",
               p.returncode == 0 and ("GET", "/lfs/test/demo/model.safetensors",
                                      f"bytes={have}-", None) in Hub.log and
               same_files(got, DEMO_MODEL, FILES + ["model.safetensors"]) and
               not os.path.exists(part), f"{p.stderr} {Hub.log}")

        # sizes that do not agree
        Hub.lies = {"model.safetensors": size + 10}
        p = run(["test/demo", "lie"], work, env)
        got = os.path.join(work, "lie")
        report("a file shorter than the server says: refused, naming it, no FILE",
               p.returncode == 1 and "model.safetensors" in p.stderr and str(size + 10) in p.stderr
               and not os.path.exists(os.path.join(got, "model.safetensors")), p.stderr)
        Hub.lies = {}
        bad = os.path.join(tmp, "hub-bad")
        os.makedirs(bad)
        for f in FILES:
            shutil.copy(os.path.join(DEMO_MODEL, f), bad)
        with open(os.path.join(DEMO_MODEL, "model.safetensors"), "rb") as f:
            data = f.read()
        with open(os.path.join(bad, "model.safetensors"), "wb") as f:
            f.write(data[:-100])  # the header says 100 bytes more
        Hub.repos["test/bad"] = (bad, "main", None)
        p = run(["test/bad", "bad"], work, env)
        report("a safetensors file its header does not fit: refused, removed",
               p.returncode == 1 and "header" in p.stderr and
               not os.path.exists(os.path.join(work, "bad", "model.safetensors")) and
               not os.path.exists(os.path.join(work, "bad", "model.safetensors.part")), p.stderr)

        test_hostile(tmp, work, env)

        p = run(["test/nothing"], work, env)
        report("a name the hub does not have: exit 1 naming it, no directory",
               p.returncode == 1 and "test/nothing" in p.stderr and
               not os.path.exists(os.path.join(work, "nothing")), p.stderr)
        for args in ([], ["a", "b", "c"], ["not a name"], ["../x"]):
            p = run(args, work, env)
            report(f"usage {args}: exit 2", p.returncode == 2 and "usage" in p.stderr, p.stderr)
    finally:
        httpd.shutdown()
        httpd.server_close()
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
