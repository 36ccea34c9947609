/* A fixed pool of worker threads running parallel-for jobs. One pool per
 * context; the calling thread takes part in every job. */
#ifndef HV_THREADS_H
#define HV_THREADS_H

#include <stddef.h>

typedef struct hv_pool hv_pool;

/* Work item: called once per task index in [0, n_tasks). */
typedef void (*hv_task_fn)(void *arg, int task, int n_tasks);

/* Flops below which a job runs on the caller alone: waking a worker and
 * waiting for it costs more than the half it would take over. */
#define HV_POOL_MIN_FLOPS 2e5

/* n_threads <= 0 means the number of online cores. NULL when out of memory
 * or threads cannot be created. */
hv_pool *hv_pool_new(int n_threads);
void hv_pool_free(hv_pool *pool);

int hv_pool_size(const hv_pool *pool);

/* Runs fn(arg, i, n_tasks) for every i, spread over the threads, and
 * returns when all are done. pool NULL runs everything on the caller. */
void hv_pool_run(hv_pool *pool, int n_tasks, hv_task_fn fn, void *arg);

/* The same for a short job (well under a millisecond: the decoder's
 * products and attention of a step): after a worker held such a job up
 * for longer than it was worth, as on a machine where other processes
 * take the cores, the next short jobs run on the caller alone for a while
 * (threads.c, "back-off"). The same results either way. */
void hv_pool_run_short(hv_pool *pool, int n_tasks, hv_task_fn fn, void *arg);

/* Scratch memory owned by the pool: one buffer per slot, slots 0 ..
 * hv_pool_size(pool) + 1 (task indices, one more for a job's shared data,
 * and HV_POOL_SLOT_INPUT(pool) for the input a caller prepares for a job),
 * at least `bytes` long and 64-byte aligned. A slot keeps its largest size
 * until the pool is freed, so repeated jobs neither allocate nor fault in
 * fresh pages. The contents are not kept when the slot grows. Each slot is
 * for one task at a time: a job with at most hv_pool_size(pool) tasks gives
 * task i slot i. NULL when out of memory, for a NULL pool or a slot out of
 * range. */
void *hv_pool_scratch(hv_pool *pool, int slot, size_t bytes);

/* The slot of a job's prepared input (the bf16-rounded activations of a
 * product, engine.c): never a task's nor a job's shared slot. */
#define HV_POOL_SLOT_INPUT(pool) (hv_pool_size(pool) + 1)

int hv_cpu_count(void);

#endif
