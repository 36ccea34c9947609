/* hv_quantize: writes a checkpoint directory whose weight matrices are
 * stored in a compute type, so that it loads by mmap without conversion
 * (docs/QUANTIZE.md has the format).
 *
 * The matrices are exactly those the loader treats as matrices: the input
 * is loaded with hv_weights_load in the requested type (the conversion
 * `--weight-type` does at load), and each matrix is written as it came out,
 * under its tensor's name. Every other tensor is copied byte for byte. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "kernels/matmul.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "util/error.h"
#include "util/file.h"
#include "hviske_output.h"

/* One output tensor. */
typedef struct out_tensor {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[HV_ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
    hv_weight_type quant; /* blocks: logical shape in qshape */
    int x8;               /* blocks interleaved by 8 rows */
    int qndim;
    int64_t qshape[HV_ST_MAX_DIMS];
    int align; /* element size the offset must be a multiple of */
} out_tensor;

/* Larger elements first, so every offset is a multiple of its tensor's
 * element size without padding between tensors (safetensors allows no
 * holes); by name within one size. */
static int by_align(const void *a, const void *b) {
    const out_tensor *x = a, *y = b;
    if (x->align != y->align) return y->align - x->align;
    return strcmp(x->name, y->name);
}

static const char *type_dtype(hv_weight_type t) {
    return t == HV_WEIGHTS_F32    ? "F32"
           : t == HV_WEIGHTS_F16  ? "F16"
           : t == HV_WEIGHTS_BF16 ? "BF16"
                                  : "U8";
}

static cJSON *shape_json(int ndim, const int64_t *shape) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < ndim; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
    return a;
}

/* The header: tensors in file order with their offsets, "__metadata__"
 * with "hviske.quant"; NULL when out of memory. */
static char *make_header(out_tensor *ts, int n, size_t *len) {
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON *quant = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "format", "pt");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *t = cJSON_AddObjectToObject(root, ts[i].name);
        cJSON_AddStringToObject(t, "dtype", ts[i].dtype);
        cJSON_AddItemToObject(t, "shape", shape_json(ts[i].ndim, ts[i].shape));
        cJSON *o = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + ts[i].nbytes)));
        off += ts[i].nbytes;
        if (ts[i].quant != HV_WEIGHTS_AUTO) {
            cJSON *q = cJSON_AddObjectToObject(quant, ts[i].name);
            char type[16];
            snprintf(type, sizeof type, "%s%s", hv_weight_type_name(ts[i].quant),
                     ts[i].x8 ? "x8" : "");
            cJSON_AddStringToObject(q, "type", type);
            cJSON_AddItemToObject(q, "shape", shape_json(ts[i].qndim, ts[i].qshape));
        }
    }
    char *qtext = cJSON_PrintUnformatted(quant);
    cJSON_Delete(quant);
    if (qtext) cJSON_AddStringToObject(meta, "hviske.quant", qtext);
    free(qtext);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return NULL;
    /* pad with spaces so the data starts at a multiple of 64 */
    size_t l = strlen(text), padded = l + (64 - (8 + l) % 64) % 64;
    char *h = realloc(text, padded + 1);
    if (!h) {
        free(text);
        return NULL;
    }
    memset(h + l, ' ', padded - l);
    h[padded] = '\0';
    *len = padded;
    return h;
}

/* Writes the n parts to path by hv_out_file's rule (hviske_output.h): a regular file
 * atomically (a temporary file beside it, synced, renamed over it), a
 * symlink followed, a device, FIFO or socket written in place. */
static hv_status write_parts(const char *path, const void *const *parts, const size_t *lens, int n,
                             hv_error *e) {
    hv_out_file *of = malloc(sizeof *of);
    if (!of) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    int err = hv_out_open(of, path);
    if (err) {
        free(of);
        return hv_err(e, HV_ERR_IO, "%s: cannot create: %s", path, strerror(err));
    }
    for (int i = 0; !err && i < n; i++) err = hv_out_write(of, parts[i], lens[i]);
    if (err)
        hv_out_abort(of);
    else
        err = hv_out_commit(of);
    free(of);
    if (err) return hv_err(e, HV_ERR_IO, "%s: cannot write: %s", path, strerror(err));
    return HV_OK;
}

static hv_status copy_file(const char *in_dir, const char *out_dir, const char *name, int optional,
                           hv_error *e) {
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s/%s", in_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", out_dir, name);
    if (optional && access(src, F_OK) != 0) return HV_OK;
    char *buf;
    size_t len;
    hv_status s = hv_read_file(src, (size_t)1 << 30, &buf, &len, e);
    if (s) return s;
    const void *parts[1] = {buf};
    s = write_parts(dst, parts, &len, 1, e);
    free(buf);
    return s;
}

/* out_dir is created when absent; an existing one must be a directory,
 * empty unless overwrite, and not in_dir itself. */
