/* The work budget of a request (hv_work, hv_work_check; issue #62,
 * docs/DECODING.md "Work budget"): decodings counted per temperature
 * tried, beams at 0 and best_of draws above 0, and every refusal naming
 * the field and the limit. */
#include <limits.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

static hv_transcribe_params with(int beams, int best_of, const float *t, int n, int sample,
                                 float temperature) {
    hv_transcribe_params p = hv_transcribe_default_params();
    p.num_beams = beams;
    p.best_of = best_of;
    p.temperatures = t;
    p.n_temperatures = n;
    p.do_sample = sample;
    p.temperature = temperature;
    return p;
}

static void test_count(void) {
    static const float six[] = {0, 0.2f, 0.4f, 0.6f, 0.8f, 1}, zeros[] = {0, 0, 0, 0, 0, 0};
    static const struct {
        int beams, best_of;
        const float *t;
        int n, sample;
        float temperature;
        int work;
    } cases[] = {
        {1, 1, NULL, 0, 0, 1, 1},    /* greedy */
        {16, 1, NULL, 0, 0, 1, 16},  /* beam search */
        {1, 5, NULL, 0, 1, 0.7f, 5}, /* sampling, best of 5 */
        {1, 5, NULL, 0, 1, 0, 1},    /* sampling at 0 is greedy */
        {1, 1, six, 6, 0, 1, 6},     /* whisper's fallback */
        {5, 5, six, 6, 0, 1, 30},    /* faster-whisper's defaults */
        {16, 1, zeros, 6, 0, 1, 96}, {64, 64, six, 6, 0, 1, 64 + 5 * 64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hv_transcribe_params p = with(cases[i].beams, cases[i].best_of, cases[i].t, cases[i].n,
                                      cases[i].sample, cases[i].temperature);
        CHECK_MSG(hv_work(&p) == cases[i].work, "case %zu: work %d, want %d", i, hv_work(&p),
                  cases[i].work);
    }
    hv_transcribe_params p = with(0, 1, NULL, 0, 0, 1);
    CHECK(hv_work(&p) == INT_MAX && hv_work(NULL) == INT_MAX);
    p = with(1, 1, NULL, 7, 0, 1); /* a count without its list */
    CHECK(hv_work(&p) == INT_MAX);
}

static void expect(const hv_transcribe_params *p, int max, const char *want) {
    char msg[512] = "";
    hv_status st = hv_work_check(p, max, msg, sizeof msg);
    if (!want) {
        CHECK_MSG(st == HV_OK && !msg[0], "refused under %d: %s", max, msg);
        return;
    }
    CHECK_MSG(st == HV_ERR_INVALID_ARG && strstr(msg, want),
              "under %d: status %d, '%s' (want '%s')", max, (int)st, msg, want);
}

static void test_check(void) {
    static const float six[] = {0, 0.2f, 0.4f, 0.6f, 0.8f, 1}, seven[] = {0, 0, 0, 0, 0, 0, 0};
    hv_transcribe_params p = with(16, 1, NULL, 0, 0, 1);
    expect(&p, 16, NULL);
    expect(&p, 15, "num_beams 16: must be from 1 to 15");
    p = with(1, 17, NULL, 0, 1, 0.5f);
    expect(&p, 16, "best_of 17: must be from 1 to 16");
    p = with(1, 1, seven, 7, 0, 1);
    expect(&p, 64, "a list of 7 temperatures: at most 6");
    p = with(2, 1, six, 6, 0, 1); /* 2 + 5 */
    expect(&p, 7, NULL);
    expect(&p, 6, "make 7 decodings a chunk, over the work budget of 6");
    p = with(1, 1, NULL, 0, 0, 1);
    expect(&p, 0, "work budget 0: must be from 1 to 64");
    expect(&p, 65, "work budget 65");
    expect(NULL, 16, "work budget");
    CHECK(hv_work_check(&p, 1, NULL, 0) == HV_OK);
    p = with(65, 1, NULL, 0, 0, 1);
    CHECK(hv_work_check(&p, 64, NULL, 0) == HV_ERR_INVALID_ARG); /* no buffer: still refused */
}

int main(void) {
    test_count();
    test_check();
    TEST_END();
}
