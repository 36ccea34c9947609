#!/usr/bin/env python3
"""Oracle for tests/unit/test_torch_randn.c: PyTorch's own

    g = torch.Generator().manual_seed(SEED); torch.randn(N, generator=g)

Usage: torch_randn_oracle.py SEED:N [SEED:N ...]
Prints one line, the CPU capability torch's kernels run with (from
torch.__config__.show(), e.g. "AVX2"), then the values of every request in
turn as little-endian float32 bytes. Run it with ATEN_CPU_CAPABILITY=avx2
to get the AVX2 kernels on a CPU that has more.
"""
import re
import sys

import torch


def main():
    m = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    out = sys.stdout.buffer
    out.write(((m.group(1) if m else "unknown") + "\n").encode())
    for arg in sys.argv[1:]:
        seed, n = (int(v) for v in arg.split(":"))
        g = torch.Generator().manual_seed(seed)
        out.write(torch.randn(n, generator=g).numpy().astype("<f4").tobytes())
    out.flush()


if __name__ == "__main__":
    main()
