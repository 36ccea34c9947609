/* Results as they come (hv_transcribe_params.segment_callback), on the demo
 * model: the segments given to the callback, in order, are exactly the
 * final result's (times, text, tokens, log-probs, score, words) in every
 * chunking mode, greedy and beam search, with and without word times; a
 * non-zero answer stops after that segment with HV_OK, the result holding
 * the segments done and hv_result_stopped() 1; abort_callback with a
 * segment_callback set gives what was done the same way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

/* A deep copy of a segment: the callback's pointers live only during the
 * call. */
typedef struct seg_copy {
    hv_segment g;
    char *text;
    int32_t *tokens;
    float *lps;
    hv_word *words;
    char **word_texts;
} seg_copy;

typedef struct collect {
    seg_copy *segs;
    int n;
    int stop_after; /* answer 1 at this segment; 0: never */
    int asks;       /* abort_callback asks */
    int abort_at;   /* abort at this ask; 0: never */
    int progress;   /* progress calls */
    int progress_after_stop;
    int seen[64]; /* segments delivered at each progress call */
} collect;

static void *dup_bytes(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

static int on_segment(void *user, const hv_segment *g) {
    collect *c = user;
    c->segs = realloc(c->segs, (size_t)(c->n + 1) * sizeof *c->segs);
    seg_copy *s = &c->segs[c->n++];
    s->g = *g;
    s->text = dup_bytes(g->text, strlen(g->text) + 1);
    s->tokens = dup_bytes(g->tokens, (size_t)g->n_tokens * sizeof *g->tokens);
    s->lps = dup_bytes(g->token_logprobs, (size_t)g->n_tokens * sizeof *g->token_logprobs);
    s->words = dup_bytes(g->words, (size_t)g->n_words * sizeof *g->words);
    s->word_texts = calloc((size_t)g->n_words + 1, sizeof *s->word_texts);
    for (int k = 0; k < g->n_words; k++)
        s->word_texts[k] = dup_bytes(g->words[k].text, strlen(g->words[k].text) + 1);
    return c->stop_after > 0 && c->n >= c->stop_after;
}

static int on_abort(void *user) {
    collect *c = user;
    c->asks++;
    return c->abort_at > 0 && c->asks >= c->abort_at;
}

static void on_progress(void *user, double done, double total) {
    (void)done, (void)total;
    collect *c = user;
    if (c->progress < 64) c->seen[c->progress] = c->n;
    c->progress++;
    if (c->stop_after > 0 && c->n >= c->stop_after) c->progress_after_stop++;
}

static void collect_free(collect *c) {
    for (int i = 0; i < c->n; i++) {
        seg_copy *s = &c->segs[i];
        for (int k = 0; k < s->g.n_words; k++) free(s->word_texts[k]);
        free(s->word_texts);
        free(s->text);
        free(s->tokens);
        free(s->lps);
        free(s->words);
    }
    free(c->segs);
    memset(c, 0, sizeof *c);
}

/* Whether the copy equals segment g of a result, field by field. */
static int same_segment(const seg_copy *s, const hv_segment *g) {
    if (s->g.start_sample != g->start_sample || s->g.end_sample != g->end_sample ||
        s->g.start != g->start || s->g.end != g->end || strcmp(s->text, g->text) != 0 ||
        s->g.n_tokens != g->n_tokens || s->g.score != g->score || s->g.n_words != g->n_words)
        return 0;
    if (memcmp(s->tokens, g->tokens, (size_t)g->n_tokens * sizeof *g->tokens) != 0 ||
        memcmp(s->lps, g->token_logprobs, (size_t)g->n_tokens * sizeof *g->token_logprobs) != 0)
        return 0;
    for (int k = 0; k < g->n_words; k++) {
        const hv_word *a = &s->words[k], *b = &g->words[k];
        if (strcmp(s->word_texts[k], b->text) != 0 || a->start != b->start || a->end != b->end ||
            a->probability != b->probability || a->first_token != b->first_token ||
            a->n_tokens != b->n_tokens)
            return 0;
    }
    return 1;
}

/* The texts of segments [0, n) joined as hv_result_text joins them. */
static char *joined(const collect *c, int n) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(c->segs[i].text) + 1;
    char *t = malloc(len), *o = t;
    for (int i = 0; i < n; i++) {
        if (i) *o++ = ' ';
        size_t k = strlen(c->segs[i].text);
        memcpy(o, c->segs[i].text, k);
        o += k;
    }
    *o = '\0';
    return t;
}

