/* Audio input: files through libsndfile, downmix and resampling through
 * libsoxr. Every file is treated as hostile: sizes are checked before
 * anything is allocated and every sample is checked before it is used. */
#include "audio/audio.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sndfile.h>
#include <soxr.h>

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

static hv_status decode(SNDFILE *sf, const SF_INFO *info, const char *path, double max_seconds,
                        float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                        hv_error *e);

hv_status hv_audio_read_file(const char *path, float **pcm, size_t *n_frames, int *sample_rate,
                             int *channels, hv_error *e) {
    if (!pcm || !n_frames || !sample_rate || !channels)
        return hv_err(e, HV_ERR_INVALID_ARG, "hv_audio_read_file: NULL output");
    *pcm = NULL;
    *n_frames = 0;
    *sample_rate = 0;
    *channels = 0;
    if (!path) return hv_err(e, HV_ERR_INVALID_ARG, "audio: NULL path");

    /* libsndfile reports "cannot open" and "not audio" alike; look first so
     * that a missing or unreadable file is an I/O error with errno's words. */
    struct stat st;
    if (stat(path, &st) != 0)
        return hv_err(e, HV_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return hv_err(e, HV_ERR_IO, "%s: cannot open: is a directory", path);
    if (S_ISREG(st.st_mode) && st.st_size == 0)
        return hv_err(e, HV_ERR_FORMAT, "%s: empty file", path);

    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf) {
        int code = sf_error(NULL);
        return hv_err(e, code == SF_ERR_SYSTEM ? HV_ERR_IO : HV_ERR_FORMAT,
                      "%s: not a readable audio file (%s)", path, sf_strerror(NULL));
    }
    return decode(sf, &info, path, 0, pcm, n_frames, sample_rate, channels, e);
}

/* Decodes an open file with every check; closes it. `path` names it in
 * messages. max_seconds > 0 refuses longer audio (HV_ERR_LIMIT), from the
 * header's claim before decoding and from the frames actually decoded. */
static hv_status decode(SNDFILE *sf, const SF_INFO *inf, const char *path, double max_seconds,
                        float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                        hv_error *e) {
    SF_INFO info = *inf;
    hv_status rc = HV_OK;
    float *buf = NULL;
    size_t got = 0, cap = 0;
    size_t ch = (size_t)(info.channels > 0 ? info.channels : 0);

    if (info.channels < 1) {
        rc = hv_err(e, HV_ERR_FORMAT, "%s: %d channels", path, info.channels);
        goto done;
    }
    if (info.channels > HV_AUDIO_MAX_CHANNELS) {
        rc = hv_err(e, HV_ERR_LIMIT, "%s: %d channels (at most %d supported)", path, info.channels,
                    HV_AUDIO_MAX_CHANNELS);
        goto done;
    }
    if (info.samplerate < 1 || info.samplerate > HV_AUDIO_MAX_RATE) {
        rc = hv_err(e, HV_ERR_FORMAT, "%s: unsupported sample rate %d Hz", path, info.samplerate);
        goto done;
    }
    /* Most frames we accept, so that frames * channels floats stay within
     * HV_AUDIO_MAX_SAMPLES (and therefore within size_t). */
    size_t max_frames = (size_t)(max_samples() / ch);
    if (max_seconds > 0) {
        double lim = max_seconds * info.samplerate;
        if ((double)max_frames > lim) max_frames = (size_t)lim;
    }
    /* SF_COUNT_MAX means "unknown length" (pipes, some streams). */
    if (info.frames != SF_COUNT_MAX && info.frames > 0 && (uint64_t)info.frames > max_frames) {
        rc = max_seconds > 0
                 ? hv_err(e, HV_ERR_LIMIT, "%s: %.1f s of audio, more than the %g s allowed", path,
                          (double)info.frames / info.samplerate, max_seconds)
                 : hv_err(e, HV_ERR_LIMIT,
                          "%s: %lld frames of %d channels is more than hviske "
                          "reads (%llu samples at most)",
                          path, (long long)info.frames, info.channels,
                          (unsigned long long)max_samples());
        goto done;
    }
    cap = (info.frames > 0 && info.frames != SF_COUNT_MAX)
              ? (size_t)info.frames + 1 /* +1: EOF then needs no growth */
              : READ_CHUNK;
    if (cap > TRUST_FRAMES) cap = TRUST_FRAMES;

    /* Decode until libsndfile says there is no more. A file that ends before
     * its header says (truncated) yields the frames that are there; only a
     * file with no decodable frame at all is an error. */
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
        sf_count_t r = sf_readf_float(sf, buf + got * ch, (sf_count_t)want);
        if (r <= 0) break;
        got += (size_t)r;
        if (got > max_frames) {
            rc = max_seconds > 0
                     ? hv_err(e, HV_ERR_LIMIT, "%s: more than the %g s of audio allowed", path,
                              max_seconds)
                     : hv_err(e, HV_ERR_LIMIT,
                              "%s: longer than hviske reads "
                              "(%llu samples at most)",
                              path, (unsigned long long)max_samples());
            goto done;
        }
    }
    /* A decoder error after some frames (corrupt FLAC frame, ...) leaves a
     * partial signal we cannot vouch for: refuse it. End of data is not an
     * error in libsndfile's book, so a plain truncation passes. */
    if (sf_error(sf) != SF_ERR_NO_ERROR) {
        rc = hv_err(e, HV_ERR_FORMAT, "%s: decoding failed after %zu frames: %s", path, got,
                    sf_strerror(sf));
        goto done;
    }
    if (got == 0) {
        rc = hv_err(e, HV_ERR_FORMAT, "%s: no audio frames", path);
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
    sf_close(sf);
    return rc;
}

