/* The archive-batch helpers of the hviske command line (cli/batch.h):
 * --shard K/N parsing, the partition of positions into shards, the shard
 * from a scheduler's environment, the duplicate finder against a brute
 * force, and the list reader on random bytes against a reference
 * transcription of its rules (tests/programs/test_batch.py checks the same through
 * the program). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "testlib.h"

static void test_parse_shard(void) {
    static const struct {
        const char *s;
        int k, n; /* n == 0: refused */
    } cases[] = {
        {"0/1", 0, 1},
        {"3/4", 3, 4},
        {"0/2147483647", 0, INT_MAX},
        {"12/100", 12, 100},
        {"007/8", 7, 8},
        {"1/1", 0, 0},
        {"4/4", 0, 0},
        {"0/0", 0, 0},
        {"", 0, 0},
        {"/", 0, 0},
        {"1", 0, 0},
        {"1/", 0, 0},
        {"/1", 0, 0},
        {"-1/2", 0, 0},
        {"+1/2", 0, 0},
        {"1/+2", 0, 0},
        {" 1/2", 0, 0},
        {"1/2 ", 0, 0},
        {"1 /2", 0, 0},
        {"1/2/3", 0, 0},
        {"0x1/2", 0, 0},
        {"1.0/2", 0, 0},
        {"1/2147483648", 0, 0},
        {"99999999999/1", 0, 0},
        {"0000000000001/2", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hvt_shard s = {-1, -1, NULL};
        int rc = hvt_parse_shard(cases[i].s, &s);
        if (cases[i].n)
            CHECK_MSG(rc == 0 && s.k == cases[i].k && s.n == cases[i].n, "'%s' -> rc %d %d/%d",
                      cases[i].s, rc, s.k, s.n);
        else
            CHECK_MSG(rc != 0 && s.k == -1, "'%s' accepted as %d/%d", cases[i].s, s.k, s.n);
    }
}

/* Every position in exactly one shard, shard sizes within one. */
static void test_partition(void) {
    int bad = 0;
    for (int n = 1; n <= 40; n++) {
        int count[40] = {0};
        for (long i = 0; i < 1000; i++) {
            int owners = 0;
            for (int k = 0; k < n; k++) {
                hvt_shard s = {k, n, "test"};
                if (hvt_shard_has(&s, i)) {
                    owners++;
                    count[k]++;
                }
            }
            bad += owners != 1;
        }
        int lo = INT_MAX, hi = 0;
        for (int k = 0; k < n; k++) {
            lo = count[k] < lo ? count[k] : lo;
            hi = count[k] > hi ? count[k] : hi;
        }
        bad += hi - lo > 1;
    }
    CHECK_MSG(bad == 0, "%d partition errors", bad);
}

static const char *const ENV_VARS[] = {"SLURM_ARRAY_TASK_ID",   "SLURM_ARRAY_TASK_COUNT",
                                       "SLURM_ARRAY_TASK_MIN",  "SLURM_ARRAY_TASK_MAX",
                                       "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX",
                                       "HV_TEST_SHARDS"};

/* Sets the environment from "NAME=VALUE" strings (the others unset), then
 * asks for the shard. */
static int shard_env(const char *const *set, int count, const char *count_env, hvt_shard *s,
                     char *err, size_t n) {
    for (size_t i = 0; i < sizeof ENV_VARS / sizeof *ENV_VARS; i++) unsetenv(ENV_VARS[i]);
    for (; *set; set++) {
        char name[64];
        const char *eq = strchr(*set, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *set), *set);
        setenv(name, eq + 1, 1);
    }
    return hvt_shard_from_env(count, count_env, s, err, n);
}

