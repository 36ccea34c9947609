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
Round three (issue #43):
  1  every writer writes through, never over: a character device stays
     one, a FIFO's reader and a socket's listener get the output, a
     symlink survives with the output in its target, /dev/full and a
     reader gone are exit 1 naming the error;
  4  a WAV at 1 Hz (or 999) is refused at once naming the file and the
     rate, not upsampled to gigabytes; 1000 Hz is read;
  7  file names that are not UTF-8 stay apart in JSON (--json, jsonl,
     --stream, --summary): \\xHH for stray bytes, KEY_bytes in base64.
Round five (issue #62):
  2  standard input within the budget: a pipe of zeros (a Python child
     writing until the pipe breaks, at most 512 MiB) is refused as no
     audio file after its first 64 KiB (the writer stopped before 1 MiB),
     "RIFF" then zeros after 16 MiB, and a 1000 Hz 8-bit WAV header
     followed by zeros with "more than the 33554.4 s of audio allowed" (the
     file's message) once its bytes pass what that audio could take (about
     100 MB): the writer sees the pipe break before 512 MiB, hviske's peak
     RSS stays within 64 MiB of a 5 s file's (the whole stream was read
     into memory first: 512 MiB and more), and the temporary copy is gone;
     the example, a FLAC over 64 KiB and a WAV whose 200 KB JUNK chunk
     comes before its format piped in give the file's text.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import resource
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, WAIT, Run, check, finish, report, skip_or_fail,  # noqa: E402
                    wait_until)

FIXTURES = os.environ.get("HV_FIXTURES", "")
SOURCE = os.environ.get("HV_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BINARY = os.environ.get("HV_BINARY_DIR", "")
DEMO = os.path.join(SOURCE, "models", "demo")
EXAMPLE = os.path.join(SOURCE, "examples", "da-example.wav")
SENTENCE = "I morgen bliver det gråt med minus tyve grader."
# What reading audio may cost beyond the 16 kHz mono samples (hviske.h,
# README.md "Long audio"): the same constant as tests/unit/test_audio_mono.c.
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


# ------------------------------------------------------------- round five

STREAM_CAP = 512 << 20  # bytes the writer sends at most


def wav_stream_header(rate, bits):
    """A mono PCM WAV header whose data chunk claims the most a WAV may
    hold (a streaming writer's header: the length is not known)."""
    size = 0xFFFFFFFF - 36
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * bits // 8, bits // 8, bits) +
            b"data" + struct.pack("<I", size))


def piped_run(args, head, tmpdir):
    """hviske with head and then zeros on standard input, written until
    the pipe breaks or STREAM_CAP bytes are sent; (exit status, stderr,
    bytes sent, pipe broke, peak RSS in bytes of that child alone)."""
    env = dict(os.environ, TMPDIR=tmpdir)
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen([CLI, *map(str, args)], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=err, env=env, bufsize=0)
        sent, broke, block = 0, False, b"\0" * (1 << 16)
        try:
            p.stdin.write(head)
            sent = len(head)
            while sent < STREAM_CAP:
                sent += p.stdin.write(block)
        except BrokenPipeError:
            broke = True
        try:
            p.stdin.close()
        except BrokenPipeError:
            broke = True
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return (p.returncode, err.read().decode("utf-8", "replace"), sent, broke,
                usage.ru_maxrss * 1024)


