#!/usr/bin/env python3
"""Checkpoints with extended vocabularies (issue #63, item 1).

A copy of the fixture model tiny-f32 (tests/reference/make_fixtures.py's
published layout) whose vocabulary is extended as Hugging Face's
tokenizer.add_tokens and resize_token_embeddings extend it: 8 speaker
tokens <|spltoken0|>..<|spltoken7|> and 4 timestamp tokens <|t:0.0|>..
<|t:0.3|> in tokenizer_config.json's added_tokens_decoder (tokenizer.model
unchanged), config.json's vocab_size and head.num_classes and the token
embedding's rows and the classifier bias grown by 12. Checked:
  * with the new tokens' bias at -1e4 (never chosen) the transcript, its
    tokens and log-probs are exactly the unextended model's;
  * with <|spltoken0|>'s bias raised, the model emits its id (the first
    added one) and the text leaves it out, as every special token;
  * each mismatch is refused with a message naming what differs: the
    tokenizer without the added tokens, config.json not grown, the weights
    not grown, a gap in the added ids, an added token whose id is a
    tokenizer.model piece of another text, a stale head.num_classes.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import FIXTURES, Run, finish_in, report  # noqa: E402

ADDED = ["<|spltoken%d|>" % i for i in range(8)] + ["<|t:0.%d|>" % i for i in range(4)]
EMB = "transf_decoder._embedding.token_embedding.weight"
BIAS = "log_softmax.mlp.layer0.bias"


def read_st(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", None)
    data = {k: bytearray(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in head.items()}
    return head, data, meta


def write_st(path, head, data, meta):
    out, off, h = [], 0, {}
    for k in sorted(head):
        v = dict(head[k])
        v["data_offsets"] = [off, off + len(data[k])]
        off += len(data[k])
        h[k] = v
        out.append(bytes(data[k]))
    if meta is not None:
        h["__metadata__"] = meta
    hj = json.dumps(h, separators=(",", ":")).encode()
    hj += b" " * ((-len(hj)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(out))


def extended(src, dst, bias=-1e4, first_bias=None, grow_config=True, grow_weights=True,
             added=True, gap=False, clash=False, stale_classes=False):
    """A copy of src with the vocabulary extended (and what the case breaks)."""
    shutil.copytree(src, dst)
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    V = cfg["vocab_size"]
    n = len(ADDED)
    if grow_config:
        cfg["vocab_size"] = V + n
        if not stale_classes:
            cfg["head"]["num_classes"] = V + n
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if added:
        dec = {str(V + i + (1 if gap and i >= 4 else 0)): {"content": t, "special": True}
               for i, t in enumerate(ADDED)}
        dec["0"] = {"content": "<|not-piece-0|>" if clash else None, "special": True}
        if not clash:
            del dec["0"]
        with open(os.path.join(dst, "tokenizer_config.json"), "w") as f:
            json.dump({"added_tokens_decoder": dec}, f)
    if grow_weights:
        path = os.path.join(dst, "model.safetensors")
        head, data, meta = read_st(path)
        h = head[EMB]["shape"][1]
        rows = b"".join(struct.pack("<%df" % h, *[0.01 * ((i * 7 + j) % 5 - 2)
                                                for j in range(h)]) for i in range(n))
        data[EMB] += rows
        head[EMB]["shape"][0] += n
        data[BIAS] += struct.pack("<%df" % n, *([first_bias if first_bias is not None else bias]
                                                + [bias] * (n - 1)))
        head[BIAS]["shape"][0] += n
        write_st(path, head, data, meta)
    return dst, V


def transcribe(model, wav):
    r = Run(["-m", model, "-q", "--format", "json", wav])
    try:
        return r, json.loads(r.out)
    except ValueError:
        return r, None


def fixture_model():
    """tiny-f32 and the example audio, or None (reported) without them."""
    src = os.path.join(FIXTURES, "models", "tiny-f32")
    if not FIXTURES or not os.path.isdir(src):
        report("fixtures", False, f"HV_FIXTURES={FIXTURES!r} has no models/tiny-f32")
        return None, None
    return src, os.path.join(FIXTURES, "audio", "da1_16k.wav")


def main():
    tmp = tempfile.mkdtemp(prefix="hv-extvocab-")
    src, wav = fixture_model()
    if not src:
        return finish_in(tmp)
    r0, base = transcribe(src, wav)
    model, V = extended(src, os.path.join(tmp, "ext"))
    r1, ext = transcribe(model, wav)
    same = base and ext and all(base[k] == ext[k] for k in ("text", "tokens", "token_logprobs"))
    report(f"{len(ADDED)} added tokens, never chosen: the same text, tokens and log-probs",
           r0.rc == 0 and r1.rc == 0 and same, f"{r0} {r1}")

    model, V = extended(src, os.path.join(tmp, "emit"), first_bias=50.0)
    r, res = transcribe(model, wav)
    report("<|spltoken0|> made likely: its id emitted, left out of the text",
           r.rc == 0 and res and V in res["tokens"] and "spltoken" not in res["text"], str(r))

    bad = [
        ("no added tokens in tokenizer_config.json", dict(added=False),
         [f"{V} pieces", f"vocab_size is {V + len(ADDED)}"]),
        ("config.json vocab_size not grown", dict(grow_config=False),
         [f"{V} pieces and {len(ADDED)} tokens added", f"vocab_size is {V}"]),
        ("the weights not grown", dict(grow_weights=False), [EMB, f"{V} rows"]),
        ("a gap in the added ids", dict(gap=True), ["without a gap", f"no token {V + 4}"]),
        ("an added token's id is another piece", dict(clash=True),
         ["added token 0", "<|not-piece-0|>"]),
        ("a stale head.num_classes", dict(stale_classes=True), ["num_classes", str(V)]),
    ]
    for i, (name, kw, words) in enumerate(bad):
        model, _ = extended(src, os.path.join(tmp, "bad%d" % i), **kw)
        r = Run(["-m", model, "-q", wav])
        report(f"refused: {name}, saying so", r.rc not in (0, None) and not r.crashed()
               and not r.out and all(w in r.err for w in words), str(r))
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
