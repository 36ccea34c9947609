/* Audio in containers and codecs that libsndfile, libmpg123 and
 * libvorbisfile do not read, through FFmpeg's libraries (libavformat,
 * libavcodec, libswresample): M4A/AAC, MP4 and MOV audio tracks,
 * WebM/Matroska (Opus, Vorbis), AMR, WMA, and the first audio stream of a
 * video file. The audio reader (src/audio/audio.c) tries it after the
 * other decoders failed to open a file. Built only with HV_HAVE_FFMPEG
 * (CMake finds the libraries; a build without them refuses these files
 * with a message that names the container). */
#ifndef HV_FFMPEG_H
#define HV_FFMPEG_H

#include <stddef.h>
#include <stdint.h>

/* The stream's bytes: read up to n bytes at the current position into
 * buf (the count, 0 at the end, -1 on an error); seek as lseek does
 * (SEEK_SET, SEEK_CUR, SEEK_END; the new position or -1). */
typedef int64_t (*hv_ffmpeg_read_fn)(void *buf, int64_t n, void *user);
typedef int64_t (*hv_ffmpeg_seek_fn)(int64_t off, int whence, void *user);

typedef struct hv_ffmpeg hv_ffmpeg;

/* What went wrong on open: a phrase of at most HV_FFMPEG_WHY bytes. */
#define HV_FFMPEG_WHY 160

/* Opens the stream of `size` bytes: only the demuxers of the containers
 * above are allowed, no demuxer may open another file or URL, the first
 * audio stream is chosen and decoded (one thread) up to its first frame,
 * whose rate and channels are *rate and *channels. On failure NULL, with
 * why filled and *io 1 when reading failed. Nothing is left allocated on
 * failure. FFmpeg's log messages are dropped while hviske calls it. */
hv_ffmpeg *hv_ffmpeg_open(hv_ffmpeg_read_fn read, hv_ffmpeg_seek_fn seek, int64_t size, void *user,
                          long *rate, int *channels, char why[HV_FFMPEG_WHY], int *io);

/* Decodes up to `frames` interleaved float frames into buf (frames x
 * channels); the count, 0 at the end. A packet that fails to decode sets
 * hv_ffmpeg_failed and decoding goes on (the reader refuses frames after
 * an error); a stream that changes its rate or channels sets
 * hv_ffmpeg_fatal and ends. */
long hv_ffmpeg_read(hv_ffmpeg *f, float *buf, long frames);
int hv_ffmpeg_failed(const hv_ffmpeg *f);
int hv_ffmpeg_fatal(const hv_ffmpeg *f);
/* What went wrong ("no error" when nothing did); valid until close. */
const char *hv_ffmpeg_error(const hv_ffmpeg *f);

/* Frees everything; NULL is allowed. */
void hv_ffmpeg_close(hv_ffmpeg *f);

#endif
