#!/usr/bin/env python3
"""PyTorch reference ("oracle") for the Hviske model of docs/MODEL.md.

Written plainly and literally from the specification text, step by step,
so that the C engine can be compared against it (tests/parity/test_parity.py).
Nothing here is optimised; every size comes from config.json, every token
id from generation_config.json or tokenizer.model.

Numeric choices:
  * the frontend (pre-emphasis, STFT, power, mel, log, normalisation) is
    computed in float64 from the float32 samples, with the window and the
    filterbank exactly as stored in the checkpoint; the result is rounded
    to float32 once at the end. float64 is the mathematical definition of
    docs/MODEL.md's steps without float32 rounding noise, so the measured
    difference is the engine's own error only. (features(..., dtype=
    torch.float32) exists to estimate what a float32 frontend loses: about
    5e-4 on the 8 kHz fixture, whose empty 4-8 kHz mel bands sit at the
    2^-24 log guard with a tiny per-feature std, elsewhere ~5e-5.)
    Power is re^2 + im^2 (docs/MODEL.md "|X|^2"), not NeMo's sqrt-then-square;
  * the relative positional encoding is computed in float64 and cast; the
    decoder's pos_enc is read from the checkpoint as stored;
  * the encoder and the decoder run in float32 (load_model(dtype=...) can
    switch them to float64 for debugging), with every weight exactly as
    stored (bf16 weights are converted to float32 exactly). BatchNorm is
    applied literally, (x - mean) / sqrt(var + eps) * w + b;
  * without preprocessor.featurizer.window / .fb tensors the symmetric
    Hann window and the Slaney filterbank are computed and rounded to bf16
    ("the reference rounds both"); every fixture carries the tensors.

Text: only NORMAL and BYTE pieces are kept; U+2581 in normal pieces becomes
a space; runs of byte pieces become bytes, and invalid UTF-8 is replaced as
SentencePiece's decoder does (a byte that does not start a complete, valid,
shortest-form character becomes one U+FFFD and decoding moves on by one
byte; Python's "replace" would differ); U+0000 is dropped; Python's
str.strip() trims (Unicode whitespace). The self-test checks this against
sp.decode().

Importable API (used by test_parity.py):
  load_model(dir) -> Model
  features(model, samples, dither=0.0) -> (feats [frames, mels] f32, n_valid)
  encode(model, feats, n_valid) -> (enc [n_enc, h] after projection, enc_len)
  Decoder(model, enc, enc_len): .prefill(prompt) / .step(token) -> log-probs [V]
  greedy(model, enc, enc_len, prompt, max_new_tokens[, return_scores=True])
      -> tokens (or {tokens, token_logprobs, score, eos})
  beam_search(model, enc, enc_len, prompt, max_new_tokens, num_beams,
              length_penalty) -> {tokens, token_logprobs, score, length, eos,
                                  min_margin}   (docs/DECODING.md)
  build_prompt(model, language, punctuation) -> ids
  decode_text(model, ids) -> str
  run(model, samples, language, punctuation, max_new_tokens, dither,
      num_beams, length_penalty) -> dict (tokens, token_logprobs, score, ...)
  chunk_plan(model, samples, mode, chunk_seconds) -> [0, ..., n]
      (docs/MODEL.md "Long audio"; mode auto | energy | fixed | none)
  run_long(model, samples, chunking, chunk_seconds, language, ...) -> run()'s
      dict for the first chunk plus bounds, segments and the joined text

Command line:
  reference.py --model DIR --samples samples.npy --out OUTDIR
               [--language da] [--no-punctuation] [--max-new-tokens N]
               [--beams N] [--length-penalty X]
               [--chunking auto|energy|fixed|none [--chunk-seconds S]]
  (result.json: n_valid_frames, enc_len, prompt, tokens, token_logprobs,
  score, text; with --chunking also bounds and segments, the tensors being
  those of the first chunk)
  reference.py --selftest [--fixtures DIR]
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

NEG_INF = -1e9
LN_EPS = 1e-5
BN_EPS = 1e-5
LOG_GUARD = 2.0 ** -24
NORM_EPS = 1e-5
PREEMPH = 0.97

# -------------------------------------------------------------- safetensors

_ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U8": np.uint8, "BOOL": np.bool_,
}


def _bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path):
    """Returns {name: (dtype_string, numpy array)}; BF16 is converted to
    float32 exactly, F16 to float32, other dtypes stay as they are."""
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info["dtype"]
        shape = tuple(info["shape"])
        b, e = info["data_offsets"]
        raw = data[base + b:base + e]
        if dt == "BF16":
            arr = _bf16_bits_to_f32(np.frombuffer(raw, dtype="<u2"))
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(_ST_DTYPES[dt]).newbyteorder("<"))
            if dt == "F16":
                arr = arr.astype(np.float32)
        n = int(np.prod(shape)) if shape else 1
        if arr.size != n:
            raise ValueError("%s: tensor %s has %d values for shape %s" % (path, name, arr.size, shape))
        out[name] = (dt, arr.reshape(shape).copy())
    return out


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        tensors = {}
        for shard in sorted(set(wm.values())):
            part = read_safetensors(os.path.join(model_dir, shard))
            for k, v in part.items():
                if wm.get(k) == shard:
                    tensors[k] = v
        missing = set(wm) - set(tensors)
        if missing:
            raise ValueError("%s: tensors missing from shards: %s" % (index, sorted(missing)[:5]))
        return tensors
    return read_safetensors(os.path.join(model_dir, "model.safetensors"))


# -------------------------------------------------------------- frontend helpers

def round_to_bf16(x):
    """Round-to-nearest-even to bf16, returned as float32 values."""
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return _bf16_bits_to_f32(bits.astype(np.uint16))


def _hz_to_mel_slaney(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(f >= min_log_hz,
                    min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def _mel_to_hz_slaney(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    freqs = f_sp * m
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), freqs)


def slaney_mel_filterbank(sr, n_fft, n_mels, fmin=0.0, fmax=None):
    """= librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False, norm='slaney')."""
    if fmax is None:
        fmax = sr / 2.0
    n_bins = n_fft // 2 + 1
    fftfreqs = np.linspace(0, sr / 2.0, n_bins)
    mel_f = _mel_to_hz_slaney(np.linspace(_hz_to_mel_slaney(fmin), _hz_to_mel_slaney(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    weights = np.zeros((n_mels, n_bins), dtype=np.float64)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, None]
    return weights.astype(np.float32)


# -------------------------------------------------------------- model

class Model:
    pass


def _get(d, key, path):
    if key not in d:
        raise KeyError("%s: missing key %s" % (path, key))
    return d[key]


def load_model(model_dir, dtype=torch.float32):
    m = Model()
    m.dir = model_dir
    m.dtype = dtype
    cpath = os.path.join(model_dir, "config.json")
    gpath = os.path.join(model_dir, "generation_config.json")
    with open(cpath) as f:
        cfg = json.load(f)
    with open(gpath) as f:
        gen = json.load(f)
    if cfg.get("model_type") != "cohere_asr":
        raise ValueError("%s: model_type is not cohere_asr" % cpath)
    m.cfg, m.gen = cfg, gen
    pre = _get(cfg, "preprocessor", cpath)
    enc = _get(cfg, "encoder", cpath)
    dec = _get(_get(cfg, "transf_decoder", cpath), "config_dict", cpath)
    head = _get(cfg, "head", cpath)

    m.vocab_size = int(_get(cfg, "vocab_size", cpath))
    m.languages = list(_get(cfg, "supported_languages", cpath))
    m.sample_rate = int(pre.get("sample_rate", cfg.get("sample_rate", 16000)))
    m.n_mels = int(_get(pre, "features", cpath))
    m.n_fft = int(_get(pre, "n_fft", cpath))
    m.win_length = int(round(float(_get(pre, "window_size", cpath)) * m.sample_rate))
    m.hop = int(round(float(_get(pre, "window_stride", cpath)) * m.sample_rate))
    m.pad_to = int(pre.get("pad_to", 16))
    m.dither = float(pre.get("dither", 0.0))

    m.feat_in = int(_get(enc, "feat_in", cpath))
    m.d_model = int(_get(enc, "d_model", cpath))
    m.ff_exp = int(_get(enc, "ff_expansion_factor", cpath))
    m.enc_layers = int(_get(enc, "n_layers", cpath))
    m.enc_heads = int(_get(enc, "n_heads", cpath))
    m.conv_kernel = int(_get(enc, "conv_kernel_size", cpath))
    m.sub_channels = int(_get(enc, "subsampling_conv_channels", cpath))
    m.sub_factor = int(_get(enc, "subsampling_factor", cpath))
    m.n_stages = int(round(math.log2(m.sub_factor)))
    if 2 ** m.n_stages != m.sub_factor or m.n_stages < 1:
        raise ValueError("%s: subsampling_factor must be a power of two" % cpath)

    m.dec_hidden = int(_get(dec, "hidden_size", cpath))
    m.dec_inner = int(_get(dec, "inner_size", cpath))
    m.dec_layers = int(_get(dec, "num_layers", cpath))
    m.dec_heads = int(_get(dec, "num_attention_heads", cpath))
    m.max_seq = int(_get(dec, "max_sequence_length", cpath))
    m.log_softmax = bool(head.get("log_softmax", True))

    m.pad_id = int(_get(gen, "pad_token_id", gpath))
    m.eos_id = int(_get(gen, "eos_token_id", gpath))
    m.bos_id = int(_get(gen, "bos_token_id", gpath))
    m.start_id = int(_get(gen, "decoder_start_token_id", gpath))
    m.gen_max_new = int(gen.get("max_new_tokens", 256))

    # long audio (docs/MODEL.md "Long audio")
    m.max_audio_clip_s = float(_get(cfg, "max_audio_clip_s", cpath))
    m.overlap_chunk_second = float(_get(cfg, "overlap_chunk_second", cpath))
    m.min_energy_window = int(_get(cfg, "min_energy_window_samples", cpath))

    m.sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "tokenizer.model"))
    if m.sp.get_piece_size() != m.vocab_size:
        raise ValueError("%s: vocab_size %d but tokenizer has %d pieces"
                         % (cpath, m.vocab_size, m.sp.get_piece_size()))

    raw = load_weights(model_dir)
    m.raw_dtypes = {k: v[0] for k, v in raw.items()}
    m.w = {}
    for k, (dt, arr) in raw.items():
        if dt in ("F32", "F16", "BF16", "F64"):
            m.w[k] = torch.from_numpy(np.ascontiguousarray(arr)).to(dtype)

    # frontend tensors: as stored when present, else computed and rounded
    # to bf16 like the reference implementation does
    if "preprocessor.featurizer.window" in m.w:
        m.window = m.w["preprocessor.featurizer.window"].to(torch.float64).reshape(-1)
    else:
        hann = torch.hann_window(m.win_length, periodic=False, dtype=torch.float64).numpy()
        m.window = torch.from_numpy(round_to_bf16(hann)).to(torch.float64)
    if m.window.numel() != m.win_length:
        raise ValueError("window has %d values, win_length is %d" % (m.window.numel(), m.win_length))
    n_bins = m.n_fft // 2 + 1
    if "preprocessor.featurizer.fb" in m.w:
        m.fb = m.w["preprocessor.featurizer.fb"].to(torch.float64).reshape(m.n_mels, n_bins)
    else:
        fb = slaney_mel_filterbank(m.sample_rate, m.n_fft, m.n_mels)
        m.fb = torch.from_numpy(round_to_bf16(fb)).to(torch.float64)

    # tied classifier
    m.cls_w = m.w.get("log_softmax.mlp.layer0.weight",
                      m.w["transf_decoder._embedding.token_embedding.weight"])
    m.cls_b = m.w["log_softmax.mlp.layer0.bias"]
    m.has_proj = m.d_model != m.dec_hidden
    if m.has_proj and "encoder_decoder_proj.weight" not in m.w:
        raise ValueError("%s: d_model != decoder hidden but encoder_decoder_proj is missing" % model_dir)
    return m


def W(m, name):
    if name not in m.w:
        raise KeyError("%s: missing tensor %s" % (m.dir, name))
    return m.w[name]


def W_opt(m, name):
    return m.w.get(name)


# -------------------------------------------------------------- frontend

def features(m, samples, dither=0.0, dtype=torch.float64):
    """docs/MODEL.md "Frontend", steps 1-7. Returns (features [frames_padded,
    n_mels] float32 tensor, n_valid_frames T). dtype is the compute type
    (float64 for the oracle; float32 only to estimate float32 error) from
    step 2 on; the dither is Hugging Face's (CohereAsrFeatureExtractor.
    _apply_dither): float32 samples plus dither * torch.randn(n) of a
    generator seeded with n, the chunk's own number of samples."""
    x = torch.from_numpy(np.asarray(samples, dtype=np.float32).reshape(-1).copy())
    n = x.numel()
    T = n // m.hop
    if T < 2:
        raise ValueError("audio too short: %d samples" % n)
    # 1. dither
    if dither > 0:
        g = torch.Generator().manual_seed(n)
        x = x + dither * torch.randn(n, generator=g, dtype=torch.float32)
    x = x.to(dtype)
    # 2. pre-emphasis
    y = torch.cat([x[:1], x[1:] - PREEMPH * x[:-1]])
    # 3. STFT, centred, zero padding of n_fft/2 on both sides; torch.stft
    #    pads the win_length window to n_fft, centred
    X = torch.stft(y, n_fft=m.n_fft, hop_length=m.hop, win_length=m.win_length,
                   window=m.window.to(dtype), center=True, pad_mode="constant",
                   normalized=False, onesided=True, return_complex=True)
    P = X.real ** 2 + X.imag ** 2                 # [n_bins, n_frames]
    # 4. mel
    mel = m.fb.to(dtype) @ P                      # [n_mels, n_frames]
    # 5. log
    lm = torch.log(mel + LOG_GUARD)
    # 6. per-feature normalisation over the T valid frames
    valid = lm[:, :T]
    mean = valid.sum(dim=1, keepdim=True) / T
    var = ((valid - mean) ** 2).sum(dim=1, keepdim=True) / (T - 1)
    std = torch.sqrt(var) + NORM_EPS
    out = (lm - mean) / std
    # 7. frames >= T are zero, pad the frame axis to a multiple of pad_to
    n_frames = out.shape[1]
    assert n_frames == n // m.hop + 1
    out[:, T:] = 0.0
    pad = (-n_frames) % m.pad_to if m.pad_to > 0 else 0
    out = F.pad(out, (0, pad))
    return out.t().contiguous().to(torch.float32), T


