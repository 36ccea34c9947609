#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets that are committed under
tests/fuzz/corpus/<target>/ (small files; run from anywhere, rewrites them
the same way every time):

  json     JSON form fields and file names (fuzz_json.c)
  form     calls of srv_form_begin and srv_form_data (fuzz_form.c's
           encoding), and whole multipart bodies with their Content-Type
  request  HTTP requests to hviske-server: health, models, transcriptions
           with a 0.2 s WAV in every response format, a chunked upload,
           refusals, pipelined requests
  config   config.json NUL generation_config.json
  audio    a 0.1 s WAV at 16 kHz mono and 8 kHz stereo; 0.3 s of Ogg
           Vorbis (sox -R: the same bytes every time); 0.3 s in each
           container FFmpeg's libraries read (M4A/AAC, WebM/Opus,
           Matroska/Vorbis, WMA, ADTS AAC; ffmpeg -bitexact) and an AMR
           file of two frames written here

The tokenizer and safetensors targets are seeded from the fixture models
at `make fuzz` time (their files are hundreds of kB)."""
import json
import math
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")

NAMES = ["file", "model", "language", "prompt", "response_format",
         "temperature", "punctuation", "num_beams", "length_penalty", "top_k",
         "top_p", "seed", "max_tokens", "stream", "timestamp_granularities[]",
         "timestamp_granularities", "chunking_strategy", "include[]", "colour", "",
         "file\x01"]


def wav(seconds, rate=16000, channels=1):
    n = int(seconds * rate)
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * i / rate)))
        * channels for i in range(n))
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * 2 * channels,
                      2 * channels, 16)
    return (b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVE"
            + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", len(frames)) + frames)


def form_calls(calls):
    """fuzz_form's even mode: (name, data, begins a part)."""
    out = bytearray([0])
    for name, data, begin in calls:
        out += bytes([NAMES.index(name), 1 if begin else 0, len(data)]) + data
    return bytes(out)


def multipart(fields, audio, boundary="hvseed"):
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"'
             f'\r\n\r\n{v}\r\n'.encode() for k, v in fields]
    if audio is not None:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; '
                     f'name="file"; filename="a.wav"\r\nContent-Type: '
                     f'audio/wav\r\n\r\n'.encode() + audio + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode()


