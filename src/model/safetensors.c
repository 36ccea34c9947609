/* safetensors reader: mmap each file, validate the whole header before any
 * tensor is handed out.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
 *    "__metadata__": {...}}
 * then the data section; offsets are relative to its start. Every file is
 * hostile: lengths, offsets, shapes and names are checked so that no tensor
 * can point outside its mapping or alias another. */
/* madvise(MADV_DONTNEED) is not in POSIX: glibc's posix_madvise makes
 * POSIX_MADV_DONTNEED a no-op. */
#define _DEFAULT_SOURCE
#include "model/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/half.h"
#include "kernels/matmul_impl.h"
#include "util/file.h"

#define MAX_HEADER (100u << 20) /* real headers are a few MiB at most */
#define MAX_INDEX  (100u << 20)
#define MAX_DIM    (1LL << 48) /* no tensor dimension is larger */

static const struct {
    const char *name;
    size_t size;
} DTYPES[] = {
    [HV_DT_F32] = {"F32", 4},   [HV_DT_F16] = {"F16", 2}, [HV_DT_BF16] = {"BF16", 2},
    [HV_DT_F64] = {"F64", 8},   [HV_DT_I64] = {"I64", 8}, [HV_DT_I32] = {"I32", 4},
    [HV_DT_I16] = {"I16", 2},   [HV_DT_I8] = {"I8", 1},   [HV_DT_U8] = {"U8", 1},
    [HV_DT_BOOL] = {"BOOL", 1},
};
#define N_DTYPES ((int)(sizeof DTYPES / sizeof *DTYPES))

/* Valid safetensors dtypes that hviske does not read. */
static const char *OTHER_DTYPES[] = {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "C64"};

const char *hv_dtype_name(hv_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? DTYPES[dt].name : "?";
}

size_t hv_dtype_size(hv_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? DTYPES[dt].size : 0;
}

static uint32_t rd32(const uint8_t *p) {
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

hv_status hv_st_to_f32(const hv_st_tensor *t, float *dst, hv_error *e) {
    const uint8_t *p = t->data;
    size_t n = (size_t)t->numel;
    if (t->quant != HV_WEIGHTS_AUTO) {
        /* blocks hold uint16 scales: read them from an aligned copy when
         * the file's offset is odd */
        void *copy = NULL;
        const void *blocks = p;
        if ((uintptr_t)p % 2) {
            if (!(copy = malloc(t->nbytes)))
                return hv_err(e, HV_ERR_NOMEM, "tensor %s: out of memory", t->name);
            memcpy(copy, p, t->nbytes);
            blocks = copy;
        }
        int64_t rows = t->shape[0];
        hv_mat m = {.type = t->quant,
                    .rows = (int)rows,
                    .cols = (int)(t->numel / rows),
                    .data = blocks,
                    .x8 = t->x8};
        hv_mat_widen(hv_mm_best(), &m, 0, 0, (long)t->numel, dst);
        free(copy);
        return HV_OK;
    }
    switch (t->dtype) {
        case HV_DT_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            if (n) memcpy(dst, p, n * 4); /* the file's byte order is ours */
            return HV_OK;
#endif
            for (size_t i = 0; i < n; i++) {
                uint32_t b = rd32(p + 4 * i);
                memcpy(dst + i, &b, 4);
            }
            return HV_OK;
        case HV_DT_F16:
            for (size_t i = 0; i < n; i++)
                dst[i] = hv_f16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
            return HV_OK;
        case HV_DT_BF16:
            for (size_t i = 0; i < n; i++)
                dst[i] = hv_bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
            return HV_OK;
        default:
            return hv_err(e, HV_ERR_UNSUPPORTED, "tensor %s: dtype %s cannot be converted to F32",
                          t->name, hv_dtype_name(t->dtype));
    }
}

/* ----------------------------------------------------------- helpers */

/* Appends one slot to st->tensors (zeroed); NULL when out of memory. */
static hv_st_tensor *push_tensor(hv_safetensors *st, int *cap) {
    if (st->n_tensors == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        hv_st_tensor *t = realloc(st->tensors, (size_t)nc * sizeof *t);
        if (!t) return NULL;
        st->tensors = t;
        *cap = nc;
    }
    hv_st_tensor *t = &st->tensors[st->n_tensors++];
    memset(t, 0, sizeof *t);
    return t;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const hv_st_tensor *)a)->name, ((const hv_st_tensor *)b)->name);
}

