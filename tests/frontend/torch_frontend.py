#!/usr/bin/env python3
"""Cross-check for tests/unit/test_frontend.c: the NeMo-style frontend of
docs/MODEL.md ("Frontend", dither 0) written with torch.stft, the way the
PyTorch reference computes it.

Usage: torch_frontend.py SAMPLES FEATURES [SR N_FFT HOP WIN N_MELS PAD_TO]
Reads raw float32 samples, writes raw float32 features [frames x n_mels].
Exits 77 when torch is missing (the test then skips this check).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mel_oracle import slaney_mel  # noqa: E402

try:
    import torch
except ImportError:
    sys.exit(77)


def features(x, sr=16000, n_fft=512, hop=160, win=400, n_mels=128, pad_to=16):
    n = x.shape[0]
    x = torch.from_numpy(x)[None]
    x = torch.cat((x[:, :1], x[:, 1:] - 0.97 * x[:, :-1]), dim=1)
    window = torch.hann_window(win, periodic=False, dtype=torch.float32)
    s = torch.stft(x, n_fft=n_fft, hop_length=hop, win_length=win,
                   window=window, center=True, pad_mode="constant",
                   return_complex=True)
    p = torch.sqrt(torch.view_as_real(s).pow(2).sum(-1)).pow(2)
    fb = torch.from_numpy(slaney_mel(sr, n_fft, n_mels))
    m = torch.log(torch.matmul(fb, p) + 2 ** -24)       # [1, n_mels, frames]
    T = n // hop
    v = m[:, :, :T]
    mean = v.sum(2) / T
    std = torch.sqrt(((v - mean[:, :, None]) ** 2).sum(2) / (T - 1)) + 1e-5
    m = (m - mean[:, :, None]) / std[:, :, None]
    m[:, :, T:] = 0
    rem = m.shape[2] % pad_to
    if rem:
        m = torch.nn.functional.pad(m, (0, pad_to - rem))
    return m[0].T.contiguous().numpy()


def main():
    x = np.fromfile(sys.argv[1], dtype=np.float32)
    args = [int(a) for a in sys.argv[3:9]]
    features(x, *args).astype(np.float32).tofile(sys.argv[2])


if __name__ == "__main__":
    main()
