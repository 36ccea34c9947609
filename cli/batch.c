/* Archive batches: the list of inputs, shards, the run summary
 * (cli/batch.h, docs/SCALING.md). */
#include "batch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cue_options.h"
#include "cmdline.h"
#include "writers.h"
#include "hviske_output.h"

/* ---------------------------------------------------------------- list */

/* Adds line[0..len) (no NUL inside) to the list; 0, or -1 when out of
 * memory or past INT_MAX entries. */
static int list_add(char ***paths, int *n, int *cap, const char *line, size_t len) {
    if (*n == *cap) {
        if (*cap > INT_MAX / 2) return -1;
        int ncap = *cap ? *cap * 2 : 256;
        char **np = realloc(*paths, (size_t)ncap * sizeof *np);
        if (!np) return -1;
        *paths = np;
        *cap = ncap;
    }
    char *p = malloc(len + 1);
    if (!p) return -1;
    memcpy(p, line, len);
    p[len] = '\0';
    (*paths)[(*n)++] = p;
    return 0;
}

void hvt_list_free(char **paths, int n) {
    for (int i = 0; paths && i < n; i++) free(paths[i]);
    free(paths);
}

int hvt_read_list(const char *name, char ***paths_out, int *n_out, char *err, size_t err_size) {
    *paths_out = NULL;
    *n_out = 0;
    int from_stdin = strcmp(name, "-") == 0;
    const char *shown = from_stdin ? "standard input" : name;
    int fd = from_stdin ? STDIN_FILENO : open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_size, "%s: cannot open the list: %s", shown, strerror(errno));
        return -1;
    }
    char **paths = NULL;
    int n = 0, cap = 0, failed = 0;
    static char line[HVT_LIST_MAX_LINE + 1]; /* + the "\r" that may be dropped */
    size_t len = 0;
    long lineno = 1;
    int too_long = 0;
    unsigned char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, err_size, "%s: cannot read the list: %s", shown, strerror(errno));
            failed = 1;
            break;
        }
        /* r == 0: the end; a last line without "\n" is handled as one with it */
        for (ssize_t i = 0; i < (r ? r : 1) && !failed; i++) {
            int end = r == 0;
            if (!end && buf[i] == '\0') {
                snprintf(err, err_size,
                         "%s:%ld: a NUL byte in the list (one path per line, "
                         "ended by a line break)",
                         shown, lineno);
                failed = 1;
                break;
            }
            if (!end && buf[i] != '\n') {
                if (len < sizeof line)
                    line[len++] = (char)buf[i];
                else
                    too_long = 1;
                continue;
            }
            if (end && len == 0 && !too_long) break;
            size_t l = len;
            if (l > 0 && line[l - 1] == '\r') l--;
            if (too_long || l > HVT_LIST_MAX_LINE) {
                snprintf(err, err_size, "%s:%ld: a line longer than %d bytes (one path per line)",
                         shown, lineno, (int)HVT_LIST_MAX_LINE);
                failed = 1;
            } else if (l == 1 && line[0] == '-') {
                snprintf(err, err_size,
                         "%s:%ld: '-' (standard input) cannot be listed (write ./- for a "
                         "file named -)",
                         shown, lineno);
                failed = 1;
            } else if (l > 0 && list_add(&paths, &n, &cap, line, l) != 0) {
                snprintf(err, err_size, "%s: out of memory reading the list", shown);
                failed = 1;
            }
            len = 0;
            too_long = 0;
            lineno++;
        }
        if (r == 0 || failed) break;
    }
    if (!from_stdin) close(fd);
    if (!failed && n == 0) {
        snprintf(err, err_size, "%s: the list names no inputs", shown);
        failed = 1;
    }
    if (failed) {
        hvt_list_free(paths, n);
        return -1;
    }
    *paths_out = paths;
    *n_out = n;
    return 0;
}

/* -------------------------------------------------------------- shards */

int hvt_parse_shard(const char *arg, void *value) {
    const char *slash = strchr(arg, '/');
    if (!slash || slash == arg || (size_t)(slash - arg) > 10) return -1;
    char kbuf[12];
    memcpy(kbuf, arg, (size_t)(slash - arg));
    kbuf[slash - arg] = '\0';
    int k, n;
    if (hvt_parse_int(kbuf, 0, INT_MAX, &k) != 0 || hvt_parse_int(slash + 1, 1, INT_MAX, &n) != 0 ||
        k >= n)
        return -1;
    hvt_shard *s = value;
    s->k = k;
    s->n = n;
    s->source = "--shard";
    return 0;
}

int hvt_shard_has(const hvt_shard *s, long i) { return i % s->n == s->k; }

/* The integer value of environment variable var into *out (>= lo); 1 when
 * set and valid, 0 when unset or empty, -1 with err when not an integer. */
static int env_int(const char *var, int lo, int *out, char *err, size_t err_size) {
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    if (hvt_parse_int(v, lo, INT_MAX, out) != 0) {
        snprintf(err, err_size, "%s='%.64s' is not an integer >= %d", var, v, lo);
        return -1;
    }
    return 1;
}

