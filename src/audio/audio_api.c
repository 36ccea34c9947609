/* The public audio functions of hviske.h: thin wrappers that turn the
 * library's hv_error into the caller's message buffer. */
#include <stdlib.h>

#include "audio/audio.h"
#include "hviske.h"

hv_status hv_audio_read(const char *path, float **pcm, size_t *n_frames, int *sample_rate,
                        int *channels, char *errbuf, size_t errbuf_size) {
    hv_error e;
    hv_err_clear(&e);
    hv_status rc = hv_audio_read_file(path, pcm, n_frames, sample_rate, channels, &e);
    hv_err_copy(&e, errbuf, errbuf_size); /* "" on success */
    return rc;
}

hv_status hv_audio_read_buffer(const void *data, size_t size, const char *name, double max_seconds,
                               float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                               char *errbuf, size_t errbuf_size) {
    hv_error e;
    hv_err_clear(&e);
    hv_status rc = hv_audio_read_memory(data, size, name, max_seconds, pcm, n_frames, sample_rate,
                                        channels, &e);
    hv_err_copy(&e, errbuf, errbuf_size);
    return rc;
}

void hv_audio_free(float *pcm) { free(pcm); }
