/* Compressed files cut short and damaged (issue #51): an Ogg Vorbis file
 * cut at every length through its header pages and at every page boundary
 * beyond, Opus and FLAC likewise, through all four readers (path and
 * memory, interleaved and mono). Each read is either an error naming the
 * file or the frames that are there: a prefix of the whole file's samples,
 * bit for bit. A failed open keeps no memory: glibc's count of bytes in
 * use does not grow over 2000 failed opens (libsndfile 1.2.0 kept the
 * 5.8 KB of a vorbis_info each time), and the sanitizer build's
 * LeakSanitizer reports any byte left. Also: ID3 tags and garbage in
 * front of a cut Vorbis stream, a chained stream (decoded whole when the
 * format stays, refused when it changes), and a damaged page inside the
 * stream (refused, naming the frames before it). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sndfile.h>

#include "audio/audio.h"
#include "hviske.h"
#include "testlib.h"

#define TWO_PI 6.283185307179586476925

static const char *dir;

/* A file of a tone and noise (so that a lossy codec needs many pages)
 * written by libsndfile; its bytes in *n (NULL when this libsndfile cannot
 * write the format). */
static unsigned char *make_file(const char *name, int format, int rate, int channels, size_t frames,
                                double freq, size_t *n) {
    const char *path = hv_test_path(dir, name);
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    if (!sf_format_check(&info)) return NULL;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return NULL;
    float *buf = malloc(frames * channels * sizeof *buf);
    uint32_t s = 12345;
    for (size_t i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++) {
            s = s * 1664525u + 1013904223u;
            buf[i * channels + c] = (float)(0.3 * sin(TWO_PI * freq * (c + 1) * i / rate) +
                                            0.2 * ((double)(s >> 8) / (1 << 24) - 0.5));
        }
    sf_writef_float(sf, buf, (sf_count_t)frames);
    free(buf);
    sf_close(sf);
    return (unsigned char *)hv_test_read_file(path, n);
}

/* The offsets where the Ogg pages of data[n] begin, and n: *count of them. */
static size_t *ogg_pages(const unsigned char *data, size_t n, size_t *count) {
    size_t *at = malloc((n / 27 + 2) * sizeof *at), k = 0, i = 0;
    while (i + 27 <= n && memcmp(data + i, "OggS", 4) == 0) {
        size_t nseg = data[i + 26], body = 0;
        if (i + 27 + nseg > n) break;
        for (size_t s = 0; s < nseg; s++) body += data[i + 27 + s];
        at[k++] = i;
        i += 27 + nseg + body;
    }
    at[k++] = n;
    *count = k;
    return at;
}

typedef struct whole {
    float *pcm;
    size_t frames;
    int rate, channels;
} whole;

/* Reads bytes[n] (written to a file named `name` for the path readers)
 * with all four readers. Each must fail naming the file, or succeed; a
 * success of the interleaved readers must be a prefix of *ref (when
 * given) and the mono readers must succeed exactly when they do. Returns
 * 1 when the reads succeeded, 0 when they failed, -1 on a failed check. */
