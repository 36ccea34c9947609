/* Audio input: decoding files with libsndfile, downmixing and resampling
 * with libsoxr. */
#ifndef HV_AUDIO_H
#define HV_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "hviske.h"
#include "util/error.h"

/* Limits on what hviske reads: beyond them a file is refused (HV_ERR_LIMIT)
 * before anything large is allocated. 4 hours at 192 kHz is 2.76e9 samples
 * (11 GB of float), counted over all channels. */
#define HV_AUDIO_MAX_CHANNELS 64
#define HV_AUDIO_MIN_RATE     HV_MIN_SAMPLE_RATE
#define HV_AUDIO_MAX_RATE     HV_MAX_SAMPLE_RATE
#define HV_AUDIO_MAX_SAMPLES  ((uint64_t)4 * 3600 * 192000)

/* Reads a file as interleaved float PCM at its own rate. The caller frees
 * *pcm with free(). Errors name the file: HV_ERR_IO when it cannot be
 * opened (missing, a directory, no permission), HV_ERR_FORMAT when it is
 * empty, not audio libsndfile decodes, has no frames, fails to decode, or
 * holds NaN/infinite samples, HV_ERR_LIMIT beyond the limits above.
 * A truncated file (data shorter than its header says) gives the frames
 * that are there, as players do; only zero frames is an error. A path is
 * opened without blocking and must name a regular file: a FIFO or a
 * device is HV_ERR_IO (it could block forever). */
hv_status hv_audio_read_file(const char *path, float **pcm, size_t *n_frames, int *sample_rate,
                             int *channels, hv_error *e);

/* The same for a whole file's bytes in memory (a pipe read to its end);
 * `name` stands for the file in messages. max_seconds > 0 refuses longer
 * audio with HV_ERR_LIMIT before decoding it all (a small compressed file
 * can decode to gigabytes). */
hv_status hv_audio_read_memory(const void *data, size_t size, const char *name, double max_seconds,
                               float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                               hv_error *e);

/* Read a file (or a file's bytes) straight to mono at target_rate: the
 * file is decoded in blocks of 4096 frames, each block's channels averaged
 * and fed to a streaming soxr resampler (the same filter as
 * hv_audio_to_mono, SOXR_HQ), so that the memory used is the mono output
 * plus a constant, whatever the file's channels and rate. The samples equal
 * those of hv_audio_read_file followed by hv_audio_to_mono. The same errors
 * and limits as the interleaved readers (max_seconds > 0 also for files);
 * target_rate outside 1..HV_AUDIO_MAX_RATE is HV_ERR_INVALID_ARG. *out is
 * non-NULL on success (free() it), *n_out may be 0 for a tiny input. */
hv_status hv_audio_read_file_mono(const char *path, int target_rate, double max_seconds,
                                  float **out, size_t *n_out, hv_error *e);
hv_status hv_audio_read_memory_mono(const void *data, size_t size, const char *name,
                                    int target_rate, double max_seconds, float **out, size_t *n_out,
                                    hv_error *e);
/* The same for the audio at descriptor fd (left open), from its start or
 * where it is: a regular file at offset 0 is read in place, anything else
 * (a pipe, standard input) is first copied to an unlinked temporary file in
 * $TMPDIR (else /tmp) in bounded steps: not audio once its first 64 KiB
 * (16 MiB for a container with tags first; or all of it) are in is
 * HV_ERR_FORMAT, more bytes than the longest
 * audio max_seconds allows could take (at the format's bytes per sample,
 * plus 64 MiB) HV_ERR_LIMIT with the message of audio too long. Memory is
 * a block of 64 KiB while copying, then as for a file. */
hv_status hv_audio_read_stream_mono(int fd, const char *name, int target_rate, double max_seconds,
                                    float **out, size_t *n_out, hv_error *e);

/* Averages channels and resamples to target_rate (soxr, SOXR_HQ, linear
 * phase, delay compensated: output sample j is at time j / target_rate).
 * *out is malloc'ed (caller frees), *n_out its length: n_frames when the
 * rates are equal (a plain copy), else what soxr gives for the whole
 * signal, which is round(n_frames * target_rate / sample_rate) (may be 0
 * for a tiny input; *out is still non-NULL). Non-finite samples are
 * HV_ERR_FORMAT, no samples or bad rates HV_ERR_INVALID_ARG, a failed
 * allocation HV_ERR_NOMEM. Works in blocks of 4096 frames (check, downmix,
 * feed soxr's stream), so that memory is the output plus a constant
 * whatever the input's length, channels and rate; the samples are those
 * one soxr_oneshot of the whole downmix gives. */
hv_status hv_audio_to_mono(const float *pcm, size_t n_frames, int channels, int sample_rate,
                           int target_rate, float **out, size_t *n_out, hv_error *e);

#endif
