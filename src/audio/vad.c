/* Silero VAD v5 at 16 kHz (docs/VAD.md has the graph this follows):
 *
 *   [64 context | 512 window] --reflect pad 64--> 640 samples
 *   --STFT (conv1d, basis [258, 1, 256], stride 128)--> 4 frames
 *   --sqrt(re^2 + im^2)--> [129, 4]
 *   --4 x (conv1d k3 p1 + ReLU): 129->128 s1, 128->64 s2, 64->64 s2,
 *     64->128 s1--> [128, 1]
 *   --LSTM cell (state h, c carried across windows)--> h
 *   --ReLU, 1x1 conv 128->1, sigmoid--> probability
 *
 * Everything before the LSTM depends on the samples alone, so all windows
 * are encoded in parallel as matrix products (blocks of BLOCK windows, one
 * stripe of blocks per task); the LSTM input products go with them. Then
 * the recurrence runs window by window. Audio is handled in segments of
 * SEGMENT windows so that memory stays bounded for hours of input. */
#include "audio/vad.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio/audio.h"
#include "kernels/matmul.h"
#include "model/safetensors.h"
#include "params.h"
#include "pipeline.h"
#include "util/json_file.h"

#define BLOCK            32           /* windows per matrix product */
#define SEGMENT          (64 * BLOCK) /* windows encoded before the recurrence runs */
#define MAX_CONFIG_BYTES (1u << 20)

/* ----------------------------------------------------------- config */

/* An integer in [min, max]: a required key of the object, or (key NULL) an
 * array element named by what. */
static hv_status json_int(const char *path, const cJSON *it, const char *what, int min, int max,
                          int *out, hv_error *e) {
    if (!it) return hv_err(e, HV_ERR_FORMAT, "%s: %s: missing", path, what);
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!(v >= min && v <= max) || v != floor(v))
        return hv_err(e, HV_ERR_FORMAT, "%s: %s: must be an integer in [%d, %d]", path, what, min,
                      max);
    *out = (int)v;
    return HV_OK;
}

static hv_status cfg_int(const char *path, const cJSON *root, const char *key, int min, int max,
                         int *out, hv_error *e) {
    return json_int(path, cJSON_GetObjectItemCaseSensitive(root, key), key, min, max, out, e);
}

/* A list of 1..HV_VAD_MAX_LAYERS integers in [min, max]; *n is its length. */
static hv_status cfg_ints(const char *path, const cJSON *root, const char *key, int min, int max,
                          int *out, int *n, hv_error *e) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a) return hv_err(e, HV_ERR_FORMAT, "%s: %s: missing", path, key);
    int len = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    if (len < 1 || len > HV_VAD_MAX_LAYERS)
        return hv_err(e, HV_ERR_FORMAT, "%s: %s: must be a list of 1 to %d integers", path, key,
                      HV_VAD_MAX_LAYERS);
    for (int i = 0; i < len; i++) {
        char what[80];
        snprintf(what, sizeof what, "%s[%d]", key, i);
        hv_status st = json_int(path, cJSON_GetArrayItem(a, i), what, min, max, &out[i], e);
        if (st) return st;
    }
    *n = len;
    return HV_OK;
}

