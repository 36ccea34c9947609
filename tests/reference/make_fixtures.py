#!/usr/bin/env python3
"""Writes the test fixtures: small random-weight Hviske models in the
published checkpoint layout (docs/CONVENTIONS.md) and Danish test audio.

    make_fixtures.py --out DIR

Deterministic (fixed seeds, fixed tool flags) and idempotent: when
DIR/manifest.json carries this script's version stamp (a hash of its own
source) it exits at once. The manifest is written last, so an interrupted
run is redone.

DIR/models/NAME/{config.json, generation_config.json, tokenizer.model,
model.safetensors | model-0000K-of-00002.safetensors +
model.safetensors.index.json}; DIR/audio/*.wav|flac; DIR/manifest.json
(paths in it are relative to DIR).

Models (random weights; the same seed gives the f32 and bf16 variants):
  tiny-f32       64 mels, d_model 32, 1 encoder layer, 2 heads, subsampling
                 channels 8, conv kernel 5, decoder hidden 32 (no
                 encoder_decoder_proj), 1 decoder layer, inner 64,
                 max_sequence_length 40 and no max_new_tokens (256 capped to
                 30); BPE vocabulary of 400; EOS = the eos *control* piece
                 <|endoftext|> (id 2); no log_softmax.mlp.layer0.weight (tied
                 classifier); no feed-forward / conv-module biases (optional)
  tiny-bf16      the same rounded to bf16, with an explicit classifier weight
  multi-f32      128 mels, d_model 48, 3 layers, 4 heads, channels 16,
                 kernel 9, decoder hidden 40 (encoder_decoder_proj 48->40),
                 2 decoder layers, 4 heads, inner 96, max_sequence_length 128,
                 max_new_tokens 24; unigram vocabulary of 600; EOS = the
                 user-defined piece <|endoftext|> (id 3); explicit classifier;
                 unused I64 batch_norm.num_batches_tracked scalars
  multi-bf16     the same rounded to bf16
  multi-sharded  multi-f32 split in two shards + model.safetensors.index.json
Every model has preprocessor.featurizer.window (symmetric Hann) and .fb
(Slaney), rounded to bf16 values, in the file's dtype. Token ids (pad, bos,
eos, decoder_start = the piece "\u2581") differ between tiny and multi.

Audio (espeak-ng -v da, converted with sox -D -R): da1..da5 at 16 kHz mono
WAV (1.4-3.5 s), and da1 at 22050 Hz, da2 at 44100 Hz stereo (right channel
at half level), da3 at 8000 Hz, da5 as 16 kHz FLAC.

Needs numpy, sentencepiece (python, only to read back piece ids),
spm_train, espeak-ng and sox. No torch. Runs in well under a second.
"""

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.abspath(__file__)


