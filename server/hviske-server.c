/*
 * hviske-server: transcription over HTTP with OpenAI's API, built on the
 * public API (hviske.h) and libmicrohttpd. docs/SERVER.md is its
 * reference (options, endpoints, limits, shutdown) and its "Design" the
 * threads, the queue and the files. This file is main: it loads the
 * model, listens, starts the workers and the HTTP side, and on SIGINT or
 * SIGTERM drains and stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "hviske.h"
#include "server.h"
#include "server_http.h"
#include "server_queue.h"
#include "checkpoint.h"
#include "cmdline.h"

#define MIB ((size_t)1 << 20)

/* A listening TCP socket on host:port; -1 with a message on failure.
 * *bound gets the port actually bound, *ipv6 whether it is IPv6. */
static int listen_on(const char *host, int port, int *bound, int *ipv6) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "hviske-server: %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (a->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
            *ipv6 = a->ai_family == AF_INET6;
            break;
        }
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        fprintf(stderr, "hviske-server: cannot listen on %s port %d: %s\n", host, port,
                strerror(err));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *bound = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *bound = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                          : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* SIGINT and SIGTERM reach the main thread through a pipe: their handler
 * writes the signal's number to it. Not sigwait alone: threads that
 * libraries start before main (OpenBLAS's pool) do not block the signals,
 * so one that came while the main thread was not waiting in sigwait went
 * to such a thread and its default action killed the server mid-drain.
 * The handler runs on whichever thread the kernel picks. The pipe stays
 * open until exit, so a late handler never writes to a reused descriptor. */
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t n = write(signal_pipe[1], &b, 1); /* async-signal-safe */
    (void)n;
    errno = saved;
}

/* The pipe and the handlers; -1 with a message on failure. */
static int catch_signals(void) {
    if (pipe(signal_pipe) != 0) {
        fprintf(stderr, "hviske-server: cannot make a pipe: %s\n", strerror(errno));
        return -1;
    }
    for (int i = 0; i < 2; i++) fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC);
    fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK); /* a handler never blocks */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return 0;
}

/* The next signal taken within timeout_ms (-1: no limit), or 0. */
static int next_signal(int timeout_ms) {
    struct pollfd p = {.fd = signal_pipe[0], .events = POLLIN};
    unsigned char b;
    if (poll(&p, 1, timeout_ms) > 0 && read(signal_pipe[0], &b, 1) == 1) return b;
    return 0;
}

/* Waits until every request begun has completed. A signal in the meantime
 * answers the queued requests with 503 and stops waiting for uploads: once
 * every accepted request's answer has gone out in full (none waits for a
 * worker, none is being sent: n_suspended and n_answering are 0), uploads
 * still coming in get a second, and the daemon is stopped. */
static void wait_idle(server *s) {
    int cancelled = 0;
    double t_free = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        long active = s->active;
        int pending = s->n_suspended + s->n_answering; /* accepted, not sent */
        pthread_mutex_unlock(&s->mu);
        if (active == 0) return;
        /* every accepted request's answer is sent in full, whatever the
         * machine's load; then a second for uploads still coming in */
        if (cancelled && pending == 0) {
            if (t_free == 0)
                t_free = hvt_now_s();
            else if (hvt_now_s() - t_free > 1.0)
                return;
        }
        if (next_signal(50) > 0 && !cancelled) {
            fprintf(stderr, "hviske-server: second signal: answering the "
                            "queued requests with 503\n");
            srv_cancel_waiting(s);
            cancelled = 1;
        }
    }
}

