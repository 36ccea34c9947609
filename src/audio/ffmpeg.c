/* Audio through FFmpeg's libraries (see ffmpeg.h). The container is read
 * through hviske's own I/O callbacks, so the bytes are the caller's (a
 * file's descriptor or memory) and nothing else is opened: the demuxers
 * allowed are listed, and no protocol is, so that a playlist or an
 * external reference inside a file cannot make FFmpeg open a path or a
 * URL. The samples are converted to interleaved float by libswresample at
 * the stream's own rate; the reader resamples. */
#include "audio/ffmpeg.h"

#ifdef HV_HAVE_FFMPEG

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libswresample/swresample.h>

/* The demuxers tried (by their FFmpeg names): MP4/M4A/MOV/3GP,
 * Matroska/WebM, AMR, ASF (WMA, WMV), ADTS AAC, AVI, FLV, MPEG-TS. */
#define DEMUXERS "mov,matroska,amr,amrnb,amrwb,asf,aac,avi,flv,mpegts"

/* Bytes of the I/O buffer FFmpeg reads through. */
#define IO_BUFFER 32768

struct hv_ffmpeg {
    hv_ffmpeg_read_fn read;
    hv_ffmpeg_seek_fn seek;
    void *user;
    int64_t size;
    AVIOContext *io;
    AVFormatContext *fmt;
    AVCodecContext *cc;
    SwrContext *swr;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    int rate, channels, in_format;      /* of the first frame: the stream's */
    float *pend;                        /* the current frame's samples, interleaved */
    size_t pend_cap, pend_len, pend_at; /* in frames */
    int opened;                         /* avformat_open_input succeeded */
    int demuxed;                        /* the container is read to its end */
    int flushed;                        /* the decoder was told so */
    int ended, failed, fatal, io_error;
    char why[HV_FFMPEG_WHY];
};

/* FFmpeg writes its log to standard error by default, which a library must
 * not do: while a thread is inside a call from here its messages are
 * dropped; everyone else's go to FFmpeg's default callback. */
static _Thread_local int quiet;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_cb(void *avcl, int level, const char *fmt, va_list vl) {
    if (!quiet) av_log_default_callback(avcl, level, fmt, vl);
}

static void install_log(void) { av_log_set_callback(log_cb); }

static int io_read(void *u, uint8_t *buf, int n) {
    hv_ffmpeg *f = u;
    int64_t r = f->read(buf, n, f->user);
    if (r < 0) {
        f->io_error = 1;
        return AVERROR(EIO);
    }
    return r == 0 ? AVERROR_EOF : (int)r;
}

static int64_t io_seek(void *u, int64_t off, int whence) {
    hv_ffmpeg *f = u;
    if (whence & AVSEEK_SIZE) return f->size;
    whence &= ~AVSEEK_FORCE;
    int64_t r = f->seek(off, whence, f->user);
    return r < 0 ? AVERROR(EINVAL) : r;
}

static void set_why(hv_ffmpeg *f, const char *what, int err) {
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    if (err) av_strerror(err, msg, sizeof msg);
    snprintf(f->why, sizeof f->why, "%s%s%s", what, err ? ": " : "", msg);
}

/* (Re)makes the converter for frames of format `fmt` at the stream's rate
 * and channels; 0 on success. */
static int make_swr(hv_ffmpeg *f, AVFrame *fr) {
    swr_free(&f->swr);
    AVChannelLayout out;
    av_channel_layout_default(&out, f->channels);
    int r = swr_alloc_set_opts2(&f->swr, &out, AV_SAMPLE_FMT_FLT, f->rate, &fr->ch_layout,
                                (enum AVSampleFormat)fr->format, f->rate, 0, NULL);
    av_channel_layout_uninit(&out);
    if (r >= 0) r = swr_init(f->swr);
    if (r < 0) {
        set_why(f, "FFmpeg: cannot convert the samples", r);
        return -1;
    }
    f->in_format = fr->format;
    return 0;
}

/* Decodes the next frame into f->pend; 1 when there is one, 0 at the end
 * (or after a fatal error). */