static int read_all(const unsigned char *bytes, size_t n, const char *name, const whole *ref) {
    const char *path = hv_test_path(dir, name);
    if (hv_test_write_file(path, bytes, n)) {
        CHECK_MSG(0, "cannot write %s", path);
        return -1;
    }
    int ok[4] = {0}, bad = 0;
    for (int r = 0; r < 4; r++) {
        hv_error e;
        hv_err_clear(&e);
        float *pcm = NULL;
        size_t frames = 0;
        int rate = 0, ch = 0;
        hv_status st;
        const char *who = r % 2 ? name : path;
        switch (r) {
            case 0: st = hv_audio_read_file(path, &pcm, &frames, &rate, &ch, &e); break;
            case 1:
                st = hv_audio_read_memory(bytes, n, name, 0, &pcm, &frames, &rate, &ch, &e);
                break;
            case 2: st = hv_audio_read_file_mono(path, 16000, 0, &pcm, &frames, &e); break;
            default: st = hv_audio_read_memory_mono(bytes, n, name, 16000, 0, &pcm, &frames, &e);
        }
        ok[r] = st == HV_OK;
        if (st != HV_OK) {
            if (st != HV_ERR_FORMAT || !strstr(e.msg, who) || pcm) {
                CHECK_MSG(0, "%s (%zu bytes), reader %d: status %d, message \"%s\"", name, n, r, st,
                          e.msg);
                bad = 1;
            }
            continue;
        }
        if (r < 2 && ref && ref->pcm) {
            int same = rate == ref->rate && ch == ref->channels && frames > 0 &&
                       frames <= ref->frames &&
                       memcmp(pcm, ref->pcm, frames * (size_t)ch * sizeof *pcm) == 0;
            if (!same) {
                CHECK_MSG(0,
                          "%s (%zu bytes), reader %d: %zu frames at %d Hz x %d, not a prefix "
                          "of the whole file's %zu",
                          name, n, r, frames, rate, ch, ref->frames);
                bad = 1;
            }
        }
        free(pcm);
    }
    if (ok[0] != ok[1] || ok[0] != ok[2] || ok[0] != ok[3]) {
        CHECK_MSG(0, "%s (%zu bytes): the readers disagree (%d %d %d %d)", name, n, ok[0], ok[1],
                  ok[2], ok[3]);
        bad = 1;
    }
    if (!bad) hv_test_passed++;
    return bad ? -1 : ok[0];
}

static whole decode_whole(const unsigned char *bytes, size_t n) {
    whole w = {0};
    hv_error e;
    hv_err_clear(&e);
    CHECK_MSG(hv_audio_read_memory(bytes, n, "whole", 0, &w.pcm, &w.frames, &w.rate, &w.channels,
                                   &e) == HV_OK,
              "%s", e.msg);
    return w;
}

/* Cuts at every length up to `every` (the end of the header pages), then
 * at each page boundary and a byte either side of it. */
static void cut_everywhere(const char *what, const unsigned char *bytes, size_t n,
                           const size_t *pages, size_t n_pages, size_t every) {
    whole ref = decode_whole(bytes, n);
    int fail = 0, ok = 0, bad = 0;
    char name[64];
    snprintf(name, sizeof name, "cut-%s", what);
    for (size_t len = 1; len <= every && len < n; len++) {
        int r = read_all(bytes, len, name, &ref);
        fail += r == 0, ok += r == 1, bad += r < 0;
    }
    for (size_t p = 0; p < n_pages; p++)
        for (size_t d = 0; d < 3; d++) {
            size_t len = pages[p] + d - 1;
            if (pages[p] + d < 1 || len <= every || len > n) continue;
            int r = read_all(bytes, len, name, &ref);
            fail += r == 0, ok += r == 1, bad += r < 0;
        }
    printf("%s: %d cuts refused naming the file, %d read as a prefix, %d wrong\n", what, fail, ok,
           bad);
    CHECK_MSG(fail > 0 && ok > 0, "%s: %d refused, %d read", what, fail, ok);
    free(ref.pcm);
}

/* The end of the page that holds the third packet (the Vorbis setup
 * header): the header pages' end. */
static size_t vorbis_header_end(const unsigned char *bytes, const size_t *pages, size_t n_pages) {
    int packets = 0;
    for (size_t p = 0; p + 1 < n_pages; p++) {
        size_t nseg = bytes[pages[p] + 26];
        for (size_t s = 0; s < nseg; s++)
            if (bytes[pages[p] + 27 + s] < 255 && ++packets == 3) return pages[p + 1];
    }
    return pages[n_pages - 1];
}

/* Bytes in use by malloc (glibc), or 0 where it cannot say. */
static size_t in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    return mallinfo2().uordblks;
#else
    return 0;
#endif
}

