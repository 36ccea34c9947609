#!/usr/bin/env python3
"""Pre-quantized checkpoints (hviske-quantize, docs/QUANTIZE.md):

- round trip: the demo model and every fixture model (the sharded one
  included) quantized to q4_0 and q8_0 (and bf16 for one) load without
  conversion and transcribe token for token as the input loaded with
  `--weight-type T` (the same weights: the same bits out); with
  `--weight-type` of another type a quantized checkpoint converts;
- a sharded input gives the same file as its single-file twin;
- the tool: refuses an existing non-empty OUT_DIR without --force, bad
  types and arguments (exit 2), a missing input (exit 1, naming it);
- hostile quantized files (truncated, wrong byte length, bad metadata
  JSON, unknown block format, non-finite scale, a missing or twice-named
  tensor, bad logical shapes): each a clear error naming the file and the
  tensor, never a crash; a tensor at an odd offset is copied and loads;
  x8 blocks (interleaved by 8 rows) with a row count not a multiple of 8
  are refused; the same weights row by row (the layout written before x8)
  load (interleaved at load) and transcribe token for token, log-prob for
  log-prob the same: the same bytes reach the same kernels, so this holds
  with any BLAS kernel (the suite runs again under another OpenBLAS core).
Load time and peak memory of the demo model are reported, not asserted.

Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
from hvtest import DEMO_MODEL, Run, check, finish, report  # noqa: E402

BINARY = os.environ.get("HV_BINARY_DIR", os.path.join(os.path.dirname(HERE), "build"))
QUANTIZE = os.path.join(BINARY, "hviske-quantize")
FIXTURES = os.environ.get("HV_FIXTURES", os.path.join(BINARY, "fixtures"))


def quantize(args):
    p = subprocess.run([QUANTIZE] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=600)
    return p


def crashed(p):
    return p.returncode < 0 or "Sanitizer" in p.stderr or "runtime error" in p.stderr


def tokens(model, audio, extra=()):
    r = Run(["--json", "--dither", "0", "-t", "1", "-m", model] + list(extra) + list(audio))
    if r.rc != 0 or r.crashed():
        return None, str(r)
    return [(o["tokens"], o["token_logprobs"]) for o in map(json.loads, r.lines())], ""


def read_st(path):
    """(header dict, data bytes) of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_st(path, header, data, pad_to=8):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % pad_to)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def copy_model(src, dst):
    os.makedirs(dst, exist_ok=True)
    for name in ("config.json", "generation_config.json", "tokenizer.model"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), dst)


def round_trip(tmp, name, model, audio, types):
    for wt in types:
        out = os.path.join(tmp, f"{name}-{wt}")
        p = quantize([model, out, "--type", wt])
        report(f"{name}: hviske-quantize --type {wt}", p.returncode == 0 and not crashed(p),
               p.stderr[-500:])
        if p.returncode != 0:
            continue
        want, why = tokens(model, audio, ["--weight-type", wt])
        got, why2 = tokens(out, audio)
        report(f"{name} {wt}: quantized checkpoint == --weight-type {wt} at load "
               f"(tokens and log-probs, {len(audio)} files)",
               want is not None and got == want, why or why2 or "differs")
        got2, why3 = tokens(out, audio, ["--weight-type", wt])
        report(f"{name} {wt}: --weight-type {wt} on it matches", got2 == want, why3 or "differs")
        if wt == "q4_0":  # converting a quantized checkpoint runs (q4 -> f32 -> q8)
            got3, why4 = tokens(out, audio, ["--weight-type", "q8_0"])
            report(f"{name} q4_0 checkpoint with --weight-type q8_0 converts and runs",
                   got3 is not None and len(got3) == len(audio), why4)