static int next_frame(hv_ffmpeg *f) {
    while (!f->ended) {
        int r = avcodec_receive_frame(f->cc, f->frame);
        if (r == AVERROR_EOF) break;
        if (r == 0) {
            AVFrame *fr = f->frame;
            int ch = fr->ch_layout.nb_channels;
            if (f->rate == 0) { /* the first frame: the stream's format */
                if (fr->sample_rate < 1 || ch < 1) {
                    av_frame_unref(fr);
                    f->failed = 1;
                    set_why(f, "FFmpeg: a frame without a sample rate or channels", 0);
                    continue;
                }
                f->rate = fr->sample_rate;
                f->channels = ch;
            } else if (fr->sample_rate != f->rate || ch != f->channels) {
                av_frame_unref(fr);
                f->fatal = f->ended = 1;
                set_why(f, "FFmpeg: the audio stream changes its sample rate or channels", 0);
                break;
            }
            if ((!f->swr || fr->format != f->in_format) && make_swr(f, fr)) {
                av_frame_unref(fr);
                f->fatal = f->ended = 1;
                break;
            }
            size_t n = fr->nb_samples > 0 ? (size_t)fr->nb_samples : 0;
            if (n > f->pend_cap) {
                float *nb = realloc(f->pend, n * (size_t)f->channels * sizeof *nb);
                if (!nb) {
                    av_frame_unref(fr);
                    f->fatal = f->ended = 1;
                    set_why(f, "out of memory", 0);
                    break;
                }
                f->pend = nb;
                f->pend_cap = n;
            }
            uint8_t *outp = (uint8_t *)f->pend;
            int got =
                n ? swr_convert(f->swr, &outp, (int)n, (const uint8_t **)fr->extended_data, (int)n)
                  : 0;
            av_frame_unref(fr);
            if (got < 0) {
                f->fatal = f->ended = 1;
                set_why(f, "FFmpeg: cannot convert the samples", got);
                break;
            }
            if (got == 0) continue;
            f->pend_len = (size_t)got;
            f->pend_at = 0;
            return 1;
        }
        if (r != AVERROR(EAGAIN)) { /* a packet that failed to decode */
            f->failed = 1;
            set_why(f, "FFmpeg: decoding failed", r);
            if (f->flushed) break;
            continue;
        }
        if (f->demuxed) {
            if (f->flushed) break;
            f->flushed = 1;
            avcodec_send_packet(f->cc, NULL);
            continue;
        }
        r = av_read_frame(f->fmt, f->pkt);
        if (r < 0) {
            if (r != AVERROR_EOF) {
                f->failed = 1;
                set_why(f, f->io_error ? "read error" : "FFmpeg: the container is damaged", r);
            }
            f->demuxed = 1;
            continue;
        }
        if (f->pkt->stream_index == f->stream) {
            r = avcodec_send_packet(f->cc, f->pkt);
            if (r < 0 && r != AVERROR(EAGAIN)) {
                f->failed = 1;
                set_why(f, "FFmpeg: decoding failed", r);
            }
        }
        av_packet_unref(f->pkt);
    }
    f->ended = 1;
    return 0;
}