/* An in-memory file for libsndfile's virtual I/O. */
typedef struct mem_file {
    const unsigned char *data;
    sf_count_t size, pos;
} mem_file;

static sf_count_t mem_len(void *u) { return ((mem_file *)u)->size; }

static sf_count_t mem_seek(sf_count_t off, int whence, void *u) {
    mem_file *m = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
    if (off > 0 ? base > m->size - off : base + off < 0) return -1;
    m->pos = base + off;
    return m->pos;
}

static sf_count_t mem_read(void *ptr, sf_count_t count, void *u) {
    mem_file *m = u;
    sf_count_t left = m->size - m->pos;
    if (count > left) count = left;
    if (count <= 0) return 0;
    memcpy(ptr, m->data + m->pos, (size_t)count);
    m->pos += count;
    return count;
}

static sf_count_t mem_write(const void *ptr, sf_count_t count, void *u) {
    (void)ptr, (void)count, (void)u;
    return 0;
}

static sf_count_t mem_tell(void *u) { return ((mem_file *)u)->pos; }

hv_status hv_audio_read_memory(const void *data, size_t size, const char *name, double max_seconds,
                               float **pcm, size_t *n_frames, int *sample_rate, int *channels,
                               hv_error *e) {
    if (!pcm || !n_frames || !sample_rate || !channels)
        return hv_err(e, HV_ERR_INVALID_ARG, "hv_audio_read_memory: NULL output");
    *pcm = NULL;
    *n_frames = 0;
    *sample_rate = 0;
    *channels = 0;
    if (!name) name = "<memory>";
    if (!data || size == 0) return hv_err(e, HV_ERR_FORMAT, "%s: empty input", name);
    if ((uint64_t)size > (uint64_t)INT64_MAX) return hv_err(e, HV_ERR_LIMIT, "%s: too large", name);
    mem_file mf = {data, (sf_count_t)size, 0};
    SF_VIRTUAL_IO vio = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &mf);
    if (!sf)
        return hv_err(e, HV_ERR_FORMAT, "%s: not a readable audio file (%s)", name,
                      sf_strerror(NULL));
    return decode(sf, &info, name, max_seconds, pcm, n_frames, sample_rate, channels, e);
}

hv_status hv_audio_to_mono(const float *pcm, size_t n_frames, int channels, int sample_rate,
                           int target_rate, float **out, size_t *n_out, hv_error *e) {
    if (!out || !n_out) return hv_err(e, HV_ERR_INVALID_ARG, "hv_audio_to_mono: NULL output");
    *out = NULL;
    *n_out = 0;
    if (channels < 1 || channels > HV_AUDIO_MAX_CHANNELS)
        return hv_err(e, HV_ERR_INVALID_ARG, "audio: %d channels (1 to %d supported)", channels,
                      HV_AUDIO_MAX_CHANNELS);
    if (sample_rate < 1 || sample_rate > HV_AUDIO_MAX_RATE || target_rate < 1 ||
        target_rate > HV_AUDIO_MAX_RATE)
        return hv_err(e, HV_ERR_INVALID_ARG, "audio: sample rates %d -> %d Hz (1 to %d supported)",
                      sample_rate, target_rate, HV_AUDIO_MAX_RATE);
    if (n_frames == 0 || !pcm) return hv_err(e, HV_ERR_INVALID_ARG, "audio: no samples");
    if (n_frames > max_samples() / (unsigned)channels)
        return hv_err(e, HV_ERR_LIMIT,
                      "audio: %zu frames of %d channels is "
                      "more than hviske takes (%llu samples at most)",
                      n_frames, channels, (unsigned long long)max_samples());

    /* Downmix in double (so that loud channels cannot overflow) and check
     * every sample on the way. */
    float *mono = malloc(n_frames * sizeof *mono);
    if (!mono) return hv_err(e, HV_ERR_NOMEM, "audio: out of memory");
    for (size_t i = 0; i < n_frames; i++) {
        const float *f = pcm + i * (size_t)channels;
        double s = 0;
        for (int c = 0; c < channels; c++) {
            if (!isfinite(f[c])) {
                free(mono);
                return hv_err(e, HV_ERR_FORMAT, "audio: sample %zu of channel %d is %s", i, c,
                              sample_problem(f[c]));
            }
            s += f[c];
        }
        mono[i] = channels == 1 ? f[0] : (float)(s / channels);
    }
    if (sample_rate == target_rate) {
        *out = mono;
        *n_out = n_frames;
        return HV_OK;
    }

    /* soxr_oneshot with the full input flushes the filter and emits exactly
     * round(n * target / rate) samples, time-aligned with the input (linear
     * phase, delay compensated). n * rate fits in 64 bits: n <= 2^32 and
     * rates <= 2^20. Room for two extra samples guards against a soxr that
     * rounds differently; we return what it gives. */
    uint64_t want = ((uint64_t)n_frames * (uint64_t)target_rate * 2 + (uint64_t)sample_rate) /
                    (2 * (uint64_t)sample_rate);
    size_t olen = (size_t)want + 2;
    float *res = malloc(olen * sizeof *res);
    if (!res) {
        free(mono);
        return hv_err(e, HV_ERR_NOMEM, "audio: out of memory");
    }
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    size_t idone = 0, odone = 0;
    soxr_error_t err = soxr_oneshot(sample_rate, target_rate, 1, mono, n_frames, &idone, res, olen,
                                    &odone, &io, &q, &rt);
    free(mono);
    if (err) {
        free(res);
        return hv_err(e, HV_ERR_FORMAT, "audio: resampling %d -> %d Hz failed: %s", sample_rate,
                      target_rate, err);
    }
    *out = res;
    *n_out = odone;
    return HV_OK;
}
