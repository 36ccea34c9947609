/* The one file that calls oneDNN (onednn.h has the design). */
#include "kernels/onednn.h"

#include <stdlib.h>
#include <string.h>

#ifdef HV_HAVE_ONEDNN

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/half.h"
#include "kernels/ops.h"

/* Activation rows are padded up to a multiple of this, or of a power of
 * two times it (rows_class): the shape classes. */
#define M_CLASS    16
/* Primitives kept per engine; a product whose shape would need more runs
 * on our own kernels instead (the encoder needs a few dozen per clip
 * length class for its weights, and four for its attention). */
#define MAX_PRIMS  2048
/* Slots of the primitives' hash table: a power of two, at least twice
 * MAX_PRIMS, so that it is never more than half full and a probe ends
 * soon at an empty slot. */
#define HASH_SLOTS (2 * MAX_PRIMS)
/* Sets of memory objects an execution context keeps, one per primitive it
 * ran last: the four shapes of a head's attention products fit. */
#define CTX_SETS   4
/* Memory objects of an execution: source, weights, destination,
 * scratchpad and, in a primitive with one, bias. */
#define N_ARGS     5

/* What a primitive computes (make_pd): C[m x n] = A[m x k] . B (+ bias),
 * A's rows lda apart, B's ldb (b_trans: the rows of an [n][k] matrix),
 * C's ldc. A weight product is the dense case of weights_key. */
typedef struct prim_key {
    int m, k, n, bias, b_trans;
    long lda, ldb, ldc;
} prim_key;

/* FNV-1a over the key's fields (not its bytes: the struct has padding). */
static unsigned key_hash(const prim_key *key) {
    const long f[8] = {key->m,       key->k,   key->n,   key->bias,
                       key->b_trans, key->lda, key->ldb, key->ldc};
    uint64_t h = 14695981039346656037u;
    for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)f[i]) * 1099511628211u;
    return (unsigned)(h ^ h >> 32);
}

static int same_key(const prim_key *a, const prim_key *b) {
    return a->m == b->m && a->k == b->k && a->n == b->n && a->bias == b->bias &&
           a->b_trans == b->b_trans && a->lda == b->lda && a->ldb == b->ldb && a->ldc == b->ldc;
}

/* A weight product's: [m x k] activations, the rows of a row-major [n][k]
 * weight matrix (oneDNN's `ba`), [m x n] outputs, all dense. */
static prim_key weights_key(int m, int k, int n, int bias) {
    return (prim_key){
        .m = m, .k = k, .n = n, .bias = bias, .b_trans = 1, .lda = k, .ldb = k, .ldc = n};
}

/* The rows n activation rows are padded to: a multiple of M_CLASS up to
 * 32 M_CLASS (every clip length class of the encoder's layers), then
 * multiples of twice the step at every doubling, 16 classes per octave,
 * at most 1/16 of the rows padding. The subsampling's pointwise products
 * have time x frequency rows, a count of its own for nearly every clip
 * length: in classes of 16 rows each new length would need new
 * primitives until the cache is full (then the attention's products run
 * on plain loops); this way every count up to 2^17 falls into one of 160
 * classes. */
static int rows_class(int n) {
    long step = M_CLASS;
    while (n > 32 * step) step *= 2;
    return (int)((n + step - 1) / step * step);
}

int hv_onednn_rows_class(int n) { return n < 1 ? 0 : rows_class(n); }

typedef struct prim {
    prim_key key;
    dnnl_primitive_t p;
    dnnl_memory_desc_t src, wei, bia, dst, scratch;
    size_t scratch_bytes;
} prim;

/* A context's memory objects of one primitive; their data handles are
 * set per execution. */
typedef struct mem_set {
    const prim *p; /* NULL: none made */
    dnnl_memory_t m[N_ARGS];
} mem_set;

/* What an execution needs besides its primitive: a stream, a scratchpad
 * buffer kept at its largest size, and the memory objects of the
 * primitives it ran last. A context serves one caller at a time, taken
 * from the engine's idle list and given back after the call; the engine
 * makes one whenever every context it has is in use, so there are as many
 * as products have ever run at once. */
