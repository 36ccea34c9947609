/* whisper-server's startup flags (server_whisper.h). */
#include "server_whisper.h"

#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "cmdline.h"

#define PROG "hviske-server"

typedef enum s_action {
    S_OPTION,    /* hviske-server's option `to`, with the flag's value */
    S_SAME,      /* accepted with a notice when the value is one of `values`
                 (NULL: a flag without one); `why` says what hviske does */
    S_UNUSED,    /* accepted with a notice whatever its value, which hviske has
                    no use for (`why`): the prompt */
    S_VAD_MODEL, /* -vm: --vad-model DIR, or whisper.cpp's Silero file */
    S_REFUSE     /* refused, saying why */
} s_action;

typedef struct s_flag {
    const char *flag, *long_flag;
    int takes_value;
    s_action action;
    const char *to, *values, *why;
} s_flag;

#define OPT(f, l, to_)                                                                             \
    { f, l, 1, S_OPTION, to_, NULL, NULL }
#define SAME(f, l, v, values_, why_)                                                               \
    { f, l, v, S_SAME, NULL, values_, why_ }
#define NO(f, l, v, why_)                                                                          \
    { f, l, v, S_REFUSE, NULL, NULL, why_ }
#define UNUSED(f, l, v, why_)                                                                      \
    { f, l, v, S_UNUSED, NULL, NULL, why_ }

#define NO_CONTEXT "each chunk is decoded without the text before it"
#define PER_REQUEST_FALLBACK                                                                       \
    "the temperature fallback is each request's (its temperature and temperature_inc fields)"

/* whisper-server's --help, but -h, -t, -l, -m, --host and --port
 * (hviske-server's own, the same). */
static const s_flag FLAGS[] = {
    SAME("-p", "--processors", 1, "1", "one process transcribes: -t N gives it N threads"),
    SAME("-on", "--offset-n", 1, "0", "segments are always numbered from the first"),
    SAME("-mc", "--max-context", 1, "0", NO_CONTEXT),
    SAME("-nc", "--no-context", 0, NULL, NO_CONTEXT),
    SAME("-bo", "--best-of", 1, "1,2,5",
         "the temperature fallback samples one candidate per temperature (a request's "
         "num_beams or beam_size searches)"),
    SAME("-ac", "--audio-ctx", 1, "0", "the encoder always takes the whole chunk"),
    SAME("-wt", "--word-thold", 1, "0.01",
         "word times come from cross-attention, without a threshold"),
    SAME("-et", "--entropy-thold", 1, "2.4",
         "the fallback measures repetition by the text's compression ratio, not the tokens' "
         "entropy"),
    SAME("-ml", "--max-len", 1, "0",
         "segments are cut by the cue rules (--max-line-chars, --max-lines)"),
    SAME("-sow", "--split-on-word", 0, NULL, "segments are always cut between words"),
    SAME("-sns", "--suppress-nst", 0, NULL, "the model writes no non-speech tokens to suppress"),
    SAME("-ng", "--no-gpu", 0, NULL, "hviske runs on the CPU"),
    SAME("-fa", "--flash-attn", 0, NULL, "it changes nothing"),
    SAME("-nfa", "--no-flash-attn", 0, NULL, "it changes nothing"),
    SAME("-pp", "--print-progress", 0, NULL, "the access log has a line per request"),
    SAME("-pr", "--print-realtime", 0, NULL, "the access log has a line per request"),
    SAME(NULL, "--convert", 0, NULL,
         "uploads in every format the library reads are taken as they are (no ffmpeg program)"),
    SAME(NULL, "--inference-path", 1, "/inference", "whisper-server's endpoint is /inference"),
    SAME(NULL, "--vad", 0, NULL, "speech detection is on by default (--chunking auto)"),
    {"-vm", "--vad-model", 1, S_VAD_MODEL, NULL, NULL, NULL},
    OPT("-vt", "--vad-threshold", "--vad-threshold"),
    OPT("-vspd", "--vad-min-speech-duration-ms", "--vad-min-speech-ms"),
    OPT("-vsd", "--vad-min-silence-duration-ms", "--vad-min-silence-ms"),
    OPT("-vp", "--vad-speech-pad-ms", "--vad-speech-pad-ms"),
    NO("-tr", "--translate", 0, "the model transcribes; it does not translate"),
    NO("-di", "--diarize", 0,
       "whisper-server's stereo diarization is not offered: a request's diarize field reads a "
       "diarize model's speaker turns"),
    NO("-tdrz", "--tinydiarize", 0,
       "tinydiarize is not offered: a request's diarize field reads a diarize model's speaker "
       "turns"),
    NO("-dl", "--detect-language", 0, "there is no language detection: -l names the language"),
    UNUSED(NULL, "--prompt", 1, "the model family takes no text prompt: not used"),
    NO("-oved", "--ov-e-device", 1, "there is no OpenVINO encoder"),
    NO("-dtw", "--dtw", 1, "word times always come from cross-attention"),
    NO("-debug", "--debug-mode", 0, "there is no debug mode"),
    NO("-ps", "--print-special", 0, "a request's verbose_json lists the tokens"),
    NO("-pc", "--print-colors", 0, "a request's verbose_json gives each word's probability"),
    NO("-nt", "--no-timestamps", 0, "each request's response_format says what is written"),
    NO("-bs", "--beam-size", 1,
       "the beam size is each request's (beam_size on /inference, num_beams on /v1)"),
    NO("-ot", "--offset-t", 1, "the offset is each request's (offset_t on /inference)"),
    NO("-d", "--duration", 1, "the duration is each request's (duration on /inference)"),
    NO("-nf", "--no-fallback", 0, PER_REQUEST_FALLBACK),
    NO("-lpt", "--logprob-thold", 1, PER_REQUEST_FALLBACK),
    NO("-nth", "--no-speech-thold", 1, PER_REQUEST_FALLBACK),
    NO(NULL, "--public", 1, "the web page is built in (--no-web turns it off)"),
    NO(NULL, "--request-path", 1,
       "the paths are fixed (/inference, /v1/audio/transcriptions, /load, ...)"),
};

