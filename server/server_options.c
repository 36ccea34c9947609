/* hviske-server's command line (server_options.h). */
#include "server_options.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server_whisper.h"
#include "cue_options.h"
#include "cmdline.h"

static const char PROG[] = "hviske-server";

static void usage(FILE *f) {
    fprintf(f, "Usage: hviske-server -m MODEL_DIR [options]\n"
               "Serves transcription over HTTP with OpenAI's API:\n"
               "POST /v1/audio/transcriptions, GET /v1/models, GET /health,\n"
               "GET /ready (503 when busy or draining), GET /metrics (Prometheus),\n"
               "and a web page at / for people.\n"
               "\n"
               "  -m, --model DIR          checkpoint directory\n");
    hvt_param_usage_as(f, 'l', "language", 27,
                       "for requests that name none (as whisper-server's -l)");
    fprintf(f, "      --host HOST          address to listen on (default 127.0.0.1)\n"
               "      --port PORT          TCP port, 0..65535 (default 8080; 0: any\n"
               "                           free port, printed at start)\n"
               "      --workers W          transcriptions at a time, 1..64 (default 1)\n"
               "  -t, --threads N          threads per worker, 1..256 (default: the\n"
               "                           cores divided among the workers)\n"
               "      --weight-type T      auto (default: the checkpoint's own type,\n"
               "                           read in place), f32, f16, bf16, q8_0 or\n"
               "                           q4_0 (as hviske's)\n"
               "      --compute MODE       auto (default: bf16 on a CPU with AMX or\n"
               "                           AMD's AVX512-BF16, Zen 4 and 5, and\n"
               "                           weights of 16 bits or fewer, else f32),\n"
               "                           f32 (token for token the f32 reference)\n"
               "                           or bf16\n"
               "      --queue Q            requests that may wait for a worker,\n"
               "                           0..4096 (default 16); beyond: 503\n"
               "      --max-beams N        the work budget of a request: decodings a\n"
               "                           chunk may run (beams at each temperature\n"
               "                           0, one draw above 0), 1..64 (default 16)\n"
               "      --max-upload-mb M    largest audio file in MiB, 1..4096\n"
               "                           (default 128: an hour of 16 kHz 16-bit\n"
               "                           mono WAV is 110 MiB)\n"
               "      --max-audio-seconds S  longest audio, S > 0 (default 3600)\n"
               "      --api-key KEY        require 'Authorization: Bearer KEY' on\n"
               "                           /v1/ paths (no control characters, no\n"
               "                           space or tab at either end)\n"
               "      --model-name NAME    the model id in /v1/models (default\n"
               "                           hviske)\n"
               "      --timeout S          close a connection idle for S seconds,\n"
               "                           1..86400 (default 30)\n"
               "      --request-timeout S  a request's body must be in within S\n"
               "                           seconds of its headers, 1..86400\n"
               "                           (default 600)\n"
               "      --min-upload-rate B  after --timeout seconds, a body must\n"
               "                           have come at B bytes/s on average, or\n"
               "                           the connection is closed; 0..1073741824\n"
               "                           (default 4096; 0: no such limit)\n"
               "      --max-connections N  open connections for requests, 1..65536\n"
               "                           (default 64); 4 more answer /health,\n"
               "                           /ready, /metrics and 503 to the rest\n"
               "      --max-connections-per-ip N  from one address, 0..65536\n"
               "                           (default 0: no limit of its own)\n"
               "      --access-log FILE    append the access log (a JSON line per\n"
               "                           request) to FILE instead of stderr\n"
               "  -q, --quiet              no access log\n"
               "      --no-web             no web page at / (the API only)\n"
               "      --allow-load         POST /load (form field model: a checkpoint\n"
               "                           directory; the API key's) loads another\n"
               "                           checkpoint in place of the running one, as\n"
               "                           whisper-server's /load (default: refused, 403)\n"
               "      --allow-host NAME    answer requests whose Host is NAME (repeatable;\n"
               "                           '*': any); on a loopback --host, others than\n"
               "                           localhost and IP addresses get 403\n"
               "      --allow-origin ORIGIN  let pages of ORIGIN (scheme://host[:port])\n"
               "                           call the API (repeatable; '*': any); other\n"
               "                           origins get 403 (the page's own: allowed)\n"
               "\n"
               "Speech detection (the form field chunking_strategy, \"auto\" or\n"
               "{\"type\": \"server_vad\", ...}, asks for it per request):\n");
    hvt_param_usage_as(f, 0, "chunking", 25,
                       "for requests without chunking_strategy (fixed is not offered)");
    hvt_vad_usage(f);
    fprintf(f,
            "\n"
            "Subtitles (response_format srt and vtt, and verbose_json's segments):\n" HVT_CUE_USAGE
            "\n"
            "  -h, --help               show this help and exit\n"
            "      --version            show the version and exit\n"
            "\n"
            "SIGINT or SIGTERM: /ready answers 503, new work gets 503, the requests\n"
            "begun finish, exit 0; a second signal answers the requests still\n"
            "queued with 503.\n");
}

