/* The temperature fallback (docs/DECODING.md "Temperature fallback") on the
 * demo model: every attempt is an ordinary decoding mode, so the test
 * decodes the example in each mode alone, applies the rule as the doc
 * writes it to those results, and checks that hv_transcribe with the
 * temperature list keeps the same decoding, reports its temperature,
 * avg_logprob, compression ratio and no_speech_prob, and ran exactly the
 * attempts the rule asks for (its decoder passes are theirs summed). Also
 * the compression ratio against Python's zlib, best_of, temperature 0 as
 * greedy, and the parameters refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio/vad.h"
#include "fallback.h"
#include "hviske.h"
#include "testlib.h"

/* One decoding of the example, as the result reports it. */
typedef struct outcome {
    int status, n_segs, n_tokens, n_steps;
    int32_t tokens[512];
    float temperature;
    double avg, ratio, no_speech;
    char text[1024];
} outcome;

static outcome run(hv_test_demo *d, const hv_transcribe_params *tp) {
    outcome o = {0};
    hv_result *r = NULL;
    o.status = hv_transcribe(d->ctx, d->clip, d->n_clip, 16000, 1, tp, &r);
    if (o.status) return o;
    o.n_segs = hv_result_n_segments(r);
    o.n_tokens = hv_result_n_tokens(r);
    o.n_steps = hv_result_timings(r).n_steps;
    if (o.n_tokens > 0 && o.n_tokens <= 512)
        memcpy(o.tokens, hv_result_tokens(r), (size_t)o.n_tokens * sizeof *o.tokens);
    if (o.n_segs > 0) {
        hv_segment g = hv_result_segment(r, 0);
        o.temperature = g.temperature;
        o.avg = g.avg_logprob;
        o.ratio = g.compression_ratio;
        o.no_speech = g.no_speech_prob;
        snprintf(o.text, sizeof o.text, "%s", g.text);
    }
    hv_result_free(r);
    return o;
}

static int same_tokens(const outcome *a, const outcome *b) {
    return a->n_tokens == b->n_tokens &&
           !memcmp(a->tokens, b->tokens, (size_t)a->n_tokens * sizeof *a->tokens);
}

/* Python: len(b) / len(zlib.compress(b)) for these texts' UTF-8 bytes. */
static void test_compression_ratio(void) {
    static const struct {
        const char *text;
        int n, z;
    } cases[] = {{"", 0, 8},
                 {"I morgen bliver det gr\xc3\xa5t med minus tyve grader.", 48, 55},
                 {"ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja", 59, 14}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double r = hv_compression_ratio(cases[i].text);
        CHECK_MSG(r == (double)cases[i].n / cases[i].z, "'%s': %.17g, Python's %d/%d",
                  cases[i].text, r, cases[i].n, cases[i].z);
    }
    char rep[301] = {0};
    for (int i = 0; i < 100; i++) memcpy(rep + 3 * i, "ab ", 3);
    CHECK(hv_compression_ratio(rep) > 2.4); /* a repetition loop fails the default */
}

/* The doc's rule over attempts a[0..n) (each the mode alone), with the
 * chunk's no_speech_prob nsp: the index kept, how many ran, and whether
 * the chunk is silence. */
static int rule(const outcome *a, int n, double crt, double lpt, double nst, double nsp, int *ran,
                int *silent) {
    int pick = -1, pick_below = 0, kept = -1;
    for (int k = 0; k < n; k++) {
        *ran = k + 1;
        int failed = (!isnan(crt) && a[k].ratio > crt) || (!isnan(lpt) && a[k].avg < lpt);
        if (!isnan(nst) && nsp > nst && !isnan(lpt) && a[k].avg < lpt) failed = 0;
        if (!failed) {
            kept = k;
            break;
        }
        int below = !isnan(crt) && a[k].ratio <= crt;
        if (pick < 0 || (below && !pick_below) || (below == pick_below && a[k].avg > a[pick].avg)) {
            pick = k;
            pick_below = below;
        }
    }
    if (kept < 0) kept = pick;
    *silent = !isnan(nst) && nsp > nst && (isnan(lpt) || a[kept].avg <= lpt);
    return kept;
}

