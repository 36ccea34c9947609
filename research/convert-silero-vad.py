#!/usr/bin/python3
"""Converts Silero VAD v5 (ONNX) into the detector files hviske loads:
model.safetensors (the 16 kHz branch's weights, float32) and config.json.

    /usr/bin/python3 research/convert-silero-vad.py [--onnx FILE] [--out DIR]

The default input is the copy in the npm package @ricky0123/vad-web that
research/vad-oracle/ pins (`npm ci --ignore-scripts` there, or
scripts/install-deps.sh); the default output is models/silero-vad/.
Needs Debian's python3-onnx (and numpy). The output is deterministic: the
same ONNX file always gives byte-identical files (tests/parity/test_vad.py checks
the committed ones against a fresh conversion).

The ONNX graph holds both sample rates: If(sr == 16000) selects a branch
whose weights are Constant nodes inside it. This script takes the 16 kHz
branch, checks that its structure is the one docs/VAD.md describes (and
that src/audio/vad.c computes), reads the sizes the C side needs from the
graph itself, and writes the weights under their PyTorch names. Anything
unexpected is an error: a different model must not convert silently."""
import argparse
import hashlib
import json
import os
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ONNX = os.path.join(HERE, "vad-oracle", "node_modules", "@ricky0123",
                            "vad-web", "dist", "silero_vad_v5.onnx")
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "models", "silero-vad")

# What the graph leaves to its caller (Silero's OnnxWrapper, vad-web): at
# 16 kHz it is fed 512 new samples after the last 64 samples of the previous
# input (zeros before the first window).
WINDOW = 512
CONTEXT = 64
FORMAT = "hviske-silero-vad"
FORMAT_VERSION = 1

ENCODER = ["encoder.%d.reparam_conv" % i for i in range(4)]
TENSORS = (["stft.forward_basis_buffer"]
           + [p + s for p in ENCODER for s in (".weight", ".bias")]
           + ["decoder.rnn.weight_ih", "decoder.rnn.weight_hh",
              "decoder.rnn.bias_ih", "decoder.rnn.bias_hh",
              "decoder.decoder.2.weight", "decoder.decoder.2.bias"])


def fail(msg):
    sys.exit("convert-silero-vad: " + msg)


def attr(node, name):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return None


def branch_16k(graph):
    """The subgraph the top-level If runs when sr == 16000."""
    consts = {n.output[0]: n for n in graph.node if n.op_type == "Constant"}
    for n in graph.node:
        if n.op_type != "If":
            continue
        eq = next((m for m in graph.node if m.output[0] == n.input[0]), None)
        if eq is None or eq.op_type != "Equal" or "sr" not in eq.input:
            continue
        other = [i for i in eq.input if i != "sr"][0]
        if other not in consts:
            continue
        if int(numpy_helper.to_array(attr(consts[other], "value"))) != 16000:
            fail("the sample-rate test is not sr == 16000")
        return attr(n, "then_branch")
    fail("no If(sr == 16000) node at the top of the graph")


