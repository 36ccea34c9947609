/* libFuzzer target: a safetensors file. The reader works on paths (it
 * mmaps), so each input is written to one temporary file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "model/safetensors.h"

static char path[64];

static void remove_file(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/hv-fuzz-st-XXXXXX");
        int fd = mkstemp(path);
        if (fd < 0) abort();
        close(fd);
        atexit(remove_file);
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    hv_safetensors st;
    hv_error e;
    if (hv_st_open_file(&st, path, &e) != HV_OK) return 0;
    /* touch every byte of every tensor: all must lie inside the mapping */
    for (int i = 0; i < st.n_tensors; i++) {
        const hv_st_tensor *t = &st.tensors[i];
        volatile uint8_t sum = 0;
        for (size_t k = 0; k < t->nbytes; k++) sum ^= ((const uint8_t *)t->data)[k];
        (void)sum;
        if (t->dtype <= HV_DT_BF16 && t->numel < (1 << 20)) {
            float *buf = malloc((size_t)t->numel * sizeof *buf + 1);
            if (buf) hv_st_to_f32(t, buf, &e);
            free(buf);
        }
        if (hv_st_find(&st, t->name) != t) abort();
    }
    hv_st_close(&st);
    return 0;
}