static void test_rule(hv_test_demo *d) {
    /* decreasing avg_logprob and distinct texts: each attempt is kept by
     * some setting (an increasing list keeps the greedy one mostly) */
    static const float temps[] = {1.6f, 1.0f, 0.0f};
    enum { N = 3 };
    const uint64_t seed = 7;
    outcome a[N];
    for (int k = 0; k < N; k++) { /* each mode alone */
        hv_transcribe_params tp = hv_transcribe_default_params();
        tp.vad = d->vad;
        tp.do_sample = temps[k] > 0;
        tp.temperature = temps[k] > 0 ? temps[k] : 1.0f;
        tp.seed = seed;
        a[k] = run(d, &tp);
        CHECK_MSG(a[k].status == HV_OK && a[k].n_segs == 1, "mode %g alone", temps[k]);
        CHECK(a[k].temperature == temps[k]);
    }
    for (int k = 0; k < N; k++)
        printf("alone at %g: avg_logprob %.6f, compression ratio %.6f, '%s'\n", temps[k], a[k].avg,
               a[k].ratio, a[k].text);
    double nsp = a[2].no_speech;
    CHECK_MSG(nsp >= 0 && nsp < 0.5, "no_speech_prob of speech %g", nsp);
    /* the thresholds around each attempt's values, so that every branch of
     * the rule is taken by some setting */
    double crts[2 * N + 2], lpts[2 * N + 2];
    int nc = 0, nl = 0;
    crts[nc++] = NAN;
    lpts[nl++] = NAN;
    for (int k = 0; k < N; k++) {
        crts[nc++] = a[k].ratio - 1e-6;
        crts[nc++] = a[k].ratio + 1e-6;
        lpts[nl++] = a[k].avg - 1e-6;
        lpts[nl++] = a[k].avg + 1e-6;
    }
    lpts[nl++] = 0.0; /* every attempt fails */
    const double nsts[] = {NAN, nsp > 0.001 ? nsp - 0.001 : -1.0};
    int kept_seen[N] = {0}, fell_back = 0, silences = 0, cases = 0, wrong = 0;
    for (int i = 0; i < nc; i++)
        for (int j = 0; j < nl; j++)
            for (int s = 0; s < 2; s++) {
                hv_transcribe_params tp = hv_transcribe_default_params();
                tp.vad = d->vad;
                tp.seed = seed;
                tp.temperatures = temps;
                tp.n_temperatures = N;
                tp.compression_ratio_threshold = (float)crts[i];
                tp.log_prob_threshold = (float)lpts[j];
                tp.no_speech_threshold = (float)nsts[s];
                int ran, silent;
                int k = rule(a, N, tp.compression_ratio_threshold, tp.log_prob_threshold,
                             tp.no_speech_threshold, nsp, &ran, &silent);
                outcome f = run(d, &tp);
                int steps = 0;
                for (int q = 0; q < ran; q++) steps += a[q].n_steps;
                int ok = f.status == HV_OK && f.n_steps == steps;
                if (silent)
                    ok = ok && f.n_segs == 0 && f.n_tokens == 0;
                else
                    ok = ok && f.n_segs == 1 && same_tokens(&f, &a[k]) &&
                         f.temperature == temps[k] && f.avg == a[k].avg && f.ratio == a[k].ratio &&
                         f.no_speech == nsp && !strcmp(f.text, a[k].text);
                cases++;
                if (!ok) {
                    wrong++;
                    CHECK_MSG(0,
                              "crt %g lpt %g nst %g: expected attempt %d of %d ran%s (%d "
                              "steps), got status %d, %d segments, temperature %g, %d steps",
                              tp.compression_ratio_threshold, tp.log_prob_threshold,
                              tp.no_speech_threshold, k, ran, silent ? ", silence" : "", steps,
                              f.status, f.n_segs, f.temperature, f.n_steps);
                }
                kept_seen[k] += !silent;
                fell_back += ran > 1;
                silences += silent;
            }
    printf("fallback rule: %d threshold settings, %d wrong; kept attempts %d/%d/%d, %d fell "
           "back, %d silent\n",
           cases, wrong, kept_seen[0], kept_seen[1], kept_seen[2], fell_back, silences);
    CHECK(wrong == 0);
    /* the settings reached every attempt, a fallback and the silence rule */
    CHECK(kept_seen[0] && kept_seen[1] && kept_seen[2] && fell_back && silences);
}

