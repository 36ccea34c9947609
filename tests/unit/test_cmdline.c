/* The programs' command line helpers (proglib/cmdline.h): the library's
 * number parsers that they use (hviske.h: integers digits only,
 * range-checked; floats decimal, finite, whole string; hvt_parse_int),
 * the table-driven option parser and its messages, the JSON float form,
 * the language check and the clock. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/writer.h"
#include "testlib.h"
#include "checkpoint.h"
#include "cmdline.h"

/* ------------------------------------------------------------- integers */

static void test_integers(void) {
    /* refused by every integer parser, whatever the range */
    static const char *const bad[] = {
        "",
        " 4",
        "4 ",
        "+4",
        "-1",
        "-0",
        "4x",
        "x4",
        "0x10",
        "1.5",
        "1e3",
        "4\n",
        "١",
        "18446744073709551616",
        "99999999999999999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t u = 7;
        int v = 7;
        CHECK_MSG(hv_parse_u64(bad[i], 0, UINT64_MAX, &u, NULL, 0) == HV_ERR_INVALID_ARG && u == 7,
                  "u64 refuses '%s' and leaves *out", bad[i]);
        CHECK_MSG(hvt_parse_int(bad[i], 0, INT_MAX, &v) == -1 && v == 7,
                  "int refuses '%s' and leaves *out", bad[i]);
    }
    uint64_t u = 0;
    CHECK(hv_parse_u64("0", 0, 10, &u, NULL, 0) == 0 && u == 0);
    CHECK(hv_parse_u64("007", 0, 10, &u, NULL, 0) == 0 && u == 7);
    CHECK(hv_parse_u64("18446744073709551615", 0, UINT64_MAX, &u, NULL, 0) == 0 && u == UINT64_MAX);
    CHECK(hv_parse_u64("18446744073709551614", 0, UINT64_MAX - 1, &u, NULL, 0) == 0 &&
          u == UINT64_MAX - 1);
    CHECK(hv_parse_u64("18446744073709551615", 0, UINT64_MAX - 1, &u, NULL, 0) ==
          HV_ERR_INVALID_ARG);
    /* bounds are inclusive */
    int v = 0;
    CHECK(hvt_parse_int("1", 1, 64, &v) == 0 && v == 1);
    CHECK(hvt_parse_int("64", 1, 64, &v) == 0 && v == 64);
    CHECK(hvt_parse_int("0", 1, 64, &v) == -1 && v == 64);
    CHECK(hvt_parse_int("65", 1, 64, &v) == -1);
    CHECK(hvt_parse_int("2147483647", 0, INT_MAX, &v) == 0 && v == INT_MAX);
    CHECK(hvt_parse_int("2147483648", 0, INT_MAX, &v) == -1);
    CHECK(hvt_parse_int("4294967297", 0, INT_MAX, &v) == -1); /* not 1 */
    /* a negative lo is 0 (no spelling reaches below); a negative hi
     * admits nothing */
    CHECK(hvt_parse_int("0", -5, 5, &v) == 0 && v == 0);
    CHECK(hvt_parse_int("0", -5, -1, &v) == -1);
}

/* --------------------------------------------------------------- floats */

