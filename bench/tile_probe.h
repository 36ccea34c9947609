/* The rate of the CPU's bf16 tile unit (Intel AMX), for hviske-bench
 * --peak: the ceiling the matrix products of the compute mode can reach on
 * such a CPU, beside oneDNN's matmul on the encoder's shapes.
 *
 * The probe multiplies tiles that stay in the tile registers (no memory
 * traffic in the timed loop): four independent TDPBF16PS per iteration,
 * 16 x 16 f32 sums of 32-term bf16 dot products each, on every thread at
 * once. Its sums are checked against the exact result, so a figure is
 * only given for arithmetic that was done.
 *
 * It runs in a child process: an instruction the CPU or the kernel
 * refuses ends the child, not the benchmark. */
#ifndef HV_TOOLS_TILE_PROBE_H
#define HV_TOOLS_TILE_PROBE_H

#include <stddef.h>

/* The bf16 tile rate of `threads` threads together, in GFLOP/s (best of
 * three timings), or 0 with the reason in why (always NUL-terminated):
 * the CPU has no AMX-BF16, the kernel does not grant the tile state, the
 * sums came out wrong, or the probe's process died. */
double hvt_tile_peak_gflops(int threads, char *why, size_t size);

/* fn(arg, why, size) run in a child process; its value, or 0 with the
 * reason in why when it gave one or when the child did not finish
 * (killed by a signal, or exited without an answer). */
typedef double (*hvt_child_fn)(void *arg, char *why, size_t size);
double hvt_run_in_child(hvt_child_fn fn, void *arg, char *why, size_t size);

#endif