/* --model-name: 1 to 127 visible ASCII characters and no '"', as it is
 * written into JSON and the log without escaping. */
static int parse_model_name(const char *arg, void *value) {
    int ok = *arg && strlen(arg) < 128;
    for (const char *p = arg; *p; p++) ok = ok && *p > 0x20 && *p < 0x7F && *p != '"';
    if (!ok) return -1;
    *(const char **)value = arg;
    return 0;
}

/* --api-key: a key a client can send as 'Authorization: Bearer KEY',
 * which the server compares with white space at its ends trimmed: not
 * empty, no control character (HTTP forbids them in a header), no space
 * or tab at either end. */
static int parse_api_key(const char *arg, void *value) {
    size_t n = strlen(arg);
    int ok = n > 0 && arg[0] != ' ' && arg[0] != '\t' && arg[n - 1] != ' ' && arg[n - 1] != '\t';
    for (const char *p = arg; *p; p++)
        ok = ok && ((unsigned char)*p >= 0x20 || *p == '\t') && *p != 0x7F;
    if (!ok) return -1;
    *(const char **)value = arg;
    return 0;
}

/* Appends arg to the srv_names at value; -1 when full. */
static int add_name(const char *arg, void *value) {
    srv_names *l = value;
    if (l->n >= SRV_MAX_NAMES) return -1;
    l->v[l->n++] = arg;
    return 0;
}

/* --allow-host: "*", or a host name or address without a port: letters,
 * digits, '-', '.', ':' and the brackets of an IPv6 address. */
static int parse_allow_host(const char *arg, void *value) {
    int ok = *arg && strlen(arg) < 256;
    if (strcmp(arg, "*") != 0)
        for (const char *p = arg; *p; p++)
            ok = ok && (isalnum((unsigned char)*p) || strchr("-.:[]_", *p));
    return ok ? add_name(arg, value) : -1;
}

/* --allow-origin: "*", "null", or scheme "://" host [":" port], as a
 * browser sends an Origin: no path, no white space. */
static int parse_allow_origin(const char *arg, void *value) {
    const char *sep = strstr(arg, "://");
    int ok = strcmp(arg, "*") == 0 || strcmp(arg, "null") == 0;
    if (!ok && sep && sep > arg && isalpha((unsigned char)*arg) && sep[3] && strlen(arg) < 256) {
        ok = 1;
        for (const char *p = arg; p < sep; p++)
            ok = ok && (isalnum((unsigned char)*p) || strchr("+-.", *p));
        for (const char *p = sep + 3; *p; p++)
            ok = ok && *p > 0x20 && *p < 0x7F && !strchr("/?#\\\"", *p);
    }
    return ok ? add_name(arg, value) : -1;
}

/* The options; OPTIONS[O_X] is --x. */
enum {
    O_MODEL,
    O_LANGUAGE,
    O_HOST,
    O_PORT,
    O_THREADS,
    O_WEIGHT_TYPE,
    O_COMPUTE,
    O_WORKERS,
    O_QUEUE,
    O_MAX_BEAMS,
    O_MAX_UPLOAD,
    O_MAX_AUDIO,
    O_API_KEY,
    O_MODEL_NAME,
    O_TIMEOUT,
    O_REQUEST_TIMEOUT,
    O_MIN_UPLOAD_RATE,
    O_MAX_CONN,
    O_MAX_PER_IP,
    O_QUIET,
    O_ACCESS_LOG,
    O_CHUNKING,
    O_NO_WEB,
    O_ALLOW_LOAD,
    O_ALLOW_HOST,
    O_ALLOW_ORIGIN,
    HVT_VAD_OPTION_IDS,
    HVT_CUE_OPTION_IDS,
    O_HELP,
    O_VERSION,
    N_OPTS
};

