/*
 * The smallest complete program on libhviske: transcribes one audio file.
 *
 *     transcribe MODEL_DIR AUDIO_FILE [VAD_DIR]
 *
 * With VAD_DIR (a speech detector, such as the installed
 * share/hviske/silero-vad) only the speech is transcribed; without it the
 * audio is cut by energy. Build it against an installed hviske with
 *
 *     cc -o transcribe examples/transcribe.c $(pkg-config --cflags --libs hviske)
 *
 * (README.md, "C library"; tests/deploy/test_install.py builds and runs it).
 */
#include <stdio.h>
#include <stdlib.h>

#include <hviske.h>

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL_DIR AUDIO_FILE [VAD_DIR]\n", argv[0]);
        return 2;
    }
    char err[1024];
    hv_model *model = NULL;
    hv_vad *vad = NULL;
    hv_context *ctx = NULL;
    hv_result *res = NULL;
    float *pcm = NULL;
    size_t n_frames;
    int sample_rate, channels, rc = 1;
    hv_transcribe_params tp = hv_transcribe_default_params();

    if (hv_model_load(argv[1], NULL, &model, err, sizeof err) ||
        hv_audio_read(argv[2], &pcm, &n_frames, &sample_rate, &channels, err, sizeof err) ||
        (argc == 4 && hv_vad_load(argv[3], &vad, err, sizeof err))) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    /* 0: the model's threads (all cores); one context per thread */
    if (hv_context_new(model, 0, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    tp.vad = vad; /* NULL: the default chunking cuts by energy */
    if (hv_transcribe(ctx, pcm, n_frames, sample_rate, channels, &tp, &res)) {
        fprintf(stderr, "%s\n", hv_context_error(ctx));
        goto done;
    }
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment seg = hv_result_segment(res, i);
        fprintf(stderr, "[%.2f s - %.2f s] %s\n", seg.start, seg.end, seg.text);
    }
    puts(hv_result_text(res));
    rc = 0;
done:
    hv_result_free(res);
    hv_context_free(ctx);
    hv_vad_free(vad);
    hv_free(pcm);
    hv_model_free(model);
    return rc;
}