static const s_flag *find_flag(const char *arg) {
    for (size_t k = 0; k < sizeof FLAGS / sizeof *FLAGS; k++)
        if ((FLAGS[k].flag && strcmp(arg, FLAGS[k].flag) == 0) ||
            (FLAGS[k].long_flag && strcmp(arg, FLAGS[k].long_flag) == 0))
            return &FLAGS[k];
    return NULL;
}

int srv_whisper_flags(int *argc, char **argv, char *notes, size_t n) {
    int m = 1, i = 1;
    for (; i < *argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) break;
        const s_flag *w = find_flag(arg);
        if (!w) {
            argv[m++] = argv[i];
            continue;
        }
        const char *v = NULL;
        if (w->takes_value) {
            if (i + 1 >= *argc) return hvt_usage_error(PROG, "option '%s' needs an argument", arg);
            v = argv[++i];
        }
        int rc = -1;
        size_t len = strlen(notes);
        switch (w->action) {
            case S_OPTION:
                argv[m++] = (char *)w->to;
                argv[m++] = (char *)v;
                break;
            case S_SAME:
                rc = hvt_whisper_same(PROG, "whisper-server", arg, v, w->values, w->why, notes, n);
                break;
            case S_UNUSED:
                if (len < n) snprintf(notes + len, n - len, PROG ": note: %s: %s\n", arg, w->why);
                break;
            case S_VAD_MODEL:
                if (hvt_ggml_silero(v)) {
                    if (len < n)
                        snprintf(notes + len, n - len,
                                 PROG ": note: %s %s: whisper.cpp's Silero file; hviske's own "
                                      "Silero detector (models/silero-vad, bundled) is used\n",
                                 arg, v);
                } else {
                    argv[m++] = "--vad-model";
                    argv[m++] = (char *)v;
                }
                break;
            case S_REFUSE:
            default:
                return hvt_usage_error(PROG, "%s (whisper-server's) is not supported: %s", arg,
                                       w->why);
        }
        if (rc >= 0) return rc;
    }
    for (; i < *argc; i++) argv[m++] = argv[i];
    argv[m] = NULL;
    *argc = m;
    return -1;
}
