/* Persistent worker threads for parallel-for jobs. Workers sleep on a
 * condition variable between jobs; tasks are handed out through an atomic
 * counter so uneven tasks balance themselves. */
#include "kernels/threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct hv_pool {
    int n_threads;      /* including the caller */
    pthread_t *workers; /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    /* the current job, valid while busy */
    hv_task_fn fn;
    void *arg;
    int n_tasks;
    atomic_int next;         /* next task index to take */
    atomic_int running;      /* workers still inside the job */
    atomic_ulong generation; /* bumped for every job */
    atomic_int stop;
    /* hv_pool_scratch: n_threads + 2 buffers and their sizes */
    void **scratch;
    size_t *scratch_bytes;
    /* hv_pool_set_compute */
    int bf16;
    struct hv_onednn *dnn;
};

/* Polls before sleeping: a decoder step is ~100 short jobs, and a futex
 * sleep and wake-up for each cost about a tenth of the step. The spin is
 * a few tens of microseconds, so idle pools still sleep. */
#define SPIN_ROUNDS 4000

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) && defined(__GNUC__)
    __asm__ volatile("yield");
#endif
}

int hv_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void run_tasks(hv_pool *p) {
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_tasks) break;
        p->fn(p->arg, i, p->n_tasks);
    }
}

static void *worker_main(void *arg) {
    hv_pool *p = arg;
    unsigned long seen = 0;
    for (;;) {
        for (int i = 0;
             i < SPIN_ROUNDS && atomic_load(&p->generation) == seen && !atomic_load(&p->stop); i++)
            cpu_relax();
        if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = atomic_load(&p->generation);
        run_tasks(p);
        if (atomic_fetch_sub(&p->running, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

hv_pool *hv_pool_new(int n_threads) {
    if (n_threads <= 0) n_threads = hv_cpu_count();
    hv_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    atomic_init(&p->running, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->stop, 0);
    p->scratch = calloc((size_t)n_threads + 2, sizeof *p->scratch);
    p->scratch_bytes = calloc((size_t)n_threads + 2, sizeof *p->scratch_bytes);
    if (!p->scratch || !p->scratch_bytes) goto fail;
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) goto fail;
        for (int i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
                p->n_threads = i + 1; /* join only those that started */
                goto fail;
            }
        }
    }
    return p;
fail:
    hv_pool_free(p);
    return NULL;
}

void hv_pool_free(hv_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->workers && i < p->n_threads - 1; i++) pthread_join(p->workers[i], NULL);
    free(p->workers);
    for (int i = 0; p->scratch && i <= p->n_threads + 1; i++) free(p->scratch[i]);
    free(p->scratch);
    free(p->scratch_bytes);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int hv_pool_size(const hv_pool *p) { return p ? p->n_threads : 1; }

void hv_pool_set_compute(hv_pool *p, int bf16, struct hv_onednn *dnn) {
    p->bf16 = bf16 != 0;
    p->dnn = dnn;
}
int hv_pool_bf16(const hv_pool *p) { return p ? p->bf16 : 0; }
struct hv_onednn *hv_pool_onednn(const hv_pool *p) {
    return p ? p->dnn : NULL;
}

void *hv_pool_scratch(hv_pool *p, int slot, size_t bytes) {
    if (!p || slot < 0 || slot > p->n_threads + 1) return NULL;
    if (p->scratch_bytes[slot] < bytes) {
        void *buf = NULL;
        if (posix_memalign(&buf, 64, bytes) != 0) return NULL;
        free(p->scratch[slot]);
        p->scratch[slot] = buf;
        p->scratch_bytes[slot] = bytes;
    }
    return p->scratch[slot];
}

void hv_pool_run(hv_pool *p, int n_tasks, hv_task_fn fn, void *arg) {
    if (n_tasks <= 0) return;
    if (!p || p->n_threads == 1 || n_tasks == 1) {
        for (int i = 0; i < n_tasks; i++) fn(arg, i, n_tasks);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    atomic_store(&p->running, p->n_threads - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_tasks(p);

    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->running) > 0; i++) cpu_relax();
    if (atomic_load(&p->running) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->running) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
