/* Persistent worker threads for parallel-for jobs. Workers sleep on a
 * condition variable between jobs; tasks are handed out through an atomic
 * counter so uneven tasks balance themselves.
 *
 * The caller waits for its job's tasks, never for workers: on a busy
 * machine a worker may not be scheduled for milliseconds, and a job the
 * caller ran alone must not wait for it to wake up and find nothing left.
 * So a worker enters a job (the `active` count) before it reads the job,
 * and the caller closes the pool to entrants while it writes the next
 * job, which waits only for workers that entered and are on their way
 * out. */
#include "kernels/threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct hv_pool {
    int n_threads;      /* including the caller */
    pthread_t *workers; /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake, done_cv;
    /* the current job: written only while the pool is closed, read only
     * by workers that entered it */
    hv_task_fn fn;
    void *arg;
    int n_tasks;
    atomic_int next;         /* next task index to take */
    atomic_int done;         /* tasks finished */
    atomic_int active;       /* workers inside the job, or CLOSED */
    atomic_ulong generation; /* bumped for every job */
    atomic_int stop;
    /* hv_pool_scratch: n_threads + 2 buffers and their sizes */
    void **scratch;
    size_t *scratch_bytes;
    /* the caller's back-off after a worker stalled it: jobs left to run
     * alone, and the length of the next stretch */
    int alone_left, backoff;
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

/* One round of a worker's spin between jobs: every 64th hands the core
 * to another runnable thread, so that on a busy machine a worker waiting
 * for work does not take the time its own caller needs (a process's
 * threads share one group's time under the kernel's autogroup
 * scheduling). The caller's own waits do not yield: its core is the one
 * the job needs back. */
static void worker_spin(int i) {
    if ((i & 63) == 63)
        sched_yield();
    else
        cpu_relax();
}

int hv_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* `active` while the caller writes a job: no worker may enter */
#define CLOSED (-1)

/* Takes and runs tasks until none is left; a worker (not the caller)
 * signals the caller when it finishes the job's last task. */
static void run_tasks(hv_pool *p, int worker) {
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_tasks) break;
        p->fn(p->arg, i, p->n_tasks);
        if (atomic_fetch_add(&p->done, 1) + 1 == p->n_tasks && worker) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* A worker enters the job in hand unless the caller is writing the next
 * one: 1 when it entered. */
static int enter(hv_pool *p) {
    int a = atomic_load(&p->active);
    while (a != CLOSED)
        if (atomic_compare_exchange_weak(&p->active, &a, a + 1)) return 1;
    return 0;
}

static void *worker_main(void *arg) {
    hv_pool *p = arg;
    unsigned long seen = 0;
    for (;;) {
        for (int i = 0;
             i < SPIN_ROUNDS && atomic_load(&p->generation) == seen && !atomic_load(&p->stop); i++)
            worker_spin(i);
        if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        if (!enter(p)) {
            cpu_relax(); /* the next job is being written: its generation follows */
            continue;
        }
        /* inside: the job cannot change until this worker leaves */
        seen = atomic_load(&p->generation);
        run_tasks(p, 1);
        atomic_fetch_sub(&p->active, 1);
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
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->next, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->active, 0);
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
    pthread_cond_destroy(&p->done_cv);
    free(p);
}

int hv_pool_size(const hv_pool *p) { return p ? p->n_threads : 1; }

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

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The back-off (docs/KERNELS.md, "A busy machine"): a caller that waited
 * for a worker's task longer than it worked itself, and over 1 ms (more
 * than a sleeping worker takes to wake), was
 * held up by a worker the scheduler took off its core in mid-task, as on
 * a machine with other busy processes; the next jobs run on the caller
 * alone, 64 at first and twice as many each time it happens again (up
 * to 4096, about 40 decoder steps), one fewer for each job that ran well. Every split gives the same bits,
 * so this changes the time, never a result. */
#define BACKOFF_FIRST 64
#define BACKOFF_MAX   4096
static void note_wait(hv_pool *p, double worked, double waited) {
    if (waited > 1e-3 && waited > worked) {
        p->backoff = p->backoff ? p->backoff * 2 : BACKOFF_FIRST;
        if (p->backoff > BACKOFF_MAX) p->backoff = BACKOFF_MAX;
        p->alone_left = p->backoff;
    } else if (p->backoff > 0) {
        p->backoff--;
    }
}

static void run_job(hv_pool *p, int n_tasks, hv_task_fn fn, void *arg, int short_job) {
    if (n_tasks <= 0) return;
    int alone = short_job && p && p->alone_left > 0;
    if (!p || p->n_threads == 1 || n_tasks == 1 || alone) {
        if (alone) p->alone_left--;
        for (int i = 0; i < n_tasks; i++) fn(arg, i, n_tasks);
        return;
    }
    /* close: wait for the workers still leaving the last job (they are
     * running, past its last task), then write this one */
    for (int i = 0, expect = 0; !atomic_compare_exchange_weak(&p->active, &expect, CLOSED);
         i++, expect = 0)
        cpu_relax();
    p->fn = fn;
    p->arg = arg;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    atomic_store(&p->done, 0);
    atomic_store(&p->active, 0);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    double t0 = short_job ? now_s() : 0;
    run_tasks(p, 0);
    double t1 = short_job ? now_s() : 0;

    /* wait for the tasks workers took, not for workers that took none */
    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->done) < n_tasks; i++) cpu_relax();
    if (atomic_load(&p->done) < n_tasks) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->done) < n_tasks) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    if (short_job) note_wait(p, t1 - t0, now_s() - t1);
}

void hv_pool_run(hv_pool *p, int n_tasks, hv_task_fn fn, void *arg) {
    run_job(p, n_tasks, fn, arg, 0);
}

void hv_pool_run_short(hv_pool *p, int n_tasks, hv_task_fn fn, void *arg) {
    run_job(p, n_tasks, fn, arg, 1);
}
