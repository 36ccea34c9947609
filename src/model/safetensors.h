/* Read-only access to safetensors checkpoints, single file or sharded.
 * Files are mmap'ed; every header field is validated before use. */
#ifndef HV_SAFETENSORS_H
#define HV_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef enum hv_dtype {
    HV_DT_F32,
    HV_DT_F16,
    HV_DT_BF16,
    /* present in files, never used for compute */
    HV_DT_F64,
    HV_DT_I64,
    HV_DT_I32,
    HV_DT_I16,
    HV_DT_I8,
    HV_DT_U8,
    HV_DT_BOOL
} hv_dtype;

#define HV_ST_MAX_DIMS 8

/* A pre-quantized tensor (docs/QUANTIZE.md) is stored as a U8 tensor of
 * its block bytes and named in the file's "__metadata__" entry
 * "hviske.quant" with its block format and logical shape: once opened, its
 * ndim, shape and numel are the logical ones, quant its block type (q8_0,
 * q4_0), x8 whether the blocks are interleaved by 8 rows ("q8_0x8",
 * "q4_0x8": matmul_impl.h's x8 layout), dtype stays U8 and nbytes the
 * stored length. For every other tensor quant is HV_WEIGHTS_AUTO. */
typedef struct hv_st_tensor {
    char *name; /* owned */
    hv_dtype dtype;
    hv_weight_type quant; /* HV_WEIGHTS_Q8_0, _Q4_0, or AUTO: not quantized */
    int x8;               /* quantized: 1 = x8 layout, 0 = row by row */
    int ndim;
    int64_t shape[HV_ST_MAX_DIMS];
    int64_t numel;
    const void *data; /* inside the mapping; may be unaligned */
    size_t nbytes;
    int file; /* index into the file list */
} hv_st_tensor;

typedef struct hv_st_file {
    char *path; /* owned */
    void *map;  /* whole file */
    size_t size;
} hv_st_file;

typedef struct hv_safetensors {
    hv_st_file *files;
    int n_files;
    hv_st_tensor *tensors; /* sorted by name */
    int n_tensors;
} hv_safetensors;

/* Opens model_dir/model.safetensors, or the shards listed in
 * model_dir/model.safetensors.index.json when that exists ("weight_map":
 * tensor -> plain file name in model_dir; each shard is opened once, every
 * indexed tensor must be in its shard, a tensor in two shards is an error).
 * Every header is validated (dtypes, shapes, offsets inside the data,
 * byte lengths, no overlaps, no duplicate names; for quantized tensors the
 * metadata, the block format, the byte length for the logical shape and
 * that every block scale is finite); messages name the file.
 * On failure st is left empty (nothing to close). */
hv_status hv_st_open_dir(hv_safetensors *st, const char *model_dir, hv_error *e);

/* Opens one file. */
hv_status hv_st_open_file(hv_safetensors *st, const char *path, hv_error *e);

void hv_st_close(hv_safetensors *st);

/* Drops the tensor's whole pages from this process's memory (they are
 * read back from the file if touched again): for tensors converted at load,
 * so that the mapping and the converted copy are not both resident. */
void hv_st_release(const hv_st_tensor *t);

/* NULL when absent. */
const hv_st_tensor *hv_st_find(const hv_safetensors *st, const char *name);

const char *hv_dtype_name(hv_dtype dt);
size_t hv_dtype_size(hv_dtype dt);

/* Converts an F32/F16/BF16 or quantized tensor to n = numel floats at dst
 * (quantized: widened exactly). Returns HV_ERR_UNSUPPORTED for other
 * dtypes. */
hv_status hv_st_to_f32(const hv_st_tensor *t, float *dst, hv_error *e);

#endif