typedef struct dnn_ctx {
    dnnl_stream_t st;
    void *scratch; /* scratch_bytes, 64-byte aligned */
    size_t scratch_bytes;
    mem_set sets[CTX_SETS];
    int next_set;         /* the set a new primitive's objects replace */
    struct dnn_ctx *next; /* in the idle list */
} dnn_ctx;

struct hv_onednn {
    int bf16;
    dnnl_engine_t eng;
    pthread_mutex_t mu; /* making a primitive: prims, n_prims, slots' stores */
    prim *prims;        /* [MAX_PRIMS], n_prims of them filled (a refused key: p NULL) */
    int n_prims;
    /* [HASH_SLOTS]: 1 + the index in prims of the key hashing there (or
     * probed on from there), 0 when empty; stored, with release, only
     * after the entry is complete, so that a lookup needs no lock */
    atomic_int *slots;
    pthread_mutex_t ctx_mu; /* idle */
    dnn_ctx *idle;          /* the contexts not in use, each owned by d */
};

int hv_onednn_compiled(void) { return 1; }

/* HVISKE_MAX_ISA caps oneDNN too (before its first primitive), unless
 * ONEDNN_MAX_CPU_ISA is set: one cap holds every kernel of the process to
 * the level a test or a comparison asks for. */
static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static void cap_isa(void) {
    static const struct {
        const char *level;
        dnnl_cpu_isa_t isa;
    } map[] = {{"portable", dnnl_cpu_isa_sse41},
               {"avx2", dnnl_cpu_isa_avx2},
               {"avx_vnni", dnnl_cpu_isa_avx2_vnni},
               {"avx512", dnnl_cpu_isa_avx512_core},
               {"avx512_vnni", dnnl_cpu_isa_avx512_core_vnni},
               {"avx512_bf16", dnnl_cpu_isa_avx512_core_bf16},
               {"amx", dnnl_cpu_isa_all}};
    const char *cap = getenv("HVISKE_MAX_ISA"), *own = getenv("ONEDNN_MAX_CPU_ISA");
    if (!cap || !*cap || (own && *own)) return;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(cap, map[i].level)) dnnl_set_max_cpu_isa(map[i].isa);
}

int hv_onednn_native_bf16(void) {
    pthread_once(&cap_once, cap_isa);
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

/* A context and everything it holds; NULL is allowed. */
static void ctx_free(dnn_ctx *c) {
    if (!c) return;
    for (int s = 0; s < CTX_SETS; s++)
        for (int i = 0; i < N_ARGS; i++) dnnl_memory_destroy(c->sets[s].m[i]);
    if (c->st) dnnl_stream_destroy(c->st);
    free(c->scratch);
    free(c);
}

hv_onednn *hv_onednn_new(int bf16) {
    pthread_once(&cap_once, cap_isa);
    hv_onednn *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->bf16 = bf16 != 0;
    d->prims = calloc(MAX_PRIMS, sizeof *d->prims);
    d->slots = malloc(HASH_SLOTS * sizeof *d->slots);
    if (!d->prims || !d->slots || dnnl_engine_create(&d->eng, dnnl_cpu, 0) != dnnl_success) {
        free(d->prims);
        free(d->slots);
        free(d);
        return NULL;
    }
    for (int s = 0; s < HASH_SLOTS; s++) atomic_init(&d->slots[s], 0);
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->ctx_mu, NULL);
    return d;
}

void hv_onednn_free(hv_onednn *d) {
    if (!d) return;
    while (d->idle) {
        dnn_ctx *c = d->idle;
        d->idle = c->next;
        ctx_free(c);
    }
    for (int i = 0; i < d->n_prims; i++)
        if (d->prims[i].p) dnnl_primitive_destroy(d->prims[i].p);
    dnnl_engine_destroy(d->eng);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->ctx_mu);
    free(d->prims);
    free(d->slots);
    free(d);
}

