/* Audio input: files through libsndfile (MPEG audio through libmpg123,
 * Ogg Vorbis through libvorbisfile, and, where the build has them, the
 * containers of src/audio/ffmpeg.h through FFmpeg's libraries), downmix
 * and resampling through libsoxr. Every file is treated as hostile: sizes are checked before
 * anything is allocated and every sample is checked before it is used. */
#include "audio/audio.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>
#include <soxr.h>
#ifdef HV_HAVE_MPG123
#include <mpg123.h>
#endif

#include "audio/ffmpeg.h"
#include "audio/vorbis.h"

/* Reads a chunk of frames at a time; also the first allocation when the
 * header gives no usable length. */
#define READ_CHUNK (1 << 16)

/* Largest first allocation trusted from a header's frame count; beyond it
 * the buffer grows with what is actually decoded, so a lying header cannot
 * make us reserve gigabytes for a small file. */
#define TRUST_FRAMES (1 << 22)

/* HV_AUDIO_MAX_SAMPLES, or less where size_t could not count the bytes
 * (32-bit hosts). */
static uint64_t max_samples(void) {
    uint64_t fit = SIZE_MAX / sizeof(float);
    return HV_AUDIO_MAX_SAMPLES < fit ? HV_AUDIO_MAX_SAMPLES : fit;
}

static const char *sample_problem(float v) { return isnan(v) ? "NaN" : "infinite"; }

/* An open audio stream: libsndfile's, libmpg123's for MPEG audio,
 * libvorbisfile's for Ogg Vorbis, or FFmpeg's for the rest. */
typedef struct source {
    SNDFILE *sf;
    hv_vorbis *ov;
#ifdef HV_HAVE_FFMPEG
    hv_ffmpeg *ff;
#endif
#ifdef HV_HAVE_MPG123
    mpg123_handle *mh;
    int channels;
    int failed; /* mpg123_read reported an error */
#endif
} source;

static hv_status decode(source *sf, const SF_INFO *info, const char *path, double max_seconds,
                        float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                        hv_error *e);
static hv_status decode_mono(source *sf, const SF_INFO *inf, const char *path, double max_seconds,
                             int target_rate, float **out, size_t *n_out, hv_error *e);

/* A file for libsndfile's virtual I/O: bytes in memory, or a descriptor
 * read with pread, seen through an optional 8-byte patch (below). */
typedef struct vfile {
    const unsigned char *data; /* NULL: read fd */
    int fd;
    sf_count_t size, pos;
    sf_count_t patch_at; /* -1: none */
    unsigned char patch[8];
    int64_t claimed;              /* FLAC: the frames its STREAMINFO claims, else -1 */
    char ffwhy[HV_FFMPEG_WHY];    /* FFmpeg's open error */
    char why[HV_FFMPEG_WHY + 96]; /* an open error that is not a static phrase */
} vfile;

static sf_count_t vf_len(void *u) { return ((vfile *)u)->size; }

static sf_count_t vf_seek(sf_count_t off, int whence, void *u) {
    vfile *m = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
    if (off > 0 ? base > m->size - off : base + off < 0) return -1;
    m->pos = base + off;
    return m->pos;
}

