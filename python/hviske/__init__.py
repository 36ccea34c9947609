"""hviske: speech-to-text for Hviske / Cohere Transcribe models, in Python.

A thin layer (ctypes, standard library only) over the C library libhviske,
which must be installed (`make install` in the hviske source tree) or named
with $HVISKE_LIBRARY::

    import hviske
    model = hviske.Model("hviske-v5.3")
    result = model.transcribe("recording.wav", language="da")
    print(result.text)
    for seg in result.segments:
        print(seg.start, seg.end, seg.text)

The library's calls run without the GIL, so several Python threads can
transcribe at once with one model.
"""
import array
import ctypes
import os
import threading
from dataclasses import dataclass, field
from typing import Dict, List

from ._native import (ABORT, PROGRESS, SEGMENT, Cancelled, DetectorNotFound, Error, FileError,
                      FormatError, InvalidArgument, LibraryNotFound, LimitError, OutOfMemory,
                      Unsupported, detector_candidates, error, load_library)
from ._native import Segment as _CSegment

__version__ = "0.1.0"
__all__ = ["Model", "Result", "Segment", "Word", "load_library", "Error", "LibraryNotFound",
           "FileError", "FormatError", "InvalidArgument", "OutOfMemory", "Unsupported",
           "LimitError", "Cancelled", "DetectorNotFound"]

VAD_ENV = "HVISKE_VAD_MODEL"
_ERRBUF = 2048


@dataclass
class Word:
    """A word with its time (word_timestamps=True): its text (without the
    space before it; punctuation attached), start and end in seconds on
    the input's timeline, the mean probability of its tokens, and its
    tokens."""
    word: str
    start: float
    end: float
    probability: float
    tokens: List[int] = field(repr=False, default_factory=list)


@dataclass
class Segment:
    """A chunk of the audio with text: start and end in seconds on the
    input's timeline, its text, its tokens (EOS excluded), their log-probs,
    its score, and its words (empty unless word_timestamps=True)."""
    start: float
    end: float
    text: str
    tokens: List[int]
    token_logprobs: List[float] = field(repr=False)
    score: float = 0.0
    words: List[Word] = field(default_factory=list)


@dataclass
class Result:
    """A transcription. `text` joins the segments' texts; `tokens` and
    `token_logprobs` cover every chunk; `words` every word (empty unless
    word_timestamps=True); `timings` has the library's hv_timings fields
    (milliseconds, counts, `encoded_s`); `duration` is the audio's length
    in seconds; `language` the code used. `stopped` is True when
    on_segment stopped the transcription early: the result then holds the
    segments done until then."""
    text: str
    segments: List[Segment]
    tokens: List[int]
    token_logprobs: List[float] = field(repr=False)
    score: float
    timings: Dict[str, float] = field(repr=False)
    language: str
    duration: float
    words: List[Word] = field(default_factory=list)
    stopped: bool = False


