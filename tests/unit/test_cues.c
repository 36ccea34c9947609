/* Subtitle cues from word times (the library's hv_cues_build and
 * hv_segment_cues, the library's cue writers, src/output/subtitles.c): where cues are cut (sentence ends, clause punctuation,
 * pauses, long pauses, the time and line limits, no orphans), how lines
 * are broken, the cue times (order, no overlap, end > start), hostile
 * input (no words, empty texts, NaN, overlapping times, huge n), the
 * parameter checks, and the exact SubRip and WebVTT bytes. Every cue
 * list is also checked against all the invariants (check_cues). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/writer.h"
#include "cue_options.h"
#include "testlib.h"

/* the size field of hv_cue_params, first in every literal below */
#define CUE_SIZE sizeof(hv_cue_params)

/* ------------------------------------------------------------- helpers */

enum { MAX_WORDS = 512 };

/* Words from a line of text: words are split at spaces; a token "|S"
 * adds a pause of S seconds before the next word. Each word lasts `dur`
 * seconds and is followed by `gap` seconds of silence; the first starts
 * at t0. The texts point into a static copy of the line. */
typedef struct wlist {
    hv_word w[MAX_WORDS];
    int n;
    char buf[8192];
} wlist;

static void make_words(wlist *l, const char *line, double t0, double dur, double gap) {
    snprintf(l->buf, sizeof l->buf, "%s", line);
    l->n = 0;
    double t = t0;
    char *save = NULL;
    for (char *tok = strtok_r(l->buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (tok[0] == '|') {
            t += atof(tok + 1);
            continue;
        }
        hv_word *w = &l->w[l->n++];
        memset(w, 0, sizeof *w);
        w->text = tok;
        w->start = t;
        w->end = t + dur;
        w->n_tokens = 1;
        t += dur + gap;
    }
}

static int64_t ms(double t) { return (int64_t)llround(t * 1000.0); }

static int utf8_len(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* The cues' texts as "cue|cue|...", lines separated by '/' (static). */
static const char *joined(const hv_cue *c, int n) {
    static char buf[16384];
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o + 2 < sizeof buf; i++) {
        if (i) buf[o++] = '|';
        for (const char *p = c[i].text; *p && o + 2 < sizeof buf; p++)
            buf[o++] = *p == '\n' ? '/' : *p;
    }
    buf[o] = '\0';
    return buf;
}

/* The word's text without spaces or control characters at its ends, into
 * buf (words in these tests hold no control characters or line breaks
 * inside unless `plain` is 0). */
static const char *trimmed(const char *t, char *buf, size_t n) {
    if (!t) t = "";
    while (*t && (unsigned char)*t <= ' ') t++;
    snprintf(buf, n, "%s", t);
    size_t len = strlen(buf);
    while (len > 0 && (unsigned char)buf[len - 1] <= ' ') buf[--len] = '\0';
    return buf;
}

/* Whether a word shows anything: a byte other than spaces, control
 * characters, U+0085, U+2028 and U+2029. */
static int has_text(const char *t) {
    if (!t) return 0;
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        if (*p <= ' ' || *p == 0x7F) continue;
        if (p[0] == 0xC2 && p[1] == 0x85) {
            p++;
            continue;
        }
        if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
            p += 2;
            continue;
        }
        return 1;
    }
    return 0;
}

/*
 * Every invariant of a cue list, for any input:
 * - cues exist iff some word has text; each has non-NULL, valid UTF-8
 *   text without '\r', empty lines, or spaces at line ends;
 * - times are whole milliseconds, start < end <= next start, and starts
 *   strictly increase; a cue starts no earlier than its first word and
 *   ends no later than max(its words' ends, start + the minimum show,
 *   start + its reading time: its characters at max_cps, min_seconds);
 * - readability: the gap to the next cue is 0 or at least min_gap; a cue
 *   read faster than max_cps or shown less than min_seconds ends where
 *   the next cue stops it (at its start, or min_gap before) or at
 *   max_seconds;
 * - a cue lasts at most max_seconds unless it is one word;
 * - at most max_lines lines unless one word; each line at most
 *   max_line_chars code points unless it is one word; and as few lines as
 *   fit (one when the whole text fits one);
 * - word ranges are in order, disjoint, start and end with a word with
 *   text, and cover every word with text;
 * With `plain` (texts without control characters, times finite and >= 0):
 * - the texts are the words' joined by single spaces;
 * - no pause of more than 1.5 s between words inside a cue.
 * With `sane` (times also in order and not overlapping, not sharing a
 * millisecond): start = first word's start, end = last word's end unless
 * that was zero length.
 * Returns 1, or 0 with the first broken rule in why[].
 */
