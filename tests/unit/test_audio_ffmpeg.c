/* Containers and codecs read through FFmpeg's libraries (src/audio/ffmpeg.c;
 * issue #61): M4A/AAC, MP4 and MOV audio, WebM (Opus), Matroska (Vorbis),
 * WMA, raw AAC (ADTS), AMR and a video file's audio, made at test time by
 * the ffmpeg program from the example clip (AMR, which Debian's ffmpeg
 * cannot encode, is written by hand: NO_DATA frames). Each reads to about
 * the clip's length and level, from a path and from memory; the hostile
 * cases (cut files, a video without audio, garbage after an MP4 header,
 * a budget shorter than the audio) are refused with a message naming the
 * file, and nothing is written to standard error. Without FFmpeg in the
 * build the same files are refused, naming the container. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/audio.h"
#include "hviske.h"
#include "testlib.h"

static const char *dir;
static char *example;

/* Runs ffmpeg on the example clip with `args` writing dir/name; 0 on
 * success. */
static int make(const char *name, const char *in_args, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -hide_banner -loglevel error -y %s -i '%s' %s -bitexact '%s'",
             in_args, example, args, hv_test_path(dir, name));
    return system(cmd) == 0 ? 0 : -1;
}

#ifdef HV_HAVE_FFMPEG
static double rms(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return n ? sqrt(s / (double)n) : 0;
}

/* Standard error, redirected to a file while the hostile cases run. */
static int saved_err = -1;
static char err_path[4096];

static void quiet_begin(void) {
    snprintf(err_path, sizeof err_path, "%s", hv_test_path(dir, "stderr.txt"));
    fflush(stderr);
    saved_err = dup(2);
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
}

static long quiet_end(void) {
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    size_t n = 0;
    char *t = hv_test_read_file(err_path, &n);
    if (t && n) {
        fprintf(stderr, "standard error had %zu bytes:", n);
        for (size_t i = 0; i < n && i < 64; i++) fprintf(stderr, " %02x", (unsigned char)t[i]);
        fprintf(stderr, "\n");
    }
    free(t);
    return (long)n;
}

#endif

/* Expects reading name (a path in dir) to fail with code and a message
 * holding the path and `want`. */
static void expect_error(const char *name, hv_status code, const char *want) {
    const char *path = hv_test_path(dir, name);
    float *out = NULL;
    size_t n = 0;
    hv_error e = {0};
    hv_status rc = hv_audio_read_file_mono(path, 16000, 0, &out, &n, &e);
    CHECK_MSG(rc == code && strstr(e.msg, path) && strstr(e.msg, want) && !out,
              "%s: status %d (want %d), message '%s' (want '%s')", name, rc, code, e.msg, want);
    free(out);
}

#ifdef HV_HAVE_FFMPEG
/* The 16 kHz mono samples of a path and of its bytes in memory; checks
 * they agree. NULL (with the error in e) when the file is refused. */
static float *read_both(const char *path, double max_s, size_t *n, hv_error *e) {
    float *out = NULL;
    if (hv_audio_read_file_mono(path, 16000, max_s, &out, n, e)) return NULL;
    size_t size = 0;
    char *bytes = hv_test_read_file(path, &size);
    float *mem = NULL;
    size_t nm = 0;
    hv_error em = {0};
    hv_status rc = hv_audio_read_memory_mono(bytes, size, "upload", 16000, max_s, &mem, &nm, &em);
    CHECK_MSG(rc == HV_OK && nm == *n && memcmp(mem, out, nm * sizeof *mem) == 0,
              "%s: memory read %d (%s), %zu samples, file %zu", path, rc, em.msg, nm, *n);
    free(mem);
    free(bytes);
    return out;
}

#endif

/* An AMR-NB file of `frames` 12.2 kbit/s frames of zero bits (20 ms each
 * at 8 kHz). */
static void write_amr(const char *name, int frames) {
    size_t n = 6 + (size_t)frames * 32;
    unsigned char *b = calloc(n, 1);
    memcpy(b, "#!AMR\n", 6);
    for (int i = 0; i < frames; i++) b[6 + (size_t)i * 32] = 0x3C; /* FT 7 (MR122), Q 1 */
    hv_test_write_file(hv_test_path(dir, name), b, n);
    free(b);
}