def test_stdin_bounded(tmp):
    spool = os.path.join(tmp, "spool")
    os.makedirs(spool)
    base = peak_rss_run(["-q", "-t", 1, "-m", DEMO, EXAMPLE])[3]
    for what, head, want, most in (
            ("zeros", b"", "-: not a readable audio file", 1 << 20),
            ("RIFF, then zeros", b"RIFF", "-: not a readable audio file", 32 << 20),
            ("a 1000 Hz WAV header, then zeros", wav_stream_header(1000, 8),
             "-: more than the 33554.4 s of audio allowed", STREAM_CAP)):
        rc, err, sent, broke, peak = piped_run(["-q", "-t", 1, "-m", DEMO, "-"], head, spool)
        print(f"      stdin {what}: {sent / 1e6:.1f} MB sent, peak RSS {peak / 1e6:.1f} MB "
              f"against {base / 1e6:.1f} MB for the 5 s example")
        report(f"stdin {what}: exit 1 with '{want}', the pipe broken before {most >> 20} MiB",
               rc == 1 and want in err and broke and sent < most,
               f"rc {rc} sent {sent} broke {broke} {err[-400:]!r}")
        if not sanitized():
            report(f"stdin {what}: peak RSS within 64 MiB of the 5 s example's",
                   peak - base <= 64 << 20, f"{peak / 1e6:.1f} MB against {base / 1e6:.1f} MB")
        report(f"stdin {what}: no temporary copy left", os.listdir(spool) == [],
               str(os.listdir(spool)))
    flac = os.path.join(tmp, "long.flac")
    if not sox(EXAMPLE, flac, "repeat", 8):
        skip_or_fail("stdin FLAC", "sox cannot write FLAC")
        return
    junk = os.path.join(tmp, "junk-first.wav")
    with open(EXAMPLE, "rb") as f:
        wav = f.read()
    fmt = wav.index(b"fmt ")
    with open(junk, "wb") as f:  # RIFF, WAVE, a JUNK chunk of 200000 bytes, then the rest
        body = wav[12:fmt] + b"JUNK" + struct.pack("<I", 200000) + bytes(200000) + wav[fmt:]
        f.write(b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body)
    for path in (EXAMPLE, flac, junk):
        with open(path, "rb") as f:
            data = f.read()
        piped = Run(["-q", "-t", 1, "-m", DEMO, "-"], input_bytes=data,
                    env=dict(os.environ, TMPDIR=spool))
        direct = Run(["-q", "-t", 1, "-m", DEMO, path])
        check(f"stdin: {os.path.basename(path)} ({len(data)} bytes) piped gives the file's text",
              piped, piped.rc == 0 and piped.out == direct.out and SENTENCE in piped.out)
    report("stdin: no temporary copy left after reading", os.listdir(spool) == [],
           str(os.listdir(spool)))


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


# --------------------------------------------- issue #43: outputs, round 3
#
# Every writer (hviske -o, --output-dir, --summary; hviske-quantize;
# espeak-words) writes through what its path names, never over it: a
# character device stays one, a FIFO's reader gets the output, a socket's
# listener too, a symlink survives with the output in its target (a
# dangling one's target created), a full device (/dev/full) and a reader
# that went away are errors with exit status 1.

QUANTIZE = os.path.join(BINARY, "hviske-quantize")
ESPEAK_WORDS = os.environ.get("HV_ESPEAK_WORDS") or os.path.join(BINARY, "espeak-words")


class FifoReader:
    """Reads a FIFO until EOF in a thread. The read end is open before the
    program under test starts (with a write end of our own, held until
    close(), so that no EOF comes early): the program finds its reader
    whenever it opens the FIFO, and EOF means it closed its end."""

    def __init__(self, path):
        self.rd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.wr = os.open(path, os.O_WRONLY)
        os.set_blocking(self.rd, True)
        self.data = b""
        self.t = threading.Thread(target=self._read)
        self.t.start()

    def _read(self):
        while True:
            b = os.read(self.rd, 65536)
            if not b:
                break
            self.data += b

    def close(self):
        os.close(self.wr)
        self.t.join(WAIT)
        os.close(self.rd)
        return self.data