/* An integral JSON number in [0, max]. */
static int json_uint(const cJSON *it, double max, int64_t *out) {
    if (!cJSON_IsNumber(it)) return 0;
    double v = it->valuedouble;
    if (!(v >= 0 && v <= max) || v != floor(v)) return 0;
    *out = (int64_t)v;
    return 1;
}

/* ------------------------------------------------------ one file */

/* Maps path read-only; the mapping is recorded in st so close frees it. */
static hv_status map_file(hv_safetensors *st, const char *path, hv_error *e) {
    hv_st_file *files = realloc(st->files, (st->n_files + 1) * sizeof *files);
    if (!files) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    st->files = files;
    hv_st_file *f = &files[st->n_files];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    st->n_files++;

    int fd = hv_open_file(path);
    if (fd < 0) return hv_err(e, HV_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    hv_status s = HV_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        s = hv_err(e, HV_ERR_IO, "%s: not a regular file", path);
    } else if (sb.st_size < 8) {
        s = hv_err(e, HV_ERR_FORMAT,
                   "%s: %lld bytes, too short for a "
                   "safetensors file",
                   path, (long long)sb.st_size);
    } else {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            s = hv_err(e, HV_ERR_IO, "%s: mmap: %s", path, strerror(errno));
        else
            f->map = m, f->size = (size_t)sb.st_size;
    }
    close(fd);
    return s;
}

/* Fills t from one header entry; data_size is the data section's size. */
static hv_status parse_entry(const char *path, const cJSON *ent, const uint8_t *data,
                             uint64_t data_size, hv_st_tensor *t, hv_error *e) {
    const char *name = ent->string;
    if (!cJSON_IsObject(ent))
        return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: not an object", path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(ent, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(ent, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(ent, "data_offsets");
    if (!cJSON_IsString(dt)) return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: no dtype", path, name);
    int d = 0;
    while (d < N_DTYPES && strcmp(DTYPES[d].name, dt->valuestring)) d++;
    if (d == N_DTYPES) {
        for (size_t i = 0; i < sizeof OTHER_DTYPES / sizeof *OTHER_DTYPES; i++)
            if (!strcmp(OTHER_DTYPES[i], dt->valuestring))
                return hv_err(e, HV_ERR_UNSUPPORTED, "%s: tensor %s: dtype %s is not supported",
                              path, name, dt->valuestring);
        return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: unknown dtype \"%.32s\"", path, name,
                      dt->valuestring);
    }
    t->dtype = (hv_dtype)d;

    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > HV_ST_MAX_DIMS)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: shape must be a list "
                      "of at most %d dimensions",
                      path, name, HV_ST_MAX_DIMS);
    const cJSON *it;
    t->numel = 1;
    cJSON_ArrayForEach(it, shape) {
        int64_t v;
        if (!json_uint(it, (double)MAX_DIM, &v))
            return hv_err(e, HV_ERR_FORMAT,
                          "%s: tensor %s: dimension %d is "
                          "not an integer in [0, 2^48]",
                          path, name, t->ndim);
        /* numel * dtype size must fit in 63 bits: check before multiplying */
        if (v && t->numel > (INT64_MAX / 8) / v)
            return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: shape overflows", path, name);
        t->numel *= v;
        t->shape[t->ndim++] = v;
    }

    int64_t b, end;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
        !json_uint(cJSON_GetArrayItem(offs, 0), 9007199254740992.0, &b) ||
        !json_uint(cJSON_GetArrayItem(offs, 1), 9007199254740992.0, &end))
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: data_offsets must be "
                      "two non-negative integers",
                      path, name);
    if (b > end || (uint64_t)end > data_size)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: data_offsets [%lld, "
                      "%lld] outside the data section of %llu bytes",
                      path, name, (long long)b, (long long)end, (unsigned long long)data_size);
    t->nbytes = (size_t)(end - b);
    if ((uint64_t)t->numel * DTYPES[d].size != (uint64_t)t->nbytes)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: %zu bytes for %lld "
                      "elements of %s",
                      path, name, t->nbytes, (long long)t->numel, DTYPES[d].name);
    t->data = data + b;
    return HV_OK;
}