/* count bytes at `at` into ptr, patch applied; what was read */
static sf_count_t vf_pread(vfile *m, void *ptr, sf_count_t count, sf_count_t at) {
    sf_count_t left = m->size - at;
    if (count > left) count = left;
    if (count <= 0) return 0;
    sf_count_t got = 0;
    if (m->data) {
        memcpy(ptr, m->data + at, (size_t)count);
        got = count;
    } else {
        while (got < count) {
            ssize_t r = pread(m->fd, (char *)ptr + got, (size_t)(count - got), (off_t)(at + got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += r;
        }
    }
    for (sf_count_t i = 0; m->patch_at >= 0 && i < 8; i++)
        if (m->patch_at + i >= at && m->patch_at + i < at + got)
            ((unsigned char *)ptr)[m->patch_at + i - at] = m->patch[i];
    return got;
}

static sf_count_t vf_read(void *ptr, sf_count_t count, void *u) {
    vfile *m = u;
    sf_count_t got = vf_pread(m, ptr, count, m->pos);
    m->pos += got;
    return got;
}

static sf_count_t vf_write(const void *ptr, sf_count_t count, void *u) {
    (void)ptr, (void)count, (void)u;
    return 0;
}

static sf_count_t vf_tell(void *u) { return ((vfile *)u)->pos; }

#ifdef HV_HAVE_MPG123
/* MPEG audio is decoded with libmpg123 directly rather than through
 * libsndfile: libsndfile cannot pass libmpg123 its MPG123_QUIET flag, and
 * without it libmpg123 writes its complaints about damaged frames
 * ("big_values too large!") to standard error, which a library must not
 * do. The flags are libsndfile's own (mpeg_decode.c), so that the samples
 * are the same. */
static ssize_t mp_read(void *u, void *buf, size_t n) {
    return (ssize_t)vf_read(buf, (sf_count_t)n, u);
}

static off_t mp_seek(void *u, off_t off, int whence) {
    sf_count_t r = vf_seek((sf_count_t)off, whence, u);
    return r < 0 ? (off_t)-1 : (off_t)r;
}

static int mp_open(vfile *m, SF_INFO *info, source *src) {
    int err = MPG123_OK;
    if (mpg123_init() != MPG123_OK) return -1; /* a no-op since 1.27 */
    mpg123_handle *mh = mpg123_new(NULL, &err);
    if (!mh) return -1;
    long rate = 0;
    int ch = 0, enc = 0;
    m->pos = 0;
    if (mpg123_param(mh, MPG123_ADD_FLAGS, MPG123_QUIET, 0.) != MPG123_OK ||
        mpg123_param(mh, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 0.) != MPG123_OK ||
        mpg123_param(mh, MPG123_ADD_FLAGS, MPG123_FORCE_FLOAT | MPG123_GAPLESS, 0.) != MPG123_OK ||
#if MPG123_API_VERSION >= 45
        mpg123_param(mh, MPG123_ADD_FLAGS, MPG123_NO_FRANKENSTEIN, 0.) != MPG123_OK ||
#endif
        mpg123_replace_reader_handle(mh, mp_read, mp_seek, NULL) != MPG123_OK ||
        mpg123_open_handle(mh, m) != MPG123_OK ||
        mpg123_getformat(mh, &rate, &ch, &enc) != MPG123_OK ||
        mpg123_format_none(mh) != MPG123_OK ||
        mpg123_format(mh, rate, ch, MPG123_ENC_FLOAT_32) != MPG123_OK || rate < 1 ||
        rate > INT32_MAX || ch < 1) {
        mpg123_delete(mh);
        return -1;
    }
    off_t len = mpg123_length(mh);
    memset(info, 0, sizeof *info);
    info->samplerate = (int)rate;
    info->channels = ch;
    info->frames = len > 0 ? (sf_count_t)len : SF_COUNT_MAX;
    info->format = SF_FORMAT_MPEG;
    src->mh = mh;
    src->channels = ch;
    return 0;
}

/* MPEG by its first bytes: an ID3v2 tag or an MPEG frame sync with a
 * layer (layer bits 00 are reserved in MPEG audio, and mark AAC's ADTS
 * header instead, which FFmpeg reads). */
static int looks_mpeg(vfile *m) {
    unsigned char h[3];
    if (vf_pread(m, h, sizeof h, 0) != (sf_count_t)sizeof h) return 0;
    return memcmp(h, "ID3", 3) == 0 || (h[0] == 0xFF && (h[1] & 0xE0) == 0xE0 && (h[1] & 0x06));
}
#endif

static sf_count_t src_readf(source *s, float *buf, sf_count_t frames) {
    if (s->ov) return hv_vorbis_read(s->ov, buf, frames > LONG_MAX ? LONG_MAX : (long)frames);
#ifdef HV_HAVE_FFMPEG
    if (s->ff) return hv_ffmpeg_read(s->ff, buf, frames > LONG_MAX ? LONG_MAX : (long)frames);
#endif
#ifdef HV_HAVE_MPG123
    if (s->mh) {
        size_t frame = (size_t)s->channels * sizeof(float);
        size_t want = (size_t)frames * frame, got = 0;
        int idle = 0;
        while (got < want && !s->failed) {
            size_t done = 0;
            int r = mpg123_read(s->mh, (unsigned char *)buf + got, want - got, &done);
            got += done;
            if (r == MPG123_DONE) break;
            if (r == MPG123_NEW_FORMAT) continue; /* the locked format, announced */
            if (r != MPG123_OK) s->failed = 1;
            if (done == 0 && ++idle > 16) break;
        }
        return (sf_count_t)(got / frame);
    }
#endif
    return sf_readf_float(s->sf, buf, frames);
}

static int src_error(source *s) {
    if (s->ov) return hv_vorbis_failed(s->ov);
#ifdef HV_HAVE_FFMPEG
    if (s->ff) return hv_ffmpeg_failed(s->ff);
#endif
#ifdef HV_HAVE_MPG123
    if (s->mh) return s->failed;
#endif
    return sf_error(s->sf) != SF_ERR_NO_ERROR;
}

static const char *src_strerror(source *s) {
    if (s->ov) return hv_vorbis_error(s->ov);
#ifdef HV_HAVE_FFMPEG
    if (s->ff) return hv_ffmpeg_error(s->ff);
#endif
#ifdef HV_HAVE_MPG123
    if (s->mh) return mpg123_strerror(s->mh);
#endif
    return sf_strerror(s->sf);
}

/* 1 when the stream went on in a form the samples so far cannot take (a
 * chained Ogg stream, or an FFmpeg stream, that changes its rate or
 * channels): the input fails. */
static int src_fatal(source *s) {
#ifdef HV_HAVE_FFMPEG
    if (s->ff) return hv_ffmpeg_fatal(s->ff);
#endif
    return s->ov && hv_vorbis_fatal(s->ov);
}

static void src_close(source *s) {
    hv_vorbis_close(s->ov);
    s->ov = NULL;
#ifdef HV_HAVE_FFMPEG
    hv_ffmpeg_close(s->ff);
    s->ff = NULL;
#endif
#ifdef HV_HAVE_MPG123
    if (s->mh) mpg123_delete(s->mh);
    s->mh = NULL;
#endif
    if (s->sf) sf_close(s->sf);
    s->sf = NULL;
}

/* Ogg Vorbis by its first bytes (hv_vorbis_detect, which looks at no more
 * than HV_VORBIS_DETECT_BYTES; read only when they begin as an ID3 tag or
 * an Ogg page does); -1 when out of memory. */
static int looks_vorbis(vfile *m) {
    unsigned char h[4];
    if (vf_pread(m, h, sizeof h, 0) != (sf_count_t)sizeof h ||
        (memcmp(h, "OggS", 4) != 0 && memcmp(h, "ID3", 3) != 0))
        return 0;
    size_t n = m->size < HV_VORBIS_DETECT_BYTES ? (size_t)m->size : HV_VORBIS_DETECT_BYTES;
    if (m->data) return hv_vorbis_detect(m->data, n);
    unsigned char *b = malloc(n);
    if (!b) return -1;
    int r = hv_vorbis_detect(b, (size_t)vf_pread(m, b, (sf_count_t)n, 0));
    free(b);
    return r;
}

static size_t vorbis_read(void *buf, size_t n, void *u) {
    sf_count_t got = vf_read(buf, (sf_count_t)n, u);
    return got > 0 ? (size_t)got : 0;
}

static int vorbis_open(vfile *m, SF_INFO *info, source *src, const char **why, int *io) {
    long rate = 0;
    int ch = 0;
    m->pos = 0;
    src->ov = hv_vorbis_open(vorbis_read, m, &rate, &ch, why, io);
    if (!src->ov) return -1;
    memset(info, 0, sizeof *info);
    info->samplerate = (int)rate; /* at most INT_MAX (hv_vorbis_open) */
    info->channels = ch;
    info->frames = SF_COUNT_MAX; /* unknown: decoded in one pass */
    info->format = SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    return 0;
}

/* The container a file's first bytes name, among those FFmpeg's libraries
 * read (src/audio/ffmpeg.h) and libsndfile does not: for messages; NULL
 * when none. */
static const char *container_name(vfile *m) {
    unsigned char h[192];
    sf_count_t n = vf_pread(m, h, sizeof h, 0);
    if (n >= 8 && (memcmp(h + 4, "ftyp", 4) == 0 || memcmp(h + 4, "moov", 4) == 0 ||
                   memcmp(h + 4, "mdat", 4) == 0 || memcmp(h + 4, "wide", 4) == 0))
        return "an MP4/M4A/MOV file";
    if (n >= 4 && memcmp(h, "\x1a\x45\xdf\xa3", 4) == 0) return "a WebM/Matroska file";
    if (n >= 5 && memcmp(h, "#!AMR", 5) == 0) return "an AMR file";
    if (n >= 8 && memcmp(h, "\x30\x26\xb2\x75\x8e\x66\xcf\x11", 8) == 0) return "a WMA/ASF file";
    if (n >= 12 && memcmp(h, "RIFF", 4) == 0 && memcmp(h + 8, "AVI ", 4) == 0) return "an AVI file";
    if (n >= 3 && memcmp(h, "FLV", 3) == 0) return "an FLV file";
    if (n >= 2 && h[0] == 0xFF && (h[1] & 0xF6) == 0xF0) return "an AAC (ADTS) file";
    if (n >= 189 && h[0] == 0x47 && h[188] == 0x47) return "an MPEG-TS file";
    return NULL;
}

#ifdef HV_HAVE_FFMPEG
static int64_t ff_read(void *buf, int64_t n, void *u) {
    vfile *m = u;
    sf_count_t got = vf_read(buf, (sf_count_t)n, u);
    /* a descriptor that gives less than its size: a read error */
    if (got < n && m->pos < m->size && !m->data) return got > 0 ? got : -1;
    return got;
}

static int64_t ff_seek(int64_t off, int whence, void *u) {
    return vf_seek((sf_count_t)off, whence, u);
}

/* Opens the vfile with FFmpeg (the containers libsndfile does not read);
 * 0 on success, else -1 with *why (m->ffwhy) saying what is wrong. */
static int ffmpeg_open(vfile *m, SF_INFO *info, source *src, const char **why, int *io) {
    long rate = 0;
    int ch = 0;
    m->pos = 0;
    m->patch_at = -1;
    src->ff = hv_ffmpeg_open(ff_read, ff_seek, m->size, m, &rate, &ch, m->ffwhy, io);
    if (!src->ff) {
        *why = m->ffwhy;
        return -1;
    }
    memset(info, 0, sizeof *info);
    info->samplerate = rate > INT_MAX ? INT_MAX : (int)rate; /* check_header refuses it */
    info->channels = ch;
    info->frames = SF_COUNT_MAX; /* unknown: decoded in one pass */
    return 0;
}
#endif

/* Opens a vfile: MPEG with libmpg123 (above), Ogg Vorbis with
 * libvorbisfile (never libsndfile, which leaks when it fails to open one:
 * src/audio/vorbis.h), the rest with libsndfile; 0 on success, else -1
 * with *why saying what is wrong and *io 1 for a read error. libsndfile trusts a
 * FLAC's STREAMINFO total and stops there, so a header that understates
 * the length would truncate the audio without a word: a native FLAC is
 * shown to it with that total set to 0 ("unknown"), so that it decodes to
 * the real end of the stream, and info->frames is set back to the claim
 * for the checks made before decoding (the limits, the first
 * allocation). */
static int vf_open(vfile *m, SF_INFO *info, source *src, const char **why, int *io) {
    memset(src, 0, sizeof *src);
    m->pos = 0;
    m->patch_at = -1;
    m->claimed = -1;
    *io = 0;
#ifdef HV_HAVE_MPG123
    if (looks_mpeg(m) && mp_open(m, info, src) == 0) return 0;
    m->pos = 0;
#endif
    int vorbis = looks_vorbis(m);
    if (vorbis) {
        if (vorbis > 0) return vorbis_open(m, info, src, why, io);
        *why = "out of memory";
        return -1;
    }
    unsigned char h[26];
    if (vf_pread(m, h, sizeof h, 0) == (sf_count_t)sizeof h && memcmp(h, "fLaC", 4) == 0 &&
        (h[4] & 0x7f) == 0 && h[5] == 0 && h[6] == 0 && h[7] == 34) {
        /* STREAMINFO: bytes 18..25 hold rate (20 bits), channels - 1 (3),
         * bits - 1 (5) and the total samples per channel (36) */
        uint64_t v = 0;
        for (int i = 18; i < 26; i++) v = v << 8 | h[i];
        m->claimed = (int64_t)(v & (((uint64_t)1 << 36) - 1));
        v &= ~(((uint64_t)1 << 36) - 1);
        for (int i = 0; i < 8; i++) m->patch[i] = (unsigned char)(v >> (56 - 8 * i));
        m->patch_at = 18;
    }
    SF_VIRTUAL_IO vio = {.get_filelen = vf_len,
                         .seek = vf_seek,
                         .read = vf_read,
                         .write = vf_write,
                         .tell = vf_tell};
    memset(info, 0, sizeof *info);
    src->sf = sf_open_virtual(&vio, SFM_READ, info, m);
    if (!src->sf) {
        *why = sf_strerror(NULL);
        *io = sf_error(NULL) == SF_ERR_SYSTEM;
        if (*io) return -1;
        /* what libsndfile does not read: FFmpeg's containers, or a message
         * that names the container this build lacks */
        const char *kind = container_name(m);
#ifdef HV_HAVE_FFMPEG
        if (ffmpeg_open(m, info, src, why, io) == 0) return 0;
        if (!kind) {
            *why = sf_strerror(NULL);
            *io = 0;
            return -1;
        }
        snprintf(m->why, sizeof m->why, "%s; %s", kind, m->ffwhy);
#else
        if (!kind) return -1;
        snprintf(m->why, sizeof m->why,
                 "%s, which this hviske cannot read: it was built without FFmpeg's libraries",
                 kind);
#endif
        *why = m->why;
        return -1;
    }
    if (m->claimed > 0 && info->frames == SF_COUNT_MAX) info->frames = m->claimed;
    return 0;
}

/* An audio input open for decoding: its bytes (a file's descriptor, or
 * memory), the decoder on them and what the header says. decode() and
 * decode_mono() close the decoder; close_opened() then the file. */
typedef struct opened {
    vfile vf; /* vf.fd: -1 for memory */
    SF_INFO info;
    source src;
} opened;

static void close_opened(opened *o) {
    if (o->vf.fd >= 0) close(o->vf.fd);
    o->vf.fd = -1;
}

/* Opens an audio path for libsndfile. The descriptor is opened
 * non-blocking first, so that a FIFO (or a device) cannot block the
 * caller before it is looked at, and must be a regular file: a FIFO is
 * refused (HV_ERR_IO; the CLI reads pipes through "-" instead). */
static hv_status open_path(const char *path, opened *o, hv_error *e) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return hv_err(e, HV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    hv_status rc;
    if (fstat(fd, &st) != 0) {
        rc = hv_err(e, HV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        rc = hv_err(e, HV_ERR_IO, "%s: cannot open: is a directory", path);
    } else if (S_ISFIFO(st.st_mode)) {
        rc =
            hv_err(e, HV_ERR_IO,
                   "%s: cannot open: a FIFO, not a regular file (pipe it to standard input)", path);
    } else if (!S_ISREG(st.st_mode)) {
        rc = hv_err(e, HV_ERR_IO, "%s: cannot open: not a regular file", path);
    } else if (st.st_size == 0) {
        rc = hv_err(e, HV_ERR_FORMAT, "%s: empty file", path);
    } else {
        int fl = fcntl(fd, F_GETFL);
        if (fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
            rc = hv_err(e, HV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        } else {
            o->vf = (vfile){.fd = fd, .size = (sf_count_t)st.st_size};
            const char *why = NULL;
            int io = 0;
            if (vf_open(&o->vf, &o->info, &o->src, &why, &io) == 0) return HV_OK;
            rc = hv_err(e, io ? HV_ERR_IO : HV_ERR_FORMAT, "%s: not a readable audio file (%s)",
                        path, why);
        }
    }
    close(fd);
    return rc;
}

/* Opens an audio file's bytes in memory for decoding; `name` stands for
 * it in messages. */
static hv_status open_memory(const void *data, size_t size, const char *name, opened *o,
                             hv_error *e) {
    if (!data || size == 0) return hv_err(e, HV_ERR_FORMAT, "%s: empty input", name);
    if ((uint64_t)size > (uint64_t)INT64_MAX) return hv_err(e, HV_ERR_LIMIT, "%s: too large", name);
    o->vf = (vfile){.data = data, .fd = -1, .size = (sf_count_t)size};
    const char *why = NULL;
    int io = 0;
    if (vf_open(&o->vf, &o->info, &o->src, &why, &io))
        return hv_err(e, HV_ERR_FORMAT, "%s: not a readable audio file (%s)", name, why);
    return HV_OK;
}

static hv_status check_header(const SF_INFO *info, const char *path, double max_seconds,
                              size_t *max_frames, hv_error *e);
static hv_status too_long(const char *path, double max_seconds, hv_error *e);

/* A stream (a pipe, standard input) is copied into a temporary file in
 * blocks of SPOOL_BLOCK bytes, so that formats which seek work from it.
 * Its format is looked for once PROBE_FIRST bytes are in and at its end;
 * a stream that is no audio file by then is refused, unless it begins as a
 * container whose tags, pictures or chunks may come before the audio's
 * format (tagged): then again at every 4 times as many bytes, up to
 * PROBE_MAX. Once its header is read, the copy may hold the
 * bytes of the longest audio allowed (check_header's frames, at the
 * format's bytes per sample) plus SPOOL_SLACK for headers, tags, cover art
 * and container framing; more is HV_ERR_LIMIT, as audio too long. */
#define SPOOL_BLOCK (1 << 16)
#define PROBE_FIRST ((sf_count_t)1 << 16)
#define PROBE_MAX   ((sf_count_t)1 << 24)
#define SPOOL_SLACK ((sf_count_t)64 << 20)

/* Bytes per sample of a libsndfile format at most: its PCM width, 8 for
 * the compressed ones (none of which takes more at any bitrate). */
static sf_count_t stored_bytes(int format) {
    switch (format & SF_FORMAT_SUBMASK) {
        case SF_FORMAT_PCM_S8:
        case SF_FORMAT_PCM_U8:
        case SF_FORMAT_ULAW:
        case SF_FORMAT_ALAW: return 1;
        case SF_FORMAT_PCM_16: return 2;
        case SF_FORMAT_PCM_24: return 3;
        case SF_FORMAT_PCM_32:
        case SF_FORMAT_FLOAT: return 4;
        default: return 8;
    }
}

/* Whether the file at fd begins as a container that may carry more than
 * PROBE_FIRST bytes before its audio's format: an ID3 tag (MP3), FLAC,
 * Ogg, RIFF WAV (RIFX, RF64), AIFF and CAF. */
static int tagged(int fd) {
    static const char *const magic[] = {"ID3",  "fLaC", "OggS", "RIFF",
                                        "RIFX", "RF64", "FORM", "caff"};
    char h[4];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h) return 0;
    for (size_t i = 0; i < sizeof magic / sizeof *magic; i++)
        if (memcmp(h, magic[i], strlen(magic[i])) == 0) return 1;
    return 0;
}

/* Whether the first size bytes of the file at fd open as audio; *info
 * then holds its header, else *why says what is wrong. */
static int probe(int fd, sf_count_t size, SF_INFO *info, const char **why) {
    vfile v = {.fd = fd, .size = size};
    source src;
    int io = 0;
    if (vf_open(&v, info, &src, why, &io)) return 0;
    src_close(&src);
    return 1;
}

/* *fd: an unlinked temporary file in $TMPDIR (else /tmp). */
static hv_status spool_file(const char *name, int *fd, hv_error *e) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    char path[4096];
    if (snprintf(path, sizeof path, "%s/hviske-stream-XXXXXX", dir) >= (int)sizeof path)
        return hv_err(e, HV_ERR_IO, "%s: TMPDIR is too long", name);
    if ((*fd = mkstemp(path)) < 0)
        return hv_err(e, HV_ERR_IO, "%s: cannot make a temporary file in %s: %s", name, dir,
                      strerror(errno));
    unlink(path);
    fcntl(*fd, F_SETFD, FD_CLOEXEC);
    return HV_OK;
}

/* Copies the stream at `in` into a temporary file within the bounds above;
 * on success o->vf reads it. */
static hv_status open_spooled(int in, const char *name, double max_seconds, opened *o,
                              hv_error *e) {
    int fd = -1;
    hv_status rc = spool_file(name, &fd, e);
    if (rc) return rc;
    unsigned char *buf = malloc(SPOOL_BLOCK);
    sf_count_t size = 0, next_probe = PROBE_FIRST, ceiling = -1;
    const char *why = "no data";
    if (!buf) {
        rc = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    for (int eof = 0; !eof;) {
        ssize_t r = read(in, buf, SPOOL_BLOCK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = hv_err(e, HV_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
            goto done;
        }
        eof = r == 0;
        for (ssize_t w = 0; w < r;) {
            ssize_t k = write(fd, buf + w, (size_t)(r - w));
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) {
                rc = hv_err(e, HV_ERR_IO, "%s: cannot copy to a temporary file: %s", name,
                            strerror(errno));
                goto done;
            }
            w += k;
        }
        size += r;
        if (ceiling < 0 && size > 0 && (eof || size >= next_probe)) {
            SF_INFO info;
            size_t max_frames = 0;
            if (probe(fd, size, &info, &why)) {
                if ((rc = check_header(&info, name, max_seconds, &max_frames, e))) goto done;
                double most = (double)max_frames * info.channels * stored_bytes(info.format);
                ceiling = most < (double)(INT64_MAX - SPOOL_SLACK) ? (sf_count_t)most + SPOOL_SLACK
                                                                   : INT64_MAX;
            } else if (eof || size >= PROBE_MAX || !tagged(fd)) {
                rc = hv_err(e, HV_ERR_FORMAT, "%s: not a readable audio file (%s)", name, why);
                goto done;
            } else {
                next_probe *= 4;
            }
        }
        if (ceiling >= 0 && size > ceiling) {
            rc = too_long(name, max_seconds, e);
            goto done;
        }
    }
    if (size == 0) {
        rc = hv_err(e, HV_ERR_FORMAT, "%s: empty input", name);
        goto done;
    }
    o->vf = (vfile){.fd = fd, .size = size};
    int io = 0;
    if (vf_open(&o->vf, &o->info, &o->src, &why, &io)) {
        rc = hv_err(e, io ? HV_ERR_IO : HV_ERR_FORMAT, "%s: not a readable audio file (%s)", name,
                    why);
        goto done;
    }
    fd = -1; /* o's now */
done:
    free(buf);
    if (fd >= 0) close(fd);
    return rc;
}

/* Opens the audio at descriptor `in`: a regular file at its start is read
 * where it is (through a duplicate, so that `in` stays the caller's),
 * anything else (a pipe, a socket, a file at another offset) is copied
 * first (open_spooled). */
static hv_status open_fd(int in, const char *name, double max_seconds, opened *o, hv_error *e) {
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0)
        return hv_err(e, HV_ERR_IO, "%s: cannot read: %s", name,
                      in < 0 ? "no descriptor" : strerror(errno));
    if (S_ISDIR(st.st_mode)) return hv_err(e, HV_ERR_IO, "%s: cannot read: is a directory", name);
    if (!S_ISREG(st.st_mode) || lseek(in, 0, SEEK_CUR) != 0)
        return open_spooled(in, name, max_seconds, o, e);
    if (st.st_size == 0) return hv_err(e, HV_ERR_FORMAT, "%s: empty input", name);
    int fd = fcntl(in, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return hv_err(e, HV_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
    o->vf = (vfile){.fd = fd, .size = (sf_count_t)st.st_size};
    const char *why = NULL;
    int io = 0;
    if (vf_open(&o->vf, &o->info, &o->src, &why, &io) == 0) return HV_OK;
    close(fd);
    return hv_err(e, io ? HV_ERR_IO : HV_ERR_FORMAT, "%s: not a readable audio file (%s)", name,
                  why);
}

/* What a reader reads: the file at path, the stream at fd, or the size
 * bytes at data; `name` stands for it in messages (the path for a file). */
typedef struct input {
    enum { IN_MEMORY, IN_PATH, IN_FD } kind;
    const char *path;
    int fd;
    const void *data;
    size_t size;
    const char *name;
} input;

static hv_status open_input(const input *in, double max_seconds, opened *o, hv_error *e) {
    if (in->kind == IN_MEMORY) return open_memory(in->data, in->size, in->name, o, e);
    if (in->kind == IN_FD) return open_fd(in->fd, in->name, max_seconds, o, e);
    if (!in->path) return hv_err(e, HV_ERR_INVALID_ARG, "audio: NULL path");
    return open_path(in->path, o, e);
}

/* hv_audio_read_file and hv_audio_read_memory (fn names the function in
 * the error of a NULL output). */
static hv_status read_whole(const char *fn, const input *in, double max_seconds, float **pcm,
                            size_t *n_frames, int *sample_rate, int *channels, hv_error *e) {
    if (!pcm || !n_frames || !sample_rate || !channels)
        return hv_err(e, HV_ERR_INVALID_ARG, "%s: NULL output", fn);
    *pcm = NULL;
    *n_frames = 0;
    *sample_rate = 0;
    *channels = 0;
    opened o;
    hv_status rc = open_input(in, max_seconds, &o, e);
    if (rc) return rc;
    rc = decode(&o.src, &o.info, in->name, max_seconds, pcm, n_frames, sample_rate, channels, e);
    close_opened(&o);
    return rc;
}

/* hv_audio_read_file_mono and hv_audio_read_memory_mono, likewise. */
static hv_status read_mono(const char *fn, const input *in, int target_rate, double max_seconds,
                           float **out, size_t *n_out, hv_error *e) {
    if (!out || !n_out) return hv_err(e, HV_ERR_INVALID_ARG, "%s: NULL output", fn);
    *out = NULL;
    *n_out = 0;
    opened o;
    hv_status rc = open_input(in, max_seconds, &o, e);
    if (rc) return rc;
    rc = decode_mono(&o.src, &o.info, in->name, max_seconds, target_rate, out, n_out, e);
    close_opened(&o);
    return rc;
}

hv_status hv_audio_read_file(const char *path, float **pcm, size_t *n_frames, int *sample_rate,
                             int *channels, hv_error *e) {
    const input in = {.kind = IN_PATH, .path = path, .name = path};
    return read_whole("hv_audio_read_file", &in, 0, pcm, n_frames, sample_rate, channels, e);
}

hv_status hv_audio_read_file_mono(const char *path, int target_rate, double max_seconds,
                                  float **out, size_t *n_out, hv_error *e) {
    const input in = {.kind = IN_PATH, .path = path, .name = path};
    return read_mono("hv_audio_read_file_mono", &in, target_rate, max_seconds, out, n_out, e);
}

/* Checks a header's channels, rate and length against what hviske reads
 * and max_seconds (> 0: a limit); *max_frames gets the most frames to
 * decode. */
static hv_status check_header(const SF_INFO *info, const char *path, double max_seconds,
                              size_t *max_frames, hv_error *e) {
    if (info->channels < 1)
        return hv_err(e, HV_ERR_FORMAT, "%s: %d channels", path, info->channels);
    if (info->channels > HV_AUDIO_MAX_CHANNELS) /* a valid file hviske does not read */
        return hv_err(e, HV_ERR_UNSUPPORTED, "%s: %d channels (at most %d supported)", path,
                      info->channels, HV_AUDIO_MAX_CHANNELS);
    if (info->samplerate < HV_AUDIO_MIN_RATE || info->samplerate > HV_AUDIO_MAX_RATE)
        return hv_err(e, HV_ERR_FORMAT,
                      "%s: unsupported sample rate %d Hz (hviske takes %d to %d Hz)", path,
                      info->samplerate, HV_AUDIO_MIN_RATE, HV_AUDIO_MAX_RATE);
    /* Most frames we accept, so that frames * channels floats stay within
     * HV_AUDIO_MAX_SAMPLES (and therefore within size_t). */
    *max_frames = (size_t)(max_samples() / (uint64_t)info->channels);
    if (max_seconds > 0) {
        double lim = max_seconds * info->samplerate;
        if ((double)*max_frames > lim) *max_frames = (size_t)lim;
    }
    /* SF_COUNT_MAX means "unknown length" (pipes, some streams). */
    if (info->frames != SF_COUNT_MAX && info->frames > 0 && (uint64_t)info->frames > *max_frames)
        return max_seconds > 0
                   ? hv_err(e, HV_ERR_LIMIT, "%s: %.1f s of audio, more than the %g s allowed",
                            path, (double)info->frames / info->samplerate, max_seconds)
                   : hv_err(e, HV_ERR_LIMIT,
                            "%s: %lld frames of %d channels is more than hviske "
                            "reads (%llu samples at most)",
                            path, (long long)info->frames, info->channels,
                            (unsigned long long)max_samples());
    return HV_OK;
}

/* The error of decoded audio past max_frames (check_header's limit). */
static hv_status too_long(const char *path, double max_seconds, hv_error *e) {
    if (max_seconds > 0)
        return hv_err(e, HV_ERR_LIMIT, "%s: more than the %g s of audio allowed", path,
                      max_seconds);
    return hv_err(e, HV_ERR_LIMIT, "%s: longer than hviske reads (%llu samples at most)", path,
                  (unsigned long long)max_samples());
}

/* Decodes an open file with every check; closes it. `path` names it in
 * messages. max_seconds > 0 refuses longer audio (HV_ERR_LIMIT), from the
 * header's claim before decoding and from the frames actually decoded. */
static hv_status decode(source *sf, const SF_INFO *inf, const char *path, double max_seconds,
                        float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                        hv_error *e) {
    SF_INFO info = *inf;
    hv_status rc = HV_OK;
    float *buf = NULL;
    size_t got = 0, cap = 0;
    size_t ch = (size_t)(info.channels > 0 ? info.channels : 0);

    size_t max_frames = 0;
    if ((rc = check_header(&info, path, max_seconds, &max_frames, e))) goto done;
    cap = (info.frames > 0 && info.frames != SF_COUNT_MAX)
              ? (size_t)info.frames + 1 /* +1: EOF then needs no growth */
              : READ_CHUNK;
    if (cap > TRUST_FRAMES) cap = TRUST_FRAMES;

    /* Decode until libsndfile says there is no more. A file that ends before
     * its header says (truncated) yields the frames that are there; only a
     * file with no decodable frame at all is an error. err_at: frames when
     * libsndfile first reported an error (SIZE_MAX: none). */
    size_t err_at = SIZE_MAX;
    for (;;) {
        if (!buf || got == cap) {
            if (buf) cap = cap > max_frames / 2 ? max_frames + 1 : cap * 2;
            float *nb = realloc(buf, cap * ch * sizeof *buf);
            if (!nb) {
                rc = hv_err(e, HV_ERR_NOMEM, "%s: out of memory for %zu frames", path, cap);
                goto done;
            }
            buf = nb;
        }
        size_t want = cap - got;
        if (want > READ_CHUNK) want = READ_CHUNK;
        sf_count_t r = src_readf(sf, buf + got * ch, (sf_count_t)want);
        if (src_fatal(sf)) {
            rc = hv_err(e, HV_ERR_FORMAT, "%s: decoding failed after %zu frames: %s", path,
                        got + (size_t)(r > 0 ? r : 0), src_strerror(sf));
            goto done;
        }
        if (r <= 0) break;
        if (err_at != SIZE_MAX) { /* frames after a decoder error: corrupt inside */
            rc = hv_err(e, HV_ERR_FORMAT, "%s: decoding failed after %zu frames: %s", path, err_at,
                        src_strerror(sf));
            goto done;
        }
        got += (size_t)r;
        if (src_error(sf)) err_at = got;
        if (got > max_frames) {
            rc = too_long(path, max_seconds, e);
            goto done;
        }
    }
    /* A decoder error followed by more frames (a corrupt FLAC frame inside
     * the stream, ...) leaves a signal we cannot vouch for: refused above. An
     * error with no frame after it is where a cut file ends (libFLAC's
     * "lost sync" in the last, partial frame; whether libsndfile reports it
     * depends on the read sizes): the frames before it stand, as for any
     * truncated file. decode_mono() applies the same rule. */
    if (got == 0) {
        rc = src_error(sf)
                 ? hv_err(e, HV_ERR_FORMAT, "%s: decoding failed: %s", path, src_strerror(sf))
                 : hv_err(e, HV_ERR_FORMAT, "%s: no audio frames", path);
        goto done;
    }
    /* Float files can carry NaN or infinity; they would poison every
     * feature, so say where they are. */
    for (size_t i = 0; i < got * ch; i++) {
        if (!isfinite(buf[i])) {
            rc = hv_err(e, HV_ERR_FORMAT, "%s: sample %zu of channel %zu (%.3f s) is %s", path,
                        i / ch, i % ch, (double)(i / ch) / info.samplerate, sample_problem(buf[i]));
            goto done;
        }
    }
    if (got < cap) { /* give back the slack; failure to shrink is harmless */
        float *nb = realloc(buf, got * ch * sizeof *buf);
        if (nb) buf = nb;
    }
    *pcm = buf;
    buf = NULL;
    *n_frames = got;
    *sample_rate = info.samplerate;
    *channels = info.channels;
done:
    free(buf);
    src_close(sf);
    return rc;
}

/* Frames decoded per block by the mono readers: the interleaved block is
 * at most MONO_BLOCK * HV_AUDIO_MAX_CHANNELS floats (1 MiB). */
#define MONO_BLOCK 4096

/* Grows the mono output so that at least `need` more samples fit after
 * `len`, never beyond `limit` + MONO_PAD samples in all. */
#define MONO_PAD 4096
static int mono_reserve(float **out, size_t *cap, size_t len, size_t need, size_t limit) {
    if (*cap - len >= need) return 0;
    size_t want = len + need;
    size_t ncap = *cap ? *cap : MONO_PAD;
    while (ncap < want) ncap = ncap > SIZE_MAX / 2 ? want : ncap * 2;
    if (ncap > limit + MONO_PAD && want <= limit + MONO_PAD) ncap = limit + MONO_PAD;
    if (ncap > SIZE_MAX / sizeof **out) return -1;
    float *nb = realloc(*out, ncap * sizeof **out);
    if (!nb) return -1;
    *out = nb;
    *cap = ncap;
    return 0;
}

/* res (cap samples) cut to its n samples: the slack given back (failing
 * to shrink is harmless). */
static float *shrunk(float *res, size_t n, size_t cap) {
    if (n >= cap) return res;
    float *nb = realloc(res, (n ? n : 1) * sizeof *res);
    return nb ? nb : res;
}

/* *out: a streaming soxr resampler from rate to target_rate, one channel
 * of floats at high quality (linear phase, delay compensated): the filter
 * of every conversion here. */
static hv_status make_resampler(int rate, int target_rate, const char *path, soxr_t *out,
                                hv_error *e) {
    soxr_error_t err = NULL;
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    *out = soxr_create(rate, target_rate, 1, &err, &io, &q, &rt);
    if (*out && !err) return HV_OK;
    soxr_delete(*out);
    *out = NULL;
    return hv_err(e, HV_ERR_NOMEM, "%s: resampling %d -> %d Hz failed: %s", path, rate, target_rate,
                  err ? err : "out of memory");
}

/* Feeds soxr the n mono samples at m (eof: flushes it instead) until it
 * took all of them and, when flushing, until it gives nothing more; its
 * output is appended to *res (*len of *cap used, grown within max_out). */
static hv_status feed_resampler(soxr_t sx, const float *m, size_t n, int eof, double ratio,
                                float **res, size_t *cap, size_t *len, size_t max_out,
                                const char *path, hv_error *e) {
    size_t fed = 0;
    for (;;) {
        size_t room = (size_t)((double)(n - fed) * ratio) + MONO_PAD;
        if (mono_reserve(res, cap, *len, room, max_out))
            return hv_err(e, HV_ERR_NOMEM, "%s: out of memory for %zu samples", path, *len + room);
        size_t idone = 0, odone = 0, avail = *cap - *len;
        if (avail == 0)
            return hv_err(e, HV_ERR_LIMIT, "%s: resampling gives more than %zu samples", path,
                          *len);
        soxr_error_t err = soxr_process(sx, eof ? NULL : m + fed, eof ? 0 : n - fed, &idone,
                                        *res + *len, avail, &odone);
        if (err) return hv_err(e, HV_ERR_FORMAT, "%s: resampling failed: %s", path, err);
        fed += idone;
        *len += odone;
        /* done when the input is in and soxr did not fill the room */
        if (eof ? odone == 0 : fed == n && odone < avail) return HV_OK;
    }
}

/* Decodes an open file straight to mono at target_rate, block by block
 * (read MONO_BLOCK frames, check them, average the channels as
 * hv_audio_to_mono does, feed soxr's stream), so that only the mono output
 * grows with the length: the interleaved file is never held whole. The
 * same checks and limits as decode(); closes the file. */
static hv_status decode_mono(source *sf, const SF_INFO *inf, const char *path, double max_seconds,
                             int target_rate, float **out, size_t *n_out, hv_error *e) {
    SF_INFO info = *inf;
    hv_status rc = HV_OK;
    float *blk = NULL, *mono = NULL, *res = NULL;
    size_t len = 0, cap = 0, got = 0;
    soxr_t sx = NULL;
    size_t ch = (size_t)(info.channels > 0 ? info.channels : 0);

    if (target_rate < 1 || target_rate > HV_AUDIO_MAX_RATE) {
        rc = hv_err(e, HV_ERR_INVALID_ARG, "%s: target rate %d Hz (1 to %d supported)", path,
                    target_rate, HV_AUDIO_MAX_RATE);
        goto done;
    }
    size_t max_frames = 0;
    if ((rc = check_header(&info, path, max_seconds, &max_frames, e))) goto done;
    /* Most output samples: max_frames at the target rate, plus slack. */
    size_t max_out = (size_t)((double)max_frames * target_rate / info.samplerate) + 2;
    blk = malloc((size_t)MONO_BLOCK * ch * sizeof *blk);
    mono = ch > 1 ? malloc((size_t)MONO_BLOCK * sizeof *mono) : NULL;
    if (!blk || (ch > 1 && !mono)) {
        rc = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    int resample = info.samplerate != target_rate;
    if (resample && (rc = make_resampler(info.samplerate, target_rate, path, &sx, e))) goto done;
    /* First reservation from the header, trusted up to TRUST_FRAMES. */
    if (info.frames > 0 && info.frames != SF_COUNT_MAX) {
        size_t fr = (size_t)info.frames < TRUST_FRAMES ? (size_t)info.frames : TRUST_FRAMES;
        size_t want = (size_t)((double)fr * target_rate / info.samplerate) + 2;
        if (mono_reserve(&res, &cap, 0, want, max_out)) {
            rc = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
    }
    /* got when libsndfile first reported an error (SIZE_MAX: none yet) */
    size_t err_at = SIZE_MAX;
    for (int eof = 0; !eof;) {
        sf_count_t r = src_readf(sf, blk, MONO_BLOCK);
        size_t nr = r > 0 ? (size_t)r : 0;
        if (src_fatal(sf)) {
            rc = hv_err(e, HV_ERR_FORMAT, "%s: decoding failed after %zu frames: %s", path,
                        got + nr, src_strerror(sf));
            goto done;
        }
        if (nr == 0) eof = 1;
        if (err_at != SIZE_MAX && nr > 0) {
            /* frames after a decoder error: corrupt inside, not cut short */
            rc = hv_err(e, HV_ERR_FORMAT, "%s: decoding failed after %zu frames: %s", path, err_at,
                        src_strerror(sf));
            goto done;
        }
        if (err_at == SIZE_MAX && src_error(sf)) err_at = got + nr;
        if (nr > 0 && got + nr > max_frames) {
            rc = too_long(path, max_seconds, e);
            goto done;
        }
        /* check and downmix: double sums, as hv_audio_to_mono */
        const float *m = blk;
        for (size_t i = 0; i < nr * ch; i++)
            if (!isfinite(blk[i])) {
                rc = hv_err(e, HV_ERR_FORMAT, "%s: sample %zu of channel %zu (%.3f s) is %s", path,
                            got + i / ch, i % ch, (double)(got + i / ch) / info.samplerate,
                            sample_problem(blk[i]));
                goto done;
            }
        if (ch > 1) {
            for (size_t i = 0; i < nr; i++) {
                const float *f = blk + i * ch;
                double s = 0;
                for (size_t c = 0; c < ch; c++) s += f[c];
                mono[i] = (float)(s / (double)ch);
            }
            m = mono;
        }
        got += nr;
        if (!resample) {
            if (mono_reserve(&res, &cap, len, nr, max_out)) {
                rc = hv_err(e, HV_ERR_NOMEM, "%s: out of memory for %zu samples", path, len + nr);
                goto done;
            }
            if (nr) memcpy(res + len, m, nr * sizeof *res); /* res may be NULL at 0 */
            len += nr;
            continue;
        }
        /* the block (NULL at the end: flush) */
        if ((rc = feed_resampler(sx, m, nr, eof, (double)target_rate / info.samplerate, &res, &cap,
                                 &len, max_out, path, e)))
            goto done;
    }
    /* A decoder error with no frame after it is where a cut file ends
     * (libFLAC "lost sync" in the last, partial frame): the frames before
     * it stand, as with decode()'s "truncated file gives the frames that
     * are there". No frame at all is an error. */
    if (got == 0) {
        rc = err_at != SIZE_MAX
                 ? hv_err(e, HV_ERR_FORMAT, "%s: decoding failed: %s", path, src_strerror(sf))
                 : hv_err(e, HV_ERR_FORMAT, "%s: no audio frames", path);
        goto done;
    }
    if (!res && mono_reserve(&res, &cap, 0, 1, max_out)) { /* non-NULL even when empty */
        rc = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    *out = shrunk(res, len, cap);
    res = NULL;
    *n_out = len;
done:
    soxr_delete(sx);
    free(res);
    free(mono);
    free(blk);
    src_close(sf);
    return rc;
}

hv_status hv_audio_read_stream_mono(int fd, const char *name, int target_rate, double max_seconds,
                                    float **out, size_t *n_out, hv_error *e) {
    const input in = {.kind = IN_FD, .fd = fd, .name = name ? name : "<stream>"};
    return read_mono("hv_audio_read_stream_mono", &in, target_rate, max_seconds, out, n_out, e);
}

hv_status hv_audio_read_memory(const void *data, size_t size, const char *name, double max_seconds,
                               float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                               hv_error *e) {
    const input in = {
        .kind = IN_MEMORY, .data = data, .size = size, .name = name ? name : "<memory>"};
    return read_whole("hv_audio_read_memory", &in, max_seconds, pcm, n_frames, sample_rate,
                      channels, e);
}

hv_status hv_audio_read_memory_mono(const void *data, size_t size, const char *name,
                                    int target_rate, double max_seconds, float **out, size_t *n_out,
                                    hv_error *e) {
    const input in = {
        .kind = IN_MEMORY, .data = data, .size = size, .name = name ? name : "<memory>"};
    return read_mono("hv_audio_read_memory_mono", &in, target_rate, max_seconds, out, n_out, e);
}

hv_status hv_audio_to_mono(const float *pcm, size_t n_frames, int channels, int sample_rate,
                           int target_rate, float **out, size_t *n_out, hv_error *e) {
    if (!out || !n_out) return hv_err(e, HV_ERR_INVALID_ARG, "hv_audio_to_mono: NULL output");
    *out = NULL;
    *n_out = 0;
    if (channels < 1 || channels > HV_AUDIO_MAX_CHANNELS)
        return hv_err(e, HV_ERR_INVALID_ARG, "audio: %d channels (1 to %d supported)", channels,
                      HV_AUDIO_MAX_CHANNELS);
    if (sample_rate < HV_AUDIO_MIN_RATE || sample_rate > HV_AUDIO_MAX_RATE || target_rate < 1 ||
        target_rate > HV_AUDIO_MAX_RATE)
        return hv_err(e, HV_ERR_INVALID_ARG, "audio: sample rates %d -> %d Hz (%d to %d supported)",
                      sample_rate, target_rate, HV_AUDIO_MIN_RATE, HV_AUDIO_MAX_RATE);
    if (n_frames == 0 || !pcm) return hv_err(e, HV_ERR_INVALID_ARG, "audio: no samples");
    if (n_frames > max_samples() / (unsigned)channels)
        return hv_err(e, HV_ERR_LIMIT,
                      "audio: %zu frames of %d channels is "
                      "more than hviske takes (%llu samples at most)",
                      n_frames, channels, (unsigned long long)max_samples());

    /* Block by block: check every sample, downmix in double (so that loud
     * channels cannot overflow), feed the streaming resampler, so that
     * memory is the output plus one block whatever the input's length,
     * channels and rate. Streamed, soxr emits what soxr_oneshot would:
     * round(n * target / rate) samples, time-aligned with the input. */
    hv_status rc = HV_OK;
    int resample = sample_rate != target_rate;
    double ratio = (double)target_rate / sample_rate;
    /* n * rate fits in 64 bits: n <= 2^32 and rates <= 2^20 */
    size_t want =
        resample
            ? (size_t)(((uint64_t)n_frames * (uint64_t)target_rate * 2 + (uint64_t)sample_rate) /
                       (2 * (uint64_t)sample_rate))
            : n_frames;
    float *mono = NULL, *res = NULL;
    size_t cap = 0, len = 0;
    soxr_t sx = NULL;
    if ((channels > 1 && resample && !(mono = malloc(MONO_BLOCK * sizeof *mono))) ||
        mono_reserve(&res, &cap, 0, want + MONO_PAD, want + MONO_PAD)) {
        rc = hv_err(e, HV_ERR_NOMEM, "audio: out of memory for %zu samples", want);
        goto done;
    }
    if (resample && (rc = make_resampler(sample_rate, target_rate, "audio", &sx, e))) goto done;
    for (size_t at = 0; at < n_frames; at += MONO_BLOCK) {
        size_t nb = n_frames - at < MONO_BLOCK ? n_frames - at : MONO_BLOCK;
        float *m = resample ? mono : res + at;
        for (size_t i = 0; i < nb; i++) {
            const float *f = pcm + (at + i) * (size_t)channels;
            double s = 0;
            for (int c = 0; c < channels; c++) {
                if (!isfinite(f[c])) {
                    rc = hv_err(e, HV_ERR_FORMAT, "audio: sample %zu of channel %d is %s", at + i,
                                c, sample_problem(f[c]));
                    goto done;
                }
                s += f[c];
            }
            if (m) m[i] = channels == 1 ? f[0] : (float)(s / channels);
        }
        if (resample && (rc = feed_resampler(sx, channels > 1 ? mono : pcm + at, nb, 0, ratio, &res,
                                             &cap, &len, want + MONO_PAD, "audio", e)))
            goto done;
    }
    if (resample &&
        (rc = feed_resampler(sx, NULL, 0, 1, ratio, &res, &cap, &len, want + MONO_PAD, "audio", e)))
        goto done;
    *n_out = resample ? len : n_frames;
    *out = shrunk(res, *n_out, cap);
    res = NULL;
done:
    soxr_delete(sx);
    free(res);
    free(mono);
    return rc;
}
