/* libFuzzer entry point: arbitrary bytes as an audio file, decoded in
 * memory (the path standard input and server uploads take), then downmixed
 * and resampled when it decodes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "audio/audio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    float *pcm = NULL, *mono = NULL;
    size_t n = 0, n_mono = 0;
    int rate = 0, channels = 0;
    hv_error e;
    /* a duration cap keeps a tiny compressed input from decoding to hours */
    if (hv_audio_read_memory(data, size, "fuzz", 60.0, &pcm, &n, &rate, &channels, &e) == HV_OK) {
        if (hv_audio_to_mono(pcm, n, channels, rate, 16000, &mono, &n_mono, &e) == HV_OK)
            free(mono);
        free(pcm);
    }
    return 0;
}