/* Reads and checks config.json and derives the sizes of the forward pass. */
static hv_status load_config(hv_vad *v, const char *path, hv_error *e) {
    cJSON *root;
    hv_status st = hv_json_read_object(path, MAX_CONFIG_BYTES, &root, e);
    if (st) return st;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    int version = 0, n_strides = 0;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, HV_VAD_FORMAT)) {
        st = hv_err(e, HV_ERR_FORMAT, "%s: format: must be \"%s\"", path, HV_VAD_FORMAT);
        goto done;
    }
    if ((st = cfg_int(path, root, "format_version", 1, 1000, &version, e))) goto done;
    if (version != HV_VAD_FORMAT_VERSION) {
        st = hv_err(e, HV_ERR_UNSUPPORTED, "%s: format_version %d: this hviske reads %d", path,
                    version, HV_VAD_FORMAT_VERSION);
        goto done;
    }
    if ((st = cfg_int(path, root, "sample_rate", 1000, 192000, &v->sample_rate, e)) ||
        (st = cfg_int(path, root, "window_samples", 16, 65536, &v->window, e)) ||
        (st = cfg_int(path, root, "context_samples", 0, v->window, &v->context, e)) ||
        (st = cfg_int(path, root, "reflect_pad", 0, v->context + v->window - 1, &v->reflect_pad,
                      e)) ||
        (st = cfg_int(path, root, "n_fft", 2, v->context + v->window + v->reflect_pad, &v->n_fft,
                      e)) ||
        (st = cfg_int(path, root, "hop_length", 1, v->n_fft, &v->hop, e)) ||
        (st = cfg_int(path, root, "encoder_kernel", 1, 15, &v->kernel, e)) ||
        (st = cfg_ints(path, root, "encoder_channels", 1, 4096, v->channels, &v->n_layers, e)) ||
        (st = cfg_ints(path, root, "encoder_strides", 1, 16, v->strides, &n_strides, e)) ||
        (st = cfg_int(path, root, "hidden_size", 1, 4096, &v->hidden, e)))
        goto done;
    if (v->kernel % 2 == 0) {
        st = hv_err(e, HV_ERR_FORMAT, "%s: encoder_kernel: must be odd", path);
    } else if (n_strides != v->n_layers) {
        st = hv_err(e, HV_ERR_FORMAT, "%s: encoder_strides: %d values for %d layers", path,
                    n_strides, v->n_layers);
    } else if (v->hidden != v->channels[v->n_layers - 1]) {
        st = hv_err(e, HV_ERR_FORMAT,
                    "%s: hidden_size %d: must equal the last "
                    "encoder_channels (%d)",
                    path, v->hidden, v->channels[v->n_layers - 1]);
    } else {
        v->n_freq = v->n_fft / 2 + 1;
        v->n_frames = (v->context + v->window + v->reflect_pad - v->n_fft) / v->hop + 1;
        v->len[0] = v->n_frames;
        for (int l = 0; l < v->n_layers; l++) {
            v->in_ch[l] = l ? v->channels[l - 1] : v->n_freq;
            v->len[l + 1] = (v->len[l] + 2 * (v->kernel / 2) - v->kernel) / v->strides[l] + 1;
        }
        if (v->len[v->n_layers] != 1)
            st = hv_err(e, HV_ERR_FORMAT,
                        "%s: the encoder gives %d steps per window "
                        "(%d STFT frames through strides of encoder_strides); the "
                        "detector needs 1",
                        path, v->len[v->n_layers], v->n_frames);
    }
done:
    cJSON_Delete(root);
    return st;
}

/* ---------------------------------------------------------- weights */

/* Copies tensor `name` of the expected shape (dims, ndim) as f32 into a new
 * buffer. */
static hv_status take(const hv_safetensors *st, const char *path, const char *name,
                      const int64_t *dims, int ndim, float **out, hv_error *e) {
    const hv_st_tensor *t = hv_st_find(st, name);
    if (!t) return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: missing", path, name);
    if (t->dtype != HV_DT_F32)
        return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: dtype %s, expected F32", path, name,
                      hv_dtype_name(t->dtype));
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == dims[i];
    if (!same) {
        char got[160] = "", want[160] = "";
        for (int i = 0, k = 0; i < t->ndim; i++)
            k += snprintf(got + k, sizeof got - (size_t)k, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        for (int i = 0, k = 0; i < ndim; i++)
            k += snprintf(want + k, sizeof want - (size_t)k, "%s%lld", i ? ", " : "",
                          (long long)dims[i]);
        return hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: shape [%s], expected [%s]", path, name, got,
                      want);
    }
    float *buf = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *buf);
    if (!buf) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    hv_status s = hv_st_to_f32(t, buf, e);
    for (int64_t i = 0; !s && i < t->numel; i++)
        if (!isfinite(buf[i]))
            s = hv_err(e, HV_ERR_FORMAT, "%s: tensor %s: element %lld is not finite", path, name,
                       (long long)i);
    if (s) {
        free(buf);
        return s;
    }
    *out = buf;
    return HV_OK;
}