def sharded_input(tmp, audio):
    """The demo model split into two shards with an index: the same output
    file as from the single file."""
    src = os.path.join(tmp, "demo-sharded")
    copy_model(DEMO_MODEL, src)
    header, data = read_st(os.path.join(DEMO_MODEL, "model.safetensors"))
    names = sorted(k for k in header if k != "__metadata__")
    halves = [names[:len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, part in enumerate(halves):
        fname = f"model-{i + 1:05d}-of-00002.safetensors"
        h, blob, off = {}, b"", 0
        for k in part:
            b, e = header[k]["data_offsets"]
            h[k] = dict(header[k], data_offsets=[off, off + e - b])
            blob += data[b:e]
            off += e - b
            weight_map[k] = fname
        write_st(os.path.join(src, fname), h, blob)
    with open(os.path.join(src, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    a, b = os.path.join(tmp, "from-sharded"), os.path.join(tmp, "from-single")
    pa, pb = quantize([src, a, "--type", "q4_0"]), quantize([DEMO_MODEL, b, "--type", "q4_0"])
    report("sharded input: quantized", pa.returncode == 0 and pb.returncode == 0,
           pa.stderr[-300:] + pb.stderr[-300:])
    same = False
    if pa.returncode == 0 and pb.returncode == 0:
        with open(os.path.join(a, "model.safetensors"), "rb") as fa, \
                open(os.path.join(b, "model.safetensors"), "rb") as fb:
            same = fa.read() == fb.read()
    report("sharded input: the same model.safetensors as from the single file", same)
    got, why = tokens(a, audio[:2])
    want, why2 = tokens(DEMO_MODEL, audio[:2], ["--weight-type", "q4_0"])
    report("sharded input: transcribes as --weight-type q4_0", got is not None and got == want,
           why or why2)


def tool_errors(tmp):
    out = os.path.join(tmp, "nonempty")
    os.makedirs(out)
    with open(os.path.join(out, "keep.txt"), "w") as f:
        f.write("x")
    p = quantize([DEMO_MODEL, out, "--type", "q4_0"])
    report("a non-empty OUT_DIR is refused without --force",
           p.returncode == 1 and out in p.stderr and "not empty" in p.stderr
           and not os.path.exists(os.path.join(out, "model.safetensors")), p.stderr)
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        f.write("{}")
    p = quantize([DEMO_MODEL, out, "--type", "q4_0", "--force"])
    report("--force writes into it (and removes a stale shard index)",
           p.returncode == 0 and os.path.exists(os.path.join(out, "model.safetensors"))
           and not os.path.exists(os.path.join(out, "model.safetensors.index.json"))
           and not [n for n in os.listdir(out) if ".tmp-" in n], p.stderr)
    p = quantize([DEMO_MODEL, DEMO_MODEL, "--type", "q4_0", "--force"])
    report("OUT_DIR == IN_DIR is refused", p.returncode == 1 and "input" in p.stderr, p.stderr)
    for args, what in (([DEMO_MODEL, out, "--type", "q3_k"], "an unknown type"),
                       ([DEMO_MODEL, out, "--type", "auto"], "--type auto"),
                       ([DEMO_MODEL, out], "no --type"),
                       ([DEMO_MODEL, "--type", "q4_0"], "no OUT_DIR"),
                       ([DEMO_MODEL, out, "x", "--type", "q4_0"], "three directories"),
                       ([DEMO_MODEL, out, "--type", "q4_0", "--bogus"], "an unknown option")):
        p = quantize(args)
        report(f"usage error: {what} (exit 2)", p.returncode == 2 and p.stderr, p.stderr)
    missing = os.path.join(tmp, "no-such-model")
    p = quantize([missing, os.path.join(tmp, "o2"), "--type", "q4_0"])
    report("a missing input: exit 1 naming it", p.returncode == 1 and missing in p.stderr,
           p.stderr)
    p = quantize(["--help"])
    report("--help", p.returncode == 0 and "--type" in p.stdout and "--force" in p.stdout)


def hostile(tmp, good_dir, audio):
    """Variants of a q4_0 checkpoint's model.safetensors; each must fail
    with a message naming the file (and the tensor), or load when valid."""
    header, data = read_st(os.path.join(good_dir, "model.safetensors"))
    meta = header["__metadata__"]
    quant = json.loads(meta["hviske.quant"])
    name = sorted(quant)[0]  # a quantized matrix
    b, e = header[name]["data_offsets"]

    def variant(tag, h, d, want, pad_to=8, loads=False):
        mdir = os.path.join(tmp, "hostile-" + tag)
        copy_model(good_dir, mdir)
        path = os.path.join(mdir, "model.safetensors")
        write_st(path, h, d, pad_to)
        r = Run(["--json", "--dither", "0", "-t", "1", "-m", mdir, audio[0]])
        if loads:
            got, why = tokens(mdir, audio[:1])
            want_t, _ = tokens(good_dir, audio[:1])
            check(f"hostile {tag}: loads and transcribes as the aligned file", r,
                  r.rc == 0 and got == want_t, why)
            return
        check(f"hostile {tag}: refused, naming the file and {want!r}", r,
              r.rc not in (0, None) and mdir in r.err and "model.safetensors" in r.err
              and want in r.err, "")

    def with_quant(q):
        h = json.loads(json.dumps(header))
        h["__metadata__"]["hviske.quant"] = json.dumps(q)
        return h

    # truncated: the file ends inside the data
    variant("truncated", header, data[:len(data) // 2], "outside the data section")
    # wrong byte length: one block fewer than the logical shape needs
    h = json.loads(json.dumps(header))
    h[name]["data_offsets"] = [b, e - 18]
    h[name]["shape"] = [e - 18 - b]
    variant("short-tensor", h, data, name)
    # logical shape not matching the bytes
    q = json.loads(json.dumps(quant))
    q[name]["shape"] = [q[name]["shape"][0] + 1] + q[name]["shape"][1:]
    variant("wrong-shape", with_quant(q), data, name)
    q = json.loads(json.dumps(quant))
    q[name]["shape"] = [q[name]["shape"][0] * 2, q[name]["shape"][1] // 2 + 16]
    variant("cols-not-32", with_quant(q), data, name)
    q = json.loads(json.dumps(quant))
    q[name]["shape"] = [-1, 32]
    variant("negative-dim", with_quant(q), data, name)
    q = json.loads(json.dumps(quant))
    q[name]["shape"] = "big"
    variant("shape-not-list", with_quant(q), data, name)
    # metadata that is not JSON, not an object, not a string
    h = json.loads(json.dumps(header))
    h["__metadata__"]["hviske.quant"] = "{\"" + name + "\": {\"type\": "
    variant("bad-metadata-json", h, data, "hviske.quant")
    h["__metadata__"]["hviske.quant"] = "[1, 2]"
    variant("metadata-not-object", h, data, "hviske.quant")
    h["__metadata__"] = {"hviske.quant": {"a": 1}}
    variant("metadata-not-string", h, data, "hviske.quant")
    # unknown block format
    q = json.loads(json.dumps(quant))
    q[name]["type"] = "q5_k"
    variant("unknown-format", with_quant(q), data, "unknown block format")
    # a quantized entry for a tensor that is not there, or not U8
    q = json.loads(json.dumps(quant))
    q["no.such.tensor"] = q[name]
    variant("missing-tensor", with_quant(q), data, "no.such.tensor")
    h = json.loads(json.dumps(header))
    h[name]["dtype"] = "I8"
    variant("not-u8", h, data, name)
    # stored as U8 without metadata: not a weight type
    h = json.loads(json.dumps(header))
    del q["no.such.tensor"]
    q.pop(name)
    h["__metadata__"]["hviske.quant"] = json.dumps(q)
    variant("u8-without-metadata", h, data, name)
    # a NaN and an infinite scale (f16 0x7e00, 0xfc00) in the first, second
    # and last block:
    # x8 keeps the scales in front (rows x blocks of 2 bytes), row by row
    # each block begins with its own
    bsize = 18 if quant[name]["type"].startswith("q4_0") else 34
    rows = quant[name]["shape"][0]
    nblocks = (e - b) // bsize
    x8 = quant[name]["type"].endswith("x8")
    last = b + 2 * nblocks - 2 if x8 else e - bsize
    second = b + 2 if x8 else b + bsize
    for tag, at, bits in (("nan-scale", second, b"\x00\x7e"), ("inf-scale", last, b"\x00\xfc"),
                          ("neg-inf-scale", b, b"\x00\xfc")):
        d = bytearray(data)
        d[at:at + 2] = bits
        variant(tag, header, bytes(d), "non-finite scale")
    if x8:
        # interleaved by 8 rows, but a row count that is not a multiple of 8
        q = json.loads(json.dumps(quant))
        q[name]["shape"] = [1, rows * q[name]["shape"][1]] if rows > 1 else [3, 32]
        variant("x8-rows", with_quant(q), data, "not a multiple of the 8")
        # the same weights row by row (as hviske-quantize wrote them before
        # the x8 layout): still loads, interleaved into a copy, and
        # transcribes with the same bits
        h, d, q = json.loads(json.dumps(header)), bytearray(data), json.loads(json.dumps(quant))
        for t, entry in quant.items():
            if entry["type"].endswith("x8"):
                tb, te = header[t]["data_offsets"]
                d[tb:te] = rows_layout(data[tb:te], entry)
                q[t]["type"] = entry["type"][:-2]
        variant("row-layout", with_quant(q), bytes(d), "", loads=True)
    # every tensor at an odd offset: one pad byte at the data's start
    h = json.loads(json.dumps(header))
    for k, v in h.items():
        if k != "__metadata__":
            v["data_offsets"] = [v["data_offsets"][0] + 1, v["data_offsets"][1] + 1]
    h["pad"] = {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}
    variant("odd-offsets", h, b"\x00" + data, "", pad_to=1, loads=True)


def rows_layout(x8, entry):
    """The bytes of an x8 block tensor (docs/QUANTIZE.md) row by row."""
    rows, cols = entry["shape"][0], 1
    for c in entry["shape"][1:]:
        cols *= c
    nb, payload = cols // 32, 16 if entry["type"].startswith("q4_0") else 32
    scales, words = x8[:rows * nb * 2], x8[rows * nb * 2:]
    out = bytearray()
    for r in range(rows):
        g, j = divmod(r, 8)
        for blk in range(nb):
            gb = g * nb + blk
            out += scales[(gb * 8 + j) * 2:(gb * 8 + j) * 2 + 2]
            base = gb * 8 * payload
            for k in range(payload // 4):
                at = base + (k * 8 + j) * 4
                out += words[at:at + 4]
    return bytes(out)


def report_load(model, wt, audio):
    """Load time and peak memory from hviske-bench (reported only)."""
    bench = os.path.join(BINARY, "hviske-bench")
    p = subprocess.run([bench, "-m", model, "-t", "1", "--runs", "1", "--warmup", "0", "--json",
                        "--max-tokens", "4", "--chunking", "none", audio], capture_output=True,
                       text=True, timeout=600)
    try:
        o = json.loads(p.stdout)
        print(f"# {os.path.basename(model)} ({wt}): loaded in {o['load_ms']:.1f} ms, "
              f"weights {o['weight_mb']:.1f} MB, peak resident {o['peak_rss_mb']:.1f} MB")
    except (ValueError, KeyError):
        print(f"# {os.path.basename(model)} ({wt}): {p.stdout.strip()[:300]} {p.stderr[-300:]}")


def main():
    if not os.access(QUANTIZE, os.X_OK):
        report("hviske-quantize built", False, QUANTIZE)
        return finish()
    with open(os.path.join(FIXTURES, "manifest.json")) as f:
        man = json.load(f)
    audio = [os.path.join(FIXTURES, a["path"]) for a in man["audio"]][:4]
    with tempfile.TemporaryDirectory(prefix="hv-quantize-") as tmp:
        round_trip(tmp, "demo", DEMO_MODEL, audio, ("q4_0", "q8_0", "bf16"))
        for m in man["models"]:
            round_trip(tmp, m["name"], os.path.join(FIXTURES, m["path"]), audio[:2],
                       ("q4_0", "q8_0"))
        sharded_input(tmp, audio)
        tool_errors(tmp)
        hostile(tmp, os.path.join(tmp, "demo-q4_0"), audio)
        for wt in ("q4_0",):
            report_load(os.path.join(tmp, "demo-" + wt), wt + " pre-quantized", audio[0])
        report_load(DEMO_MODEL, "bf16", audio[0])
    return finish()


if __name__ == "__main__":
    sys.exit(main())
