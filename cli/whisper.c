/* whisper-cli's flags on hviske's command line (whisper.h). */
#include "whisper.h"

#include <string.h>

#include "tool_util.h"

/* whisper-cli's output flags, taken as aliases of --format (each writes
 * a file beside its input, as whisper-cli does), or refused naming what
 * hviske has instead. */
static const struct whisper_alias {
    const char *flag, *long_flag;
    int format; /* -1: refused */
    int words;  /* -ojf: json with the words */
    const char *instead;
} WHISPER_ALIASES[] = {
    {"-otxt", "--output-txt", HVT_FMT_TXT, 0, NULL},
    {"-osrt", "--output-srt", HVT_FMT_SRT, 0, NULL},
    {"-ovtt", "--output-vtt", HVT_FMT_VTT, 0, NULL},
    {"-oj", "--output-json", HVT_FMT_JSON, 0, NULL},
    {"-ojf", "--output-json-full", HVT_FMT_JSON, 1, NULL},
    {"-ocsv", "--output-csv", HVT_FMT_CSV, 0, NULL},
    {"-olrc", "--output-lrc", -1, 0, "LRC is not written; --format txt,srt,vtt,json,jsonl,csv"},
    {"-owts", "--output-words", -1, 0, "karaoke scripts are not written; --format srt or vtt"},
    {"-of", "--output-file", -1, 0, "use -o FILE for one output, --output-dir DIR for files"},
};

int cli_whisper_flags(int *argc, char **argv, cli_options *o) {
    int m = 1;
    for (int i = 1; i < *argc; i++) {
        const struct whisper_alias *a = NULL;
        if (strcmp(argv[i], "--") == 0) {
            while (i < *argc) argv[m++] = argv[i++];
            break;
        }
        for (size_t k = 0; k < sizeof WHISPER_ALIASES / sizeof *WHISPER_ALIASES; k++)
            if (strcmp(argv[i], WHISPER_ALIASES[k].flag) == 0 ||
                strcmp(argv[i], WHISPER_ALIASES[k].long_flag) == 0)
                a = &WHISPER_ALIASES[k];
        if (!a) {
            argv[m++] = argv[i];
            continue;
        }
        if (a->format < 0)
            return hvt_usage_error(CLI_PROG, "%s (whisper-cli's) is not supported: %s", argv[i],
                                   a->instead);
        cli_add_format(&o->formats, (hvt_format)a->format);
        o->word_timestamps |= a->words;
        o->aliases = 1;
    }
    *argc = m;
    argv[m] = NULL;
    return -1;
}
