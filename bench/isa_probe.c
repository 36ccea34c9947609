/* The kernel table's arithmetic peak (isa_probe.h). */
#include "isa_probe.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "kernels/matmul_impl.h"
#include "tile_probe.h"

enum { ROUNDS = 4, STEPS = 16000000 }; /* rounds of ~30-50 ms: longer than a time slice */

typedef struct isa_job {
    const hv_mm_kernels *k;
    int int8;
    pthread_barrier_t *start;
    double t0[ROUNDS], t1[ROUNDS], macs;
} isa_job;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *isa_run(void *arg) {
    isa_job *j = arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(j->start);
        j->t0[r] = now_s();
        j->macs = j->k->peak_macs(STEPS, j->int8);
        j->t1[r] = now_s();
    }
    return NULL;
}

typedef struct isa_arg {
    const hv_mm_kernels *k;
    int threads, int8;
} isa_arg;

/* In a child process (tile_probe.h): threads that could not all start
 * leave the others at the barrier, and the child's exit ends them. */
static double isa_child(void *arg, char *why, size_t size) {
    const isa_arg *a = arg;
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, (unsigned)a->threads)) {
        snprintf(why, size, "pthread_barrier_init failed");
        return 0;
    }
    isa_job jobs[256];
    pthread_t th[256];
    for (int t = 0; t < a->threads; t++) {
        jobs[t] = (isa_job){.k = a->k, .int8 = a->int8, .start = &start};
        if (pthread_create(&th[t], NULL, isa_run, &jobs[t])) {
            snprintf(why, size, "could not start %d threads", a->threads);
            return 0;
        }
    }
    for (int t = 0; t < a->threads; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    double best = 0;
    for (int r = 1; r < ROUNDS; r++) { /* the first untimed: clocks, caches */
        double t0 = jobs[0].t0[r], t1 = jobs[0].t1[r];
        for (int t = 1; t < a->threads; t++) {
            if (jobs[t].t0[r] < t0) t0 = jobs[t].t0[r];
            if (jobs[t].t1[r] > t1) t1 = jobs[t].t1[r];
        }
        double rate = t1 > t0 ? a->threads * jobs[0].macs * 2 / (t1 - t0) / 1e9 : 0;
        if (rate > best) best = rate;
    }
    return best;
}

double hvt_isa_peak_gflops(int threads, int int8, char *why, size_t size) {
    if (threads < 1 || threads > 256) {
        snprintf(why, size, "threads %d: expected 1 to 256", threads);
        return 0;
    }
    isa_arg a = {.k = hv_mm_best(), .threads = threads, .int8 = int8 != 0};
    return hvt_run_in_child(isa_child, &a, why, size);
}
