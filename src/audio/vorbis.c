/* Ogg Vorbis through libvorbisfile (see vorbis.h for why not through
 * libsndfile). The stream is decoded in one pass, without seeking: a
 * length from the last page's granule position is not needed (the reader
 * grows its buffers with what is decoded), and one pass keeps only the
 * current logical stream's headers in memory. */
#include "audio/vorbis.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ogg/ogg.h>
#define OV_EXCLUDE_STATIC_CALLBACKS /* vorbisfile.h's unused static tables */
#include <vorbis/vorbisfile.h>

struct hv_vorbis {
    OggVorbis_File vf;
    hv_vorbis_read_fn read;
    void *user;
    long rate;
    int channels;
    int link;   /* the logical stream of the last frames decoded */
    int hole;   /* libvorbisfile reported a hole since then */
    int failed; /* a decoder error was met */
    int ended;  /* ... one after which nothing more is decoded */
    int fatal;  /* frames came after a hole, or in another format */
    const char *why;
};

/* Skips the ID3v2 tags at the start of head as libsndfile does
 * (id3_skip, repeated): the offset of what follows them. */
static size_t skip_id3(const unsigned char *head, size_t n) {
    size_t at = 0;
    while (n - at >= 10 && memcmp(head + at, "ID3", 3) == 0) {
        size_t len = ((size_t)(head[at + 6] & 0x7f) << 21 | (size_t)(head[at + 7] & 0x7f) << 14 |
                      (size_t)(head[at + 8] & 0x7f) << 7 | (size_t)(head[at + 9] & 0x7f)) +
                     10;
        if (len >= n - at) break; /* libsndfile keeps a tag that reaches the end */
        at += len;
    }
    return at;
}

int hv_vorbis_detect(const unsigned char *head, size_t n) {
    if (n > HV_VORBIS_DETECT_BYTES) n = HV_VORBIS_DETECT_BYTES;
    size_t at = skip_id3(head, n);
    /* libsndfile takes a stream for Ogg by its first four bytes */
    if (n - at < 4 || memcmp(head + at, "OggS", 4) != 0) return 0;
    ogg_sync_state oy;
    ogg_page og;
    ogg_sync_init(&oy);
    int vorbis = 0;
    char *buf = ogg_sync_buffer(&oy, (long)(n - at));
    if (buf) {
        memcpy(buf, head + at, n - at);
        ogg_sync_wrote(&oy, (long)(n - at));
        /* the first whole page, garbage before it skipped, as libsndfile's
         * ogg_read_first_page finds it; its first packet opens the body */
        int r;
        while ((r = ogg_sync_pageout(&oy, &og)) < 0) continue; /* -1: bytes skipped */
        if (r == 1) vorbis = og.body_len >= 7 && memcmp(og.body, "\x01vorbis", 7) == 0;
    }
    ogg_sync_clear(&oy);
    return vorbis;
}

#define HOLE "Ogg Vorbis: a page of the stream is missing or damaged"

static size_t ov_read_cb(void *ptr, size_t size, size_t nmemb, void *user) {
    hv_vorbis *v = user;
    if (size == 0 || nmemb > SIZE_MAX / size) return 0;
    size_t want = size * nmemb, got = v->read(ptr, want, v->user);
    return got / size;
}

static const char *open_problem(int rc) {
    switch (rc) {
        case OV_EREAD: return "Ogg Vorbis: read error";
        case OV_ENOTVORBIS: return "Ogg Vorbis: no Vorbis stream, or its headers are cut short";
        case OV_EVERSION: return "Ogg Vorbis: unsupported Vorbis version";
        case OV_EBADHEADER: return "Ogg Vorbis: malformed or cut Vorbis headers";
        default: return "Ogg Vorbis: cannot open the stream";
    }
}

hv_vorbis *hv_vorbis_open(hv_vorbis_read_fn read, void *user, long *rate, int *channels,
                          const char **why, int *io) {
    *why = "out of memory";
    *io = 0;
    hv_vorbis *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->read = read;
    v->user = user;
    v->why = "no error";
    /* no seek or tell: one pass (libvorbisfile then never seeks) */
    ov_callbacks cb = {
        .read_func = ov_read_cb, .seek_func = NULL, .close_func = NULL, .tell_func = NULL};
    int rc = ov_open_callbacks(v, &v->vf, NULL, 0, cb);
    vorbis_info *vi = rc == 0 ? ov_info(&v->vf, -1) : NULL;
    if (rc != 0 || !vi || vi->channels < 1 || vi->rate < 1 || vi->rate > INT_MAX) {
        *why = rc != 0 ? open_problem(rc) : "Ogg Vorbis: no channels or no sample rate";
        *io = rc == OV_EREAD;
        hv_vorbis_close(v); /* ov_open_callbacks clears what it made on failure; this is safe */
        return NULL;
    }
    v->rate = *rate = vi->rate;
    v->channels = *channels = vi->channels;
    return v;
}

long hv_vorbis_read(hv_vorbis *v, float *buf, long frames) {
    long got = 0;
    while (got < frames && !v->ended) {
        float **pcm = NULL;
        int link = 0;
        long want = frames - got;
        long r = ov_read_float(&v->vf, &pcm, want > INT_MAX ? INT_MAX : (int)want, &link);
        if (r == 0) { /* the end; a hole just before it is where a cut file ends */
            if (v->hole) v->failed = 1, v->why = HOLE;
            break;
        }
        if (r == OV_HOLE) { /* a lost or damaged page, or (below) a new stream */
            v->hole = 1;
            continue;
        }
        if (r < 0) { /* a bad link or a broken packet: the stream ends here */
            v->failed = v->ended = 1;
            v->why = r == OV_EBADLINK ? "Ogg Vorbis: a malformed chained stream"
                                      : "Ogg Vorbis: decoding failed";
            break;
        }
        /* Read without seeking, libvorbisfile reports a hole where one
         * chained stream ends and the next begins; any other hole is audio
         * lost inside the stream, and the frames after it are refused. */
        if (v->hole && link == v->link) {
            v->fatal = v->ended = 1;
            v->why = HOLE;
            break;
        }
        v->hole = 0;
        v->link = link;
        vorbis_info *vi = ov_info(&v->vf, -1);
        if (!vi || vi->channels != v->channels || vi->rate != v->rate) {
            v->fatal = v->ended = 1;
            v->why = "Ogg Vorbis: a chained stream changes its sample rate or channels";
            break;
        }
        if (r > want) r = want;
        for (long i = 0; i < r; i++)
            for (int c = 0; c < v->channels; c++)
                buf[(size_t)(got + i) * (size_t)v->channels + (size_t)c] = pcm[c][i];
        got += r;
    }
    return got;
}

int hv_vorbis_failed(const hv_vorbis *v) { return v->failed; }
int hv_vorbis_fatal(const hv_vorbis *v) { return v->fatal; }
const char *hv_vorbis_error(const hv_vorbis *v) { return v->why; }

void hv_vorbis_close(hv_vorbis *v) {
    if (!v) return;
    ov_clear(&v->vf);
    free(v);
}
