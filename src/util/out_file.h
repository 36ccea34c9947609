/* Output files written through, never over: the one rule of every writer
 * (hviske's -o, --output-dir and --summary, hviske-quantize's checkpoint,
 * espeak-words' files).
 *
 * - A regular file (or a name that does not exist yet) is replaced
 *   atomically: the output goes to a temporary file beside it, is synced,
 *   and is renamed onto it when complete, so the file is there whole or
 *   not at all.
 * - A symlink is followed: the temporary file goes beside the file the
 *   link finally names, and the rename lands there, so the link survives
 *   (a dangling link's target is created).
 * - Anything else (a character device such as /dev/null, a FIFO, a
 *   socket, /dev/stdout and other /proc/self/fd links) is written in
 *   place: opened (a socket connected), written, closed; no temporary
 *   file, no rename. A FIFO is opened as a shell opens one: the call
 *   waits for a reader.
 *
 * Self-contained (POSIX only, no other part of the library), so programs
 * outside the library compile it too. Errors are errno values; callers
 * name the file in their messages. Writes to a FIFO or socket whose reader
 * went away fail with EPIPE while SIGPIPE is ignored or blocked (the
 * programs ignore it; hv_out_write, hv_out_commit and hv_out_abort block
 * it in the calling thread while they write). */
#ifndef HV_OUT_FILE_H
#define HV_OUT_FILE_H

#include <limits.h>
#include <signal.h>
#include <stdio.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct hv_out_file {
    FILE *f;                         /* write here; NULL when closed */
    int in_place;                    /* 1: f is the target itself */
    char target[PATH_MAX];           /* the file the rename lands on */
    char tmp[PATH_MAX + 32];         /* the temporary file ("" in place) */
    volatile sig_atomic_t tmp_there; /* tmp may exist: a signal handler
                                        may unlink(tmp) */
    int err;                         /* the first write error, 0: none */
} hv_out_file;

/* Opens path for writing by the rule above; 0, or an errno value (of->f
 * NULL, nothing created). A directory is EISDIR. */
int hv_out_open(hv_out_file *of, const char *path);

/* fwrite of n bytes to of->f with SIGPIPE blocked in the calling thread
 * (a reader gone is EPIPE); 0 or an errno value. Writing to of->f
 * directly works too, where SIGPIPE is ignored. */
int hv_out_write(hv_out_file *of, const void *buf, size_t n);

/* fflush of of->f (in place, a FIFO's reader gets what was written so
 * far), SIGPIPE blocked as hv_out_write does; 0 or an errno value, which
 * hv_out_commit reports too. */
int hv_out_flush(hv_out_file *of);

/* Flushes and closes; for a temporary file also syncs it and renames it
 * onto the target. 0, or an errno value (the temporary file removed, the
 * target as it was; in place, what was written stays written). */
int hv_out_commit(hv_out_file *of);

/* Closes and drops the temporary file; the target is left as it was
 * (in place: closed, with what was written). */
void hv_out_abort(hv_out_file *of);

/* Opens path for writing in place with open(2)'s flags (O_WRONLY, maybe
 * O_CREAT, O_APPEND, O_TRUNC; O_CLOEXEC is added): a socket is
 * connected instead. Blocks on a FIFO until it has a reader. The
 * descriptor, or -1 with errno. */
int hv_out_open_fd(const char *path, int flags);

#endif