static hv_status load_weights(hv_vad *v, const char *path, hv_error *e) {
    hv_safetensors st;
    hv_status s = hv_st_open_file(&st, path, e);
    if (s) return s;
    int h = v->hidden, nf = v->n_freq;
    float *dec_b = NULL;
    char name[64];
    s = take(&st, path, "stft.forward_basis_buffer", (const int64_t[]){2 * nf, 1, v->n_fft}, 3,
             &v->basis, e);
    for (int l = 0; l < v->n_layers && !s; l++) {
        snprintf(name, sizeof name, "encoder.%d.reparam_conv.weight", l);
        s = take(&st, path, name, (const int64_t[]){v->channels[l], v->in_ch[l], v->kernel}, 3,
                 &v->conv_w[l], e);
        snprintf(name, sizeof name, "encoder.%d.reparam_conv.bias", l);
        if (!s) s = take(&st, path, name, (const int64_t[]){v->channels[l]}, 1, &v->conv_b[l], e);
    }
    if (!s)
        s = take(&st, path, "decoder.rnn.weight_ih", (const int64_t[]){4 * h, h}, 2, &v->w_ih, e);
    if (!s)
        s = take(&st, path, "decoder.rnn.weight_hh", (const int64_t[]){4 * h, h}, 2, &v->w_hh, e);
    if (!s) s = take(&st, path, "decoder.rnn.bias_ih", (const int64_t[]){4 * h}, 1, &v->b_ih, e);
    if (!s) s = take(&st, path, "decoder.rnn.bias_hh", (const int64_t[]){4 * h}, 1, &v->b_hh, e);
    if (!s)
        s = take(&st, path, "decoder.decoder.2.weight", (const int64_t[]){1, h, 1}, 3, &v->dec_w,
                 e);
    if (!s) s = take(&st, path, "decoder.decoder.2.bias", (const int64_t[]){1}, 1, &dec_b, e);
    if (!s) v->dec_b = dec_b[0];
    free(dec_b);
    hv_st_close(&st);
    return s;
}

hv_status hv_vad_init(hv_vad *v, const char *dir, hv_error *e) {
    memset(v, 0, sizeof *v);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    hv_status s = load_config(v, path, e);
    if (!s) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        s = load_weights(v, path, e);
    }
    if (s) hv_vad_release(v);
    return s;
}

void hv_vad_release(hv_vad *v) {
    if (!v) return;
    free(v->basis);
    for (int l = 0; l < HV_VAD_MAX_LAYERS; l++) {
        free(v->conv_w[l]);
        free(v->conv_b[l]);
    }
    free(v->w_ih);
    free(v->w_hh);
    free(v->b_ih);
    free(v->b_hh);
    free(v->dec_w);
    memset(v, 0, sizeof *v);
}

/* ---------------------------------------------------------- forward */

size_t hv_vad_n_windows(const hv_vad *v, size_t n) {
    return n / (size_t)v->window + (n % (size_t)v->window != 0);
}

/* Scratch layout of one task, in floats. */
typedef struct scratch_plan {
    size_t input, frames, spec, act, col, total;
} scratch_plan;

static scratch_plan plan_scratch(const hv_vad *v) {
    scratch_plan p;
    size_t act = (size_t)v->n_frames * v->n_freq, col = 0;
    for (int l = 0; l < v->n_layers; l++) {
        size_t out = (size_t)v->len[l + 1] * v->channels[l];
        size_t c = (size_t)v->len[l + 1] * v->in_ch[l] * v->kernel;
        if (out > act) act = out;
        if (c > col) col = c;
    }
    p.input = (size_t)(v->context + v->window + v->reflect_pad);
    p.frames = (size_t)BLOCK * v->n_frames * v->n_fft;
    p.spec = (size_t)BLOCK * v->n_frames * 2 * v->n_freq;
    p.act = (size_t)BLOCK * act;
    p.col = (size_t)BLOCK * col;
    p.total = p.input + p.frames + p.spec + 2 * p.act + p.col;
    return p;
}

/* The model's input for window w: the context samples before it (zeros
 * before the signal), the window (zeros past its end), then the reflection
 * of the last samples: buf[L + j] = buf[L - 2 - j]. With `reverse` the
 * signal is x backwards, the zeros that pad x's last window first, so
 * that its window w is x's window n_win - 1 - w read from its end. */
static void window_input(const hv_vad *v, const float *x, size_t n, size_t w, int reverse,
                         float *buf) {
    int L = v->context + v->window;
    int64_t start = (int64_t)w * v->window - v->context;
    int64_t last = (int64_t)hv_vad_n_windows(v, n) * v->window - 1;
    for (int i = 0; i < L; i++) {
        int64_t k = start + i;
        if (reverse && k >= 0) k = last - k; /* a k past the signal's start stays negative */
        buf[i] = k >= 0 && (uint64_t)k < n ? x[k] : 0.0f;
    }
    for (int j = 0; j < v->reflect_pad; j++) buf[L + j] = buf[L - 2 - j];
}

/* conv1d (kernel K, padding K/2, stride s) + bias + ReLU over nb windows:
 * in [nb][T][C_in] -> out [nb][T'][C_out], as one product with the weight
 * [C_out][C_in * K] after unfolding the input into col (columns c * K + k,
 * the weight's own order). */