hv_ffmpeg *hv_ffmpeg_open(hv_ffmpeg_read_fn read, hv_ffmpeg_seek_fn seek, int64_t size, void *user,
                          long *rate, int *channels, char why[HV_FFMPEG_WHY], int *io) {
    pthread_once(&log_once, install_log);
    snprintf(why, HV_FFMPEG_WHY, "out of memory");
    *io = 0;
    hv_ffmpeg *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    quiet = 1;
    f->read = read;
    f->seek = seek;
    f->user = user;
    f->size = size;
    f->stream = -1;
    snprintf(f->why, sizeof f->why, "no error");
    unsigned char *buf = av_malloc(IO_BUFFER);
    f->io = buf ? avio_alloc_context(buf, IO_BUFFER, 0, f, io_read, NULL, io_seek) : NULL;
    f->fmt = f->io ? avformat_alloc_context() : NULL;
    f->pkt = av_packet_alloc();
    f->frame = av_frame_alloc();
    if (!f->io) av_free(buf);
    if (!f->fmt || !f->pkt || !f->frame) goto fail;
    f->fmt->pb = f->io;
    f->fmt->format_whitelist = av_strdup(DEMUXERS);
    f->fmt->protocol_whitelist = av_strdup("none"); /* no protocol: nothing else is opened */
    if (!f->fmt->format_whitelist || !f->fmt->protocol_whitelist) goto fail;
    int r = avformat_open_input(&f->fmt, NULL, NULL, NULL); /* frees fmt on failure */
    if (r < 0) {
        set_why(f, f->io_error ? "read error" : "FFmpeg cannot open it", r);
        goto fail;
    }
    f->opened = 1;
    /* the first audio stream; containers that declare their streams only
     * in their packets (MPEG-TS) are probed for them */
    for (int pass = 0; pass < 2 && f->stream < 0; pass++) {
        if (pass == 1) {
            if (!(f->fmt->ctx_flags & AVFMTCTX_NOHEADER)) break;
            if (avformat_find_stream_info(f->fmt, NULL) < 0) break;
        }
        for (unsigned i = 0; i < f->fmt->nb_streams; i++)
            if (f->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
                f->stream = (int)i;
                break;
            }
    }
    if (f->stream < 0) {
        set_why(f, "FFmpeg: the container holds no audio stream", 0);
        goto fail;
    }
    for (unsigned i = 0; i < f->fmt->nb_streams; i++)
        if ((int)i != f->stream) f->fmt->streams[i]->discard = AVDISCARD_ALL;
    const AVCodecParameters *par = f->fmt->streams[f->stream]->codecpar;
    const AVCodec *codec = avcodec_find_decoder(par->codec_id);
    if (!codec) {
        snprintf(f->why, sizeof f->why, "FFmpeg: no decoder for its %s audio",
                 avcodec_get_name(par->codec_id));
        goto fail;
    }
    f->cc = avcodec_alloc_context3(codec);
    if (!f->cc) goto fail;
    if ((r = avcodec_parameters_to_context(f->cc, par)) < 0 ||
        (f->cc->thread_count = 1, r = avcodec_open2(f->cc, codec, NULL)) < 0) {
        set_why(f, "FFmpeg: cannot open the audio decoder", r);
        goto fail;
    }
    /* the first frame says the stream's rate and channels */
    if (!next_frame(f) || f->fatal) {
        if (!f->failed && !f->fatal)
            snprintf(f->why, sizeof f->why, "FFmpeg: no %s audio frames in the file",
                     avcodec_get_name(par->codec_id));
        goto fail;
    }
    *rate = f->rate;
    *channels = f->channels;
    quiet = 0;
    return f;
fail:
    snprintf(why, HV_FFMPEG_WHY, "%s", f->why);
    *io = f->io_error;
    hv_ffmpeg_close(f); /* clears quiet */
    return NULL;
}

long hv_ffmpeg_read(hv_ffmpeg *f, float *buf, long frames) {
    quiet = 1;
    long got = 0;
    while (got < frames) {
        if (f->pend_at == f->pend_len && !next_frame(f)) break;
        size_t n = f->pend_len - f->pend_at;
        if (n > (size_t)(frames - got)) n = (size_t)(frames - got);
        memcpy(buf + (size_t)got * (size_t)f->channels, f->pend + f->pend_at * (size_t)f->channels,
               n * (size_t)f->channels * sizeof *buf);
        f->pend_at += n;
        got += (long)n;
    }
    quiet = 0;
    return got;
}

int hv_ffmpeg_failed(const hv_ffmpeg *f) { return f->failed; }
int hv_ffmpeg_fatal(const hv_ffmpeg *f) { return f->fatal; }
const char *hv_ffmpeg_error(const hv_ffmpeg *f) { return f->why; }

void hv_ffmpeg_close(hv_ffmpeg *f) {
    if (!f) return;
    quiet = 1;
    swr_free(&f->swr);
    avcodec_free_context(&f->cc);
    if (f->opened)
        avformat_close_input(&f->fmt); /* custom I/O: the I/O context stays ours */
    else
        avformat_free_context(f->fmt);
    if (f->io) av_freep(&f->io->buffer);
    avio_context_free(&f->io);
    av_packet_free(&f->pkt);
    av_frame_free(&f->frame);
    free(f->pend);
    free(f);
    quiet = 0;
}

#endif