def nested_nodes(graph):
    """Every node of graph and of the subgraphs of its If nodes."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from nested_nodes(a.g)


def short(name):
    """Constant names carry the inliner's prefix: keep the PyTorch name."""
    return name.split("__")[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnx", default=DEFAULT_ONNX)
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    if not os.path.exists(args.onnx):
        fail(f"{args.onnx}: missing (run `npm ci --ignore-scripts` in "
             "research/vad-oracle, or scripts/install-deps.sh)")
    raw = open(args.onnx, "rb").read()
    g = branch_16k(onnx.load_from_string(raw).graph)

    weights, ints = {}, {}
    for n in g.node:
        if n.op_type != "Constant":
            continue
        a = numpy_helper.to_array(attr(n, "value"))
        if short(n.output[0]) in TENSORS:
            weights[short(n.output[0])] = a
        elif a.dtype == np.int64:
            ints[short(n.output[0])] = a
    missing = [t for t in TENSORS if t not in weights]
    if missing:
        fail("16 kHz branch lacks " + ", ".join(missing))
    ops = {}
    for n in g.node:
        ops.setdefault(n.op_type, []).append(n)

    # front end: right reflection padding, STFT as a strided conv1d
    pad = ops["Pad"][0]
    if attr(pad, "mode") != b"reflect" or pad.input[0] != "input":
        fail("expected reflection padding of the input")
    pads = ints.get("/stft/padding/Constant_1_output_0")
    if pads is None or list(pads)[0] != 0:
        fail("expected padding on the right only")
    right_pad = int(pads[1])
    convs = ops["Conv"]
    stft = convs[0]
    if short(stft.input[1]) != "stft.forward_basis_buffer" or len(stft.input) != 2:
        fail("first Conv is not the STFT basis")
    n_fft = int(attr(stft, "kernel_shape")[0])
    hop = int(attr(stft, "strides")[0])
    if list(attr(stft, "pads")) != [0, 0]:
        fail("STFT conv must not pad")
    basis = weights["stft.forward_basis_buffer"]
    n_freq = n_fft // 2 + 1
    if basis.shape != (2 * n_freq, 1, n_fft):
        fail(f"STFT basis shape {basis.shape}")
    if len(ops["Sqrt"]) != 1 or len(ops["Pow"]) != 2:
        fail("expected magnitude = sqrt(re^2 + im^2)")

    # encoder: conv1d (kernel 3, padding 1) + ReLU, four times
    strides, channels = [], []
    for i, c in enumerate(convs[1:5]):
        if short(c.input[1]) != ENCODER[i] + ".weight":
            fail(f"encoder conv {i} uses {c.input[1]}")
        k = int(attr(c, "kernel_shape")[0])
        if k != 3 or list(attr(c, "pads")) != [1, 1] or attr(c, "group") != 1:
            fail(f"encoder conv {i}: kernel {k}, pads {attr(c, 'pads')}")
        strides.append(int(attr(c, "strides")[0]))
        channels.append(int(weights[ENCODER[i] + ".weight"].shape[0]))
    if len(ops["Relu"]) != 5:
        fail("expected four encoder ReLUs and one in the decoder")

    # decoder: LSTM cell, ReLU, 1x1 conv, sigmoid, mean over time
    # (two LSTM nodes in nested If branches: with the given state, and with
    # zeros when the state's batch is empty; same weights)
    lstms = [n for n in nested_nodes(g) if n.op_type == "LSTM"]
    if not lstms:
        fail("no LSTM in the 16 kHz branch")
    hidden = int(attr(lstms[0], "hidden_size"))
    for n in lstms:
        if attr(n, "hidden_size") != hidden or attr(n, "activations") not in (
                None, [b"Sigmoid", b"Tanh", b"Tanh"]):
            fail("LSTM is not a plain LSTM cell of one hidden size")
    dec = convs[5]
    if short(dec.input[1]) != "decoder.decoder.2.weight" or \
            attr(dec, "kernel_shape") != [1]:
        fail("decoder conv is not the 1x1 output conv")
    if len(ops.get("Sigmoid", [])) != 1 or len(ops.get("ReduceMean", [])) != 1:
        fail("expected one Sigmoid and one ReduceMean")

    config = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": "silero_vad_v5",
        "sample_rate": 16000,
        "window_samples": WINDOW,
        "context_samples": CONTEXT,
        "reflect_pad": right_pad,
        "n_fft": n_fft,
        "hop_length": hop,
        "encoder_channels": channels,
        "encoder_strides": strides,
        "encoder_kernel": 3,
        "hidden_size": hidden,
        "source": {
            "npm_package": "@ricky0123/vad-web",
            "file": "dist/" + os.path.basename(args.onnx),
            "sha256": hashlib.sha256(raw).hexdigest(),
        },
    }
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"),
                      {t: weights[t] for t in TENSORS})
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}/model.safetensors ({len(TENSORS)} tensors) "
          f"and config.json")


def write_safetensors(path, tensors):
    """safetensors by hand: u64 header length, JSON header (tensors in name
    order, padded with spaces to 8 bytes), then the little-endian data."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        blob = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    main()