def _int(name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"from {lo} to {hi}"
        raise InvalidArgument(f"{name} must be {rng}, not {value}")
    return value


def _float(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def _parse(lib_fn, name, value, choices):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    out = ctypes.c_int()
    if lib_fn(value.encode("utf-8"), ctypes.byref(out)) != 0:
        raise InvalidArgument(f"{name} must be one of {choices}, not {value!r}")
    return out.value


class Model:
    """A checkpoint directory loaded once (read-only; share it between
    threads). `threads`: worker threads per transcription (None: all
    cores); `weight_type`: "auto" (the checkpoint's own), "f32", "f16",
    "bf16", "q8_0" or "q4_0"; `compute`: "auto" (bf16 where the CPU has
    native bf16 and the weights are 16 bits or fewer, else f32), "f32" or
    "bf16" (docs/KERNELS.md). `library`: the libhviske file to use (default:
    $HVISKE_LIBRARY, else the installed one); `vad_model`: the speech
    detector's directory (default: $HVISKE_VAD_MODEL, else the one
    installed with the library, else the source tree's when the library is
    in a build folder). Use as a context manager or call close() to free
    the memory at once."""

    def __init__(self, path, threads=None, weight_type="auto", library=None, vad_model=None,
                 compute="auto"):
        self._model = None
        self._lib = lib = load_library(library)
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"path must be a path, not {type(path).__name__}")
        params = lib.hv_model_default_params()
        params.n_threads = 0 if threads is None else _int("threads", threads, 1, 256)
        params.weight_type = _parse(lib.hv_weight_type_parse, "weight_type", weight_type,
                                    "auto, f32, f16, bf16, q8_0, q4_0")
        params.compute = _parse(lib.hv_compute_parse, "compute", compute, "auto, f32, bf16")
        if vad_model is not None and not isinstance(vad_model, (str, bytes, os.PathLike)):
            raise TypeError(f"vad_model must be a path, not {type(vad_model).__name__}")
        self._vad_model = vad_model
        self.vad_model = None  # the detector's directory, once loaded
        self._vad = None
        self._vad_lock = threading.Lock()
        self._ctx = None
        self._ctx_lock = threading.Lock()
        model = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        st = lib.hv_model_load(os.fsencode(path), ctypes.byref(params), ctypes.byref(model),
                               err, _ERRBUF)
        if st != 0:
            raise error(st, err.value.decode("utf-8", "replace"))
        self._model = model
        self.path = os.fsdecode(path)
        self.threads = params.n_threads

    # ------------------------------------------------------------ facts

    def _check(self):
        if self._model is None:
            raise Error("the model is closed")
        return self._model

    @property
    def sample_rate(self):
        return self._lib.hv_model_sample_rate(self._check())

    @property
    def languages(self):
        m = self._check()
        return [self._lib.hv_model_language(m, i).decode("utf-8")
                for i in range(self._lib.hv_model_n_languages(m))]

    @property
    def weight_bytes(self):
        return self._lib.hv_model_weight_bytes(self._check())

    @property
    def library_path(self):
        return self._lib.path

    # ----------------------------------------------------------- freeing

    def close(self):
        """Frees the model, its detector and its context; the Model can no
        longer transcribe. Not while a transcription runs."""
        lib = self._lib
        if getattr(self, "_ctx", None):
            lib.hv_context_free(self._ctx)
            self._ctx = None
        if getattr(self, "_vad", None):
            lib.hv_vad_free(self._vad)
            self._vad = None
        if getattr(self, "_model", None):
            lib.hv_model_free(self._model)
            self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------- speech detector

    def _detector(self):
        """The speech detector, loaded at first use."""
        with self._vad_lock:
            if self._vad is not None:
                return self._vad
            lib = self._lib
            if self._vad_model is not None:
                path = os.fsdecode(self._vad_model)
            elif os.environ.get(VAD_ENV):
                path = os.environ[VAD_ENV]
            else:
                tried = detector_candidates(lib)
                path = next((d for d in tried if os.path.isfile(os.path.join(d, "config.json"))),
                            None)
                if path is None:
                    raise DetectorNotFound(
                        f"no speech detector found (looked in {':'.join(tried)}); name its "
                        f"directory with vad_model= or ${VAD_ENV}, or choose "
                        "chunking=\"energy\"")
            vad = ctypes.c_void_p()
            err = ctypes.create_string_buffer(_ERRBUF)
            st = lib.hv_vad_load(os.fsencode(path), ctypes.byref(vad), err, _ERRBUF)
            if st != 0:
                raise error(st, err.value.decode("utf-8", "replace"))
            self._vad = vad
            self.vad_model = path
            return vad

    # ------------------------------------------------------ transcribe

    def _audio(self, audio, sample_rate):
        """(pointer, n_frames, rate, channels, keep-alive, to-free)."""
        lib = self._lib
        if isinstance(audio, (str, os.PathLike)):
            if sample_rate is not None:
                raise InvalidArgument("sample_rate is only for samples, not for a file")
            pcm, n, rate, ch = (ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t(),
                                ctypes.c_int(), ctypes.c_int())
            err = ctypes.create_string_buffer(_ERRBUF)
            st = lib.hv_audio_read(os.fsencode(audio), ctypes.byref(pcm), ctypes.byref(n),
                                   ctypes.byref(rate), ctypes.byref(ch), err, _ERRBUF)
            if st != 0:
                raise error(st, err.value.decode("utf-8", "replace"))
            return pcm, n.value, rate.value, ch.value, None, pcm
        if isinstance(audio, (bytes, bytearray, memoryview)):
            if sample_rate is not None:
                raise InvalidArgument("sample_rate is only for samples, not for a file's bytes "
                                      "(bytes are an audio file; pass samples as floats)")
            data = bytes(audio)
            pcm, n, rate, ch = (ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t(),
                                ctypes.c_int(), ctypes.c_int())
            err = ctypes.create_string_buffer(_ERRBUF)
            st = lib.hv_audio_read_buffer(data, len(data), b"<bytes>", 0.0, ctypes.byref(pcm),
                                          ctypes.byref(n), ctypes.byref(rate), ctypes.byref(ch),
                                          err, _ERRBUF)
            if st != 0:
                raise error(st, err.value.decode("utf-8", "replace"))
            return pcm, n.value, rate.value, ch.value, None, pcm
        # samples
        is_numpy = type(audio).__module__ == "numpy" and hasattr(audio, "ndim")
        if not is_numpy and not isinstance(audio, (array.array, list, tuple)):
            raise TypeError("audio must be a path, the bytes of an audio file, or float samples "
                            "(list, array.array or numpy array) with sample_rate, not "
                            f"{type(audio).__name__}")
        if sample_rate is None:
            raise InvalidArgument("samples need sample_rate (their rate in Hz)")
        rate = _int("sample_rate", sample_rate, 1)
        channels = 1
        if is_numpy:
            import numpy as np
            if audio.ndim not in (1, 2):
                raise InvalidArgument("a numpy array of samples must have 1 dimension "
                                      "(mono) or 2 (frames x channels), not "
                                      f"{audio.ndim}")
            if audio.ndim == 2:
                channels = audio.shape[1]
            if not np.issubdtype(audio.dtype, np.floating):
                raise TypeError(f"samples must be floating point, not {audio.dtype}")
            keep = np.ascontiguousarray(audio, dtype=np.float32)
            ptr = keep.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            n = keep.shape[0]
            if channels < 1:
                raise InvalidArgument("a numpy array of samples needs at least one channel")
            return ptr, n, rate, channels, keep, None
        if isinstance(audio, array.array):
            if audio.typecode not in "fd":
                raise TypeError(f"an array.array of samples must hold floats ('f' or 'd'), not "
                                f"{audio.typecode!r}")
            keep = audio if audio.typecode == "f" else array.array("f", audio)
        else:
            try:
                keep = array.array("f", audio)
            except TypeError:
                raise TypeError("a list of samples must hold numbers") from None
        n = len(keep)
        if n == 0:
            ptr = ctypes.POINTER(ctypes.c_float)()
        else:
            ptr = (ctypes.c_float * n).from_buffer(keep)
            ptr = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float))
        return ptr, n, rate, 1, keep, None

    def transcribe(self, audio, language=None, punctuation=True, beams=1, length_penalty=1.0,
                   sample=False, temperature=1.0, top_k=0, top_p=1.0, seed=0, chunking="auto",
                   word_timestamps=False, progress=None, sample_rate=None, max_tokens=None,
                   chunk_seconds=None, on_segment=None):
        """Transcribes `audio`: a path, the bytes of an audio file (any format
        libsndfile reads), or float samples (a list, array.array or numpy
        array; numpy 2-D as frames x channels) at `sample_rate` Hz.

        language: a code of `languages` (None: "da" when supported, else
        the first); punctuation: False asks for text without it. Decoding:
        greedy by default; beams > 1 for beam search (with length_penalty);
        sample=True to sample (temperature, top_k, top_p, seed; one beam
        only). chunking: "auto" (= "vad": only speech, found by the speech
        detector), "energy", "fixed" (every chunk_seconds), "none".
        max_tokens: at most this many tokens per chunk (None: the model's).
        word_timestamps: True gives every word its start and end
        (result.words and each segment's words).
        progress: called as progress(done_s, total_s) after each chunk, on
        this thread; returning False stops the transcription before its
        next chunk or decoder step (transcribe then raises Cancelled), and
        an exception it raises stops it too and comes out of transcribe.
        on_segment: called as on_segment(segment) with each Segment as soon
        as it is final, in order, on this thread (the segments of the
        result, one by one, while the audio after them is still being
        transcribed; the `tokens` of its words are filled in the result
        only); returning False stops the transcription after it, and
        transcribe then returns the Result of the segments done, with
        stopped=True (progress returning False, or an exception from either
        function, then stops it the same way but as described above).

        Returns a Result; raises an Error subclass with the library's
        message (InvalidArgument, also a ValueError, for a bad value;
        TypeError for a wrong type)."""
        lib = self._lib
        model = self._check()
        tp = lib.hv_transcribe_default_params()
        if language is not None:
            if not isinstance(language, str):
                raise TypeError(f"language must be a str, not {type(language).__name__}")
            lang = language.encode("utf-8")
            tp.language = lang
        if not isinstance(punctuation, bool):
            raise TypeError("punctuation must be True or False")
        tp.punctuation = int(punctuation)
        tp.num_beams = _int("beams", beams, 1)
        tp.length_penalty = _float("length_penalty", length_penalty)
        if not isinstance(sample, bool):
            raise TypeError("sample must be True or False")
        tp.do_sample = int(sample)
        tp.temperature = _float("temperature", temperature)
        tp.top_k = _int("top_k", top_k, 0, 2**31 - 1)
        tp.top_p = _float("top_p", top_p)
        tp.seed = _int("seed", seed, 0, 2**64 - 1)
        if max_tokens is not None:
            tp.max_new_tokens = _int("max_tokens", max_tokens, 1, 2**31 - 1)
        mode = _parse(lib.hv_chunking_parse, "chunking", chunking,
                      "auto, vad, energy, fixed, none")
        tp.chunking = mode
        if not isinstance(word_timestamps, bool):
            raise TypeError("word_timestamps must be True or False")
        tp.word_timestamps = int(word_timestamps)
        if chunk_seconds is not None:
            tp.chunk_seconds = _float("chunk_seconds", chunk_seconds)
        elif chunking == "fixed":
            raise InvalidArgument("chunking=\"fixed\" needs chunk_seconds")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable as progress(done_s, total_s)")
        if on_segment is not None and not callable(on_segment):
            raise TypeError("on_segment must be callable as on_segment(segment)")
        if mode in (0, 4):  # HV_CHUNKING_AUTO, HV_CHUNKING_VAD
            tp.vad = self._detector().value
        raised, stop = [], []
        if progress is not None:
            def on_progress(_user, done, total):
                if raised or stop:
                    return
                try:
                    if progress(done, total) is False:
                        stop.append(True)
                except BaseException as e:  # raised after the call
                    raised.append(e)
            tp.progress = PROGRESS(on_progress)
            tp.abort_callback = ABORT(lambda _user: int(bool(raised or stop)))
        if on_segment is not None:
            def on_seg(_user, ptr):
                if raised or stop:
                    return 1
                try:
                    s = ctypes.cast(ptr, ctypes.POINTER(_CSegment)).contents
                    return int(on_segment(self._segment(s, None)) is False)
                except BaseException as e:  # raised after the call
                    raised.append(e)
                    return 1
            tp.segment_callback = SEGMENT(on_seg)
            if progress is None:
                tp.abort_callback = ABORT(lambda _user: int(bool(raised)))

        ptr, n, rate, channels, keep, to_free = self._audio(audio, sample_rate)
        try:
            res = ctypes.c_void_p()
            own = self._ctx_lock.acquire(blocking=False)
            ctx = None
            try:
                if own:
                    if self._ctx is None:
                        self._ctx = lib.hv_context_new(model, 0)
                    ctx = self._ctx
                else:  # another thread uses the model's context: one of its own
                    ctx = lib.hv_context_new(model, 0)
                if not ctx:
                    raise OutOfMemory("out of memory creating a context", 4)
                st = lib.hv_transcribe(ctx, ptr, n, rate, channels, ctypes.byref(tp),
                                       ctypes.byref(res))
                if st != 0 and raised:
                    raise raised[0]
                if st == 0 and on_segment is not None and stop and not raised:
                    # progress asked to stop: Cancelled, as without on_segment
                    lib.hv_result_free(res)
                    raise Cancelled("transcription cancelled", 7)
                if st != 0:
                    raise error(st, lib.hv_context_error(ctx).decode("utf-8", "replace"))
            finally:
                if own:
                    self._ctx_lock.release()
                elif ctx:
                    lib.hv_context_free(ctx)
        finally:
            if to_free is not None:
                lib.hv_audio_free(to_free)
            del keep
        try:
            result = self._result(res)
        finally:
            lib.hv_result_free(res)
        if raised:
            raise raised[0]
        return result

    @staticmethod
    def _words(words, n, toks):
        """toks: the result's tokens; None: the words' tokens are left
        empty (a segment as it comes: the result's tokens are not known)."""
        return [Word(word=(w.text or b"").decode("utf-8", "replace"), start=w.start, end=w.end,
                     probability=w.probability,
                     tokens=[toks[j] for j in range(w.first_token, w.first_token + w.n_tokens)]
                     if toks is not None else [])
                for w in (words[i] for i in range(n))]

    def _segment(self, s, toks):
        """A Segment of the library's hv_segment s (toks as for _words)."""
        return Segment(start=s.start, end=s.end, text=(s.text or b"").decode("utf-8", "replace"),
                       tokens=[s.tokens[j] for j in range(s.n_tokens)],
                       token_logprobs=[s.token_logprobs[j] for j in range(s.n_tokens)],
                       score=s.score, words=self._words(s.words, s.n_words, toks))

    def _result(self, res):
        lib = self._lib
        n = lib.hv_result_n_tokens(res)
        toks = lib.hv_result_tokens(res)
        lps = lib.hv_result_token_logprobs(res)
        segments = [self._segment(lib.hv_result_segment(res, i), toks)
                    for i in range(lib.hv_result_n_segments(res))]
        t = lib.hv_result_timings(res)
        return Result(text=lib.hv_result_text(res).decode("utf-8", "replace"),
                      segments=segments,
                      tokens=[toks[j] for j in range(n)],
                      token_logprobs=[lps[j] for j in range(n)] if n else [],
                      score=lib.hv_result_score(res),
                      timings={name: getattr(t, name) for name, _ in t._fields_},
                      language=lib.hv_result_language(res).decode("utf-8"),
                      duration=lib.hv_result_duration(res),
                      words=self._words(lib.hv_result_words(res), lib.hv_result_n_words(res),
                                        toks),
                      stopped=bool(lib.hv_result_stopped(res)))