# -------------------------------------------------------------- encoder

def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, LN_EPS)


def linear(x, w, b=None):
    y = x @ w.t()
    if b is not None:
        y = y + b
    return y


def rel_pos_emb(n, d, dtype):
    """Positions n-1 .. -(n-1); sin at even, cos at odd columns."""
    pos = torch.arange(n - 1, -n, -1, dtype=torch.float64)[:, None]
    i = torch.arange(0, d // 2, dtype=torch.float64)[None, :]
    w = torch.pow(10000.0, -2.0 * i / d)
    pe = torch.zeros(2 * n - 1, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * w)
    pe[:, 1::2] = torch.cos(pos * w)
    return pe.to(dtype)


def rel_shift(bd):
    """The literal Transformer-XL rel-shift: bd [H, n, 2n-1] -> [H, n, n].
    Pad a zero column on the left, reshape, drop the first row, reshape
    back, keep the first n columns."""
    H, n, m = bd.shape
    x = F.pad(bd, (1, 0))                 # [H, n, m+1]
    x = x.reshape(H, m + 1, n)            # [H, m+1, n]
    x = x[:, 1:, :].reshape(H, n, m)      # [H, n, m]
    return x[:, :, :n]


def rel_shift_index(bd):
    """Same by the index formula out[h, i, j] = bd[h, i, n-1-i+j]."""
    H, n, _ = bd.shape
    out = torch.empty(H, n, n, dtype=bd.dtype)
    for i in range(n):
        for j in range(n):
            out[:, i, j] = bd[:, i, n - 1 - i + j]
    return out


def mhsa_rel(m, p, x, pos_emb, pad):
    n, d = x.shape
    H = m.enc_heads
    dk = d // H
    q = linear(x, W(m, p + "linear_q.weight"), W(m, p + "linear_q.bias")).reshape(n, H, dk).transpose(0, 1)
    k = linear(x, W(m, p + "linear_k.weight"), W(m, p + "linear_k.bias")).reshape(n, H, dk).transpose(0, 1)
    v = linear(x, W(m, p + "linear_v.weight"), W(m, p + "linear_v.bias")).reshape(n, H, dk).transpose(0, 1)
    pp = linear(pos_emb, W(m, p + "linear_pos.weight")).reshape(2 * n - 1, H, dk).transpose(0, 1)
    u = W(m, p + "pos_bias_u")[:, None, :]
    vb = W(m, p + "pos_bias_v")[:, None, :]
    ac = (q + u) @ k.transpose(1, 2)                      # [H, n, n]
    bd = (q + vb) @ pp.transpose(1, 2)                    # [H, n, 2n-1]
    bd = rel_shift(bd)
    scores = (ac + bd) / math.sqrt(dk)
    mask = pad[:, None] | pad[None, :]                    # query or key padded
    scores = scores.masked_fill(mask[None], NEG_INF)
    attn = torch.softmax(scores, dim=-1).masked_fill(mask[None], 0.0)
    ctx = (attn @ v).transpose(0, 1).reshape(n, d)
    return linear(ctx, W(m, p + "linear_out.weight"), W(m, p + "linear_out.bias"))


def feed_forward(m, p, x):
    h = linear(x, W(m, p + "linear1.weight"), W_opt(m, p + "linear1.bias"))
    h = F.silu(h)
    return linear(h, W(m, p + "linear2.weight"), W_opt(m, p + "linear2.bias"))


def conv_module(m, p, x, pad):
    n, d = x.shape
    y = x.t()[None]                                            # [1, d, n]
    y = F.conv1d(y, W(m, p + "pointwise_conv1.weight"), W_opt(m, p + "pointwise_conv1.bias"))
    y = F.glu(y, dim=1)                                        # [1, d, n]
    y = y.masked_fill(pad[None, None, :], 0.0)
    K = m.conv_kernel
    y = F.conv1d(y, W(m, p + "depthwise_conv.weight"), W_opt(m, p + "depthwise_conv.bias"),
                 padding=(K - 1) // 2, groups=d)
    bw, bb = W(m, p + "batch_norm.weight"), W(m, p + "batch_norm.bias")
    rm, rv = W(m, p + "batch_norm.running_mean"), W(m, p + "batch_norm.running_var")
    y = (y - rm[None, :, None]) / torch.sqrt(rv[None, :, None] + BN_EPS) * bw[None, :, None] + bb[None, :, None]
    y = F.silu(y)
    y = F.conv1d(y, W(m, p + "pointwise_conv2.weight"), W_opt(m, p + "pointwise_conv2.bias"))
    return y[0].t()


def conformer_layer(m, i, x, pos_emb, pad):
    p = "encoder.layers.%d." % i
    x = x + 0.5 * feed_forward(m, p + "feed_forward1.",
                               layer_norm(x, W(m, p + "norm_feed_forward1.weight"), W(m, p + "norm_feed_forward1.bias")))
    x = x + mhsa_rel(m, p + "self_attn.",
                     layer_norm(x, W(m, p + "norm_self_att.weight"), W(m, p + "norm_self_att.bias")), pos_emb, pad)
    x = x + conv_module(m, p + "conv.",
                        layer_norm(x, W(m, p + "norm_conv.weight"), W(m, p + "norm_conv.bias")), pad)
    x = x + 0.5 * feed_forward(m, p + "feed_forward2.",
                               layer_norm(x, W(m, p + "norm_feed_forward2.weight"), W(m, p + "norm_feed_forward2.bias")))
    return layer_norm(x, W(m, p + "norm_out.weight"), W(m, p + "norm_out.bias"))


def _zero_time_from(h, length):
    h = h.clone()
    h[:, :, length:, :] = 0.0
    return h


def _sub_len(length):
    return (length + 2 * 1 - 3) // 2 + 1


def subsample(m, feats, n_valid):
    """dw_striding subsampling: [N, F] -> ([N/8, d_model], L)."""
    pfx = "encoder.pre_encode."
    h = feats.to(m.dtype)[None, None]            # [1, 1, time, freq]
    length = n_valid
    h = _zero_time_from(h, length)
    h = F.conv2d(h, W(m, pfx + "conv.0.weight"), W(m, pfx + "conv.0.bias"), stride=2, padding=1)
    length = _sub_len(length)
    h = F.relu(h)
    C = m.sub_channels
    for s in range(1, m.n_stages):
        dw, pw = 3 * s - 1, 3 * s
        h = _zero_time_from(h, length)
        h = F.conv2d(h, W(m, pfx + "conv.%d.weight" % dw), W(m, pfx + "conv.%d.bias" % dw),
                     stride=2, padding=1, groups=C)
        length = _sub_len(length)
        h = _zero_time_from(h, length)
        h = F.conv2d(h, W(m, pfx + "conv.%d.weight" % pw), W(m, pfx + "conv.%d.bias" % pw))
        h = F.relu(h)
    _, C_, T_, F_ = h.shape
    h = h.transpose(1, 2).reshape(T_, C_ * F_)    # per time step: channel-major, then freq
    out = linear(h, W(m, pfx + "out.weight"), W(m, pfx + "out.bias"))
    return out, length


def encode(m, feats, n_valid):
    """Features [N, n_mels] -> (encoder states after encoder_decoder_proj
    [N/8, dec_hidden], encoder length L)."""
    if not torch.is_tensor(feats):
        feats = torch.from_numpy(np.asarray(feats, dtype=np.float32))
    x, L = subsample(m, feats, n_valid)
    n = x.shape[0]
    pad = torch.arange(n) >= L
    pos_emb = rel_pos_emb(n, m.d_model, m.dtype)
    for i in range(m.enc_layers):
        x = conformer_layer(m, i, x, pos_emb, pad)
    if m.has_proj:
        x = linear(x, W(m, "encoder_decoder_proj.weight"), W(m, "encoder_decoder_proj.bias"))
    return x, L


# -------------------------------------------------------------- decoder

def _attention(q, k, v, mask):
    """q [H, nq, dk], k/v [H, nk, dk], mask [nq, nk] True = masked."""
    dk = q.shape[-1]
    scores = (q @ k.transpose(1, 2)) / math.sqrt(dk)
    scores = scores.masked_fill(mask[None], NEG_INF)
    attn = torch.softmax(scores, dim=-1)
    return attn @ v


class Decoder:
    """Pre-LN Transformer decoder with a KV cache for self-attention and
    precomputed cross-attention keys/values."""

    def __init__(self, m, enc, enc_len):
        self.m = m
        self.H = m.dec_heads
        self.h = m.dec_hidden
        self.dk = self.h // self.H
        enc = enc.to(m.dtype)
        ne = enc.shape[0]
        self.cross_mask_row = torch.arange(ne) >= enc_len     # [ne]
        self.cross_kv = []
        for i in range(m.dec_layers):
            p = "transf_decoder._decoder.layers.%d.second_sub_layer." % i
            k = linear(enc, W(m, p + "key_net.weight"), W(m, p + "key_net.bias"))
            v = linear(enc, W(m, p + "value_net.weight"), W(m, p + "value_net.bias"))
            self.cross_kv.append((self._heads(k), self._heads(v)))
        self.cache = [(torch.zeros(self.H, 0, self.dk, dtype=m.dtype),
                       torch.zeros(self.H, 0, self.dk, dtype=m.dtype)) for _ in range(m.dec_layers)]
        self.pos = 0

    def _heads(self, x):
        return x.reshape(x.shape[0], self.H, self.dk).transpose(0, 1)

    def _merge(self, x):
        return x.transpose(0, 1).reshape(x.shape[1], self.h)

    def forward(self, ids):
        """Feeds tokens at positions pos, pos+1, ...; returns log-probs
        [len(ids), V]."""
        m = self.m
        n = len(ids)
        if self.pos + n > m.max_seq:
            raise ValueError("decoder position %d beyond max_sequence_length %d" % (self.pos + n, m.max_seq))
        e = "transf_decoder._embedding."
        ids_t = torch.tensor(ids, dtype=torch.long)
        x = W(m, e + "token_embedding.weight")[ids_t] + W(m, e + "position_embedding.pos_enc")[self.pos:self.pos + n]
        x = layer_norm(x, W(m, e + "layer_norm.weight"), W(m, e + "layer_norm.bias"))
        qpos = torch.arange(self.pos, self.pos + n)
        kpos = torch.arange(0, self.pos + n)
        causal = kpos[None, :] > qpos[:, None]                   # [n, pos+n]
        cross = self.cross_mask_row[None, :].expand(n, -1)
        for i in range(m.dec_layers):
            p = "transf_decoder._decoder.layers.%d." % i
            # self-attention
            y = layer_norm(x, W(m, p + "layer_norm_1.weight"), W(m, p + "layer_norm_1.bias"))
            s = p + "first_sub_layer."
            q = self._heads(linear(y, W(m, s + "query_net.weight"), W(m, s + "query_net.bias")))
            k = self._heads(linear(y, W(m, s + "key_net.weight"), W(m, s + "key_net.bias")))
            v = self._heads(linear(y, W(m, s + "value_net.weight"), W(m, s + "value_net.bias")))
            ck, cv = self.cache[i]
            ck = torch.cat([ck, k], dim=1)
            cv = torch.cat([cv, v], dim=1)
            self.cache[i] = (ck, cv)
            ctx = self._merge(_attention(q, ck, cv, causal))
            x = x + linear(ctx, W(m, s + "out_projection.weight"), W(m, s + "out_projection.bias"))
            # cross-attention
            y = layer_norm(x, W(m, p + "layer_norm_2.weight"), W(m, p + "layer_norm_2.bias"))
            s = p + "second_sub_layer."
            q = self._heads(linear(y, W(m, s + "query_net.weight"), W(m, s + "query_net.bias")))
            ek, ev = self.cross_kv[i]
            ctx = self._merge(_attention(q, ek, ev, cross))
            x = x + linear(ctx, W(m, s + "out_projection.weight"), W(m, s + "out_projection.bias"))
            # feed-forward
            y = layer_norm(x, W(m, p + "layer_norm_3.weight"), W(m, p + "layer_norm_3.bias"))
            s = p + "third_sub_layer."
            y = F.relu(linear(y, W(m, s + "dense_in.weight"), W(m, s + "dense_in.bias")))
            x = x + linear(y, W(m, s + "dense_out.weight"), W(m, s + "dense_out.bias"))
        x = layer_norm(x, W(m, "transf_decoder._decoder.final_layer_norm.weight"),
                       W(m, "transf_decoder._decoder.final_layer_norm.bias"))
        logits = linear(x, m.cls_w, m.cls_b)
        self.pos += n
        if m.log_softmax:
            return torch.log_softmax(logits, dim=-1)
        return logits

    def prefill(self, prompt):
        return self.forward(list(prompt))[-1]

    def step(self, token):
        return self.forward([int(token)])[-1]


def resolve_max_new_tokens(m, prompt_len, requested=None):
    n = m.gen_max_new if requested is None else int(requested)
    return max(0, min(n, m.max_seq - prompt_len))


def log_probs(m, out):
    """The decoder's output as log-probs: as it is when the head applies
    log_softmax, else normalised here (docs/DECODING.md: every mode scores
    with log-probs)."""
    return out if m.log_softmax else torch.log_softmax(out, dim=-1)


def greedy(m, enc, enc_len, prompt, max_new_tokens, return_logprobs0=False, gaps=None,
           return_scores=False):
    """Argmax decoding (first index on ties) until eos_token_id (not
    included) or max_new_tokens tokens. gaps, when a list, receives the
    top-1 minus top-2 log-prob of every step (diagnostics).

    Returns tokens; with return_logprobs0 (tokens, logprobs0); with
    return_scores a dict {"tokens", "token_logprobs", "score", "eos"}
    (and "logprobs0" when return_logprobs0 is also set). The score is the
    sum of the chosen tokens' log-probs, plus the EOS log-prob when EOS
    ended the sequence (docs/DECODING.md "Greedy"), summed in float64."""
    dec = Decoder(m, enc, enc_len)
    lp = dec.prefill(prompt)
    lp0 = lp
    tokens, token_lps = [], []
    score, eos = 0.0, False
    for i in range(max_new_tokens):
        nlp = log_probs(m, lp)
        t = int(torch.argmax(lp).item())
        if gaps is not None:
            top = torch.topk(lp, 2).values
            gaps.append(float(top[0] - top[1]))
        score += float(nlp[t])
        if t == m.eos_id:
            eos = True
            break
        tokens.append(t)
        token_lps.append(float(nlp[t]))
        if i + 1 < max_new_tokens:
            lp = dec.step(t)
    if return_scores:
        r = {"tokens": tokens, "token_logprobs": token_lps, "score": score, "eos": eos}
        if return_logprobs0:
            r["logprobs0"] = lp0
        return r
    if return_logprobs0:
        return tokens, lp0
    return tokens


# -------------------------------------------------------------- beam search

def norm_score(s, length, length_penalty):
    """docs/DECODING.md: norm(s, len) = s / max(1, len)^length_penalty."""
    return s / (max(1, length) ** length_penalty)


def _best_tokens(lp, k):
    """The k largest entries of lp, ties broken by the lower id: ids sorted
    by (-lp, id)."""
    v = lp.detach().to(torch.float64).numpy()
    order = np.argsort(-v, kind="stable")         # stable: equal values keep id order
    return [int(i) for i in order[:k]]


class _Beam:
    """A live beam: its decoder state, tokens (no EOS), summed log-prob s,
    per-token log-probs, and the log-probs for its next token."""

    def __init__(self, state, tokens, s, token_lps, lp):
        self.state, self.tokens, self.s, self.token_lps, self.lp = state, tokens, s, token_lps, lp


def _fork(dec):
    """A copy of a Decoder sharing the cross-attention keys/values and the
    self-attention cache so far. Decoder.forward replaces the per-layer
    cache tensors (torch.cat makes new ones), never writes into them, so a
    shallow copy of the list is a correct copy-on-write."""
    d = Decoder.__new__(Decoder)
    d.__dict__.update(dec.__dict__)
    d.cache = list(dec.cache)
    return d


def beam_search(m, enc, enc_len, prompt, max_new_tokens, num_beams, length_penalty=1.0, trace=None,
                recompute=False):
    """Beam search exactly as docs/DECODING.md "Beam search" states it (the
    rules are in beam_search_core; this binds them to the model).

    Each live beam is its own Decoder (with a shared-prefix KV cache, see
    _fork); running them one after another equals running them as a batch.
    recompute=True instead feeds every beam's whole prefix (prompt and
    tokens) through a fresh decoder each step: slower, no cache at all (the
    self-test checks both agree). Log-probs are the model's dtype (float32)
    values; sums are float64."""
    if max_new_tokens <= 0:
        return beam_search_core(None, None, None, m.eos_id, 0, num_beams, length_penalty, trace)
    dec = Decoder(m, enc, enc_len)
    first_lp = log_probs(m, dec.prefill(prompt))

    def advance(state, tokens):
        """state: the parent's decoder; tokens: the child's tokens (the last
        one new). Returns (child decoder, log-probs of its next token)."""
        if recompute:
            d = Decoder(m, enc, enc_len)
            return d, log_probs(m, d.forward(list(prompt) + list(tokens))[-1])
        d = _fork(state)
        return d, log_probs(m, d.step(tokens[-1]))

    return beam_search_core(dec, first_lp, advance, m.eos_id, max_new_tokens, num_beams,
                            length_penalty, trace)


def beam_search_core(root_state, first_lp, advance, eos, max_new_tokens, num_beams,
                     length_penalty=1.0, trace=None):
    """The rules of docs/DECODING.md "Beam search", independent of the model:
    first_lp is the log-prob vector (1-D tensor) after the prompt;
    advance(parent_state, child_tokens) -> (child_state, child's next
    log-probs) extends a beam by its last token.

    Returns {"tokens" (EOS excluded), "token_logprobs", "score" (the
    normalised score of the winner), "length" (its length, counting the EOS
    step), "eos" (whether it ended with EOS), "min_margin" (diagnostics: the
    smallest gap between consecutive ranked candidate scores among the
    ranks that decided the search, and between the early-stop comparison's
    sides; tiny values mean float rounding could flip a choice)}.

    trace, when a list, receives one dict per step: the walked candidates
    (rank, summed score, token, beam, "finish"/"skip"/"live"), the live
    beams' tokens and summed scores after the step, and the finished
    hypotheses."""
    N = int(num_beams)
    if N < 1:
        raise ValueError("num_beams must be >= 1")
    if not (math.isfinite(length_penalty) and length_penalty > 0):
        raise ValueError("length_penalty must be finite and > 0")
    live = [_Beam(root_state, [], 0.0, [], first_lp)]
    finished = []          # (norm, order added, tokens, token_lps, length, eos)
    n_added = 0
    min_margin = float("inf")

    def add_finished(tokens, token_lps, s, length, ended_by_eos):
        nonlocal n_added
        h = (norm_score(s, length, length_penalty), n_added, list(tokens), list(token_lps),
             length, ended_by_eos)
        n_added += 1
        if len(finished) < N:
            finished.append(h)
        else:
            # kept to the best N by normalised score: a hypothesis enters
            # only when it beats the worst kept one; on ties among the
            # worst, the latest added leaves (the first added stays)
            worst = min(finished, key=lambda x: (x[0], -x[1]))
            if h[0] > worst[0]:
                finished.remove(worst)
                finished.append(h)

    for step in range(max_new_tokens):
        # 1-2. (all live beams have `step` tokens and their next log-probs)
        # each live beam proposes its 2N best tokens (ties: lower id)
        cands = []
        for b, beam in enumerate(live):
            for t in _best_tokens(beam.lp, 2 * N):
                lpt = float(beam.lp[t])
                cands.append((beam.s + lpt, t, b, lpt))
        # 3. rank: summed score descending, then lower token id, then lower beam
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        # 4. walk the ranked candidates
        new_live = []
        walked = []
        for r, (sc, t, b, lpt) in enumerate(cands):
            beam = live[b]
            if r + 1 < len(cands):
                min_margin = min(min_margin, sc - cands[r + 1][0])
            if t == eos:
                if r < N:
                    add_finished(beam.tokens, beam.token_lps, sc, step + 1, True)
                    walked.append((r, sc, t, b, "finish"))
                else:
                    walked.append((r, sc, t, b, "skip"))
            else:
                new_live.append((b, t, sc, lpt))
                walked.append((r, sc, t, b, "live"))
                if len(new_live) == N:
                    break
        # 5. the last allowed step: the new live beams finish
        if step == max_new_tokens - 1:
            for b, t, sc, lpt in new_live:
                beam = live[b]
                add_finished(beam.tokens + [t], beam.token_lps + [lpt], sc, step + 1, False)
            live = []
        else:
            # the new live beams: run their last token through the decoder
            nxt = []
            for b, t, sc, lpt in new_live:
                toks = live[b].tokens + [t]
                state, lp = advance(live[b].state, toks)
                nxt.append(_Beam(state, toks, sc, live[b].token_lps + [lpt], lp))
            live = nxt
        if trace is not None:
            trace.append({"step": step, "walked": walked,
                          "live": [(list(bm.tokens), bm.s) for bm in live],
                          "finished": [(h[0], list(h[2]), h[4]) for h in finished]})
        if step == max_new_tokens - 1:
            break
        # 6. early stop
        if len(finished) == N and live:
            worst = min(h[0] for h in finished)
            bound = norm_score(max(bm.s for bm in live), step + 1, length_penalty)
            min_margin = min(min_margin, abs(worst - bound))
            if worst >= bound:
                break
        # 7. no live beam left
        if not live:
            break

    if finished:
        best = max(finished, key=lambda h: (h[0], -h[1]))     # first added on ties
        score, _, tokens, token_lps, length, ended = best
    else:
        # none finished (only when max_new_tokens == 0): the best live beam
        L = len(live[0].tokens) if live else 0
        bi = max(range(len(live)), key=lambda i: (norm_score(live[i].s, L, length_penalty), -i))
        bm = live[bi]
        score, tokens, token_lps, length, ended = (norm_score(bm.s, L, length_penalty), bm.tokens,
                                                   bm.token_lps, L, False)
    return {"tokens": [int(t) for t in tokens], "token_logprobs": [float(x) for x in token_lps],
            "score": float(score), "length": int(length), "eos": bool(ended),
            "min_margin": min_margin}


# -------------------------------------------------------------- tokenizer

def prompt_pieces(language, punctuation=True):
    lang = "<|%s|>" % language
    return ["<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", lang, lang,
            "<|pnc|>" if punctuation else "<|nopnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>"]


def build_prompt(m, language="da", punctuation=True):
    """decoder_start_token_id then the nine special pieces, looked up by
    their exact text. Also checks that SentencePiece encoding of the prompt
    string gives the same ids (docs/MODEL.md)."""
    if language not in m.languages:
        raise ValueError("language %r not in supported_languages %s" % (language, m.languages))
    pieces = prompt_pieces(language, punctuation)
    ids = [m.start_id]
    for p in pieces:
        i = m.sp.piece_to_id(p)
        if m.sp.id_to_piece(i) != p:
            raise ValueError("%s: piece %s not in the vocabulary" % (m.dir, p))
        ids.append(i)
    enc = m.sp.encode("".join(pieces))
    if enc != ids:
        raise ValueError("%s: prompt lookup %s != SentencePiece encoding %s" % (m.dir, ids, enc))
    return ids


def _utf8_char_len(b, i):
    """Length of the valid, complete, shortest-form UTF-8 character that
    starts at b[i], or 0 when there is none."""
    c = b[i]
    n = len(b)
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        need, lo, hi = 1, 0x80, 0xBF
    elif c == 0xE0:
        need, lo, hi = 2, 0xA0, 0xBF
    elif 0xE1 <= c <= 0xEC or 0xEE <= c <= 0xEF:
        need, lo, hi = 2, 0x80, 0xBF
    elif c == 0xED:
        need, lo, hi = 2, 0x80, 0x9F
    elif c == 0xF0:
        need, lo, hi = 3, 0x90, 0xBF
    elif 0xF1 <= c <= 0xF3:
        need, lo, hi = 3, 0x80, 0xBF
    elif c == 0xF4:
        need, lo, hi = 3, 0x80, 0x8F
    else:
        return 0
    if i + need >= n:          # truncated at the end
        return 0
    if not (lo <= b[i + 1] <= hi):
        return 0
    for k in range(2, need + 1):
        if not (0x80 <= b[i + k] <= 0xBF):
            return 0
    return need + 1


def utf8_decode_replace(b):
    """SentencePiece's policy: a byte either starts a valid complete
    character (copied) or becomes one U+FFFD and decoding moves on by one
    byte."""
    out = []
    i = 0
    while i < len(b):
        n = _utf8_char_len(b, i)
        if n == 0:
            out.append("\ufffd")
            i += 1
        else:
            out.append(bytes(b[i:i + n]).decode("utf-8"))
            i += n
    return "".join(out)


def decode_text(m, ids):
    """Keep only normal and byte pieces (out-of-range ids are skipped);
    U+2581 of normal pieces becomes a space, byte pieces <0xNN> are raw
    bytes; the byte string is decoded as UTF-8 with SentencePiece's
    replacement policy (= sp.decode of the kept ids); U+0000 is dropped (the
    engine returns a C string); then Python's str.strip() trims (Unicode
    whitespace, as the Python reference's .strip() does)."""
    buf = bytearray()
    for i in ids:
        i = int(i)
        if i < 0 or i >= m.sp.get_piece_size():
            continue
        if m.sp.is_byte(i):
            buf.append(int(m.sp.id_to_piece(i)[3:5], 16))
        elif m.sp.is_control(i) or m.sp.is_unknown(i) or m.sp.is_unused(i) or _is_user_defined(m, i):
            continue
        else:
            buf += m.sp.id_to_piece(i).replace("\u2581", " ").encode("utf-8")
    return utf8_decode_replace(bytes(buf)).replace("\x00", "").strip()


def _is_user_defined(m, i):
    # the python module has no is_user_defined(): a user-defined piece is
    # matched verbatim by the encoder, normal pieces are never <|...|>-like
    # specials; decide with the piece type from the model proto.
    if not hasattr(m, "_user_defined"):
        m._user_defined = _user_defined_ids(m)
    return i in m._user_defined


def _user_defined_ids(m):
    """Reads piece types from tokenizer.model (protobuf ModelProto):
    field 1 = repeated SentencePiece {1: piece, 2: score, 3: type}."""
    with open(os.path.join(m.dir, "tokenizer.model"), "rb") as f:
        buf = f.read()

    def varint(b, i):
        r, s = 0, 0
        while True:
            c = b[i]
            i += 1
            r |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return r, i

    def fields(b):
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            fn, wt = key >> 3, key & 7
            if wt == 0:
                v, i = varint(b, i)
            elif wt == 1:
                v, i = b[i:i + 8], i + 8
            elif wt == 2:
                ln, i = varint(b, i)
                v, i = b[i:i + ln], i + ln
            elif wt == 5:
                v, i = b[i:i + 4], i + 4
            else:
                raise ValueError("tokenizer.model: bad wire type %d" % wt)
            yield fn, wt, v

    ud = set()
    idx = 0
    for fn, wt, v in fields(buf):
        if fn == 1 and wt == 2:
            typ = 1
            for f2, w2, v2 in fields(v):
                if f2 == 3 and w2 == 0:
                    typ = v2
            if typ == 4:
                ud.add(idx)
            idx += 1
    return ud


# -------------------------------------------------------------- whole pipeline

@torch.no_grad()
def run(m, samples, language="da", punctuation=True, max_new_tokens=None, dither=0.0,
        num_beams=1, length_penalty=1.0):
    """The whole pipeline on 16 kHz mono samples; returns every value of the
    parity dump (plus "gaps", the top-1/top-2 log-prob gap of each greedy
    step, and for beam search "min_margin", see beam_search). num_beams 1
    is greedy; > 1 beam search with length_penalty."""
    feats, T = features(m, samples, dither=dither)
    enc, L = encode(m, feats, T)
    prompt = build_prompt(m, language, punctuation)
    n_new = resolve_max_new_tokens(m, len(prompt), max_new_tokens)
    gaps = []
    g = greedy(m, enc, L, prompt, n_new, return_logprobs0=True, gaps=gaps, return_scores=True)
    res = {
        "gaps": gaps,
        "features": feats.numpy().astype(np.float32),
        "n_valid_frames": int(T),
        "encoder": enc.detach().to(torch.float32).numpy(),
        "enc_len": int(L),
        "logprobs0": g["logprobs0"].detach().to(torch.float32).numpy(),
        "prompt": [int(i) for i in prompt],
    }
    if num_beams > 1:
        b = beam_search(m, enc, L, prompt, n_new, num_beams, length_penalty)
        res["min_margin"] = b["min_margin"]
    else:
        b = g
    res["tokens"] = [int(t) for t in b["tokens"]]
    res["token_logprobs"] = [float(x) for x in b["token_logprobs"]]
    res["score"] = float(b["score"])
    res["text"] = decode_text(m, res["tokens"])
    return res


# -------------------------------------------------------------- long audio

CHUNKING_MODES = ("auto", "energy", "fixed", "none")


def _round_half_up(x):
    """C's llround for x >= 0 (Python's round() rounds half to even)."""
    return int(math.floor(x + 0.5))


def chunk_plan(m, samples, mode="auto", chunk_seconds=None):
    """docs/MODEL.md "Long audio", literally, on the 16 kHz samples: returns the
    chunk boundaries [0, b1, ..., n] (chunk i is [b[i], b[i+1])).
      auto:   up to max_audio_clip_s - overlap_chunk_second seconds in one
              piece, longer audio as energy;
      energy: chunk = round(max_audio_clip_s * sr), context =
              round(overlap_chunk_second * sr), w = min_energy_window_samples;
              from idx = 0: if idx + chunk >= total the last chunk is
              [idx, total); else search [idx + chunk - context, idx + chunk):
              a span of at most w samples is cut at its midpoint, otherwise
              windows of w samples stepping by w (i < span - w) are ranked
              by RMS and the cut is the start of the quietest (the first on
              ties); the next chunk starts at the cut;
      fixed:  a cut every round(chunk_seconds * sr) samples;
      none:   one piece."""
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    n = len(x)
    sr = m.sample_rate
    if mode not in CHUNKING_MODES:
        raise ValueError("chunking %r: not one of %s" % (mode, ", ".join(CHUNKING_MODES)))
    if n == 0:
        return [0]
    single = _round_half_up((m.max_audio_clip_s - m.overlap_chunk_second) * sr)
    if mode == "none" or (mode == "auto" and n <= single):
        return [0, n]
    if mode == "fixed":
        if chunk_seconds is None or not (chunk_seconds > 0):
            raise ValueError("fixed chunking needs chunk_seconds > 0")
        chunk = _round_half_up(chunk_seconds * sr)
    else:
        chunk = _round_half_up(m.max_audio_clip_s * sr)
    context = _round_half_up(m.overlap_chunk_second * sr)
    w = m.min_energy_window
    bounds, idx = [0], 0
    while idx < n:
        if idx + chunk >= n:
            cut = n
        elif mode == "fixed":
            cut = idx + chunk
        else:
            a, span = idx + chunk - context, context
            if span <= w:
                cut = a + span // 2
            else:
                best, best_rms = None, None
                for i in range(0, span - w, w):
                    win = x[a + i:a + i + w].astype(np.float64)
                    rms = math.sqrt(float(np.dot(win, win)) / w)
                    if best_rms is None or rms < best_rms:
                        best, best_rms = i, rms
                cut = a + best
        bounds.append(cut)
        idx = cut
    return bounds


@torch.no_grad()
def run_long(m, samples, chunking="auto", chunk_seconds=None, language="da", punctuation=True,
             max_new_tokens=None, num_beams=1, length_penalty=1.0, dither=0.0):
    """Long audio: the chunk plan, then run() on each chunk; a chunk
    shorter than two hops after the first is skipped (too short to be
    anything but silence to the model), transcripts are trimmed, empty ones
    dropped, and the rest joined with a space (no separator for ja and zh).
    Returns run()'s dict for the first chunk (the dump's tensors) with
    "bounds", "segments" [{start_sample, end_sample, text, tokens,
    token_logprobs, score}] (the chunks with text), and "tokens",
    "token_logprobs" (of every transcribed chunk, those whose text is empty
    included), "score" (summed over the transcribed chunks), "text" (the
    segments' texts joined)."""
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    bounds = chunk_plan(m, x, chunking, chunk_seconds)
    n_chunks = len(bounds) - 1
    first, segments, score, tokens, token_lps = None, [], 0.0, [], []
    for i in range(n_chunks):
        a, b = bounds[i], bounds[i + 1]
        if b - a < 2 * m.hop and n_chunks > 1:
            continue
        r = run(m, x[a:b], language=language, punctuation=punctuation,
                max_new_tokens=max_new_tokens, dither=dither, num_beams=num_beams,
                length_penalty=length_penalty)
        if first is None:
            first = r
        score += r["score"]
        tokens += r["tokens"]
        token_lps += r["token_logprobs"]
        if r["text"]:
            segments.append({"start_sample": a, "end_sample": b, "text": r["text"],
                              "tokens": r["tokens"], "token_logprobs": r["token_logprobs"],
                              "score": r["score"], "min_gap": min(r["gaps"]) if r["gaps"] else None})
    if first is None:
        raise ValueError("audio too short: %d samples" % len(x))
    res = dict(first)
    sep = "" if language in ("ja", "zh") else " "
    res["bounds"] = bounds
    res["segments"] = segments
    res["text"] = sep.join(s["text"] for s in segments)
    res["tokens"] = tokens
    res["token_logprobs"] = token_lps
    res["score"] = score
    return res


def write_dump(res, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "features.npy"), np.ascontiguousarray(res["features"], dtype=np.float32))
    np.save(os.path.join(out_dir, "encoder.npy"), np.ascontiguousarray(res["encoder"], dtype=np.float32))
    np.save(os.path.join(out_dir, "logprobs0.npy"), np.ascontiguousarray(res["logprobs0"], dtype=np.float32))
    keys = ("n_valid_frames", "enc_len", "prompt", "tokens", "token_logprobs", "score", "text",
            "bounds", "segments")
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as f:
        json.dump({k: res[k] for k in keys if k in res}, f, ensure_ascii=False)
        f.write("\n")


# -------------------------------------------------------------- self-test

def load_audio_16k(path, rate=16000):
    """Any fixture audio file -> float32 mono at `rate` via sox (only for
    the self-test: the parity test uses the C tool's own samples.npy)."""
    import subprocess
    r = subprocess.run(["sox", "-V1", path, "-r", str(rate), "-c", "1", "-t", "f32", "-"],
                       stdout=subprocess.PIPE, check=True)
    return np.frombuffer(r.stdout, dtype=np.float32).copy()


def _toy_lp(table, default_v):
    """advance() and first_lp for a toy 'model': table maps a prefix tuple
    to next-token probabilities (uniform when absent)."""
    def lp_of(prefix):
        p = table.get(tuple(prefix), [1.0 / default_v] * default_v)
        return torch.log(torch.tensor(p, dtype=torch.float64))

    def advance(state, tokens):
        return None, lp_of(tokens)
    return lp_of(()), advance


def teacher_forced(m, enc, enc_len, prompt, tokens, with_eos):
    """Log-probs of tokens (and EOS) fed through a fresh decoder at once."""
    seq = list(tokens) + ([m.eos_id] if with_eos else [])
    if not seq:
        return []
    out = log_probs(m, Decoder(m, enc, enc_len).forward(list(prompt) + seq[:-1]))
    rows = out[len(prompt) - 1:]
    return [float(rows[i, t]) for i, t in enumerate(seq)]


def beam_selftest(models, audio, check):
    """Beam search: hand-worked toy cases of the rules in docs/DECODING.md,
    then on the fixture models: N = 1 is greedy, the KV-cache search equals
    the recompute-everything search, the winner's token log-probs and score
    equal a teacher-forced pass and follow norm(s, len)."""
    ln = math.log
    # toy 1: the EOS step counts in the length. V 5, eos 0, N 2.
    table = {(): [.5, .3, .1, .06, .04], (1,): [.9, .04, .03, .02, .01]}
    first, adv = _toy_lp(table, 5)
    r = beam_search_core(None, first, adv, 0, 10, 2, 1.0)
    want = (ln(.3) + ln(.9)) / 2
    check(r["tokens"] == [1] and r["eos"] and r["length"] == 2 and abs(r["score"] - want) < 1e-12,
          "beam toy 1 (lp 1.0): [1]+EOS wins with (ln .3 + ln .9) / 2: %s" % r)
    r = beam_search_core(None, first, adv, 0, 10, 2, 0.5)
    check(r["tokens"] == [] and r["eos"] and r["length"] == 1 and abs(r["score"] - ln(.5)) < 1e-12,
          "beam toy 1 (lp 0.5): immediate EOS wins with ln .5: %s" % r)
    # toy 2: an EOS candidate at rank >= N is skipped; at the last step the
    # live beams finish. V 4, eos 0, N 2, max_new 2.
    table = {(): [.05, .5, .4, .05], (1,): [.3, .6, .05, .05], (2,): [.5, .1, .3, .1]}
    first, adv = _toy_lp(table, 4)
    tr = []
    r = beam_search_core(None, first, adv, 0, 2, 2, 1.0, trace=tr)
    acts = [(w[2], w[3], w[4]) for w in tr[1]["walked"]]
    check(acts == [(1, 0, "live"), (0, 1, "finish"), (0, 0, "skip"), (2, 1, "live")],
          "beam toy 2: step 1 walks A+1 live, B+EOS finish, A+EOS skipped (rank 2), B+2 live: %s" % acts)
    fin = sorted((h[1], h[2]) for h in tr[1]["finished"])
    check(fin == [([1, 1], 2), ([2], 2)] and r["tokens"] == [1, 1] and not r["eos"]
          and abs(r["score"] - (ln(.5) + ln(.6)) / 2) < 1e-12,
          "beam toy 2: the last step finishes the live beams, [1, 1] wins: %s %s" % (fin, r))
    # toy 3: ties go to the lower token id. V 4 uniform, eos 3, N 1, 3 steps
    first, adv = _toy_lp({}, 4)
    r = beam_search_core(None, first, adv, 3, 3, 1, 1.0)
    check(r["tokens"] == [0, 0, 0] and abs(r["score"] - ln(.25)) < 1e-12,
          "beam toy 3: ties take the lowest id: %s" % r)
    # toy 4: max_new 0 is the empty sequence with score 0
    r = beam_search_core(None, first, adv, 3, 0, 3, 1.0)
    check(r["tokens"] == [] and r["score"] == 0.0, "beam toy 4: max_new 0: %s" % r)

    for name, m in models.items():
        for an, samples in audio[:2]:
            feats, T = features(m, samples)
            enc, L = encode(m, feats, T)
            prompt = build_prompt(m, "da", True)
            n_new = resolve_max_new_tokens(m, len(prompt), None)
            g = greedy(m, enc, L, prompt, n_new, return_scores=True)
            tf = teacher_forced(m, enc, L, prompt, g["tokens"], g["eos"])
            ok = (len(g["token_logprobs"]) == len(g["tokens"])
                  and np.allclose(g["token_logprobs"], tf[:len(g["tokens"])], atol=1e-4)
                  and abs(g["score"] - sum(tf)) < 1e-4)
            check(ok, "%s %s: greedy token log-probs and score (%.4f, %d tokens, eos %d) = teacher-forced"
                  % (name, an, g["score"], len(g["tokens"]), g["eos"]))
            b1 = beam_search(m, enc, L, prompt, n_new, 1, 1.0)
            glen = len(g["tokens"]) + g["eos"]
            check(b1["tokens"] == g["tokens"] and abs(b1["score"] - g["score"] / max(1, glen)) < 1e-9,
                  "%s %s: beam N=1 == greedy" % (name, an))
            for N, lpen, mx in ((2, 0.5, n_new), (4, 2.0, n_new), (3, 1.0, 3), (5, 1.0, 1)):
                b = beam_search(m, enc, L, prompt, mx, N, lpen)
                br = beam_search(m, enc, L, prompt, mx, N, lpen, recompute=True)
                tf = teacher_forced(m, enc, L, prompt, b["tokens"], b["eos"])
                ok = (b["tokens"] == br["tokens"] and abs(b["score"] - br["score"]) < 1e-5
                      and b["length"] == len(b["tokens"]) + b["eos"]
                      and (b["eos"] or len(b["tokens"]) == mx)
                      and np.allclose(b["token_logprobs"], tf[:len(b["tokens"])], atol=1e-4)
                      and abs(b["score"] - norm_score(sum(tf), b["length"], lpen)) < 1e-4)
                check(ok, "%s %s: beam N=%d lp=%g max_new=%d: %d tokens eos %d score %.4f margin %.2g; "
                      "cached == recomputed, score = norm(teacher-forced sum)"
                      % (name, an, N, lpen, mx, len(b["tokens"]), b["eos"], b["score"], b["min_margin"]))


def selftest(fixtures):
    """Checks the reference and the fixtures: rel-shift, UTF-8 policy,
    prompts, weights of the model variants, and a run of every model on
    every audio file (shapes, finite values, non-trivial decoding, top-2
    gaps, float32 == float64 tokens)."""
    failures = []

    def check(cond, msg):
        print(("ok   " if cond else "FAIL ") + msg)
        if not cond:
            failures.append(msg)

    # rel-shift: literal pad/reshape == index formula
    g = torch.Generator().manual_seed(1)
    for n in (1, 2, 3, 7, 16):
        bd = torch.randn(3, n, 2 * n - 1, generator=g, dtype=torch.float64)
        check(torch.equal(rel_shift(bd), rel_shift_index(bd)), "rel_shift == bd[i, n-1-i+j] for n=%d" % n)

    with open(os.path.join(fixtures, "manifest.json")) as f:
        man = json.load(f)
    models = {mi["name"]: load_model(os.path.join(fixtures, mi["path"])) for mi in man["models"]}

    # decode_text equals SentencePiece's own decoding of normal/byte pieces
    for name, m in models.items():
        sp = m.sp
        rng = np.random.RandomState(5)
        keep = [i for i in range(sp.get_piece_size())
                if sp.is_byte(i) or not (sp.is_control(i) or sp.is_unknown(i)
                                         or sp.is_unused(i) or _is_user_defined(m, i))]
        bytes_only = [i for i in keep if sp.is_byte(i)]
        bad = None
        for trial in range(400):
            pool = bytes_only if trial % 2 else keep
            ids = [int(pool[j]) for j in rng.randint(0, len(pool), size=rng.randint(1, 12))]
            if decode_text(m, ids) != sp.decode(ids).replace("\x00", "").strip():
                bad = ids
                break
        check(bad is None, "%s: decode_text == SentencePiece decode on random normal/byte ids %s"
              % (name, "" if bad is None else bad))
        specials = [i for i in range(sp.get_piece_size()) if i not in set(keep)]
        check(decode_text(m, specials) == "", "%s: control/user-defined/unknown pieces decode to nothing" % name)

    # prompts: lookup == SentencePiece encoding (build_prompt raises otherwise)
    for name, m in models.items():
        for lang in m.languages:
            for pnc in (True, False):
                ids = build_prompt(m, lang, pnc)
                ok = len(ids) == 10 and ids[0] == m.start_id and m.sp.id_to_piece(ids[0]) == "\u2581"
                check(ok, "%s prompt %s pnc=%d: %s" % (name, lang, pnc, ids))
        check(m.sp.id_to_piece(m.eos_id) == "<|endoftext|>", "%s eos %d is <|endoftext|>" % (name, m.eos_id))

    # model variants: shards == single file, tied == explicit, bf16 == rounded f32
    if "multi-f32" in models and "multi-sharded" in models:
        a, b = models["multi-f32"].w, models["multi-sharded"].w
        check(a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "multi-sharded == multi-f32")
    for name, m in models.items():
        tied = "log_softmax.mlp.layer0.weight" not in m.w
        same = torch.equal(m.cls_w, m.w["transf_decoder._embedding.token_embedding.weight"])
        check(same, "%s classifier %s equals the embedding" % (name, "(tied)" if tied else "(explicit)"))
    for f32, bf in (("tiny-f32", "tiny-bf16"), ("multi-f32", "multi-bf16")):
        if f32 in models and bf in models:
            a, b = models[f32].w, models[bf].w
            ok = all(torch.equal(torch.from_numpy(round_to_bf16(a[k].numpy())), b[k]) for k in a if k in b)
            check(ok, "%s == bf16-rounded %s" % (bf, f32))

    # every model on every audio file
    audio = [(x["name"], load_audio_16k(os.path.join(fixtures, x["path"]))) for x in man["audio"]]
    for mi in man["models"]:
        name, m = mi["name"], models[mi["name"]]
        seqs, long_runs, worst_gap = set(), 0, float("inf")
        for an, samples in audio:
            res = run(m, samples, language="da")
            T = len(samples) // m.hop
            nf = res["features"].shape[0]
            ok = (res["n_valid_frames"] == T and nf % m.pad_to == 0 and T + 1 <= nf < T + 1 + m.pad_to
                  and res["features"].shape[1] == m.n_mels and np.isfinite(res["features"]).all()
                  and np.all(res["features"][T:] == 0)
                  and res["encoder"].shape == (nf // m.sub_factor, m.dec_hidden)
                  and np.isfinite(res["encoder"]).all()
                  and res["logprobs0"].shape == (m.vocab_size,) and np.isfinite(res["logprobs0"]).all()
                  and abs(float(np.logaddexp.reduce(res["logprobs0"].astype(np.float64)))) < 1e-4)
            check(ok, "%s %s: T=%d frames=%d enc_len=%d tokens=%d min gap %.4f text=%r"
                  % (name, an, T, nf, res["enc_len"], len(res["tokens"]),
                     min(res["gaps"]) if res["gaps"] else float("nan"), res["text"][:40]))
            seqs.add(tuple(res["tokens"]))
            long_runs += len(res["tokens"]) >= 3
            worst_gap = min([worst_gap] + res["gaps"])
        check(long_runs * 2 > len(audio) and len(seqs) * 2 > len(audio),
              "%s: %d of %d cases decode >= 3 tokens, %d distinct outputs"
              % (name, long_runs, len(audio), len(seqs)))
        check(worst_gap > 1e-3, "%s: smallest top-1/top-2 log-prob gap %.4f > 1e-3" % (name, worst_gap))
        # float32 reference == float64 reference on the first file
        m64 = load_model(os.path.join(fixtures, mi["path"]), torch.float64)
        r32, r64 = run(m, audio[0][1]), run(m64, audio[0][1])
        d = float(np.abs(r32["logprobs0"] - r64["logprobs0"]).max())
        check(r32["tokens"] == r64["tokens"] and d < 1e-4,
              "%s: float32 == float64 reference (logprobs0 diff %.2e)" % (name, d))
    beam_selftest(models, audio, check)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model")
    ap.add_argument("--samples")
    ap.add_argument("--out")
    ap.add_argument("--language", default="da")
    ap.add_argument("--no-punctuation", action="store_true")
    ap.add_argument("--max-new-tokens", type=int, default=None)
    ap.add_argument("--dither", type=float, default=0.0)
    ap.add_argument("--beams", type=int, default=1, help="beam count (1: greedy)")
    ap.add_argument("--length-penalty", type=float, default=1.0, help="beam search length penalty (> 0)")
    ap.add_argument("--chunking", choices=CHUNKING_MODES, default=None,
                    help="long audio (docs/MODEL.md \"Long audio\"); without it the samples are one piece")
    ap.add_argument("--chunk-seconds", type=float, default=None, help="--chunking fixed: chunk length")
    ap.add_argument("--float64", action="store_true", help="run encoder and decoder in float64 (debugging)")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--fixtures", default=os.environ.get("HV_FIXTURES"))
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if a.selftest:
        if not a.fixtures:
            ap.error("--selftest needs --fixtures DIR or HV_FIXTURES")
        return selftest(a.fixtures)
    if not (a.model and a.samples and a.out):
        ap.error("--model, --samples and --out are required")
    if a.beams < 1:
        ap.error("--beams must be >= 1")
    if not (math.isfinite(a.length_penalty) and a.length_penalty > 0):
        ap.error("--length-penalty must be finite and > 0")
    m = load_model(a.model, torch.float64 if a.float64 else torch.float32)
    samples = np.load(a.samples).astype(np.float32).reshape(-1)
    if a.chunking == "fixed" and not (a.chunk_seconds is not None and a.chunk_seconds > 0):
        ap.error("--chunking fixed needs --chunk-seconds S (S > 0)")
    with torch.no_grad():
        if a.chunking is not None:
            res = run_long(m, samples, chunking=a.chunking, chunk_seconds=a.chunk_seconds,
                           language=a.language, punctuation=not a.no_punctuation,
                           max_new_tokens=a.max_new_tokens, num_beams=a.beams,
                           length_penalty=a.length_penalty, dither=a.dither)
        else:
            res = run(m, samples, language=a.language, punctuation=not a.no_punctuation,
                      max_new_tokens=a.max_new_tokens, dither=a.dither,
                      num_beams=a.beams, length_penalty=a.length_penalty)
    write_dump(res, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
