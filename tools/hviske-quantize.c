/* hviske-quantize: writes a pre-quantized checkpoint directory that loads
 * by mmap without conversion (docs/QUANTIZE.md). The work is the library's
 * hv_quantize; this program parses the command line and reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hviske.h"

static void usage(FILE *f) {
    fprintf(f, "usage: hviske-quantize IN_DIR OUT_DIR --type T [--force]\n"
               "Writes OUT_DIR/model.safetensors with the weight matrices of the\n"
               "checkpoint IN_DIR (single file or sharded) stored in type T, and copies\n"
               "config.json, generation_config.json and tokenizer.model. OUT_DIR then\n"
               "loads without conversion (hviske -m OUT_DIR, --weight-type auto or T).\n"
               "  -T, --type T     q4_0 (4-bit blocks), q8_0 (8-bit blocks), bf16, f16\n"
               "                   or f32\n"
               "  -f, --force      write into an OUT_DIR that is not empty (its\n"
               "                   model files are replaced)\n"
               "  -h, --help       this text\n"
               "      --version    the version\n"
               "Exit status: 0 written, 1 failed (the message names the file), 2 usage.\n");
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *dirs[2] = {NULL, NULL}, *type_name = NULL;
    int n_dirs = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("hviske-quantize %s\n", HV_VERSION);
            return 0;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--force")) {
            force = 1;
        } else if (!strcmp(a, "-T") || !strcmp(a, "--type")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "hviske-quantize: %s needs a value\n", a);
                return 2;
            }
            type_name = argv[++i];
        } else if (!strncmp(a, "--type=", 7)) {
            type_name = a + 7;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "hviske-quantize: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (n_dirs < 2) {
            dirs[n_dirs++] = a;
        } else {
            fprintf(stderr, "hviske-quantize: one IN_DIR and one OUT_DIR, not %s as well\n", a);
            return 2;
        }
    }
    if (n_dirs != 2 || !type_name) {
        usage(stderr);
        return 2;
    }
    hv_weight_type type;
    if (hv_weight_type_parse(type_name, &type) != 0 || type == HV_WEIGHTS_AUTO) {
        fprintf(stderr, "hviske-quantize: --type %s: expected q4_0, q8_0, bf16, f16 or f32\n",
                type_name);
        return 2;
    }
    char err[2048];
    double t0 = now();
    if (hv_quantize(dirs[0], dirs[1], type, force, err, sizeof err) != HV_OK) {
        fprintf(stderr, "hviske-quantize: %s\n", err);
        return 1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dirs[1]);
    struct stat sb;
    long long bytes = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
    printf("%s: %s, %.1f MB, written in %.1f s\n", path, type_name, bytes / 1e6, now() - t0);
    return 0;
}
