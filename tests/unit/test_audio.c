/* Audio input: files written here with libsndfile are read back through
 * hv_audio_read_file / hv_audio_read, downmixed and resampled with
 * hv_audio_to_mono and compared with the analytic signals; broken files
 * must give errors that name them. */
#ifndef _POSIX_C_SOURCE         /* popen, strdup, ...: the tests are not built */
#define _POSIX_C_SOURCE 200809L /* with the library's definitions */
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>

#include "audio/audio.h"
#include "hviske.h"
#include "testlib.h"

#define TWO_PI 6.283185307179586476925

static const char *dir;

/* Channel c of frame i of the test signal: a sine of freq Hz, amplitude
 * amp, inverted on odd channels (so a stereo downmix cancels). */
static double tone(size_t i, int c, int rate, double freq, double amp) {
    double v = amp * sin(TWO_PI * freq * (double)i / rate);
    return c % 2 ? -v : v;
}

/* Writes frames x channels of tone() with libsndfile; 0 on success, -1
 * when this libsndfile cannot write the format (the caller skips). */
static int write_tone(const char *path, int format, int rate, int channels, size_t frames,
                      double freq, double amp) {
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    if (!sf_format_check(&info)) return -1;
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) return -1;
    float *buf = malloc(frames * channels * sizeof *buf);
    for (size_t i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++)
            buf[i * channels + c] = (float)tone(i, c, rate, freq, amp);
    sf_count_t w = sf_writef_float(sf, buf, (sf_count_t)frames);
    free(buf);
    sf_close(sf);
    return w == (sf_count_t)frames ? 0 : -1;
}