static void test_modes(hv_test_demo *d) {
    hv_transcribe_params g = hv_transcribe_default_params();
    outcome greedy = run(d, &g);
    CHECK(greedy.status == HV_OK && greedy.n_segs == 1 && greedy.temperature == 0);
    /* avg_logprob: the summed log-probs with EOS's (greedy's score), over
     * the tokens + 1; the ratio of the segment's text; no detector, no
     * no_speech_prob */
    hv_result *r;
    CHECK(hv_transcribe(d->ctx, d->clip, d->n_clip, 16000, 1, &g, &r) == HV_OK);
    hv_segment s = hv_result_segment(r, 0);
    CHECK_MSG(s.avg_logprob == s.score / (s.n_tokens + 1), "avg_logprob %.17g, score %.17g",
              s.avg_logprob, s.score);
    CHECK(s.compression_ratio == hv_compression_ratio(s.text));
    CHECK(isnan(s.no_speech_prob));
    hv_result_free(r);

    /* temperature 0 is greedy, with do_sample or as a one-entry list */
    hv_transcribe_params t0 = g;
    t0.do_sample = 1;
    t0.temperature = 0;
    outcome o = run(d, &t0);
    CHECK(o.status == HV_OK && same_tokens(&o, &greedy) && o.temperature == 0);
    static const float zero[] = {0.0f};
    hv_transcribe_params l0 = g;
    l0.temperatures = zero;
    l0.n_temperatures = 1;
    o = run(d, &l0);
    CHECK(o.status == HV_OK && same_tokens(&o, &greedy) && o.temperature == 0 &&
          o.n_steps == greedy.n_steps);
    /* with num_beams, a zero temperature is beam search */
    hv_transcribe_params b = g;
    b.num_beams = 3;
    outcome beams = run(d, &b);
    b.temperatures = zero;
    b.n_temperatures = 1;
    o = run(d, &b);
    CHECK(o.status == HV_OK && same_tokens(&o, &beams) && o.n_steps == beams.n_steps);

    /* no_speech_prob with one chunk of all the input: 1 - the mean of the
     * probabilities the regions are found from (the clip is loud enough to
     * need no gain): with --vad-edges silero the detector's own, by
     * default those of its two passes (docs/VAD.md "Onsets") */
    CHECK(hv_vad_level_gain(d->vad, d->clip, d->n_clip) == 1.0f);
    for (int edges = 0; edges < 2; edges++) {
        float *probs = NULL;
        size_t np = hv_vad_n_windows(d->vad, d->n_clip);
        hv_error e = {0};
        if (edges == HV_VAD_EDGES_SILERO)
            CHECK(hv_vad_probs(d->ctx, d->vad, d->clip, d->n_clip, 16000, 1, &probs, &np) == HV_OK);
        else
            CHECK(hv_vad_level_probs(d->vad, NULL, d->clip, d->n_clip, edges, &probs, &e) == HV_OK);
        double sum = 0;
        for (size_t i = 0; probs && i < np; i++) sum += probs[i];
        free(probs);
        hv_transcribe_params nv = g;
        nv.vad = d->vad;
        nv.vad_params.edges = edges;
        nv.chunking = HV_CHUNKING_NONE;
        o = run(d, &nv);
        CHECK_MSG(o.status == HV_OK && fabs(o.no_speech - (1 - sum / (double)np)) < 1e-12,
                  "edges %d: no_speech_prob %.17g, 1 - mean %.17g", edges, o.no_speech,
                  1 - sum / (double)np);
    }
}