def version_stamp():
    with open(HERE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


# ---------------------------------------------------------------- corpus

DA_SUBJ = ["jeg", "du", "han", "hun", "vi", "de", "min mor", "din far", "læreren", "børnene",
           "naboen", "min søster", "vores hund", "den gamle mand", "pigen", "drengen"]
DA_VERB = ["spiser", "drikker", "ser", "køber", "laver", "finder", "læser", "skriver", "maler",
           "henter", "elsker", "hører", "glemmer", "sælger", "vasker", "bygger"]
DA_OBJ = ["et æble", "en kop kaffe", "et glas vand", "en bog", "avisen", "maden", "et brev",
          "huset", "bilen", "en cykel", "brødet", "fisken", "en sang", "døren", "tøjet", "en øl"]
DA_PLACE = ["i København", "i Aarhus", "på skolen", "i haven", "ved stranden", "i køkkenet",
            "på arbejdet", "i byen", "på landet", "i skoven", "ved søen", "i Odense"]
DA_TIME = ["i dag", "i går", "i morgen", "om aftenen", "om morgenen", "hver dag", "nu",
           "om vinteren", "om sommeren", "klokken otte", "på søndag", "bagefter"]
DA_Q = ["hvordan har du det", "hvad hedder du", "hvor bor du", "hvornår kommer toget",
        "hvad koster det", "hvem er det", "hvorfor regner det", "kan du hjælpe mig"]
DA_MISC = ["det regner meget i Danmark", "solen skinner over havet", "tak for mad",
           "vi ses snart", "god weekend", "det er koldt udenfor", "rødgrød med fløde",
           "æbleskiver og gløgg", "færgen sejler til Ærø", "øen ligger i Østersøen",
           "der er 24 timer i et døgn", "prisen er 99 kroner", "år 2024 var varmt"]

EN_SUBJ = ["I", "you", "he", "she", "we", "they", "my mother", "your father", "the teacher",
           "the children", "the neighbour", "my sister", "our dog", "the old man", "the girl"]
EN_VERB = ["eats", "drinks", "sees", "buys", "makes", "finds", "reads", "writes", "paints",
           "fetches", "loves", "hears", "forgets", "sells", "washes", "builds"]
EN_OBJ = ["an apple", "a cup of coffee", "a glass of water", "a book", "the paper", "the food",
          "a letter", "the house", "the car", "a bicycle", "the bread", "the fish", "a song"]
EN_PLACE = ["in London", "at school", "in the garden", "on the beach", "in the kitchen",
            "at work", "in town", "in the country", "in the forest", "by the lake"]
EN_TIME = ["today", "yesterday", "tomorrow", "in the evening", "in the morning", "every day",
           "now", "in winter", "in summer", "at eight o'clock", "on Sunday", "afterwards"]
EN_Q = ["how are you", "what is your name", "where do you live", "when does the train leave",
        "how much is it", "who is that", "why is it raining", "can you help me"]


def make_corpus(seed, n_da=320, n_en=180):
    r = random.Random(seed)
    out = []

    def sent(subj, verb, obj, place, time_, q, misc):
        k = r.random()
        if k < 0.55:
            parts = [r.choice(subj), r.choice(verb), r.choice(obj)]
            if r.random() < 0.6:
                parts.append(r.choice(place))
            if r.random() < 0.5:
                parts.append(r.choice(time_))
            s = " ".join(parts)
            end = r.choice([".", ".", "!", "."])
        elif k < 0.75:
            s = r.choice(q)
            end = "?"
        else:
            s = r.choice(misc) if misc else r.choice(q)
            end = r.choice([".", "!"])
        if r.random() < 0.15:
            s = s + ", " + r.choice(place)
        return s[0].upper() + s[1:] + end

    en_misc = ["it rains a lot in England", "the sun shines over the sea", "thank you for the food",
               "see you soon", "have a nice weekend", "it is cold outside", "there are 24 hours in a day",
               "the price is 99 pounds"]
    for _ in range(n_da):
        out.append(sent(DA_SUBJ, DA_VERB, DA_OBJ, DA_PLACE, DA_TIME, DA_Q, DA_MISC))
    for _ in range(n_en):
        out.append(sent(EN_SUBJ, EN_VERB, EN_OBJ, EN_PLACE, EN_TIME, EN_Q, en_misc))
    r.shuffle(out)
    return out


# ---------------------------------------------------------------- model specs

COMMON_PRE = {"sample_rate": 16000, "n_fft": 512, "window_size": 0.025, "window_stride": 0.01,
              "window": "hann", "normalize": "per_feature", "log": True, "pad_to": 16, "dither": 1e-05}

# Decoder tuning knobs (random weights must still decode non-trivially):
#   emb_std       norm of every token-embedding row (= tied classifier row):
#                 the logit scale; top-1/top-2 gaps grow with it, so float
#                 noise cannot flip the argmax, while log-prob errors grow too
#   emb_ln        (mean, std) of the embedding LayerNorm weight; mean 0 so
#                 the tied classifier does not simply repeat the last token
#   eos_bias      classifier bias of EOS: some cases stop early, most run long
#   dec_out_gain  gain of the sub-layer output projections (token, position
#                 and audio dependent parts dominate the constant ones)
#   qk_gain       gain of query/key projections (sharper attention)
SPECS = {
    "tiny": dict(
        seed=1001, n_mels=64, d_model=32, enc_layers=1, enc_heads=2, sub_channels=8, kernel=5,
        dec_hidden=32, dec_layers=1, dec_heads=2, dec_inner=64, max_seq=40,
        languages=["en", "da", "de"],
        # no max_new_tokens: the engine's default 256 is capped to 40 - 10
        max_new_tokens=None,
        enc_biases=False,          # feed-forward and conv-module biases left out (optional)
        spm=dict(model_type="bpe", vocab_size=400, unk_id=0, bos_id=1, eos_id=2, pad_id=3,
                 eos_piece="<|endoftext|>",  # EOS is the eos *control* piece
                 user_defined=["<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>",
                               "<|en|>", "<|da|>", "<|de|>", "<|pnc|>", "<|nopnc|>", "<|noitn|>",
                               "<|itn|>", "<|notimestamp|>", "<|timestamp|>", "<|nodiarize|>",
                               "<|diarize|>"]),
        emb_std=4.0, emb_ln=(0.0, 1.0), cls_bias_std=0.3, eos_bias=8.0, dec_out_gain=2.0, qk_gain=1.5,
    ),
    "multi": dict(
        seed=2002, n_mels=128, d_model=48, enc_layers=3, enc_heads=4, sub_channels=16, kernel=9,
        dec_hidden=40, dec_layers=2, dec_heads=4, dec_inner=96, max_seq=128,
        languages=["en", "da", "de", "sv", "nb"],
        max_new_tokens=24,
        enc_biases=True,
        spm=dict(model_type="unigram", vocab_size=600, unk_id=1, bos_id=6, eos_id=-1, pad_id=0,
                 eos_piece=None,  # EOS is the user-defined piece <|endoftext|>
                 user_defined=["<|nospeech|>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>",
                               "<|nopnc|>", "<|startofcontext|>", "<|emo:undefined|>", "<|itn|>",
                               "<|noitn|>", "<|timestamp|>", "<|notimestamp|>", "<|diarize|>",
                               "<|nodiarize|>", "<|en|>", "<|da|>", "<|de|>", "<|sv|>", "<|nb|>"]),
        emb_std=4.0, emb_ln=(0.0, 1.0), cls_bias_std=0.3, eos_bias=-0.5, dec_out_gain=2.0, qk_gain=1.5,
    ),
}

MODELS = [  # name, spec, dtype, sharded, explicit classifier weight
    ("tiny-f32", "tiny", "f32", False, False),
    ("tiny-bf16", "tiny", "bf16", False, True),
    ("multi-f32", "multi", "f32", False, True),
    ("multi-bf16", "multi", "bf16", False, True),
    ("multi-sharded", "multi", "f32", True, True),
]

PROMPT_SPECIALS = ["<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", "<|pnc|>",
                   "<|nopnc|>", "<|noitn|>", "<|itn|>", "<|notimestamp|>", "<|timestamp|>",
                   "<|nodiarize|>", "<|diarize|>", "<|endoftext|>"]

# ---------------------------------------------------------------- numerics


def round_to_bf16(x):
    """Round-to-nearest-even to bf16; returns float32 values."""
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    bits = a.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32)
    return (bits << 16).view(np.float32)