#define AT(field) offsetof(srv_options, field)
static const hvt_option OPTIONS[N_OPTS] = {
    [O_MODEL] = HVT_OPT_STRING("model", 'm', AT(model_dir)),
    [O_LANGUAGE] = HVT_OPT_NONEMPTY("language", 'l', AT(language), "a language code"),
    [O_HOST] = HVT_OPT_NONEMPTY("host", 0, AT(host), "an address"),
    [O_PORT] = HVT_OPT("port", 0, HVT_INT, AT(port), 0, 65535, "0..65535"),
    [O_THREADS] = HVT_OPT_THREADS(AT(n_threads)),
    [O_WEIGHT_TYPE] = HVT_OPT_CUSTOM("weight-type", AT(weight_type), hvt_parse_weight_type,
                                     "auto, f32, f16, bf16, q8_0 or q4_0"),
    [O_COMPUTE] = HVT_OPT_COMPUTE(AT(compute)),
    [O_WORKERS] = HVT_OPT("workers", 0, HVT_INT, AT(n_workers), 1, 64, "an integer 1..64"),
    [O_QUEUE] = HVT_OPT("queue", 0, HVT_INT, AT(queue), 0, 4096, "an integer 0..4096"),
    [O_MAX_BEAMS] =
        HVT_OPT("max-beams", 0, HVT_INT, AT(max_beams), 1, HV_MAX_BEAMS, "an integer 1..64"),
    [O_MAX_UPLOAD] =
        HVT_OPT("max-upload-mb", 0, HVT_INT, AT(max_upload_mb), 1, 4096, "an integer 1..4096"),
    [O_MAX_AUDIO] = HVT_OPT("max-audio-seconds", 0, HVT_DOUBLE_ABOVE, AT(max_audio_s), 0, INFINITY,
                            "a number > 0"),
    [O_API_KEY] = HVT_OPT_CUSTOM("api-key", AT(api_key), parse_api_key,
                                 "a key a client can send: no control characters, no space "
                                 "or tab at either end"),
    [O_MODEL_NAME] = HVT_OPT_CUSTOM("model-name", AT(model_name), parse_model_name,
                                    "1 to 127 visible ASCII characters"),
    [O_TIMEOUT] = HVT_OPT("timeout", 0, HVT_UNSIGNED, AT(timeout_s), 1, 86400, "seconds, 1..86400"),
    [O_REQUEST_TIMEOUT] = HVT_OPT("request-timeout", 0, HVT_UNSIGNED, AT(request_timeout_s), 1,
                                  86400, "seconds, 1..86400"),
    [O_MIN_UPLOAD_RATE] = HVT_OPT("min-upload-rate", 0, HVT_UNSIGNED, AT(min_upload_rate), 0,
                                  1073741824, "bytes per second, 0..1073741824"),
    [O_MAX_CONN] = HVT_OPT("max-connections", 0, HVT_UNSIGNED, AT(max_connections), 1, 65536,
                           "an integer 1..65536"),
    [O_MAX_PER_IP] = HVT_OPT("max-connections-per-ip", 0, HVT_UNSIGNED, AT(max_per_ip), 0, 65536,
                             "an integer 0..65536"),
    [O_QUIET] = HVT_OPT_FLAG("quiet", 'q'),
    [O_ACCESS_LOG] = HVT_OPT_NONEMPTY("access-log", 0, AT(access_log), "a file name"),
    [O_CHUNKING] = HVT_OPT_PARAM("chunking", AT(tp)),
    [O_NO_WEB] = HVT_OPT_FLAG("no-web", 0),
    [O_ALLOW_LOAD] = HVT_OPT_FLAG("allow-load", 0),
    [O_ALLOW_HOST] = HVT_OPT_CUSTOM("allow-host", AT(allow_hosts), parse_allow_host,
                                    "a host name or address without a port, or '*'; at most "
                                    "32"),
    [O_ALLOW_ORIGIN] = HVT_OPT_CUSTOM("allow-origin", AT(allow_origins), parse_allow_origin,
                                      "scheme://host[:port], 'null' or '*'; at most 32"),
    HVT_VAD_OPTION_ROWS(srv_options),
    HVT_CUE_OPTION_ROWS(srv_options),
    [O_HELP] = HVT_OPT_HELP,
    [O_VERSION] = HVT_OPT_VERSION,
};
#undef AT

int srv_parse_options(int argc, char **argv, srv_options *o) {
    static const hvt_cli cli = {PROG, usage, OPTIONS, N_OPTS};
    hv_transcribe_params defaults = hv_transcribe_default_params();
    *o = (srv_options){.host = "127.0.0.1",
                       .port = 8080,
                       .n_workers = 1,
                       .queue = 16,
                       .max_beams = 16,
                       .max_upload_mb = 128,
                       .max_audio_s = 3600,
                       .model_name = "hviske",
                       .timeout_s = 30,
                       .request_timeout_s = 600,
                       .min_upload_rate = 4096,
                       .max_connections = 64,
                       .tp = defaults,
                       .cues = hv_cue_default_params()};
    int given[N_OPTS];
    char notes[2048] = "";
    int rc = srv_whisper_flags(&argc, argv, notes, sizeof notes);
    if (rc >= 0) return rc;
    rc = hvt_parse_options(&cli, argc, argv, o, given);
    if (rc >= 0) return rc;
    fputs(notes, stderr);
    o->quiet = given[O_QUIET] != 0;
    o->no_web = given[O_NO_WEB] != 0;
    o->allow_load = given[O_ALLOW_LOAD] != 0;
    if (o->tp.chunking == HV_CHUNKING_FIXED)
        return hvt_usage_error(PROG, "--chunking fixed is not offered by the "
                                     "server (auto, vad, energy or none)");
    if (optind < argc) return hvt_usage_error(PROG, "unexpected argument '%s'", argv[optind]);
    if (!o->model_dir) return hvt_usage_error(PROG, "no model given (use -m MODEL_DIR)");
    if (o->n_threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        long t = cores > 0 ? cores / o->n_workers : 1;
        o->n_threads = (int)(t < 1 ? 1 : t > 256 ? 256 : t);
    }
    return -1;
}
