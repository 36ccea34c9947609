#!/usr/bin/env python3
"""Writes a random-weight model with the real sizes of docs/MODEL.md (Cohere
Transcribe / Hviske: d_model 1280 x 48 layers, decoder 1024 x 8 layers,
16384-piece vocabulary; about 2 B parameters, bf16 on disk, about 4 GB) for
benchmarks only. Never commit its output.

    make_full_model.py --out DIR [--dtype bf16|f32] [--enc-layers N]

The weights are random (scaled so activations stay finite) and EOS and the
other special pieces are suppressed, so a run generates exactly --max-tokens
tokens, all of them words (so word times have words to time). Tensors are
streamed to disk one at a time, so memory stays small.
"""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import make_fixtures as mf  # noqa: E402  (filterbank, window, positions, bf16)

SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|pnc|>", "<|nopnc|>", "<|startofcontext|>",
            "<|emo:undefined|>", "<|itn|>", "<|noitn|>", "<|timestamp|>", "<|notimestamp|>",
            "<|diarize|>", "<|nodiarize|>", "<|en|>", "<|da|>"]


def tokenizer(out_dir, vocab):
    """A word-level SentencePiece model with exactly `vocab` pieces."""
    rnd = random.Random(7)
    syl = [a + b for a in "bdfghjklmnprstv" for b in "aeiouy"]
    words = set()
    while len(words) < vocab * 5 // 4:
        words.add("".join(rnd.choice(syl) for _ in range(rnd.randint(2, 4))))
    words = sorted(words)
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "corpus.txt"), "w") as f:
            for i in range(0, len(words), 10):
                f.write(" ".join(words[i:i + 10]) + "\n")
        subprocess.run(["spm_train", "--input=corpus.txt", "--model_prefix=tok",
                        "--vocab_size=%d" % vocab, "--model_type=word", "--minloglevel=2",
                        "--unk_id=0", "--bos_id=1", "--eos_id=-1", "--pad_id=2",
                        "--user_defined_symbols=" + ",".join(SPECIALS)],
                       cwd=work, check=True)
        os.replace(os.path.join(work, "tok.model"), os.path.join(out_dir, "tokenizer.model"))
    return {p: 3 + i for i, p in enumerate(SPECIALS)}  # user-defined pieces follow 0..2