static int by_offset(const void *a, const void *b) {
    const hv_st_tensor *x = *(hv_st_tensor *const *)a;
    const hv_st_tensor *y = *(hv_st_tensor *const *)b;
    const uint8_t *px = x->data, *py = y->data;
    return px < py ? -1 : px > py;
}

/* No two non-empty tensors of one file share a byte. */
static hv_status check_overlap(const char *path, hv_st_tensor *ts, int n, hv_error *e) {
    if (n < 2) return HV_OK;
    hv_st_tensor **order = malloc((size_t)n * sizeof *order);
    if (!order) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; i < n; i++) order[i] = &ts[i];
    qsort(order, (size_t)n, sizeof *order, by_offset);
    hv_status s = HV_OK;
    const hv_st_tensor *prev = NULL;
    for (int i = 0; i < n && !s; i++) {
        const hv_st_tensor *t = order[i];
        if (t->nbytes == 0) continue;
        if (prev && (const uint8_t *)t->data < (const uint8_t *)prev->data + prev->nbytes)
            s = hv_err(e, HV_ERR_FORMAT, "%s: tensors %s and %s overlap", path, prev->name,
                       t->name);
        if (!prev ||
            (const uint8_t *)t->data + t->nbytes > (const uint8_t *)prev->data + prev->nbytes)
            prev = t;
    }
    free(order);
    return s;
}

/* ------------------------------------------------ quantized tensors */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LITTLE_ENDIAN 1 /* f16 scales read 4 at a time as the file has them */
#else
#define HOST_LITTLE_ENDIAN 0
#endif

static int by_name_ptr(const void *a, const void *b) {
    return strcmp((*(hv_st_tensor *const *)a)->name, (*(hv_st_tensor *const *)b)->name);
}

/* One "hviske.quant" entry: name -> {"type": "q4_0", "shape": [rows, ...]}
 * for the U8 tensor t of this file. */