int hv_onednn_primitives(hv_onednn *d) {
    if (!d) return 0;
    pthread_mutex_lock(&d->mu);
    int made = 0;
    for (int i = 0; i < d->n_prims; i++) made += d->prims[i].p != NULL;
    pthread_mutex_unlock(&d->mu);
    return made;
}

int hv_onednn_is_bf16(const hv_onednn *d) { return d && d->bf16; }

int hv_onednn_takes(const hv_onednn *d, const hv_mat *W) {
    return d && !W->r64 && W->type == (d->bf16 ? HV_WEIGHTS_BF16 : HV_WEIGHTS_F32);
}

/* oneDNN sizes its work by omp_get_max_threads() when a primitive is made
 * and when it runs: held to 1 on the calling thread meanwhile (the pool
 * gives the parallelism), and given back after, so that an application's
 * own OpenMP setting on that thread is left as it was. */
static int omp_hold(void) {
    int was = omp_get_max_threads();
    omp_set_num_threads(1);
    return was;
}
static void omp_release(int was) { omp_set_num_threads(was); }

/* The primitive descriptor of C[m x n] = A[m x k] . B[k x n] (+ an f32
 * bias of n values added to every row when bias is set: oneDNN adds it to
 * the f32 sums, the rounding of our own y = sum + bias), A's rows lda
 * apart, C's ldc; B is the rows of an [n][k] matrix ldb apart when b_trans
 * (a weight matrix as mapped: oneDNN's `ba`), else [k][n] rows ldb apart;
 * NULL when oneDNN has none. */
static dnnl_primitive_desc_t make_pd(const hv_onednn *d, const prim_key *key) {
    int m = key->m, k = key->k, n = key->n, b_trans = key->b_trans, bias = key->bias;
    long lda = key->lda, ldb = key->ldb, ldc = key->ldc;
    dnnl_data_type_t dt = d->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t a, b, c, bi;
    dnnl_dims_t da = {m, k}, db = {k, n}, dc = {m, n}, dbi = {1, n};
    dnnl_dims_t sa = {lda, 1}, sc = {ldc, 1};
    dnnl_dims_t sb = {b_trans ? 1 : ldb, b_trans ? ldb : 1};
    dnnl_matmul_desc_t op;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_memory_desc_init_by_strides(&a, 2, da, dt, sa) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&b, 2, db, dt, sb) != dnnl_success ||
        dnnl_memory_desc_init_by_strides(&c, 2, dc, dnnl_f32, sc) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&bi, 2, dbi, dnnl_f32, dnnl_ab) != dnnl_success ||
        dnnl_matmul_desc_init(&op, &a, &b, bias ? &bi : NULL, &c) != dnnl_success ||
        dnnl_primitive_attr_create(&attr) != dnnl_success)
        return NULL;
    /* a scratchpad per execution: the same primitive runs on many threads */
    if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
        dnnl_primitive_desc_create(&pd, &op, attr, d->eng, NULL) != dnnl_success)
        pd = NULL;
    dnnl_primitive_attr_destroy(attr);
    return pd;
}

/* Weight rows per task chunk: wide enough that a call's overhead is small
 * against its arithmetic, narrow enough that the threads share a product
 * of 1280 rows. Depends on the shape only (the primitives' key). */
static int chunk_rows(const hv_mat *W) { return W->rows >= 1024 ? 256 : 64; }

int hv_onednn_impl(const hv_onednn *d, int n, int cols, int rows, char *buf, size_t size) {
    if (size) buf[0] = '\0';
    if (!d || n < 1 || cols < 1 || rows < 1 || !size) return -1;
    /* the first chunk's primitive, as hv_onednn_gemm makes it */
    hv_mat shape = {.rows = rows, .cols = cols};
    int was = omp_hold(), chunk = chunk_rows(&shape);
    prim_key key = weights_key(rows_class(n), cols, rows < chunk ? rows : chunk, 0);
    dnnl_primitive_desc_t pd = make_pd(d, &key);
    omp_release(was);
    const char *impl = NULL;
    if (pd) dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (impl) snprintf(buf, size, "%s", impl);
    dnnl_primitive_desc_destroy(pd);
    return impl ? 0 : -1;
}

