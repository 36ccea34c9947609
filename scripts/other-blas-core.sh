#!/usr/bin/env bash
# Prints an OpenBLAS core type (OPENBLAS_CORETYPE) whose kernels this CPU
# runs but OpenBLAS would not pick by itself: a second kernel family for
# the numerics-sensitive tests (docs/TESTING.md, "A second BLAS kernel
# family"). From /proc/cpuinfo's flags:
#   AVX-512 (avx512f)  -> Haswell     (AVX2/FMA kernels, not SkylakeX's)
#   AVX2 only          -> Sandybridge (AVX kernels, not Haswell's/Zen's)
#   AVX only           -> Nehalem     (SSE kernels)
#   otherwise          -> Prescott    (SSE3 kernels)
set -euo pipefail
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $flags " == *" $1 "* ]]; }
if has avx512f; then
  echo Haswell
elif has avx2; then
  echo Sandybridge
elif has avx; then
  echo Nehalem
else
  echo Prescott
fi