def bf16_bits(x):
    r = round_to_bf16(x)
    return (r.view(np.uint32) >> 16).astype("<u2")


def hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz, logstep = 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, f / f_sp)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz, logstep = 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def mel_filterbank(sr, n_fft, n_mels):
    """librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=0,
    fmax=sr/2, htk=False, norm='slaney')."""
    n_bins = n_fft // 2 + 1
    fftfreqs = np.linspace(0, sr / 2.0, n_bins)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    w = np.zeros((n_mels, n_bins))
    for i in range(n_mels):
        w[i] = np.maximum(0, np.minimum(-ramps[i] / fdiff[i], ramps[i + 2] / fdiff[i + 1]))
    w *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    return w.astype(np.float32)


def hann_symmetric(n):
    k = np.arange(n, dtype=np.float64)
    return 0.5 - 0.5 * np.cos(2.0 * math.pi * k / (n - 1))


def decoder_pos_enc(max_len, h):
    """NeMo FixedPositionalEncoding, divided by sqrt(hidden)."""
    pos = np.arange(max_len, dtype=np.float64)[:, None]
    div = np.exp(np.arange(0, h, 2, dtype=np.float64) * -(math.log(10000.0) / h))
    pe = np.zeros((max_len, h))
    pe[:, 0::2] = np.sin(pos * div)
    pe[:, 1::2] = np.cos(pos * div)
    return (pe / math.sqrt(h)).astype(np.float32)