static hv_status prepare_out(const char *in_dir, const char *out_dir, int overwrite, hv_error *e) {
    struct stat so, si;
    if (stat(out_dir, &so) != 0) {
        if (errno != ENOENT || mkdir(out_dir, 0777) != 0)
            return hv_err(e, HV_ERR_IO, "%s: %s", out_dir, strerror(errno));
        return HV_OK;
    }
    if (!S_ISDIR(so.st_mode)) return hv_err(e, HV_ERR_IO, "%s: not a directory", out_dir);
    if (stat(in_dir, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
        return hv_err(e, HV_ERR_INVALID_ARG, "%s: the output directory is the input directory",
                      out_dir);
    DIR *d = opendir(out_dir);
    if (!d) return hv_err(e, HV_ERR_IO, "%s: %s", out_dir, strerror(errno));
    int empty = 1;
    struct dirent *de;
    while ((de = readdir(d)) && empty)
        empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
    closedir(d);
    if (!empty && !overwrite)
        return hv_err(e, HV_ERR_INVALID_ARG, "%s: exists and is not empty", out_dir);
    /* a sharded checkpoint's index would be read instead of the new file */
    char idx[4200];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", out_dir);
    if (unlink(idx) != 0 && errno != ENOENT)
        return hv_err(e, HV_ERR_IO, "%s: %s", idx, strerror(errno));
    return HV_OK;
}

static hv_status quantize(const char *in_dir, const char *out_dir, hv_weight_type type,
                          int overwrite, hv_error *e) {
    if ((int)type < HV_WEIGHTS_F32 || (int)type >= HV_N_WEIGHT_TYPES)
        return hv_err(e, HV_ERR_INVALID_ARG, "weight type %d: not a storage type", (int)type);
    if (!in_dir || !*in_dir || !out_dir || !*out_dir)
        return hv_err(e, HV_ERR_INVALID_ARG, "no input or output directory given");
    if (strlen(in_dir) > 4000 || strlen(out_dir) > 4000)
        return hv_err(e, HV_ERR_INVALID_ARG, "path too long");
    hv_config cfg;
    hv_safetensors st;
    hv_weights w;
    hv_status s = hv_config_load(&cfg, in_dir, e);
    if (s) return s;
    if ((s = hv_st_open_dir(&st, in_dir, e))) {
        hv_config_free(&cfg);
        return s;
    }
    if ((s = hv_weights_load(&w, &cfg, &st, type, e))) {
        hv_err_prefix(e, "%s", in_dir);
        hv_st_close(&st);
        hv_config_free(&cfg);
        return s;
    }
    out_tensor *ts = calloc((size_t)st.n_tensors + 1, sizeof *ts);
    const hv_mat **mat_of = calloc((size_t)st.n_tensors + 1, sizeof *mat_of);
    const void **parts = calloc((size_t)st.n_tensors + 2, sizeof *parts);
    size_t *lens = calloc((size_t)st.n_tensors + 2, sizeof *lens);
    char *header = NULL;
    if (!ts || !mat_of || !parts || !lens) {
        s = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < w.n_mats; i++) {
        const hv_st_tensor *t = hv_st_find(&st, w.mats[i].name);
        if (t) mat_of[t - st.tensors] = &w.mats[i].m;
    }
    for (int i = 0; i < st.n_tensors; i++) {
        const hv_st_tensor *t = &st.tensors[i];
        out_tensor *o = &ts[i];
        o->name = t->name;
        const hv_mat *m = mat_of[i];
        hv_weight_type q =
            m ? (m->type == HV_WEIGHTS_Q8_0 || m->type == HV_WEIGHTS_Q4_0 ? m->type
                                                                          : HV_WEIGHTS_AUTO)
              : t->quant;
        if (m) {
            o->dtype = type_dtype(m->type);
            o->data = m->data;
            o->nbytes = hv_mat_bytes(m);
            o->align = m->type == HV_WEIGHTS_F32 ? 4 : 2;
        } else {
            o->dtype = hv_dtype_name(t->dtype);
            o->data = t->data;
            o->nbytes = t->nbytes;
            o->align = q != HV_WEIGHTS_AUTO ? 2 : (int)hv_dtype_size(t->dtype);
        }
        o->quant = q;
        o->x8 = m ? m->x8 : t->x8;
        if (q != HV_WEIGHTS_AUTO) {
            o->ndim = 1;
            o->shape[0] = (int64_t)o->nbytes;
            o->qndim = t->ndim;
            memcpy(o->qshape, t->shape, sizeof t->shape);
        } else {
            o->ndim = t->ndim;
            memcpy(o->shape, t->shape, sizeof t->shape);
        }
    }
    qsort(ts, (size_t)st.n_tensors, sizeof *ts, by_align);
    size_t hlen = 0;
    if (!(header = make_header(ts, st.n_tensors, &hlen))) {
        s = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((s = prepare_out(in_dir, out_dir, overwrite, e))) goto done;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    parts[0] = len8, lens[0] = 8;
    parts[1] = header, lens[1] = hlen;
    for (int i = 0; i < st.n_tensors; i++) parts[i + 2] = ts[i].data, lens[i + 2] = ts[i].nbytes;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    if ((s = write_parts(path, parts, lens, st.n_tensors + 2, e))) goto done;
    if ((s = copy_file(in_dir, out_dir, "config.json", 0, e))) goto done;
    if ((s = copy_file(in_dir, out_dir, "generation_config.json", 1, e))) goto done;
    s = copy_file(in_dir, out_dir, "tokenizer.model", 0, e);
done:
    free(header);
    free(ts);
    free(mat_of);
    free(parts);
    free(lens);
    hv_weights_free(&w);
    hv_st_close(&st);
    hv_config_free(&cfg);
    return s;
}

hv_status hv_quantize(const char *in_dir, const char *out_dir, hv_weight_type type, int overwrite,
                      char *errbuf, size_t errbuf_size) {
    hv_error e = {0};
    hv_status s = quantize(in_dir, out_dir, type, overwrite, &e);
    if (s) hv_err_copy(&e, errbuf, errbuf_size);
    return s;
}