/* The cached primitive of key, or NULL with *slot the empty slot where
 * the probe ended. Needs no lock: a slot is stored only once its entry is
 * complete, and entries never change after. */
static const prim *find_prim(const hv_onednn *d, const prim_key *key, unsigned *slot) {
    for (unsigned s = key_hash(key) & (HASH_SLOTS - 1);; s = (s + 1) & (HASH_SLOTS - 1)) {
        int i = atomic_load_explicit(&d->slots[s], memory_order_acquire);
        if (!i) {
            *slot = s;
            return NULL;
        }
        if (same_key(&d->prims[i - 1].key, key)) return &d->prims[i - 1];
    }
}

/* The cached primitive of key, made when missing; NULL when it cannot be
 * made or the cache is full. A key oneDNN refuses is cached too (without
 * a primitive), so that its later calls go straight to the fallbacks
 * instead of asking again under the lock. The entries never move or go
 * away while d lives, so a pointer stays valid without the lock. */
static const prim *get_prim(hv_onednn *d, const prim_key *key) {
    unsigned slot;
    const prim *found = find_prim(d, key, &slot);
    if (found) return found->p ? found : NULL;
    pthread_mutex_lock(&d->mu);
    found = find_prim(d, key, &slot); /* another thread may have made it */
    if (!found && d->n_prims < MAX_PRIMS) {
        int was = omp_hold();
        dnnl_primitive_desc_t pd = make_pd(d, key);
        prim *e = &d->prims[d->n_prims];
        memset(e, 0, sizeof *e);
        e->key = *key;
        if (pd && dnnl_primitive_create(&e->p, pd) == dnnl_success) {
            e->src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
            e->wei = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
            const dnnl_memory_desc_t *bia =
                dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
            if (bia) e->bia = *bia;
            e->dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
            e->scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
            e->scratch_bytes = dnnl_memory_desc_get_size(&e->scratch);
        } else {
            e->p = NULL; /* refused: remembered as such */
        }
        d->n_prims++;
        atomic_store_explicit(&d->slots[slot], d->n_prims, memory_order_release);
        found = e;
        dnnl_primitive_desc_destroy(pd);
        omp_release(was);
    }
    pthread_mutex_unlock(&d->mu);
    return found && found->p ? found : NULL;
}

/* get_prim of a weight product of weights_key's shape. */
static const prim *get_weights_prim(hv_onednn *d, int m, int k, int n, int bias) {
    prim_key key = weights_key(m, k, n, bias);
    return get_prim(d, &key);
}

/* An idle context of d, or a new one when all are in use: the caller's
 * alone until ctx_give. NULL when out of memory or without a stream. */
static dnn_ctx *ctx_take(hv_onednn *d) {
    pthread_mutex_lock(&d->ctx_mu);
    dnn_ctx *c = d->idle;
    if (c) d->idle = c->next;
    pthread_mutex_unlock(&d->ctx_mu);
    if (c) return c;
    c = calloc(1, sizeof *c);
    if (c && dnnl_stream_create(&c->st, d->eng, dnnl_stream_default_flags) != dnnl_success) {
        c->st = NULL;
        ctx_free(c);
        c = NULL;
    }
    return c;
}

static void ctx_give(hv_onednn *d, dnn_ctx *c) {
    pthread_mutex_lock(&d->ctx_mu);
    c->next = d->idle;
    d->idle = c;
    pthread_mutex_unlock(&d->ctx_mu);
}

static size_t align64(size_t b) { return (b + 63) & ~(size_t)63; }

/* c's scratchpad buffer, grown to at least bytes (its contents not kept);
 * NULL when out of memory, or when bytes is 0 and c has none. */
static void *ctx_scratch(dnn_ctx *c, size_t bytes) {
    if (bytes > c->scratch_bytes) {
        free(c->scratch);
        c->scratch = aligned_alloc(64, align64(bytes));
        c->scratch_bytes = c->scratch ? bytes : 0;
    }
    return c->scratch;
}

