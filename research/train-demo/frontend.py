"""The docs/MODEL.md frontend, mirrored line by line from tests/reference/reference.py
(features(); float64 from the float32 samples, Hann window and Slaney
filterbank rounded to bf16, the tensors shipped in the checkpoint as
preprocessor.featurizer.window / .fb).  check_export.py verifies that the
two agree bit for bit."""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# bf16 rounding and the Slaney filterbank come from the parity oracle itself
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "reference"))
from reference import round_to_bf16, slaney_mel_filterbank  # noqa: E402

SR, N_FFT, HOP, WIN, N_MELS, PAD_TO = 16000, 512, 160, 400, 128, 16
LOG_GUARD = 2.0 ** -24
NORM_EPS = 1e-5
PREEMPH = 0.97
DITHER = 1e-5


def window_bf16():
    """float32 values of the bf16-rounded symmetric Hann window [400]."""
    hann = torch.hann_window(WIN, periodic=False, dtype=torch.float64).numpy()
    return round_to_bf16(hann)


def fb_bf16():
    """float32 values of the bf16-rounded Slaney filterbank [128, 257]."""
    return round_to_bf16(slaney_mel_filterbank(SR, N_FFT, N_MELS))


class Frontend:
    def __init__(self):
        self.window = torch.from_numpy(window_bf16()).to(torch.float64)
        self.fb = torch.from_numpy(fb_bf16()).to(torch.float64)

    def _logmel(self, samples, dither=0.0, seed=0):
        """(log(mel + guard) [128, frames] float64, T valid frames)."""
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
        return torch.log(mel + LOG_GUARD), T

    def raw_logmel(self, samples):
        """The T valid frames' log-mel before the per-feature normalisation
        [T, 128] float64 numpy, no dither (the engine's logmel output of
        hv_frontend_compute, for diarize's voice signatures)."""
        lm, T = self._logmel(samples)
        return lm[:, :T].t().contiguous().numpy()

    def __call__(self, samples, dither=0.0, seed=0, pad=True):
        """Returns (features [frames, 128] float32 numpy, T). With pad=False
        only the T valid frames are returned (the rest is zero anyway)."""
        lm, T = self._logmel(samples, dither, seed)
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
