/* The arithmetic peak of the instruction set the matrix kernels use, for
 * hviske-bench --peak: the kernel table's own probe (hv_mm_kernels'
 * peak_macs: its micro-kernels' instructions on registers alone, f32 FMAs
 * or the int8 GEMM's) on every thread at once. Unlike OpenBLAS sgemm,
 * whose kernels depend on whether OpenBLAS knows the CPU model, this is
 * the ceiling of the code that runs. */
#ifndef HV_TOOLS_ISA_PROBE_H
#define HV_TOOLS_ISA_PROBE_H

#include <stddef.h>

/* The rate of `threads` threads running the best kernel table's probe
 * together (int8: the int8 GEMM's instructions, else f32 FMAs), in
 * GFLOP/s (2 per multiply-accumulate; best of three timings after an
 * untimed one), in a child process (tile_probe.h), or 0 with the reason
 * in why. */
double hvt_isa_peak_gflops(int threads, int int8, char *why, size_t size);

#endif