static void conv_relu(const hv_vad *v, int l, int nb, const float *in, float *out, float *col) {
    int T = v->len[l], To = v->len[l + 1], C = v->in_ch[l], K = v->kernel;
    int Co = v->channels[l], s = v->strides[l], pad = K / 2, width = C * K;
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < To; t++) {
            float *row = col + ((size_t)b * To + t) * width;
            for (int k = 0; k < K; k++) {
                int ti = t * s + k - pad;
                if (ti < 0 || ti >= T) {
                    for (int c = 0; c < C; c++) row[c * K + k] = 0.0f;
                    continue;
                }
                const float *src = in + ((size_t)b * T + (size_t)ti) * C;
                for (int c = 0; c < C; c++) row[c * K + k] = src[c];
            }
        }
    int rows = nb * To;
    hv_gemm(rows, Co, width, 1.0f, col, width, v->conv_w[l], width, 1, 0.0f, out, Co);
    for (int r = 0; r < rows; r++) {
        float *y = out + (size_t)r * Co;
        for (int c = 0; c < Co; c++) {
            float z = y[c] + v->conv_b[l][c];
            y[c] = z > 0 ? z : 0.0f;
        }
    }
}

/* Encodes windows [w0, w0 + nb) and writes their LSTM input products
 * x . W_ih^T + b_ih + b_hh to gates[nb][4 hidden]. */
static void encode_block(const hv_vad *v, const float *x, size_t n, size_t w0, int nb, float gain,
                         int reverse, float *scratch, float *gates) {
    scratch_plan p = plan_scratch(v);
    float *input = scratch, *frames = input + p.input, *spec = frames + p.frames;
    float *a = spec + p.spec, *b = a + p.act, *col = b + p.act;
    int F = v->n_frames, nfft = v->n_fft, nf = v->n_freq, h4 = 4 * v->hidden;
    for (int i = 0; i < nb; i++) {
        window_input(v, x, n, w0 + (size_t)i, reverse, input);
        for (int f = 0; f < F; f++)
            memcpy(frames + ((size_t)i * F + f) * nfft, input + (size_t)f * v->hop,
                   (size_t)nfft * sizeof *frames);
    }
    /* STFT: real rows of the basis, then imaginary; magnitude as the graph
     * has it, sqrt(re^2 + im^2) */
    hv_gemm(nb * F, 2 * nf, nfft, 1.0f, frames, nfft, v->basis, nfft, 1, 0.0f, spec, 2 * nf);
    for (size_t r = 0; r < (size_t)nb * F; r++) {
        const float *re = spec + r * 2 * nf, *im = re + nf;
        for (int j = 0; j < nf; j++) a[r * nf + j] = sqrtf(re[j] * re[j] + im[j] * im[j]);
        if (gain != 1.0f) /* the STFT is linear: the input times gain */
            for (int j = 0; j < nf; j++) a[r * nf + j] *= gain;
    }
    for (int l = 0; l < v->n_layers; l++) {
        conv_relu(v, l, nb, a, b, col);
        float *t = a;
        a = b;
        b = t;
    }
    hv_gemm(nb, h4, v->hidden, 1.0f, a, v->hidden, v->w_ih, v->hidden, 1, 0.0f, gates, h4);
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < h4; j++) gates[(size_t)i * h4 + j] += v->b_ih[j] + v->b_hh[j];
}

typedef struct encode_job {
    const hv_vad *v;
    const float *x;
    size_t n;
    size_t w0, n_win; /* the segment */
    float *gates;     /* [n_win][4 hidden] */
    float *scratch;   /* one plan_scratch().total per task */
    size_t per_task;
    float gain;  /* applied to the input */
    int reverse; /* the input backwards (window_input) */
} encode_job;

/* Task t encodes blocks t, t + n_tasks, ...: every block is computed the
 * same way whatever the number of threads. */
static void encode_task(void *arg, int task, int n_tasks) {
    const encode_job *J = arg;
    size_t n_blocks = (J->n_win + BLOCK - 1) / BLOCK;
    for (size_t blk = (size_t)task; blk < n_blocks; blk += (size_t)n_tasks) {
        size_t first = blk * BLOCK;
        int nb = (int)(J->n_win - first < BLOCK ? J->n_win - first : BLOCK);
        encode_block(J->v, J->x, J->n, J->w0 + first, nb, J->gain, J->reverse,
                     J->scratch + task * J->per_task, J->gates + first * 4 * (size_t)J->v->hidden);
    }
}

