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

hv_status hv_audio_read_mono(const char *path, int target_rate, double max_seconds, float **samples,
                             size_t *n_samples, char *errbuf, size_t errbuf_size) {
    hv_error e;
    hv_err_clear(&e);
    hv_status rc = hv_audio_read_file_mono(path, target_rate, max_seconds, samples, n_samples, &e);
    hv_err_copy(&e, errbuf, errbuf_size);
    return rc;
}

hv_status hv_audio_read_buffer_mono(const void *data, size_t size, const char *name,
                                    int target_rate, double max_seconds, float **samples,
                                    size_t *n_samples, char *errbuf, size_t errbuf_size) {
    hv_error e;
    hv_err_clear(&e);
    hv_status rc = hv_audio_read_memory_mono(data, size, name, target_rate, max_seconds, samples,
                                             n_samples, &e);
    hv_err_copy(&e, errbuf, errbuf_size);
    return rc;
}

hv_status hv_audio_read_fd_mono(int fd, const char *name, int target_rate, double max_seconds,
                                float **samples, size_t *n_samples, char *errbuf,
                                size_t errbuf_size) {
    hv_error e;
    hv_err_clear(&e);
    hv_status rc =
        hv_audio_read_stream_mono(fd, name, target_rate, max_seconds, samples, n_samples, &e);
    hv_err_copy(&e, errbuf, errbuf_size);
    return rc;
}

double hv_audio_max_seconds(size_t max_audio_bytes, int target_rate) {
    if (max_audio_bytes == 0 || target_rate < 1) return 0;
    return (double)(max_audio_bytes / sizeof(float)) / target_rate;
}
