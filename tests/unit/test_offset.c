/* A part of the input (hv_transcribe_params.offset_s, duration_s), on the
 * demo model: the second of two copies of the example, cut out by offset
 * and duration, gives the tokens of the example alone, with every segment
 * and word time moved by the offset exactly (the input's timeline); a
 * duration alone keeps the first copy; progress counts the part; in every
 * chunking mode; an offset at or beyond the end and values that are not
 * finite and >= 0 are refused, naming the field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

#define SR 16000

typedef struct seen {
    double done, total;
    int calls;
} seen;

static void on_progress(void *user, double done, double total) {
    seen *s = user;
    s->done = done;
    s->total = total;
    s->calls++;
}

/* b's tokens, text, segments and words are a's, every time moved by
 * shift seconds. */
static void check_moved(const hv_result *a, const hv_result *b, double shift, const char *what) {
    CHECK_MSG(!strcmp(hv_result_text(a), hv_result_text(b)), "%s: \"%s\" vs \"%s\"", what,
              hv_result_text(a), hv_result_text(b));
    int nt = hv_result_n_tokens(a);
    CHECK_MSG(nt > 0 && nt == hv_result_n_tokens(b) &&
                  !memcmp(hv_result_tokens(a), hv_result_tokens(b), (size_t)nt * sizeof(int32_t)),
              "%s: tokens differ (%d vs %d)", what, nt, hv_result_n_tokens(b));
    CHECK_MSG(hv_result_n_segments(a) == hv_result_n_segments(b), "%s: %d vs %d segments", what,
              hv_result_n_segments(a), hv_result_n_segments(b));
    for (int i = 0; i < hv_result_n_segments(a) && i < hv_result_n_segments(b); i++) {
        hv_segment x = hv_result_segment(a, i), y = hv_result_segment(b, i);
        CHECK_MSG(fabs(y.start - x.start - shift) < 1e-9 && fabs(y.end - x.end - shift) < 1e-9,
                  "%s: segment %d at %.4f-%.4f, alone %.4f-%.4f, shift %.4f", what, i, y.start,
                  y.end, x.start, x.end, shift);
    }
    int nw = hv_result_n_words(a);
    CHECK_MSG(nw > 0 && nw == hv_result_n_words(b), "%s: %d vs %d words", what, nw,
              hv_result_n_words(b));
    for (int i = 0; i < nw && i < hv_result_n_words(b); i++) {
        const hv_word *x = &hv_result_words(a)[i], *y = &hv_result_words(b)[i];
        CHECK_MSG(fabs(y->start - x->start - shift) < 1e-6 && fabs(y->end - x->end - shift) < 1e-6,
                  "%s: word %d \"%s\" at %.4f-%.4f, alone %.4f-%.4f", what, i, y->text, y->start,
                  y->end, x->start, x->end);
    }
}

int main(void) {
    hv_test_demo d;
    if (hv_test_demo_open(&d) != 0) {
        hv_test_demo_free(&d);
        TEST_END();
    }
    /* the clip, a second of silence, the clip */
    size_t gap = SR, n = 2 * d.n_clip + gap;
    float *x = calloc(n, sizeof *x);
    memcpy(x, d.clip, d.n_clip * sizeof *x);
    memcpy(x + d.n_clip + gap, d.clip, d.n_clip * sizeof *x);
    double clip_s = (double)d.n_clip / SR, second = (double)(d.n_clip + gap) / SR;

    static const hv_chunking modes[] = {HV_CHUNKING_VAD, HV_CHUNKING_ENERGY, HV_CHUNKING_NONE};
    static const char *const names[] = {"vad", "energy", "none"};
    for (int m = 0; m < 3; m++) {
        hv_transcribe_params tp = hv_transcribe_default_params();
        tp.chunking = modes[m];
        tp.vad = d.vad;
        tp.word_timestamps = 1;
        hv_result *alone = NULL, *part = NULL, *head = NULL;
        CHECK_MSG(hv_transcribe(d.ctx, d.clip, d.n_clip, SR, 1, &tp, &alone) == HV_OK, "%s: %s",
                  names[m], hv_context_error(d.ctx));
        seen pr = {0};
        hv_transcribe_params q = tp;
        q.offset_s = second;
        q.duration_s = clip_s;
        q.progress = on_progress;
        q.progress_user = &pr;
        CHECK_MSG(hv_transcribe(d.ctx, x, n, SR, 1, &q, &part) == HV_OK, "%s: %s", names[m],
                  hv_context_error(d.ctx));
        char what[64];
        snprintf(what, sizeof what, "%s, offset %.4f", names[m], second);
        if (alone && part) check_moved(alone, part, second, what);
        CHECK_MSG(pr.calls > 0 && fabs(pr.total - clip_s) < 1e-9 && fabs(pr.done - clip_s) < 1e-9,
                  "%s: progress %.4f of %.4f (%d calls), the part is %.4f s", names[m], pr.done,
                  pr.total, pr.calls, clip_s);
        CHECK(part && fabs(hv_result_duration(part) - (double)n / SR) < 1e-9);
        /* a duration alone: the first copy; beyond the end: to the end */
        q = tp;
        q.duration_s = clip_s;
        CHECK(hv_transcribe(d.ctx, x, n, SR, 1, &q, &head) == HV_OK);
        snprintf(what, sizeof what, "%s, duration %.4f", names[m], clip_s);
        if (alone && head) check_moved(alone, head, 0, what);
        hv_result_free(head);
        head = NULL;
        q.offset_s = second;
        q.duration_s = 1000;
        CHECK(hv_transcribe(d.ctx, x, n, SR, 1, &q, &head) == HV_OK);
        snprintf(what, sizeof what, "%s, offset %.4f, duration 1000", names[m], second);
        if (alone && head) check_moved(alone, head, second, what);
        hv_result_free(alone);
        hv_result_free(part);
        hv_result_free(head);
    }

    /* refused: at or beyond the end, negative, not finite */
    static const double bad[][2] = {{-1, 0}, {0, -0.5}, {NAN, 0}, {0, INFINITY}};
    for (size_t k = 0; k <= sizeof bad / sizeof *bad; k++) {
        hv_transcribe_params q = hv_transcribe_default_params();
        q.vad = d.vad;
        q.offset_s = k < sizeof bad / sizeof *bad ? bad[k][0] : (double)n / SR;
        q.duration_s = k < sizeof bad / sizeof *bad ? bad[k][1] : 0;
        hv_result *r = NULL;
        const char *field =
            k < sizeof bad / sizeof *bad && bad[k][0] == 0 ? "duration_s" : "offset_s";
        CHECK_MSG(hv_transcribe(d.ctx, x, n, SR, 1, &q, &r) == HV_ERR_INVALID_ARG && !r &&
                      strstr(hv_context_error(d.ctx), field),
                  "offset %g duration %g: %s", q.offset_s, q.duration_s, hv_context_error(d.ctx));
        hv_result_free(r);
    }
    free(x);
    hv_test_demo_free(&d);
    TEST_END();
}