static float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

/* tanh through expf: glibc's tanhf (expm1f) took a fifth of the time. */
static float tanh_fast(float z) { return 1.0f - 2.0f / (expf(2.0f * z) + 1.0f); }

/* One LSTM step from the input products g (4 hidden, overwritten) and the
 * state (h, c); returns the window's probability. */
static float lstm_step(const hv_vad *v, float *g, float *h, float *c) {
    int H = v->hidden;
    /* OpenBLAS is single-threaded by now: hv_gemm, which sets that, ran
     * for the encoder first */
    cblas_sgemv(CblasRowMajor, CblasNoTrans, 4 * H, H, 1.0f, v->w_hh, H, h, 1, 1.0f, g, 1);
    float z = v->dec_b;
    for (int j = 0; j < H; j++) {
        float i = sigmoid(g[j]), f = sigmoid(g[H + j]), u = tanh_fast(g[2 * H + j]);
        float o = sigmoid(g[3 * H + j]);
        c[j] = f * c[j] + i * u;
        h[j] = o * tanh_fast(c[j]);
        z += v->dec_w[j] * (h[j] > 0 ? h[j] : 0.0f);
    }
    return sigmoid(z);
}

/* 1 when window w of the input (backwards with `reverse`) is digital
 * silence: every sample exactly zero. */
static int window_silent(const hv_vad *v, const float *x, size_t n, size_t w, int reverse) {
    size_t a = w * (size_t)v->window, b = a + (size_t)v->window;
    size_t last = hv_vad_n_windows(v, n) * (size_t)v->window - 1;
    for (size_t k = a; k < b; k++) {
        size_t i = reverse ? last - k : k;
        if (i < n && x[i] != 0.0f) return 0;
    }
    return 1;
}

hv_status hv_vad_forward_pass(const hv_vad *v, hv_pool *pool, const float *x, size_t n, float gain,
                              unsigned how, float *probs, hv_error *e) {
    int reverse = (how & HV_VAD_PASS_BACKWARDS) != 0, reset = (how & HV_VAD_PASS_RESET) != 0;
    size_t n_win = hv_vad_n_windows(v, n);
    if (n_win == 0) return HV_OK;
    int threads = pool ? hv_pool_size(pool) : 1;
    size_t max_blocks = ((n_win < SEGMENT ? n_win : SEGMENT) + BLOCK - 1) / BLOCK;
    int n_tasks = (size_t)threads < max_blocks ? threads : (int)max_blocks;
    scratch_plan p = plan_scratch(v);
    size_t seg = n_win < SEGMENT ? n_win : SEGMENT, H = (size_t)v->hidden;
    float *gates = malloc(seg * 4 * H * sizeof *gates);
    float *scratch = malloc((size_t)n_tasks * p.total * sizeof *scratch);
    float *state = calloc(2 * H, sizeof *state);
    if (!gates || !scratch || !state) {
        free(gates);
        free(scratch);
        free(state);
        return hv_err(e, HV_ERR_NOMEM, "speech detection: out of memory");
    }
    float *h = state, *c = state + H;
    for (size_t w0 = 0; w0 < n_win; w0 += SEGMENT) {
        size_t len = n_win - w0 < SEGMENT ? n_win - w0 : SEGMENT;
        encode_job J = {.v = v,
                        .x = x,
                        .n = n,
                        .w0 = w0,
                        .n_win = len,
                        .gates = gates,
                        .scratch = scratch,
                        .per_task = p.total,
                        .gain = gain,
                        .reverse = reverse};
        size_t blocks = (J.n_win + BLOCK - 1) / BLOCK;
        hv_pool_run(pool, (size_t)n_tasks < blocks ? n_tasks : (int)blocks, encode_task, &J);
        for (size_t i = 0; i < J.n_win; i++) {
            probs[w0 + i] = lstm_step(v, gates + i * 4 * H, h, c);
            /* the next window starts as the first of a file does */
            if (reset && window_silent(v, x, n, w0 + i, reverse))
                memset(state, 0, 2 * H * sizeof *state);
        }
    }
    free(gates);
    free(scratch);
    free(state);
    return HV_OK;
}

hv_status hv_vad_forward(const hv_vad *v, hv_pool *pool, const float *x, size_t n, float *probs,
                         hv_error *e) {
    return hv_vad_forward_pass(v, pool, x, n, 1.0f, 0, probs, e);
}

