/*
 * whisper-cli's flags on hviske's command line (docs/CLI.md "whisper-cli's
 * flags"), recognised by their whole names before hviske's own options are
 * parsed.
 */
#ifndef HV_CLI_WHISPER_H
#define HV_CLI_WHISPER_H

#include "options.h"

/* Takes whisper-cli's flags out of argv[0..argc) (before "--"), into o:
 * o->argv (*argc of them, NULL after the last) gets the rest in order,
 * hviske's options the flags become (-bs N: --beams N), and after a "--"
 * the -f inputs. -1 to go on, otherwise the exit status of a refused flag
 * (reported). What it allocates is freed by cli_options_free. */
int cli_whisper_flags(int *argc, char **argv, cli_options *o);

#endif /* HV_CLI_WHISPER_H */
