/*
 * espeak-words: synthetic speech with the true time of every word.
 *
 * Speaks a list of sentences with libespeak-ng, each after a pause of a
 * given length, and writes
 *
 *   - the audio as a 16-bit mono WAV file at espeak-ng's own sample rate
 *     (22050 Hz for its formant voices), and
 *   - the truth as JSON: every word with its start and end (seconds and
 *     samples on the WAV file's timeline), every sentence with its span.
 *
 * Usage:
 *
 *   espeak-words --wav OUT.wav --truth OUT.json [options] < JOB
 *
 * JOB (standard input, UTF-8): one sentence a line, "PAUSE<TAB>TEXT",
 * PAUSE being the seconds of silence before the sentence (a plain decimal
 * number, 0 to 60). Empty lines and lines starting with '#' are skipped.
 * At most 1000 sentences of at most 1000 bytes; no control characters;
 * the whole file at most 600 s.
 *
 * Options:
 *   --wav PATH        the audio (required)
 *   --truth PATH      the truth, JSON (required)
 *   -v, --voice NAME  espeak-ng voice: a language, optionally "+variant"
 *                     (da, da+m4; the variant must exist in espeak-ng's
 *                     voices/!v); default da
 *   -s, --speed WPM   80..450 words per minute (default 175)
 *   -p, --pitch P     0..100 (default 50)
 *   -a, --amplitude A 0..200 (default 100)
 *   -g, --gap G       extra pause between words, units of 10 ms, 0..100
 *                     (default 0)
 *   --tail S          seconds of silence after the last sentence, 0..60
 *                     (default 0.5)
 *   --noise KIND      none (default), white or pink: Gaussian noise added
 *                     to the whole file (pauses too) ...
 *   --snr DB          ... at DB decibels below the RMS of the synthesized
 *                     speech (-10..80; required with --noise)
 *   --seed N          the noise's seed, 0..2^63-1 (default 1)
 *   --phonemes        also list each word's phonemes (espeak-ng's names, and
 *                     their first samples)
 *   -h, --help
 *
 * How the truth is made. espeak-ng is run in AUDIO_OUTPUT_SYNCHRONOUS
 * mode with phoneme events; one espeak_Synth call per sentence. Each
 * callback delivers a buffer of samples and the events inside it; an
 * event's sample position (espeak_EVENT.sample, counted from the start of
 * the sentence's synthesis) is checked to lie inside the buffer it came
 * with (between the samples the callback had received before it and after
 * it), so the positions are exact to the sample, not rounded to the
 * millisecond like audio_position. The sentence's audio is placed after
 * its pause, so a word's start on the file's timeline is the sentence's
 * first sample plus the word event's sample.
 *
 * A word is a whitespace-separated token of the text with a letter or
 * digit in it (punctuation stays attached, as written; a token of other
 * characters that espeak-ng does not speak as a word, a dash, is left out
 * with a warning). Word events of length 0 (espeak-ng 1.51 adds one after
 * the last word of some sentences) are ignored; the others go to tokens
 * in order when there are as many as tokens (espeak-ng 1.51 gives words
 * it joins in its dictionary, Danish "skal have", the text position of
 * the word before), else by their text_position (a 1-based count of
 * Unicode characters).
 *
 * A word's start is its word event: the start of its first phoneme, a
 * stop consonant's silent closure included; when its phonemes begin with
 * a pause (the word gap of -g, the short pause espeak-ng puts before some
 * vowels), the start of its first speech phoneme. Its end is the start of
 * the first pause phoneme ("_", "_:", "_!", ...) after its last speech
 * phoneme, else the next word's event, else the end of the sentence's
 * audio. "pause_after" tells whether a pause (espeak-ng's own, or the
 * silence before the next sentence) follows it. The truth is the
 * synthesizer's own phoneme timing; a voice variant with an echo
 * (Alicia, robosoft6) sounds on for a few tens of ms after a word's end.
 *
 * Output files are written by hv_out_file, hviske_output.h's rule: a regular file to a
 * temporary file next to it, renamed when complete, so both are there
 * whole or not at all; a symlink followed; a device or FIFO written in
 * place. The WAV is 16-bit PCM with a 44-byte header, written without
 * seeking. Exit
 * status: 0 success, 1 failure (message on stderr), 2 bad usage.
 */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <espeak-ng/speak_lib.h>

#include "hviske_output.h"

enum { EXIT_USAGE = 2 };
enum { MAX_SENTENCES = 1000, MAX_LINE = 1000, MAX_SECONDS = 600, MAX_PAUSE = 60 };

static const char *prog = "espeak-words";

