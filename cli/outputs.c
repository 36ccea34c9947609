/* hviske's output files (outputs.h). */
#include "outputs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "progress.h"
#include "report.h"

/* The output file being written, if any, for the signal handler: it
 * removes its temporary file so that an interrupted run leaves nothing
 * behind (hv_out_file.tmp_there says when there may be one). */
static hv_out_file *volatile g_out;

static void on_fatal_signal(int sig) {
    hv_out_file *of = g_out;
    if (of && of->tmp_there) unlink(of->tmp); /* async-signal-safe */
    cli_progress_on_signal();
    signal(sig, SIG_DFL);
    raise(sig); /* die of the same signal, as the caller expects */
}

void cli_catch_signals(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* keep "ignored" as it was (nohup, background jobs) */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
    /* a reader that went away (standard output, a FIFO given to -o or
     * --summary) is a write error reported with exit status 1 */
    signal(SIGPIPE, SIG_IGN);
}

int cli_flush_stdout(void) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    if (errno == EPIPE) {
        /* its reader went away (| head): end as a pipe's writer does,
         * quietly, by SIGPIPE */
        hv_out_file *of = g_out;
        if (of && of->tmp_there) unlink(of->tmp);
        signal(SIGPIPE, SIG_DFL);
        raise(SIGPIPE);
    }
    return -1;
}

int cli_out_open(hv_out_file *of, const char *path) {
    g_out = of;
    int err = hv_out_open(of, path);
    if (err) {
        g_out = NULL;
        cli_error("%s: cannot create: %s", path, strerror(err));
        return -1;
    }
    return 0;
}

void cli_out_abort(hv_out_file *of) {
    hv_out_abort(of);
    g_out = NULL;
}

int cli_out_commit(hv_out_file *of, const char *path) {
    int err = hv_out_commit(of);
    g_out = NULL;
    if (err) {
        cli_error("%s: cannot write: %s", path, strerror(err));
        return -1;
    }
    return 0;
}

int cli_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

char *cli_output_path(const char *dir, const char *input, const char *ext) {
    const char *base = "stdin";
    size_t blen = 5;
    if (strcmp(input, "-") != 0) {
        const char *slash = strrchr(input, '/');
        base = slash ? slash + 1 : input;
        blen = strlen(base);
        const char *dot = strrchr(base, '.');
        if (dot && dot != base) blen = (size_t)(dot - base);
    }
    size_t dlen = dir ? strlen(dir) : 0;
    const char *sep = !dir || (dlen && dir[dlen - 1] == '/') ? "" : "/";
    if (!dir) { /* beside the input: its directory part, "" for stdin */
        dir = input;
        dlen = strcmp(input, "-") != 0 ? (size_t)(base - input) : 0;
    }
    size_t n = dlen + 1 + blen + 1 + strlen(ext) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%.*s%s%.*s.%s", (int)dlen, dir, sep, (int)blen, base, ext);
    return p;
}

char *cli_whisper_output_path(const char *base, const char *ext) {
    if (strcmp(base, "-") == 0) base = "stdin";
    size_t n = strlen(base) + 1 + strlen(ext) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s.%s", base, ext);
    return p;
}

static int output_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_outputs_exist(char *const *paths, int n) {
    for (int k = 0; k < n; k++)
        if (!output_exists(paths[k])) return 0;
    return 1;
}

int cli_write_output_file(const hv_output_spec *spec, hv_output_format fmt, const char *input,
                          const char *out_path, const hv_result *res, int notice) {
    if (strcmp(input, "-") != 0 && cli_same_file(input, out_path)) {
        cli_error("%s: not overwriting the input %s", out_path, input);
        return -1;
    }
    hv_out_file of;
    if (cli_out_open(&of, out_path) != 0) return -1;
    if (hvt_write_result(of.f, fmt, spec, input, res) != 0) {
        cli_out_abort(&of);
        cli_file_error(input, HV_ERR_NOMEM, "out of memory formatting the output");
        return -1;
    }
    int in_place = of.in_place;
    if (cli_out_commit(&of, out_path) != 0) return -1;
    if (notice && !in_place) fprintf(stderr, "hviske: wrote %s\n", out_path);
    return 0;
}