def tensor_list(c):
    """(name, shape, kind) for every tensor; kind picks the initialisation."""
    d, ff, H, K = c["d"], 4 * c["d"], c["heads"], 9
    C, h, inner, V = 256, c["h"], 4 * c["h"], c["V"]
    f = 128
    for _ in range(3):
        f = (f + 2 - 3) // 2 + 1
    t = [("preprocessor.featurizer.window", [400], "window"),
         ("preprocessor.featurizer.fb", [1, 128, 257], "fb"),
         ("encoder.pre_encode.conv.0.weight", [C, 1, 3, 3], "conv"),
         ("encoder.pre_encode.conv.0.bias", [C], "zero")]
    for i in (2, 5):
        t += [("encoder.pre_encode.conv.%d.weight" % i, [C, 1, 3, 3], "conv"),
              ("encoder.pre_encode.conv.%d.bias" % i, [C], "zero"),
              ("encoder.pre_encode.conv.%d.weight" % (i + 1), [C, C, 1, 1], "conv"),
              ("encoder.pre_encode.conv.%d.bias" % (i + 1), [C], "zero")]
    t += [("encoder.pre_encode.out.weight", [d, C * f], "lin"), ("encoder.pre_encode.out.bias", [d], "zero")]
    for L in range(c["enc_layers"]):
        p = "encoder.layers.%d." % L
        for n in ("norm_feed_forward1", "norm_self_att", "norm_conv", "norm_feed_forward2", "norm_out"):
            t += [(p + n + ".weight", [d], "one"), (p + n + ".bias", [d], "zero")]
        for ffn in ("feed_forward1", "feed_forward2"):
            t += [(p + ffn + ".linear1.weight", [ff, d], "lin"), (p + ffn + ".linear1.bias", [ff], "zero"),
                  (p + ffn + ".linear2.weight", [d, ff], "lin"), (p + ffn + ".linear2.bias", [d], "zero")]
        for n in ("linear_q", "linear_k", "linear_v", "linear_out"):
            t += [(p + "self_attn." + n + ".weight", [d, d], "lin"), (p + "self_attn." + n + ".bias", [d], "zero")]
        t += [(p + "self_attn.linear_pos.weight", [d, d], "lin"),
              (p + "self_attn.pos_bias_u", [H, d // H], "small"), (p + "self_attn.pos_bias_v", [H, d // H], "small"),
              (p + "conv.pointwise_conv1.weight", [2 * d, d, 1], "lin"), (p + "conv.pointwise_conv1.bias", [2 * d], "zero"),
              (p + "conv.depthwise_conv.weight", [d, 1, K], "conv"), (p + "conv.depthwise_conv.bias", [d], "zero"),
              (p + "conv.batch_norm.weight", [d], "one"), (p + "conv.batch_norm.bias", [d], "zero"),
              (p + "conv.batch_norm.running_mean", [d], "zero"), (p + "conv.batch_norm.running_var", [d], "one"),
              (p + "conv.pointwise_conv2.weight", [d, d, 1], "lin"), (p + "conv.pointwise_conv2.bias", [d], "zero")]
    t += [("encoder_decoder_proj.weight", [h, d], "lin"), ("encoder_decoder_proj.bias", [h], "zero"),
          ("transf_decoder._embedding.token_embedding.weight", [V, h], "emb"),
          ("transf_decoder._embedding.position_embedding.pos_enc", [1024, h], "pos"),
          ("transf_decoder._embedding.layer_norm.weight", [h], "one"),
          ("transf_decoder._embedding.layer_norm.bias", [h], "zero")]
    for L in range(8):
        p = "transf_decoder._decoder.layers.%d." % L
        for n in ("layer_norm_1", "layer_norm_2", "layer_norm_3"):
            t += [(p + n + ".weight", [h], "one"), (p + n + ".bias", [h], "zero")]
        for s in ("first_sub_layer.", "second_sub_layer."):
            for n in ("query_net", "key_net", "value_net", "out_projection"):
                t += [(p + s + n + ".weight", [h, h], "lin"), (p + s + n + ".bias", [h], "zero")]
        t += [(p + "third_sub_layer.dense_in.weight", [inner, h], "lin"),
              (p + "third_sub_layer.dense_in.bias", [inner], "zero"),
              (p + "third_sub_layer.dense_out.weight", [h, inner], "lin"),
              (p + "third_sub_layer.dense_out.bias", [h], "zero")]
    t += [("transf_decoder._decoder.final_layer_norm.weight", [h], "one"),
          ("transf_decoder._decoder.final_layer_norm.bias", [h], "zero"),
          ("log_softmax.mlp.layer0.bias", [V], "cls_bias")]
    return t


def make(kind, shape, rng, n_special):
    n = int(np.prod(shape))
    if kind == "zero":
        return np.zeros(shape, np.float32)
    if kind == "one":
        return np.ones(shape, np.float32)
    if kind == "window":
        return mf.hann_symmetric(shape[0]).astype(np.float32)
    if kind == "fb":
        return mf.mel_filterbank(16000, 512, 128).astype(np.float32).reshape(shape)
    if kind == "pos":
        return mf.decoder_pos_enc(shape[0], shape[1])
    if kind == "cls_bias":
        b = np.zeros(shape, np.float32)
        # never stop (a run makes exactly max_new_tokens tokens), and only
        # words: <unk>, <s>, <pad> and the special pieces come first
        b[:n_special] = -100.0
        return b
    fan_in = n // shape[0]
    std = {"lin": 1.0 / math.sqrt(fan_in), "conv": math.sqrt(2.0 / fan_in), "small": 0.02, "emb": 1.0}[kind]
    return (rng.standard_normal(n, dtype=np.float32) * std).reshape(shape)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--enc-layers", type=int, default=48)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    c = dict(d=1280, heads=8, h=1024, V=16384, enc_layers=a.enc_layers)
    ids = tokenizer(a.out, c["V"])
    eos = ids["<|endoftext|>"]
    cfg = {"model_type": "cohere_asr", "vocab_size": c["V"], "max_audio_clip_s": 35,
           "overlap_chunk_second": 5, "min_energy_window_samples": 1600, "sample_rate": 16000,
           "supported_languages": ["en", "da"],
           "preprocessor": dict(mf.COMMON_PRE, features=128),
           "encoder": {"feat_in": 128, "d_model": c["d"], "ff_expansion_factor": 4,
                       "n_layers": c["enc_layers"], "n_heads": 8, "conv_kernel_size": 9,
                       "subsampling": "dw_striding", "subsampling_conv_channels": 256,
                       "subsampling_factor": 8, "self_attention_model": "rel_pos", "pos_emb_max_len": 5000},
           "transf_decoder": {"config_dict": {"hidden_size": c["h"], "inner_size": 4 * c["h"],
                                              "num_layers": 8, "num_attention_heads": 8,
                                              "max_sequence_length": 1024, "hidden_act": "relu"}},
           "head": {"hidden_size": c["h"], "num_classes": c["V"], "log_softmax": True}}
    gen = {"pad_token_id": 2, "eos_token_id": eos, "bos_token_id": 1,
           "decoder_start_token_id": ids["<|startoftranscript|>"], "max_new_tokens": 256}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)

    tensors = sorted(tensor_list(c))
    esize = 2 if a.dtype == "bf16" else 4
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in tensors:
        nb = int(np.prod(shape)) * esize
        header[name] = {"dtype": a.dtype.upper(), "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((-len(hj)) % 8)
    rng = np.random.default_rng(1)
    path = os.path.join(a.out, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for name, shape, kind in tensors:
            x = make(kind, shape, rng, 3 + len(SPECIALS))
            f.write(mf.bf16_bits(x).tobytes() if a.dtype == "bf16" else x.astype("<f4").tobytes())
    os.replace(path + ".tmp", path)
    n_params = sum(int(np.prod(s)) for _, s, _ in tensors)
    print("wrote %s: %.2f B parameters, %.2f GB" % (a.out, n_params / 1e9, off / 1e9))


if __name__ == "__main__":
    main()
