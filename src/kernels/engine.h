/* The kernel interface the model's stages call (encoder.c, decoder.c):
 * products with weights (linear, with an epilogue), the encoder's
 * relative-position attention heads, the subsampling's and the
 * convolution module's convolutions. Behind it sit the engines: our
 * kernel tables (matmul.c, gemm.c, gemm_q8.c: the table chosen once per
 * process from the CPU's features, matmul_impl.h) and oneDNN (onednn.c),
 * with the compute mode, all chosen once per model from the CPU class
 * (hv_model_compute_init, compute.c) and handed to the stages in a
 * hv_engine. A stage names what it computes; which engine runs it, and
 * how the activations are staged for it (rounded to bf16, converted,
 * padded to a shape class), is decided here and nowhere else
 * (docs/KERNELS.md, "The kernel interface").
 *
 * The f32 results are those of our tables (hv_linear and kin, matmul.h,
 * bit for bit); bf16 compute rounds every product's activations and
 * attention operands to bf16 and sums in f32. */
#ifndef HV_ENGINE_H
#define HV_ENGINE_H

#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/profile.h"
#include "kernels/threads.h"

struct hv_onednn;
struct hv_onednn_sink;

/* The shape classes of the products the stages ask for, each run by one
 * engine (hv_engine_pick): products with weights by their activation rows
 * n, the attention heads' products, the convolutions. */
typedef enum hv_shape_class {
    HV_CLASS_GEMV,      /* n <= HV_LINEAR_GEMV_MAX_N: decoder steps, beams */
    HV_CLASS_SKINNY,    /* n <= HV_CLASS_SKINNY_MAX_N: short prompts, short chunks */
    HV_CLASS_GEMM,      /* more rows: the encoder's products */
    HV_CLASS_ATTENTION, /* the encoder attention's per-head products */
    HV_CLASS_CONV,      /* the subsampling's and the convolution module's convolutions */
    HV_N_CLASSES
} hv_shape_class;

#define HV_CLASS_SKINNY_MAX_N 64

/* The class of a product with weights of n activation rows. */
hv_shape_class hv_shape_class_rows(int n);

typedef enum hv_engine_kind {
    HV_ENGINE_OURS,   /* our kernel tables (matmul.c, gemm.c, gemm_q8.c), direct loops */
    HV_ENGINE_ONEDNN, /* oneDNN's primitives (onednn.c) */
} hv_engine_kind;

/* The engine that runs shape class cls on a CPU of class cpu in bf16
 * compute (bf16 = 1) or f32: the first row of the class table
 * (engine_class.c, docs/KERNELS.md "Engines by shape class") that matches,
 * each row with the host and figures that chose it. f32 compute is always
 * our tables (its bits are theirs). A pure function. */
hv_engine_kind hv_engine_pick(hv_cpu cpu, int bf16, hv_shape_class cls);

/* What runs a context's products: its threads and the model's choice of
 * engines. A plain value; the pool, the oneDNN engine and the profile
 * stay their owners'. */
typedef struct hv_engine {
    /* every job's threads; NULL: the caller's alone */
    hv_pool *pool;
    /* bf16 compute: activations rounded to bf16 (nearest even) before each
     * product with f32, f16 or bf16 weights (q8_0 and q4_0 quantize theirs
     * in either mode), and the attention's operands likewise */
    int bf16;
    /* runs the shape classes on_dnn names (1 per class), where it takes the
     * weights; NULL: our tables run all */
    struct hv_onednn *dnn;
    unsigned char on_dnn[HV_N_CLASSES];
    /* NULL, or where the stages' times go (profile.h) */
    hv_profile *prof;
} hv_engine;

/* on_dnn[HV_N_CLASSES]: 1 for each shape class hv_engine_pick runs on
 * oneDNN for cpu in bf16 compute (bf16 = 1) or f32, else 0. */
void hv_engine_classes(hv_cpu cpu, int bf16, unsigned char *on_dnn);

/* The engine for a pool in a model's compute mode (bf16: 1 for
 * HV_COMPUTE_BF16) on dnn (NULL: our tables), without a profile, the
 * shape classes on_dnn names on dnn (a model's hv_engine_classes). */
hv_engine hv_engine_with(hv_pool *pool, int bf16, struct hv_onednn *dnn,
                         const unsigned char *on_dnn);

/* The same with every class that oneDNN can run (all but GEMV and
 * convolutions) on dnn whatever the CPU: for tests and benchmarks that
 * name the engine they measure. */
hv_engine hv_engine_make(hv_pool *pool, int bf16, struct hv_onednn *dnn);

/* Whether e runs a product of n rows with W on oneDNN. */
int hv_eng_on_dnn(const hv_engine *e, int n, const hv_mat *W);