static int check_cues(const hv_word *w, int n, const hv_cue_params *pp, const hv_cue *c, int nc,
                      int plain, int sane, char *why, size_t why_n) {
    hv_cue_params p = pp ? *pp : hv_cue_default_params();
    char tb[4096];
#define FAILED(...)                                                                                \
    do {                                                                                           \
        snprintf(why, why_n, __VA_ARGS__);                                                         \
        return 0;                                                                                  \
    } while (0)
    int with_text = 0;
    for (int i = 0; i < n; i++) with_text += has_text(w[i].text);
    if (!with_text && (nc != 0 || c != NULL)) FAILED("cues without words: %d", nc);
    if (with_text && (nc <= 0 || !c)) FAILED("no cues for %d words", with_text);
    int next_word = 0;
    for (int k = 0; k < nc; k++) {
        const hv_cue *q = &c[k];
        if (!q->text) FAILED("cue %d: NULL text", k);
        char *clean = hv_utf8_clean(q->text);
        int valid = clean && strcmp(clean, q->text) == 0;
        free(clean);
        if (!valid) FAILED("cue %d: invalid UTF-8", k);
        if (strchr(q->text, '\r')) FAILED("cue %d: '\\r' in text", k);
        /* times */
        int64_t s = ms(q->start), e = ms(q->end);
        if (fabs(q->start * 1000.0 - (double)s) > 1e-6 || fabs(q->end * 1000.0 - (double)e) > 1e-6)
            FAILED("cue %d: times not whole ms: %.9f %.9f", k, q->start, q->end);
        if (!(s >= 0 && s < e))
            FAILED("cue %d: start %lld end %lld", k, (long long)s, (long long)e);
        if (k + 1 < nc && e > ms(c[k + 1].start))
            FAILED("cue %d overlaps the next: end %lld > %lld", k, (long long)e,
                   (long long)ms(c[k + 1].start));
        if (k + 1 < nc && ms(c[k + 1].start) <= s) FAILED("cue %d: starts not increasing", k + 1);
        /* words */
        if (q->first_word < next_word || q->n_words < 1 || q->first_word + q->n_words > n)
            FAILED("cue %d: words %d+%d after %d of %d", k, q->first_word, q->n_words, next_word,
                   n);
        for (int i = next_word; i < q->first_word; i++)
            if (has_text(w[i].text)) FAILED("word %d with text in no cue", i);
        int last = q->first_word + q->n_words - 1;
        if (!has_text(w[q->first_word].text) || !has_text(w[last].text))
            FAILED("cue %d: its range starts or ends with an empty word", k);
        int shown = 0;
        char expect[8192] = "";
        size_t eo = 0;
        int64_t wmax_e = -1;
        for (int i = q->first_word; i <= last; i++) {
            if (!has_text(w[i].text)) continue;
            const char *t = trimmed(w[i].text, tb, sizeof tb);
            shown++;
            eo += (size_t)snprintf(expect + eo, sizeof expect - eo, "%s%s", eo ? " " : "", t);
            if (plain && isfinite(w[i].end) && ms(w[i].end) > wmax_e) wmax_e = ms(w[i].end);
        }
        next_word = last + 1;
        int64_t max_ms = (int64_t)llround(p.max_seconds * 1000.0);
        if (shown > 1 && e - s > max_ms)
            FAILED("cue %d: %lld ms > %lld ms", k, (long long)(e - s), (long long)max_ms);
        if (plain && s < ms(w[q->first_word].start)) FAILED("cue %d starts before its word", k);
        int chars_all = utf8_len(q->text, strlen(q->text)); /* '\n' counts as its space */
        int64_t read_ms = p.max_cps > 0 ? (int64_t)ceil(chars_all * 1000.0 / p.max_cps) : 0;
        int64_t min_ms = llround(p.min_seconds * 1000.0), gap_ms = llround(p.min_gap * 1000.0);
        if (min_ms > read_ms) read_ms = min_ms;
        int64_t next = k + 1 < nc ? ms(c[k + 1].start) : INT64_MAX;
        if (k + 1 < nc && next - e > 0 && next - e < gap_ms && next - s <= max_ms)
            FAILED("cue %d: a gap of %lld ms", k, (long long)(next - e));
        if (plain && e > wmax_e && e > s + read_ms && e != next && e > s + HV_CUE_MIN_SHOW_MS)
            FAILED("cue %d ends after its words and its reading time", k);
        if (plain && e - s < read_ms && e - s < max_ms) {
            if (e != next && e != next - gap_ms)
                FAILED("cue %d: %d chars in %lld ms, not stopped by the next cue", k, chars_all,
                       (long long)(e - s));
        }
        /* lines */
        int lines = 0, total = 0;
        for (const char *l = q->text;;) {
            const char *nl = strchr(l, '\n');
            size_t len = nl ? (size_t)(nl - l) : strlen(l);
            int chars = utf8_len(l, len);
            if (len == 0) FAILED("cue %d: empty line", k);
            if (l[0] == ' ' || l[len - 1] == ' ') FAILED("cue %d: line with spaces at an end", k);
            if (chars > p.max_line_chars && memchr(l, ' ', len))
                FAILED("cue %d: line of %d chars", k, chars);
            total += (lines ? 1 : 0) + chars;
            lines++;
            if (!nl) break;
            l = nl + 1;
        }
        if (shown > 1 && lines > p.max_lines) FAILED("cue %d: %d lines", k, lines);
        if (lines > 1 && total <= p.max_line_chars)
            FAILED("cue %d: %d lines for %d chars", k, lines, total);
        if (plain) {
            char got[8192];
            snprintf(got, sizeof got, "%s", q->text);
            for (char *x = got; *x; x++)
                if (*x == '\n') *x = ' ';
            if (strcmp(got, expect) != 0)
                FAILED("cue %d: text '%.200s', words '%.200s'", k, got, expect);
            double emax = -1;
            int prev = -1;
            for (int i = q->first_word; i <= last; i++) {
                if (!has_text(w[i].text)) continue;
                if (prev >= 0 && ms(w[i].start) - ms(emax) > HV_CUE_LONG_PAUSE_MS)
                    FAILED("cue %d: a long pause before word %d", k, i);
                if (w[i].end > emax) emax = w[i].end;
                prev = i;
            }
        }
        if (sane) {
            if (s != ms(w[q->first_word].start))
                FAILED("cue %d: start %lld, its word %lld", k, (long long)s,
                       (long long)ms(w[q->first_word].start));
            int64_t we = ms(w[last].end);
            int readable = p.max_cps > 0 || p.min_seconds > 0 || p.min_gap > 0;
            if (we > ms(w[q->first_word].start) && (readable ? e < we : e != we))
                FAILED("cue %d: end %lld, its word %lld", k, (long long)e, (long long)we);
        }
    }
    for (int i = next_word; i < n; i++)
        if (has_text(w[i].text)) FAILED("word %d with text in no cue", i);
    return 1;
#undef FAILED
}

/* The default limits with readability off: the cuts and the words' own
 * times, which the tests of the grouping rules check. */
static const hv_cue_params WORD_TIMES = {CUE_SIZE, 7, 2, 42, 0, 0, 0};

/* Builds cues and checks the invariants; returns the count (cues in *c).
 * p NULL: WORD_TIMES. */
static int build_checked(const hv_word *w, int n, const hv_cue_params *p, hv_cue **c, int plain,
                         int sane, const char *what) {
    if (!p) p = &WORD_TIMES;
    int nc = -1;
    char why[512] = "";
    int rc = hv_cues_build(w, n, p, c, &nc);
    CHECK_MSG(rc == 0, "%s: built", what);
    if (rc != 0) return 0;
    CHECK_MSG(check_cues(w, n, p, *c, nc, plain, sane, why, sizeof why), "%s: %s", what, why);
    return nc;
}

/* Builds cues from a line (make_words) and compares the joined texts. */
static void expect_cues(const char *line, double dur, double gap, const hv_cue_params *p,
                        const char *want, const char *what) {
    static wlist l;
    hv_cue *c = NULL;
    make_words(&l, line, 0.5, dur, gap);
    int nc = build_checked(l.w, l.n, p, &c, 1, 1, what);
    CHECK_MSG(strcmp(joined(c, nc), want) == 0, "%s:\n  got  %s\n  want %s", what, joined(c, nc),
              want);
    hv_cues_free(c, nc);
}

/* --------------------------------------------------------- where to cut */