int main(int argc, char **argv) {
    srv_options o;
    int rc = srv_parse_options(argc, argv, &o);
    if (rc >= 0) return rc;

    /* The threads started here block SIGINT and SIGTERM (they inherit the
     * mask), so their system calls are not interrupted; the main thread
     * takes them once everything has started (catch_signals). */
    if (catch_signals() != 0) return 1;
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    server s;
    memset(&s, 0, sizeof s);
    s.o = &o;
    s.max_file = (size_t)o.max_upload_mb * MIB;
    s.max_body = s.max_file + MIB; /* the other fields and the framing */
    s.capacity = o.n_workers + o.queue;
    s.avg_job_s = 1.0;
    s.created = time(NULL);
    s.id_seed = srv_request_id_seed();
    s.access_log = o.quiet ? NULL : stderr;
    pthread_mutex_init(&s.mu, NULL);
    pthread_rwlock_init(&s.model_lock, NULL);
    pthread_cond_init(&s.work, NULL);
    pthread_cond_init(&s.answered, NULL);
    int listen_fd = -1, n_started = 0, port = 0, ipv6 = 0;
    MHD_socket q = MHD_INVALID_SOCKET; /* the listening socket, quiesced */
    rc = 1;

    char err[1024] = "";
    if (o.access_log && !o.quiet) {
        if (!(s.access_log = fopen(o.access_log, "a"))) {
            fprintf(stderr, "hviske-server: %s: %s\n", o.access_log, strerror(errno));
            goto done;
        }
        fcntl(fileno(s.access_log), F_SETFD, FD_CLOEXEC);
    }
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = o.n_threads;
    mp.weight_type = o.weight_type;
    mp.compute = o.compute;
    if (hvt_model_dir_hint(o.model_dir, err, sizeof err)) {
        fprintf(stderr, "hviske-server: %s\n", err);
        goto done;
    }
    double t_load = hvt_now_s();
    hv_status st = hv_model_load(o.model_dir, &mp, &s.model, err, sizeof err);
    if (st != HV_OK) {
        fprintf(stderr, "hviske-server: %s\n", err[0] ? err : hv_status_name(st));
        goto done;
    }
    s.metrics.model_load_s = hvt_now_s() - t_load;
    s.model_dir = o.model_dir;
    s.mp = mp;
    s.rate = hv_model_sample_rate(s.model);
    if (hvt_chunking_uses_vad(o.tp.chunking) &&
        hvt_load_vad(o.vad_model, &s.vad, err, sizeof err) != HV_OK) {
        fprintf(stderr, "hviske-server: %s\n", err);
        goto done;
    }
    s.base = hv_transcribe_default_params();
    if (o.language && !hvt_model_has_language(s.model, o.language)) {
        char list[512];
        size_t w = 0;
        for (int i = 0; i < hv_model_n_languages(s.model) && w < sizeof list; i++)
            w += (size_t)snprintf(list + w, sizeof list - w, "%s%s", i ? ", " : "",
                                  hv_model_language(s.model, i));
        fprintf(stderr, "hviske-server: -l %s: %s; give one of the model's languages: %s\n",
                o.language,
                strcmp(o.language, "auto") == 0
                    ? "there is no language detection (the model is told the language)"
                    : "not a language of this model",
                list);
        goto done;
    }
    s.base = o.tp;
    s.base.language = o.language;
    s.base.vad = s.vad;
    s.workers = calloc((size_t)o.n_workers, sizeof *s.workers);
    if (!s.workers) {
        fputs("hviske-server: out of memory\n", stderr);
        goto done;
    }
    for (int i = 0; i < o.n_workers; i++) {
        s.workers[i].s = &s;
        char err[1024];
        if (hv_context_new(s.model, o.n_threads, &s.workers[i].ctx, err, sizeof err)) {
            fprintf(stderr, "hviske-server: %s\n", err);
            goto done;
        }
    }
    listen_fd = listen_on(o.host, o.port, &port, &ipv6);
    if (listen_fd < 0) goto done;
    for (; n_started < o.n_workers; n_started++) {
        worker *w = &s.workers[n_started];
        if (pthread_create(&w->tid, NULL, srv_worker_main, w) != 0) {
            fputs("hviske-server: cannot start a worker thread\n", stderr);
            goto done;
        }
    }
    if (srv_http_start(&s, listen_fd, ipv6) != 0) goto done;
    fprintf(stderr,
            "hviske-server: listening on http://%s%s%s:%d (model %s, "
            "%d worker%s x %d thread%s, queue %d)\n",
            ipv6 ? "[" : "", o.host, ipv6 ? "]" : "", port, o.model_dir, o.n_workers,
            o.n_workers == 1 ? "" : "s", o.n_threads, o.n_threads == 1 ? "" : "s", o.queue);
    fflush(stderr);

    pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
    int sig;
    while (!(sig = next_signal(-1)))
        ;
    fprintf(stderr, "hviske-server: %s: finishing the requests begun\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stderr);
    pthread_mutex_lock(&s.mu);
    s.draining = 1; /* /ready: 503; new work: 503 with Connection: close */
    pthread_mutex_unlock(&s.mu);
    /* Connections are still accepted while draining, so a balancer's
     * health check reads /ready's 503 (and a retry of new work goes to
     * another replica) instead of a refused connection; requests begun
     * now are not waited for. */
    wait_idle(&s);
    /* Stop accepting: MHD no longer polls the listening socket (ours to
     * close after the stop), and shutting it down makes the kernel refuse
     * new connections instead of queueing them unanswered. */
    q = MHD_quiesce_daemon(s.mhd);
    if (q != MHD_INVALID_SOCKET) shutdown(q, SHUT_RDWR);
    rc = 0;

done:
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_broadcast(&s.work);
    pthread_mutex_unlock(&s.mu);
    for (int i = 0; i < n_started; i++) pthread_join(s.workers[i].tid, NULL);
    if (!s.mhd && listen_fd >= 0) close(listen_fd); /* the daemon never took it */
    srv_http_stop(&s); /* closes the listening socket unless quiesced */
    if (q != MHD_INVALID_SOCKET) close(q);
    for (int i = 0; s.workers && i < o.n_workers; i++) hv_context_free(s.workers[i].ctx);
    free(s.workers);
    hv_vad_free(s.vad);
    hv_model_free(s.model);
    if (s.access_log && s.access_log != stderr) fclose(s.access_log);
    pthread_cond_destroy(&s.work);
    pthread_cond_destroy(&s.answered);
    pthread_mutex_destroy(&s.mu);
    pthread_rwlock_destroy(&s.model_lock);
    free(s.model_dir_owned);
    if (rc == 0) fputs("hviske-server: stopped\n", stderr);
    return rc;
}