float hv_vad_level_gain(const hv_vad *v, const float *x, size_t n) {
    /* each window's RMS in whole dB (0: -120 dB or less, 120: 0 dB) */
    size_t hist[121] = {0}, windows = 0, w = (size_t)v->window;
    for (size_t a = 0; a < n; a += w, windows++) {
        size_t b = a + w < n ? a + w : n;
        double ss = 0;
        for (size_t i = a; i < b; i++) ss += (double)x[i] * x[i];
        double db = 10 * log10(ss / (double)w + 1e-12);
        int bin = (int)floor(db) + 120;
        hist[bin < 0 ? 0 : bin > 120 ? 120 : bin]++;
    }
    /* the level: the loudest windows but one and one in a thousand (clicks) */
    size_t k = 2 + windows / 1000, seen = 0;
    int level = 0;
    for (int bin = 120; bin >= 0; bin--)
        if ((seen += hist[bin]) >= k) {
            level = bin - 120;
            break;
        }
    if (windows == 0 || level >= HV_VAD_QUIET_DB || level <= -110) return 1.0f;
    double up = HV_VAD_RAISE_TO_DB - level;
    return (float)pow(10.0, (up < HV_VAD_MAX_GAIN_DB ? up : HV_VAD_MAX_GAIN_DB) / 20);
}

/* ---------------------------------------------------------- regions */

hv_status hv_vad_check_params(const hv_vad_params *p, hv_error *e) {
    /* the rows of params.c, on a transcription's settings holding p */
    char msg[512];
    if (hv_params_check_size(p->size, sizeof *p, "hv_vad_params", msg, sizeof msg))
        return hv_err(e, HV_ERR_INVALID_ARG, "%s", msg);
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.vad_params = *p;
    size_t at = offsetof(hv_transcribe_params, vad_params);
    if (hv_params_check_fields(&tp, at, at + sizeof tp.vad_params, msg, sizeof msg))
        return hv_err(e, HV_ERR_INVALID_ARG, "%s", msg);
    return HV_OK;
}

typedef struct possible_end {
    int64_t end, dur;
} possible_end;

/* Appends a region (out has room for every one). */
static void push_region(hv_speech_region *out, size_t *n, int64_t start, int64_t end) {
    out[*n].start_sample = start;
    out[*n].end_sample = end;
    (*n)++;
}

