/* Output files written through, never over (hv_out_file, hviske_output.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "hviske_output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { MAX_LINKS = 40 }; /* as the kernel's ELOOP limit */

/* dir of path (".", "/" or the part before the last slash) into out. */
static void dir_of(const char *path, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* 1 when dir lies in /proc (where /dev/stdout and /dev/fd/N lead: links
 * to open descriptors, not to files a rename could replace). */
static int in_proc(const char *dir) {
    char real[PATH_MAX];
    return realpath(dir, real) && (strcmp(real, "/proc") == 0 || !strncmp(real, "/proc/", 6));
}

/* Follows path's symlinks (each hop, not the folders above it) to the file
 * a write lands on, into out. *proc is set when a hop lies in /proc. 0 or
 * an errno value. */
static int resolve(const char *path, char *out, size_t cap, int *proc) {
    *proc = 0;
    if (snprintf(out, cap, "%s", path) >= (int)cap) return ENAMETOOLONG;
    for (int hops = 0;; hops++) {
        char dir[PATH_MAX];
        dir_of(out, dir, sizeof dir);
        if (in_proc(dir)) {
            *proc = 1;
            return 0;
        }
        struct stat st;
        if (lstat(out, &st) != 0) return errno == ENOENT ? 0 : errno; /* a new file */
        if (!S_ISLNK(st.st_mode)) return 0;
        if (hops == MAX_LINKS) return ELOOP;
        char link[PATH_MAX];
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n < 0) return errno;
        link[n] = '\0';
        int w = link[0] == '/' || !strcmp(dir, ".") ? snprintf(out, cap, "%s", link)
                                                    : snprintf(out, cap, "%s/%s", dir, link);
        if (w < 0 || (size_t)w >= cap) return ENAMETOOLONG;
    }
}

int hv_out_open_fd(const char *path, int flags) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        if (strlen(path) >= sizeof a.sun_path) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(a.sun_path, path, strlen(path));
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
        return fd;
    }
    int fd;
    do fd = open(path, flags | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR); /* a FIFO waits for its reader */
    return fd;
}

int hv_out_open(hv_out_file *of, const char *path) {
    of->f = NULL;
    of->in_place = 0;
    of->tmp[0] = '\0';
    of->tmp_there = 0;
    of->err = 0;
    int proc, err = resolve(path, of->target, sizeof of->target, &proc);
    if (err) return err;
    struct stat st;
    int exists = stat(of->target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) return EISDIR;
    if (proc || (exists && !S_ISREG(st.st_mode))) {
        /* in place; O_APPEND for /dev/stdout and friends: a descriptor the
         * shell opened with >> keeps what it holds */
        int fd = hv_out_open_fd(path, O_WRONLY | (proc ? O_APPEND : 0));
        if (fd < 0) return errno;
        if (!(of->f = fdopen(fd, "w"))) {
            err = errno;
            close(fd);
            return err;
        }
        of->in_place = 1;
        return 0;
    }
    char dir[PATH_MAX];
    dir_of(of->target, dir, sizeof dir);
    const char *slash = strrchr(of->target, '/');
    const char *base = slash ? slash + 1 : of->target;
    int n = snprintf(of->tmp, sizeof of->tmp, "%s/.%s.hviske-XXXXXX", dir, base);
    if (n < 0 || (size_t)n >= sizeof of->tmp) {
        of->tmp[0] = '\0';
        return ENAMETOOLONG;
    }
    of->tmp_there = 1; /* before mkstemp fills in the name: see the header */
    int fd = mkstemp(of->tmp);
    if (fd < 0) {
        err = errno;
        of->tmp_there = 0;
        return err;
    }
    /* mkstemp makes it 0600; give the file the usual 0666 & ~umask */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(of->f = fdopen(fd, "w"))) {
        err = errno;
        close(fd);
        unlink(of->tmp);
        of->tmp_there = 0;
        return err;
    }
    return 0;
}

/* SIGPIPE blocked in the calling thread while it writes: a reader gone is
 * EPIPE, not the death of the process. pipe_unblock takes back a SIGPIPE
 * that the writes raised, unless one was pending before. */
typedef struct pipe_guard {
    sigset_t set, old;
    int blocked, was_pending;
} pipe_guard;

static void pipe_block(pipe_guard *g) {
    sigemptyset(&g->set);
    sigaddset(&g->set, SIGPIPE);
    g->blocked = pthread_sigmask(SIG_BLOCK, &g->set, &g->old) == 0;
    sigset_t pending;
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static void pipe_unblock(pipe_guard *g) {
    if (!g->blocked) return;
    sigset_t pending;
    struct timespec zero = {0, 0};
    if (!g->was_pending && !sigismember(&g->old, SIGPIPE) && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE))
        sigtimedwait(&g->set, NULL, &zero);
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int hv_out_write(hv_out_file *of, const void *buf, size_t n) {
    if (!of->f) return EBADF;
    if (n == 0) return 0;
    pipe_guard g;
    pipe_block(&g);
    errno = 0;
    int err = fwrite(buf, 1, n, of->f) == n ? 0 : errno ? errno : EIO;
    pipe_unblock(&g);
    if (err && !of->err) of->err = err;
    return err;
}

int hv_out_flush(hv_out_file *of) {
    if (!of->f) return EBADF;
    pipe_guard g;
    pipe_block(&g);
    errno = 0;
    int err = fflush(of->f) == 0 ? 0 : errno ? errno : EIO;
    pipe_unblock(&g);
    if (err && !of->err) of->err = err;
    return err;
}

int hv_out_commit(hv_out_file *of) {
    FILE *f = of->f;
    if (!f) return EBADF;
    pipe_guard g;
    pipe_block(&g);
    int err = of->err;
    errno = 0;
    if (err)
        ;
    else if (fflush(f) != 0 || ferror(f))
        err = errno ? errno : EIO;
    else if (!of->in_place && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        err = errno;
    of->f = NULL;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    pipe_unblock(&g);
    if (of->in_place) return err;
    if (!err && rename(of->tmp, of->target) != 0) err = errno;
    if (err) unlink(of->tmp);
    of->tmp_there = 0;
    return err;
}

void hv_out_abort(hv_out_file *of) {
    if (!of->f) return;
    pipe_guard g;
    pipe_block(&g);
    fclose(of->f);
    pipe_unblock(&g);
    of->f = NULL;
    if (!of->in_place) unlink(of->tmp);
    of->tmp_there = 0;
}