static void test_env(void) {
    static const struct {
        const char *set[6];
        int count;
        const char *count_env;
        int rc, k, n;
        const char *says; /* in the message when rc < 0 */
    } cases[] = {
        {{NULL}, 0, NULL, 0, 0, 0, NULL},
        {{"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=5", NULL}, 0, NULL, 1, 2, 5, NULL},
        {{"SLURM_ARRAY_TASK_ID=12", "SLURM_ARRAY_TASK_COUNT=5", "SLURM_ARRAY_TASK_MIN=10",
          "SLURM_ARRAY_TASK_MAX=14", NULL},
         0,
         NULL,
         1,
         2,
         5,
         NULL},
        {{"SLURM_ARRAY_TASK_ID=9", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MIN=3",
          "SLURM_ARRAY_TASK_MAX=12", "SLURM_ARRAY_TASK_STEP=3", NULL},
         0,
         NULL,
         1,
         2,
         4,
         NULL},
        {{"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MIN=3",
          "SLURM_ARRAY_TASK_STEP=3", NULL},
         0,
         NULL,
         -1,
         0,
         0,
         "SLURM_ARRAY_TASK_ID=4"},
        {{"SLURM_ARRAY_TASK_ID=1", NULL}, 0, NULL, -1, 0, 0, "SLURM_ARRAY_TASK_COUNT"},
        {{"SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_COUNT=5", NULL},
         0,
         NULL,
         -1,
         0,
         0,
         "SLURM_ARRAY_TASK_ID=5"},
        {{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_MIN=0",
          "SLURM_ARRAY_TASK_MAX=7", NULL},
         0,
         NULL,
         -1,
         0,
         0,
         "not one range"},
        {{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3", NULL}, 3, NULL, 1, 1, 3, NULL},
        {{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3", NULL},
         2,
         NULL,
         -1,
         0,
         0,
         "--shard-count 2"},
        {{"SLURM_ARRAY_TASK_ID=1 ", "SLURM_ARRAY_TASK_COUNT=3", NULL}, 0, NULL, -1, 0, 0, "'1 '"},
        {{"JOB_COMPLETION_INDEX=3", NULL}, 4, NULL, 1, 3, 4, NULL},
        {{"JOB_COMPLETION_INDEX=4", NULL}, 4, NULL, -1, 0, 0, "JOB_COMPLETION_INDEX=4"},
        {{"JOB_COMPLETION_INDEX=0", NULL}, 0, NULL, -1, 0, 0, "--shard-count-env"},
        {{"JOB_COMPLETION_INDEX=1", "HV_TEST_SHARDS=2", NULL}, 0, "HV_TEST_SHARDS", 1, 1, 2, NULL},
        {{"JOB_COMPLETION_INDEX=1", NULL}, 0, "HV_TEST_SHARDS", -1, 0, 0, "is not set"},
        {{"JOB_COMPLETION_INDEX=1", "HV_TEST_SHARDS=two", NULL},
         0,
         "HV_TEST_SHARDS",
         -1,
         0,
         0,
         "'two'"},
        {{"JOB_COMPLETION_INDEX=", NULL}, 0, NULL, 0, 0, 0, NULL},
        {{"JOB_COMPLETION_INDEX=0", "SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_COUNT=2", NULL},
         0,
         NULL,
         1,
         0,
         2,
         NULL},
        {{NULL}, 3, NULL, -1, 0, 0, "--shard-count given"},
        {{NULL}, 0, "HV_TEST_SHARDS", -1, 0, 0, "--shard-count-env given"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hvt_shard s = {-1, -1, NULL};
        char err[512] = "";
        int rc = shard_env(cases[i].set, cases[i].count, cases[i].count_env, &s, err, sizeof err);
        if (cases[i].rc == 1)
            CHECK_MSG(rc == 1 && s.k == cases[i].k && s.n == cases[i].n,
                      "case %zu: rc %d shard %d/%d (%s)", i, rc, s.k, s.n, err);
        else if (cases[i].rc == 0)
            CHECK_MSG(rc == 0 && s.n == -1, "case %zu: rc %d", i, rc);
        else
            CHECK_MSG(rc < 0 && strstr(err, cases[i].says), "case %zu: rc %d, message '%s'", i, rc,
                      err);
    }
    for (size_t i = 0; i < sizeof ENV_VARS / sizeof *ENV_VARS; i++) unsetenv(ENV_VARS[i]);
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static void test_duplicates(void) {
    int bad = 0;
    for (int round = 0; round < 2000; round++) {
        int n = (int)(rnd() % 12);
        char bufs[12][4], *s[12];
        for (int i = 0; i < n; i++) {
            snprintf(bufs[i], sizeof bufs[i], "%c%c", 'a' + (int)(rnd() % 3),
                     'a' + (int)(rnd() % (1 + rnd() % 6)));
            s[i] = bufs[i];
        }
        int brute = 0;
        for (int i = 0; i < n && !brute; i++)
            for (int j = i + 1; j < n; j++) brute |= strcmp(s[i], s[j]) == 0;
        int a = -1, b = -1, got = hvt_first_duplicate(s, n, &a, &b);
        if (got != brute || (got && !(a < b && a >= 0 && b < n && strcmp(s[a], s[b]) == 0))) bad++;
    }
    CHECK_MSG(bad == 0, "%d of 2000 duplicate searches wrong", bad);
}

/* The list rules written out plainly: split at "\n", drop one "\r" at the
 * end of each line, skip empty ones. -1 for what must be refused. */
static int reference_list(const unsigned char *d, size_t n, char ***out, int *n_out) {
    char **v = NULL;
    int m = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && d[i] == 0) goto refuse;
        if (i < n && d[i] != '\n') continue;
        size_t len = i - start;
        if (i == n && len == 0) break;
        if (len > 0 && d[start + len - 1] == '\r') len--;
        if (len > HVT_LIST_MAX_LINE || (len == 1 && d[start] == '-')) goto refuse;
        if (len > 0) {
            v = realloc(v, (size_t)(m + 1) * sizeof *v);
            v[m] = malloc(len + 1);
            memcpy(v[m], d + start, len);
            v[m++][len] = 0;
        }
        start = i + 1;
    }
    if (m == 0) goto refuse;
    *out = v;
    *n_out = m;
    return 0;
refuse:
    hvt_list_free(v, m);
    return -1;
}

static void test_list_random(void) {
    const char *path = hv_test_path(hv_test_tmpdir(), "list");
    static const unsigned char alphabet[] = {'a', 'b', '/', ' ', '\n', '\n', '\r', '-', 0, 0xff};
    static unsigned char data[3 * HVT_LIST_MAX_LINE];
    int bad = 0;
    for (int round = 0; round < 600; round++) {
        size_t n;
        int kind = round % 6;
        if (kind == 5) { /* a long line around the limit */
            n = HVT_LIST_MAX_LINE - 2 + rnd() % 5;
            memset(data, 'x', n);
            if (rnd() % 2) data[n++] = '\r';
            if (rnd() % 2) data[n++] = '\n';
        } else {
            n = rnd() % 40;
            for (size_t i = 0; i < n; i++)
                data[i] = kind == 0 ? alphabet[rnd() % sizeof alphabet]
                                    : alphabet[rnd() % (sizeof alphabet - 2)];
        }
        if (hv_test_write_file(path, data, n) != 0) {
            bad++;
            continue;
        }
        char **want = NULL, **got = NULL, err[512];
        int n_want = 0, n_got = 0;
        int rw = reference_list(data, n, &want, &n_want);
        int rg = hvt_read_list(path, &got, &n_got, err, sizeof err);
        int same = rw == rg && n_want == n_got;
        for (int i = 0; same && i < n_got; i++) same = strcmp(want[i], got[i]) == 0;
        if (rg != 0 && !strstr(err, path)) same = 0; /* the message names the list */
        if (!same) {
            bad++;
            if (bad < 5)
                fprintf(stderr,
                        "list of %zu bytes: reader %d (%d entries), reference %d (%d): %s\n", n, rg,
                        n_got, rw, n_want, rg ? err : "");
        }
        hvt_list_free(want, n_want);
        hvt_list_free(got, n_got);
    }
    CHECK_MSG(bad == 0, "%d of 600 random lists read differently from the rules", bad);
    unlink(path);
}

int main(void) {
    test_parse_shard();
    test_partition();
    test_env();
    test_duplicates();
    test_list_random();
    TEST_END();
}
