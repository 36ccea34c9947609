/* The streaming mono readers (hv_audio_read_mono, hv_audio_read_buffer_mono;
 * issue #18): the same samples as the interleaved reader followed by the
 * downmix and resampling hv_transcribe does, the same limits and errors,
 * paths that are FIFOs refused without blocking, and the peak memory of
 * reading a "decompression bomb" (900 s of 8-channel 48 kHz silence in a
 * FLAC of a few hundred KB) bounded by the 16 kHz mono samples plus a
 * constant. hv_audio_to_mono (issue #62): block by block, bit for bit
 * what one soxr_oneshot of the whole downmix gives, and its peak memory
 * the output plus a constant for 60 s of 768 kHz samples (it made a mono
 * copy at the input's rate, 184 MB, before resampling in one piece). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>
#include <soxr.h>

#include "audio/audio.h"
#include "hviske.h"
#include "testlib.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* The constant of the memory bound (hviske.h, README.md): what reading
 * costs beyond the mono samples. */
#define MONO_READ_CONSTANT ((size_t)8 << 20)

static const char *dir;

/* Writes frames x channels of a tone with some noise (every channel
 * different), or silence when amp is 0; 0 on success. Written in blocks. */
static int write_signal(const char *path, int format, int rate, int channels, size_t frames,
                        double amp) {
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    if (!sf_format_check(&info)) return -1;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return -1;
    enum { BLOCK = 8192 };
    float *buf = calloc((size_t)BLOCK * channels, sizeof *buf);
    float *noise = hv_test_noise((size_t)BLOCK * channels, 7);
    size_t done = 0;
    int rc = 0;
    while (done < frames && rc == 0) {
        size_t n = frames - done < BLOCK ? frames - done : BLOCK;
        if (amp != 0)
            for (size_t i = 0; i < n; i++)
                for (int c = 0; c < channels; c++)
                    buf[i * channels + c] =
                        (float)(amp * sin(6.283185307179586 * (300.0 + 170.0 * c) *
                                          (double)(done + i) / rate) +
                                0.1 * noise[i * channels + c]);
        if (sf_writef_float(sf, buf, (sf_count_t)n) != (sf_count_t)n) rc = -1;
        done += n;
    }
    free(buf);
    free(noise);
    sf_close(sf);
    return rc;
}

static void compare_path(const char *path, const char *name, int target);

/* hv_audio_read_mono (file and buffer) against hv_audio_read +
 * hv_audio_to_mono: same length, same samples bit for bit. */
static void check_same(const char *name, int format, int rate, int channels, double seconds,
                       int target) {
    const char *path = hv_test_path(dir, name);
    size_t frames = (size_t)(seconds * rate);
    if (write_signal(path, format, rate, channels, frames, 0.4) != 0) {
        printf("skip %s: this libsndfile cannot write it\n", name);
        return;
    }
    compare_path(path, name, target);
}

static void compare_path(const char *path, const char *name, int target) {
    char err[512];
    float *pcm = NULL, *ref = NULL, *got = NULL, *got2 = NULL;
    size_t n = 0, n_ref = 0, n_got = 0, n_got2 = 0;
    int r = 0, ch = 0;
    CHECK(hv_audio_read(path, &pcm, &n, &r, &ch, err, sizeof err) == HV_OK);
    hv_error e;
    hv_err_clear(&e);
    CHECK(hv_audio_to_mono(pcm, n, ch, r, target, &ref, &n_ref, &e) == HV_OK);
    CHECK(hv_audio_read_mono(path, target, 0, &got, &n_got, err, sizeof err) == HV_OK);
    size_t size = 0;
    char *bytes = hv_test_read_file(path, &size);
    CHECK(hv_audio_read_buffer_mono(bytes, size, name, target, 0, &got2, &n_got2, err,
                                    sizeof err) == HV_OK);
    size_t diff = 0;
    double maxd = 0;
    if (ref && got && n_ref == n_got)
        for (size_t i = 0; i < n_ref; i++)
            if (ref[i] != got[i]) {
                diff++;
                double d = fabs((double)ref[i] - got[i]);
                if (d > maxd) maxd = d;
            }
    CHECK_MSG(ref && got && n_ref == n_got && diff == 0,
              "%s: %zu samples vs %zu, %zu differ (max %g)", name, n_ref, n_got, diff, maxd);
    CHECK_MSG(got && got2 && n_got2 == n_got && memcmp(got, got2, n_got * sizeof *got) == 0,
              "%s: buffer variant differs", name);
    printf("ok %s: %d Hz x %d -> %d Hz: %zu samples, identical\n", name, r, ch, target, n_got);
    free(bytes);
    free(pcm);
    free(ref);
    hv_free(got);
    hv_free(got2);
}

