#!/usr/bin/python3
"""Writes a trained model in the published checkpoint layout
(docs/CONVENTIONS.md): config.json, generation_config.json,
tokenizer.model, model.safetensors (+ README.md model card).

Tensors of two or more dimensions are stored as BF16 (round to nearest
even), one-dimensional ones (norms, biases, BatchNorm running statistics)
as F32.  The frontend window and filterbank (already bf16 values) are
stored as BF16.  Safetensors is written with struct + json.

  export.py --ckpt build-demo/run/best.pt --out models/demo
"""

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frontend  # noqa: E402


def bf16_bits(a):
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype("<u2")


def storage_dtype(name, t):
    return "BF16" if t.dim() >= 2 else "F32"


def rounded_state(model):
    """The exported tensors as float32 torch tensors with the values the
    file holds (BF16 ones rounded)."""
    out = {}
    for k, v in model.export_state().items():
        v = v.detach().to(torch.float32).cpu()
        if storage_dtype(k, v) == "BF16":
            b = bf16_bits(v.numpy()).astype(np.uint32) << 16
            v = torch.from_numpy(b.view(np.float32).reshape(v.shape).copy())
        out[k] = v
    return out


def write_safetensors(path, tensors):
    """tensors: {name: (dtype 'BF16'|'F32', numpy array)}"""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dt, arr = tensors[name]
        if dt == "BF16":
            raw = bf16_bits(arr).tobytes()
        elif dt == "F32":
            raw = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        else:
            raise ValueError(dt)
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def hf_config(c):
    V = c["vocab_size"]
    return {
        "model_type": "cohere_asr",
        "vocab_size": V,
        "max_audio_clip_s": 35,
        "overlap_chunk_second": 5,
        "min_energy_window_samples": 1600,
        "sample_rate": 16000,
        "supported_languages": ["da"],
        "preprocessor": {"sample_rate": 16000, "features": 128, "n_fft": 512, "window_size": 0.025,
                         "window_stride": 0.01, "window": "hann", "normalize": "per_feature", "log": True,
                         "pad_to": 16, "dither": 1e-05},
        "encoder": {"feat_in": c["feat_in"], "d_model": c["d_model"], "ff_expansion_factor": c["ff_exp"],
                    "n_layers": c["enc_layers"], "n_heads": c["enc_heads"], "conv_kernel_size": c["conv_kernel"],
                    "subsampling": "dw_striding", "subsampling_conv_channels": c["sub_channels"],
                    "subsampling_factor": c["sub_factor"], "self_attention_model": "rel_pos",
                    "pos_emb_max_len": 5000},
        "transf_decoder": {"config_dict": {"hidden_size": c["dec_hidden"], "inner_size": c["dec_inner"],
                                           "num_layers": c["dec_layers"], "num_attention_heads": c["dec_heads"],
                                           "max_sequence_length": c["max_seq"], "hidden_act": "relu"}},
        "head": {"hidden_size": c["dec_hidden"], "num_classes": V, "log_softmax": True},
    }


def gen_config(sp):
    return {"pad_token_id": sp.pad_id(), "eos_token_id": sp.piece_to_id("<|endoftext|>"),
            "bos_token_id": sp.piece_to_id("<|startoftranscript|>"),
            "decoder_start_token_id": sp.piece_to_id("\u2581"), "max_new_tokens": 256}


# generation_config.json of a diarize model: windows of up to 30 s take up
# to ~450 tokens (the decoder's 512 positions less the prompt), decoded
# greedily with the repetition penalty of the published diarize models
# (a model decoded best with another says so: --repetition-penalty)
DIARIZE_GENERATION = {"max_new_tokens": 502, "repetition_penalty": 1.2}
# config.json of a diarize model: its time tokens end at 29.9 s, so clips
# are at most 30 s (the published diarize models' limit too; a model
# trained on shorter windows says so, make_diarize_data --clip-s)
DIARIZE_CONFIG = {"max_audio_clip_s": 30}


def write_dir(model, tokenizer_path, out_dir, card=None, generation=None, config=None):
    """Atomic: everything is written to a temporary sibling directory that
    then replaces out_dir.  generation, config: entries that replace or
    extend generation_config.json's and config.json's."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=tokenizer_path)
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".demo-export-", dir=parent)
    tensors = {}
    for k, v in model.export_state().items():
        v = v.detach().to(torch.float32).cpu()
        tensors[k] = (storage_dtype(k, v), v.numpy())
    tensors["preprocessor.featurizer.window"] = ("BF16", frontend.window_bf16())
    tensors["preprocessor.featurizer.fb"] = ("BF16", frontend.fb_bf16().reshape(1, 128, 257))
    write_safetensors(os.path.join(tmp, "model.safetensors"), tensors)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(dict(hf_config(model.c), **(config or {})), f, indent=2)
        f.write("\n")
    with open(os.path.join(tmp, "generation_config.json"), "w") as f:
        json.dump(dict(gen_config(sp), **(generation or {})), f, indent=2)
        f.write("\n")
    shutil.copyfile(tokenizer_path, os.path.join(tmp, "tokenizer.model"))
    if card:
        with open(os.path.join(tmp, "README.md"), "w", encoding="utf-8") as f:
            f.write(card)
    os.chmod(tmp, 0o755)
    old = None
    if os.path.exists(out_dir):
        old = tempfile.mkdtemp(prefix=".demo-old-", dir=parent)
        os.rmdir(old)
        os.rename(out_dir, old)
    os.rename(tmp, out_dir)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def main():
    import model as M
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", default="build-demo/data/tokenizer.model")
    ap.add_argument("--out", default="models/demo")
    ap.add_argument("--diarize", action="store_true",
                    help="config.json and generation_config.json of a diarize model")
    ap.add_argument("--clip-s", type=float, default=DIARIZE_CONFIG["max_audio_clip_s"],
                    help="with --diarize: max_audio_clip_s, the windows it was trained on (make_diarize_data "
                         "--clip-s)")
    ap.add_argument("--repetition-penalty", type=float, default=DIARIZE_GENERATION["repetition_penalty"],
                    help="with --diarize: generation_config.json's repetition_penalty, the one the model "
                         "decodes best with (transformers' generate applies it)")
    a = ap.parse_args()
    ck = torch.load(a.ckpt, map_location="cpu")
    m = M.HviskeModel(ck["config"])
    m.load_state_dict(ck["model"])
    m.eval()
    card = ck.get("card")
    if a.diarize:
        write_dir(m, a.tokenizer, a.out, card, dict(DIARIZE_GENERATION, repetition_penalty=a.repetition_penalty),
                  dict(DIARIZE_CONFIG, max_audio_clip_s=a.clip_s))
    else:
        write_dir(m, a.tokenizer, a.out, card)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