def post(fields, audio, key=True, extra=""):
    body = multipart(fields, audio)
    return (f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"{'Authorization: Bearer k' + chr(13) + chr(10) if key else ''}"
            f"Content-Type: multipart/form-data; boundary=hvseed\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    short = wav(0.2)
    write("form", "fields", form_calls([
        ("model", b"", True), ("model", b"hviske", False),
        ("language", b"da", True),
        ("response_format", b"verbose_json", True),
        ("timestamp_granularities[]", b"word", True),
        ("timestamp_granularities[]", b"segment", True),
        ("temperature", b"0.5", True), ("seed", b"42", True),
        ("file", short[:200], True), ("file", short[200:400], False)]))
    write("form", "beams", form_calls([
        ("num_beams", b"4", True), ("length_penalty", b"1.5", True),
        ("punctuation", b"false", True), ("max_tokens", b"20", True),
        ("stream", b"false", True), ("file", b"RIFF", True)]))
    write("form", "chunking", form_calls([
        ("chunking_strategy",
         b'{"type":"server_vad","threshold":0.4,"silence_duration_ms":300}',
         True), ("top_k", b"5", True), ("top_p", b"0.9", True),
        ("file", b"x", True)]))
    write("form", "empty_repeat", form_calls([
        ("temperature", b"", True), ("temperature", b"0", True),
        ("file", b"x", True)]))
    write("form", "body", b"\x01multipart/form-data; boundary=hvseed\x00\x05"
          + multipart([("model", "m"), ("language", "")], b"RIFF...."))
    write("form", "body_quoted", b"\x01multipart/form-data; charset=utf-8; "
          b"Boundary=\"a b\"\x00\x01" + multipart([("x", "--a b")], None, boundary="a b"))
    write("form", "body_framing", b"\x01multipart/form-data; boundary=q\x00\x02"
          b"preamble\r\n--q \t\r\ncontent-disposition: form-data; name=prompt\r\n\r\n"
          b"--q\r\nContent-Disposition: form-data; name=\"file\"\r\n"
          b"Content-Transfer-Encoding: binary\r\n\r\nRIFF\r\n--q-\r\n--q--\r\nepilogue")

    write("request", "health", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    write("request", "models",
          b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\n\r\n")
    write("request", "pipelined",
          b"HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
          b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\n\r\n")
    for fmt in ("json", "text", "srt", "vtt"):
        write("request", f"post_{fmt}",
              post([("model", "hviske"), ("response_format", fmt)], short))
    write("request", "post_verbose", post(
        [("response_format", "verbose_json"), ("timestamp_granularities[]", "word"),
         ("timestamp_granularities[]", "segment"), ("language", "da")], short))
    write("request", "post_nokey", post([], short, key=False))
    write("request", "post_expect", post([("num_beams", "2")], short,
                                         extra="Expect: 100-continue\r\n"))
    body = multipart([("temperature", "0.3"), ("seed", "1")], short)
    chunked = b"".join(b"%x\r\n" % len(body[i:i + 500]) + body[i:i + 500] + b"\r\n"
                       for i in range(0, len(body), 500)) + b"0\r\n\r\n"
    write("request", "post_chunked", (
        b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer k\r\n"
        b"Content-Type: multipart/form-data; boundary=hvseed\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n") + chunked)
    write("request", "post_wrong_type",
          b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          b"Authorization: Bearer k\r\nContent-Type: text/plain\r\n"
          b"Content-Length: 3\r\n\r\nabc")

    cfg = {"model_type": "cohere_asr", "vocab_size": 16, "max_audio_clip_s": 35,
           "overlap_chunk_second": 5, "sample_rate": 16000,
           "supported_languages": ["en", "da"],
           "preprocessor": {"sample_rate": 16000, "features": 8, "n_fft": 64,
                            "window_size": 0.025, "window_stride": 0.01},
           "encoder": {"feat_in": 8, "d_model": 8, "n_layers": 1, "n_heads": 2,
                       "subsampling_factor": 8, "subsampling_conv_channels": 4},
           "transf_decoder": {"config_dict": {"hidden_size": 8, "inner_size": 16,
                                              "num_layers": 1,
                                              "num_attention_heads": 2,
                                              "max_sequence_length": 32}},
           "head": {"hidden_size": 8, "num_classes": 16}}
    gen = {"pad_token_id": 0, "eos_token_id": 3, "bos_token_id": 4,
           "decoder_start_token_id": 4}
    write("config", "small", json.dumps(cfg).encode() + b"\0" + json.dumps(gen).encode())
    # fuzz_json: even first byte, a JSON field; odd, a file name
    for i, v in enumerate((b'{"type":"server_vad","threshold":0.5}',
                           b'{"type":"server_vad","type":"foo"}', b'{"type":"server_vad"} xyz',
                           b'{"a":{"b":1,"b":2}}', b'[1,{"x":1,"x":1}]  \n')):
        write("json", f"field{i}", b"\0" + v)
    for i, v in enumerate((b"recordings/a\xff.wav", b"caf\xc3\xa9.wav", b"\xed\xa0\x80 surrogate",
                           b"\xf4\x90\x80\x80 above", b"\xe2\x82 cut", b"back\\xff.wav")):
        write("json", f"name{i}", b"\1" + v)
    write("audio", "mono16k.wav", wav(0.1))
    write("audio", "stereo8k.wav", wav(0.1, 8000, 2))
    ogg = subprocess.run(["sox", "-R", "-t", "wav", "-", "-t", "ogg", "-"], input=wav(0.3),
                         stdout=subprocess.PIPE, check=True).stdout
    write("audio", "mono16k.ogg", ogg)
    for name, fmt, codec in (("aac.m4a", "ipod", "aac"), ("opus.webm", "webm", "libopus"),
                             ("vorbis.mka", "matroska", "libvorbis"), ("wmav2.wma", "asf", "wmav2"),
                             ("adts.aac", "adts", "aac")):
        with tempfile.TemporaryDirectory() as tmp:  # MP4 is written seeking
            out = os.path.join(tmp, name)
            subprocess.run(
                ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "wav", "-i", "-", "-c:a", codec,
                 "-bitexact", "-fflags", "+bitexact", "-flags", "+bitexact", "-f", fmt, out],
                input=wav(0.3), check=True)
            with open(out, "rb") as f:
                write("audio", name, f.read())
    # AMR-NB: two 12.2 kbit/s frames (header 0x3C, 31 bytes of payload)
    write("audio", "mr122.amr", b"#!AMR\n" + (b"\x3c" + bytes(range(31))) * 2)


if __name__ == "__main__":
    main()