/* Python's a // 2 (floor). */
static int64_t half_floor(int64_t a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

/* Follows silero-vad's utils_vad.get_speech_timestamps (v5, "possible
 * ends" version) statement by statement, in double where it computes in
 * float and in integers where it does; docs/VAD.md describes it. */
hv_status hv_vad_speech_regions(const float *probs, size_t n_probs, size_t n_samples, int window,
                                int sample_rate, const hv_vad_params *p, hv_speech_region **out,
                                size_t *n_out, hv_error *e) {
    *out = NULL;
    *n_out = 0;
    hv_status st = hv_vad_check_params(p, e);
    if (st) return st;
    if (window < 1 || sample_rate < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "VAD window %d, sample rate %d", window, sample_rate);
    double sr = sample_rate, thr = p->threshold;
    double neg = p->neg_threshold >= 0 ? p->neg_threshold : fmax(thr - 0.15, 0.01);
    double min_speech = sr * p->min_speech_ms / 1000.0;
    double pad = sr * p->speech_pad_ms / 1000.0;
    double max_speech =
        p->max_speech_s > 0 ? sr * (double)p->max_speech_s - window - 2 * pad : INFINITY;
    double min_silence = sr * p->min_silence_ms / 1000.0;
    double min_silence_at_max = sr * HV_VAD_MIN_SILENCE_AT_MAX_SPEECH_MS / 1000.0;

    /* a window appends at most two regions (a cut at max_speech, then an
     * end with min_silence 0), the end of the signal one more */
    hv_speech_region *sp = calloc(2 * n_probs + 1, sizeof *sp);
    possible_end *ends = malloc((n_probs + 1) * sizeof *ends);
    if (!sp || !ends) {
        free(sp);
        free(ends);
        return hv_err(e, HV_ERR_NOMEM, "speech regions: out of memory");
    }
    size_t n = 0, n_ends = 0;
    int triggered = 0, have_cur = 0;
    int64_t cur_start = 0, temp_end = 0, prev_end = 0, next_start = 0;
    for (size_t i = 0; i < n_probs; i++) {
        double prob = probs[i];
        int64_t pos = (int64_t)window * (int64_t)i;
        if (prob >= thr && temp_end) {
            int64_t sil = pos - temp_end;
            if (sil > min_silence_at_max) ends[n_ends++] = (possible_end){temp_end, sil};
            temp_end = 0;
            if (next_start < prev_end) next_start = pos;
        }
        if (prob >= thr && !triggered) {
            triggered = 1;
            have_cur = 1;
            cur_start = pos;
            continue;
        }
        if (triggered && pos - cur_start > max_speech) {
            if (n_ends) {
                size_t best = 0; /* the first longest, as Python's max() */
                for (size_t k = 1; k < n_ends; k++)
                    if (ends[k].dur > ends[best].dur) best = k;
                prev_end = ends[best].end;
                int64_t dur = ends[best].dur;
                push_region(sp, &n, cur_start, prev_end);
                have_cur = 0;
                next_start = prev_end + dur;
                if (next_start < prev_end + pos) {
                    have_cur = 1;
                    cur_start = next_start;
                } else {
                    triggered = 0;
                }
                size_t kept = 0;
                for (size_t k = 0; k < n_ends; k++)
                    if (ends[k].end > next_start) ends[kept++] = ends[k];
                n_ends = kept;
                prev_end = next_start = temp_end = 0;
            } else {
                push_region(sp, &n, cur_start, pos);
                have_cur = 0;
                prev_end = next_start = temp_end = 0;
                triggered = 0;
                n_ends = 0;
                continue;
            }
        }
        if (prob < neg && triggered) {
            if (!temp_end) temp_end = pos;
            if (pos - temp_end < min_silence) continue;
            if (temp_end - cur_start > min_speech) push_region(sp, &n, cur_start, temp_end);
            have_cur = 0;
            prev_end = next_start = temp_end = 0;
            triggered = 0;
            n_ends = 0;
            continue;
        }
    }
    int64_t len = (int64_t)n_samples;
    if (have_cur && len - cur_start > min_speech) push_region(sp, &n, cur_start, len);
    free(ends);

    for (size_t i = 0; i < n; i++) {
        if (i == 0) sp[0].start_sample = (int64_t)fmax(0, sp[0].start_sample - pad);
        if (i + 1 < n) {
            int64_t sil = sp[i + 1].start_sample - sp[i].end_sample;
            if (sil < 2 * pad) {
                sp[i].end_sample += half_floor(sil);
                sp[i + 1].start_sample =
                    (int64_t)fmax(0, (double)(sp[i + 1].start_sample - half_floor(sil)));
            } else {
                sp[i].end_sample = (int64_t)fmin((double)len, sp[i].end_sample + pad);
                sp[i + 1].start_sample = (int64_t)fmax(0, sp[i + 1].start_sample - pad);
            }
        } else {
            sp[i].end_sample = (int64_t)fmin((double)len, sp[i].end_sample + pad);
        }
    }
    for (size_t i = 0; i < n; i++) {
        sp[i].start = sp[i].start_sample / sr;
        sp[i].end = sp[i].end_sample / sr;
    }
    *out = sp;
    *n_out = n;
    return HV_OK;
}

/* ----------------------------------------------------------- public */

hv_status hv_vad_load(const char *dir, hv_vad **out, char *errbuf, size_t errbuf_size) {
    hv_error e;
    hv_err_clear(&e);
    hv_status st;
    hv_vad *v = NULL;
    if (out) *out = NULL;
    if (!dir || !*dir || !out)
        st = hv_err(&e, HV_ERR_INVALID_ARG, "no detector directory given");
    else if (!(v = malloc(sizeof *v)))
        st = hv_err(&e, HV_ERR_NOMEM, "out of memory");
    else if ((st = hv_vad_init(v, dir, &e)) == HV_OK)
        *out = v;
    if (st) free(v);
    hv_err_copy(&e, errbuf, errbuf_size);
    return st;
}

void hv_vad_free(hv_vad *v) {
    hv_vad_release(v);
    free(v);
}

int hv_vad_sample_rate(const hv_vad *v) { return v->sample_rate; }
int hv_vad_window_samples(const hv_vad *v) { return v->window; }

hv_vad_params hv_vad_default_params(void) {
    return hv_transcribe_default_params().vad_params; /* params.c's rows */
}

/* Probabilities of x[n] (already at the detector's rate) into a new
 * array of hv_vad_n_windows(n) (never NULL on success). */
static hv_status probs_of(const hv_vad *v, hv_pool *pool, const float *x, size_t n, float gain,
                          unsigned how, float **probs, hv_error *e) {
    size_t n_win = hv_vad_n_windows(v, n);
    float *pr = malloc((n_win ? n_win : 1) * sizeof *pr);
    if (!pr) return hv_err(e, HV_ERR_NOMEM, "out of memory");
    hv_status st = hv_vad_forward_pass(v, pool, x, n, gain, how, pr, e);
    if (st) {
        free(pr);
        return st;
    }
    *probs = pr;
    return HV_OK;
}

hv_status hv_vad_level_probs(const hv_vad *v, hv_pool *pool, const float *x, size_t n, int edges,
                             float **probs, hv_error *e) {
    float *back = NULL, gain = hv_vad_level_gain(v, x, n);
    /* Onsets (docs/VAD.md): after digital silence the state starts afresh,
     * and the audio is heard backwards too, where an onset is an offset;
     * each window takes the greater of the two passes' probabilities. */
    int both = edges == HV_VAD_EDGES_SIGNAL;
    unsigned how = both ? HV_VAD_PASS_RESET : 0;
    hv_status st = probs_of(v, pool, x, n, gain, how, probs, e);
    if (st || !both) return st;
    if ((st = probs_of(v, pool, x, n, gain, how | HV_VAD_PASS_BACKWARDS, &back, e))) {
        free(*probs);
        *probs = NULL;
        return st;
    }
    size_t n_win = hv_vad_n_windows(v, n);
    for (size_t w = 0; w < n_win; w++)
        if (back[n_win - 1 - w] > (*probs)[w]) (*probs)[w] = back[n_win - 1 - w];
    free(back);
    return HV_OK;
}

hv_status hv_vad_detect(const hv_vad *v, hv_pool *pool, const float *x, size_t n,
                        const hv_vad_params *p, hv_speech_region **regions, size_t *n_regions,
                        float **probs_out, hv_error *e) {
    float *probs = NULL;
    if (probs_out) *probs_out = NULL;
    hv_status st = hv_vad_level_probs(v, pool, x, n, p->edges, &probs, e);
    if (st) return st;
    st = hv_vad_speech_regions(probs, hv_vad_n_windows(v, n), n, v->window, v->sample_rate, p,
                               regions, n_regions, e);
    if (!st && p->edges == HV_VAD_EDGES_SIGNAL &&
        (st = hv_vad_signal_edges(x, n, v->sample_rate, *regions, *n_regions, e))) {
        free(*regions);
        *regions = NULL;
        *n_regions = 0;
    }
    if (!st && probs_out) {
        *probs_out = probs;
        probs = NULL;
    }
    free(probs);
    return st;
}

hv_status hv_vad_probs(hv_context *ctx, const hv_vad *vad, const float *pcm, size_t n_frames,
                       int sample_rate, int channels, float **probs, size_t *n_probs) {
    if (!ctx) return HV_ERR_INVALID_ARG;
    hv_error *e = &ctx->err;
    hv_err_clear(e);
    if (!vad || !probs || !n_probs)
        return hv_err(e, HV_ERR_INVALID_ARG, "hv_vad_probs: NULL argument");
    *probs = NULL;
    *n_probs = 0;
    float *x;
    size_t n;
    hv_status st =
        hv_audio_to_mono(pcm, n_frames, channels, sample_rate, vad->sample_rate, &x, &n, e);
    if (st) return st;
    st = probs_of(vad, ctx->pool, x, n, 1.0f, 0, probs, e);
    if (!st) *n_probs = hv_vad_n_windows(vad, n);
    free(x);
    return st;
}

hv_status hv_vad_regions(hv_context *ctx, const hv_vad *vad, const float *pcm, size_t n_frames,
                         int sample_rate, int channels, const hv_vad_params *params,
                         hv_speech_region **regions, size_t *n_regions) {
    if (!ctx) return HV_ERR_INVALID_ARG;
    hv_error *e = &ctx->err;
    hv_err_clear(e);
    if (!vad || !regions || !n_regions)
        return hv_err(e, HV_ERR_INVALID_ARG, "hv_vad_regions: NULL argument");
    *regions = NULL;
    *n_regions = 0;
    hv_vad_params p = params ? *params : hv_vad_default_params();
    float *x;
    size_t n;
    hv_status st = hv_vad_check_params(&p, e);
    if (st) return st;
    if ((st = hv_audio_to_mono(pcm, n_frames, channels, sample_rate, vad->sample_rate, &x, &n, e)))
        return st;
    st = hv_vad_detect(vad, ctx->pool, x, n, &p, regions, n_regions, NULL, e);
    free(x);
    return st;
}