/* y[n x W.rows] = x[n x W.cols] . W^T (+ bias when not NULL), then the
 * epilogue ep (NULL: none; hv_ep_silu, hv_ep_relu, or a residual:
 * matmul_impl.h). oneDNN runs it where e runs n's shape class
 * (hv_shape_class_rows) on its oneDNN engine and that takes W; otherwise
 * our tables, on activations rounded to bf16 first in bf16 compute (in
 * f32 compute the bits of hv_linear_ep_with on the best table). */
void hv_eng_linear(const hv_engine *e, float *y, const float *x, int n, const hv_mat *W,
                   const float *bias, const hv_epilogue *ep);
extern const hv_epilogue hv_ep_silu, hv_ep_relu;

/* count products of one input, y[m] = x . W[m]^T + bias[m] (bias[m] may
 * be NULL), each as hv_eng_linear computes it; x staged once for all of
 * them (the attention's query, key and value; hv_linear_many). */
void hv_eng_linear_many(const hv_engine *e, int n, const float *x, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y);

/* y[n x d] = LayerNorm(x; eps) * w + b (hv_layernorm; y may be x), rows
 * spread over e's pool. */
void hv_eng_layernorm(const hv_engine *e, float *y, const float *x, int n, int d, const float *w,
                      const float *b, float eps);

/* The products of a LayerNorm's output: y[m] = LayerNorm(x; nw, nb, eps) .
 * W[m]^T + bias[m] for count matrices of d columns, as hv_eng_layernorm
 * and then hv_eng_linear (count 1, with the epilogue ep) or
 * hv_eng_linear_many (ep NULL) compute them. Where oneDNN runs every
 * product the LayerNorm's rows go straight into its input, as bf16 in
 * bf16 compute (one pass instead of the norm's and the conversion's), and
 * norm is not written; otherwise norm [n x d] holds the LayerNorm. */
void hv_eng_norm_linear(const hv_engine *e, float *norm, const float *x, int n, int d,
                        const float *nw, const float *nb, float eps, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y,
                        const hv_epilogue *ep);

/* A feed-forward from x [n x d]: y = SiLU(LayerNorm(x; nw, nb, eps) .
 * up^T + up_b) . down^T + down_b, then the epilogue ep (the residual);
 * norm [n x d] and hidden [n x up.rows] scratch. On the bf16 oneDNN
 * engine the first product's outputs go through SiLU straight into the
 * second's input as bf16 (in hidden's memory); otherwise
 * hv_eng_norm_linear (with hv_ep_silu) then hv_eng_linear. The same bits
 * either way. */
void hv_eng_feed_forward(const hv_engine *e, float *norm, const float *x, int n, int d,
                         const float *nw, const float *nb, float eps, const hv_mat *up,
                         const float *up_b, const hv_mat *down, const float *down_b, float *hidden,
                         float *y, const hv_epilogue *ep);

/* The products of hv_eng_norm_linear (count of them, no epilogue) with
 * their outputs handed to sink (onednn.h) instead of written: 0 when
 * oneDNN ran every one; -1, having done nothing, where hv_eng_norm_linear
 * would not run them all on oneDNN. */
int hv_eng_norm_linear_sink(const hv_engine *e, const float *x, int n, int d, const float *nw,
                            const float *nb, float eps, int count, const hv_mat *const *W,
                            const float *const *bias, const struct hv_onednn_sink *sink);

/* A layer's linear_pos rows for N frames (positions N-1 .. -(N-1): P =
 * 2N - 1 rows) as the heads read them: f32 [P x d], or in the heads' bf16
 * layout, per head [P + HV_ATT_POS_PAD][d / H] bf16 rows (the last
 * HV_ATT_POS_PAD zero, for the padded bands). A chunk of n <= N frames
 * reads rows N-n .. N+n-2. */
typedef struct hv_att_pos {
    const float *p; /* hv_attention_pos_floats(N, d, H, bf16) floats */
    int N, bf16;
} hv_att_pos;
#define HV_ATT_POS_PAD 48

/* Whether e's heads take positions in their bf16 layout from products
 * with W for N frames: bf16 compute with the attention and the products
 * on oneDNN's bf16 engine. */
int hv_attention_pos_bf16(const hv_engine *e, int N, const hv_mat *W);

/* Floats of a layer's positions in either layout. */
long hv_attention_pos_floats(int N, int d, int H, int bf16);

/* dst[m] = pos [(2N-1) x d] . W[m]^T for count layers, in the layout bf16
 * names (bf16 only where hv_attention_pos_bf16 holds for every W[m]): f32
 * as hv_eng_linear computes it, or its outputs rounded to bf16 straight
 * into the heads' layout (oneDNN taking pos once for every few layers).
 * 0, or -1 when out of memory (dst then undefined). */
