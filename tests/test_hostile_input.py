"""Hostile input, round two (issue #18), through the `hviske` program.

Environment (set by CTest, see tests/CMakeLists.txt):
  HV_CLI         the hviske program
  HV_FIXTURES    generated fixtures (audio)
  HV_SOURCE_DIR  the source tree (the demo model)
  HV_BINARY_DIR  the build (CMakeCache.txt: is this a sanitizer build)

Covers:
  1  decompression amplification: a FLAC of a few hundred KB holding 900 s
     of 8-channel 48 kHz silence costs the 16 kHz mono samples plus a
     constant in peak RSS, not the 1.4 GB of its interleaved floats;
     8-channel 48 kHz input gives the transcript of its 16 kHz mono mix;
  4a a FLAC whose header understates its length is read to its real end;
  4b weights holding NaN, or a BatchNorm variance below zero, are an error
     naming the stage (encoder, decoder) or the tensor, not an empty
     transcript with exit 0;
  4c a max_audio_clip_s so small that every chunk would be dropped is
     refused at load;
  5a a FIFO named like a model file, or given as the audio file, is
     refused at once instead of blocking forever;
  5b a damaged MP3 decodes without libmpg123 writing to standard error.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hvtest import CLI, Run, check, finish, report, skip_or_fail  # noqa: E402

FIXTURES = os.environ.get("HV_FIXTURES", "")
SOURCE = os.environ.get("HV_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("HV_BINARY_DIR", "")
DEMO = os.path.join(SOURCE, "models", "demo")
EXAMPLE = os.path.join(SOURCE, "examples", "da-example.wav")
SENTENCE = "I morgen bliver det gråt med minus tyve grader."
# What reading audio may cost beyond the 16 kHz mono samples (hviske.h,
# README.md "Long audio"): the same constant as tests/test_audio_mono.c.
READ_CONSTANT = 8 << 20


def sanitized():
    try:
        with open(os.path.join(BINARY, "CMakeCache.txt"), encoding="utf-8") as f:
            return "HV_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


def sox(*args):
    return subprocess.run(["sox", *map(str, args)], capture_output=True).returncode == 0


def peak_rss_run(args):
    """(rc, stdout, stderr, peak RSS in bytes) of one hviske run, measured
    in a fresh child (ru_maxrss of the grandchild it waits for)."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "sys.stdout.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + '\\n')\n"
            "sys.stdout.write(p.stdout.decode('utf-8', 'replace'))\n"
            "sys.stderr.write(p.stderr.decode('utf-8', 'replace'))\n"
            "sys.exit(p.returncode)\n")
    p = subprocess.run([sys.executable, "-c", code, CLI, *map(str, args)],
                       capture_output=True, text=True, timeout=900)
    first, _, rest = p.stdout.partition("\n")
    return p.returncode, rest, p.stderr, int(first) * 1024


# ------------------------------------------------------------------ 1

def test_bomb(tmp):
    bomb = os.path.join(tmp, "bomb.flac")
    if not sox("-D", "-n", "-r", 48000, "-c", 8, "-b", 16, bomb, "trim", 0, 900):
        skip_or_fail("FLAC bomb", "sox cannot write FLAC")
        return
    size = os.path.getsize(bomb)
    mono = 900 * 16000 * 4
    rc0, out0, err0, base = peak_rss_run(["-q", "-t", 2, "-m", DEMO, EXAMPLE])
    rc, out, err, peak = peak_rss_run(["-q", "-t", 2, "-m", DEMO, bomb])
    print(f"      bomb: {size} bytes of FLAC, 900 s x 8 ch x 48 kHz "
          f"({900 * 8 * 48000 * 4 / 1e6:.0f} MB as interleaved floats); hviske's peak RSS "
          f"{peak / 1e6:.1f} MB against {base / 1e6:.1f} MB for the 5 s example; "
          f"16 kHz mono is {mono / 1e6:.1f} MB")
    report("FLAC bomb: transcribed (silence: no text), exit 0",
           rc == 0 and rc0 == 0 and out.strip() == "" and out0.strip() == SENTENCE,
           f"rc {rc} {out[:200]!r} {err[-400:]!r} / {rc0} {out0!r} {err0[-300:]!r}")
    if sanitized():
        print("skip  FLAC bomb memory bound: the sanitizer's quarantine holds freed memory")
        return
    report("FLAC bomb: peak RSS at most the 16 kHz mono samples + 8 MiB over a 5 s file",
           peak - base <= mono + READ_CONSTANT,
           f"grew by {(peak - base) / 1e6:.1f} MB, bound {(mono + READ_CONSTANT) / 1e6:.1f} MB")


