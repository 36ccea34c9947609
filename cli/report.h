/*
 * hviske's messages about inputs and outputs on standard error
 * ("hviske: FILE: message"), and the last one, for the run summary
 * (--summary's "error").
 */
#ifndef HV_CLI_REPORT_H
#define HV_CLI_REPORT_H

#include "hviske.h"

/* Prints "hviske: <message>" on stderr and keeps the message. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void cli_error(const char *fmt, ...);

/* Prints "hviske: FILE: msg", without repeating FILE when msg already
 * starts with it (library messages about files name them); msg NULL or
 * "": the status's name. */
void cli_file_error(const char *path, hv_status status, const char *msg);

/* The last message of cli_error, without "hviske: " ("" when none). */
const char *cli_last_error(void);

#endif /* HV_CLI_REPORT_H */