static hv_status quant_entry(const char *path, const cJSON *q, hv_st_tensor *t, hv_error *e) {
    const char *name = q->string;
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(q, "type");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(q, "shape");
    if (!cJSON_IsObject(q) || !cJSON_IsString(ty) || !cJSON_IsArray(shape))
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: hviske.quant entry must be {\"type\": ..., \"shape\": "
                      "[...]}",
                      path, name);
    /* the block formats: a type, and row by row or interleaved by 8 rows */
    static const struct {
        const char *name;
        hv_weight_type type;
        int x8;
    } formats[] = {{"q8_0", HV_WEIGHTS_Q8_0, 0},
                   {"q4_0", HV_WEIGHTS_Q4_0, 0},
                   {"q8_0x8", HV_WEIGHTS_Q8_0, 1},
                   {"q4_0x8", HV_WEIGHTS_Q4_0, 1}};
    int f = 0, nf = (int)(sizeof formats / sizeof formats[0]);
    while (f < nf && strcmp(ty->valuestring, formats[f].name)) f++;
    if (f == nf)
        return hv_err(e, HV_ERR_UNSUPPORTED,
                      "%s: tensor %s: unknown block format \"%.32s\" (this hviske reads q8_0, "
                      "q4_0, q8_0x8 and q4_0x8)",
                      path, name, ty->valuestring);
    hv_weight_type type = formats[f].type;
    int x8 = formats[f].x8;
    if (t->dtype != HV_DT_U8 || t->ndim != 1)
        return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: a quantized tensor must be 1-D U8 bytes",
                      path, name);
    int nd = cJSON_GetArraySize(shape);
    if (nd < 2 || nd > HV_ST_MAX_DIMS)
        return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: logical shape needs 2 to %d dimensions",
                      path, name, HV_ST_MAX_DIMS);
    int64_t dims[HV_ST_MAX_DIMS], cols = 1;
    for (int i = 0; i < nd; i++) {
        if (!json_uint(cJSON_GetArrayItem(shape, i), (double)INT32_MAX, &dims[i]) || !dims[i])
            return hv_err(e, HV_ERR_FORMAT,
                          "%s: tensor %s: logical dimension %d is not an integer in [1, 2^31)",
                          path, name, i);
        if (i && (cols *= dims[i]) > INT32_MAX)
            return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: logical shape too large", path, name);
    }
    size_t bsize = type == HV_WEIGHTS_Q8_0 ? sizeof(hv_q8_0_block) : sizeof(hv_q4_0_block);
    if (cols % HV_Q8_BLOCK)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: %lld columns, not a multiple of the %s block of %d", path,
                      name, (long long)cols, ty->valuestring, HV_Q8_BLOCK);
    uint64_t blocks = (uint64_t)dims[0] * (uint64_t)(cols / HV_Q8_BLOCK);
    if (blocks * bsize != (uint64_t)t->nbytes)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: %zu bytes, but %llu %s blocks of %zu bytes are %llu", path,
                      name, t->nbytes, (unsigned long long)blocks, ty->valuestring, bsize,
                      (unsigned long long)(blocks * bsize));
    if (x8 && dims[0] % HV_X8_ROWS)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: tensor %s: %lld rows, not a multiple of the %d that %s interleaves",
                      path, name, (long long)dims[0], HV_X8_ROWS, ty->valuestring);
    /* every scale finite: an f16 whose exponent bits are all ones is not.
     * x8 keeps the scales together in front: only they are read. */
    const uint8_t *p = t->data;
    size_t stride = x8 ? 2 : bsize;
    for (uint64_t b0 = 0; b0 < blocks; b0 += 4096) {
        /* a branch-free pass per 4096 scales (vectorized), the culprit
         * looked for only when one is bad */
        uint64_t b1 = blocks - b0 < 4096 ? blocks : b0 + 4096, b = b0;
        int bad = 0;
        if (x8 && HOST_LITTLE_ENDIAN) /* 4 scales at a time: x's lane 0 = exponent all ones */
            for (; b + 4 <= b1; b += 4) {
                uint64_t w, x;
                memcpy(&w, p + 2 * b, 8);
                x = (w & 0x7c007c007c007c00u) ^ 0x7c007c007c007c00u;
                bad |= ((x - 0x0001000100010001u) & 0x8000800080008000u) != 0;
            }
        for (; b < b1; b++) bad |= (p[b * stride + 1] & 0x7c) == 0x7c;
        for (b = b0; bad && b < b1; b++) {
            const uint8_t *d = p + b * stride;
            if ((d[1] & 0x7c) == 0x7c)
                return hv_err(e, HV_ERR_FORMAT,
                              "%s: tensor %s: block %llu has a non-finite scale (f16 0x%02x%02x)",
                              path, name, (unsigned long long)b, d[1], d[0]);
        }
    }
    t->quant = type;
    t->x8 = x8;
    t->ndim = nd;
    t->numel = dims[0] * cols;
    memcpy(t->shape, dims, sizeof(int64_t) * (size_t)nd);
    return HV_OK;
}

/* Applies the file's "__metadata__"."hviske.quant" (a JSON object in a
 * string, as safetensors metadata values are strings) to its tensors
 * ts[0..n). */
static hv_status apply_quant(const char *path, const cJSON *meta, hv_st_tensor *ts, int n,
                             hv_error *e) {
    if (!meta) return HV_OK;
    if (!cJSON_IsObject(meta))
        return hv_err(e, HV_ERR_FORMAT, "%s: __metadata__ is not an object", path);
    const cJSON *qs = cJSON_GetObjectItemCaseSensitive(meta, "hviske.quant");
    if (!qs) return HV_OK;
    if (!cJSON_IsString(qs))
        return hv_err(e, HV_ERR_FORMAT, "%s: __metadata__.hviske.quant is not a string", path);
    cJSON *root = cJSON_ParseWithOpts(qs->valuestring, NULL, 1);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return hv_err(e, HV_ERR_FORMAT, "%s: __metadata__.hviske.quant is not a JSON object", path);
    }
    hv_st_tensor **order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) {
        cJSON_Delete(root);
        return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < n; i++) order[i] = &ts[i];
    qsort(order, (size_t)n, sizeof *order, by_name_ptr);
    hv_status s = HV_OK;
    const cJSON *q;
    cJSON_ArrayForEach(q, root) {
        hv_st_tensor key = {.name = q->string}, *kp = &key;
        hv_st_tensor **hit = bsearch(&kp, order, (size_t)n, sizeof *order, by_name_ptr);
        if (!hit) {
            s = hv_err(e, HV_ERR_FORMAT,
                       "%s: hviske.quant names tensor %s, which is not in the file", path,
                       q->string);
            break;
        }
        if ((*hit)->quant != HV_WEIGHTS_AUTO) {
            s = hv_err(e, HV_ERR_FORMAT, "%s: hviske.quant names tensor %s twice", path, q->string);
            break;
        }
        if ((s = quant_entry(path, q, *hit, e))) break;
    }
    free(order);
    cJSON_Delete(root);
    return s;
}