/* best_of draws with seeds seed, seed + 1, ...: the best by the
 * normalised score, in the list and without it alike. */
static void test_best_of(hv_test_demo *d) {
    const uint64_t seed = 3;
    const float t = 1.8f;
    outcome draws[4];
    double best = -INFINITY;
    int want = -1;
    for (int j = 0; j < 4; j++) {
        hv_transcribe_params tp = hv_transcribe_default_params();
        tp.do_sample = 1;
        tp.temperature = t;
        tp.seed = seed + (uint64_t)j;
        hv_result *r;
        CHECK(hv_transcribe(d->ctx, d->clip, d->n_clip, 16000, 1, &tp, &r) == HV_OK);
        draws[j] = run(d, &tp);
        /* one chunk, greedy-like score: normalised by its length + EOS */
        double score = hv_result_score(r), rank = score / (draws[j].n_tokens + 1);
        if (rank > best) {
            best = rank;
            want = j;
        }
        hv_result_free(r);
    }
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.do_sample = 1;
    tp.temperature = t;
    tp.seed = seed;
    tp.best_of = 4;
    outcome o = run(d, &tp);
    int steps = 0;
    for (int j = 0; j < 4; j++) steps += draws[j].n_steps;
    CHECK_MSG(o.status == HV_OK && same_tokens(&o, &draws[want]) && o.n_steps == steps,
              "best_of 4 kept the draw of seed %d", (int)(seed + (uint64_t)want));
    static const float list[] = {1.8f};
    tp.do_sample = 0;
    tp.temperatures = list;
    tp.n_temperatures = 1;
    tp.compression_ratio_threshold = tp.log_prob_threshold = tp.no_speech_threshold = NAN;
    o = run(d, &tp);
    CHECK(o.status == HV_OK && same_tokens(&o, &draws[want]) && o.temperature == t);
    int differ = 0;
    for (int j = 1; j < 4; j++) differ += !same_tokens(&draws[j], &draws[0]);
    CHECK_MSG(differ > 0, "the draws of 4 seeds at temperature %g are all alike", t);
}

static void test_refused(hv_test_demo *d) {
    static const float bad_neg[] = {0.0f, -0.2f}, bad_nan[] = {NAN}, ok[] = {0.0f, 0.4f};
    static const struct {
        const float *temps;
        int n, do_sample, best_of;
        float temperature;
        const char *says;
    } cases[] = {{bad_neg, 2, 0, 1, 1, "temperatures[1]"},
                 {bad_nan, 1, 0, 1, 1, "temperatures[0]"},
                 {NULL, 2, 0, 1, 1, "n_temperatures"},
                 {ok, -1, 0, 1, 1, "n_temperatures"},
                 {ok, 2, 1, 1, 1, "do_sample"},
                 {NULL, 0, 0, 0, 1, "best_of"},
                 {NULL, 0, 1, 1, -0.5f, "temperature"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hv_transcribe_params tp = hv_transcribe_default_params();
        tp.temperatures = cases[i].temps;
        tp.n_temperatures = cases[i].n;
        tp.do_sample = cases[i].do_sample;
        tp.best_of = cases[i].best_of;
        tp.temperature = cases[i].temperature;
        hv_result *r = NULL;
        hv_status st = hv_transcribe(d->ctx, d->clip, d->n_clip, 16000, 1, &tp, &r);
        CHECK_MSG(st == HV_ERR_INVALID_ARG && !r &&
                      strstr(hv_context_error(d->ctx), cases[i].says) != NULL,
                  "case %zu: status %d, '%s'", i, st, hv_context_error(d->ctx));
    }
}

int main(void) {
    hv_test_demo d;
    if (hv_test_demo_open(&d)) {
        CHECK_MSG(0, "the demo model, detector or example did not load");
        hv_test_demo_free(&d);
        TEST_END();
    }
    test_compression_ratio();
    test_modes(&d);
    test_best_of(&d);
    test_rule(&d);
    test_refused(&d);
    hv_test_demo_free(&d);
    TEST_END();
}
