/*
 * What the programs share on their command line (see cmdline.h).
 */
#include "cmdline.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hviske_output.h"

/* ------------------------------------------------------------- numbers */

int hvt_parse_int(const char *s, int lo, int hi, int *out) {
    uint64_t v;
    if (hi < 0 || hv_parse_u64(s, lo < 0 ? 0 : (uint64_t)lo, (uint64_t)hi, &v, NULL, 0)) return -1;
    *out = (int)v;
    return 0;
}

/* ------------------------------------------------------- command line */

int hvt_usage_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
    va_end(ap);
    return HVT_EXIT_USAGE;
}

static int takes_argument(hvt_arg a) { return a != HVT_FLAG && a != HVT_HELP && a != HVT_VERSION; }

/* Stores one option's value. Returns -1 to go on, otherwise the exit
 * status (0 after --help or --version). */
static int take_option(const hvt_cli *cli, const hvt_option *opt, const char *arg, void *dest) {
    void *value = (char *)dest + opt->offset;
    int lo_open = opt->arg == HVT_FLOAT_ABOVE || opt->arg == HVT_DOUBLE_ABOVE;
    uint64_t u;
    int bad = 0;
    switch (opt->arg) {
        case HVT_FLAG: return -1;
        case HVT_HELP: cli->usage(stdout); return 0;
        case HVT_VERSION: printf("%s %s\n", cli->prog, HV_VERSION); return 0;
        case HVT_STRING: *(const char **)value = arg; return -1;
        case HVT_NONEMPTY:
            bad = !*arg;
            if (!bad) *(const char **)value = arg;
            break;
        case HVT_INT: bad = hvt_parse_int(arg, (int)opt->lo, (int)opt->hi, value); break;
        case HVT_UNSIGNED:
            bad = hv_parse_u64(arg, (uint64_t)opt->lo, (uint64_t)opt->hi, &u, NULL, 0);
            if (!bad) *(unsigned *)value = (unsigned)u;
            break;
        case HVT_U64: bad = hv_parse_u64(arg, 0, UINT64_MAX, value, NULL, 0); break;
        case HVT_FLOAT:
        case HVT_FLOAT_ABOVE:
            bad = hv_parse_float(arg, lo_open, opt->lo, opt->hi, value, NULL, 0);
            break;
        case HVT_DOUBLE:
        case HVT_DOUBLE_ABOVE:
            bad = hv_parse_double(arg, lo_open, opt->lo, opt->hi, value, NULL, 0);
            break;
        case HVT_CUSTOM: bad = opt->parse(arg, value); break;
        case HVT_PARAM: {
            /* the library's row and its message, naming --NAME */
            char flag[80], msg[512];
            snprintf(flag, sizeof flag, "--%s", opt->name);
            if (hv_params_set(value, flag, arg, msg, sizeof msg) == HV_OK) return -1;
            return hvt_usage_error(cli->prog, "%s", msg);
        }
    }
    if (!bad) return -1;
    if (opt->what)
        return hvt_usage_error(cli->prog, "invalid %s '%s' (expected %s)", opt->what, arg,
                               opt->expect);
    return hvt_usage_error(cli->prog, "invalid --%s '%s' (expected %s)", opt->name, arg,
                           opt->expect);
}

/* The edit distance of a[0..na) and b (insertions, deletions,
 * substitutions and swaps of neighbours each 1), at most 64 bytes each;
 * 99 for longer ones. */
static int edit_distance(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    if (na > 64 || nb > 64) return 99;
    int d[65][65];
    for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[na][nb];
}

const char *hvt_nearest_option(const hvt_cli *cli, const char *arg) {
    while (*arg == '-') arg++;
    size_t n = strcspn(arg, "=");
    const char *best = NULL;
    int best_d = n < 5 ? 1 : 2; /* a typo, not another word */
    for (int i = 0; i < cli->n_opts; i++) {
        int d = edit_distance(arg, n, cli->opts[i].name);
        if (d <= best_d && (!best || d < best_d)) {
            best = cli->opts[i].name;
            best_d = d;
        }
    }
    return best;
}

