/* Ogg Vorbis decoding through libvorbisfile. The audio reader
 * (src/audio/audio.c) gives every Ogg stream that libsndfile would open as
 * Vorbis to this decoder instead: libsndfile 1.2.0 leaks the vorbis_info
 * it allocates (5.8 KB) whenever it fails to open a Vorbis stream, so
 * every truncated or malformed upload would cost a server that much for
 * good. Here every path ends in ov_clear. */
#ifndef HV_VORBIS_H
#define HV_VORBIS_H

#include <stddef.h>

/* The stream's bytes, read in order from its start as fread reads them:
 * up to n bytes into buf, the count read (0 at the end or on an error). */
typedef size_t (*hv_vorbis_read_fn)(void *buf, size_t n, void *user);

typedef struct hv_vorbis hv_vorbis;

/* 1 when head[0, n) (the bytes of a stream from its start, as many as
 * there are up to HV_VORBIS_DETECT_BYTES) are an Ogg stream whose first
 * page, found as libsndfile finds it (libogg's page sync, skipping
 * garbage), begins a Vorbis identification header: the streams libsndfile
 * would give its Vorbis decoder. */
#define HV_VORBIS_DETECT_BYTES 65536
int hv_vorbis_detect(const unsigned char *head, size_t n);

/* Opens the stream for decoding in one pass (libvorbisfile without
 * seeking, so memory stays one logical stream's headers however many are
 * chained). On success *rate and *channels are the first stream's; on
 * failure NULL, with *why a static phrase saying what is wrong and *io 1
 * when reading failed (else 0). Nothing is left allocated on failure. */
hv_vorbis *hv_vorbis_open(hv_vorbis_read_fn read, void *user, long *rate, int *channels,
                          const char **why, int *io);

/* Decodes up to `frames` interleaved frames into buf (frames x channels
 * floats); the count, 0 at the end. Audio lost inside the stream (a
 * missing or damaged page) followed by more audio, and a chained stream
 * whose rate or channels change, set hv_vorbis_fatal: the frames before
 * are given, then none. A decoder error, or a lost page at the very end
 * (a cut file), sets hv_vorbis_failed and ends the stream there. */
long hv_vorbis_read(hv_vorbis *v, float *buf, long frames);
int hv_vorbis_failed(const hv_vorbis *v);
int hv_vorbis_fatal(const hv_vorbis *v);
/* What went wrong (a static phrase; "no error" when nothing did). */
const char *hv_vorbis_error(const hv_vorbis *v);

/* Frees everything (ov_clear); NULL is allowed. */
void hv_vorbis_close(hv_vorbis *v);

#endif