def test_multichannel(tmp):
    """8 channels at 48 kHz, each the example: the transcript of the
    example (the mix is the example, resampled twice)."""
    up = os.path.join(tmp, "da_48k_8ch.flac")
    if not sox(EXAMPLE, "-r", 48000, "-c", 8, "-b", 16, up):
        skip_or_fail("8-channel 48 kHz FLAC", "sox cannot write FLAC")
        return
    r = Run(["-q", "-t", 2, "-m", DEMO, up])
    check("8-channel 48 kHz FLAC: the example's sentence", r,
          r.rc == 0 and r.out.strip() == SENTENCE)


# ------------------------------------------------------------------ 4a

def set_flac_total(src, dst, total):
    b = bytearray(open(src, "rb").read())
    assert b[:4] == b"fLaC" and b[7] == 34
    v = int.from_bytes(b[18:26], "big")
    v = (v & ~((1 << 36) - 1)) | total
    b[18:26] = v.to_bytes(8, "big")
    with open(dst, "wb") as f:
        f.write(b)


def test_flac_length(tmp):
    full = os.path.join(tmp, "example.flac")
    if not sox(EXAMPLE, full):
        skip_or_fail("FLAC length", "sox cannot write FLAC")
        return
    with wave.open(EXAMPLE) as w:
        frames = w.getnframes()
    lie = os.path.join(tmp, "example_says_1s.flac")
    set_flac_total(full, lie, 16000)
    r = Run(["-q", "-t", 2, "--format", "json", "-m", DEMO, lie])
    dur = json.loads(r.out)["duration"] if r.rc == 0 and r.out else None
    check("FLAC header understating its length: read to the real end", r,
          r.rc == 0 and SENTENCE in r.out and dur is not None
          and abs(dur - frames / 16000) < 1e-3,
          f"duration {dur}, want {frames / 16000}")


# ------------------------------------------------------------------ 4b, 4c