/* Runs p on c's stream with c's memory objects of p (made on first use,
 * in place of the set made longest ago) pointed at the operands h[]
 * (source, weights, destination, scratchpad of scratch_bytes, bias; the
 * bias only when p takes one); 0 when oneDNN ran it, -1 when the
 * scratchpad is smaller than p's, an object could not be made or oneDNN
 * failed. */
static int ctx_run(const hv_onednn *d, dnn_ctx *c, const prim *p, void *const h[N_ARGS],
                   size_t scratch_bytes) {
    if (scratch_bytes < p->scratch_bytes) return -1;
    int n_args = p->key.bias ? N_ARGS : N_ARGS - 1;
    mem_set *s = NULL;
    for (int i = 0; i < CTX_SETS && !s; i++)
        if (c->sets[i].p == p) s = &c->sets[i];
    if (!s) {
        s = &c->sets[c->next_set];
        c->next_set = (c->next_set + 1) % CTX_SETS;
        s->p = NULL;
        const dnnl_memory_desc_t *md[N_ARGS] = {&p->src, &p->wei, &p->dst, &p->scratch, &p->bia};
        for (int i = 0; i < N_ARGS; i++) {
            dnnl_memory_destroy(s->m[i]);
            s->m[i] = NULL;
            if (i < n_args &&
                dnnl_memory_create(&s->m[i], md[i], d->eng, DNNL_MEMORY_NONE) != dnnl_success) {
                s->m[i] = NULL;
                return -1;
            }
        }
        s->p = p;
    }
    const int which[N_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_SCRATCHPAD,
                               DNNL_ARG_BIAS};
    dnnl_exec_arg_t args[N_ARGS];
    for (int i = 0; i < n_args; i++) {
        if (dnnl_memory_set_data_handle(s->m[i], h[i]) != dnnl_success) return -1;
        args[i] = (dnnl_exec_arg_t){which[i], s->m[i]};
    }
    int ran = dnnl_primitive_execute(p->p, c->st, n_args, args) == dnnl_success &&
              dnnl_stream_wait(c->st) == dnnl_success;
    return ran ? 0 : -1;
}

int hv_onednn_fuses_bias(hv_onednn *d, int n, int cols, int rows) {
    if (!d || n < 1 || cols < 1 || rows < 1) return 0;
    return get_weights_prim(d, rows_class(n), cols, rows, 1) != NULL;
}

typedef struct dnn_job {
    hv_onednn *d;
    hv_pool *pool;
    const float *x;
    const hv_onednn_rows *rows; /* NULL: the rows are x's */
    const hv_onednn_sink *sink; /* NULL: the outputs go to the products' y */
    int n, m_pad, cols;
    int fuse_bias;        /* the primitives add the products' biases */
    void *xs;             /* the activations as the primitive reads them: [m_pad][cols] */
    size_t out_bytes;     /* a task's output buffer, then its scratchpad */
    size_t scratch_bytes; /* of the scratchpad */
    hv_gemm_outs o;
} dnn_job;

/* Rows of x converted for the primitive (bf16 rounded to nearest even, or
 * f32 copied); the padding rows zero. */
static void convert_task(void *arg, int task, int n_tasks) {
    dnn_job *j = arg;
    int i0 = (int)((long)j->m_pad * task / n_tasks),
        i1 = (int)((long)j->m_pad * (task + 1) / n_tasks);
    if (j->rows) { /* the producer's rows, then the padding */
        int v1 = i1 < j->n ? i1 : j->n;
        size_t esz = j->d->bf16 ? 2 : 4;
        if (i0 < v1)
            j->rows->fill(j->rows->arg, task, j->d->bf16,
                          (char *)j->xs + (size_t)i0 * j->cols * esz, i0, v1);
        if (v1 < i0) v1 = i0;
        if (v1 < i1)
            memset((char *)j->xs + (size_t)v1 * j->cols * esz, 0,
                   (size_t)(i1 - v1) * j->cols * esz);
        return;
    }
    for (int i = i0; i < i1; i++) {
        size_t off = (size_t)i * j->cols;
        if (j->d->bf16) {
            uint16_t *dst = (uint16_t *)j->xs + off;
            if (i >= j->n)
                memset(dst, 0, (size_t)j->cols * 2);
            else
                hv_bf16_bits_n(dst, j->x + off, j->cols);
        } else {
            float *dst = (float *)j->xs + off;
            if (i >= j->n)
                memset(dst, 0, (size_t)j->cols * 4);
            else
                memcpy(dst, j->x + off, (size_t)j->cols * 4);
        }
    }
}