/* 2000 failed opens of a cut file keep no memory. */
static void no_memory_kept(const char *what, const unsigned char *bytes, size_t len) {
    for (int warm = 0; warm < 10; warm++) { /* first-use allocations of the libraries */
        float *pcm = NULL;
        size_t frames = 0;
        int rate = 0, ch = 0;
        hv_error e;
        hv_audio_read_memory(bytes, len, what, 0, &pcm, &frames, &rate, &ch, &e);
        free(pcm);
    }
    size_t before = in_use();
    int refused = 0;
    for (int i = 0; i < 2000; i++) {
        float *pcm = NULL, *mono = NULL;
        size_t frames = 0, nm = 0;
        int rate = 0, ch = 0;
        hv_error e;
        refused += hv_audio_read_memory(bytes, len, what, 0, &pcm, &frames, &rate, &ch, &e) != 0;
        refused += hv_audio_read_memory_mono(bytes, len, what, 16000, 0, &mono, &nm, &e) != 0;
        free(pcm);
        free(mono);
    }
    size_t after = in_use();
    long long grown = (long long)after - (long long)before;
    printf("%s (%zu bytes): %d failed reads, bytes in use %zu -> %zu (%+lld)\n", what, len, refused,
           before, after, grown);
    CHECK_MSG(refused == 4000, "%s: %d of 4000 reads refused", what, refused);
    CHECK_MSG(grown < 64 * 1024, "%s: 4000 failed reads kept %lld bytes", what, grown);
}

static unsigned char *concat(const unsigned char *a, size_t na, const unsigned char *b, size_t nb,
                             size_t *n) {
    unsigned char *out = malloc(na + nb);
    memcpy(out, a, na);
    memcpy(out + na, b, nb);
    *n = na + nb;
    return out;
}