typedef struct mode {
    const char *name;
    hv_chunking chunking;
    float chunk_seconds;
    int beams, words, use_vad, long_input;
} mode;

static hv_transcribe_params params_of(const mode *m, const hv_vad *vad, collect *c) {
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.chunking = m->chunking;
    tp.chunk_seconds = m->chunk_seconds;
    tp.num_beams = m->beams;
    tp.word_timestamps = m->words;
    tp.vad = m->use_vad ? vad : NULL;
    if (c) {
        tp.segment_callback = on_segment;
        tp.segment_user = c;
        tp.progress = on_progress;
        tp.progress_user = c;
        tp.abort_callback = on_abort;
        tp.abort_user = c;
    }
    return tp;
}

int main(void) {
    hv_test_demo d;
    if (hv_test_demo_open(&d) == 0) {
        /* seven sentences with 6 s of silence between: seven segments with
         * speech detection, two by energy */
        size_t gap = 6 * 16000, n_long = 7 * d.n_clip + 6 * gap;
        float *x = calloc(n_long, sizeof *x);
        for (int k = 0; k < 7; k++)
            memcpy(x + (size_t)k * (d.n_clip + gap), d.clip, d.n_clip * sizeof *x);

        static const mode modes[] = {
            {"vad greedy words", HV_CHUNKING_VAD, 0, 1, 1, 1, 1},
            {"vad beams", HV_CHUNKING_VAD, 0, 2, 0, 1, 1},
            {"energy greedy", HV_CHUNKING_ENERGY, 0, 1, 0, 0, 1},
            {"energy beams words", HV_CHUNKING_ENERGY, 0, 2, 1, 0, 1},
            {"fixed greedy words", HV_CHUNKING_FIXED, 1.5f, 1, 1, 0, 0},
            {"none greedy words", HV_CHUNKING_NONE, 0, 1, 1, 0, 0},
        };
        for (size_t mi = 0; mi < sizeof modes / sizeof *modes; mi++) {
            const mode *m = &modes[mi];
            const float *in = m->long_input ? x : d.clip;
            size_t len = m->long_input ? n_long : d.n_clip;
            hv_transcribe_params plain_tp = params_of(m, d.vad, NULL);
            hv_result *plain = NULL, *r = NULL;
            CHECK(hv_transcribe(d.ctx, in, len, 16000, 1, &plain_tp, &plain) == HV_OK);
            collect c = {0};
            hv_transcribe_params tp = params_of(m, d.vad, &c);
            CHECK(hv_transcribe(d.ctx, in, len, 16000, 1, &tp, &r) == HV_OK && r);
            if (!plain || !r) continue;
            int ns = hv_result_n_segments(r);
            CHECK_MSG(ns >= 1 && ns == hv_result_n_segments(plain) && c.n == ns,
                      "%s: %d streamed, %d in the result, %d without the callback", m->name, c.n,
                      ns, hv_result_n_segments(plain));
            /* (by energy a chunk may have no text: no segment, no call) */
            CHECK_MSG(!m->use_vad || ns >= 7, "%s: %d segments", m->name, ns);
            int same = c.n == ns;
            for (int i = 0; same && i < ns; i++) {
                hv_segment g = hv_result_segment(r, i), q = hv_result_segment(plain, i);
                same = same_segment(&c.segs[i], &g) && same_segment(&c.segs[i], &q);
            }
            CHECK_MSG(same, "%s: streamed segments differ from the result's", m->name);
            CHECK_MSG(!m->words || hv_result_n_words(r) > 0, "%s: no words", m->name);
            CHECK(!hv_result_stopped(r) && !hv_result_stopped(plain));
            CHECK(!strcmp(hv_result_text(r), hv_result_text(plain)));
            /* as it is final: with speech detection every chunk is a
             * segment, given before the chunk's progress call, so before
             * the next chunk is transcribed */
            if (m->use_vad) {
                int in_time = c.progress >= ns && c.progress <= 64;
                for (int k = 0; in_time && k < c.progress; k++)
                    in_time = c.seen[k] == (k + 1 < ns ? k + 1 : ns);
                CHECK_MSG(in_time, "%s: segments not delivered chunk by chunk", m->name);
            }
            hv_result_free(r);
            hv_result_free(plain);
            collect_free(&c);
        }

        /* stopping from the segment callback after k segments: HV_OK, the
         * first k segments, their text and tokens, stopped, no more
         * chunks transcribed */
        const mode *m = &modes[0];
        hv_transcribe_params full_tp = params_of(m, d.vad, NULL);
        hv_result *full = NULL;
        CHECK(hv_transcribe(d.ctx, x, n_long, 16000, 1, &full_tp, &full) == HV_OK && full);
        int total = full ? hv_result_n_segments(full) : 0;
        for (int k = 1; full && k <= total; k++) {
            collect c = {.stop_after = k};
            hv_transcribe_params tp = params_of(m, d.vad, &c);
            hv_result *r = NULL;
            hv_status st = hv_transcribe(d.ctx, x, n_long, 16000, 1, &tp, &r);
            CHECK_MSG(st == HV_OK && r && c.n == k && hv_result_n_segments(r) == k,
                      "stop after %d of %d: status %d, %d calls, %d segments", k, total, (int)st,
                      c.n, r ? hv_result_n_segments(r) : -1);
            if (!r) continue;
            /* the last segment stops even when nothing would follow */
            CHECK_MSG(hv_result_stopped(r) == 1, "stop after %d: stopped %d", k,
                      hv_result_stopped(r));
            CHECK(c.progress_after_stop == 0);
            CHECK(!strcmp(hv_context_error(d.ctx), ""));
            int same = 1, n_tok = 0, n_words = 0;
            for (int i = 0; i < k && i < hv_result_n_segments(r); i++) {
                hv_segment g = hv_result_segment(r, i), q = hv_result_segment(full, i);
                same = same && same_segment(&c.segs[i], &g) && same_segment(&c.segs[i], &q);
                n_tok += q.n_tokens;
                n_words += q.n_words;
            }
            CHECK_MSG(same, "stop after %d: segments differ", k);
            char *t = joined(&c, c.n);
            CHECK_MSG(!strcmp(hv_result_text(r), t), "stop after %d: text '%s', segments '%s'", k,
                      hv_result_text(r), t);
            free(t);
            /* the tokens are those of the chunks done: here every chunk
             * has text, so those of the k segments */
            CHECK(hv_result_n_tokens(r) == n_tok && hv_result_n_words(r) == n_words);
            CHECK(!memcmp(hv_result_tokens(r), hv_result_tokens(full),
                          (size_t)n_tok * sizeof(int32_t)));
            hv_result_free(r);
            collect_free(&c);
        }

        /* abort_callback with a segment_callback set: what was done, at
         * every point of the call */
        collect never = {0};
        hv_transcribe_params tp = params_of(m, d.vad, &never);
        hv_result *r = NULL;
        CHECK(hv_transcribe(d.ctx, x, n_long, 16000, 1, &tp, &r) == HV_OK && r);
        int asks = never.asks;
        hv_result_free(r);
        collect_free(&never);
        int prev = -1, grew = 0;
        for (int a = 1; a <= asks; a += asks / 7 > 0 ? asks / 7 : 1) {
            collect c = {.abort_at = a};
            tp = params_of(m, d.vad, &c);
            r = NULL;
            hv_status st = hv_transcribe(d.ctx, x, n_long, 16000, 1, &tp, &r);
            CHECK_MSG(st == HV_OK && r && hv_result_stopped(r) && c.asks == a,
                      "abort at ask %d of %d: status %d, asked %d", a, asks, (int)st, c.asks);
            if (!r) continue;
            int ns = hv_result_n_segments(r), same = ns == c.n;
            for (int i = 0; same && full && i < ns; i++) {
                hv_segment g = hv_result_segment(r, i), q = hv_result_segment(full, i);
                same = same_segment(&c.segs[i], &g) && same_segment(&c.segs[i], &q);
            }
            CHECK_MSG(same, "abort at ask %d: %d segments, %d streamed", a, ns, c.n);
            grew += ns > prev && prev >= 0;
            prev = ns;
            hv_result_free(r);
            collect_free(&c);
        }
        CHECK_MSG(grew >= 1, "the partial results never grew (%d asks)", asks);
        /* the context goes on working */
        r = NULL;
        CHECK(hv_transcribe(d.ctx, x, n_long, 16000, 1, &full_tp, &r) == HV_OK && r && full &&
              !strcmp(hv_result_text(r), hv_result_text(full)) && !hv_result_stopped(r));
        hv_result_free(r);
        hv_result_free(full);
        free(x);
    }
    hv_test_demo_free(&d);
    TEST_END();
}