/* A chunk's outputs out[i][r - r0] by plain loops over the same converted
 * activations (f32 sums in column order), plus bias[r] when the primitive
 * would have added it: only when oneDNN could not run it after its
 * primitive was made (a stream or a memory object not had). */
static void chunk_plain(const dnn_job *j, const hv_mat *W, const float *bias, int r0, int r1,
                        float *out) {
    for (int i = 0; i < j->n; i++)
        for (int r = r0; r < r1; r++) {
            float s = 0.0f;
            for (int c = 0; c < j->cols; c++) {
                size_t xi = (size_t)i * j->cols + c, wi = (size_t)r * j->cols + c;
                float a = j->d->bf16 ? hv_bf16_to_f32(((const uint16_t *)j->xs)[xi])
                                     : ((const float *)j->xs)[xi];
                float b = j->d->bf16 ? hv_bf16_to_f32(((const uint16_t *)W->data)[wi])
                                     : ((const float *)W->data)[wi];
                s = fmaf(a, b, s);
            }
            out[(size_t)i * (r1 - r0) + (r - r0)] = bias ? s + bias[r] : s;
        }
}

static void gemm_task(void *arg, int task, int n_tasks) {
    dnn_job *j = arg;
    (void)n_tasks;
    hv_onednn *d = j->d;
    char *buf = hv_pool_scratch(j->pool, task, 0); /* sized before the job */
    int was = omp_hold();
    /* a context for the stream and memory objects; the scratchpad in buf */
    dnn_ctx *ctx = ctx_take(d);
    size_t esz = d->bf16 ? 2 : 4;
    int m, r0, r1;
    while (hv_gemm_outs_next(&j->o, &m, &r0, &r1)) {
        const hv_mat *W = j->o.out[m].W;
        const float *bias = j->fuse_bias ? j->o.out[m].bias : NULL;
        const prim *p = ctx ? get_weights_prim(d, j->m_pad, j->cols, r1 - r0, bias != NULL) : NULL;
        float *out = (float *)buf;
        void *const h[N_ARGS] = {j->xs, (char *)W->data + (size_t)r0 * j->cols * esz, out,
                                 buf + j->out_bytes, bias ? (float *)bias + r0 : NULL};
        if (!p || ctx_run(d, ctx, p, h, j->scratch_bytes)) chunk_plain(j, W, bias, r0, r1, out);
        if (j->sink) {
            const float *b = j->fuse_bias ? NULL : j->o.out[m].bias;
            for (int i = 0; b && i < j->n; i++)
                for (int r = r0; r < r1; r++) out[(size_t)i * (r1 - r0) + (r - r0)] += b[r];
            j->sink->put(j->sink->arg, m, 0, j->n, r0, r1, out, r1 - r0);
        } else {
            hv_gemm_outs_finish_from(&j->o, m, 0, j->n, r0, r1, out, r1 - r0);
        }
    }
    if (ctx) ctx_give(d, ctx);
    omp_release(was);
}

/* hv_onednn_gemm of x's rows, or of rows' when it is not NULL, into y
 * or, when sink is not NULL, into the sink. */
