/* A fixed pool of worker threads running parallel-for jobs. One pool per
 * context; the calling thread takes part in every job. */
#ifndef HV_THREADS_H
#define HV_THREADS_H

typedef struct hv_pool hv_pool;

/* Work item: called once per task index in [0, n_tasks). */
typedef void (*hv_task_fn)(void *arg, int task, int n_tasks);

/* n_threads <= 0 means the number of online cores. NULL when out of memory
 * or threads cannot be created. */
hv_pool *hv_pool_new(int n_threads);
void hv_pool_free(hv_pool *pool);

int hv_pool_size(const hv_pool *pool);

/* Runs fn(arg, i, n_tasks) for every i, spread over the threads, and
 * returns when all are done. pool NULL runs everything on the caller. */
void hv_pool_run(hv_pool *pool, int n_tasks, hv_task_fn fn, void *arg);

int hv_cpu_count(void);

#endif