static void test_vorbis(void) {
    size_t n = 0, n_pages = 0;
    unsigned char *ogg =
        make_file("tone.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, 64000, 440, &n);
    CHECK_MSG(ogg, "this libsndfile cannot write Ogg Vorbis");
    if (!ogg) return;
    size_t *pages = ogg_pages(ogg, n, &n_pages);
    size_t hdr = vorbis_header_end(ogg, pages, n_pages);
    printf("vorbis: %zu bytes, %zu pages, headers end at %zu\n", n, n_pages - 1, hdr);
    CHECK(n_pages > 4 && hdr > 1000 && hdr < n);
    cut_everywhere("vorbis", ogg, n, pages, n_pages, hdr + 1);

    /* the case and one cut inside the setup header */
    no_memory_kept("vorbis cut at 100", ogg, 100);
    no_memory_kept("vorbis cut in its setup header", ogg, hdr - 10);

    /* an ID3v2 tag in front (libsndfile skips it, then opens the Ogg
     * stream): cut after the tag, refused naming the file, no leak */
    unsigned char tag[10 + 22] = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 22};
    size_t nt = 0;
    unsigned char *tagged = concat(tag, sizeof tag, ogg, 200, &nt);
    CHECK(read_all(tagged, nt, "id3-cut.ogg", NULL) == 0);
    no_memory_kept("ID3 tag and a cut vorbis stream", tagged, nt);
    free(tagged);
    unsigned char *tagged_whole = concat(tag, sizeof tag, ogg, n, &nt);
    whole ref = decode_whole(ogg, n);
    CHECK(read_all(tagged_whole, nt, "id3.ogg", &ref) == 1);
    free(tagged_whole);

    /* garbage after "OggS" before the first page (libsndfile's page sync
     * skips it): still the Vorbis decoder, cut, refused */
    unsigned char junk[64];
    memcpy(junk, "OggS", 4);
    for (size_t i = 4; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 37);
    size_t nj = 0;
    unsigned char *junked = concat(junk, sizeof junk, ogg, 300, &nj);
    CHECK(read_all(junked, nj, "junk-cut.ogg", NULL) == 0);
    no_memory_kept("garbage and a cut vorbis stream", junked, nj);
    free(junked);

    /* a chained stream (a second stream, its own serial number, after the
     * first) of the same format is read whole */
    size_t n2 = 0, nc = 0;
    unsigned char *ogg2 =
        make_file("tone2.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, 20000, 300, &n2);
    CHECK(ogg2 && n2 > 18 && memcmp(ogg + 14, ogg2 + 14, 4) != 0); /* the serial numbers */
    whole ref2 = decode_whole(ogg2, n2);
    unsigned char *chain = concat(ogg, n, ogg2, n2, &nc);
    whole two = decode_whole(chain, nc);
    CHECK_MSG(two.frames == ref.frames + ref2.frames && two.pcm && ref2.pcm &&
                  memcmp(two.pcm, ref.pcm, ref.frames * sizeof *ref.pcm) == 0 &&
                  memcmp(two.pcm + ref.frames, ref2.pcm, ref2.frames * sizeof *ref.pcm) == 0,
              "chained: %zu frames, want %zu + %zu", two.frames, ref.frames, ref2.frames);
    free(two.pcm);
    free(ref2.pcm);
    free(chain);
    free(ogg2);

    /* ... and one whose second stream is stereo is refused */
    size_t ns = 0;
    unsigned char *st =
        make_file("stereo.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 2, 8000, 440, &ns);
    chain = concat(ogg, n, st, ns, &nc);
    hv_error e;
    float *pcm = NULL;
    size_t frames = 0;
    int rate = 0, ch = 0;
    hv_status rc = hv_audio_read_memory(chain, nc, "chain.ogg", 0, &pcm, &frames, &rate, &ch, &e);
    CHECK_MSG(rc == HV_ERR_FORMAT && strstr(e.msg, "chain.ogg: decoding failed after") &&
                  strstr(e.msg, "changes its sample rate or channels") && !pcm,
              "%d %s", rc, e.msg);
    rc = hv_audio_read_memory_mono(chain, nc, "chain.ogg", 16000, 0, &pcm, &frames, &e);
    CHECK_MSG(rc == HV_ERR_FORMAT && strstr(e.msg, "changes its sample rate") && !pcm, "%d %s", rc,
              e.msg);
    free(chain);
    free(st);

    /* a damaged page inside the stream: refused, naming the frames before it */
    unsigned char *bad = malloc(n);
    memcpy(bad, ogg, n);
    size_t mid = n_pages / 2;
    CHECK(pages[mid] > hdr);
    bad[pages[mid] + 40] ^= 0x55;
    rc = hv_audio_read_memory(bad, n, "damaged.ogg", 0, &pcm, &frames, &rate, &ch, &e);
    CHECK_MSG(rc == HV_ERR_FORMAT && strstr(e.msg, "damaged.ogg: decoding failed after") &&
                  strstr(e.msg, "missing or damaged"),
              "%d %s", rc, e.msg);
    free(bad);

    free(ref.pcm);
    free(pages);
    free(ogg);
}

static void test_opus(void) {
    size_t n = 0, n_pages = 0;
    unsigned char *opus =
        make_file("tone.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 1, 48000, 440, &n);
    if (!opus) {
        printf("note: this libsndfile cannot write Opus; skipped\n");
        return;
    }
    size_t *pages = ogg_pages(opus, n, &n_pages);
    size_t hdr = n_pages > 3 ? pages[2] : n; /* OpusHead, OpusTags */
    cut_everywhere("opus", opus, n, pages, n_pages, hdr + 1);
    no_memory_kept("opus cut at 100", opus, 100);
    free(pages);
    free(opus);
}

static void test_flac(void) {
    size_t n = 0;
    unsigned char *flac =
        make_file("tone.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 40000, 440, &n);
    CHECK(flac);
    if (!flac) return;
    /* every length through the metadata, then every 97th byte */
    size_t marks[64], k = 0;
    for (size_t at = 200; at < n && k < 64; at += n / 64) marks[k++] = at;
    cut_everywhere("flac", flac, n, marks, k, 120);
    no_memory_kept("flac cut at 100", flac, 100);
    free(flac);
}

int main(void) {
    dir = hv_test_tmpdir();
    test_vorbis();
    test_opus();
    test_flac();
    TEST_END();
}