static int gemm_from(hv_onednn *d, hv_pool *pool, int n, const float *x, const hv_onednn_rows *rows,
                     int count, const hv_mat *const *W, const float *const *bias, float *const *y,
                     const hv_onednn_sink *sink, const hv_epilogue *ep, hv_profile *prof) {
    if (!d || !pool || n < 1 || count < 1 || count > HV_GEMM_MAX_OUT) return -1;
    for (int m = 0; m < count; m++)
        if (!hv_onednn_takes(d, W[m])) return -1;
    dnn_job j = {.d = d, .pool = pool, .x = x, .rows = rows, .sink = sink, .n = n};
    if (hv_gemm_outs_init(&j.o, count, W, bias, y, chunk_rows, ep)) return -1;
    hv_gemm_outs_taper(&j.o, hv_pool_size(pool));
    j.cols = j.o.cols;
    j.m_pad = rows_class(n);
    /* every chunk's primitive, and the largest buffers, before any work:
     * a task then cannot fail. The biases go into the primitives (one
     * pass less over the outputs), unless oneDNN has no primitive with a
     * bias for some chunk: then hv_gemm_outs_finish_from adds them all. */
    size_t out = 0, scratch = 0;
    int m, r0, r1;
    j.fuse_bias = 1;
    for (int pass = 0; pass < 2; pass++) {
        atomic_store(&j.o.next, 0);
        while (hv_gemm_outs_next(&j.o, &m, &r0, &r1)) {
            int b = j.fuse_bias && j.o.out[m].bias != NULL;
            const prim *p = get_weights_prim(d, j.m_pad, j.cols, r1 - r0, b);
            if (!p && b) {
                j.fuse_bias = 0;
                break;
            }
            if (!p) return -1;
            size_t ob = align64((size_t)j.m_pad * (r1 - r0) * sizeof(float));
            if (ob > out) out = ob;
            if (p->scratch_bytes > scratch) scratch = p->scratch_bytes;
        }
        if (j.fuse_bias) break; /* else once more, every primitive without */
    }
    atomic_store(&j.o.next, 0);
    j.o.bias_done = j.fuse_bias;
    j.out_bytes = out;
    j.scratch_bytes = scratch;
    int tasks = hv_pool_size(pool) < j.o.n_chunks ? hv_pool_size(pool) : j.o.n_chunks;
    size_t esz = d->bf16 ? 2 : 4;
    int ready = rows && rows->ready;
    j.xs = ready ? (void *)rows->ready
                 : hv_pool_scratch(pool, hv_pool_size(pool), (size_t)j.m_pad * j.cols * esz);
    if (!j.xs) return -1;
    for (int t = 0; t < tasks; t++)
        if (!hv_pool_scratch(pool, t, out + scratch + 64)) return -1;
    int conv_tasks =
        hv_pool_size(pool) < j.m_pad / M_CLASS ? hv_pool_size(pool) : j.m_pad / M_CLASS;
    double t0 = hv_prof_now(prof);
    if (!ready) hv_pool_run(pool, conv_tasks, convert_task, &j);
    hv_prof_part(prof, rows ? rows->stage : HV_STAGE_BF16_CONVERT, t0);
    hv_pool_run(pool, tasks, gemm_task, &j);
    return 0;
}

int hv_onednn_gemm(hv_onednn *d, hv_pool *pool, int n, const float *x, int count,
                   const hv_mat *const *W, const float *const *bias, float *const *y,
                   const hv_epilogue *ep, hv_profile *prof) {
    return gemm_from(d, pool, n, x, NULL, count, W, bias, y, NULL, ep, prof);
}

int hv_onednn_gemm_rows(hv_onednn *d, hv_pool *pool, int n, const hv_onednn_rows *rows, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y,
                        const hv_epilogue *ep, hv_profile *prof) {
    if (!rows || (!rows->fill && !rows->ready)) return -1;
    return gemm_from(d, pool, n, NULL, rows, count, W, bias, y, NULL, ep, prof);
}

int hv_onednn_gemm_sink(hv_onednn *d, hv_pool *pool, int n, const float *x,
                        const hv_onednn_rows *rows, int count, const hv_mat *const *W,
                        const float *const *bias, const hv_onednn_sink *sink, hv_profile *prof) {
    if ((rows ? !rows->fill && !rows->ready : !x) || !sink || !sink->put) return -1;
    float *const none[HV_GEMM_MAX_OUT] = {NULL};
    return gemm_from(d, pool, n, rows ? NULL : x, rows, count, W, bias, none, sink, NULL, prof);
}

/* ------------------------------------------------ attention's products */