static void test_floats(void) {
    static const char *const bad[] = {
        "",      " 1",     "1 ",     "+1",    "--1",  "1,5",   "1e",   "1e+", "e3",   ".",
        "-",     "-.",     "0x1",    "0x1p3", "nan",  "NAN",   "-nan", "inf", "-inf", "infinity",
        "1e999", "-1e999", "1e-400", "1.5x",  "1..5", "1e3.5", "1 e3", "\t1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double d = 7;
        float f = 7;
        CHECK_MSG(hv_parse_double(bad[i], 0, -INFINITY, INFINITY, &d, NULL, 0) ==
                          HV_ERR_INVALID_ARG &&
                      d == 7,
                  "double refuses '%s' and leaves *out", bad[i]);
        CHECK_MSG(hv_parse_float(bad[i], 0, -INFINITY, INFINITY, &f, NULL, 0) ==
                          HV_ERR_INVALID_ARG &&
                      f == 7,
                  "float refuses '%s' and leaves *out", bad[i]);
    }
    double d = 0;
    float f = 0;
    CHECK(hv_parse_double("1e3", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 1000.0);
    CHECK(hv_parse_double("1E+3", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 1000.0);
    CHECK(hv_parse_double("2.5e-3", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 2.5e-3);
    CHECK(hv_parse_double(".5", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 0.5);
    CHECK(hv_parse_double("5.", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 5.0);
    CHECK(hv_parse_double("007", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 7.0);
    CHECK(hv_parse_double("-0.25", 0, -1, 1, &d, NULL, 0) == 0 && d == -0.25);
    CHECK(hv_parse_double("-1", 0, 0, INFINITY, &d, NULL, 0) == HV_ERR_INVALID_ARG);
    /* lo_open 0 includes lo, 1 does not; hi is always included */
    CHECK(hv_parse_double("0", 0, 0, 1, &d, NULL, 0) == 0 && d == 0.0);
    CHECK(hv_parse_double("0", 1, 0, 1, &d, NULL, 0) == HV_ERR_INVALID_ARG);
    CHECK(hv_parse_double("0.000", 1, 0, 1, &d, NULL, 0) == HV_ERR_INVALID_ARG);
    CHECK(hv_parse_double("1", 1, 0, 1, &d, NULL, 0) == 0 && d == 1.0);
    CHECK(hv_parse_double("1.0001", 1, 0, 1, &d, NULL, 0) == HV_ERR_INVALID_ARG);
    /* finite in the target type: 1e99 is a double but no float */
    CHECK(hv_parse_double("1e99", 0, 0, INFINITY, &d, NULL, 0) == 0 && d == 1e99);
    CHECK(hv_parse_float("1e99", 0, 0, INFINITY, &f, NULL, 0) == HV_ERR_INVALID_ARG);
    CHECK(hv_parse_float("3.4028235e38", 0, 0, INFINITY, &f, NULL, 0) == 0 && f == FLT_MAX);
    /* and what a float rounds to counts: 1e-50 is 0 there, not above it */
    CHECK(hv_parse_double("1e-50", 1, 0, 1, &d, NULL, 0) == 0 && d == 1e-50);
    CHECK(hv_parse_float("1e-50", 1, 0, 1, &f, NULL, 0) == HV_ERR_INVALID_ARG);
    CHECK(hv_parse_float("0.1", 1, 0, 1, &f, NULL, 0) == 0 && f == 0.1f);
    CHECK(hv_parse_float("1e-3", 1, 0, INFINITY, &f, NULL, 0) == 0 && f == 1e-3f);
}

/* ---------------------------------------------------------- option parser */

typedef struct topts {
    const char *name, *path;
    int count;
    unsigned limit;
    uint64_t seed;
    float ratio, gain;
    double seconds;
    int threads;
    int mode;
} topts;

static int parse_mode(const char *arg, void *value) {
    if (strcmp(arg, "fast") != 0 && strcmp(arg, "slow") != 0) return -1;
    *(int *)value = arg[0] == 'f' ? 1 : 2;
    return 0;
}

static int usage_calls;
static void usage(FILE *f) {
    (void)f;
    usage_calls++;
}

enum {
    T_NAME,
    T_PATH,
    T_COUNT,
    T_LIMIT,
    T_SEED,
    T_RATIO,
    T_GAIN,
    T_SECONDS,
    T_THREADS,
    T_MODE,
    T_QUIET,
    T_JSON,
    T_HELP,
    T_VERSION,
    N_T
};

#define AT(field) offsetof(topts, field)
static const hvt_option TABLE[N_T] = {
    [T_NAME] = HVT_OPT_STRING("name", 'n', AT(name)),
    [T_PATH] = HVT_OPT_NONEMPTY("path", 'p', AT(path), "a path"),
    [T_COUNT] = HVT_OPT("count", 'c', HVT_INT, AT(count), 1, 9, "an integer 1..9"),
    [T_LIMIT] = HVT_OPT("limit", 0, HVT_UNSIGNED, AT(limit), 0, 65536, "an integer 0..65536"),
    [T_SEED] = HVT_OPT("seed", 0, HVT_U64, AT(seed), 0, 0, "a seed"),
    [T_RATIO] = HVT_OPT("ratio", 0, HVT_FLOAT_ABOVE, AT(ratio), 0, 1, "a number > 0 and <= 1"),
    [T_GAIN] = HVT_OPT("gain", 0, HVT_FLOAT, AT(gain), 0, INFINITY, "a finite number >= 0"),
    [T_SECONDS] = HVT_OPT("seconds", 0, HVT_DOUBLE_ABOVE, AT(seconds), 0, INFINITY, "a number > 0"),
    [T_THREADS] = HVT_OPT_THREADS(AT(threads)),
    [T_MODE] = HVT_OPT_CUSTOM("mode", AT(mode), parse_mode, "fast or slow"),
    [T_QUIET] = HVT_OPT_FLAG("quiet", 'q'),
    [T_JSON] = HVT_OPT_FLAG("json", 0),
    [T_HELP] = HVT_OPT_HELP,
    [T_VERSION] = HVT_OPT_VERSION,
};
#undef AT
static const hvt_cli CLI = {"prog", usage, TABLE, N_T};

/* Where one call's stdout and stderr went. */
static char g_out[1024], g_err[1024];

static int capture_begin(int fd, FILE **tmp) {
    fflush(fd == 1 ? stdout : stderr);
    *tmp = tmpfile();
    int saved = dup(fd);
    if (*tmp) dup2(fileno(*tmp), fd);
    return saved;
}

static void capture_end(int fd, FILE *tmp, int saved, char *buf, size_t n) {
    fflush(fd == 1 ? stdout : stderr);
    dup2(saved, fd);
    close(saved);
    size_t k = 0;
    if (tmp) {
        rewind(tmp);
        k = fread(buf, 1, n - 1, tmp);
        fclose(tmp);
    }
    buf[k] = '\0';
}

/* Parses "prog ARGS..." (NULL-terminated, into g_argv) into *o; the
 * parser's status. */
static char *g_argv[32];

static int run(topts *o, int *given, const char *const *args) {
    char **argv = g_argv;
    int argc = 0;
    argv[argc++] = "prog";
    while (*args && argc < 31) argv[argc++] = (char *)*args++;
    argv[argc] = NULL;
    *o = (topts){.count = -1};
    FILE *to, *te;
    int so = capture_begin(1, &to), se = capture_begin(2, &te);
    optind = 0; /* glibc: start over, whatever the last parse left */
    int rc = hvt_parse_options(&CLI, argc, argv, o, given);
    capture_end(2, te, se, g_err, sizeof g_err);
    capture_end(1, to, so, g_out, sizeof g_out);
    return rc;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The message a refused value gets, and the usage hint after it. */
static int refused(const char *line) {
    char want[512];
    snprintf(want, sizeof want,
             "prog: %s\nTry 'prog --help' for more "
             "information.\n",
             line);
    int ok = strcmp(g_err, want) == 0 && g_out[0] == '\0';
    if (!ok) fprintf(stderr, "stderr was: %s(want: %s)\n", g_err, want);
    return ok;
}

static void test_options(void) {
    topts o;
    int given[N_T];

    int rc = run(&o, given,
                 ARGS("-n", "x", "--path=p", "-c3", "--limit", "65536", "--seed",
                      "18446744073709551615", "--ratio", "1", "--gain", "0", "--seconds", "1e3",
                      "-t", "256", "--mode", "slow", "in"));
    CHECK(rc == -1 && g_err[0] == '\0');
    CHECK(strcmp(o.name, "x") == 0 && strcmp(o.path, "p") == 0);
    CHECK(o.count == 3 && o.limit == 65536 && o.seed == UINT64_MAX);
    CHECK(o.ratio == 1.0f && o.gain == 0.0f && o.seconds == 1000.0);
    CHECK(o.threads == 256 && o.mode == 2);
    CHECK(optind == 19 && given[T_QUIET] == 0 && given[T_NAME] == 1 && given[T_MODE] == 10);

    /* flags: only given[], in the order last given; operands are moved
     * behind the options (GNU getopt), "--" ends them */
    rc = run(&o, given, ARGS("a", "-q", "--json", "--qu", "b", "--", "-c"));
    CHECK(rc == -1 && given[T_QUIET] == 3 && given[T_JSON] == 2);
    CHECK(optind == 5 && strcmp(g_argv[5], "a") == 0 && strcmp(g_argv[6], "b") == 0 &&
          strcmp(g_argv[7], "-c") == 0);
    /* unique prefixes; the last value wins */
    rc = run(&o, given, ARGS("--cou", "5", "--count=6", "--mo", "fast"));
    CHECK(rc == -1 && o.count == 6 && o.mode == 1 && given[T_COUNT] == 2);
    rc = run(&o, given, ARGS("-n", "", "in"));
    CHECK(rc == -1 && strcmp(o.name, "") == 0);

    /* refused values and wrong options: exit status 2, one message (with
     * the value), nothing stored */
    static const struct {
        const char *args[3];
        const char *msg;
    } refusals[] = {
        {{"--count", "0"}, "invalid --count '0' (expected an integer 1..9)"},
        {{"-c", "+4"}, "invalid --count '+4' (expected an integer 1..9)"},
        {{"-c", " 4"}, "invalid --count ' 4' (expected an integer 1..9)"},
        {{"--limit", "65537"}, "invalid --limit '65537' (expected an integer 0..65536)"},
        {{"--seed", "18446744073709551616"},
         "invalid --seed '18446744073709551616' (expected a seed)"},
        {{"--ratio", "0"}, "invalid --ratio '0' (expected a number > 0 and <= 1)"},
        {{"--gain", "nan"}, "invalid --gain 'nan' (expected a finite number >= 0)"},
        {{"--gain", "1e99"}, "invalid --gain '1e99' (expected a finite number >= 0)"},
        {{"--seconds", "inf"}, "invalid --seconds 'inf' (expected a number > 0)"},
        {{"-t", "257"}, "invalid thread count '257' (expected an integer 1..256)"},
        {{"-p", ""}, "invalid --path '' (expected a path)"},
        {{"--mode", "medium"}, "invalid --mode 'medium' (expected fast or slow)"},
        {{"--count"}, "option '--count' needs an argument"},
        {{"-c"}, "option '-c' needs an argument"},
        {{"--bogus"}, "unknown option '--bogus'"},
        {{"-x"}, "unknown option '-x'"},
        {{"--json=1"}, "option '--json' takes no value"},
        {{"--seeed", "1"}, "unknown option '--seeed' (did you mean --seed?)"},
        {{"--jsno"}, "unknown option '--jsno' (did you mean --json?)"},
        {{"--bogus-seed"}, "unknown option '--bogus-seed'"},
        {{"--s", "1"}, "unknown option '--s'"}, /* --seed or --seconds */
    };
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        rc = run(&o, given, refusals[i].args);
        CHECK_MSG(
            rc == HVT_EXIT_USAGE && refused(refusals[i].msg) && o.count == -1 && o.seconds == 0,
            "refused: %s %s", refusals[i].args[0], refusals[i].args[1] ? refusals[i].args[1] : "");
    }

    /* --help and --version: status 0, on stdout, nothing after them */
    usage_calls = 0;
    rc = run(&o, given, ARGS("--help", "--bogus"));
    CHECK(rc == 0 && usage_calls == 1 && g_err[0] == '\0');
    rc = run(&o, given, ARGS("-h"));
    CHECK(rc == 0 && usage_calls == 2);
    rc = run(&o, given, ARGS("--version"));
    CHECK(rc == 0 && strcmp(g_out, "prog " HV_VERSION "\n") == 0 && g_err[0] == '\0');
}

/* --------------------------------------------------------- temperatures */

static void test_temperatures(void) {
    hvt_temperatures t = {.t = {9}, .n = 7};
    CHECK(hvt_parse_temperatures("0", &t) == 0 && t.n == 1 && t.t[0] == 0);
    CHECK(hvt_parse_temperatures("0,0.2,.4,1e0", &t) == 0 && t.n == 4 && t.t[0] == 0 &&
          t.t[1] == 0.2f && t.t[2] == 0.4f && t.t[3] == 1);
    char many[200] = "0";
    for (int i = 1; i < HVT_MAX_TEMPERATURES; i++) strcat(many, ",1.5");
    CHECK(hvt_parse_temperatures(many, &t) == 0 && t.n == HVT_MAX_TEMPERATURES &&
          t.t[HVT_MAX_TEMPERATURES - 1] == 1.5f);
    strcat(many, ",2"); /* one too many */
    static const char *bad[] = {"",      ",",  "0,",   ",0",  "0,,1", "-1",    "0,-0.5", "nan",
                                "0,inf", " 0", "0 ,1", "0;1", "0x1",  "1e999", "+1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hvt_temperatures u = {.t = {5}, .n = 1};
        CHECK_MSG(hvt_parse_temperatures(bad[i], &u) != 0 && u.n == 1 && u.t[0] == 5,
                  "'%s' refused, the value left alone", bad[i]);
    }
    hvt_temperatures u = {.n = 1};
    CHECK(hvt_parse_temperatures(many, &u) != 0 && u.n == 1);
    /* one value: tp's temperature; several: the list, pointing into t */
    hv_transcribe_params tp = hv_transcribe_default_params();
    hvt_parse_temperatures("0.5", &t);
    hvt_set_temperatures(&tp, &t);
    CHECK(tp.temperature == 0.5f && tp.n_temperatures == 0 && !tp.temperatures);
    hvt_parse_temperatures("0,0.5", &t);
    hvt_set_temperatures(&tp, &t);
    CHECK(tp.n_temperatures == 2 && tp.temperatures == t.t);
}

/* ----------------------------------------------------------------- misc */

static void test_misc(void) {
    CHECK(hv_output_float((double)-0.30528f) == -0.30528);
    CHECK(hv_output_float((double)0.1f) == 0.1);
    CHECK(hv_output_float(0.0) == 0.0);
    CHECK((float)hv_output_float((double)FLT_MAX) == FLT_MAX);
    CHECK(isnan(hv_output_float(NAN)));
    CHECK(hv_output_float(INFINITY) == INFINITY);
    CHECK(hv_output_float(-INFINITY) == -INFINITY);
    CHECK(hv_output_float(1e300) == 1e300); /* no float: as it is */

    double t0 = hvt_now_s(), t1 = hvt_now_s();
    CHECK(t0 > 0 && t1 >= t0);

    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    CHECK_MSG(fx != NULL, "HV_FIXTURES is set");
    if (!fx) return;
    hv_model *m = NULL;
    char err[512] = "";
    hv_status st = hv_model_load(hv_test_path(fx, "models/tiny-f32"), NULL, &m, err, sizeof err);
    CHECK_MSG(st == HV_OK, "load tiny-f32: %s", err);
    if (st != HV_OK) return;
    CHECK(hvt_model_has_language(m, "da"));
    CHECK(hvt_model_has_language(m, "en"));
    CHECK(!hvt_model_has_language(m, "xx"));
    CHECK(!hvt_model_has_language(m, ""));
    CHECK(!hvt_model_has_language(m, "da "));
    hv_model_free(m);
}

int main(void) {
    test_integers();
    test_floats();
    test_options();
    test_temperatures();
    test_misc();
    TEST_END();
}
