/* The thread pool on a busy machine: a job the caller can run alone never
 * waits for a worker that was not scheduled. The worker is held where the
 * scheduler would leave it (in a signal handler that blocks on a pipe),
 * before the pool's first job, so it is never inside a job; then every
 * job must complete on the caller alone. A pool that waited for its
 * workers would hang here: the alarm ends the test as a failure. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/threads.h"
#include "testlib.h"

#if defined(__linux__) && defined(SYS_tgkill) && defined(SYS_gettid)
static int hold[2];     /* the handler reads hold[0] until the test writes */
static atomic_int held; /* threads inside the handler */

static void hold_here(int sig) {
    (void)sig;
    atomic_fetch_add(&held, 1);
    char c;
    while (read(hold[0], &c, 1) < 0) {}
    atomic_fetch_sub(&held, 1);
}

static void add_task(void *arg, int task, int n_tasks) {
    (void)n_tasks;
    atomic_fetch_add(&((atomic_int *)arg)[task], 1);
}

/* Sends SIGUSR1 to every thread of the process but the caller; returns
 * how many. */
static int hold_other_threads(void) {
    long self = syscall(SYS_gettid);
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long tid = atol(e->d_name);
        if (tid > 0 && tid != self && syscall(SYS_tgkill, (long)getpid(), tid, SIGUSR1) == 0) n++;
    }
    if (d) closedir(d);
    return n;
}

static void test_stalled_worker(void) {
    CHECK(pipe(hold) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = hold_here;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    hv_pool *p = hv_pool_new(2);
    CHECK(p != NULL);
    int n = hold_other_threads();
    CHECK_MSG(n >= 1, "the worker was signalled (%d threads)", n);
    while (atomic_load(&held) < n) {}
    alarm(60);
    int ok = 1;
    for (int round = 0; round < 200; round++) {
        atomic_int hits[8];
        for (int i = 0; i < 8; i++) atomic_init(&hits[i], 0);
        hv_pool_run(p, 8, add_task, hits);
        for (int i = 0; i < 8; i++) ok &= atomic_load(&hits[i]) == 1;
    }
    alarm(0);
    CHECK_MSG(ok, "200 jobs ran on the caller alone while the worker was held");
    CHECK(write(hold[1], "xxxxxxxx", (size_t)n) == n);
    while (atomic_load(&held) > 0) {}
    /* the released worker joins the next jobs */
    atomic_int hits[64];
    for (int i = 0; i < 64; i++) atomic_init(&hits[i], 0);
    hv_pool_run(p, 64, add_task, hits);
    int all = 1;
    for (int i = 0; i < 64; i++) all &= atomic_load(&hits[i]) == 1;
    CHECK_MSG(all, "every task once after the worker's release");
    hv_pool_free(p);
    close(hold[0]);
    close(hold[1]);
}
#endif

int main(void) {
#if defined(__linux__) && defined(SYS_tgkill) && defined(SYS_gettid)
    test_stalled_worker();
#else
    printf("no tgkill: the stalled-worker test needs Linux\n");
#endif
    TEST_END();
}