static void test_identical(void) {
    check_same("m16.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1, 3.3, 16000);
    check_same("s16.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 2, 2.1, 16000);
    check_same("s44.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 44100, 2, 3.7, 16000);
    check_same("o48.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 48000, 8, 2.5, 16000);
    check_same("m8.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, 2.2, 16000);
    check_same("t22.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 22050, 3, 1.9, 16000);
    check_same("h96.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 96000, 6, 1.3, 16000);
    check_same("ogg.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 44100, 2, 2.0, 16000);
    check_same("tiny.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2, 0.0005, 16000);
    check_same("up.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 2, 1.0, 44100);
}

/* Issue #18, 5b: MPEG audio is decoded with libmpg123 directly (told to
 * keep quiet) instead of through libsndfile: the same samples as
 * libsndfile gives, and nothing written to standard error for damaged
 * frames. */
static size_t sf_decode_all(const char *path, float **out, int *channels) {
    SF_INFO info = {0};
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    *out = NULL;
    if (!sf) return 0;
    *channels = info.channels;
    size_t n = 0, cap = 0;
    float *buf = NULL;
    for (;;) {
        if (cap - n < 4096 * (size_t)info.channels) {
            cap = cap * 2 + 4096 * (size_t)info.channels;
            buf = realloc(buf, cap * sizeof *buf);
        }
        sf_count_t r = sf_readf_float(sf, buf + n, 4096);
        if (r <= 0) break;
        n += (size_t)r * info.channels;
    }
    sf_close(sf);
    *out = buf;
    return n / (size_t)info.channels;
}

static void test_mp3(void) {
    const char *mp3 = hv_test_path(dir, "tone.mp3");
    if (write_signal(mp3, SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100, 2, 3 * 44100, 0.4) !=
        0) {
        printf("skip mp3: this libsndfile cannot write MP3\n");
        return;
    }
    size_t size = 0;
    unsigned char *b = (unsigned char *)hv_test_read_file(mp3, &size);
    /* damage frames in the middle (what made libmpg123 print "big_values
     * too large!" through libsndfile) */
    for (size_t i = size / 3; b && i < size / 3 + 4000 && i < size; i += 37) b[i] ^= 0x5A;
    const char *bad = hv_test_path(dir, "damaged.mp3");
    CHECK(b && hv_test_write_file(bad, b, size) == 0);
    free(b);
    const char *files[] = {mp3, bad};
    for (int k = 0; k < 2; k++) {
        /* our own standard error, into a file while the library reads */
        const char *errpath = hv_test_path(dir, "stderr.txt");
        fflush(stderr);
        int saved = dup(2);
        FILE *f = fopen(errpath, "w");
        CHECK(saved >= 0 && f);
        if (saved < 0 || !f) return;
        dup2(fileno(f), 2);
        char err[512] = "";
        float *x = NULL, *ref = NULL;
        size_t n = 0;
        int r = 0, ch = 0, ref_ch = 0;
        hv_status st = hv_audio_read(files[k], &x, &n, &r, &ch, err, sizeof err);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        fclose(f);
        char *said = hv_test_read_text(errpath);
        CHECK_MSG(said && said[0] == '\0', "%s: standard error got \"%s\"", files[k],
                  said ? said : "?");
        free(said);
        size_t n_ref = sf_decode_all(files[k], &ref, &ref_ch); /* may print: not ours */
        CHECK_MSG(st == HV_OK && r == 44100 && ch == 2 && n == n_ref && ref_ch == 2 &&
                      memcmp(x, ref, n * 2 * sizeof *x) == 0,
                  "%s: %zu frames (libsndfile %zu) %s", files[k], n, n_ref, err);
        printf("ok %s: %zu frames, the same as libsndfile's\n", files[k], n);
        hv_free(x);
        free(ref);
        if (k == 0) compare_path(mp3, "tone.mp3", 16000);
    }
}

static void expect(hv_status got, hv_status want, const char *err, const char *needle) {
    CHECK_MSG(got == want && strstr(err, needle), "status %d (want %d): %s (want \"%s\")", got,
              want, err, needle);
}

/* Sets the total-samples field of a FLAC's STREAMINFO (bytes 18..25, low
 * 36 bits); 0 on success. */
static int set_flac_total(const char *path, const char *out, uint64_t total) {
    size_t n = 0;
    unsigned char *b = (unsigned char *)hv_test_read_file(path, &n);
    int rc = -1;
    if (b && n > 26 && memcmp(b, "fLaC", 4) == 0 && b[7] == 34) {
        uint64_t v = 0;
        for (int i = 18; i < 26; i++) v = v << 8 | b[i];
        v = (v & ~(((uint64_t)1 << 36) - 1)) | total;
        for (int i = 0; i < 8; i++) b[18 + i] = (unsigned char)(v >> (56 - 8 * i));
        rc = hv_test_write_file(out, b, n);
    }
    free(b);
    return rc;
}

/* Issue #18, 4a: libsndfile trusts a FLAC's STREAMINFO total, so a header
 * that understates the length cut the audio without a word. Every reader
 * now decodes to the real end of the stream; a cut file still gives the
 * frames that are there. */
static void test_flac_length(void) {
    const char *full = hv_test_path(dir, "len3.flac");
    CHECK(write_signal(full, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2, 3 * 44100, 0.4) == 0);
    const char *lie = hv_test_path(dir, "len3_says1.flac");
    const char *unknown = hv_test_path(dir, "len3_says0.flac");
    CHECK(set_flac_total(full, lie, 44100) == 0);
    CHECK(set_flac_total(full, unknown, 0) == 0);
    char err[512] = "";
    float *x = NULL, *y = NULL;
    size_t n = 0, m = 0;
    int r = 0, ch = 0;
    CHECK(hv_audio_read_mono(full, 16000, 0, &y, &m, err, sizeof err) == HV_OK && m == 48000);
    const char *paths[] = {lie, unknown};
    for (int k = 0; k < 2; k++) {
        CHECK_MSG(hv_audio_read(paths[k], &x, &n, &r, &ch, err, sizeof err) == HV_OK &&
                      n == 3 * 44100,
                  "%s: %zu frames (%s)", paths[k], n, err);
        hv_free(x);
        x = NULL;
        CHECK_MSG(hv_audio_read_mono(paths[k], 16000, 0, &x, &n, err, sizeof err) == HV_OK &&
                      n == m && y && memcmp(x, y, m * sizeof *x) == 0,
                  "%s: %zu mono samples (%s)", paths[k], n, err);
        hv_free(x);
        x = NULL;
        compare_path(paths[k], k ? "len3_says0.flac" : "len3_says1.flac", 16000);
    }
    hv_free(y);
    /* the header's claim passes the limit; the decoded frames do not */
    expect(hv_audio_read_mono(lie, 16000, 2, &x, &n, err, sizeof err), HV_ERR_LIMIT, err,
           "more than the 2 s of audio allowed");
    size_t size = 0;
    char *bytes = hv_test_read_file(lie, &size);
    expect(hv_audio_read_buffer(bytes, size, "lie", 2, &x, &n, &r, &ch, err, sizeof err),
           HV_ERR_LIMIT, err, "lie: more than the 2 s of audio allowed");
    free(bytes);

    /* a FLAC cut short: the frames that are there, the same in every
     * reader (the cut frame's "lost sync" ends the stream) */
    bytes = hv_test_read_file(full, &size);
    const char *cut = hv_test_path(dir, "len3_cut.flac");
    CHECK(bytes && hv_test_write_file(cut, bytes, size / 2) == 0);
    free(bytes);
    CHECK(hv_audio_read_mono(cut, 16000, 0, &x, &n, err, sizeof err) == HV_OK && n > 1000 &&
          n < 48000);
    hv_free(x);
    compare_path(cut, "len3_cut.flac", 16000);
}

static void test_errors(void) {
    char err[512] = "";
    float *x = (float *)err;
    size_t n = 7;
    const char *one = hv_test_path(dir, "one.flac");
    CHECK(write_signal(one, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 48000, 2, 48000, 0.3) == 0);
    /* max_seconds: refused from the header, before decoding */
    expect(hv_audio_read_mono(one, 16000, 0.5, &x, &n, err, sizeof err), HV_ERR_LIMIT, err,
           "more than the 0.5 s allowed");
    CHECK(x == NULL && n == 0);
    CHECK(hv_audio_read_mono(one, 16000, 1.0, &x, &n, err, sizeof err) == HV_OK && n == 16000);
    hv_free(x);
    size_t size = 0;
    char *bytes = hv_test_read_file(one, &size);
    expect(hv_audio_read_buffer_mono(bytes, size, "up", 16000, 0.25, &x, &n, err, sizeof err),
           HV_ERR_LIMIT, err, "up: 1.0 s of audio, more than the 0.25 s allowed");
    expect(hv_audio_read_buffer_mono(bytes, size, "up", 0, 0, &x, &n, err, sizeof err),
           HV_ERR_INVALID_ARG, err, "target rate 0 Hz");
    expect(hv_audio_read_buffer_mono(bytes, 10, "up", 16000, 0, &x, &n, err, sizeof err),
           HV_ERR_FORMAT, err, "up: not a readable audio file");
    expect(hv_audio_read_buffer_mono(NULL, 0, NULL, 16000, 0, &x, &n, err, sizeof err),
           HV_ERR_FORMAT, err, "<memory>: empty input");
    free(bytes);

    /* more channels than hviske reads: unsupported, not a length limit
     * (issue #51: the server called it audio too long) */
    const char *wide = hv_test_path(dir, "ch65.wav");
    CHECK(write_signal(wide, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 65, 1600, 0.1) == 0);
    expect(hv_audio_read_mono(wide, 16000, 3600, &x, &n, err, sizeof err), HV_ERR_UNSUPPORTED, err,
           "ch65.wav: 65 channels (at most 64 supported)");
    int wr = 0, wch = 0;
    float *wpcm = NULL;
    expect(hv_audio_read(wide, &wpcm, &n, &wr, &wch, err, sizeof err), HV_ERR_UNSUPPORTED, err,
           "65 channels (at most 64 supported)");
    bytes = hv_test_read_file(wide, &size);
    expect(hv_audio_read_buffer_mono(bytes, size, "up", 16000, 0, &x, &n, err, sizeof err),
           HV_ERR_UNSUPPORTED, err, "up: 65 channels (at most 64 supported)");
    free(bytes);
    const char *most = hv_test_path(dir, "ch64.wav");
    CHECK(write_signal(most, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 64, 1600, 0.1) == 0);
    CHECK(hv_audio_read_mono(most, 16000, 0, &x, &n, err, sizeof err) == HV_OK && n == 1600);
    hv_free(x);

    /* a header with no frames at all, at the target rate and not */
    const char *zero = hv_test_path(dir, "zero.wav");
    SF_INFO zi = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *zf = sf_open(zero, SFM_WRITE, &zi);
    CHECK(zf != NULL);
    if (zf) sf_close(zf);
    expect(hv_audio_read_mono(zero, 16000, 0, &x, &n, err, sizeof err), HV_ERR_FORMAT, err,
           "no audio frames");
    expect(hv_audio_read_mono(zero, 8000, 0, &x, &n, err, sizeof err), HV_ERR_FORMAT, err,
           "no audio frames");

    /* every sample is checked, naming where the bad one is */
    const char *nan = hv_test_path(dir, "nan.wav");
    float v[6] = {0.1f, 0.2f, 0.3f, NAN, 0.1f, 0.2f};
    SF_INFO info = {.samplerate = 16000, .channels = 2, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *sf = sf_open(nan, SFM_WRITE, &info);
    CHECK(sf != NULL);
    if (sf) {
        sf_writef_float(sf, v, 3);
        sf_close(sf);
    }
    expect(hv_audio_read_mono(nan, 16000, 0, &x, &n, err, sizeof err), HV_ERR_FORMAT, err,
           "sample 1 of channel 1 (0.000 s) is NaN");
    char *missing = strdup(hv_test_path(dir, "missing.flac"));
    expect(hv_audio_read_mono(missing, 16000, 0, &x, &n, err, sizeof err), HV_ERR_IO, err,
           "cannot open");
    free(missing);
    expect(hv_audio_read_mono(dir, 16000, 0, &x, &n, err, sizeof err), HV_ERR_IO, err,
           "is a directory");
    expect(hv_audio_read_mono(NULL, 16000, 0, &x, &n, err, sizeof err), HV_ERR_INVALID_ARG, err,
           "NULL path");
}

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: reading a FIFO blocked (10 s)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(2);
}

/* A FIFO with no writer: open() would block forever; the readers refuse it
 * at once (the alarm fails the test if they block). */
static void test_fifo(void) {
    const char *fifo = hv_test_path(dir, "audio.fifo");
    if (mkfifo(fifo, 0600) != 0) {
        printf("skip fifo: mkfifo: %s\n", strerror(errno));
        return;
    }
    signal(SIGALRM, on_alarm);
    alarm(10);
    char err[512] = "";
    float *x = NULL;
    size_t n = 0;
    int r, ch;
    expect(hv_audio_read_mono(fifo, 16000, 0, &x, &n, err, sizeof err), HV_ERR_IO, err,
           "a FIFO, not a regular file");
    expect(hv_audio_read(fifo, &x, &n, &r, &ch, err, sizeof err), HV_ERR_IO, err,
           "a FIFO, not a regular file");
    expect(hv_audio_read_mono("/dev/zero", 16000, 0, &x, &n, err, sizeof err), HV_ERR_IO, err,
           "not a regular file");
    alarm(0);
    signal(SIGALRM, SIG_DFL);
}

/* kB of a /proc/self/status field, -1 when absent. */
static long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') v = strtol(line + fl + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Resets VmHWM to the current RSS (Linux >= 4.0); 0 on success. */
static int reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void test_bomb(void) {
    const char *bomb = hv_test_path(dir, "bomb.flac");
    const int seconds = 900, rate = 48000, channels = 8;
    CHECK(write_signal(bomb, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, rate, channels,
                       (size_t)seconds * rate, 0) == 0);
    struct stat st;
    CHECK(stat(bomb, &st) == 0);
    size_t mono_bytes = (size_t)seconds * 16000 * sizeof(float);
    char err[512] = "";
    float *x = NULL;
    size_t n = 0;
    /* the server's limit refuses it from the header, nothing decoded */
    expect(hv_audio_read_mono(bomb, 16000, 600, &x, &n, err, sizeof err), HV_ERR_LIMIT, err,
           "900.0 s of audio, more than the 600 s allowed");

    int measured = reset_peak() == 0;
    long base = status_kb("VmRSS");
    hv_status rc = hv_audio_read_mono(bomb, 16000, 0, &x, &n, err, sizeof err);
    long peak = status_kb("VmHWM");
    CHECK_MSG(rc == HV_OK && n == (size_t)seconds * 16000, "%s (%zu samples)", err, n);
    int silent = x != NULL;
    for (size_t i = 0; x && i < n; i++)
        if (x[i] != 0) silent = 0;
    CHECK(silent);
    hv_free(x);
    if (!measured || base < 0 || peak < 0) {
        printf("skip bomb memory: cannot reset or read the peak RSS\n");
        return;
    }
    size_t used = (size_t)(peak - base) * 1024;
    printf("bomb: %lld-byte FLAC, %d s x %d ch x %d Hz (%.0f MB as interleaved floats): "
           "peak RSS grew by %.1f MB reading it; 16 kHz mono is %.1f MB, bound %.1f MB\n",
           (long long)st.st_size, seconds, channels, rate,
           (double)seconds * channels * rate * 4 / 1e6, used / 1e6, mono_bytes / 1e6,
           (mono_bytes + MONO_READ_CONSTANT) / 1e6);
    if (UNDER_ASAN) {
        /* ASan's quarantine keeps every realloc'ed buffer resident */
        printf("skip bomb memory bound: AddressSanitizer build\n");
        return;
    }
    CHECK_MSG(used <= mono_bytes + MONO_READ_CONSTANT, "peak grew by %zu bytes, bound %zu", used,
              mono_bytes + MONO_READ_CONSTANT);

    /* the same from memory (what the server does with an upload) */
    size_t size = 0;
    char *bytes = hv_test_read_file(bomb, &size);
    CHECK(reset_peak() == 0);
    base = status_kb("VmRSS");
    rc = hv_audio_read_buffer_mono(bytes, size, "bomb", 16000, 0, &x, &n, err, sizeof err);
    peak = status_kb("VmHWM");
    CHECK_MSG(rc == HV_OK && n == (size_t)seconds * 16000, "%s", err);
    hv_free(x);
    free(bytes);
    used = (size_t)(peak - base) * 1024;
    printf("bomb from memory: peak RSS grew by %.1f MB\n", used / 1e6);
    CHECK_MSG(used <= mono_bytes + MONO_READ_CONSTANT, "peak grew by %zu bytes, bound %zu", used,
              mono_bytes + MONO_READ_CONSTANT);
}

/* hv_audio_to_mono against the downmix resampled by one soxr_oneshot (the
 * same quality spec), for lengths around the block of 4096 frames. */
static void test_to_mono_streamed(void) {
    static const struct {
        int rate, channels;
        size_t frames;
    } cases[] = {{44100, 2, 44100},  {48000, 1, 4096},  {8000, 3, 4097},     {96000, 8, 12289},
                 {768000, 1, 70001}, {22050, 2, 1},     {11025, 1, 3},       {16000, 2, 5000},
                 {1000, 1, 9000},    {44100, 64, 4095}, {192000, 2, 192000}, {32000, 1, 8192}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int rate = cases[k].rate, ch = cases[k].channels;
        size_t n = cases[k].frames;
        float *pcm = malloc(n * ch * sizeof *pcm), *mono = malloc(n * sizeof *mono);
        uint32_t s = 12345u + (uint32_t)k;
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (int c = 0; c < ch; c++) {
                s = s * 1664525u + 1013904223u;
                float v = (float)((double)(s >> 8) / (1 << 24) - 0.5) * 0.9f;
                v += 0.3f * (float)sin(0.01 * (double)i * (c + 1));
                pcm[i * ch + c] = v;
                sum += v;
            }
            mono[i] = ch == 1 ? pcm[i] : (float)(sum / ch);
        }
        size_t want = rate == 16000
                          ? n
                          : (size_t)(((uint64_t)n * 32000 + (uint64_t)rate) / (2 * (uint64_t)rate));
        float *ref = malloc((want + 2) * sizeof *ref);
        size_t idone = 0, odone = n;
        if (rate != 16000) {
            soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
            soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
            soxr_runtime_spec_t rt = soxr_runtime_spec(1);
            CHECK(soxr_oneshot(rate, 16000, 1, mono, n, &idone, ref, want + 2, &odone, &io, &q,
                               &rt) == NULL);
        } else {
            memcpy(ref, mono, n * sizeof *ref);
        }
        float *out = NULL;
        size_t n_out = 0;
        hv_error e;
        hv_err_clear(&e);
        CHECK_MSG(hv_audio_to_mono(pcm, n, ch, rate, 16000, &out, &n_out, &e) == HV_OK, "%s",
                  e.msg);
        CHECK_MSG(out && n_out == odone && memcmp(out, ref, n_out * sizeof *out) == 0,
                  "%d Hz x %d ch, %zu frames: %zu samples against soxr_oneshot's %zu, %s", rate, ch,
                  n, n_out, odone, out && n_out == odone ? "samples differ" : "lengths differ");
        free(out);
        free(ref);
        free(mono);
        free(pcm);
    }
}

/* 60 s of 768 kHz mono samples to 16 kHz: the peak RSS grows by the
 * 3.84 MB of output plus the constant, not by a copy of the input. */
static void test_to_mono_memory(void) {
    const size_t n = (size_t)60 * 768000;
    float *pcm = malloc(n * sizeof *pcm);
    CHECK(pcm != NULL);
    if (!pcm) return;
    for (size_t i = 0; i < n; i++) pcm[i] = (float)sin(0.001 * (double)i) * 0.5f;
    int measured = reset_peak() == 0;
    long base = status_kb("VmRSS");
    float *out = NULL;
    size_t n_out = 0;
    hv_error e;
    hv_err_clear(&e);
    hv_status rc = hv_audio_to_mono(pcm, n, 1, 768000, 16000, &out, &n_out, &e);
    long peak = status_kb("VmHWM");
    CHECK_MSG(rc == HV_OK && n_out == (size_t)60 * 16000, "%s (%zu samples)", e.msg, n_out);
    free(out);
    free(pcm);
    size_t out_bytes = (size_t)60 * 16000 * sizeof(float);
    if (!measured || base < 0 || peak < 0) {
        printf("skip to_mono memory: cannot reset or read the peak RSS\n");
        return;
    }
    size_t used = (size_t)(peak - base) * 1024;
    printf("to_mono: 60 s at 768 kHz (%.0f MB of samples) to 16 kHz: peak RSS grew by %.1f MB; "
           "the output is %.1f MB, bound %.1f MB\n",
           n * 4 / 1e6, used / 1e6, out_bytes / 1e6, (out_bytes + MONO_READ_CONSTANT) / 1e6);
    if (UNDER_ASAN) {
        printf("skip to_mono memory bound: AddressSanitizer build\n");
        return;
    }
    CHECK_MSG(used <= out_bytes + MONO_READ_CONSTANT, "peak grew by %zu bytes, bound %zu", used,
              out_bytes + MONO_READ_CONSTANT);
}

int main(void) {
    dir = hv_test_tmpdir();
    test_identical();
    test_flac_length();
    test_mp3();
    test_errors();
    test_fifo();
    test_bomb();
    test_to_mono_streamed();
    test_to_mono_memory();
    TEST_END();
}