/* One element of an operand of d's type, as a float. */
static float elem(const hv_onednn *d, const void *x, long i) {
    return d->bf16 ? hv_bf16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

int hv_onednn_matmul(hv_onednn *d, int m, int n, int k, const void *a, long lda, const void *b,
                     long ldb, int b_trans, float *c, long ldc) {
    if (!d || m < 1 || n < 1 || k < 1 || lda < k || ldb < (b_trans ? k : n) || ldc < n) return -1;
    prim_key key = {.m = m, .k = k, .n = n, .b_trans = b_trans, .lda = lda, .ldb = ldb, .ldc = ldc};
    const prim *p = get_prim(d, &key);
    int was = omp_hold();
    dnn_ctx *ctx = p ? ctx_take(d) : NULL;
    void *scratch = ctx ? ctx_scratch(ctx, p->scratch_bytes) : NULL;
    void *const h[N_ARGS] = {(void *)a, (void *)b, c, scratch, NULL};
    int ok = ctx && ctx_run(d, ctx, p, h, scratch ? ctx->scratch_bytes : 0) == 0;
    if (ctx) ctx_give(d, ctx);
    omp_release(was);
    if (ok) return 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
            for (int t = 0; t < k; t++)
                s = fmaf(elem(d, a, (long)i * lda + t),
                         elem(d, b, b_trans ? (long)j * ldb + t : (long)t * ldb + j), s);
            c[(long)i * ldc + j] = s;
        }
    return 1;
}

#else /* without oneDNN */

int hv_onednn_compiled(void) { return 0; }
int hv_onednn_rows_class(int n) {
    (void)n;
    return 0;
}
int hv_onednn_native_bf16(void) { return 0; }
hv_onednn *hv_onednn_new(int bf16) {
    (void)bf16;
    return NULL;
}
void hv_onednn_free(hv_onednn *d) { (void)d; }
int hv_onednn_primitives(hv_onednn *d) {
    (void)d;
    return 0;
}
int hv_onednn_is_bf16(const hv_onednn *d) {
    (void)d;
    return 0;
}
int hv_onednn_takes(const hv_onednn *d, const hv_mat *W) {
    (void)d;
    (void)W;
    return 0;
}
int hv_onednn_impl(const hv_onednn *d, int n, int cols, int rows, char *buf, size_t size) {
    (void)d, (void)n, (void)cols, (void)rows;
    if (size) buf[0] = '\0';
    return -1;
}
int hv_onednn_fuses_bias(hv_onednn *d, int n, int cols, int rows) {
    (void)d, (void)n, (void)cols, (void)rows;
    return 0;
}
int hv_onednn_gemm(hv_onednn *d, hv_pool *pool, int n, const float *x, int count,
                   const hv_mat *const *W, const float *const *bias, float *const *y,
                   const hv_epilogue *ep, hv_profile *prof) {
    (void)d, (void)pool, (void)n, (void)x, (void)count, (void)W, (void)bias, (void)y, (void)ep;
    (void)prof;
    return -1;
}

int hv_onednn_gemm_rows(hv_onednn *d, hv_pool *pool, int n, const hv_onednn_rows *rows, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y,
                        const hv_epilogue *ep, hv_profile *prof) {
    (void)rows;
    return hv_onednn_gemm(d, pool, n, NULL, count, W, bias, y, ep, prof);
}
int hv_onednn_gemm_sink(hv_onednn *d, hv_pool *pool, int n, const float *x,
                        const hv_onednn_rows *rows, int count, const hv_mat *const *W,
                        const float *const *bias, const hv_onednn_sink *sink, hv_profile *prof) {
    (void)d, (void)pool, (void)n, (void)x, (void)rows, (void)count, (void)W, (void)bias, (void)sink;
    (void)prof;
    return -1;
}
int hv_onednn_matmul(hv_onednn *d, int m, int n, int k, const void *a, long lda, const void *b,
                     long ldb, int b_trans, float *c, long ldc) {
    (void)d, (void)m, (void)n, (void)k, (void)a, (void)lda, (void)b, (void)ldb, (void)b_trans;
    (void)c, (void)ldc;
    return -1;
}

#endif
