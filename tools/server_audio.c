/*
 * hviske-server: an uploaded file's duration from its header (see
 * server_audio.h), through libsndfile's virtual I/O on the bytes in
 * memory. Nothing is decoded.
 */
#include "server_audio.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sndfile.h>

typedef struct mem_file {
    const unsigned char *data;
    sf_count_t size, pos;
} mem_file;

static sf_count_t mem_len(void *u) { return ((mem_file *)u)->size; }

static sf_count_t mem_seek(sf_count_t off, int whence, void *u)
{
    mem_file *m = u;
    sf_count_t base = whence == SEEK_SET ? 0
                    : whence == SEEK_CUR ? m->pos : m->size;
    if (off > 0 ? base > m->size - off : base + off < 0)
        return -1;
    m->pos = base + off;
    return m->pos;
}

static sf_count_t mem_read(void *ptr, sf_count_t count, void *u)
{
    mem_file *m = u;
    sf_count_t left = m->size - m->pos;
    if (count > left)
        count = left;
    if (count <= 0)
        return 0;
    memcpy(ptr, m->data + m->pos, (size_t)count);
    m->pos += count;
    return count;
}

static sf_count_t mem_write(const void *ptr, sf_count_t count, void *u)
{
    (void)ptr, (void)count, (void)u;
    return 0;
}

static sf_count_t mem_tell(void *u) { return ((mem_file *)u)->pos; }

int srv_audio_header_seconds(const void *data, size_t size, double *seconds)
{
    if (!data || size == 0 || (uint64_t)size > (uint64_t)INT64_MAX)
        return -1;
    mem_file mf = {data, (sf_count_t)size, 0};
    SF_VIRTUAL_IO vio = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &mf);
    if (!sf)
        return -1;
    sf_close(sf);
    if (info.frames <= 0 || info.frames == SF_COUNT_MAX ||
        info.samplerate <= 0)
        return -1;
    *seconds = (double)info.frames / info.samplerate;
    return 0;
}
