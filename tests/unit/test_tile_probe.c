/* hviske-bench's AMX probe (tools/tile_probe.c): the child process that
 * isolates it passes a value or a reason back and reports a child that
 * dies or exits without an answer; and the probe gives a positive rate
 * exactly on the hosts whose kernel lists the AMX-BF16 tile unit, and a
 * reason everywhere else. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "tile_probe.h"

static double gives_value(void *arg, char *why, size_t size) {
    (void)why, (void)size;
    return *(const double *)arg;
}

static double gives_reason(void *arg, char *why, size_t size) {
    snprintf(why, size, "%s", (const char *)arg);
    return 0;
}

static double dies(void *arg, char *why, size_t size) {
    (void)arg, (void)why, (void)size;
    raise(SIGILL); /* what an instruction the CPU lacks would do */
    return 1;
}

static double exits(void *arg, char *why, size_t size) {
    (void)arg, (void)why, (void)size;
    _exit(3);
}

/* Whether /proc/cpuinfo's flags name the tile unit and its bf16 product:
 * the kernel lists them only where it also grants the tile state. */
static int cpuinfo_has_amx_bf16(void) {
    FILE *f = fopen("/proc/cpuinfo", "r"); /* its size reads 0: line by line */
    char line[8192];
    int has = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            has = strstr(line, " amx_bf16") && strstr(line, " amx_tile");
            break;
        }
    if (f) fclose(f);
    return has;
}

int main(void) {
    char why[256];
    double v = 42.5;
    CHECK(hvt_run_in_child(gives_value, &v, why, sizeof why) == 42.5 && why[0] == '\0');
    CHECK(hvt_run_in_child(gives_reason, "no unit here", why, sizeof why) == 0 &&
          !strcmp(why, "no unit here"));
    CHECK_MSG(hvt_run_in_child(dies, NULL, why, sizeof why) == 0 && strstr(why, "signal 4"),
              "a child killed by SIGILL: '%s'", why);
    CHECK_MSG(hvt_run_in_child(exits, NULL, why, sizeof why) == 0 && strstr(why, "without"),
              "a child that exits without an answer: '%s'", why);
    /* the parent goes on as before: a value after the failures */
    CHECK(hvt_run_in_child(gives_value, &v, why, sizeof why) == 42.5);

    int amx = cpuinfo_has_amx_bf16();
    for (int threads = 1; threads <= 2; threads++) {
        double rate = hvt_tile_peak_gflops(threads, why, sizeof why);
        if (amx)
            CHECK_MSG(rate > 0 && why[0] == '\0', "AMX-BF16 listed, %d threads: %g ('%s')", threads,
                      rate, why);
        else
            CHECK_MSG(rate == 0 && strstr(why, "AMX"), "no AMX-BF16 listed: %g ('%s')", rate, why);
        printf("tile probe, %d threads: %.1f GFLOP/s %s\n", threads, rate, why);
    }
    CHECK(hvt_tile_peak_gflops(0, why, sizeof why) == 0 && strstr(why, "threads"));
    TEST_END();
}