int hvt_parse_options(const hvt_cli *cli, int argc, char **argv, void *dest, int *given) {
    struct option longopts[HVT_MAX_OPTIONS + 1];
    char shortopts[2 * HVT_MAX_OPTIONS + 2];
    size_t ns = 0;
    if (cli->n_opts > HVT_MAX_OPTIONS) {
        fprintf(stderr, "%s: too many options for the parser\n", cli->prog);
        return 1;
    }
    /* getopt_long answers with the short letter, else 256 + the index */
    shortopts[ns++] = ':'; /* ':' for a missing argument, not '?' */
    for (int i = 0; i < cli->n_opts; i++) {
        const hvt_option *opt = &cli->opts[i];
        int has_arg = takes_argument(opt->arg);
        longopts[i] = (struct option){opt->name, has_arg ? required_argument : no_argument, NULL,
                                      opt->short_name ? opt->short_name : 256 + i};
        if (opt->short_name) {
            shortopts[ns++] = (char)opt->short_name;
            if (has_arg) shortopts[ns++] = ':';
        }
        given[i] = 0;
    }
    longopts[cli->n_opts] = (struct option){NULL, 0, NULL, 0};
    shortopts[ns] = '\0';

    opterr = 0; /* our own messages */
    int c, n_given = 0;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == ':')
            return hvt_usage_error(cli->prog, "option '%s' needs an argument", argv[optind - 1]);
        int i = c >= 256 ? c - 256 : -1;
        for (int k = 0; i < 0 && c != '?' && k < cli->n_opts; k++)
            if (cli->opts[k].short_name == c) i = k;
        if (i < 0) { /* '?': optopt is the short option, 0 for a long one */
            if (optopt > 0 && optopt < 256)
                return hvt_usage_error(cli->prog, "unknown option '-%c'", optopt);
            const char *bad = argv[optind - 1], *near = hvt_nearest_option(cli, bad);
            size_t n = strcspn(bad + 2, "=");
            if (near && bad[2 + n] == '=' && strlen(near) == n && !strncmp(bad + 2, near, n))
                return hvt_usage_error(cli->prog, "option '--%s' takes no value", near);
            if (near)
                return hvt_usage_error(cli->prog, "unknown option '%s' (did you mean --%s?)",
                                       argv[optind - 1], near);
            return hvt_usage_error(cli->prog, "unknown option '%s'", argv[optind - 1]);
        }
        given[i] = ++n_given;
        int rc = take_option(cli, &cli->opts[i], optarg, dest);
        if (rc >= 0) return rc;
    }
    return -1;
}

/* --------------------------------------------------------------- misc */

/* 1 when v is one of the comma-separated list's words, or a number equal
 * to one of its numbers ("2.40" is "2.4"). */
static int one_of(const char *v, const char *list) {
    char *end;
    double x = strtod(v, &end);
    int number = end != v && !*end;
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t len = strcspn(p, ",");
        if (strlen(v) == len && strncmp(v, p, len) == 0) return 1;
        char *pe;
        double y = strtod(p, &pe);
        if (number && pe == p + len && y == x) return 1;
    }
    return 0;
}

int hvt_whisper_same(const char *prog, const char *origin, const char *arg, const char *v,
                     const char *values, const char *why, char *notes, size_t n) {
    if (v && !one_of(v, values))
        return hvt_usage_error(prog, "%s %s (%s's) is not supported: %s (accepted: %s)", arg, v,
                               origin, why, values);
    size_t len = strlen(notes);
    if (len < n)
        snprintf(notes + len, n - len,
                 "%s: note: %s%s%s (%s's) asks for what hviske does anyway: %s\n", prog, arg,
                 v ? " " : "", v ? v : "", origin, why);
    return -1;
}

double hvt_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------- --help lines */