/* Writes a float WAV holding the given interleaved samples. */
static void write_float_wav(const char *path, const float *pcm, size_t frames, int rate,
                            int channels) {
    SF_INFO info = {
        .samplerate = rate, .channels = channels, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    CHECK_MSG(sf, "cannot write %s", path);
    if (!sf) return;
    if (frames) sf_writef_float(sf, pcm, (sf_count_t)frames);
    sf_close(sf);
}

/* The n samples at pcm are write_tone's 440 Hz tone at 16 kHz, mono,
 * within 16-bit rounding: the first that is not is a failed check. */
static void check_tone(const float *pcm, size_t n, const char *what) {
    for (size_t i = 0; pcm && i < n; i++)
        if (fabs(pcm[i] - tone(i, 0, 16000, 440, 0.5)) > 2.0 / 32768) {
            CHECK_MSG(0, "%s: sample %zu differs", what, i);
            return;
        }
}

/* Expects hv_audio_read_file(path) to fail with `want` and a message
 * that names the file and contains `needle`. */
static void expect_error(const char *path, hv_status want, const char *needle) {
    hv_error e;
    hv_err_clear(&e);
    float *pcm = (float *)&e; /* must be reset to NULL on failure */
    size_t n = 99;
    int rate = 99, ch = 99;
    hv_status rc = hv_audio_read_file(path, &pcm, &n, &rate, &ch, &e);
    CHECK_MSG(rc == want, "%s: status %d, want %d (%s)", path, rc, want, e.msg);
    CHECK_MSG(strstr(e.msg, path), "message does not name the file: %s", e.msg);
    CHECK_MSG(strstr(e.msg, needle), "message lacks '%s': %s", needle, e.msg);
    CHECK(pcm == NULL && n == 0 && rate == 0 && ch == 0);
    free(rc == HV_OK ? pcm : NULL);
}

/* The four readers' argument errors: a NULL output names the reader, a
 * NULL path and empty or unreadable memory are refused (memory named
 * "<memory>" when the caller gives no name), and the outputs are reset. */
static void test_argument_errors(void) {
    hv_error e;
    hv_err_clear(&e);
    float *pcm = (float *)&e;
    size_t n = 99;
    int rate = 99, ch = 99;
    CHECK(hv_audio_read_file("x.wav", NULL, &n, &rate, &ch, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "hv_audio_read_file: NULL output"));
    CHECK(hv_audio_read_file(NULL, &pcm, &n, &rate, &ch, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "NULL path") && !pcm && !n && !rate && !ch);
    CHECK(hv_audio_read_file_mono("x.wav", 16000, 0, NULL, &n, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "hv_audio_read_file_mono: NULL output"));
    pcm = (float *)&e;
    n = 99;
    CHECK(hv_audio_read_file_mono(NULL, 16000, 0, &pcm, &n, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "NULL path") && !pcm && !n);
    CHECK(hv_audio_read_memory("x", 1, NULL, 0, &pcm, NULL, &rate, &ch, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "hv_audio_read_memory: NULL output"));
    pcm = (float *)&e;
    n = 99;
    rate = ch = 99;
    CHECK(hv_audio_read_memory("", 0, NULL, 0, &pcm, &n, &rate, &ch, &e) == HV_ERR_FORMAT &&
          strstr(e.msg, "<memory>: empty input") && !pcm && !n && !rate && !ch);
    CHECK(hv_audio_read_memory_mono("x", 1, NULL, 16000, 0, &pcm, NULL, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "hv_audio_read_memory_mono: NULL output"));
    pcm = (float *)&e;
    n = 99;
    CHECK(hv_audio_read_memory_mono("junk", 4, "clip", 16000, 0, &pcm, &n, &e) == HV_ERR_FORMAT &&
          strstr(e.msg, "clip: not a readable audio file") && !pcm && !n);
}

/* A file of each kind round-trips: length, rate, channels and samples. */
static void test_roundtrip(void) {
    static const struct {
        const char *name;
        int format, rate, channels;
        double tol; /* quantisation: written * 32767, read / 32768 */
    } cases[] = {
        {"m8k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, 2.0 / 32768},
        {"s16k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 2, 2.0 / 32768},
        {"s44k.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, 2, 1e-7},
        {"m48k.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 48000, 1, 2.0 / 8388608},
        {"m16k.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 2.0 / 32768},
        {"s44k.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2, 2.0 / 32768},
        {"q6.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 22050, 6, 2.0 / 32768},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = hv_test_path(dir, cases[k].name);
        size_t frames = (size_t)cases[k].rate * 3 / 4 + 17;
        int rc =
            write_tone(path, cases[k].format, cases[k].rate, cases[k].channels, frames, 440.0, 0.6);
        CHECK_MSG(rc == 0, "cannot write %s", path);
        if (rc) continue;
        float *pcm = NULL;
        size_t n = 0;
        int rate = 0, ch = 0;
        hv_error e;
        hv_err_clear(&e);
        CHECK_MSG(hv_audio_read_file(path, &pcm, &n, &rate, &ch, &e) == HV_OK, "%s", e.msg);
        CHECK_MSG(n == frames, "%s: %zu frames, want %zu", path, n, frames);
        CHECK(rate == cases[k].rate && ch == cases[k].channels);
        double err = 0;
        for (size_t i = 0; pcm && i < n && i < frames; i++)
            for (int c = 0; c < ch; c++) {
                double d = fabs(pcm[i * ch + c] - tone(i, c, rate, 440.0, 0.6));
                if (d > err) err = d;
            }
        CHECK_MSG(err <= cases[k].tol, "%s: max error %g > %g", path, err, cases[k].tol);
        free(pcm);
    }
}

/* Lossy codecs, where this libsndfile writes them: rate, channels, a
 * length within the codec's padding and the tone's power survive. */
static void test_lossy(void) {
    static const struct {
        const char *name;
        int format, rate;
    } cases[] = {
        {"v.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 44100},
        {"o.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000},
        {"m.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = hv_test_path(dir, cases[k].name);
        size_t frames = (size_t)cases[k].rate; /* 1 s */
        if (write_tone(path, cases[k].format, cases[k].rate, 2, frames, 440.0, 0.5)) {
            fprintf(stderr, "note: this libsndfile cannot write %s; skipped\n", cases[k].name);
            continue;
        }
        float *pcm = NULL;
        size_t n = 0;
        int rate = 0, ch = 0;
        hv_error e;
        hv_err_clear(&e);
        CHECK_MSG(hv_audio_read_file(path, &pcm, &n, &rate, &ch, &e) == HV_OK, "%s", e.msg);
        CHECK_MSG(rate == cases[k].rate && ch == 2, "%s: %d Hz, %d ch", path, rate, ch);
        CHECK_MSG(n + frames / 20 > frames && n < frames + frames / 20,
                  "%s: %zu frames, want about %zu", path, n, frames);
        double p = 0;
        for (size_t i = 0; i < n; i++) p += (double)pcm[2 * i] * pcm[2 * i];
        double rms = n ? sqrt(p / n) : 0, want = 0.5 / sqrt(2.0);
        CHECK_MSG(fabs(rms - want) < 0.1 * want, "%s: rms %g, want %g", path, rms, want);
        free(pcm);
    }
}

/* Downmix averages the channels exactly. */
static void test_downmix(void) {
    float st[] = {0.5f, -0.5f, 1.0f, -1.0f, 0.5f, 0.25f, -0.75f, 0.25f};
    float *m = NULL;
    size_t n = 0;
    hv_error e;
    hv_err_clear(&e);
    CHECK(hv_audio_to_mono(st, 4, 2, 16000, 16000, &m, &n, &e) == HV_OK);
    CHECK(n == 4 && m[0] == 0.0f && m[1] == 0.0f && m[2] == 0.375f && m[3] == -0.25f);
    free(m);

    /* Through a file: an inverted-channel stereo tone cancels to silence. */
    const char *path = hv_test_path(dir, "cancel.wav");
    CHECK(write_tone(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 2, 4000, 300.0, 0.9) == 0);
    float *pcm = NULL;
    int rate = 0, ch = 0;
    size_t frames = 0;
    CHECK(hv_audio_read_file(path, &pcm, &frames, &rate, &ch, &e) == HV_OK);
    CHECK(hv_audio_to_mono(pcm, frames, ch, rate, 16000, &m, &n, &e) == HV_OK);
    double peak = 0;
    for (size_t i = 0; i < n; i++) peak = fmax(peak, fabs(m[i]));
    CHECK_MSG(n == 4000 && peak == 0, "n %zu peak %g", n, peak);
    free(m);
    free(pcm);

    /* Equal rates: a plain copy, bit for bit. */
    float mono[5] = {0.1f, -0.2f, 0.3f, 1e-30f, -1.5f};
    CHECK(hv_audio_to_mono(mono, 5, 1, 22050, 22050, &m, &n, &e) == HV_OK);
    CHECK(n == 5 && memcmp(m, mono, sizeof mono) == 0);
    free(m);
}

/* Resampling: a sine at `from` Hz resampled to `to` Hz equals the same
 * sine sampled at `to`, away from the edges where the filter sees the
 * signal's start and end. Returns the max error. */
static double resample_error(int from, int to, int channels, size_t frames, double freq,
                             size_t *n_out) {
    float *pcm = malloc(frames * channels * sizeof *pcm);
    for (size_t i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++) /* same tone on every channel */
            pcm[i * channels + c] = (float)tone(i, 0, from, freq, 0.5);
    float *m = NULL;
    hv_error e;
    hv_err_clear(&e);
    CHECK_MSG(hv_audio_to_mono(pcm, frames, channels, from, to, &m, n_out, &e) == HV_OK, "%s",
              e.msg);
    size_t edge = (size_t)to / 20; /* 50 ms */
    double err = 0;
    for (size_t j = edge; m && j + edge < *n_out; j++)
        err = fmax(err, fabs(m[j] - tone(j, 0, to, freq, 0.5)));
    free(m);
    free(pcm);
    return err;
}

static void test_resample(void) {
    static const struct {
        int from, to, channels;
        size_t frames;
        double freq, tol;
    } cases[] = {
        /* SOXR_HQ: ~3e-7 for tones well inside the passband; at 5 kHz of
         * 44.1 -> 16 kHz its passband droop shows (2.4e-5, 7.5e-4 at
         * 7 kHz), which is the resampler's design, not a bug. */
        {44100, 16000, 2, 44100, 1000.0, 2e-6}, {48000, 16000, 1, 48000, 440.0, 2e-6},
        {8000, 16000, 1, 8000, 1000.0, 2e-6},   {22050, 16000, 2, 12345, 3000.0, 2e-6},
        {44100, 16000, 1, 12345, 5000.0, 5e-5}, {16000, 44100, 1, 9999, 700.0, 2e-6},
        {11025, 16000, 3, 20000, 2000.0, 2e-6},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n = 0;
        double err = resample_error(cases[k].from, cases[k].to, cases[k].channels, cases[k].frames,
                                    cases[k].freq, &n);
        size_t want = (size_t)floor((double)cases[k].frames * cases[k].to / cases[k].from + 0.5);
        CHECK_MSG(n == want, "%d -> %d: %zu samples, want %zu", cases[k].from, cases[k].to, n,
                  want);
        CHECK_MSG(err < cases[k].tol, "%d -> %d Hz, %.0f Hz sine: max error %g", cases[k].from,
                  cases[k].to, cases[k].freq, err);
        printf("resample %5d -> %5d Hz, %4.0f Hz sine: %zu samples, "
               "max error %.2e\n",
               cases[k].from, cases[k].to, cases[k].freq, n, err);
    }
}

static void test_to_mono_errors(void) {
    float pcm[8] = {0};
    float *m = (float *)pcm;
    size_t n = 7;
    hv_error e;
    hv_err_clear(&e);
    pcm[5] = NAN;
    CHECK(hv_audio_to_mono(pcm, 4, 2, 16000, 16000, &m, &n, &e) == HV_ERR_FORMAT);
    CHECK_MSG(strstr(e.msg, "NaN") && strstr(e.msg, "sample 2"), "%s", e.msg);
    CHECK(m == NULL && n == 0);
    pcm[5] = -INFINITY;
    CHECK(hv_audio_to_mono(pcm, 8, 1, 44100, 16000, &m, &n, &e) == HV_ERR_FORMAT);
    CHECK_MSG(strstr(e.msg, "infinite"), "%s", e.msg);
    pcm[5] = 0;
    CHECK(hv_audio_to_mono(pcm, 0, 1, 16000, 16000, &m, &n, &e) == HV_ERR_INVALID_ARG);
    CHECK(hv_audio_to_mono(pcm, 8, 0, 16000, 16000, &m, &n, &e) == HV_ERR_INVALID_ARG);
    CHECK(hv_audio_to_mono(pcm, 8, 1, 0, 16000, &m, &n, &e) == HV_ERR_INVALID_ARG);
    CHECK(hv_audio_to_mono(pcm, 8, 1, 16000, -5, &m, &n, &e) == HV_ERR_INVALID_ARG);
    /* A single sample at 44.1 kHz resamples to nothing: not an error. */
    CHECK(hv_audio_to_mono(pcm, 1, 1, 44100, 16000, &m, &n, &e) == HV_OK);
    CHECK(m != NULL && n == 0);
    free(m);
}

static void test_file_errors(void) {
    char *missing = strdup(hv_test_path(dir, "missing.wav"));
    expect_error(missing, HV_ERR_IO, "cannot open");
    free(missing);
    expect_error(dir, HV_ERR_IO, "directory");

    const char *empty = hv_test_path(dir, "empty.wav");
    CHECK(hv_test_write_file(empty, "", 0) == 0);
    expect_error(empty, HV_ERR_FORMAT, "empty");

    /* A valid WAV header announcing no frames. */
    const char *zero = hv_test_path(dir, "zero.wav");
    write_float_wav(zero, NULL, 0, 16000, 1);
    expect_error(zero, HV_ERR_FORMAT, "no audio frames");

    /* A real WAV cut inside its header, and one cut inside its data. */
    const char *full = hv_test_path(dir, "full.wav");
    CHECK(write_tone(full, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 16000, 440, 0.5) == 0);
    size_t len = 0;
    char *bytes = hv_test_read_file(full, &len);
    CHECK(bytes && len == 44 + 32000);
    const char *cut = hv_test_path(dir, "cut_header.wav");
    CHECK(hv_test_write_file(cut, bytes, 20) == 0);
    expect_error(cut, HV_ERR_FORMAT, "not a readable audio file");
    /* Data cut short: the decision is to return the frames that are there. */
    const char *cutd = hv_test_path(dir, "cut_data.wav");
    CHECK(hv_test_write_file(cutd, bytes, 44 + 2 * 1000 + 1) == 0);
    float *pcm = NULL;
    size_t n = 0;
    int rate = 0, ch = 0;
    hv_error e;
    hv_err_clear(&e);
    CHECK_MSG(hv_audio_read_file(cutd, &pcm, &n, &rate, &ch, &e) == HV_OK, "%s", e.msg);
    CHECK_MSG(n == 1000 && rate == 16000 && ch == 1, "truncated: %zu frames", n);
    check_tone(pcm, n, "truncated");
    free(pcm);
    /* The same for a compressed format: a FLAC cut in half gives its
     * complete frames, exact (test_audio_cut.c cuts FLAC, Ogg Vorbis and
     * Opus files everywhere). */
    const char *flac = hv_test_path(dir, "full.flac");
    CHECK(write_tone(flac, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 32000, 440, 0.5) == 0);
    size_t flen = 0;
    char *fbytes = hv_test_read_file(flac, &flen);
    const char *cutf = hv_test_path(dir, "cut.flac");
    CHECK(fbytes && hv_test_write_file(cutf, fbytes, flen / 2) == 0);
    free(fbytes);
    pcm = NULL;
    CHECK_MSG(hv_audio_read_file(cutf, &pcm, &n, &rate, &ch, &e) == HV_OK, "%s", e.msg);
    CHECK_MSG(n > 4000 && n < 32000, "truncated FLAC: %zu frames", n);
    check_tone(pcm, n, "truncated FLAC");
    free(pcm);

    /* Header intact, no data bytes at all. */
    const char *nodata = hv_test_path(dir, "no_data.wav");
    CHECK(hv_test_write_file(nodata, bytes, 44) == 0);
    expect_error(nodata, HV_ERR_FORMAT, nodata);
    free(bytes);

    /* Random bytes (a fixed generator, so the file is always the same). */
    unsigned char junk[4096];
    uint64_t s = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        junk[i] = (unsigned char)(s >> 56);
    }
    junk[0] = 'x'; /* never an MPEG frame sync (0xFF) at offset 0 */
    const char *rnd = hv_test_path(dir, "random.wav");
    CHECK(hv_test_write_file(rnd, junk, sizeof junk) == 0);
    expect_error(rnd, HV_ERR_FORMAT, "not a readable audio file");

    const char *txt = hv_test_path(dir, "notes.txt");
    const char *words = "This is not audio.\nJust some text in a file.\n";
    CHECK(hv_test_write_file(txt, words, strlen(words)) == 0);
    expect_error(txt, HV_ERR_FORMAT, "not a readable audio file");

    /* Float WAVs can hold NaN and infinity. */
    float bad[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    const char *nan_wav = hv_test_path(dir, "nan.wav");
    bad[3] = NAN;
    write_float_wav(nan_wav, bad, 3, 16000, 2);
    expect_error(nan_wav, HV_ERR_FORMAT, "sample 1 of channel 1");
    expect_error(nan_wav, HV_ERR_FORMAT, "NaN");
    const char *inf_wav = hv_test_path(dir, "inf.wav");
    bad[3] = 0;
    bad[4] = INFINITY;
    write_float_wav(inf_wav, bad, 6, 16000, 1);
    expect_error(inf_wav, HV_ERR_FORMAT, "infinite");

    /* No permission to read (root reads anything; skip then). */
    const char *locked = hv_test_path(dir, "locked.wav");
    CHECK(write_tone(locked, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 100, 440, 0.5) == 0);
    chmod(locked, 0);
    if (geteuid() != 0) expect_error(locked, HV_ERR_IO, "cannot open");
}

/* The public wrappers: message into the caller's buffer, "" on success. */
static void test_public_api(void) {
    char err[256];
    float *pcm = (float *)err;
    size_t n = 0;
    int rate = 0, ch = 0;
    char *missing = strdup(hv_test_path(dir, "nope.flac"));
    CHECK(hv_audio_read(missing, &pcm, &n, &rate, &ch, err, sizeof err) == HV_ERR_IO);
    CHECK_MSG(strstr(err, missing), "%s", err);
    CHECK(pcm == NULL);
    /* A small buffer gets a truncated, terminated message. */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    CHECK(hv_audio_read(missing, &pcm, &n, &rate, &ch, tiny, sizeof tiny) == HV_ERR_IO);
    CHECK(tiny[7] == '\0');
    free(missing);

    const char *ok = hv_test_path(dir, "api.flac");
    CHECK(write_tone(ok, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 1600, 440, 0.5) == 0);
    CHECK(hv_audio_read(ok, &pcm, &n, &rate, &ch, err, sizeof err) == HV_OK);
    CHECK(err[0] == '\0' && n == 1600 && rate == 16000 && ch == 1);
    hv_free(pcm);
    hv_free(NULL);
    CHECK(hv_audio_read(NULL, &pcm, &n, &rate, &ch, err, sizeof err) == HV_ERR_INVALID_ARG);
}

int main(void) {
    dir = hv_test_tmpdir();
    test_roundtrip();
    test_lossy();
    test_downmix();
    test_resample();
    test_to_mono_errors();
    test_file_errors();
    test_argument_errors();
    test_public_api();
    TEST_END();
}
