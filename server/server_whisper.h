/* whisper-server's startup flags on hviske-server's command line
 * (docs/SERVER.md "whisper-server's flags"). */
#ifndef HV_SERVER_WHISPER_H
#define HV_SERVER_WHISPER_H

#include <stddef.h>

/* Takes whisper-server's flags out of argv[1..*argc) in place: the ones
 * hviske-server has under another name become it (-vt N: --vad-threshold
 * N), the ones whose value asks for what hviske does anyway are dropped
 * with a notice line in notes[n] (-mc 0, --convert, ...), whisper.cpp's
 * Silero file after -vm is dropped with a notice (the bundled detector),
 * and the ones asking for what hviske cannot do are refused. -1 to go on
 * (*argc updated), or the usage error's exit status. Flags both servers
 * share (-m, -l, -t, --host, --port, -h) are left as they are. */
int srv_whisper_flags(int *argc, char **argv, char *notes, size_t n);

#endif
