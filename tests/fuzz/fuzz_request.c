/* libFuzzer target: the server's HTTP request path, whole.
 *
 * The server's HTTP side (server/server_http.c) is compiled into this
 * target, its queue and workers (server_queue.c) linked, and it is
 * served by libmicrohttpd as in the server (a thread per connection, one
 * worker transcribing with the model $HV_FUZZ_MODEL), without a
 * listening socket: each input is the bytes a client sends on one
 * connection (MHD_add_connection of one end of a socket pair). The client
 * sends them all, half-closes and reads until the server closes, so
 * everything runs: header checks and refusals, the multipart parser and the
 * form fields, the queue, the worker's decoding and transcription of the
 * uploaded audio, the response formats. Small limits (1 MiB uploads, 5 s
 * of audio) keep each run short. */
#include "../../server/server_http.c"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static server fz;
static srv_options fo;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *dir = getenv("HV_FUZZ_MODEL");
    if (!dir) {
        fputs("fuzz_request: set HV_FUZZ_MODEL to a model directory\n", stderr);
        exit(1);
    }
    char *args[] = {"hviske-server",
                    "-m",
                    (char *)dir,
                    "-q",
                    "-t",
                    "1",
                    "--max-upload-mb",
                    "1",
                    "--max-audio-seconds",
                    "5",
                    "--chunking",
                    "none",
                    "--timeout",
                    "2",
                    "--request-timeout",
                    "5",
                    "--api-key",
                    "k",
                    NULL};
    int n = (int)(sizeof args / sizeof *args) - 1;
    if (srv_parse_options(n, args, &fo) >= 0) exit(1);
    signal(SIGPIPE, SIG_IGN);
    server *s = &fz;
    s->o = &fo;
    s->max_file = (size_t)fo.max_upload_mb * MIB;
    s->max_body = s->max_file + MIB;
    s->capacity = fo.n_workers + fo.queue;
    s->avg_job_s = 1.0;
    pthread_mutex_init(&s->mu, NULL);
    pthread_rwlock_init(&s->model_lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->answered, NULL);
    char err[1024];
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 1;
    if (hv_model_load(dir, &mp, &s->model, err, sizeof err) != HV_OK) {
        fprintf(stderr, "fuzz_request: %s\n", err);
        exit(1);
    }
    s->model_dir = fo.model_dir;
    s->mp = mp;
    s->rate = hv_model_sample_rate(s->model);
    s->base = fo.tp; /* the parameter options, --chunking none among them */
    s->workers = calloc(1, sizeof *s->workers);
    if (!s->workers) exit(1);
    s->workers[0].s = s;
    if (hv_context_new(s->model, 1, &s->workers[0].ctx, NULL, 0)) exit(1);
    if (pthread_create(&s->workers[0].tid, NULL, srv_worker_main, &s->workers[0]) != 0) exit(1);
    s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                  MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET,
                              0, NULL, NULL, on_request, s, MHD_OPTION_CONNECTION_LIMIT, 8u,
                              MHD_OPTION_CONNECTION_TIMEOUT, 2u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                              (size_t)CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->mhd) {
        fputs("fuzz_request: cannot start the daemon\n", stderr);
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(0x7f000001);
    if (MHD_add_connection(fz.mhd, sv[0], (const struct sockaddr *)&sin, sizeof sin) != MHD_YES) {
        close(sv[1]);
        return 0; /* MHD closed sv[0] */
    }
    fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    size_t sent = 0;
    int wr_open = 1;
    char buf[65536];
    for (;;) {
        if (wr_open && sent == size) {
            shutdown(sv[1], SHUT_WR);
            wr_open = 0;
        }
        struct pollfd p = {sv[1], (short)(POLLIN | (wr_open ? POLLOUT : 0)), 0};
        if (poll(&p, 1, 30000) <= 0) abort(); /* the server hangs */
        if (p.revents & POLLIN || p.revents & (POLLHUP | POLLERR)) {
            ssize_t r = recv(sv[1], buf, sizeof buf, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) break;
        }
        if (wr_open && (p.revents & POLLOUT)) {
            ssize_t w = send(sv[1], data + sent, size - sent, MSG_NOSIGNAL);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                wr_open = 0; /* the server stopped reading: read its answer */
        }
    }
    close(sv[1]);
    return 0;
}