# ---------------------------------------------------------------- weights

def init_weights(spec, vocab, eos_id, special_ids):
    rs = np.random.RandomState(spec["seed"])
    d, C, K = spec["d_model"], spec["sub_channels"], spec["kernel"]
    h, inner, V = spec["dec_hidden"], spec["dec_inner"], vocab
    H = spec["enc_heads"]
    W = {}

    def normal(shape, std):
        return (rs.standard_normal(size=shape) * std).astype(np.float32)

    def ln(name, n, wstd=0.1, bstd=0.05, mean=1.0):
        W[name + ".weight"] = (mean + normal((n,), wstd)).astype(np.float32)
        W[name + ".bias"] = normal((n,), bstd)

    def lin(name, out, inp, gain=1.0, bias=True, bstd=0.02, center=False):
        w = normal((out, inp), gain / math.sqrt(inp))
        if center:
            # rows sum to zero: the positive mean of ReLU/SiLU outputs does
            # not become one constant direction shared by every input
            w = (w - w.mean(axis=1, keepdims=True)).astype(np.float32)
        W[name + ".weight"] = w
        if bias:
            W[name + ".bias"] = normal((out,), bstd)

    sr = COMMON_PRE["sample_rate"]
    W["preprocessor.featurizer.window"] = round_to_bf16(hann_symmetric(int(round(COMMON_PRE["window_size"] * sr))))
    fb = mel_filterbank(sr, COMMON_PRE["n_fft"], spec["n_mels"])
    W["preprocessor.featurizer.fb"] = round_to_bf16(fb)[None]

    p = "encoder.pre_encode."
    W[p + "conv.0.weight"] = normal((C, 1, 3, 3), math.sqrt(2.0 / 9))
    W[p + "conv.0.bias"] = normal((C,), 0.05)
    stages = int(round(math.log2(8)))
    f = spec["n_mels"]
    f = (f + 2 - 3) // 2 + 1
    for s in range(1, stages):
        W[p + "conv.%d.weight" % (3 * s - 1)] = normal((C, 1, 3, 3), math.sqrt(1.0 / 9) * 1.2)
        W[p + "conv.%d.bias" % (3 * s - 1)] = normal((C,), 0.05)
        W[p + "conv.%d.weight" % (3 * s)] = normal((C, C, 1, 1), math.sqrt(2.0 / C))
        W[p + "conv.%d.bias" % (3 * s)] = normal((C,), 0.05)
        f = (f + 2 - 3) // 2 + 1
    lin(p + "out", d, C * f, bstd=0.05, center=True)

    eb = spec["enc_biases"]
    for i in range(spec["enc_layers"]):
        p = "encoder.layers.%d." % i
        for ffn in ("feed_forward1", "feed_forward2"):
            ln(p + "norm_" + ffn, d)
            lin(p + ffn + ".linear1", 4 * d, d, bias=eb)
            lin(p + ffn + ".linear2", d, 4 * d, bias=eb, center=True)
        ln(p + "norm_self_att", d)
        for n_ in ("linear_q", "linear_k", "linear_v", "linear_out"):
            lin(p + "self_attn." + n_, d, d)
        lin(p + "self_attn.linear_pos", d, d, bias=False)
        W[p + "self_attn.pos_bias_u"] = normal((H, d // H), 0.3)
        W[p + "self_attn.pos_bias_v"] = normal((H, d // H), 0.3)
        ln(p + "norm_conv", d)
        W[p + "conv.pointwise_conv1.weight"] = normal((2 * d, d, 1), 1.0 / math.sqrt(d))
        W[p + "conv.depthwise_conv.weight"] = normal((d, 1, K), 1.0 / math.sqrt(K))
        w = normal((d, d), 1.0 / math.sqrt(d))
        W[p + "conv.pointwise_conv2.weight"] = (w - w.mean(axis=1, keepdims=True))[:, :, None].astype(np.float32)
        if eb:
            W[p + "conv.pointwise_conv1.bias"] = normal((2 * d,), 0.02)
            W[p + "conv.depthwise_conv.bias"] = normal((d,), 0.02)
            W[p + "conv.pointwise_conv2.bias"] = normal((d,), 0.02)
        W[p + "conv.batch_norm.weight"] = (1.0 + normal((d,), 0.1)).astype(np.float32)
        W[p + "conv.batch_norm.bias"] = normal((d,), 0.1)
        W[p + "conv.batch_norm.running_mean"] = normal((d,), 0.1)
        W[p + "conv.batch_norm.running_var"] = rs.uniform(0.3, 1.5, size=(d,)).astype(np.float32)
        ln(p + "norm_out", d)

    if d != h:
        lin("encoder_decoder_proj", h, d, bstd=0.05)

    e = "transf_decoder._embedding."
    emb = normal((V, h), 1.0)
    # equal row norms: no "hub" token that wins for every input
    emb = (emb / np.linalg.norm(emb, axis=1, keepdims=True) * spec["emb_std"]).astype(np.float32)
    W[e + "token_embedding.weight"] = emb
    W[e + "position_embedding.pos_enc"] = decoder_pos_enc(spec["max_seq"], h)
    ln(e + "layer_norm", h, wstd=spec["emb_ln"][1], mean=spec["emb_ln"][0])
    g = spec["dec_out_gain"]
    for i in range(spec["dec_layers"]):
        p = "transf_decoder._decoder.layers.%d." % i
        for k in (1, 2, 3):
            ln(p + "layer_norm_%d" % k, h)
        for sub in ("first_sub_layer", "second_sub_layer"):
            for n_ in ("query_net", "key_net", "value_net"):
                lin(p + sub + "." + n_, h, h, gain=spec["qk_gain"] if n_ != "value_net" else 1.0)
            lin(p + sub + ".out_projection", h, h, gain=g)
        lin(p + "third_sub_layer.dense_in", inner, h, gain=math.sqrt(2.0))
        lin(p + "third_sub_layer.dense_out", h, inner, gain=g, center=True)
    ln("transf_decoder._decoder.final_layer_norm", h)
    bias = normal((V,), spec["cls_bias_std"])
    for i in special_ids:          # specials and controls should not be generated
        bias[i] -= 1.0
    bias[eos_id] = spec["eos_bias"]
    W["log_softmax.mlp.layer0.bias"] = bias.astype(np.float32)
    return W


# ---------------------------------------------------------------- safetensors

def tensor_bytes(arr, dtype):
    if arr.dtype == np.int64:
        return "I64", np.ascontiguousarray(arr, dtype="<i8").tobytes()
    if dtype == "bf16":
        return "BF16", bf16_bits(arr).tobytes()
    return "F32", np.ascontiguousarray(arr, dtype="<f4").tobytes()


def write_safetensors(path, tensors, dtype):
    """tensors: {name: np.ndarray}; written sorted by name, 8-byte aligned
    header padded with spaces."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, off = [], 0
    for name in sorted(tensors):
        arr = tensors[name]
        dt, b = tensor_bytes(arr, dtype)
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)
    return off


# ---------------------------------------------------------------- tokenizer

def train_tokenizer(spec, corpus_path, work, name):
    s = spec["spm"]
    # relative paths: the trainer spec stored in the model records them, and
    # the temporary directory's name must not make the output differ
    args = ["spm_train", "--input=" + os.path.basename(corpus_path), "--model_prefix=" + name,
            "--vocab_size=%d" % s["vocab_size"], "--model_type=" + s["model_type"],
            "--byte_fallback=true", "--character_coverage=1.0", "--hard_vocab_limit=false",
            "--num_threads=1", "--random_seed=1", "--minloglevel=2",
            "--unk_id=%d" % s["unk_id"], "--bos_id=%d" % s["bos_id"], "--eos_id=%d" % s["eos_id"],
            "--pad_id=%d" % s["pad_id"], "--user_defined_symbols=" + ",".join(s["user_defined"])]
    if s["eos_piece"]:
        args.append("--eos_piece=" + s["eos_piece"])
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=work)
    if r.returncode != 0:
        sys.stderr.write(r.stdout.decode("utf-8", "replace"))
        raise SystemExit("spm_train failed for %s" % name)
    return os.path.join(work, name + ".model")


# ---------------------------------------------------------------- audio

SENTENCES = [
    ("da1", "Hej, hvordan har du det i dag?"),
    ("da2", "Jeg vil gerne have en kop kaffe med mælk."),
    ("da3", "København er Danmarks hovedstad og største by."),
    ("da4", "Det regner meget i dag."),
    ("da5", "Vi ses i morgen klokken otte, og så går vi en tur i skoven."),
]


def run_cmd(args):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode("utf-8", "replace"))
        raise SystemExit("failed: %s" % " ".join(args))


def sox(src, dst, *effects, rate=None, channels=None):
    args = ["sox", "-D", "-R", "-V1", src]
    if rate:
        args += ["-r", str(rate)]
    if channels:
        args += ["-c", str(channels)]
    args += [dst] + list(effects)
    run_cmd(args)


def make_audio(adir, work):
    entries = []
    for name, text in SENTENCES:
        raw = os.path.join(work, name + "_espeak.wav")
        run_cmd(["espeak-ng", "-v", "da", "-s", "165", "-w", raw, text])
        dst = os.path.join(adir, name + "_16k.wav")
        sox(raw, dst, rate=16000)
        entries.append({"name": name + "_16k", "path": "audio/" + name + "_16k.wav", "rate": 16000,
                        "channels": 1, "text": text, "format": "wav"})
        if name == "da1":
            dst = os.path.join(adir, "da1_22050.wav")
            sox(raw, dst)   # espeak-ng writes 22050 Hz mono
            entries.append({"name": "da1_22050", "path": "audio/da1_22050.wav", "rate": 22050,
                            "channels": 1, "text": text, "format": "wav"})
        elif name == "da2":
            dst = os.path.join(adir, "da2_44100_stereo.wav")
            sox(raw, dst, "remix", "1", "1v0.5", rate=44100)   # right = 0.5 * left
            entries.append({"name": "da2_44100_stereo", "path": "audio/da2_44100_stereo.wav",
                            "rate": 44100, "channels": 2, "text": text, "format": "wav"})
        elif name == "da3":
            dst = os.path.join(adir, "da3_8k.wav")
            sox(raw, dst, rate=8000)
            entries.append({"name": "da3_8k", "path": "audio/da3_8k.wav", "rate": 8000,
                            "channels": 1, "text": text, "format": "wav"})
        elif name == "da5":
            dst = os.path.join(adir, "da5_16k.flac")
            sox(raw, dst, rate=16000)
            entries.append({"name": "da5_16k_flac", "path": "audio/da5_16k.flac", "rate": 16000,
                            "channels": 1, "text": text, "format": "flac"})
    for e in entries:
        info = subprocess.run(["soxi", "-D", os.path.join(adir, os.path.basename(e["path"]))],
                              stdout=subprocess.PIPE).stdout.decode().strip()
        e["seconds"] = round(float(info), 3) if info else None
    return entries


# ---------------------------------------------------------------- models

def build_model(out_root, name, spec_name, dtype, sharded, explicit_cls, tok_path):
    import sentencepiece as spm
    spec = SPECS[spec_name]
    mdir = os.path.join(out_root, "models", name)
    os.makedirs(mdir, exist_ok=True)
    shutil.copyfile(tok_path, os.path.join(mdir, "tokenizer.model"))
    sp = spm.SentencePieceProcessor(model_file=tok_path)
    V = sp.get_piece_size()

    def pid(piece):
        i = sp.piece_to_id(piece)
        if sp.id_to_piece(i) != piece:
            raise SystemExit("%s: piece %r missing from the trained vocabulary" % (name, piece))
        return i

    eos = pid("<|endoftext|>")
    start = pid("\u2581")
    s = spec["spm"]
    gen = {"pad_token_id": s["pad_id"], "eos_token_id": eos, "bos_token_id": s["bos_id"],
           "decoder_start_token_id": start}
    if spec["max_new_tokens"] is not None:
        gen["max_new_tokens"] = spec["max_new_tokens"]
    for lang in spec["languages"]:
        pid("<|%s|>" % lang)
    specials = sorted({pid(p) for p in PROMPT_SPECIALS + ["<|%s|>" % l for l in spec["languages"]]}
                      | {i for i in range(V) if sp.is_control(i) or sp.is_unknown(i)})
    specials = [i for i in specials if i != eos]

    cfg = {
        "model_type": "cohere_asr", "vocab_size": V, "max_audio_clip_s": 35,
        "overlap_chunk_second": 5, "min_energy_window_samples": 1600, "sample_rate": 16000,
        "supported_languages": spec["languages"],
        "preprocessor": dict(COMMON_PRE, features=spec["n_mels"]),
        "encoder": {"feat_in": spec["n_mels"], "d_model": spec["d_model"], "ff_expansion_factor": 4,
                    "n_layers": spec["enc_layers"], "n_heads": spec["enc_heads"],
                    "conv_kernel_size": spec["kernel"], "subsampling": "dw_striding",
                    "subsampling_conv_channels": spec["sub_channels"], "subsampling_factor": 8,
                    "self_attention_model": "rel_pos", "pos_emb_max_len": 5000},
        "transf_decoder": {"config_dict": {"hidden_size": spec["dec_hidden"],
                                           "inner_size": spec["dec_inner"],
                                           "num_layers": spec["dec_layers"],
                                           "num_attention_heads": spec["dec_heads"],
                                           "max_sequence_length": spec["max_seq"],
                                           "hidden_act": "relu"}},
        "head": {"hidden_size": spec["dec_hidden"], "num_classes": V, "log_softmax": True},
    }
    with open(os.path.join(mdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(mdir, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
        f.write("\n")

    W = init_weights(spec, V, eos, specials)
    if explicit_cls:
        W["log_softmax.mlp.layer0.weight"] = W["transf_decoder._embedding.token_embedding.weight"].copy()
    if spec_name == "multi":
        # present in real NeMo checkpoints, never used for compute
        for i in range(spec["enc_layers"]):
            W["encoder.layers.%d.conv.batch_norm.num_batches_tracked" % i] = np.array(1000 + i, dtype=np.int64)
    if sharded:
        names = sorted(W)
        half = len(names) // 2
        shards = [("model-00001-of-00002.safetensors", names[:half]),
                  ("model-00002-of-00002.safetensors", names[half:])]
        wm, total = {}, 0
        for fname, part in shards:
            total += write_safetensors(os.path.join(mdir, fname), {k: W[k] for k in part}, dtype)
            for k in part:
                wm[k] = fname
        with open(os.path.join(mdir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
            f.write("\n")
    else:
        write_safetensors(os.path.join(mdir, "model.safetensors"), W, dtype)

    n_params = int(sum(a.size for a in W.values()))
    return {"name": name, "path": "models/" + name, "dtype": dtype, "size": spec_name,
            "sharded": sharded, "tied": not explicit_cls, "vocab_size": V, "params": n_params,
            "languages": spec["languages"], "eos_token_id": eos, "decoder_start_token_id": start,
            "pad_token_id": s["pad_id"], "bos_token_id": s["bos_id"],
            "max_new_tokens": spec["max_new_tokens"], "max_sequence_length": spec["max_seq"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--force", action="store_true", help="regenerate even when up to date")
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    ver = version_stamp()
    man_path = os.path.join(out, "manifest.json")
    if not a.force and os.path.exists(man_path):
        try:
            with open(man_path) as f:
                if json.load(f).get("version") == ver:
                    print("fixtures up to date in %s (version %s)" % (out, ver))
                    return 0
        except (ValueError, OSError):
            pass
    t0 = time.time()
    os.makedirs(out, exist_ok=True)
    if os.path.exists(man_path):
        os.remove(man_path)
    for sub in ("models", "audio"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))

    with tempfile.TemporaryDirectory(prefix="hv-fixtures-") as work:
        toks = {}
        for spec_name, spec in SPECS.items():
            corpus = os.path.join(work, spec_name + ".txt")
            with open(corpus, "w", encoding="utf-8") as f:
                f.write("\n".join(make_corpus(spec["seed"])) + "\n")
            toks[spec_name] = train_tokenizer(spec, corpus, work, spec_name)
        models = [build_model(out, name, spec_name, dtype, sharded, explicit, toks[spec_name])
                  for name, spec_name, dtype, sharded, explicit in MODELS]
        audio = make_audio(os.path.join(out, "audio"), work)

    man = {"version": ver, "generator": "tests/reference/make_fixtures.py",
           "models": models, "audio": audio}
    tmp = man_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(man, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, man_path)
    print("fixtures written to %s in %.1f s (version %s)" % (out, time.time() - t0, ver))
    return 0


if __name__ == "__main__":
    sys.exit(main())
