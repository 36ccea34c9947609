/*
 * Diagnostics of a loaded model for benchmarks (hviske-bench) and the
 * white-box tests: which kernels run it, the rate they reach, and how its
 * weight bytes split. Not part of the public API (include/hviske.h): the
 * shared library does not export them, and they may change with the
 * kernels.
 */
#ifndef HV_DIAG_H
#define HV_DIAG_H

#include <stddef.h>

#include "hviske.h"

/* Which kernels run the encoder's weight products, for reports: "onednn "
 * and the name of the implementation oneDNN runs the encoder's
 * feed-forward with, a chunk of 256 frames ("onednn
 * brg:avx512_core_amx_bf16"), or "ours avx2" / "ours scalar". Static to
 * the model. */
const char *hv_model_gemm(const hv_model *model);

/* The rate, in GFLOP/s, of the kernels hv_model_gemm names in the model's
 * compute mode, on the encoder's weight matrices (those of its first
 * layer, weighted as a layer runs them) with n_rows activation rows, over
 * a pool of n_threads threads (0: all cores): best of 3 timings per
 * shape. For benchmarks (hviske-bench --peak); 0 when it cannot be
 * measured (out of memory). Takes a few times the encoder's time for one
 * layer of n_rows frames. */
double hv_model_gemm_peak(const hv_model *model, int n_threads, int n_rows);

/* Of hv_model_weight_bytes, the bytes of bf16 matrices widened from q8_0/q4_0 at load (0
 * when none were). */
size_t hv_model_widened_weight_bytes(const hv_model *model);
/* Of hv_model_weight_bytes, the bytes one decoder step reads (every decoder matrix but the
 * cross-attention key/value projections, which run once per chunk). */
size_t hv_model_decoder_weight_bytes(const hv_model *model);

#endif