class SocketReader:
    """A Unix socket listening at path; reads one connection until EOF."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.bind(path)
        self.s.listen(1)
        self.s.settimeout(WAIT)
        self.data = b""
        self.t = threading.Thread(target=self._read)
        self.t.start()

    def _read(self):
        try:
            c, _ = self.s.accept()
        except OSError:
            return
        with c:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                self.data += b

    def close(self):
        self.t.join(WAIT)
        self.s.close()
        return self.data


def run_prog(args, stdin=b""):
    p = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, timeout=900)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def writers(tmp):
    """(name, the path it writes in a fresh folder, run(), what the output
    holds) of every writer; run() gives (rc, stderr)."""
    with open(os.path.join(DEMO, "config.json"), "rb") as f:
        config = f.read()
    w = [("-o", "out.txt", lambda d, p: run_prog([CLI, "-q", "-m", DEMO, "-o", p, EXAMPLE]),
          SENTENCE.encode()),
         ("--output-dir", "out/da-example.txt",
          lambda d, p: run_prog([CLI, "-q", "-m", DEMO, "--output-dir", os.path.dirname(p),
                                 EXAMPLE]), SENTENCE.encode()),
         ("--summary", "summary.jsonl",
          lambda d, p: run_prog([CLI, "-q", "-m", DEMO, "--summary", p, EXAMPLE]),
          b'"status":"ok"'),
         ("hviske-quantize", "q/config.json",
          lambda d, p: run_prog([QUANTIZE, DEMO, os.path.dirname(p), "--type", "q8_0",
                                 "--force"]), config)]
    job = "0\thej med dig\n".encode()
    if os.access(ESPEAK_WORDS, os.X_OK):
        w += [("espeak-words --wav", "e.wav",
               lambda d, p: run_prog([ESPEAK_WORDS, "--wav", p, "--truth",
                                      os.path.join(d, "e.json")], job), b"RIFF"),
              ("espeak-words --truth", "e.json",
               lambda d, p: run_prog([ESPEAK_WORDS, "--wav", os.path.join(d, "e.wav"),
                                      "--truth", p], job), b'"generator": "espeak-words"')]
    else:
        skip_or_fail("espeak-words as a writer", f"{ESPEAK_WORDS} is not built (libespeak-ng)")
    return w


def leftovers(*dirs):
    return [f for d in dirs for f in os.listdir(d) if "hviske-" in f or ".tmp" in f]


def test_write_through(tmp):
    for name, rel, run, want in writers(tmp):
        n = 0

        def fresh():
            nonlocal n
            n += 1
            d = os.path.join(tmp, f"wt-{name.strip('-').replace(' ', '-')}-{n}")
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p))
            return d, p

        # a character device (as /dev/null), made where a test may
        if os.geteuid() == 0:
            d, p = fresh()
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            rc, err = run(d, p)
            report(f"{name} to a character device (1,3): written in place, still a device, "
                   "exit 0", rc == 0 and stat.S_ISCHR(os.lstat(p).st_mode)
                   and not leftovers(os.path.dirname(p)), f"rc={rc} {err[-300:]!r}")
        else:
            print(f"skip  {name} to a character device: mknod needs root")
        # a FIFO with a reader
        d, p = fresh()
        os.mkfifo(p)
        r = FifoReader(p)
        rc, err = run(d, p)
        got = r.close()
        report(f"{name} to a FIFO: the reader gets the output, still a FIFO, exit 0",
               rc == 0 and want in got and stat.S_ISFIFO(os.lstat(p).st_mode),
               f"rc={rc} got={got[:100]!r} {err[-300:]!r}")
        # a Unix socket with a listener
        d, p = fresh()
        try:
            r = SocketReader(p)
        except OSError as e:  # a path too long for sun_path
            report(f"{name} to a socket: listener", False, repr(e))
        else:
            rc, err = run(d, p)
            got = r.close()
            report(f"{name} to a Unix socket: the listener gets the output, exit 0",
                   rc == 0 and want in got and stat.S_ISSOCK(os.lstat(p).st_mode),
                   f"rc={rc} got={got[:100]!r} {err[-300:]!r}")
        # a symlink to a regular file elsewhere, and a dangling one
        for dangling in (False, True):
            d, p = fresh()
            other = os.path.join(d, "elsewhere")
            os.mkdir(other)
            real = os.path.join(other, "real")
            if not dangling:
                with open(real, "wb") as f:
                    f.write(b"old")
            os.symlink(os.path.relpath(real, os.path.dirname(p)), p)
            rc, err = run(d, p)
            with open(real, "rb") if os.path.isfile(real) else open(os.devnull, "rb") as f:
                got = f.read()
            kind = "a dangling symlink" if dangling else "a symlink"
            report(f"{name} to {kind}: the link survives, its target holds the output, "
                   "no temporary file left, exit 0",
                   rc == 0 and os.path.islink(p) and want in got
                   and not leftovers(other, os.path.dirname(p)),
                   f"rc={rc} link={os.path.islink(p)} got={got[:80]!r} {err[-300:]!r}")
        # a full device, through a symlink
        d, p = fresh()
        os.symlink("/dev/full", p)
        rc, err = run(d, p)
        report(f"{name} to /dev/full: exit 1, 'No space left on device', the link kept",
               rc == 1 and "No space left on device" in err and os.path.islink(p),
               f"rc={rc} {err[-300:]!r}")


def fd_open_on(pid, path):
    """True when process pid holds path open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return True
        except OSError:
            pass
    return False