int main(void) {
    dir = hv_test_tmpdir();
    example = strdup(hv_test_path(hv_test_env("HV_SOURCE_DIR", "."), "examples/da-example.wav"));
    float *ref = NULL;
    size_t n_ref = 0;
    hv_error e = {0};
    CHECK(hv_audio_read_file_mono(example, 16000, 0, &ref, &n_ref, &e) == HV_OK);

    if (system("ffmpeg -hide_banner -version >/dev/null 2>&1") != 0) {
        if (getenv("CI"))
            CHECK_MSG(0, "ffmpeg is missing (CI is set: scripts/install-deps.sh test)");
        else
            printf("skip: the ffmpeg program is missing (scripts/install-deps.sh test)\n");
        free(ref);
        free(example);
        TEST_END();
    }
    static const struct {
        const char *name, *in, *args;
    } kinds[] = {
        {"aac.m4a", "", "-c:a aac"},
        {"aac-stereo44k.m4a", "", "-c:a aac -ar 44100 -af 'pan=stereo|c0=c0|c1=c0'"},
        {"aac.mp4", "", "-c:a aac -movflags +faststart"},
        {"aac.mov", "", "-c:a aac"},
        {"opus.webm", "", "-c:a libopus"},
        {"vorbis.mka", "", "-c:a libvorbis"},
        {"wmav2.wma", "", "-c:a wmav2"},
        {"adts.aac", "", "-c:a aac"},
        {"video.mp4", "-f lavfi -i color=c=black:s=64x48:r=5",
         "-shortest -map 0:v -map 1:a -c:v mpeg4 -c:a aac"},
        {"video.mkv", "-f lavfi -i color=c=black:s=64x48:r=5",
         "-shortest -map 0:v -map 1:a -c:v mpeg4 -c:a libopus"},
    };
    int made = 1;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        if (make(kinds[k].name, kinds[k].in, kinds[k].args)) {
            CHECK_MSG(0, "ffmpeg could not write %s", kinds[k].name);
            made = 0;
        }
    write_amr("silence.amr", 100);
    if (!made) {
        free(ref);
        free(example);
        TEST_END();
    }

#ifdef HV_HAVE_FFMPEG
    double ref_rms = rms(ref, n_ref);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        const char *path = hv_test_path(dir, kinds[k].name);
        size_t n = 0;
        float *out = read_both(path, 0, &n, &e);
        /* encoders add or trim up to a frame or two at either end */
        double dn = fabs((double)n - (double)n_ref) / 16000.0, lvl = rms(out, n) / ref_rms;
        CHECK_MSG(out && dn < 0.15 && lvl > 0.8 && lvl < 1.25,
                  "%s: %s; %zu samples (example %zu), level %.3f of the example's", kinds[k].name,
                  out ? "read" : e.msg, n, n_ref, lvl);
        free(out);
    }
    {
        size_t n = 0;
        float *out = read_both(hv_test_path(dir, "silence.amr"), 0, &n, &e);
        CHECK_MSG(out && n == 32000, "silence.amr: %s, %zu samples (want 2 s: 32000)",
                  out ? "read" : e.msg, n);
        free(out);
    }
    /* the budget: the audio actually decoded counts */
    {
        float *out = NULL;
        size_t n = 0;
        const char *path = hv_test_path(dir, "aac.m4a");
        hv_status rc = hv_audio_read_file_mono(path, 16000, 2.0, &out, &n, &e);
        CHECK_MSG(rc == HV_ERR_LIMIT && strstr(e.msg, path) && strstr(e.msg, "2 s") && !out,
                  "budget: %d '%s'", rc, e.msg);
        free(out);
    }

    quiet_begin();
    /* an MP4 whose index (at its end) is cut off */
    size_t size = 0;
    char *m4a = hv_test_read_file(hv_test_path(dir, "aac.m4a"), &size);
    hv_test_write_file(hv_test_path(dir, "cut.m4a"), m4a, size / 2);
    expect_error("cut.m4a", HV_ERR_FORMAT,
                 "not a readable audio file (an MP4/M4A/MOV file; FFmpeg");
    /* garbage after an MP4 file type box */
    for (size_t i = 40; i < size; i++) m4a[i] = (char)(i * 7919 % 251);
    hv_test_write_file(hv_test_path(dir, "garbage.m4a"), m4a, size);
    expect_error("garbage.m4a", HV_ERR_FORMAT, "an MP4/M4A/MOV file");
    free(m4a);
    /* an index up front, the media cut: the frames that are there */
    char *fast = hv_test_read_file(hv_test_path(dir, "aac.mp4"), &size);
    hv_test_write_file(hv_test_path(dir, "cut.mp4"), fast, size / 2);
    free(fast);
    {
        size_t n = 0;
        float *out = read_both(hv_test_path(dir, "cut.mp4"), 0, &n, &e);
        CHECK_MSG(out && n > n_ref / 4 && n < n_ref, "cut.mp4: %s, %zu samples of %zu",
                  out ? "read" : e.msg, n, n_ref);
        free(out);
    }
    /* a WebM cut inside its headers, and a video with no audio */
    char *webm = hv_test_read_file(hv_test_path(dir, "opus.webm"), &size);
    hv_test_write_file(hv_test_path(dir, "cut.webm"), webm, 60);
    free(webm);
    expect_error("cut.webm", HV_ERR_FORMAT, "a WebM/Matroska file");
    CHECK(make("noaudio.mp4", "-f lavfi -i color=c=black:s=64x48:r=5:d=1", "-map 0:v -c:v mpeg4") ==
          0);
    expect_error("noaudio.mp4", HV_ERR_FORMAT, "holds no audio stream");
    CHECK_MSG(quiet_end() == 0, "FFmpeg wrote to standard error");
#else
    expect_error("aac.m4a", HV_ERR_FORMAT, "an MP4/M4A/MOV file, which this hviske cannot read");
    expect_error("opus.webm", HV_ERR_FORMAT, "WebM/Matroska file, which this hviske cannot read");
    expect_error("wmav2.wma", HV_ERR_FORMAT, "built without FFmpeg's libraries");
    expect_error("silence.amr", HV_ERR_FORMAT, "an AMR file");
#endif
    free(ref);
    free(example);
    TEST_END();
}
