/*
 * Checkpoints and the speech detector on disk (checkpoint.h).
 */
#include "checkpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where hvt_load_vad looks without --vad-model or $HVISKE_VAD_MODEL:
 * directories separated by ':' (CMakeLists.txt sets it). */
#ifndef HV_VAD_SEARCH_PATH
#define HV_VAD_SEARCH_PATH ""
#endif

/* Whether s looks like a Hugging Face model id, OWNER/NAME (letters,
 * digits, '-', '_', '.'; neither part starting with '.'). */
static int hub_id(const char *s) {
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/') || slash == s || !slash[1] || s[0] == '.' ||
        slash[1] == '.')
        return 0;
    for (const char *p = s; *p; p++)
        if (p != slash && !(isalnum((unsigned char)*p) || strchr("-_.", *p))) return 0;
    return 1;
}

/* What a checkpoint directory holds, for the messages below. */
#define CHECKPOINT_FILES                                                                           \
    "config.json, generation_config.json, tokenizer.model and model.safetensors"

int hvt_ggml_file(const char *path) {
    unsigned char h[4];
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    int r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, h, 4) == 4;
    close(fd);
    if (!r) return 0;
    /* whisper.cpp's "ggml" magic (0x67676d6c) as written little-endian,
     * its older ggmf and ggjt, and GGUF */
    return !memcmp(h, "lmgg", 4) || !memcmp(h, "fmgg", 4) || !memcmp(h, "tjgg", 4) ||
           !memcmp(h, "GGUF", 4);
}

int hvt_ggml_silero(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    struct stat st;
    return hvt_ggml_file(path) || (stat(path, &st) != 0 && strncmp(base, "ggml-silero", 11) == 0);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends to msg "; the checkpoints in DIR: a, b" when dir (NULL: ".")
 * has subdirectories that hold a config.json and a tokenizer.model (at
 * most 8 named; the speech detector's directory has no tokenizer). */
static void list_checkpoints(const char *dir, char *msg, size_t n) {
    DIR *d = opendir(dir ? dir : ".");
    if (!d) return;
    char *names[8];
    int k = 0;
    struct dirent *de;
    while (k < 8 && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096], tok[4096];
        snprintf(path, sizeof path, "%s/%s/config.json", dir ? dir : ".", de->d_name);
        snprintf(tok, sizeof tok, "%s/%s/tokenizer.model", dir ? dir : ".", de->d_name);
        struct stat st, st2;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && stat(tok, &st2) == 0 &&
            (names[k] = strdup(de->d_name)))
            k++;
    }
    closedir(d);
    if (k == 0) return;
    qsort(names, (size_t)k, sizeof *names, cmp_str);
    size_t len = strlen(msg);
    snprintf(msg + len, n - len, "; the checkpoints in %s: ", dir ? dir : ".");
    for (int i = 0; i < k; i++) {
        len = strlen(msg);
        snprintf(msg + len, n - len, "%s%s%s", i ? ", " : "", dir ? dir : "", dir ? "/" : "");
        len = strlen(msg);
        snprintf(msg + len, n - len, "%s", names[i]);
        free(names[i]);
    }
}

/* A name with a model file's extension: a path, not a hub id. */
static int file_like(const char *s) {
    static const char *const ext[] = {".bin",  ".gguf", ".safetensors", ".pt",   ".pth",
                                      ".onnx", ".ckpt", ".json",        ".model"};
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t m = strlen(ext[i]);
        if (n > m && strcmp(s + n - m, ext[i]) == 0) return 1;
    }
    return 0;
}

int hvt_model_dir_hint(const char *dir, char *msg, size_t n) {
    struct stat st;
    char parent[4096];
    const char *slash = strrchr(dir, '/');
    int plen = slash ? (int)(slash - dir) : 0;
    snprintf(parent, sizeof parent, "%.*s", plen ? plen : 1, plen ? dir : (slash ? "/" : "."));
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        if (hvt_ggml_file(dir)) {
            snprintf(msg, n,
                     "%s: a whisper.cpp model file (ggml), which hviske does not run: -m takes a "
                     "Cohere Transcribe checkpoint's directory (it holds " CHECKPOINT_FILES
                     "); fetch one with scripts/download-model.sh syvai/hviske-v5.3, then give "
                     "-m hviske-v5.3 (docs/CLI.md, \"Model paths\")",
                     dir);
            list_checkpoints(plen ? parent : NULL, msg, n);
            return 1;
        }
        snprintf(msg, n,
                 "%s: a file, not a checkpoint directory: give the checkpoint's directory, "
                 "%s (it holds " CHECKPOINT_FILES ")",
                 dir, parent);
        return 1;
    }
    if (stat(dir, &st) == 0) {
        char cfg[4096];
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        if (stat(cfg, &st) != 0 && errno == ENOENT) {
            snprintf(msg, n,
                     "%s: a directory, but not a checkpoint: it has no config.json (a checkpoint "
                     "directory holds " CHECKPOINT_FILES ")",
                     dir);
            list_checkpoints(dir, msg, n);
            return 1;
        }
        return 0;
    }
    if (errno != ENOENT) return 0;
    /* OWNER/NAME whose OWNER is no local directory: a hub id */
    char owner[4096];
    snprintf(owner, sizeof owner, "%.*s", (int)strcspn(dir, "/"), dir);
    if (hub_id(dir) && !file_like(dir) && !(stat(owner, &st) == 0 && S_ISDIR(st.st_mode))) {
        const char *name = strchr(dir, '/') + 1;
        snprintf(msg, n,
                 "%s: no such directory; to use the published checkpoint of that name, fetch it "
                 "first: scripts/download-model.sh %s (or git clone https://huggingface.co/%s), "
                 "then give -m %s",
                 dir, dir, dir, name);
        return 1;
    }
    const char *base = slash ? slash + 1 : dir;
    snprintf(msg, n,
             "%s: no such file or directory (-m takes a checkpoint's directory, which holds "
             "" CHECKPOINT_FILES "%s)",
             dir,
             strncmp(base, "ggml-", 5) == 0
                 ? "; whisper.cpp's ggml model files do not run in hviske"
                 : "");
    list_checkpoints(plen ? parent : NULL, msg, n);
    return 1;
}

int hvt_model_has_language(const hv_model *model, const char *lang) {
    for (int i = 0; i < hv_model_n_languages(model); i++)
        if (strcmp(hv_model_language(model, i), lang) == 0) return 1;
    return 0;
}

hv_status hvt_load_vad(const char *dir, hv_vad **out, char *err, size_t err_size) {
    char path[4096];
    *out = NULL;
    if (!dir && (dir = getenv(HVT_VAD_ENV)) && !*dir) dir = NULL;
    if (dir) return hv_vad_load(dir, out, err, err_size);
    const char *list = HV_VAD_SEARCH_PATH;
    while (*list) {
        size_t len = strcspn(list, ":");
        snprintf(path, sizeof path, "%.*s/config.json", (int)len, list);
        if (len && access(path, R_OK) == 0) {
            snprintf(path, sizeof path, "%.*s", (int)len, list);
            return hv_vad_load(path, out, err, err_size);
        }
        list += len + (list[len] == ':');
    }
    snprintf(err, err_size,
             "no speech detector found (looked in %s%s); name "
             "its directory with --vad-model DIR or $%s, or choose "
             "--chunking energy",
             *HV_VAD_SEARCH_PATH ? HV_VAD_SEARCH_PATH : "",
             *HV_VAD_SEARCH_PATH ? "" : "no default place", HVT_VAD_ENV);
    return HV_ERR_IO;
}