void hvt_param_usage_as(FILE *f, char short_name, const char *flag, int col, const char *more) {
    const hv_param *p = hv_param_find(flag);
    if (!p) return;
    char head[96], what[160], text[1024];
    const char *meta = p->type == HV_PARAM_BOOL ? NULL : p->metavar;
    int n = snprintf(head, sizeof head, "  %c%c%s--%s%s%s", short_name ? '-' : ' ',
                     short_name ? short_name : ' ', short_name ? ", " : "  ", flag, meta ? " " : "",
                     meta ? meta : "");
    /* "a string" tells nothing, nor "true or false" for a flag */
    int expect = p->type != HV_PARAM_STRING && p->type != HV_PARAM_BOOL;
    snprintf(text, sizeof text, "%s%s%s%s%s", p->help, expect ? "; " : "",
             expect ? hv_param_expect(p, what, sizeof what) : "", more ? "; " : "",
             more ? more : "");
    fputs(head, f);
    /* the text from column col (or a space after a longer head), in
     * words, lines up to 73 columns */
    int at = n < col ? col : n + 1;
    fprintf(f, "%*s", at - n, "");
    for (const char *w = text; *w;) {
        size_t len = strcspn(w, " ");
        if (at > col && at + (int)len > 73) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (w != text) {
            fputc(' ', f);
            at++;
        }
        fwrite(w, 1, len, f);
        at += (int)len;
        w += len;
        while (*w == ' ') w++;
    }
    fputc('\n', f);
}

void hvt_param_usage(FILE *f, const char *flag) { hvt_param_usage_as(f, 0, flag, 25, NULL); }

void hvt_vad_usage(FILE *f) {
    fputs("      --vad-model DIR    the speech detector (default: $HVISKE_VAD_MODEL,\n"
          "                         else the installed or bundled silero-vad)\n",
          f);
    static const char *const flags[] = {"vad-threshold",      "vad-min-speech-ms",
                                        "vad-min-silence-ms", "vad-speech-pad-ms",
                                        "vad-edges",          "vad-max-gap"};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) hvt_param_usage(f, flags[i]);
}

/* ---------------------------------------------------- speech detector */

int hvt_chunking_uses_vad(hv_chunking mode) {
    return mode == HV_CHUNKING_AUTO || mode == HV_CHUNKING_VAD;
}

int hvt_parse_weight_type(const char *arg, void *value) { return hv_weight_type_parse(arg, value); }

int hvt_parse_compute(const char *arg, void *value) { return hv_compute_parse(arg, value); }

int hvt_parse_srt_speakers(const char *arg, void *value) {
    int *v = value;
    if (strcmp(arg, "label") == 0)
        *v = HV_OUTPUT_SRT_LABEL;
    else if (strcmp(arg, "dash") == 0)
        *v = HV_OUTPUT_SRT_DASH;
    else
        return -1;
    return 0;
}

int hvt_parse_temperatures(const char *arg, void *value) {
    hvt_temperatures t = {.n = 0};
    for (const char *q = arg;; q++) {
        char one[64];
        size_t k = strcspn(q, ",");
        if (k == 0 || k >= sizeof one || t.n == HVT_MAX_TEMPERATURES) return -1;
        memcpy(one, q, k);
        one[k] = '\0';
        if (hv_parse_float(one, 0, 0.0, INFINITY, &t.t[t.n++], NULL, 0)) return -1;
        q += k;
        if (!*q) break;
    }
    *(hvt_temperatures *)value = t;
    return 0;
}

int hvt_temperature_steps(double t, double inc, hvt_temperatures *out) {
    hvt_temperatures l = {.n = 0};
    do {
        if (l.n == HVT_MAX_TEMPERATURES) return -1;
        l.t[l.n] = (float)(t + l.n * inc);
        l.n++;
    } while (inc > 0 && t + l.n * inc < 1.0 + 1e-6);
    *out = l;
    return 0;
}

void hvt_set_temperatures(hv_transcribe_params *tp, const hvt_temperatures *t) {
    if (t->n == 1) {
        tp->temperature = t->t[0];
    } else {
        tp->temperatures = t->t;
        tp->n_temperatures = t->n;
    }
}
