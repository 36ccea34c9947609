/*
 * whisper-cli's flags on hviske's command line (docs/CLI.md "whisper-cli's
 * flags"), recognised by their whole names before hviske's own options are
 * parsed.
 */
#ifndef HV_CLI_WHISPER_H
#define HV_CLI_WHISPER_H

#include "options.h"

/* Takes whisper-cli's flags out of argv[1..*argc) (before "--"), into o;
 * argv keeps the rest, in order. -1 to go on, otherwise the exit status
 * of a refused flag (reported). */
int cli_whisper_flags(int *argc, char **argv, cli_options *o);

#endif /* HV_CLI_WHISPER_H */
