#!/usr/bin/env python3
"""Oracle for tests/unit/test_frontend.c: the symmetric Hann window and the
Slaney mel filterbank, computed with numpy exactly as torch.hann_window
(periodic=False) and librosa.filters.mel(norm='slaney', htk=False) define
them (librosa is not installed here, so its algorithm is restated below).

Usage: mel_oracle.py SR N_FFT N_MELS WIN_LENGTH
Prints WIN_LENGTH window values, then N_MELS x (N_FFT/2+1) filterbank
values (row-major), one float32 per line (%.9g round-trips float32).
"""
import sys

import numpy as np


def hz_to_mel(f):
    f = np.asanyarray(f, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    safe = np.maximum(f, 1e-300)  # np.where evaluates both branches
    return np.where(f >= min_log_hz,
                    min_log_mel + np.log(safe / min_log_hz) / logstep, mels)


def mel_to_hz(m):
    m = np.asanyarray(m, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel,
                    min_log_hz * np.exp(logstep * (m - min_log_mel)),
                    f_sp * m)


def slaney_mel(sr, n_fft, n_mels, fmin=0.0, fmax=None):
    fmax = float(sr) / 2 if fmax is None else fmax
    weights = np.zeros((n_mels, 1 + n_fft // 2), dtype=np.float32)
    fftfreqs = np.fft.rfftfreq(n=n_fft, d=1.0 / sr)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, np.newaxis]
    return weights


def hann_symmetric(n):
    if n == 1:
        return np.ones(1, dtype=np.float32)
    i = np.arange(n, dtype=np.float64)
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * i / (n - 1))).astype(np.float32)


def main():
    sr, n_fft, n_mels, win = (int(a) for a in sys.argv[1:5])
    out = [hann_symmetric(win), slaney_mel(sr, n_fft, n_mels).ravel()]
    sys.stdout.write("".join("%.9g\n" % v for a in out for v in a.tolist()))


if __name__ == "__main__":
    main()
