"""The MODEL.md frontend, mirrored line by line from tests/reference/reference.py
(features(); float64 from the float32 samples, Hann window and Slaney
filterbank rounded to bf16, the tensors shipped in the checkpoint as
preprocessor.featurizer.window / .fb).  check_export.py verifies that the
two agree bit for bit."""

import math

import numpy as np
import torch
import torch.nn.functional as F

SR, N_FFT, HOP, WIN, N_MELS, PAD_TO = 16000, 512, 160, 400, 128, 16
LOG_GUARD = 2.0 ** -24
NORM_EPS = 1e-5
PREEMPH = 0.97
DITHER = 1e-5


def _bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def round_to_bf16(x):
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return _bf16_bits_to_f32(bits.astype(np.uint16))


def _hz_to_mel(f):
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, f / f_sp)


def _mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def slaney_mel_filterbank(sr=SR, n_fft=N_FFT, n_mels=N_MELS, fmin=0.0, fmax=None):
    if fmax is None:
        fmax = sr / 2.0
    n_bins = n_fft // 2 + 1
    fftfreqs = np.linspace(0, sr / 2.0, n_bins)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
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


def window_bf16():
    """float32 values of the bf16-rounded symmetric Hann window [400]."""
    hann = torch.hann_window(WIN, periodic=False, dtype=torch.float64).numpy()
    return round_to_bf16(hann)


def fb_bf16():
    """float32 values of the bf16-rounded Slaney filterbank [128, 257]."""
    return round_to_bf16(slaney_mel_filterbank())


class Frontend:
    def __init__(self):
        self.window = torch.from_numpy(window_bf16()).to(torch.float64)
        self.fb = torch.from_numpy(fb_bf16()).to(torch.float64)

    def __call__(self, samples, dither=0.0, seed=0, pad=True):
        """Returns (features [frames, 128] float32 numpy, T). With pad=False
        only the T valid frames are returned (the rest is zero anyway)."""
        x = torch.from_numpy(np.asarray(samples, dtype=np.float32).reshape(-1).copy()).to(torch.float64)
        n = x.numel()
        T = n // HOP
        if T < 2:
            raise ValueError("audio too short: %d samples" % n)
        if dither > 0:
            g = torch.Generator().manual_seed(seed)
            x = x + dither * torch.randn(n, generator=g, dtype=torch.float64)
        y = torch.cat([x[:1], x[1:] - PREEMPH * x[:-1]])
        X = torch.stft(y, n_fft=N_FFT, hop_length=HOP, win_length=WIN, window=self.window, center=True,
                       pad_mode="constant", normalized=False, onesided=True, return_complex=True)
        P = X.real ** 2 + X.imag ** 2
        mel = self.fb @ P
        lm = torch.log(mel + LOG_GUARD)
        valid = lm[:, :T]
        mean = valid.sum(dim=1, keepdim=True) / T
        var = ((valid - mean) ** 2).sum(dim=1, keepdim=True) / (T - 1)
        std = torch.sqrt(var) + NORM_EPS
        out = (lm - mean) / std
        n_frames = out.shape[1]
        out[:, T:] = 0.0
        if not pad:
            return out[:, :T].t().contiguous().to(torch.float32).numpy(), T
        p = (-n_frames) % PAD_TO
        out = F.pad(out, (0, p))
        return out.t().contiguous().to(torch.float32).numpy(), T
