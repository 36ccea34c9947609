/*
 * Archive batches for the hviske command line (docs/SCALING.md, "Archive
 * batches"): the list of inputs (--files-from), the share of it one task
 * of a scheduler's array takes (--shard, or the scheduler's environment),
 * and the run summary (--summary).
 *
 * Shards go by position: entry i of the list (counting from 0, blank
 * lines not counted) belongs to shard i mod N, so every entry is in
 * exactly one of the N shards, the shards differ in size by at most one,
 * and a list sorted by date or size spreads evenly over them.
 */
#ifndef HV_TOOLS_BATCH_H
#define HV_TOOLS_BATCH_H

#include <stddef.h>

/* The longest line of a list, in bytes without the line break: PATH_MAX
 * on Linux, the longest path a file can be opened by. */
enum { HVT_LIST_MAX_LINE = 4096 };

/*
 * Reads a list of inputs: one path per line, from the file `name`, or
 * from standard input when name is "-" (a pipe, a FIFO or process
 * substitution are read as they come). A line ends at "\n"; one "\r"
 * before it is dropped (lists written on Windows); empty lines are
 * skipped; everything else, spaces included, is the path, relative to the
 * current directory unless it starts with "/". A last line without "\n"
 * counts. Refused, with err saying where ("LIST:LINE: ..."): a NUL byte,
 * a line longer than HVT_LIST_MAX_LINE, a line "-" (standard input cannot
 * be listed), a read error, a list without entries. On success *paths
 * (*n of them, each malloc'ed, freed with hvt_list_free) and 0; else -1.
 */
int hvt_read_list(const char *name, char ***paths, int *n, char *err, size_t err_size);
void hvt_list_free(char **paths, int n);

/* One task's share of the inputs: shard k of n (0 <= k < n), and where
 * it came from ("--shard", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"). */
typedef struct hvt_shard {
    int k, n;
    const char *source;
} hvt_shard;

/* --shard K/N into the hvt_shard at value: K and N decimal integers,
 * N >= 1, K < N; 0 if valid. */
int hvt_parse_shard(const char *arg, void *value);

/* Whether entry i of the list belongs to shard s. */
int hvt_shard_has(const hvt_shard *s, long i);

/*
 * The shard from a scheduler's environment, for a run without --shard:
 *   - Slurm job arrays: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT
 *     (required with it), SLURM_ARRAY_TASK_MIN (default 0),
 *     SLURM_ARRAY_TASK_STEP (default 1) and, when set, SLURM_ARRAY_TASK_MAX
 *     to check that the array is MIN..MAX in steps of STEP:
 *     k = (ID - MIN) / STEP, n = COUNT;
 *   - else Kubernetes Indexed Jobs: k = JOB_COMPLETION_INDEX, n =
 *     count (--shard-count) when > 0, else the value of the variable named
 *     count_env (--shard-count-env) when not NULL; one of them is needed.
 * count or count_env given without either index in the environment is an
 * error too (sharding was asked for, but the task's index is missing), as
 * is a count that contradicts SLURM_ARRAY_TASK_COUNT. Returns 1 with *s
 * filled, 0 when the environment names no shard, -1 with err filled.
 */
int hvt_shard_from_env(int count, const char *count_env, hvt_shard *s, char *err, size_t err_size);

/* If two of s[0..n-1] are equal, *a < *b are the positions of the first
 * such pair in sorted order and the result is 1; 0 when all differ; -1
 * when out of memory. O(n log n). */
int hvt_first_duplicate(char *const *s, int n, int *a, int *b);

/*
 * The run summary (--summary FILE): JSON Lines, one object per input of
 * the task's shard, in input order, each written with one write() to FILE
 * opened with O_APPEND, as soon as the input is done:
 *   {"input": "a.wav", "output": "out/a.txt", "status": "ok",
 *    "error": null, "audio_seconds": 12.48, "processing_seconds": 0.731}
 * status is "ok", "skipped" (--skip-existing found the output) or
 * "error" (error: the message printed on standard error, without the
 * "hviske: " in front); "output" only with --output-dir; audio_seconds
 * null when the audio was not read. Lines are appended, so a resubmitted
 * task adds to its earlier lines.
 */
/* Opens (creates) FILE for appending; the descriptor, or -1 with err. */
int hvt_summary_open(const char *path, char *err, size_t err_size);
/* Appends one line; audio_s < 0 writes null, error NULL writes null. 0,
 * or -1 with errno set (ENOMEM when out of memory). */
int hvt_summary_write(int fd, const char *input, const char *output, const char *status,
                      const char *error, double audio_s, double processing_s);

#endif /* HV_TOOLS_BATCH_H */
