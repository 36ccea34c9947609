/* hviske's progress display (progress.h). */
#include "progress.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cmdline.h"

/* Whether a redrawn line is on the terminal now, for the signal handler. */
static volatile sig_atomic_t line_shown;

/* "1h02m03s", "2m03s", "45s". */
static void format_duration(char *buf, size_t n, double s) {
    long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

/* The library's progress callback, after each chunk. On a terminal
 * (mode 1): one status line on stderr, redrawn in place and erased before
 * anything else is written (standard output's lines always end before it
 * is drawn, so it never shares a row with them). With --progress on
 * another stderr (mode 2): one line per chunk in a fixed form,
 * "hviske: FILE: progress P% done_s=D total_s=T speed=X eta_s=E". */
void cli_progress_update(void *user, double done, double total) {
    cli_progress *p = user;
    if (!(total > 0)) return;
    double elapsed = hvt_now_s() - p->t0;
    double speed = elapsed > 0 ? done / elapsed : 0;
    double eta_s = speed > 0 ? (total - done) / speed : 0;
    if (p->mode == 2) {
        fprintf(stderr,
                "hviske: %s: progress %.1f%% done_s=%.2f total_s=%.2f speed=%.2f eta_s=%.0f\n",
                p->path, 100.0 * done / total, done, total, speed, eta_s);
        fflush(stderr);
        return;
    }
    if (done >= total) return; /* the last chunk: the caller clears the line */
    char d[32], t[32], eta[32];
    format_duration(d, sizeof d, done);
    format_duration(t, sizeof t, total);
    format_duration(eta, sizeof eta, eta_s);
    char which[48] = "";
    if (p->count > 1) snprintf(which, sizeof which, " (file %d of %d)", p->index + 1, p->count);
    line_shown = 1;
    fprintf(stderr,
            "\r\033[Khviske: %s%s: %3.0f%% (%s of %s), %.1f s of "
            "audio per second, ETA %s",
            p->name, which, 100.0 * done / total, d, t, speed, eta);
    fflush(stderr);
    p->shown = 1;
}

void cli_progress_clear(cli_progress *p) {
    if (!p->shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
    line_shown = 0;
}

void cli_progress_on_signal(void) {
    static const char erase[] = "\r\033[K";
    if (line_shown) (void)!write(STDERR_FILENO, erase, sizeof erase - 1);
}