def test_reader_gone(tmp):
    """A FIFO whose reader goes away before the output comes: EPIPE,
    reported, exit 1 (not death by SIGPIPE, not exit 0). hviske reads the
    audio from standard input, so the reader leaves, deterministically,
    after the program opened the FIFO and before it writes."""
    with open(EXAMPLE, "rb") as f:
        audio = f.read()
    for name, opt in (("-o", "-o"), ("--summary", "--summary")):
        p = os.path.join(tmp, f"gone-{opt.strip('-')}")
        os.mkfifo(p)
        rd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        args = [CLI, "-q", "-m", DEMO, opt, p, "-"]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        opened = wait_until(lambda: fd_open_on(proc.pid, p) or proc.poll() is not None)
        os.close(rd)
        _, err = proc.communicate(audio, timeout=900)
        err = err.decode("utf-8", "replace")
        report(f"{name} to a FIFO whose reader went away: 'Broken pipe', exit 1",
               opened and proc.returncode == 1 and "Broken pipe" in err,
               f"rc={proc.returncode} {err[-300:]!r}")
    # the quantizer writes megabytes: a reader that takes one byte and
    # leaves makes its writes fail, whatever the timing
    d = os.path.join(tmp, "gone-q")
    os.mkdir(d)
    p = os.path.join(d, "model.safetensors")
    os.mkfifo(p)
    rd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    wr = os.open(p, os.O_WRONLY)
    os.set_blocking(rd, True)

    def take_one():
        os.read(rd, 1)
        os.close(rd)
    t = threading.Thread(target=take_one)
    t.start()
    proc = subprocess.Popen([QUANTIZE, DEMO, d, "--type", "q8_0", "--force"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # our own write end goes once the quantizer has the FIFO open: its
    # first byte then comes from the quantizer
    wait_until(lambda: fd_open_on(proc.pid, p) or proc.poll() is not None)
    os.close(wr)
    _, err = proc.communicate(timeout=900)
    t.join(WAIT)
    err = err.decode("utf-8", "replace")
    report("hviske-quantize to a FIFO whose reader went away: 'Broken pipe', exit 1",
           proc.returncode == 1 and "Broken pipe" in err, f"rc={proc.returncode} {err[-300:]!r}")
    # standard output as a path: /dev/fd/1, and a link to /dev/stdout (never
    # /dev/stdout or /dev/full themselves: a writer that renames over its
    # path, run as root, would replace the system's own)
    out = os.path.join(tmp, "stdout.txt")
    link = os.path.join(tmp, "to-stdout")
    os.symlink("/dev/stdout", link)
    for target in ("/dev/fd/1", link):
        with open(out, "wb") as f:
            f.write(b"kept\n")
        with open(out, "ab") as f:
            p = subprocess.run([CLI, "-q", "-m", DEMO, "-o", target, EXAMPLE], stdout=f,
                               stderr=subprocess.PIPE, timeout=900)
        with open(out, "rb") as f:
            got = f.read()
        name = "/dev/fd/1" if target == "/dev/fd/1" else "a link to /dev/stdout"
        report(f"-o {name}, standard output appended to (>>): written in place, what it "
               "held kept", p.returncode == 0 and os.path.islink(link)
               and got == b"kept\n" + SENTENCE.encode() + b"\n",
               f"rc={p.returncode} got={got!r} {p.stderr[-300:]!r}")


# ---------------------------------------------- issue #43: sample rates

def wav_at(path, rate, seconds):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\1" * int(rate * seconds))
    return path


def test_rate_floor(tmp):
    """A 40 KB WAV at 1 Hz asked for 1.57 GB (upsampled 16000 times):
    rates below 1000 Hz are refused at once, naming the file and the
    rate; 1000 Hz is read."""
    for rate, secs in ((1, 20000), (999, 20)):
        p = wav_at(os.path.join(tmp, f"rate{rate}.wav"), rate, secs)
        rc, out, err, rss = peak_rss_run(["-q", "-t", 2, "-m", DEMO, p])
        report(f"a {os.path.getsize(p) // 1024} KB WAV at {rate} Hz: refused naming the file "
               f"and the rate, exit 1, peak RSS {rss >> 20} MiB",
               rc == 1 and p in err and f"{rate} Hz" in err and "1000" in err
               and (sanitized() or rss < 200 << 20), f"rc={rc} {err[-300:]!r}")
    p = wav_at(os.path.join(tmp, "rate1000.wav"), 1000, 2)
    r = Run(["-q", "-t", 2, "-m", DEMO, p])
    check("a WAV at 1000 Hz (the floor) is read", r, r.rc == 0)


# ------------------------------------------- issue #43: file names in JSON

def test_names(tmp):
    """Names that are not UTF-8 were written with U+FFFD, so two names
    could print the same: now every byte outside valid UTF-8 is \\xHH (as
    Python's backslashreplace) and KEY_bytes carries the raw name in
    base64, in --json, jsonl (also --stream) and --summary's input and
    output."""
    import base64
    d = os.path.join(tmp, "names").encode()
    os.makedirs(d)
    with open(EXAMPLE, "rb") as f:
        audio = f.read()
    names = [os.path.join(d, n) for n in (b"a\xff.wav", b"a\xfe.wav", "ø.wav".encode())]
    for n in names:
        with open(n, "wb") as f:
            f.write(audio)

    def run_b(args):
        p = subprocess.run([os.fsencode(CLI)] + [a if isinstance(a, bytes) else str(a).encode()
                                                 for a in args], capture_output=True,
                           timeout=900)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")

    def check_name(o, key, raw):
        valid = True
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            valid = False
        shown = raw.decode("utf-8", "backslashreplace")
        if valid:
            return o.get(key) == shown and key + "_bytes" not in o
        return (o.get(key) == shown
                and base64.b64decode(o.get(key + "_bytes", "")) == raw)

    for label, args in (("--format jsonl", ["--format", "jsonl"]),
                        ("--stream --format jsonl", ["--stream", "--format", "jsonl"]),
                        ("--json", ["--json"])):
        rc, out, err = run_b(["-q", "-m", DEMO] + args + names)
        objs = []
        try:
            if label == "--json":
                dec = json.JSONDecoder()
                text, i = out.decode("utf-8"), 0
                while i < len(text):
                    while i < len(text) and text[i].isspace():
                        i += 1
                    if i < len(text):
                        o, i = dec.raw_decode(text, i)
                        objs.append(o)
            else:
                objs = [json.loads(x) for x in out.decode("utf-8").splitlines()]
            if label.startswith("--stream"):
                objs = [o for o in objs if "segment" not in o]
        except ValueError as e:
            objs = [repr(e)]
        ok = rc == 0 and len(objs) == len(names) and all(
            isinstance(o, dict) and check_name(o, "file", n) for o, n in zip(objs, names))
        shown = [(o.get("file"), o.get("file_bytes")) if isinstance(o, dict) else o
                 for o in objs]
        report(f"{label}: names that are not UTF-8 kept apart (\\xHH, file_bytes), a UTF-8 "
               f"name as it is: {shown}", ok and len({s for s in shown}) == len(names),
               f"rc={rc} {err[-300:]!r}")
    outdir = os.path.join(d, b"out")
    summ = os.path.join(d, b"summary.jsonl")
    rc, out, err = run_b(["-q", "-m", DEMO, "--output-dir", outdir, "--summary", summ] + names)
    with open(summ, "rb") as f:
        lines = [json.loads(x) for x in f.read().decode("utf-8").splitlines()]
    outs = [os.path.join(outdir, os.path.basename(n)[:-4] + b".txt") for n in names]
    report("--summary: input and output kept apart (input_bytes, output_bytes), the output "
           "files under their real names",
           rc == 0 and len(lines) == 3 and all(
               check_name(o, "input", n) and check_name(o, "output", w)
               for o, n, w in zip(lines, names, outs)) and all(os.path.isfile(w) for w in outs),
           f"rc={rc} {lines} {err[-300:]!r}")


def main():
    if not os.path.isdir(DEMO):
        report("demo model present", False, DEMO)
        return finish()
    tmp = tempfile.mkdtemp(prefix="hv-hostile-")
    try:
        test_stdin_bounded(tmp)
        test_fifos(tmp)
        test_write_through(tmp)
        test_reader_gone(tmp)
        test_rate_floor(tmp)
        test_names(tmp)
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
