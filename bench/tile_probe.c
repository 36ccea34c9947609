/* The bf16 tile unit's rate (tile_probe.h has the design). */
#define _GNU_SOURCE /* syscall(), strsignal() */
#include "tile_probe.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#define HVT_HAVE_TILES 1
#endif

/* What the child hands back through its pipe: one write of at most
 * PIPE_BUF bytes, so it arrives whole or not at all. */
typedef struct child_answer {
    double value;
    char why[240];
} child_answer;

double hvt_run_in_child(hvt_child_fn fn, void *arg, char *why, size_t size) {
    if (size) why[0] = '\0';
    int fd[2];
    if (pipe(fd)) {
        snprintf(why, size, "pipe: %s", strerror(errno));
        return 0;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, size, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return 0;
    }
    if (pid == 0) {
        close(fd[0]);
        child_answer a = {.value = 0};
        a.value = fn(arg, a.why, sizeof a.why);
        _exit(write(fd[1], &a, sizeof a) == (ssize_t)sizeof a ? 0 : 1);
    }
    close(fd[1]);
    child_answer a;
    size_t got = 0;
    while (got < sizeof a) {
        ssize_t r = read(fd[0], (char *)&a + got, sizeof a - got);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            break;
    }
    close(fd[0]);
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) continue;
    if (w == pid && WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(why, size, "the probe's process died of signal %d (%s)", sig, strsignal(sig));
        return 0;
    }
    if (got != sizeof a || w != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
        snprintf(why, size, "the probe's process ended without an answer");
        return 0;
    }
    a.why[sizeof a.why - 1] = '\0';
    if (!(a.value > 0) || !isfinite(a.value)) {
        snprintf(why, size, "%s", a.why[0] ? a.why : "the probe gave no figure");
        return 0;
    }
    return a.value;
}

#ifdef HVT_HAVE_TILES

/* Timed rounds after one untimed (the unit wakes up), and iterations per
 * round: 2^19 x 4 products x 16x16x32 multiply-adds = 34 GFLOP a thread,
 * about 10 ms at one core's rate. */
enum { ROUNDS = 4, ITERS = 1 << 19, TILE_FLOP_PER_ITER = 4 * 16 * 16 * 32 * 2 };

/* Linux's names for the tile data state (asm/prctl.h, XFEATURE_XTILEDATA). */
enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

/* LDTILECFG's 64-byte operand: palette 1, then bytes per row and rows of
 * each tile register. */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;
_Static_assert(sizeof(tile_config) == 64, "LDTILECFG reads 64 bytes");

typedef struct tile_job {
    pthread_barrier_t *start;
    double t0[ROUNDS], t1[ROUNDS];
    int exact; /* every sum as the arithmetic says */
} tile_job;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Whether this process may run AMX-BF16 instructions: the CPU has them,
 * the OS saves the tile state (XCR0 bits 17, 18), and Linux grants this
 * process the tile data (it is off until asked for). */
static int tiles_usable(char *why, size_t size) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22))) {
        snprintf(why, size, "the CPU has no AMX-BF16 tile unit");
        return 0;
    }
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) {
        snprintf(why, size, "the OS has not enabled XSAVE, which AMX needs");
        return 0;
    }
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) {
        snprintf(why, size, "the OS does not save the AMX tile state (XCR0 %#x)", lo);
        return 0;
    }
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) {
        snprintf(why, size, "the kernel does not grant the AMX tile state (arch_prctl: %s)",
                 strerror(errno));
        return 0;
    }
    return 1;
}

/* One thread: tiles 4, 5 (A) and 6, 7 (B) hold 16 x 32 bf16 values of
 * 2^-6 each, tiles 0-3 the f32 sums, which grow by 32 x 2^-12 = 2^-7 a
 * product: exact in f32 for these counts, so they are checked for
 * equality. */