int hv_eng_attention_pos(const hv_engine *e, float *const *dst, int count, const float *pos, int N,
                         int d, int H, const hv_mat *const *W, int bf16);

/* A layer's relative-position self-attention from its input x [n x d]
 * (the first len rows valid): the LayerNorm (nw, nb, eps), the q, k, v
 * projections (W[0..2], bias[0..2]), hv_attention_heads with the
 * positions pos (hv_att_pos, N >= n), and the output projection y [n x d]
 * = ctx . W[3]^T + bias[3], then the epilogue ep (the residual); norm,
 * ctx [n x d] and qkv ([3] of [n x d]) scratch. On the bf16 oneDNN engine
 * the projections' outputs go straight into the heads' operands, rounded
 * to bf16 in the layout their products read (the bits hv_attention_heads
 * would stage from f32 q, k, v), positions in the bf16 layout are read
 * where they lie, and the output projection reads the heads' contexts
 * from their scratch as bf16 (the bits of converting ctx); otherwise
 * hv_eng_norm_linear, hv_attention_heads and hv_eng_linear, the same
 * bits. */
void hv_eng_attention(const hv_engine *e, float *norm, const float *x, int n, int len, int d, int H,
                      const float *nw, const float *nb, float eps, const hv_mat *const *W,
                      const float *const *bias, float *const *qkv, float *ctx,
                      const hv_att_pos *pos, const float *u, const float *vb, float *att, float *y,
                      const hv_epilogue *ep);

/* The relative-position self-attention of one encoder layer after its q,
 * k, v projections ([n x d], the first len rows valid), over H heads of d
 * / H spread over e's pool: ctx [n x d] (rows >= len zero), from p, the
 * linear_pos rows of positions n-1 .. -(n-1) ([(2n-1) x d]), and the
 * biases u, vb [d]; att is scratch of hv_attention_scratch floats for the
 * same bf16. f32: each head's products on the best table's sgemm_nn (the
 * same bits on every table). bf16: the per-head products take
 * bf16-rounded operands and probabilities and sum in f32, on e's oneDNN
 * engine when it has one (an f32 engine, which only the tests give bf16
 * compute, multiplies the rounded values as floats in the engine's padded
 * shapes), else on plain f32 GEMMs of the rounded values
 * (docs/KERNELS.md, "The encoder's attention in bf16"). With e->prof, the
 * job's time goes to its products, softmax and staging (profile.h). */
void hv_attention_heads(const hv_engine *e, int n, int len, int d, int H, const float *q,
                        const float *k, const float *v, const float *p, const float *u,
                        const float *vb, float *att, float *ctx);
long hv_attention_scratch(int n, int d, int H, int bf16);

/* Queries per band of the attention's position scores: a band of T
 * queries needs len + T - 1 of the 2n - 1 relative positions (what
 * hv_encoder_flops counts). */
#define HV_POS_BAND 32

/* The subsampling's 3x3 convolution, stride 2, padding 1, over e's pool:
 * out [T2 x F2 x C] (T2, F2: the output's lengths, hv_sub_conv_len) from
 * in [T x F x cin] (cin = C for a depthwise one, each channel its own
 * taps; 1 for the first, one input channel to C); w the taps tap-major
 * [3 x 3 x C], b [C]; then ReLU when relu. Each output is its bias plus
 * the taps in (time, frequency) order. */
void hv_conv3x3_s2(const hv_engine *e, float *out, int T2, int F2, const float *in, int T, int F,
                   int C, int depthwise, const float *w, const float *b, int relu);

/* The subsampling's first two convolutions as one: out [T4 x F4 x C]
 * is hv_conv3x3_s2's depthwise convolution (w1, b1, no ReLU) of the image
 * [T2 x F2 x C] that hv_conv3x3_s2's first one (one input channel, w0,
 * b0, ReLU) makes from in [T x F], with that image's time rows >= len2
 * zero: the same bits, without the image in memory (each task computes
 * the image rows it reads into scratch of its own). -1, with nothing
 * done, when that scratch cannot be had. */
int hv_conv3x3_s2_pair(const hv_engine *e, float *out, int T4, int F4, const float *in, int T,
                       int F, int T2, int F2, int len2, int C, const float *w0, const float *b0,
                       const float *w1, const float *b1);

/* The convolution module's depthwise convolution over time (K taps,
 * padding (K - 1) / 2, BatchNorm folded into w and b) and SiLU, over e's
 * pool: out [n x d] from in [n x d], w tap-major [K x d], b [d]. */
void hv_dwconv_silu(const hv_engine *e, float *out, const float *in, int n, int d, int K,
                    const float *w, const float *b);

#endif