static void fail(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void *xrealloc(void *p, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return realloc(p, n && size ? n * size : 1);
}

/* ------------------------------------------------------------ numbers */

/* Plain decimal integer in [lo, hi]; 0 or -1. */
static int parse_long(const char *s, long long lo, long long hi, long long *out) {
    if (!*s) return -1;
    long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (v > (LLONG_MAX - (*p - '0')) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Plain decimal number ("-"? digits ["." digits], at least one digit) in
 * [lo, hi]; 0 or -1. No exponent, no spaces, no inf/nan. */
static int parse_num(const char *s, double lo, double hi, double *out) {
    const char *p = s;
    int digits = 0;
    if (*p == '-') p++;
    for (; *p >= '0' && *p <= '9'; p++) digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++;
    if (*p || !digits || p - s > 32) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* --------------------------------------------------------------- text */

/* Length of the UTF-8 sequence at s (well-formed, no overlongs, no
 * surrogates, <= U+10FFFF), or 0 when it is not one. */
static int utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!n || c > 0xF4) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n == 3 && c == 0xE0 && s[1] < 0xA0) return 0;
    if (n == 3 && c == 0xED && s[1] >= 0xA0) return 0;
    if (n == 4 && c == 0xF0 && s[1] < 0x90) return 0;
    if (n == 4 && c == 0xF4 && s[1] >= 0x90) return 0;
    return n;
}

typedef struct word {
    char *text;    /* the token as written */
    int sentence;  /* index */
    int cp0, cp1;  /* its characters: 1-based code point positions [cp0, cp1) */
    long ev_start; /* word event sample in the sentence, -1 before one is seen */
    long start;    /* its start: the word event, or its first speech phoneme
                      when pause phonemes come first */
    long end;      /* end sample in the sentence */
    int pause_after;
    int ascii;    /* it has an ASCII letter or digit */
    int ph0, nph; /* its phonemes in the phoneme list */
} word;

typedef struct phone {
    char name[9];
    long sample; /* in the sentence */
} phone;

typedef struct sentence {
    char *text;
    double pause; /* seconds before it */
    int w0, nw;   /* its words */
    long start;   /* first sample on the file's timeline */
    long n;       /* samples of its audio */
} sentence;

typedef struct job {
    sentence *sent;
    int nsent;
    word *words;
    int nwords, capwords;
} job;

static int is_space(unsigned char c) { return c == ' ' || c == '\t'; }

/* Splits s into word tokens (those containing an ASCII letter or digit,
 * or any non-ASCII character) with their code point spans. */
static int tokenize(job *jb, int si, const char *s) {
    int cp = 1;
    const unsigned char *p = (const unsigned char *)s;
    jb->sent[si].w0 = jb->nwords;
    while (*p) {
        if (is_space(*p)) {
            p++, cp++;
            continue;
        }
        const unsigned char *b = p;
        int cp0 = cp, ascii = 0, other = 0;
        while (*p && !is_space(*p)) {
            int n = utf8_len(p);
            if ((*p >= '0' && *p <= '9') || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')) ascii = 1;
            if (*p >= 0x80) other = 1;
            p += n, cp++;
        }
        if (!ascii && !other) continue;
        if (jb->nwords == jb->capwords) {
            int cap = jb->capwords ? 2 * jb->capwords : 256;
            word *w = xrealloc(jb->words, (size_t)cap, sizeof *w);
            if (!w) return -1;
            jb->words = w, jb->capwords = cap;
        }
        word *w = &jb->words[jb->nwords];
        memset(w, 0, sizeof *w);
        w->text = malloc((size_t)(p - b) + 1);
        if (!w->text) return -1;
        memcpy(w->text, b, (size_t)(p - b));
        w->text[p - b] = 0;
        w->sentence = si, w->cp0 = cp0, w->cp1 = cp, w->ev_start = -1, w->ascii = ascii;
        jb->nwords++;
    }
    jb->sent[si].nw = jb->nwords - jb->sent[si].w0;
    return 0;
}

/* Reads the job from f. 0, or -1 after a message. */
static int read_job(FILE *f, job *jb) {
    char *line = NULL;
    size_t linecap = 0;
    int lineno = 0, rc = -1;
    jb->sent = calloc(MAX_SENTENCES, sizeof *jb->sent);
    if (!jb->sent) return fail("out of memory"), -1;
    for (;;) {
        errno = 0;
        ssize_t got = getline(&line, &linecap, f);
        if (got < 0) {
            if (ferror(f)) {
                fail("reading standard input: %s", strerror(errno ? errno : EIO));
                goto done;
            }
            break;
        }
        lineno++;
        size_t len = (size_t)got;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if (strlen(line) != len) {
            fail("input line %d: contains a NUL byte", lineno);
            goto done;
        }
        if (len > MAX_LINE) {
            fail("input line %d: longer than %d bytes", lineno, MAX_LINE);
            goto done;
        }
        if (!len || line[0] == '#') continue;
        for (const unsigned char *p = (const unsigned char *)line; *p;) {
            int n = utf8_len(p);
            if (!n) {
                fail("input line %d: not valid UTF-8", lineno);
                goto done;
            }
            if ((*p < 0x20 && *p != '\t') || *p == 0x7F) {
                fail("input line %d: control character 0x%02X", lineno, *p);
                goto done;
            }
            p += n;
        }
        char *tab = strchr(line, '\t');
        if (!tab) {
            fail("input line %d: expected PAUSE<TAB>TEXT (seconds of silence, a tab, the "
                 "sentence)",
                 lineno);
            goto done;
        }
        *tab = 0;
        char *text = tab + 1;
        double pause;
        if (parse_num(line, 0, MAX_PAUSE, &pause)) {
            fail("input line %d: pause '%s' is not a number of seconds from 0 to %d", lineno, line,
                 MAX_PAUSE);
            goto done;
        }
        if (strchr(text, '\t')) {
            fail("input line %d: a second tab (one PAUSE<TAB>TEXT a line)", lineno);
            goto done;
        }
        if (jb->nsent == MAX_SENTENCES) {
            fail("input line %d: more than %d sentences", lineno, MAX_SENTENCES);
            goto done;
        }
        int si = jb->nsent++;
        sentence *s = &jb->sent[si];
        s->pause = pause;
        s->text = strdup(text);
        if (!s->text || tokenize(jb, si, text)) {
            fail("out of memory");
            goto done;
        }
        if (!s->nw) {
            fail("input line %d: the sentence has no words", lineno);
            goto done;
        }
    }
    if (!jb->nsent) {
        fail("no sentences on standard input (PAUSE<TAB>TEXT lines)");
        goto done;
    }
    rc = 0;
done:
    free(line);
    return rc;
}

/* ------------------------------------------------------ synthesis */

typedef struct synth_state {
    short *pcm; /* the sentence's audio */
    long n, cap;
    /* the sentence's events, in order: word events (word index >= 0) and
     * phonemes */
    struct ev {
        int type; /* espeakEVENT_WORD or espeakEVENT_PHONEME */
        int text_position, length;
        long sample;
        char name[9];
        int token; /* a word event's token in the sentence, -1 for none */
    } * ev;
    int nev, capev;
    int error; /* 1: out of memory, 2: a bad event position */
    long bad_sample, bad_lo, bad_hi;
} synth_state;

static synth_state st;

static int on_synth(short *wav, int numsamples, espeak_EVENT *events) {
    if (st.error) return 1;
    long before = st.n, after = st.n + (wav && numsamples > 0 ? numsamples : 0);
    for (espeak_EVENT *e = events; e && e->type != espeakEVENT_LIST_TERMINATED; e++) {
        if (e->type != espeakEVENT_WORD && e->type != espeakEVENT_PHONEME) continue;
        /* the event lies in this buffer: [samples received before it,
         * samples received after it] */
        if (e->sample < before || e->sample > after) {
            st.error = 2, st.bad_sample = e->sample, st.bad_lo = before, st.bad_hi = after;
            return 1;
        }
        if (st.nev == st.capev) {
            int cap = st.capev ? 2 * st.capev : 1024;
            struct ev *v = xrealloc(st.ev, (size_t)cap, sizeof *v);
            if (!v) return st.error = 1, 1;
            st.ev = v, st.capev = cap;
        }
        struct ev *v = &st.ev[st.nev++];
        v->type = e->type;
        v->text_position = e->text_position;
        v->length = e->length;
        v->token = -1;
        v->sample = e->sample;
        memset(v->name, 0, sizeof v->name);
        if (e->type == espeakEVENT_PHONEME) memcpy(v->name, e->id.string, 8);
    }
    if (after > before) {
        if (after > st.cap) {
            long cap = st.cap ? 2 * st.cap : 65536;
            while (cap < after) cap *= 2;
            short *p = xrealloc(st.pcm, (size_t)cap, sizeof *p);
            if (!p) return st.error = 1, 1;
            st.pcm = p, st.cap = cap;
        }
        memcpy(st.pcm + before, wav, (size_t)numsamples * sizeof *wav);
        st.n = after;
    }
    return 0;
}

/* ------------------------------------------------------------ noise */

static uint64_t rng_s[4];

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(void) { /* xoshiro256** */
    uint64_t r = rotl(rng_s[1] * 5, 7) * 9, t = rng_s[1] << 17;
    rng_s[2] ^= rng_s[0], rng_s[3] ^= rng_s[1], rng_s[1] ^= rng_s[2], rng_s[0] ^= rng_s[3];
    rng_s[2] ^= t, rng_s[3] = rotl(rng_s[3], 45);
    return r;
}

static double rng_uniform(void) { /* (0, 1) */
    return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_gauss(void) { /* Box-Muller, one of the pair */
    double u = rng_uniform(), v = rng_uniform();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Unit-RMS noise into x[0..n). pink: Paul Kellet's filter (-3 dB/octave
 * within 0.05 dB above 9.2 Hz at 44.1 kHz). */
static void make_noise(double *x, long n, int pink, uint64_t seed) {
    uint64_t sm = seed;
    for (int i = 0; i < 4; i++) rng_s[i] = splitmix64(&sm);
    double b0 = 0, b1 = 0, b2 = 0, b3 = 0, b4 = 0, b5 = 0, b6 = 0, ss = 0;
    for (long i = 0; i < n; i++) {
        double w = rng_gauss();
        if (pink) {
            b0 = 0.99886 * b0 + w * 0.0555179;
            b1 = 0.99332 * b1 + w * 0.0750759;
            b2 = 0.96900 * b2 + w * 0.1538520;
            b3 = 0.86650 * b3 + w * 0.3104856;
            b4 = 0.55000 * b4 + w * 0.5329522;
            b5 = -0.7616 * b5 - w * 0.0168980;
            x[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
            b6 = w * 0.115926;
        } else {
            x[i] = w;
        }
        ss += x[i] * x[i];
    }
    double g = n ? 1.0 / sqrt(ss / (double)n + 1e-300) : 0;
    for (long i = 0; i < n; i++) x[i] *= g;
}

/* ----------------------------------------------------------- output */

/* A temporary file next to path: its name in tmp (malloc'd), an open fd. */
/* The 16-bit mono PCM WAV of n samples at rate, written to of (no
 * seeking: a FIFO or device takes it too). 0, or -1 with a message. */
static int write_wav(hv_out_file *of, const char *path, const short *pcm, long n, int rate) {
    unsigned char h[44], buf[4096];
    uint32_t data = (uint32_t)n * 2;
    struct {
        int at;
        uint32_t v;
        int bytes;
    } fields[] = {{4, 36 + data, 4},
                  {16, 16, 4},
                  {20, 1, 2},
                  {22, 1, 2},
                  {24, (uint32_t)rate, 4},
                  {28, (uint32_t)rate * 2, 4},
                  {32, 2, 2},
                  {34, 16, 2},
                  {40, data, 4}};
    memcpy(h, "RIFF....WAVEfmt ", 16);
    memcpy(h + 36, "data", 4);
    for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
        for (int b = 0; b < fields[k].bytes; b++)
            h[fields[k].at + b] = (unsigned char)(fields[k].v >> (8 * b));
    int err = hv_out_write(of, h, sizeof h);
    for (long i = 0; !err && i < n;) {
        size_t m = 0;
        for (; i < n && m < sizeof buf; i++, m += 2) {
            buf[m] = (unsigned char)((unsigned short)pcm[i] & 0xFF);
            buf[m + 1] = (unsigned char)((unsigned short)pcm[i] >> 8);
        }
        err = hv_out_write(of, buf, m);
    }
    if (err) return fail("%s: writing failed: %s", path, strerror(err)), -1;
    return 0;
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

typedef struct settings {
    const char *voice, *noise, *wav, *truth;
    long long speed, pitch, amplitude, gap, seed;
    double tail, snr;
    int phonemes;
} settings;

static int write_truth(hv_out_file *of, const char *path, const settings *o, const job *jb,
                       const phone *ph, int rate, long total, double gain, double speech_rms) {
    FILE *f = of->f;
    const char *path_data = NULL;
    const char *version = espeak_Info(&path_data);
    fprintf(f, "{\n  \"generator\": \"espeak-words\",\n  \"espeak_ng_version\": ");
    json_string(f, version ? version : "");
    fprintf(f, ",\n  \"sample_rate\": %d,\n  \"samples\": %ld,\n  \"duration\": %.6f,\n", rate,
            total, (double)total / rate);
    fprintf(f, "  \"voice\": ");
    json_string(f, o->voice);
    fprintf(f,
            ",\n  \"speed\": %lld,\n  \"pitch\": %lld,\n  \"amplitude\": %lld,\n  \"gap\": %lld,\n"
            "  \"tail\": %.6f,\n  \"noise\": \"%s\",\n",
            o->speed, o->pitch, o->amplitude, o->gap, o->tail, o->noise);
    if (strcmp(o->noise, "none"))
        fprintf(f, "  \"snr\": %.3f,\n  \"seed\": %lld,\n", o->snr, o->seed);
    fprintf(f, "  \"gain\": %.6f,\n  \"speech_rms\": %.6f,\n  \"sentences\": [", gain, speech_rms);
    int first = 0; /* index of the sentence's first word among the words written */
    for (int i = 0; i < jb->nsent; i++) {
        const sentence *s = &jb->sent[i];
        int nw = 0;
        for (int j = 0; j < s->nw; j++) nw += jb->words[s->w0 + j].ev_start >= 0;
        fprintf(f, "%s\n    {\"text\": ", i ? "," : "");
        json_string(f, s->text);
        fprintf(f,
                ", \"pause_before\": %.6f, \"start\": %.6f, \"end\": %.6f, \"start_sample\": %ld, "
                "\"end_sample\": %ld, \"first_word\": %d, \"n_words\": %d}",
                s->pause, (double)s->start / rate, (double)(s->start + s->n) / rate, s->start,
                s->start + s->n, first, nw);
        first += nw;
    }
    fprintf(f, "\n  ],\n  \"words\": [");
    for (int i = 0, nout = 0; i < jb->nwords; i++) {
        const word *w = &jb->words[i];
        if (w->ev_start < 0) continue;
        long off = jb->sent[w->sentence].start;
        long a = off + w->start, b = off + w->end;
        fprintf(f, "%s\n    {\"word\": ", nout++ ? "," : "");
        json_string(f, w->text);
        fprintf(f,
                ", \"start\": %.6f, \"end\": %.6f, \"start_sample\": %ld, \"end_sample\": %ld, "
                "\"sentence\": %d, \"pause_after\": %s",
                (double)a / rate, (double)b / rate, a, b, w->sentence,
                w->pause_after ? "true" : "false");
        const char *fph = "";
        for (int k = 0; k < w->nph && !*fph; k++)
            if (ph[w->ph0 + k].name[0] != '_') fph = ph[w->ph0 + k].name;
        fprintf(f, ", \"first_phoneme\": ");
        json_string(f, fph);
        if (o->phonemes) {
            fprintf(f, ", \"phonemes\": [");
            for (int k = 0; k < w->nph; k++) {
                fprintf(f, "%s[", k ? ", " : "");
                json_string(f, ph[w->ph0 + k].name);
                fprintf(f, ", %ld]", off + ph[w->ph0 + k].sample);
            }
            fprintf(f, "]");
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
    int err = hv_out_flush(of);
    if (err) return fail("%s: writing failed: %s", path, strerror(err)), -1;
    return 0;
}

/* ------------------------------------------------------------- main */

/* What main allocates, freed on every way out. */
static job jb;
static short *out;
static phone *ph;

static int bye(int rc) {
    for (int i = 0; i < jb.nwords; i++) free(jb.words[i].text);
    for (int i = 0; i < jb.nsent; i++) free(jb.sent[i].text);
    free(jb.words), free(jb.sent), free(out), free(ph), free(st.pcm), free(st.ev);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f, "Usage: espeak-words --wav OUT.wav --truth OUT.json [options] < JOB\n"
               "Speaks JOB's sentences (lines PAUSE<TAB>TEXT: seconds of silence before the\n"
               "sentence, a tab, the text) with espeak-ng and writes the audio and each word's\n"
               "true start and end (JSON).\n\n"
               "  -v, --voice NAME   espeak-ng voice, LANG or LANG+VARIANT (default da)\n"
               "  -s, --speed WPM    80..450 (default 175)\n"
               "  -p, --pitch P      0..100 (default 50)\n"
               "  -a, --amplitude A  0..200 (default 100)\n"
               "  -g, --gap G        pause between words in 10 ms units, 0..100 (default 0)\n"
               "      --tail S       seconds of silence at the end, 0..60 (default 0.5)\n"
               "      --noise KIND   none (default), white or pink\n"
               "      --snr DB       noise level below the speech's RMS, -10..80 dB\n"
               "      --seed N       noise seed (default 1)\n"
               "      --phonemes     list each word's phonemes in the truth\n"
               "  -h, --help         this help\n");
}

/* The variant of a voice name "lang+variant" must be a file in espeak-ng's
 * voices/!v (espeak-ng would silently ignore an unknown one). */
static int check_variant(const char *voice) {
    const char *plus = strchr(voice, '+');
    if (!plus) return 0;
    const char *v = plus + 1;
    if (!*v || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, ".."))
        return fail("voice '%s': bad variant name", voice), -1;
    const char *path_data = NULL;
    espeak_Info(&path_data);
    if (!path_data) return fail("voice '%s': espeak-ng's data folder is unknown", voice), -1;
    size_t n = strlen(path_data) + strlen(v) + 16;
    char *p = malloc(n);
    if (!p) return fail("out of memory"), -1;
    snprintf(p, n, "%s/voices/!v/%s", path_data, v);
    struct stat sb;
    int ok = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    if (!ok) fail("voice '%s': no variant '%s' in %s/voices/!v", voice, v, path_data);
    free(p);
    return ok ? 0 : -1;
}

int main(int argc, char **argv) {
    settings o = {.voice = "da",
                  .noise = "none",
                  .speed = 175,
                  .pitch = 50,
                  .amplitude = 100,
                  .seed = 1,
                  .tail = 0.5,
                  .snr = NAN};
    int have_snr = 0, have_seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--phonemes")) {
            o.phonemes = 1;
            continue;
        }
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) {
            fail("%s: unknown option, or it needs a value (--help)", a);
            return EXIT_USAGE;
        }
        i++;
        long long *ip = NULL, lo = 0, hi = 0;
        if (!strcmp(a, "--wav"))
            o.wav = val;
        else if (!strcmp(a, "--truth"))
            o.truth = val;
        else if (!strcmp(a, "-v") || !strcmp(a, "--voice"))
            o.voice = val;
        else if (!strcmp(a, "-s") || !strcmp(a, "--speed"))
            ip = &o.speed, lo = 80, hi = 450;
        else if (!strcmp(a, "-p") || !strcmp(a, "--pitch"))
            ip = &o.pitch, lo = 0, hi = 100;
        else if (!strcmp(a, "-a") || !strcmp(a, "--amplitude"))
            ip = &o.amplitude, lo = 0, hi = 200;
        else if (!strcmp(a, "-g") || !strcmp(a, "--gap"))
            ip = &o.gap, lo = 0, hi = 100;
        else if (!strcmp(a, "--seed"))
            ip = &o.seed, lo = 0, hi = LLONG_MAX, have_seed = 1;
        else if (!strcmp(a, "--noise")) {
            if (strcmp(val, "none") && strcmp(val, "white") && strcmp(val, "pink")) {
                fail("--noise '%s': expected none, white or pink", val);
                return EXIT_USAGE;
            }
            o.noise = val;
        } else if (!strcmp(a, "--tail")) {
            if (parse_num(val, 0, MAX_PAUSE, &o.tail)) {
                fail("--tail '%s': expected seconds from 0 to %d", val, MAX_PAUSE);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--snr")) {
            if (parse_num(val, -10, 80, &o.snr)) {
                fail("--snr '%s': expected decibels from -10 to 80", val);
                return EXIT_USAGE;
            }
            have_snr = 1;
        } else {
            fail("%s: unknown option (--help)", a);
            return EXIT_USAGE;
        }
        if (ip && parse_long(val, lo, hi, ip)) {
            fail("%s '%s': expected an integer from %lld to %lld", a, val, lo, hi);
            return EXIT_USAGE;
        }
    }
    if (!o.wav || !o.truth) {
        fail("--wav and --truth are required (--help)");
        return EXIT_USAGE;
    }
    if (!*o.wav || !*o.truth || !strcmp(o.wav, o.truth)) {
        fail("--wav and --truth must be two different, non-empty paths");
        return EXIT_USAGE;
    }
    int noisy = strcmp(o.noise, "none") != 0;
    if (noisy != have_snr) {
        fail(noisy ? "--noise %s needs --snr" : "--snr needs --noise white or pink", o.noise);
        return EXIT_USAGE;
    }
    if (have_seed && !noisy) fprintf(stderr, "%s: warning: --seed without --noise\n", prog);
    if (!*o.voice || strlen(o.voice) > 100) {
        fail("--voice: expected a name like da or da+m4");
        return EXIT_USAGE;
    }

    if (read_job(stdin, &jb)) return bye(1);

    int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, NULL,
                                 espeakINITIALIZE_PHONEME_EVENTS | espeakINITIALIZE_DONT_EXIT);
    setlocale(LC_NUMERIC, "C"); /* "%.6f" and strtod with a '.' whatever espeak-ng set */
    if (rate <= 0) {
        fail("espeak-ng could not be initialised (is espeak-ng-data installed?)");
        return bye(1);
    }
    espeak_SetSynthCallback(on_synth);
    if (check_variant(o.voice)) return bye(1);
    if (espeak_SetVoiceByName(o.voice) != EE_OK) {
        fail("voice '%s': espeak-ng has no such voice (espeak-ng --voices lists them)", o.voice);
        return bye(1);
    }
    if (espeak_SetParameter(espeakRATE, (int)o.speed, 0) != EE_OK ||
        espeak_SetParameter(espeakPITCH, (int)o.pitch, 0) != EE_OK ||
        espeak_SetParameter(espeakVOLUME, (int)o.amplitude, 0) != EE_OK ||
        espeak_SetParameter(espeakWORDGAP, (int)o.gap, 0) != EE_OK) {
        fail("espeak-ng refused a speech parameter");
        return bye(1);
    }

    /* Synthesize each sentence and lay it out after its pause. */
    const long max_total = (long)MAX_SECONDS * rate;
    long total = 0, cap = 0;
    int nph = 0, capph = 0;
    double ss = 0;
    long nspeech = 0;
    for (int si = 0; si < jb.nsent; si++) {
        sentence *s = &jb.sent[si];
        st.n = 0, st.nev = 0;
        espeak_ERROR er = espeak_Synth(s->text, strlen(s->text) + 1, 0, POS_CHARACTER, 0,
                                       espeakCHARS_UTF8, NULL, NULL);
        if (st.error == 1) return fail("out of memory"), bye(1);
        if (st.error == 2) {
            fail("sentence %d: espeak-ng reported an event at sample %ld, outside the buffer it "
                 "came with (samples %ld to %ld): its positions cannot be trusted",
                 si + 1, st.bad_sample, st.bad_lo, st.bad_hi);
            return bye(1);
        }
        if (er != EE_OK) return fail("sentence %d: espeak-ng failed (%d)", si + 1, (int)er), bye(1);
        long pause = lround(s->pause * rate);
        s->start = total + pause;
        s->n = st.n;
        if (s->start + s->n + lround(o.tail * rate) > max_total) {
            fail("the audio would be longer than %d s (at sentence %d)", MAX_SECONDS, si + 1);
            return bye(1);
        }
        /* Word events to tokens. espeak-ng 1.51 gives some words the text
         * position of the word before them (dictionary entries that join
         * words, as Danish "skal have", "at have") and may add a stray word
         * event of length 0 after the last word of a sentence with several
         * clauses. So: events of length 0 are ignored; when the other events
         * are as many as the tokens, the k-th event is the k-th token; else
         * each event goes to the token at its text position (the first one
         * there; a token spoken as several words starts at its first). */
        int w0 = s->w0, nw = s->nw, nwev = 0, cur = -1;
        for (int k = 0; k < st.nev; k++)
            nwev += st.ev[k].type == espeakEVENT_WORD && st.ev[k].length > 0;
        for (int k = 0, j = 0; k < st.nev; k++) {
            struct ev *e = &st.ev[k];
            if (e->type != espeakEVENT_WORD || e->length <= 0) continue;
            if (nwev == nw) {
                e->token = j++;
                continue;
            }
            for (int t = 0; t < nw; t++) {
                word *w = &jb.words[w0 + t];
                if (e->text_position >= w->cp0 && e->text_position < w->cp1) e->token = t;
            }
            if (e->token >= 0) {
                for (int q = 0; q < k; q++)
                    if (st.ev[q].token == e->token) e->token = -1;
            }
            if (e->token >= 0 && e->token < cur) {
                fail("sentence %d: espeak-ng spoke '%s' after '%s'", si + 1,
                     jb.words[w0 + e->token].text, jb.words[w0 + cur].text);
                return bye(1);
            }
            if (e->token >= 0) cur = e->token;
        }
        cur = -1;
        for (int k = 0; k < st.nev; k++) {
            struct ev *e = &st.ev[k];
            if (e->type == espeakEVENT_WORD) {
                if (e->token < 0) continue;
                cur = e->token;
                jb.words[w0 + cur].ev_start = e->sample;
                jb.words[w0 + cur].ph0 = nph;
                continue;
            }
            if (cur < 0) continue;
            if (nph == capph) {
                capph = capph ? 2 * capph : 1024;
                phone *p = xrealloc(ph, (size_t)capph, sizeof *p);
                if (!p) return fail("out of memory"), bye(1);
                ph = p;
            }
            memcpy(ph[nph].name, e->name, sizeof ph[nph].name);
            ph[nph].sample = e->sample;
            nph++;
            jb.words[w0 + cur].nph = nph - jb.words[w0 + cur].ph0;
        }
        /* a token without a word event: an error, unless it has no ASCII letter
         * or digit (a dash, a quotation mark: then it is left out) */
        int kept = 0;
        long prev = -1;
        for (int j = 0; j < nw; j++) {
            word *w = &jb.words[w0 + j];
            if (w->ev_start < 0) {
                if (w->ascii) {
                    fail("sentence %d: espeak-ng reported no word event for '%s'", si + 1, w->text);
                    return bye(1);
                }
                fprintf(stderr,
                        "%s: warning: sentence %d: '%s' is not spoken as a word; left out\n", prog,
                        si + 1, w->text);
                continue;
            }
            if (w->ev_start < prev) {
                fail("sentence %d: word events out of order at '%s'", si + 1, w->text);
                return bye(1);
            }
            prev = w->ev_start;
            kept++;
        }
        if (!kept) return fail("sentence %d: espeak-ng spoke no words", si + 1), bye(1);
        /* starts: a word whose phonemes begin with a pause (espeak-ng's word
         * gap, its short pause before some vowels) starts with its first
         * speech phoneme; the pause belongs to the gap before it */
        for (int j = 0; j < nw; j++) {
            word *w = &jb.words[w0 + j];
            if (w->ev_start < 0) continue;
            w->start = w->ev_start;
            int k = 0;
            while (k < w->nph && ph[w->ph0 + k].name[0] == '_') k++;
            if (k > 0 && k < w->nph && ph[w->ph0 + k].sample > w->start)
                w->start = ph[w->ph0 + k].sample;
        }
        /* ends: the first pause phoneme after the word's last speech phoneme,
         * else the next word's start event, else the sentence's end */
        for (int j = 0; j < nw; j++) {
            word *w = &jb.words[w0 + j];
            if (w->ev_start < 0) continue;
            int nx = j + 1;
            while (nx < nw && jb.words[w0 + nx].ev_start < 0) nx++;
            long next = nx < nw ? jb.words[w0 + nx].ev_start : s->n;
            int last_speech = -1;
            for (int k = 0; k < w->nph; k++)
                if (ph[w->ph0 + k].name[0] != '_' && ph[w->ph0 + k].sample < next) last_speech = k;
            w->end = next;
            w->pause_after = nx == nw || jb.words[w0 + nx].start > next;
            for (int k = last_speech + 1; k < w->nph; k++) {
                long t = ph[w->ph0 + k].sample;
                if (ph[w->ph0 + k].name[0] == '_' && t < next) {
                    if (t > w->start) w->end = t;
                    w->pause_after = 1;
                    break;
                }
            }
            if (w->end < w->start) w->end = w->start;
        }
        /* the audio */
        long need = s->start + s->n;
        if (need > cap) {
            long c = cap ? cap : 1 << 20;
            while (c < need) c *= 2;
            short *p = xrealloc(out, (size_t)c, sizeof *p);
            if (!p) return fail("out of memory"), bye(1);
            out = p, cap = c;
        }
        memset(out + total, 0, (size_t)pause * sizeof *out);
        memcpy(out + s->start, st.pcm, (size_t)s->n * sizeof *out);
        for (long i = 0; i < s->n; i++) ss += (double)st.pcm[i] * st.pcm[i];
        nspeech += s->n;
        total = need;
    }
    long tail = lround(o.tail * rate);
    if (total + tail > cap) {
        short *p = xrealloc(out, (size_t)(total + tail), sizeof *p);
        if (!p) return fail("out of memory"), bye(1);
        out = p, cap = total + tail;
    }
    memset(out + total, 0, (size_t)tail * sizeof *out);
    total += tail;
    double speech_rms = nspeech ? sqrt(ss / (double)nspeech) / 32768.0 : 0;
    if (speech_rms <= 0) {
        fail("espeak-ng produced silence only (amplitude 0?)");
        return bye(1);
    }

    /* Noise, and a gain that keeps the sum inside 16 bits. */
    double gain = 1.0;
    if (noisy) {
        double *x = malloc((size_t)total * sizeof *x);
        if (!x) return fail("out of memory"), bye(1);
        make_noise(x, total, !strcmp(o.noise, "pink"), (uint64_t)o.seed);
        double nl = speech_rms * pow(10.0, -o.snr / 20.0), peak = 0;
        for (long i = 0; i < total; i++) {
            x[i] = out[i] / 32768.0 + nl * x[i];
            if (fabs(x[i]) > peak) peak = fabs(x[i]);
        }
        if (peak > 0.99) gain = 0.99 / peak;
        for (long i = 0; i < total; i++) {
            double v = round(x[i] * gain * 32768.0);
            out[i] = (short)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
        }
        free(x);
    }

    /* both files or neither (hv_out_file, hviske_output.h: regular files replaced
     * whole, symlinks followed, a device or FIFO written in place) */
    static hv_out_file wav, truth;
    int rc = 1, err;
    if ((err = hv_out_open(&wav, o.wav))) {
        fail("%s: cannot create: %s", o.wav, strerror(err));
    } else if ((err = hv_out_open(&truth, o.truth))) {
        fail("%s: cannot create: %s", o.truth, strerror(err));
        hv_out_abort(&wav);
    } else if (write_wav(&wav, o.wav, out, total, rate) != 0 ||
               write_truth(&truth, o.truth, &o, &jb, ph, rate, total, gain, speech_rms) != 0) {
        hv_out_abort(&wav);
        hv_out_abort(&truth);
    } else if ((err = hv_out_commit(&wav))) {
        fail("%s: writing failed: %s", o.wav, strerror(err));
        hv_out_abort(&truth);
    } else if ((err = hv_out_commit(&truth))) {
        fail("%s: writing failed: %s", o.truth, strerror(err));
        if (!wav.in_place) unlink(wav.target);
    } else {
        rc = 0;
    }
    espeak_Terminate();
    return bye(rc);
}
