/*
 * hviske-server: a look at an uploaded audio file's header before it is
 * decoded, so that audio longer than --max-audio-seconds is refused
 * before its samples are (a small compressed file can decode to
 * gigabytes). hv_audio_read_buffer still decodes and checks everything;
 * this only reads the length the header claims.
 */
#ifndef HV_SERVER_AUDIO_H
#define HV_SERVER_AUDIO_H

#include <stddef.h>

/* The duration in seconds that the file's header gives; 0 on success, -1
 * when libsndfile cannot open it or it gives no length (the decoder then
 * has the last word). */
int srv_audio_header_seconds(const void *data, size_t size, double *seconds);

#endif /* HV_SERVER_AUDIO_H */