/* Reads the header of the last mapped file and appends its tensors. */
static hv_status parse_header(hv_safetensors *st, hv_error *e) {
    int fi = st->n_files - 1;
    const hv_st_file *f = &st->files[fi];
    const uint8_t *m = f->map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | m[i];
    if (hlen > MAX_HEADER)
        return hv_err(e, HV_ERR_FORMAT, "%s: header length %llu is absurd", f->path,
                      (unsigned long long)hlen);
    if (hlen > f->size - 8)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: header length %llu is past the "
                      "end of the file (%zu bytes)",
                      f->path, (unsigned long long)hlen, f->size);
    /* cJSON needs a NUL-terminated copy; a NUL inside is malformed */
    char *text = malloc(hlen + 1);
    if (!text) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", f->path);
    memcpy(text, m + 8, hlen);
    text[hlen] = '\0';
    cJSON *root = NULL;
    if (strlen(text) == hlen) root = cJSON_ParseWithOpts(text, NULL, 1);
    free(text);
    if (!root) return hv_err(e, HV_ERR_FORMAT, "%s: header is not valid JSON", f->path);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return hv_err(e, HV_ERR_FORMAT, "%s: header is not a JSON object", f->path);
    }

    const uint8_t *data = m + 8 + hlen;
    uint64_t data_size = f->size - 8 - hlen;
    int first = st->n_tensors, cap = st->n_tensors;
    hv_status s = HV_OK;
    const cJSON *ent;
    cJSON_ArrayForEach(ent, root) {
        if (!strcmp(ent->string, "__metadata__")) continue;
        hv_st_tensor *t = push_tensor(st, &cap);
        if (!t || !(t->name = strdup(ent->string))) {
            s = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", f->path);
            break;
        }
        t->file = fi;
        if ((s = parse_entry(f->path, ent, data, data_size, t, e))) break;
    }
    if (!s) s = check_overlap(f->path, st->tensors + first, st->n_tensors - first, e);
    if (!s)
        s = apply_quant(f->path, cJSON_GetObjectItemCaseSensitive(root, "__metadata__"),
                        st->tensors + first, st->n_tensors - first, e);
    cJSON_Delete(root);
    return s;
}

/* Sorts all tensors by name; a name seen twice is an error. */
static hv_status sort_tensors(hv_safetensors *st, hv_error *e) {
    if (st->n_tensors > 1) qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, by_name);
    for (int i = 1; i < st->n_tensors; i++) {
        const hv_st_tensor *a = &st->tensors[i - 1], *b = &st->tensors[i];
        if (strcmp(a->name, b->name) == 0) {
            if (a->file == b->file)
                return hv_err(e, HV_ERR_FORMAT, "%s: duplicate tensor %s", st->files[a->file].path,
                              a->name);
            return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s is also in %s", st->files[b->file].path,
                          b->name, st->files[a->file].path);
        }
    }
    return HV_OK;
}

/* ------------------------------------------------------------ public */

static hv_status open_one(hv_safetensors *st, const char *path, hv_error *e) {
    hv_status s = map_file(st, path, e);
    return s ? s : parse_header(st, e);
}

hv_status hv_st_open_file(hv_safetensors *st, const char *path, hv_error *e) {
    memset(st, 0, sizeof *st);
    hv_status s = open_one(st, path, e);
    if (!s) s = sort_tensors(st, e);
    if (s) hv_st_close(st);
    return s;
}