def edit_tensor(path, name, value):
    """Sets every element of tensor `name` in a safetensors file to value."""
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        t = h[name]
        a, b = t["data_offsets"]
        if t["dtype"] == "F32":
            one = struct.pack("<f", value)
        elif t["dtype"] == "BF16":
            one = struct.pack("<f", value)[2:]
        else:
            raise ValueError(t["dtype"])
        f.seek(8 + n + a)
        f.write(one * ((b - a) // len(one)))


def broken_model(tmp, name):
    d = os.path.join(tmp, name)
    shutil.copytree(DEMO, d)
    return d


def test_broken_weights(tmp):
    nan = float("nan")
    cases = [
        ("NaN in an encoder weight", "encoder.layers.0.feed_forward1.linear1.weight", nan,
         ["encoder:", "NaN"]),
        ("NaN in the classifier bias", "log_softmax.mlp.layer0.bias", nan,
         ["decoder:", "first-step log-prob", "NaN"]),
        ("infinite decoder embedding", "transf_decoder._embedding.token_embedding.weight",
         float("inf"), ["decoder:", "first-step log-prob"]),
        ("negative BatchNorm variance", "encoder.layers.1.conv.batch_norm.running_var", -1.0,
         ["model.safetensors", "encoder.layers.1.conv.batch_norm.running_var", "-1",
          "variance"]),
        ("NaN BatchNorm variance", "encoder.layers.0.conv.batch_norm.running_var", nan,
         ["encoder.layers.0.conv.batch_norm.running_var", "nan"]),
    ]
    for i, (what, tensor, value, mentions) in enumerate(cases):
        d = broken_model(tmp, f"broken{i}")
        edit_tensor(os.path.join(d, "model.safetensors"), tensor, value)
        r = Run(["-q", "-t", 2, "-m", d, EXAMPLE])
        missing = [m for m in mentions if m not in r.err]
        check(f"{what}: exit 1 naming it, no transcript", r,
              r.rc == 1 and r.out == "" and not missing, f"stderr lacks {missing}")
        shutil.rmtree(d)


def test_tiny_clip(tmp):
    for clip, overlap in ((5.01, 5), (0.015, 0)):
        d = broken_model(tmp, "tinyclip")
        cfg = os.path.join(d, "config.json")
        with open(cfg, encoding="utf-8") as f:
            c = json.load(f)
        c["max_audio_clip_s"], c["overlap_chunk_second"] = clip, overlap
        with open(cfg, "w", encoding="utf-8") as f:
            json.dump(c, f)
        r = Run(["-q", "-t", 2, "-m", d, EXAMPLE])
        check(f"max_audio_clip_s {clip} with overlap {overlap}: refused at load", r,
              r.rc == 1 and r.out == "" and "config.json" in r.err
              and "max_audio_clip_s" in r.err and "every chunk would be dropped" in r.err)
        shutil.rmtree(d)


# ------------------------------------------------------------------ 5a

def run_quick(args, timeout=60):
    """(rc, stdout, stderr); rc None when it did not end within timeout."""
    try:
        p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out"


def test_fifos(tmp):
    for name in ("config.json", "generation_config.json", "tokenizer.model",
                 "model.safetensors"):
        d = broken_model(tmp, "fifo")
        os.remove(os.path.join(d, name))
        os.mkfifo(os.path.join(d, name))
        rc, out, err = run_quick(["-q", "-t", 2, "-m", d, EXAMPLE])
        report(f"FIFO named {name}: refused at once, naming it",
               rc == 1 and out == "" and name in err and "not a regular file" in err,
               f"rc {rc} stderr {err[-300:]!r}")
        shutil.rmtree(d)
    fifo = os.path.join(tmp, "audio.wav")
    os.mkfifo(fifo)
    rc, out, err = run_quick(["-q", "-t", 2, "-m", DEMO, fifo, EXAMPLE])
    report("FIFO as the audio file: refused at once, the next file still transcribed",
           rc == 1 and out.strip() == f"{EXAMPLE}: {SENTENCE}" and
           "a FIFO, not a regular file" in err,
           f"rc {rc} stdout {out!r} stderr {err[-300:]!r}")
    os.remove(fifo)


# ------------------------------------------------------------------ 5b

def test_mp3_quiet(tmp):
    mp3 = os.path.join(tmp, "clean.mp3")
    if not sox(EXAMPLE, "-r", 44100, "-c", 2, mp3):
        skip_or_fail("damaged MP3", "sox cannot write MP3 (libsox-fmt-mp3)")
        return
    b = bytearray(open(mp3, "rb").read())
    # damage the side info of frames in the middle (a fixed pattern: the
    # one that made libmpg123 print "big_values too large!")
    for i in range(len(b) // 3, len(b) // 3 + 4000, 37):
        b[i] ^= 0x5A
    bad = os.path.join(tmp, "damaged.mp3")
    with open(bad, "wb") as f:
        f.write(b)
    r = Run(["-t", 2, "-m", DEMO, bad])
    check("damaged MP3: decoded, nothing from libmpg123 on standard error", r,
          r.rc == 0 and "big_values" not in r.err and "error:" not in r.err
          and "libmpg123" not in r.err, "")


def main():
    if not os.path.isdir(DEMO):
        report("demo model present", False, DEMO)
        return finish()
    tmp = tempfile.mkdtemp(prefix="hv-hostile-")
    try:
        test_fifos(tmp)
        test_tiny_clip(tmp)
        test_broken_weights(tmp)
        test_flac_length(tmp)
        test_multichannel(tmp)
        test_mp3_quiet(tmp)
        test_bomb(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