static void test_none_and_one(void) {
    hv_cue *c = (hv_cue *)&c; /* must be overwritten */
    int nc = -1;
    CHECK(hv_cues_build(NULL, 0, NULL, &c, &nc) == 0 && c == NULL && nc == 0);
    hv_word w[4] = {{.text = "Hej.", .start = 1.0, .end = 1.4, .n_tokens = 1}};
    c = (hv_cue *)&c;
    CHECK(hv_cues_build(w, 0, NULL, &c, &nc) == 0 && c == NULL && nc == 0);
    CHECK(hv_cues_build(w, -3, NULL, &c, &nc) == 0 && c == NULL && nc == 0);
    hv_cues_free(NULL, 0);

    nc = build_checked(w, 1, NULL, &c, 1, 1, "one word");
    CHECK(nc == 1 && strcmp(c[0].text, "Hej.") == 0 && c[0].start == 1.0 && c[0].end == 1.4 &&
          c[0].first_word == 0 && c[0].n_words == 1);
    hv_cues_free(c, nc);

    /* words without text: no cues */
    hv_word e[4] = {{.text = ""}, {.text = NULL, .start = 2}, {.text = "  "}, {.text = "\n\r\t"}};
    nc = build_checked(e, 4, NULL, &c, 0, 0, "only empty words");
    CHECK(nc == 0 && c == NULL);

    /* empty words are shown nowhere, inside a cue's range or outside */
    hv_word m[6] = {
        {.text = "", .start = 0.0, .end = 50.0},      {.text = "Hello", .start = 1.0, .end = 1.3},
        {.text = NULL, .start = NAN, .end = 99.0},    {.text = " ", .start = 1.3, .end = 1.4},
        {.text = "world.", .start = 1.4, .end = 1.8}, {.text = "", .start = 9.0, .end = 9.5},
    };
    nc = build_checked(m, 6, NULL, &c, 1, 0, "empty words");
    CHECK(nc == 1 && strcmp(c[0].text, "Hello world.") == 0 && c[0].first_word == 1 &&
          c[0].n_words == 4 && c[0].start == 1.0 && c[0].end == 1.8);
    hv_cues_free(c, nc);
}

static void test_sentences(void) {
    /* sentences long enough to read: one cue each */
    expect_cues("This is the first sentence. And here is the second one. Finally a third.", 0.3,
                0.1, NULL,
                "This is the first sentence.|And here is the second one.|Finally a third.",
                "sentence ends");
    /* a sentence end after closing quotes or brackets, and ? ! … */
    expect_cues("He said \"we are going home now.\" Are you coming with us? Yes, I am coming!", 0.3,
                0.1, NULL,
                "He said \"we are going home now.\"|Are you coming with us?|Yes, I am coming!",
                "quotes, ? and !");
    expect_cues("Well I really do not know… Maybe we should ask someone else then.", 0.3, 0.1, NULL,
                "Well I really do not know…|Maybe we should ask someone else then.", "ellipsis");
    /* short sentences stay together: cues shorter than a second are hard
     * to read */
    expect_cues("Yes. No. Maybe not.", 0.3, 0.1, NULL, "Yes. No. Maybe not.", "short sentences");
    /* ... unless a pause (here 1 s) separates them */
    expect_cues("I see. |1.0 That is good.", 0.4, 0.1, NULL, "I see.|That is good.",
                "short sentences, pause");
    /* a sentence end is a better cut than a comma, even when the comma
     * splits more evenly: the cue would end one sentence and start
     * another */
    expect_cues("We stopped there. Later that evening, when the rain finally ended, we went on.",
                0.35, 0.1, NULL,
                "We stopped there.|Later that evening,/when the rain finally ended, we went on.",
                "sentence before comma");
    /* a short sentence before a long one is its own cue rather than the
     * start of a cue that runs into the next sentence */
    expect_cues("Thank you. So the next thing that we are going to talk about today is the weather "
                "up in the north of the country",
                0.3, 0.1, NULL,
                "Thank you.|So the next thing that we/are going to talk about|today is the "
                "weather up in/the north of the country",
                "short sentence first");
}

static void test_commas_and_pauses(void) {
    /* 18 words of 0.4 s = 7.1 s: over the limit; the comma is the cut, and
     * the lines of the first cue are as even as can be */
    expect_cues("When we came home from the long trip to the mountains, everybody was tired and "
                "wanted to sleep.",
                0.3, 0.1, NULL,
                "When we came home from the/long trip to the mountains,|everybody was tired and "
                "wanted to sleep.",
                "comma cut");
    /* semicolons and colons too */
    expect_cues("There were three things we needed to buy for the trip; bread and cheese and milk "
                "from the shop",
                0.3, 0.1, NULL,
                "There were three things we/needed to buy for the trip;|bread and cheese and milk "
                "from the shop",
                "semicolon cut");
    /* no punctuation: the longest pause (0.9 s) */
    expect_cues(
        "we walked along the river for a long time |0.9 and then we sat down on a bench "
        "near the old bridge",
        0.3, 0.1, NULL,
        "we walked along the river for a long time|and then we sat down on a/bench near the "
        "old bridge",
        "pause cut");
    /* among pauses, the longer one */
    expect_cues(
        "we walked along the river |0.4 for a long time |0.7 and then we sat down on a "
        "bench near the bridge",
        0.3, 0.1, NULL,
        "we walked along the river for a long time|and then we sat down on/a bench near the "
        "bridge",
        "longer pause cut");
    /* without punctuation (--no-punctuation), the pauses make the cues:
     * a cue per phrase rather than fewer, fuller ones cut anywhere */
    expect_cues("det har regnet i tre uger i træk og landmændene er bekymrede |0.3 men først "
                "nyhederne |0.5 statsministeren holdt i går en tale hvor hun lovede flere penge "
                "til sygehusene |0.25 og til ældreplejen i hele landet men oppositionen er ikke "
                "imponeret |0.6 nej slet ikke vi skal også høre om fodbold",
                0.25, 0.05, NULL,
                "det har regnet i tre uger i træk/og landmændene er bekymrede|men først "
                "nyhederne|statsministeren holdt i går en tale hvor/hun lovede flere penge til "
                "sygehusene|og til ældreplejen i hele landet/men oppositionen er ikke "
                "imponeret|nej slet ikke vi skal også høre om fodbold",
                "phrases at pauses");
    /* a pause of more than 1.5 s always ends a cue, 1.5 s does not */
    expect_cues("Hello there |1.501 my friend", 0.3, 0.1, NULL, "Hello there|my friend",
                "long pause");
    expect_cues("Hello there |1.4 my friend", 0.3, 0.1, NULL, "Hello there my friend",
                "pause of 1.5 s");
    expect_cues("Hello. |3 Hello. |3 Hello.", 0.3, 0.1, NULL, "Hello.|Hello.|Hello.",
                "long pauses, one word each");
}

static void test_orphans(void) {
    /* 19 words, 7.5 s: a cut is needed; the comma would leave "okay."
     * alone, so a cut between words is taken instead */
    static wlist l;
    hv_cue *c = NULL;
    make_words(&l,
               "so we decided to take the train into the city because the car was broken "
               "down again, okay.",
               0.0, 0.3, 0.1);
    int nc = build_checked(l.w, l.n, NULL, &c, 1, 1, "orphan");
    CHECK(nc == 2);
    for (int k = 0; k < nc; k++) CHECK_MSG(c[k].n_words > 1, "orphan: cue %d of one word", k);
    hv_cues_free(c, nc);
    /* nor a word alone at the start, before a comma-less run */
    make_words(&l,
               "Well, we decided to take the train into the city because the car was broken "
               "down again and again",
               0.0, 0.3, 0.1);
    nc = build_checked(l.w, l.n, NULL, &c, 1, 1, "orphan at the start");
    CHECK(nc == 2);
    for (int k = 0; k < nc; k++) CHECK_MSG(c[k].n_words > 1, "orphan at start: cue %d", k);
    hv_cues_free(c, nc);
}

