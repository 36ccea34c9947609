#include "testlib.h"

#include "hviske.h"
#include "model/tokenizer.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hv_test_passed, hv_test_failed;

const char *hv_test_env(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

const char *hv_test_path(const char *dir, const char *name) {
    static char bufs[8][4096];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

int hv_test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

/* Removes a path and, for a directory, everything in it; symbolic links
 * are removed, not followed. */
static void remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char child[4096];
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child)
                remove_tree(child);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The directories hv_test_tmpdir made, removed when the program exits so
 * that a test leaves nothing behind whatever it forgot to delete. */
static char tmpdirs[8][64];
static int n_tmpdirs;

static void remove_tmpdirs(void) {
    for (int i = 0; i < n_tmpdirs; i++) remove_tree(tmpdirs[i]);
}

const char *hv_test_tmpdir(void) {
    static char buf[64];
    snprintf(buf, sizeof buf, "/tmp/hviske-test-XXXXXX");
    if (n_tmpdirs == (int)(sizeof tmpdirs / sizeof tmpdirs[0])) {
        fprintf(stderr, "hv_test_tmpdir: more than %d directories\n", n_tmpdirs);
        exit(2);
    }
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
    if (n_tmpdirs == 0) atexit(remove_tmpdirs);
    memcpy(tmpdirs[n_tmpdirs++], buf, sizeof buf);
    return buf;
}

char *hv_test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)len + 1))) {
        if (fread(s, 1, (size_t)len, f) == (size_t)len) {
            s[len] = '\0';
            if (n) *n = (size_t)len;
        } else {
            free(s);
            s = NULL;
        }
    }
    fclose(f);
    return s;
}

char *hv_test_read_text(const char *path) { return hv_test_read_file(path, NULL); }

float *hv_test_noise(size_t n, unsigned seed) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) return NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 16) % 1000) / 1000.0f - 0.5f;
    }
    return x;
}

int hv_test_demo_open(hv_test_demo *d) {
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    char err[1024];
    int rate = 0, ch = 0;
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 2;
    memset(d, 0, sizeof *d);
    CHECK_MSG(hv_model_load(hv_test_path(src, "models/demo"), &mp, &d->model, err, sizeof err) ==
                  HV_OK,
              "%s", err);
    CHECK_MSG(hv_vad_load(hv_test_path(src, "models/silero-vad"), &d->vad, err, sizeof err) ==
                  HV_OK,
              "%s", err);
    CHECK_MSG(hv_audio_read(hv_test_path(src, "examples/da-example.wav"), &d->clip, &d->n_clip,
                            &rate, &ch, err, sizeof err) == HV_OK &&
                  rate == 16000 && ch == 1,
              "%s", err);
    if (d->model)
        CHECK_MSG(hv_context_new(d->model, 0, &d->ctx, err, sizeof err) == HV_OK, "%s", err);
    return d->ctx && d->vad && d->clip && rate == 16000 && ch == 1 ? 0 : -1;
}

hv_context *hv_test_context(const hv_model *m, int n_threads) {
    hv_context *ctx = NULL;
    char err[1024] = "";
    CHECK_MSG(hv_context_new(m, n_threads, &ctx, err, sizeof err) == HV_OK, "%s", err);
    return ctx;
}

void hv_test_demo_free(hv_test_demo *d) {
    hv_context_free(d->ctx);
    hv_free(d->clip);
    hv_vad_free(d->vad);
    hv_model_free(d->model);
    memset(d, 0, sizeof *d);
}

/* Loads dir with each type and hands the model to fn. */
static void each_type(const char *dir, const hv_weight_type *types, int n_types,
                      void (*fn)(hv_model *m, const char *dir, hv_weight_type type, void *user),
                      void *user) {
    for (int t = 0; t < n_types; t++) {
        char err[1024];
        hv_model_params mp = hv_model_default_params();
        mp.weight_type = types[t];
        hv_model *m = NULL;
        CHECK_MSG(hv_model_load(dir, &mp, &m, err, sizeof err) == HV_OK, "%s", err);
        if (m) fn(m, dir, types[t], user);
        hv_model_free(m);
    }
}

int hv_test_each_model(const hv_weight_type *types, int n_types,
                       void (*fn)(hv_model *m, const char *dir, hv_weight_type type, void *user),
                       void *user) {
    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    char *man = fx ? hv_test_read_text(hv_test_path(fx, "manifest.json")) : NULL;
    cJSON *j = man ? cJSON_Parse(man) : NULL, *mo;
    int n = j ? 0 : -1;
    char dir[4096];
    cJSON_ArrayForEach(mo, cJSON_GetObjectItem(j, "models")) {
        const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(mo, "path"));
        if (!path) continue;
        snprintf(dir, sizeof dir, "%s", hv_test_path(fx, path));
        each_type(dir, types, n_types, fn, user);
        n++;
    }
    cJSON_Delete(j);
    free(man);
    snprintf(dir, sizeof dir, "%s", hv_test_path(hv_test_env("HV_SOURCE_DIR", "."), "models/demo"));
    each_type(dir, types, n_types, fn, user);
    return n;
}

int hv_test_piece(hv_tokenizer *t, const char *text) {
    int32_t id = hv_tokenizer_find(t, text);
    if (id >= 0) return id;
    uint8_t type = text[0] == '<' && text[1] == '|' ? HV_PIECE_CONTROL : HV_PIECE_NORMAL;
    hv_error e = {0};
    if (hv_tokenizer_append(t, &text, &type, 1, "test", &e)) {
        fprintf(stderr, "append %s: %s\n", text, e.msg);
        exit(1);
    }
    return t->n_pieces - 1;
}

int hv_test_stream(hv_tokenizer *t, const char *spec, int32_t *ids, int cap) {
    char buf[512], name[64];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *w = strtok(buf, " "); w && n < cap; w = strtok(NULL, " ")) {
        if (w[0] == 'S' && w[1] >= '0' && w[1] <= '9')
            snprintf(name, sizeof name, "<|spltoken%s|>", w + 1);
        else if (w[0] == 'T' && w[1] >= '0' && w[1] <= '9')
            snprintf(name, sizeof name, "<|t:%s|>", w + 1);
        else if (w[0] == '_')
            snprintf(name, sizeof name, "\xe2\x96\x81%s", w + 1);
        else
            snprintf(name, sizeof name, "%s", w);
        ids[n++] = hv_test_piece(t, name);
    }
    return n;
}