static void *tile_run(void *arg) {
    tile_job *j = arg;
    _Alignas(64) tile_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _Alignas(64) uint16_t ab[16 * 32];
    for (int i = 0; i < 16 * 32; i++) ab[i] = 0x3C80; /* 2^-6 */
    _Alignas(64) float sums[4][16 * 16];
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm4\n\t"
                     "tileloadd (%0,%1,1), %%tmm5\n\t"
                     "tileloadd (%0,%1,1), %%tmm6\n\t"
                     "tileloadd (%0,%1,1), %%tmm7" ::"r"(ab),
                     "r"(64L)
                     : "memory");
    j->exact = 1;
    for (int r = 0; r < ROUNDS; r++) {
        __asm__ volatile("tilezero %tmm0\n\ttilezero %tmm1\n\ttilezero %tmm2\n\ttilezero %tmm3");
        pthread_barrier_wait(j->start);
        j->t0[r] = now_s();
        long n = ITERS;
        __asm__ volatile("1:\n\t"
                         "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
                         "tdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
                         "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\t"
                         "tdpbf16ps %%tmm7, %%tmm5, %%tmm3\n\t"
                         "dec %0\n\t"
                         "jnz 1b"
                         : "+r"(n)
                         :
                         : "cc");
        j->t1[r] = now_s();
        __asm__ volatile("tilestored %%tmm0, (%0,%1,1)\n\t"
                         "tilestored %%tmm1, (%2,%1,1)\n\t"
                         "tilestored %%tmm2, (%3,%1,1)\n\t"
                         "tilestored %%tmm3, (%4,%1,1)" ::"r"(sums[0]),
                         "r"(64L), "r"(sums[1]), "r"(sums[2]), "r"(sums[3])
                         : "memory");
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < 16 * 16; i++)
                if (sums[t][i] != (float)ITERS * 0x1p-7f) j->exact = 0;
    }
    __asm__ volatile("tilerelease");
    return NULL;
}

static double tile_child(void *arg, char *why, size_t size) {
    int threads = *(const int *)arg;
    if (!tiles_usable(why, size)) return 0;
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, (unsigned)threads)) {
        snprintf(why, size, "pthread_barrier_init failed");
        return 0;
    }
    tile_job jobs[256];
    pthread_t th[256];
    int started = 0;
    for (; started < threads; started++) {
        jobs[started] = (tile_job){.start = &start};
        if (pthread_create(&th[started], NULL, tile_run, &jobs[started])) break;
    }
    if (started < threads) {
        /* the started threads wait at the barrier for ever: the child
         * exits with them */
        snprintf(why, size, "could not start %d threads", threads);
        return 0;
    }
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    double best = 0;
    for (int r = 1; r < ROUNDS; r++) {
        double t0 = jobs[0].t0[r], t1 = jobs[0].t1[r];
        for (int t = 1; t < threads; t++) {
            if (jobs[t].t0[r] < t0) t0 = jobs[t].t0[r];
            if (jobs[t].t1[r] > t1) t1 = jobs[t].t1[r];
        }
        double rate = t1 > t0 ? (double)threads * ITERS * TILE_FLOP_PER_ITER / (t1 - t0) / 1e9 : 0;
        if (rate > best) best = rate;
    }
    for (int t = 0; t < threads; t++)
        if (!jobs[t].exact) {
            snprintf(why, size, "the tile unit's sums came out wrong");
            return 0;
        }
    return best;
}

double hvt_tile_peak_gflops(int threads, char *why, size_t size) {
    if (threads < 1 || threads > 256) {
        snprintf(why, size, "threads %d: expected 1 to 256", threads);
        return 0;
    }
    return hvt_run_in_child(tile_child, &threads, why, size);
}

#else

double hvt_tile_peak_gflops(int threads, char *why, size_t size) {
    (void)threads;
    snprintf(why, size, "no AMX probe in this build (x86-64 Linux only)");
    return 0;
}

#endif