static void test_time_limit(void) {
    /* 60 short words without punctuation, 0.4 s apiece (23.9 s): four
     * cues of 15 words (5.9 s), evenly */
    static wlist l;
    char line[1024] = "";
    for (int i = 0; i < 60; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%sw%02d", i ? " " : "", i);
    make_words(&l, line, 0.0, 0.3, 0.1);
    hv_cue *c = NULL;
    int nc = build_checked(l.w, l.n, NULL, &c, 1, 1, "7 s limit");
    CHECK_MSG(nc == 4, "7 s limit: %d cues", nc);
    for (int k = 0; k < nc; k++)
        CHECK_MSG(c[k].n_words == 15 && c[k].end - c[k].start <= 7.0, "cue %d: %d words, %.3f s", k,
                  c[k].n_words, c[k].end - c[k].start);
    hv_cues_free(c, nc);

    /* other limits: 3 s (7 words) */
    hv_cue_params p = hv_cue_default_params();
    p.max_seconds = 3;
    nc = build_checked(l.w, l.n, &p, &c, 1, 1, "3 s limit");
    CHECK_MSG(nc == 9, "3 s limit: %d cues", nc);
    hv_cues_free(c, nc);

    /* a word longer than the limit is a cue of its own, whatever else */
    hv_word w[3] = {{.text = "A", .start = 0.0, .end = 0.2},
                    {.text = "looooong", .start = 0.3, .end = 9.0},
                    {.text = "word.", .start = 9.0, .end = 9.3}};
    nc = build_checked(w, 3, NULL, &c, 1, 1, "word over the limit");
    CHECK(nc == 3 && strcmp(joined(c, nc), "A|looooong|word.") == 0);
    hv_cues_free(c, nc);
}

/* ------------------------------------------------------------- lines */

static void test_lines(void) {
    /* one line when it fits, code points counted: 42 characters in 80
     * bytes is one line, 43 are two */
    expect_cues("ææææææææææ øøøøøøøøøø åååååååååå æææææææææ", 0.3, 0.1, NULL,
                "ææææææææææ øøøøøøøøøø åååååååååå æææææææææ", "42 code points");
    expect_cues("ææææææææææ øøøøøøøøøø åååååååååå ææææææææææ", 0.3, 0.1, NULL,
                "ææææææææææ øøøøøøøøøø/åååååååååå ææææææææææ", "43 code points");
    /* even lines */
    expect_cues("the quick brown fox jumps over the lazy dog and runs far away", 0.3, 0.1, NULL,
                "the quick brown fox jumps over/the lazy dog and runs far away", "even lines");
    /* a break after a comma rather than the most even one */
    expect_cues("I went to the shop, and then I came back home again", 0.3, 0.1, NULL,
                "I went to the shop,/and then I came back home again", "line break at a comma");
    /* Danish, full cues: every line at most 42 characters (and the cut
     * where the clause ends, since the comma would leave 89 characters) */
    expect_cues("Æbleskiverne på bordet får åbenbart børnene til at smile, sagde bedstemoderen og "
                "hældte mere kaffe i kopperne til de trætte gæster fra Ærø og Fanø.",
                0.25, 0.05, NULL,
                "Æbleskiverne på bordet får åbenbart/børnene til at smile, sagde "
                "bedstemoderen|og hældte mere kaffe i kopperne til/de trætte gæster fra Ærø og "
                "Fanø.",
                "Danish");
    static wlist l;
    hv_cue *c = NULL;
    int nc;

    /* a word longer than a line has a line of its own */
    const char *longw = "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamten";
    char line[512];
    snprintf(line, sizeof line, "Look at %s now", longw);
    make_words(&l, line, 0.0, 0.3, 0.1);
    nc = build_checked(l.w, l.n, NULL, &c, 1, 1, "long word");
    int own = 0;
    for (int k = 0; k < nc; k++)
        for (const char *x = c[k].text; x; x = strchr(x, '\n') ? strchr(x, '\n') + 1 : NULL) {
            const char *nl = strchr(x, '\n');
            size_t len = nl ? (size_t)(nl - x) : strlen(x);
            own += len == strlen(longw) && memcmp(x, longw, len) == 0;
        }
    CHECK_MSG(own == 1, "long word on a line of its own: %s", joined(c, nc));
    snprintf(line, sizeof line, "Look at|%s/now", longw);
    CHECK_MSG(strcmp(joined(c, nc), line) == 0, "long word: %s", joined(c, nc));
    hv_cues_free(c, nc);
    /* alone in a cue, it may exceed the line */
    hv_cue_params p = hv_cue_default_params();
    p.max_line_chars = 20;
    hv_word one = {.text = longw, .start = 0, .end = 1};
    nc = build_checked(&one, 1, &p, &c, 1, 1, "long word alone");
    CHECK(nc == 1 && strcmp(c[0].text, longw) == 0);
    hv_cues_free(c, nc);
}

static void test_params(void) {
    static wlist l;
    hv_cue *c = NULL;
    const char *text = "When we came home from the long trip to the mountains, everybody was tired "
                       "and wanted to sleep. It had been a good day.";
    make_words(&l, text, 0.0, 0.3, 0.1);
    /* one line of at most 20 characters */
    hv_cue_params p = hv_cue_default_params();
    p.max_lines = 1;
    p.max_line_chars = 20;
    int nc = build_checked(l.w, l.n, &p, &c, 1, 1, "1 x 20");
    CHECK(nc >= 6);
    for (int k = 0; k < nc; k++)
        CHECK_MSG(!strchr(c[k].text, '\n') && utf8_len(c[k].text, strlen(c[k].text)) <= 20,
                  "1 x 20: cue %d '%s'", k, c[k].text);
    hv_cues_free(c, nc);
    /* two lines of 20 */
    p.max_lines = 2;
    nc = build_checked(l.w, l.n, &p, &c, 1, 1, "2 x 20");
    CHECK(nc >= 3);
    hv_cues_free(c, nc);
    /* three lines of 60 and 30 s: the sentences, each on one line */
    p.max_lines = 3;
    p.max_line_chars = 60;
    p.max_seconds = 30;
    nc = build_checked(l.w, l.n, &p, &c, 1, 1, "3 x 60");
    CHECK_MSG(strcmp(joined(c, nc), "When we came home from the long trip to the mountains,/"
                                    "everybody was tired and wanted to sleep.|It had been a good "
                                    "day.") == 0,
              "3 x 60: %s", joined(c, nc));
    hv_cues_free(c, nc);
    /* limits out of range are clamped, never a crash */
    hv_cue_params bad[] = {{CUE_SIZE, 0, 0, 0, 0, 0, 0},
                           {CUE_SIZE, NAN, -5, 1 << 30, NAN, NAN, NAN},
                           {CUE_SIZE, INFINITY, 1 << 30, -1, INFINITY, INFINITY, INFINITY},
                           {CUE_SIZE, -INFINITY, 3, 5, -INFINITY, -1, -1},
                           {CUE_SIZE, 1e9, 2, 42, 1e9, 1e9, 1e9}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hv_cue_params q = bad[i];
        nc = -1;
        CHECK(hv_cues_build(l.w, l.n, &q, &c, &nc) == 0 && nc >= 1);
        hv_cues_free(c, nc);
    }

    /* hvt_cue_params_check */
    char msg[128];
    p = hv_cue_default_params();
    CHECK(p.max_seconds == 7.0 && p.max_lines == 2 && p.max_line_chars == 42 && p.max_cps == 17.0 &&
          fabs(p.min_seconds - 5.0 / 6.0) < 1e-12 && p.min_gap == 0.08);
    CHECK(hvt_cue_params_check(&p, msg, sizeof msg) == 0);
    hv_cue_params ok[] = {{CUE_SIZE, 1, 1, 10, 0, 0, 0},
                          {CUE_SIZE, 600, 10, 1000, 1000, 10, 1},
                          {CUE_SIZE, 2.5, 3, 37, 17, 1, 0.1}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        CHECK_MSG(hvt_cue_params_check(&ok[i], msg, sizeof msg) == 0, "ok %zu", i);
    struct {
        hv_cue_params p;
        const char *opt;
    } no[] = {
        {{CUE_SIZE, 0.999, 2, 42, 0, 0, 0}, "--max-cue-seconds"},
        {{CUE_SIZE, 600.001, 2, 42, 0, 0, 0}, "--max-cue-seconds"},
        {{CUE_SIZE, NAN, 2, 42, 0, 0, 0}, "--max-cue-seconds"},
        {{CUE_SIZE, INFINITY, 2, 42, 0, 0, 0}, "--max-cue-seconds"},
        {{CUE_SIZE, 7, 0, 42, 0, 0, 0}, "--max-lines"},
        {{CUE_SIZE, 7, 11, 42, 0, 0, 0}, "--max-lines"},
        {{CUE_SIZE, 7, 2, 9, 0, 0, 0}, "--max-line-chars"},
        {{CUE_SIZE, 7, 2, 1001, 0, 0, 0}, "--max-line-chars"},
        {{CUE_SIZE, -1, -1, -1, 0, 0, 0}, "--max-cue-seconds"},
        {{CUE_SIZE, 7, 2, 42, -1, 0, 0}, "--max-cue-cps"},
        {{CUE_SIZE, 7, 2, 42, NAN, 0, 0}, "--max-cue-cps"},
        {{CUE_SIZE, 7, 2, 42, 17, 10.5, 0}, "--min-cue-seconds"},
        {{CUE_SIZE, 7, 2, 42, 17, 1, 1.5}, "--min-cue-gap"},
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        msg[0] = '\0';
        CHECK_MSG(hvt_cue_params_check(&no[i].p, msg, sizeof msg) == -1 &&
                      strncmp(msg, no[i].opt, strlen(no[i].opt)) == 0,
                  "refused %zu: '%s'", i, msg);
    }
    CHECK(hvt_cue_params_check(&no[0].p, NULL, 0) == -1);
    CHECK(hvt_cue_params_check(&no[0].p, msg, 5) == -1 && strlen(msg) == 4);
    hvt_cue_params_check(&no[4].p, msg, sizeof msg);
    CHECK_MSG(strcmp(msg, "--max-lines must be an integer from 1 to 10") == 0, "%s", msg);
}

/* ------------------------------------------------------------- times */

static void test_times(void) {
    hv_cue *c = NULL;
    int nc;
    /* overlapping word times across a cut: the first cue ends where the
     * next starts */
    hv_word ov[] = {
        {.text = "This", .start = 0.0, .end = 0.4}, {.text = "is", .start = 0.4, .end = 0.7},
        {.text = "the", .start = 0.7, .end = 1.0},  {.text = "first.", .start = 1.0, .end = 2.0},
        {.text = "And", .start = 1.8, .end = 2.2},  {.text = "here", .start = 2.2, .end = 2.6},
        {.text = "the", .start = 2.6, .end = 2.9},  {.text = "second.", .start = 2.9, .end = 3.5},
    };
    nc = build_checked(ov, 8, NULL, &c, 1, 0, "overlap");
    CHECK(nc == 2 && c[0].end == 1.8 && c[1].start == 1.8 && c[1].end == 3.5);
    hv_cues_free(c, nc);

    /* starts going backwards: made non-decreasing */
    hv_word back[] = {
        {.text = "One", .start = 5.0, .end = 5.5},    {.text = "two.", .start = 4.0, .end = 4.5},
        {.text = "Three", .start = 7.0, .end = 7.5},  {.text = "four.", .start = 3.0, .end = 8.0},
        {.text = "Five", .start = 10.0, .end = 10.5}, {.text = "six.", .start = 10.5, .end = 11},
    };
    nc = build_checked(back, 6, NULL, &c, 1, 0, "backwards");
    CHECK(nc >= 2 && c[0].start == 5.0);
    hv_cues_free(c, nc);

    /* a zero-length cue: shown HV_CUE_MIN_SHOW_MS, or until the next
     * cue */
    hv_word z[] = {
        {.text = "Hi.", .start = 1.0, .end = 1.0},
        {.text = "Hello.", .start = 4.0, .end = 4.0},
        {.text = "Yes.", .start = 4.2, .end = 4.6},
    };
    nc = build_checked(z, 3, NULL, &c, 1, 0, "zero length");
    CHECK_MSG(nc == 2 && c[0].start == 1.0 && c[0].end == 1.5 && c[1].start == 4.0 &&
                  c[1].end == 4.6,
              "zero length: %d cues %s", nc, joined(c, nc));
    hv_cues_free(c, nc);
    /* (one line of 10 characters forces the first cut) */
    hv_word z2[] = {
        {.text = "Hi.", .start = 1.0, .end = 1.0},
        {.text = "Wonderful!", .start = 1.2, .end = 1.6},
        {.text = "Bye.", .start = 3.5, .end = 3.5},
    };
    hv_cue_params p = {CUE_SIZE, 7, 1, 10, 0, 0, 0};
    nc = build_checked(z2, 3, &p, &c, 1, 0, "zero length, no room");
    CHECK_MSG(nc == 3 && c[0].start == 1.0 && c[0].end == 1.2 && c[1].start == 1.2 &&
                  c[1].end == 1.6 && c[2].start == 3.5 && c[2].end == 4.0,
              "zero length, no room: %d cues %s", nc, joined(c, nc));
    hv_cues_free(c, nc);

    /* every word at the same time: cues 1 ms apart, none empty */
    static hv_word same[300];
    static char texts[300][8];
    for (int i = 0; i < 300; i++) {
        snprintf(texts[i], sizeof texts[i], i % 7 == 6 ? "w%d." : "w%d", i);
        same[i] = (hv_word){.text = texts[i], .start = 2.0, .end = 2.0};
    }
    nc = build_checked(same, 300, NULL, &c, 1, 0, "same time");
    CHECK(nc > 1 && c[0].start == 2.0);
    hv_cues_free(c, nc);

    /* NaN, infinite, negative and huge times */
    hv_word bad[] = {
        {.text = "a", .start = NAN, .end = NAN},
        {.text = "b", .start = -5.0, .end = -1.0},
        {.text = "c.", .start = INFINITY, .end = 1.0},
        {.text = "d", .start = 2.0, .end = -INFINITY},
        {.text = "e", .start = -INFINITY, .end = INFINITY},
        {.text = "f.", .start = 1e300, .end = 1e308},
        {.text = "g", .start = 3.0, .end = NAN},
        {.text = "h", .start = DBL_MAX, .end = DBL_MAX},
        {.text = "i.", .start = 2e9, .end = 1e9},
    };
    nc = build_checked(bad, sizeof bad / sizeof *bad, NULL, &c, 0, 0, "hostile times");
    CHECK(nc >= 1);
    for (int k = 0; k < nc; k++)
        CHECK_MSG(c[k].start >= 0 && c[k].end <= 1e9 + 1, "hostile times: cue %d %f %f", k,
                  c[k].start, c[k].end);
    hv_cues_free(c, nc);
}

/* hostile texts: invalid UTF-8, line breaks and controls inside words */
static void test_texts(void) {
    hv_word w[] = {
        {.text = "Bad\xff\xfe", .start = 0.0, .end = 0.3},
        {.text = "line\nbreak", .start = 0.4, .end = 0.7},
        {.text = "\r\ncarriage\r", .start = 0.8, .end = 1.0},
        {.text = "tab\tand\x01", .start = 1.1, .end = 1.3},
        {.text = "sep\xe2\x80\xa8\xc2\x85par\xe2\x80\xa9", .start = 1.4, .end = 1.6},
        {.text = "cut\xe2\x80", .start = 1.7, .end = 1.9},
        {.text = "  spaced   out  ", .start = 2.0, .end = 2.2},
    };
    hv_cue *c = NULL;
    int nc = build_checked(w, sizeof w / sizeof *w, NULL, &c, 0, 1, "hostile texts");
    CHECK_MSG(nc == 1 &&
                  strcmp(c[0].text, "Bad\xef\xbf\xbd\xef\xbf\xbd line break carriage tab\n"
                                    "and sep par cut\xef\xbf\xbd\xef\xbf\xbd spaced out") == 0,
              "hostile texts: %s", joined(c, nc));
    hv_cues_free(c, nc);
}

/* a word with spaces inside may be broken across lines, never cues */
static void test_word_with_spaces(void) {
    hv_word w[] = {
        {.text = "Hello", .start = 0.0, .end = 0.4},
        {.text = "big wide world", .start = 0.5, .end = 1.5},
        {.text = "again.", .start = 1.6, .end = 2.0},
    };
    hv_cue_params p = {CUE_SIZE, 7, 1, 10, 0, 0, 0};
    hv_cue *c = NULL;
    int nc = build_checked(w, 3, &p, &c, 1, 1, "word with spaces");
    CHECK_MSG(nc == 3 && strcmp(joined(c, nc), "Hello|big wide/world|again.") == 0 &&
                  c[1].first_word == 1 && c[1].n_words == 1,
              "word with spaces: %s", joined(c, nc));
    hv_cues_free(c, nc);
    p.max_lines = 2;
    p.max_line_chars = 12;
    nc = build_checked(w, 3, &p, &c, 1, 1, "word with spaces, 2 lines");
    CHECK_MSG(nc == 2 && strcmp(joined(c, nc), "Hello big/wide world|again.") == 0,
              "word with spaces, 2 lines: %s", joined(c, nc));
    hv_cues_free(c, nc);
}

/* ------------------------------------------------------------- writers */

static char *write_mem(int vtt, const hv_cue *c, int n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = vtt ? hv_output_cues(f, c, n, 1) : hv_output_cues(f, c, n, 0);
    fclose(f);
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void test_writers(void) {
    hv_cue c[] = {
        {.start = 1.0, .end = 2.5, .text = "Hello & <world> -->"},
        {.start = 2.5, .end = 3.0, .text = "line one\nline two"},
        {.start = 3.0, .end = 3.1, .text = ""},        /* left out */
        {.start = 3.1, .end = 3.2, .text = "\n \r\n"}, /* left out */
        {.start = 3661.2346,
         .end = 3662.0,
         .text = "a\r b\n\nc\xe2\x80\xa8"
                 "d"},
        {.start = NAN, .end = -1.0, .text = "bad\xff"},
        {.start = 360000.0, .end = 360001.0005, .text = "late"},
    };
    int n = sizeof c / sizeof *c;
    char *srt = write_mem(0, c, n), *vtt = write_mem(1, c, n);
    const char *want_srt = "1\n00:00:01,000 --> 00:00:02,500\nHello & <world> -->\n\n"
                           "2\n00:00:02,500 --> 00:00:03,000\nline one\nline two\n\n"
                           "3\n01:01:01,235 --> 01:01:02,000\na  b\nc d\n\n"
                           "4\n00:00:00,000 --> 00:00:00,000\nbad\xef\xbf\xbd\n\n"
                           "5\n100:00:00,000 --> 100:00:01,001\nlate\n\n";
    const char *want_vtt = "WEBVTT\n\n"
                           "00:00:01.000 --> 00:00:02.500\nHello &amp; &lt;world&gt; --&gt;\n\n"
                           "00:00:02.500 --> 00:00:03.000\nline one\nline two\n\n"
                           "01:01:01.235 --> 01:01:02.000\na  b\nc d\n\n"
                           "00:00:00.000 --> 00:00:00.000\nbad\xef\xbf\xbd\n\n"
                           "100:00:00.000 --> 100:00:01.001\nlate\n\n";
    CHECK_MSG(srt && strcmp(srt, want_srt) == 0, "srt:\n%s", srt ? srt : "(null)");
    CHECK_MSG(vtt && strcmp(vtt, want_vtt) == 0, "vtt:\n%s", vtt ? vtt : "(null)");
    free(srt);
    free(vtt);
    /* no cues */
    srt = write_mem(0, NULL, 0);
    vtt = write_mem(1, NULL, 0);
    CHECK(srt && strcmp(srt, "") == 0);
    CHECK(vtt && strcmp(vtt, "WEBVTT\n\n") == 0);
    free(srt);
    free(vtt);

    /* from words to bytes */
    static wlist l;
    make_words(&l,
               "Velkommen til programmet. |0.6 I dag taler vi om æbler, pærer & blommer fra "
               "haven <igen>.",
               0.25, 0.3, 0.1);
    hv_cue *cues = NULL;
    int nc = build_checked(l.w, l.n, NULL, &cues, 1, 1, "words to bytes");
    srt = write_mem(0, cues, nc);
    vtt = write_mem(1, cues, nc);
    CHECK_MSG(srt && strcmp(srt, "1\n00:00:00,250 --> 00:00:01,350\nVelkommen til programmet.\n\n"
                                 "2\n00:00:02,050 --> 00:00:06,750\nI dag taler vi om æbler,\n"
                                 "pærer & blommer fra haven <igen>.\n\n") == 0,
              "words to srt:\n%s", srt ? srt : "(null)");
    CHECK_MSG(vtt && strcmp(vtt, "WEBVTT\n\n00:00:00.250 --> 00:00:01.350\nVelkommen til "
                                 "programmet.\n\n00:00:02.050 --> 00:00:06.750\nI dag taler vi "
                                 "om æbler,\npærer &amp; blommer fra haven &lt;igen&gt;.\n\n") == 0,
              "words to vtt:\n%s", vtt ? vtt : "(null)");
    free(srt);
    free(vtt);
    hv_cues_free(cues, nc);
}

/* ------------------------------------------------------------- stress */

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}
static int rnd_to(int n) { return (int)(rnd() % (uint32_t)n); }

/* n random words: lengths 1..14 characters (a tenth of them Danish
 * letters, some 50 long), punctuation now and then, durations 0.05 to
 * 0.8 s (some long ones, some zero), pauses 0 to 0.4 s (some long ones).
 * With `hostile`, also empty texts, overlaps, backward starts and NaN. */
static hv_word *random_words(int n, int hostile, char **store) {
    hv_word *w = calloc((size_t)n, sizeof *w);
    char *buf = malloc((size_t)n * 160), *b = buf;
    static const char *const letters[] = {"a", "e", "n", "r", "s", "t", "k", "l",
                                          "o", "i", "æ", "ø", "å", "Æ", "é"};
    static const char *const ends[] = {".", ",", "?", "!", ";", ":", "…", ".\"", ")", "—"};
    int64_t t = 0;
    for (int i = 0; i < n; i++) {
        char *text = b;
        int len = rnd_to(20) == 0 ? 50 : 1 + rnd_to(14);
        if (hostile && rnd_to(30) == 0) len = 0;
        for (int k = 0; k < len; k++) {
            const char *x = letters[rnd_to(10) == 0 ? 10 + rnd_to(5) : rnd_to(10)];
            memcpy(b, x, strlen(x));
            b += strlen(x);
        }
        if (len && rnd_to(6) == 0) {
            const char *x = ends[rnd_to(10)];
            memcpy(b, x, strlen(x));
            b += strlen(x);
        }
        *b++ = '\0';
        int64_t dur = rnd_to(40) == 0 ? 9000 : rnd_to(30) == 0 ? 0 : 50 + rnd_to(750);
        int64_t gap = rnd_to(25) == 0 ? 1000 + rnd_to(3000) : rnd_to(400);
        int64_t s = t;
        if (hostile && rnd_to(10) == 0) s -= rnd_to(500);
        if (s < 0) s = 0;
        w[i].text = text;
        w[i].start = (double)s / 1000.0;
        w[i].end = (double)(s + dur) / 1000.0;
        w[i].n_tokens = 1;
        if (hostile && rnd_to(50) == 0) w[i].start = NAN;
        if (hostile && rnd_to(50) == 0) w[i].end = rnd_to(2) ? INFINITY : -3.0;
        t = s + dur + gap;
    }
    *store = buf;
    return w;
}

static void test_stress(void) {
    hv_cue_params ps[] = {
        {CUE_SIZE, 7, 2, 42, 0, 0, 0},           {CUE_SIZE, 1, 1, 10, 0, 0, 0},
        {CUE_SIZE, 3.5, 1, 20, 0, 0, 0},         {CUE_SIZE, 12, 3, 37, 0, 0, 0},
        {CUE_SIZE, 600, 10, 1000, 0, 0, 0},      {CUE_SIZE, 7, 2, 10, 0, 0, 0},
        {CUE_SIZE, 7, 2, 42, 17, 5.0 / 6, 0.08}, {CUE_SIZE, 1, 1, 10, 17, 5.0 / 6, 0.08},
        {CUE_SIZE, 3.5, 1, 20, 12, 2, 0.5},
    };
    rng_state = 12345;
    for (int hostile = 0; hostile < 2; hostile++) {
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
            char *store = NULL;
            int n = 4000;
            hv_word *w = random_words(n, hostile, &store);
            hv_cue *c = NULL;
            char what[64];
            snprintf(what, sizeof what, "stress %s %zu", hostile ? "hostile" : "plain", pi);
            int nc = build_checked(w, n, &ps[pi], &c, !hostile, 0, what);
            CHECK(nc > 0);
            hv_cues_free(c, nc);
            free(w);
            free(store);
        }
    }
    /* huge n: 200000 words at one instant (the lines bound each cue) and
     * 200000 ordinary ones */
    int n = 200000;
    hv_word *w = calloc((size_t)n, sizeof *w);
    for (int i = 0; i < n; i++) w[i] = (hv_word){.text = i % 11 == 10 ? "x." : "x"};
    hv_cue *c = NULL;
    int nc = build_checked(w, n, NULL, &c, 1, 0, "huge n at one instant");
    CHECK(nc >= n / 42);
    hv_cues_free(c, nc);
    free(w);
    char *store = NULL;
    w = random_words(n, 0, &store);
    nc = build_checked(w, n, NULL, &c, 1, 0, "huge n");
    CHECK(nc > n / 40);
    hv_cues_free(c, nc);
    free(w);
    free(store);
}

/* hv_segment_cues: a chunk's segments. With words, its cues and their
 * tokens (in the words' numbering); a last cue that the shortest showing
 * time would carry past the chunk ends with it; without words, one cue of
 * the whole chunk, its text on one line. */
static void test_segment_cues(void) {
    wlist l;
    make_words(&l, "Hello there. |2 How are you today? Fine.", 10.0, 0.3, 0.1);
    for (int i = 0; i < l.n; i++) l.w[i].first_token = 100 + 2 * i, l.w[i].n_tokens = 2;
    hv_segment g = {0};
    g.start = 9.5;
    g.end = l.w[l.n - 1].end + 0.2;
    g.words = l.w;
    g.n_words = l.n;
    g.first_token = 100;
    g.n_tokens = 2 * l.n;
    g.text = "Hello there. How are you today? Fine.";
    hv_cue *c = NULL;
    int n = 0;
    CHECK(hv_segment_cues(&g, NULL, &c, &n) == HV_OK && n == 2);
    if (n == 2) {
        CHECK(strcmp(c[0].text, "Hello there.") == 0);
        CHECK(c[0].first_token == 100 && c[0].n_tokens == 4);
        CHECK(c[1].first_word == 2 && c[1].n_words == 5);
        CHECK(c[1].first_token == 104 && c[1].n_tokens == 10);
        CHECK(c[1].end <= g.end + 1e-9);
    }
    hv_cues_free(c, n);
    /* a one-word chunk of no length: shown until the chunk ends, not 0.5 s */
    make_words(&l, "Ja.", 20.0, 0.0, 0.0);
    g.words = l.w;
    g.n_words = 1;
    g.start = 19.9;
    g.end = 20.2;
    CHECK(hv_segment_cues(&g, NULL, &c, &n) == HV_OK && n == 1);
    if (n == 1) CHECK(ms(c[0].start) == 20000 && ms(c[0].end) == 20200);
    hv_cues_free(c, n);
    /* no words: one cue of the chunk, line breaks as spaces, bad UTF-8 cleaned */
    g.words = NULL;
    g.n_words = 0;
    g.text = "two\nlines \xff";
    g.start = 1.0;
    g.end = 4.5;
    CHECK(hv_segment_cues(&g, NULL, &c, &n) == HV_OK && n == 1);
    if (n == 1) {
        CHECK(strcmp(c[0].text, "two lines \xEF\xBF\xBD") == 0);
        CHECK(c[0].start == 1.0 && c[0].end == 4.5 && c[0].n_words == 0);
        CHECK(c[0].first_token == 100 && c[0].n_tokens == g.n_tokens);
    }
    hv_cues_free(c, n);
    /* limits of another size (a program built against another hviske.h):
     * refused, with words and without */
    hv_cue_params other = hv_cue_default_params();
    CHECK(other.size == sizeof other);
    other.size = sizeof other - sizeof(double);
    c = (hv_cue *)&other; /* must come back NULL */
    n = -1;
    CHECK(hv_segment_cues(&g, &other, &c, &n) == HV_ERR_INVALID_ARG && !c && n == 0);
    g.words = l.w;
    g.n_words = 1;
    CHECK(hv_segment_cues(&g, &other, &c, &n) == HV_ERR_INVALID_ARG && !c && n == 0);
    CHECK(hv_cues_build(l.w, 1, &other, &c, &n) == HV_ERR_INVALID_ARG && !c && n == 0);
    other.size = sizeof other;
    CHECK(hv_cues_build(l.w, 1, &other, &c, &n) == HV_OK && n == 1);
    hv_cues_free(c, n);
}

/* Readable cues (issue #61): shown on into the silence after their words
 * until they read at 17 characters a second and last 5/6 s, never closer
 * than 2 frames to the next cue; gaps under 2 frames closed; the words'
 * own times untouched; each rule off at 0. */
static void test_readable(void) {
    /* "I morgen bliver det gråt med minus tyve grader." (47 characters)
     * spoken in 2 s: 23.5 a second; 47 / 17 = 2765 ms */
    const hv_cue_params on = {CUE_SIZE, 7, 2, 42, 17, 5.0 / 6, 0.08};
    wlist l;
    make_words(&l,
               "I morgen bliver det gråt med minus tyve grader. |1.4 Det bliver koldt i morgen. "
               "|2 Ja.",
               1.0, 0.2, 0.0375);
    double before[32];
    for (int i = 0; i < l.n; i++) before[i] = l.w[i].end;
    hv_cue *c = NULL;
    int nc = build_checked(l.w, l.n, &on, &c, 1, 1, "readable");
    int64_t words_end = ms(l.w[8].end), next = ms(l.w[9].start);
    CHECK_MSG(nc == 3 && ms(c[0].start) == 1000 && words_end < 1000 + 2765 &&
                  next > 1000 + 2765 + 80 && ms(c[0].end) == 1000 + 2765,
              "into the silence: %d cues, %s, end %lld (words %lld)", nc, joined(c, nc),
              nc ? (long long)ms(c[0].end) : -1LL, (long long)words_end);
    /* "Ja." (3 characters, 200 ms) after a long pause: shown 5/6 s */
    CHECK_MSG(nc == 3 && ms(c[2].end) - ms(c[2].start) == 833, "min duration: %lld ms",
              nc == 3 ? (long long)(ms(c[2].end) - ms(c[2].start)) : -1LL);
    for (int i = 0; i < l.n; i++) CHECK(l.w[i].end == before[i]);
    hv_cues_free(c, nc);
    /* the next cue 300 ms after: stopped 2 frames before it */
    make_words(&l,
               "I morgen bliver det gråt med minus tyve grader. |0.3 Det bliver koldt i morgen.",
               1.0, 0.2, 0.0375);
    nc = build_checked(l.w, l.n, NULL, &c, 1, 1, "word times");
    int64_t next0 = nc == 2 ? ms(c[1].start) : 0, end0 = nc == 2 ? ms(c[0].end) : 0;
    hv_cues_free(c, nc);
    nc = build_checked(l.w, l.n, &on, &c, 1, 1, "readable, stopped");
    CHECK_MSG(nc == 2 && end0 == words_end && ms(c[1].start) == next0 && ms(c[0].end) == next0 - 80,
              "stopped by the next cue: %lld (next %lld)", nc ? (long long)ms(c[0].end) : -1LL,
              (long long)next0);
    hv_cues_free(c, nc);
    /* a gap of 40 ms: closed */
    hv_word g[] = {
        {.text = "Hello there, my good old friend from the north.", .start = 1.0, .end = 3.0},
        {.text = "Fine, thank you, and how are you doing today?", .start = 3.04, .end = 5.5}};
    nc = build_checked(g, 2, &on, &c, 1, 0, "gap");
    CHECK_MSG(nc == 2 && ms(c[0].end) == 3040, "a 40 ms gap closed: %s", nc ? joined(c, nc) : "");
    hv_cues_free(c, nc);
    /* NULL: the defaults are these */
    nc = -1;
    CHECK(hv_cues_build(g, 2, NULL, &c, &nc) == HV_OK && nc == 2 && ms(c[0].end) == 3040 &&
          ms(c[1].end) == 3040 + 2648);
    hv_cues_free(c, nc);
}

int main(void) {
    test_readable();
    test_none_and_one();
    test_segment_cues();
    test_sentences();
    test_commas_and_pauses();
    test_orphans();
    test_time_limit();
    test_lines();
    test_params();
    test_times();
    test_texts();
    test_word_with_spaces();
    test_writers();
    test_stress();
    TEST_END();
}