static int slurm_shard(int count, hvt_shard *s, char *err, size_t err_size) {
    int id, n, min = 0, step = 1, max = 0, r;
    if (env_int("SLURM_ARRAY_TASK_ID", 0, &id, err, err_size) < 0) return -1;
    if ((r = env_int("SLURM_ARRAY_TASK_COUNT", 1, &n, err, err_size)) <= 0) {
        if (r == 0)
            snprintf(err, err_size,
                     "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not "
                     "(give --shard K/N)");
        return -1;
    }
    if (env_int("SLURM_ARRAY_TASK_MIN", 0, &min, err, err_size) < 0 ||
        env_int("SLURM_ARRAY_TASK_STEP", 1, &step, err, err_size) < 0 ||
        (r = env_int("SLURM_ARRAY_TASK_MAX", 0, &max, err, err_size)) < 0)
        return -1;
    if (r == 1 && (max < min || (max - min) % step != 0 || (max - min) / step + 1 != n)) {
        snprintf(err, err_size,
                 "the Slurm array is not one range: SLURM_ARRAY_TASK_COUNT=%d tasks do not "
                 "run from SLURM_ARRAY_TASK_MIN=%d to SLURM_ARRAY_TASK_MAX=%d in steps of %d "
                 "(submit --array=0-%d, or give --shard K/N)",
                 n, min, max, step, n - 1);
        return -1;
    }
    if (id < min || (id - min) % step != 0 || (id - min) / step >= n) {
        snprintf(err, err_size,
                 "SLURM_ARRAY_TASK_ID=%d is not a task of the array of "
                 "SLURM_ARRAY_TASK_COUNT=%d tasks from SLURM_ARRAY_TASK_MIN=%d in steps of %d",
                 id, n, min, step);
        return -1;
    }
    if (count > 0 && count != n) {
        snprintf(err, err_size,
                 "--shard-count %d contradicts SLURM_ARRAY_TASK_COUNT=%d (a Slurm array "
                 "needs no --shard-count)",
                 count, n);
        return -1;
    }
    s->k = (id - min) / step;
    s->n = n;
    s->source = "SLURM_ARRAY_TASK_ID";
    return 1;
}

int hvt_shard_from_env(int count, const char *count_env, hvt_shard *s, char *err, size_t err_size) {
    const char *slurm = getenv("SLURM_ARRAY_TASK_ID");
    if (slurm && *slurm) return slurm_shard(count, s, err, err_size);
    int k, r = env_int("JOB_COMPLETION_INDEX", 0, &k, err, err_size);
    if (r < 0) return -1;
    if (r == 0) {
        if (count > 0 || count_env) {
            snprintf(err, err_size,
                     "%s given, but neither JOB_COMPLETION_INDEX (a Kubernetes Indexed "
                     "Job) nor SLURM_ARRAY_TASK_ID is set: this task's shard is unknown "
                     "(give --shard K/N)",
                     count > 0 ? "--shard-count" : "--shard-count-env");
            return -1;
        }
        return 0;
    }
    int n = count;
    if (n <= 0 && count_env) {
        if ((r = env_int(count_env, 1, &n, err, err_size)) < 0) return -1;
        if (r == 0) {
            snprintf(err, err_size, "--shard-count-env %.64s: %.64s is not set", count_env,
                     count_env);
            return -1;
        }
    }
    if (n <= 0) {
        snprintf(err, err_size,
                 "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job), but not the number "
                 "of shards: give --shard-count N or --shard-count-env VAR");
        return -1;
    }
    if (k >= n) {
        snprintf(err, err_size, "JOB_COMPLETION_INDEX=%d is not below the shard count %d", k, n);
        return -1;
    }
    s->k = k;
    s->n = n;
    s->source = "JOB_COMPLETION_INDEX";
    return 1;
}

/* ---------------------------------------------------------- duplicates */

static char *const *g_sort_s; /* qsort has no user pointer in C11 */

static int cmp_index(const void *a, const void *b) {
    int ia = *(const int *)a, ib = *(const int *)b;
    int c = strcmp(g_sort_s[ia], g_sort_s[ib]);
    return c ? c : (ia > ib) - (ia < ib);
}

int hvt_first_duplicate(char *const *s, int n, int *a, int *b) {
    if (n < 2) return 0;
    int *idx = malloc((size_t)n * sizeof *idx);
    if (!idx) return -1;
    for (int i = 0; i < n; i++) idx[i] = i;
    g_sort_s = s;
    qsort(idx, (size_t)n, sizeof *idx, cmp_index);
    int found = 0;
    for (int i = 1; i < n && !found; i++)
        if (strcmp(s[idx[i - 1]], s[idx[i]]) == 0) {
            *a = idx[i - 1];
            *b = idx[i];
            found = 1;
        }
    free(idx);
    return found;
}

/* ------------------------------------------------------------- summary */

int hvt_summary_open(const char *path, char *err, size_t err_size) {
    /* written in place, whatever it is (hv_out_file, hviske_output.h): a FIFO waits
     * for its reader, a socket is connected */
    int fd = hv_out_open_fd(path, O_WRONLY | O_CREAT | O_APPEND);
    if (fd < 0) {
        snprintf(err, err_size, "%s: cannot open the summary: %s", path, strerror(errno));
        return -1;
    }
    return fd;
}

int hvt_summary_write(int fd, const char *input, const char *output, const char *status,
                      const char *error, double audio_s, double processing_s) {
    char *s;
    size_t len;
    if (hv_output_summary_line(input, output, status, error, audio_s, processing_s, &s, &len) !=
        HV_OK) {
        errno = ENOMEM;
        return -1;
    }
    /* one write() of the whole line: appends of several tasks never mix */
    ssize_t w;
    do w = write(fd, s, len);
    while (w < 0 && errno == EINTR);
    int saved = errno;
    hv_free(s);
    if (w < 0) {
        errno = saved;
        return -1;
    }
    if ((size_t)w != len) {
        errno = EIO; /* a short write: the disk is full */
        return -1;
    }
    return 0;
}