/* Reads a small text file whole (the index), NUL-terminated. */
static hv_status slurp(const char *path, char **out, hv_error *e) {
    *out = NULL;
    int fd = hv_open_file(path);
    if (fd < 0) return hv_err(e, HV_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    hv_status s = HV_OK;
    char *buf = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        s = hv_err(e, HV_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)sb.st_size > MAX_INDEX)
        s = hv_err(e, HV_ERR_LIMIT, "%s: too large", path);
    else if (!(buf = malloc((size_t)sb.st_size + 1)))
        s = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    else if (read(fd, buf, (size_t)sb.st_size) != (ssize_t)sb.st_size)
        s = hv_err(e, HV_ERR_IO, "%s: read error", path);
    else
        buf[sb.st_size] = '\0';
    close(fd);
    if (s)
        free(buf);
    else
        *out = buf;
    return s;
}

/* A shard name is a plain file name inside the model directory. */
static int safe_name(const char *s) {
    return s[0] && strlen(s) < 256 && !strchr(s, '/') && !strchr(s, '\\') && !strstr(s, "..");
}

/* Opens every shard the index names (each once), then checks that each
 * indexed tensor lives in the shard the index says. */
static hv_status open_index(hv_safetensors *st, const char *dir, const char *ipath, hv_error *e) {
    char *text;
    hv_status s = slurp(ipath, &text, e);
    if (s) return s;
    cJSON *root = cJSON_ParseWithOpts(text, NULL, 1);
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map)) {
        cJSON_Delete(root);
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: not a JSON object with a "
                      "\"weight_map\" object",
                      ipath);
    }
    const cJSON *it;
    char path[4096];
    cJSON_ArrayForEach(it, map) {
        if (!cJSON_IsString(it) || !safe_name(it->valuestring)) {
            s = hv_err(e, HV_ERR_FORMAT, "%s: weight_map.%s: bad file name", ipath, it->string);
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, it->valuestring);
        int seen = 0;
        for (int i = 0; i < st->n_files && !seen; i++) seen = !strcmp(st->files[i].path, path);
        if (!seen && (s = open_one(st, path, e))) break;
    }
    if (!s && st->n_files == 0) s = hv_err(e, HV_ERR_FORMAT, "%s: weight_map is empty", ipath);
    if (!s) s = sort_tensors(st, e);
    cJSON_ArrayForEach(it, map) {
        if (s) break;
        const hv_st_tensor *t = hv_st_find(st, it->string);
        snprintf(path, sizeof path, "%s/%s", dir, it->valuestring);
        if (!t || strcmp(st->files[t->file].path, path) != 0)
            s = hv_err(e, HV_ERR_FORMAT, "%s: tensor %s is not in %s", ipath, it->string,
                       it->valuestring);
    }
    cJSON_Delete(root);
    return s;
}

hv_status hv_st_open_dir(hv_safetensors *st, const char *model_dir, hv_error *e) {
    char ipath[4096], spath[4096];
    memset(st, 0, sizeof *st);
    if ((size_t)snprintf(ipath, sizeof ipath, "%s/model.safetensors.index.json", model_dir) >=
        sizeof ipath - 256)
        return hv_err(e, HV_ERR_INVALID_ARG, "%s: path too long", model_dir);
    snprintf(spath, sizeof spath, "%s/model.safetensors", model_dir);
    hv_status s;
    if (access(ipath, F_OK) == 0) {
        s = open_index(st, model_dir, ipath, e);
    } else if (access(spath, F_OK) == 0) {
        s = open_one(st, spath, e);
        if (!s) s = sort_tensors(st, e);
    } else {
        return hv_err(e, HV_ERR_IO,
                      "%s: no model.safetensors or "
                      "model.safetensors.index.json",
                      model_dir);
    }
    if (s) hv_st_close(st);
    return s;
}

void hv_st_close(hv_safetensors *st) {
    if (!st) return;
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].map) munmap(st->files[i].map, st->files[i].size);
        free(st->files[i].path);
    }
    free(st->files);
    memset(st, 0, sizeof *st);
}

const hv_st_tensor *hv_st_find(const hv_safetensors *st, const char *name) {
    int lo = 0, hi = st->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[mid].name, name);
        if (c == 0) return &st->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

void hv_st_release(const hv_st_tensor *t) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || !t || !t->nbytes) return;
    uintptr_t a = (uintptr_t)t->data, b = a + t->nbytes;
    a = (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    b &= ~((uintptr_t)page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED); /* advice only */
}
