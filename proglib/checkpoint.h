/*
 * Checkpoints and the speech detector on disk, for the programs: what a
 * model path that cannot be a checkpoint is (a hint before loading), and
 * where the speech detector is found.
 */
#ifndef HV_PROGLIB_CHECKPOINT_H
#define HV_PROGLIB_CHECKPOINT_H

#include <stddef.h>

#include "hviske.h"

/* A model directory that cannot be one as given, said before loading:
 * a whisper.cpp ggml or GGUF file (known by its magic: what to fetch
 * instead), another file (a checkpoint's model.safetensors given as -m:
 * "give the checkpoint's directory, DIR"), a directory without a
 * config.json (what a checkpoint holds, and the checkpoints inside it), a
 * missing name that looks like a Hugging Face model id (OWNER/NAME, no
 * file extension, OWNER no local directory: how to fetch it), or any
 * other missing path (the checkpoints beside it). 1 with the message in
 * msg[n], else 0 (the load reports what is wrong). */
int hvt_model_dir_hint(const char *dir, char *msg, size_t n);

/* 1 when path is a regular file that begins as a ggml model does
 * (whisper.cpp's ggml, ggmf, ggjt or GGUF magic). */
int hvt_ggml_file(const char *path);

/* whisper.cpp's Silero speech detector file given for the detector (a
 * ggml file, or a missing ggml-silero-* name as in its README): 1 when
 * path is one, and the bundled detector stands for it. */
int hvt_ggml_silero(const char *path);

/* 1 if the model lists lang among its supported languages. */
int hvt_model_has_language(const hv_model *model, const char *lang);

/* The environment variable that names the speech detector's directory. */
#define HVT_VAD_ENV "HVISKE_VAD_MODEL"
/* Loads the speech detector (docs/VAD.md) from `dir` when it is not NULL;
 * else from $HVISKE_VAD_MODEL when set; else from the first directory of
 * the build's search path (the installed copy, then the source tree's
 * models/silero-vad) that holds a config.json. On failure *out is NULL and
 * err says what was tried and how to choose (--vad-model, or a chunking
 * mode without speech detection). */
hv_status hvt_load_vad(const char *dir, hv_vad **out, char *err, size_t err_size);

#endif /* HV_PROGLIB_CHECKPOINT_H */
