"""hviske: speech-to-text for Hviske / Cohere Transcribe models, in Python.

A thin layer (ctypes, standard library only) over the C library libhviske,
which must be installed (`make install` in the hviske source tree) or named
with $HVISKE_LIBRARY::

    import hviske
    model = hviske.Model("hviske-v5.3")
    result = model.transcribe("recording.wav", language="da")
    print(result.text)
    for seg in result.segments:           # sentence-sized, as the CLI's JSON
        print(seg.start, seg.end, seg.text)

    segments, info = model.transcribe("recording.wav")   # faster-whisper's shape
    print(info.language, info.duration, info.duration_after_vad)
    for seg in segments:
        print(seg.start, seg.end, seg.text)

The library's calls run without the GIL, so several Python threads can
transcribe at once with one model.
"""
from __future__ import annotations

import array
import ctypes
import math
import os
import threading
from dataclasses import dataclass, field
from typing import (Any, Callable, Iterator, Mapping, Optional, Protocol, Sequence, Tuple,
                    Union)

from ._native import (ABORT, PROGRESS, SEGMENT, Cancelled, DetectorNotFound, Error, FileError,
                      FormatError, InvalidArgument, LibraryNotFound, LimitError, OutOfMemory,
                      Unsupported, detector_candidates, error, load_library)
from . import _native
from ._native import Cue as _CCue
from ._native import Segment as _CSegment

__version__ = "0.1.0"
__all__ = ["Model", "Result", "Segment", "Chunk", "Word", "Decoding", "TranscriptionInfo",
           "Audio", "WhisperModel", "BatchedInferencePipeline",
           "load_library", "decode_audio", "Error", "LibraryNotFound",
           "FileError", "FormatError", "InvalidArgument", "OutOfMemory", "Unsupported",
           "LimitError", "Cancelled", "DetectorNotFound"]

VAD_ENV = "HVISKE_VAD_MODEL"
_ERRBUF = 2048


class SupportsRead(Protocol):
    """A file object opened for reading bytes (open(path, "rb"), io.BytesIO,
    a socket's makefile("rb"), ...): transcribe reads it to its end."""

    def read(self) -> bytes: ...


# What transcribe takes: a path, an audio file's bytes or a file object
# reading them, or float samples (a list, tuple, array.array, or a numpy
# array, which is Any to type checkers without numpy's stubs).
Audio = Union[str, "os.PathLike[str]", "os.PathLike[bytes]", bytes, bytearray, memoryview,
              SupportsRead, Sequence[float], "array.array[float]", Any]


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
    tokens: list[int] = field(repr=False, default_factory=list)


@dataclass
class Decoding:
    """How a chunk was decoded (docs/DECODING.md "Temperature fallback"),
    as faster-whisper reports each window: the temperature of the decoding
    kept (0: greedy or beam search), its avg_logprob (the summed log-probs,
    EOS's included, over the tokens + 1: faster-whisper's, not the mean of
    the tokens' that Segment.avg_logprob is), the compression ratio of its
    text (bytes over zlib-compressed bytes), and no_speech_prob, 1 - the
    speech detector's mean probability over the chunk (None when the
    detector did not run: chunking other than "auto" and "vad" without
    speech_probabilities=True)."""
    temperature: float = 0.0
    avg_logprob: float = 0.0
    compression_ratio: float = 0.0
    no_speech_prob: Optional[float] = None


@dataclass
class _Span:
    """What a Segment and a Chunk have: start and end in seconds on the
    input's timeline, text, tokens (EOS excluded), their log-probs, a
    score, words (empty unless word_timestamps=True), and speaker (with
    diarize=True the turn's speaker, a label of the whole recording,
    0, 1, ... in order of appearance; -1 where none: docs/DIARIZE.md)."""
    start: float
    end: float
    text: str
    tokens: list[int]
    token_logprobs: list[float] = field(repr=False)
    score: float = 0.0
    words: list[Word] = field(default_factory=list)
    decoding: Decoding = field(default_factory=Decoding, repr=False)
    speaker: int = -1

    @property
    def avg_logprob(self) -> float:
        """The mean log-prob of its tokens (0 without tokens), as the
        server's verbose_json avg_logprob."""
        return sum(self.token_logprobs) / len(self.token_logprobs) \
            if self.token_logprobs else 0.0


@dataclass
class Segment(_Span):
    """A segment: a sentence-sized piece of the transcript, the same as the
    `segments` of the hviske program's JSON, the server's verbose_json
    segments and the subtitle cues (docs/TIMESTAMPS.md "Segments"): the
    timed words of one chunk grouped into pieces read at once (at most
    7 s and 2 lines of 42 characters). start and end in whole
    milliseconds (its first word's start, its last word's end), its text
    (its lines joined by a space), its words' tokens and their log-probs,
    score (the sum of those log-probs), its words, id (its number in the
    result, from 0, as verbose_json numbers them) and chunk (the index of
    its chunk in Result.chunks). A chunk without timed words (only pieces
    that print nothing) is one segment of the whole chunk. lines: its
    text's lines as the subtitles show them; decoding: its chunk's."""
    id: int = 0
    chunk: int = 0
    lines: list[str] = field(default_factory=list, repr=False)


@dataclass
class Chunk(_Span):
    """A chunk: a piece of the audio the model transcribes at once (up to
    35 s; the library's hv_segment, the `chunks` of the hviske program's
    JSON): its start and end, its whole text and all its tokens (also
    those of no word), their log-probs, its score (the decoder's sequence
    score: docs/DECODING.md), its words, and decoding (how it was
    decoded: Decoding)."""


@dataclass
class TranscriptionInfo:
    """What faster-whisper calls the info of a transcription: the language
    code used (given, or the default: hviske has no language detection),
    the audio's length in seconds, and the seconds of it transcribed (with
    speech detection only the speech; else all of it)."""
    language: str
    duration: float
    duration_after_vad: float


@dataclass
class Result:
    """A transcription. `text` joins the chunks' texts; `segments` are its
    sentence-sized segments (Segment), `chunks` the pieces of audio the
    model took at once (Chunk), each split into segments; `tokens` and
    `token_logprobs` cover every chunk; `words` every word (empty unless
    word_timestamps=True); `timings` has the library's hv_timings fields
    (milliseconds, counts, `encoded_s`); `duration` is the audio's length
    in seconds; `language` the code used. `stopped` is True when
    on_segment stopped the transcription early: the result then holds the
    chunks done until then, with all their segments.

    It also unpacks as faster-whisper's pair, `segments, info =
    model.transcribe(...)`: an iterator over `segments`, and `info`."""
    text: str
    segments: list[Segment]
    tokens: list[int]
    token_logprobs: list[float] = field(repr=False)
    score: float
    timings: dict[str, float] = field(repr=False)
    language: str
    duration: float
    words: list[Word] = field(default_factory=list)
    stopped: bool = False
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def info(self) -> TranscriptionInfo:
        """language, duration and duration_after_vad (timings' encoded_s)."""
        return TranscriptionInfo(language=self.language, duration=self.duration,
                                 duration_after_vad=self.timings.get("encoded_s", 0.0))

    def __iter__(self) -> Iterator[Any]:
        """Two items, for `segments, info = result`: an iterator over the
        segments (Segment: start, end, text, words, ...), and info."""
        return iter((iter(self.segments), self.info))


# The bounds of the integers passed to the library: its own (hviske.h)
# within the C type of the field that carries them.
MAX_THREADS = 256                # hv_model_params.n_threads
MAX_TEMPERATURES = 6             # HV_MAX_TEMPERATURES
HOTWORDS_SCORE = 1.5             # HV_DEFAULT_HOTWORDS_SCORE
MIN_SAMPLE_RATE = 1000           # HV_MIN_SAMPLE_RATE
MAX_SAMPLE_RATE = 768000         # HV_MAX_SAMPLE_RATE
MAX_CHANNELS = 64                # what the library averages at most


def _int(name: str, value: object, lo: int, hi: int) -> int:
    """value, an int from lo to hi (both included); else ValueError
    (InvalidArgument) naming the argument and the bounds. Every integer
    the binding hands to C goes through here, so none is cut to the C
    type."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < lo or value > hi:
        raise InvalidArgument(f"{name} must be from {lo} to {hi}, not {value}")
    return value


def _float(name: str, value: object) -> float:
    """value as a float; TypeError unless it is a number (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    return float(value)


def _c_string(name: str, value: str) -> bytes:
    """value in UTF-8 for C, where a NUL would end the string early: a
    string holding one raises ValueError (InvalidArgument), as open()
    does."""
    if "\0" in value:
        raise InvalidArgument(f"{name}: embedded null byte")
    return value.encode("utf-8")


def _c_path(name: str, value: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
            ) -> bytes:
    """A path for C (os.fsencode), checked as _c_string checks strings."""
    raw = os.fsencode(value)
    if b"\0" in raw:
        raise InvalidArgument(f"{name}: embedded null byte")
    return raw


def _parse(lib_fn: Callable[..., int], name: str, value: object, choices: str) -> int:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    out = ctypes.c_int()
    if lib_fn(_c_string(name, value), ctypes.byref(out)) != 0:
        raise InvalidArgument(f"{name} must be one of {choices}, not {value!r}")
    return out.value


def _set(lib: Any, tp: Any, name: str, value: object) -> None:
    """The parameter `name` of tp (the library's row of that name or
    alias) from value: an int for an integer row, a number for a float one
    (None: "none", where the row turns a check off), True or False for a
    switch, a str for a choice. The range and the refusal
    (InvalidArgument, "invalid NAME 'VALUE' (expected WHAT)") are the
    library's (hv_params_set), as hviske's options and the server's
    fields have them."""
    row = lib.hv_param_find(name.encode())
    kind = row.contents.type
    if kind == _native.PARAM_BOOL:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False")
        text = "true" if value else "false"
    elif kind in (_native.PARAM_INT, _native.PARAM_U64, _native.PARAM_SIZE):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        text = str(value)
    elif kind in (_native.PARAM_FLOAT, _native.PARAM_DOUBLE):
        text = "none" if value is None and row.contents.none else repr(_float(name, value))
    else:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        text = value
    err = ctypes.create_string_buffer(_ERRBUF)
    if lib.hv_params_set(ctypes.byref(tp), name.encode(), _c_string(name, text), err,
                         _ERRBUF) != 0:
        raise InvalidArgument(err.value.decode("utf-8", "replace"))


class StandardInput:
    """Audio that a program reads from its standard input (python -m
    hviske's "-"): the library reads the descriptor itself
    (hv_audio_read_fd_mono), within the budget of a call, instead of
    Python reading the whole stream into memory first."""

    def __init__(self, fd: int = 0, name: str = "-") -> None:
        self.fd, self.name = fd, name


def _read_file_object(f: SupportsRead) -> Tuple[bytes, bytes]:
    """The bytes a file object reads to its end, and its name for messages
    (its `name` when that is a str, else "<file object>")."""
    data = f.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("a file object must read bytes (open it with \"rb\"), not "
                        f"{type(data).__name__}")
    name = getattr(f, "name", None)
    label = name.replace("\0", "\\0") if isinstance(name, str) else "<file object>"
    return bytes(data), label.encode("utf-8", "replace")


def _beams_alias(beams: Optional[int], beam_size: Optional[int]) -> int:
    """beams=, or faster-whisper's beam_size= (not both)."""
    if beam_size is None:
        return 1 if beams is None else beams
    if beams is not None and beams != beam_size:
        raise InvalidArgument(f"beams={beams} and beam_size={beam_size} are the same option "
                              "(beam_size is faster-whisper's name): give one")
    return beam_size


# hv_vad_params' fields and vad_max_gap_s, as vad_options names them: the
# library's rows "vad_" + name
_VAD_OPTIONS = ("threshold", "neg_threshold", "min_speech_ms", "min_silence_ms",
                "speech_pad_ms", "max_speech_s", "edges", "max_gap_s")


@dataclass
class _Options:
    """What transcribe hands the library beyond its long-standing
    arguments: the temperature fallback and the speech detector's
    settings, checked."""
    temperatures: Optional[list[float]]  # None: one temperature
    best_of: object
    thresholds: Tuple[object, object, object]  # compression ratio, log-prob, no-speech
    vad_options: dict[str, Any]
    speech_probabilities: bool
    hotwords: Optional[str]  # phrases joined by commas; None: none
    hotwords_score: object
    repetition_penalty: object
    no_repeat_ngram_size: object
    diarize: bool = False
    diarize_voice: object = None  # None: the library's default


def _hotwords(hotwords: object) -> Optional[str]:
    """hotwords= as the library takes it: one string of phrases separated
    by commas (or newlines), or a list of phrases (none may hold a comma)."""
    if hotwords is None:
        return None
    if isinstance(hotwords, str):
        return hotwords
    if isinstance(hotwords, (list, tuple)) and all(isinstance(h, str) for h in hotwords):
        for h in hotwords:
            if "," in h or "\n" in h:
                raise InvalidArgument(f"hotwords: {h!r} holds a comma or a newline (phrases "
                                      "are separated by them)")
        return ",".join(hotwords)
    raise TypeError("hotwords must be a str of phrases separated by commas, or a list of str")


def _options(temperature: object, best_of: object, compression_ratio_threshold: object,
             log_prob_threshold: object, no_speech_threshold: object,
             vad_options: Optional[Mapping[str, Any]], speech_probabilities: object,
             hotwords: object = None, hotwords_score: object = HOTWORDS_SCORE,
             repetition_penalty: object = 1.0, no_repeat_ngram_size: object = 0,
             diarize: object = False, diarize_voice: object = None) -> Tuple[float, "_Options"]:
    """(the one temperature, the rest) of transcribe's arguments."""
    temps: Optional[list[float]] = None
    if isinstance(temperature, (list, tuple)):
        temps = [_float("temperature", t) for t in temperature]
        if not temps:
            raise InvalidArgument("temperature: an empty list (give one or more temperatures)")
        if len(temps) > MAX_TEMPERATURES:
            raise InvalidArgument(f"temperature: a list of {len(temps)} temperatures (at most "
                                  f"{MAX_TEMPERATURES}, whisper's steps 0, 0.2, ..., 1)")
        one = 1.0
    else:
        one = _float("temperature", temperature)
    vad: dict[str, Any] = {}
    if vad_options is not None:
        if not isinstance(vad_options, Mapping):
            raise TypeError("vad_options must be a dict of the speech detector's settings")
        for k, v in vad_options.items():
            if k not in _VAD_OPTIONS:
                raise TypeError(f"vad_options: no setting {k!r} (the settings: "
                                f"{', '.join(_VAD_OPTIONS)})")
            vad[k] = v
    if not isinstance(speech_probabilities, bool):
        raise TypeError("speech_probabilities must be True or False")
    if not isinstance(diarize, bool):
        raise TypeError("diarize must be True or False")
    return one, _Options(
        temperatures=temps, best_of=best_of,
        thresholds=(compression_ratio_threshold, log_prob_threshold, no_speech_threshold),
        vad_options=vad, speech_probabilities=speech_probabilities,
        hotwords=_hotwords(hotwords), hotwords_score=hotwords_score,
        repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size,
        diarize=diarize, diarize_voice=diarize_voice)


def _chunking_alias(chunking: Optional[str], vad_filter: Optional[bool]) -> str:
    """chunking=, or faster-whisper's vad_filter= (True: "vad"; False:
    "energy", or chunking's "fixed" or "none")."""
    if vad_filter is None:
        return "auto" if chunking is None else chunking
    if not isinstance(vad_filter, bool):
        raise TypeError("vad_filter must be True or False")
    with_vad = chunking in (None, "auto", "vad")
    if chunking is not None and vad_filter != with_vad:
        raise InvalidArgument(f"vad_filter={vad_filter} contradicts chunking={chunking!r} "
                              "(vad_filter=True is chunking=\"vad\", False one of \"energy\", "
                              "\"fixed\", \"none\")")
    if vad_filter:
        return "vad"
    return "energy" if chunking is None else chunking


def _read_mono(lib: Any, audio: Union[str, "os.PathLike[str]", "os.PathLike[bytes]", bytes,
                                     bytearray, memoryview, "StandardInput"],
               name: bytes, rate: int, max_audio_bytes: int) -> Tuple[Any, int]:
    """(samples, count) of an audio file (a path, or a file's bytes named
    `name` in messages) read as the hviske program reads its inputs:
    decoded in blocks straight to mono at `rate` (hv_audio_read_mono), so
    that memory is the mono samples whatever the file's channels and
    rate, within the library's budget of a call (max_audio_bytes,
    judged from the header before decoding). The caller frees the
    samples with hv_free."""
    max_s = lib.hv_audio_max_seconds(max_audio_bytes, rate)
    pcm, n = ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t()
    err = ctypes.create_string_buffer(_ERRBUF)
    if isinstance(audio, StandardInput):
        st = lib.hv_audio_read_fd_mono(audio.fd, _c_string("name", audio.name), rate, max_s,
                                       ctypes.byref(pcm), ctypes.byref(n), err, _ERRBUF)
    elif isinstance(audio, (str, os.PathLike)):
        st = lib.hv_audio_read_mono(_c_path("audio path", audio), rate, max_s,
                                    ctypes.byref(pcm), ctypes.byref(n), err, _ERRBUF)
    else:
        data = bytes(audio)
        st = lib.hv_audio_read_buffer_mono(data, len(data), name, rate, max_s,
                                           ctypes.byref(pcm), ctypes.byref(n), err, _ERRBUF)
    if st != 0:
        raise error(st, err.value.decode("utf-8", "replace"))
    return pcm, int(n.value)


def decode_audio(input_file: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview,
                                   SupportsRead],
                 sampling_rate: int = 16000, split_stereo: bool = False,
                 library: Union[str, "os.PathLike[str]", None] = None) -> Any:
    """faster-whisper's decode_audio: an audio file (a path, its bytes, or a
    file object reading them) as mono float32 samples at sampling_rate Hz,
    read as Model.transcribe reads a file (every format the library reads,
    the channels averaged, libsoxr's resampling), within the library's
    default budget of a call (max_audio_bytes). A numpy array when numpy
    is installed, else an array.array("f"). split_stereo=True (the two
    channels apart) is not offered: InvalidArgument. `library` as for
    load_library. Errors as Model.transcribe's (FileError, FormatError,
    LimitError, ...)."""
    if split_stereo:
        raise InvalidArgument("split_stereo is not offered: decode_audio gives the channels "
                              "averaged (mono)")
    lib = load_library(library)
    rate = _int("sampling_rate", sampling_rate, MIN_SAMPLE_RATE, MAX_SAMPLE_RATE)
    audio: Any = input_file
    name = b"<bytes>"
    if not isinstance(audio, (str, bytes, bytearray, memoryview, os.PathLike)) and \
            callable(getattr(audio, "read", None)):
        audio, name = _read_file_object(audio)
    if not isinstance(audio, (str, bytes, bytearray, memoryview, os.PathLike)):
        raise TypeError("input_file must be a path, the bytes of an audio file or a file object "
                        f"reading them, not {type(audio).__name__}")
    pcm, count = _read_mono(lib, audio, name, rate,
                            lib.hv_transcribe_default_params().max_audio_bytes)
    try:
        raw = ctypes.string_at(pcm, count * 4) if count else b""
    finally:
        lib.hv_free(pcm)
    try:
        import numpy as np
    except ImportError:
        return array.array("f", raw)
    return np.frombuffer(raw, dtype=np.float32).copy()


class Model:
    """A checkpoint directory loaded once (read-only; share it between
    threads). `threads`: worker threads per transcription (None: all
    cores); `weight_type`: "auto" (the checkpoint's own), "f32", "f16",
    "bf16", "q8_0" or "q4_0"; `compute`: "auto" (bf16 on a CPU with AMX
    or AMD's AVX512-BF16, Zen 4 and 5, and weights of 16 bits or fewer,
    else f32), "f32" (token for token the f32 reference) or "bf16"
    (docs/KERNELS.md). `library`: the libhviske file to use (default:
    $HVISKE_LIBRARY, else the installed one); `vad_model`: the speech
    detector's directory (default: $HVISKE_VAD_MODEL, else the one
    installed with the library, else the source tree's when the library is
    in a build folder). Use as a context manager or call close() to free
    the memory at once.

    The Model holds its library memory (model, speech detector, context)
    while it is used: close() (and the end of a `with` block, and garbage
    collection) waits for the transcriptions running in other threads to
    finish, then frees it; transcriptions begun once close() was called
    raise Error("the model is closed"). close() from a progress or
    on_segment callback of a transcription of the same model on the same
    thread (which would wait for itself) raises Error at once and frees
    nothing."""

    def __init__(self, path: Union[str, bytes, os.PathLike[str], os.PathLike[bytes]],
                 threads: Optional[int] = None, weight_type: str = "auto",
                 library: Union[str, os.PathLike[str], None] = None,
                 vad_model: Union[str, bytes, os.PathLike[str], os.PathLike[bytes], None] = None,
                 compute: str = "auto") -> None:
        self._model: Optional[ctypes.c_void_p] = None
        self._lib = lib = load_library(library)
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise TypeError(f"path must be a path, not {type(path).__name__}")
        params = lib.hv_model_default_params()
        params.n_threads = 0 if threads is None else _int("threads", threads, 1, MAX_THREADS)
        params.weight_type = _parse(lib.hv_weight_type_parse, "weight_type", weight_type,
                                    "auto, f32, f16, bf16, q8_0, q4_0")
        params.compute = _parse(lib.hv_compute_parse, "compute", compute, "auto, f32, bf16")
        if vad_model is not None and not isinstance(vad_model, (str, bytes, os.PathLike)):
            raise TypeError(f"vad_model must be a path, not {type(vad_model).__name__}")
        self._vad_model = vad_model
        self.vad_model: Optional[str] = None  # the detector's directory, once loaded
        self._vad: Optional[ctypes.c_void_p] = None
        self._vad_lock = threading.Lock()
        # segments()' worker thread: whether its generator was closed
        self._tls = threading.local()
        self._ctx: Optional[int] = None
        self._ctx_lock = threading.Lock()
        # who uses the library memory: transcriptions running (per thread),
        # and close() waiting for them (_closing) or done (_model None)
        self._use = threading.Condition()
        self._users: dict[int, int] = {}
        self._closing = False
        # how close() stops each segments() generator whose transcription
        # runs (its worker would otherwise wait for the loop to ask for
        # more, and close() for the worker)
        self._halts: set[Callable[[], None]] = set()
        model = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRBUF)
        st = lib.hv_model_load(_c_path("path", path), ctypes.byref(params), ctypes.byref(model),
                               err, _ERRBUF)
        if st != 0:
            raise error(st, err.value.decode("utf-8", "replace"))
        self._model = model
        self.path = os.fsdecode(path)
        self.threads = params.n_threads

    # ------------------------------------------------------------ facts

    def _acquire(self) -> ctypes.c_void_p:
        """Marks the calling thread as using the library memory (close()
        waits for it); the model pointer, or Error when closed."""
        with self._use:
            if self._model is None or self._closing:
                raise Error("the model is closed")
            me = threading.get_ident()
            self._users[me] = self._users.get(me, 0) + 1
            return self._model

    def _release(self) -> None:
        with self._use:
            me = threading.get_ident()
            self._users[me] -= 1
            if not self._users[me]:
                del self._users[me]
            self._use.notify_all()

    def _call(self, fn: Callable[[ctypes.c_void_p], Any]) -> Any:
        """fn(model pointer) while the model is held."""
        m = self._acquire()
        try:
            return fn(m)
        finally:
            self._release()

    @property
    def sample_rate(self) -> int:
        return int(self._call(self._lib.hv_model_sample_rate))

    @property
    def languages(self) -> list[str]:
        lib = self._lib
        langs: list[str] = self._call(lambda m: [lib.hv_model_language(m, i).decode("utf-8")
                                                 for i in range(lib.hv_model_n_languages(m))])
        return langs

    @property
    def weight_bytes(self) -> int:
        return int(self._call(self._lib.hv_model_weight_bytes))

    @property
    def library_path(self) -> str:
        return self._lib.path

    # ----------------------------------------------------------- freeing

    def close(self) -> None:
        """Frees the model, its detector and its context; the Model can no
        longer transcribe. Waits for the transcriptions running in other
        threads to finish first (new ones raise Error at once); from a
        callback of a transcription of this model on this thread, raises
        Error instead (it would wait for itself). A segments() generator
        still open is stopped: its transcription ends with the chunk it is
        in, and the generator raises Error from then on."""
        use = getattr(self, "_use", None)
        if use is None:  # __init__ failed before the model was loaded
            return
        with use:
            if self._users.get(threading.get_ident()):
                raise Error("close() from a callback of a transcription of this model: it "
                            "cannot wait for the transcription that calls it; close the model "
                            "after transcribe returns")
            self._closing = True
            for halt in list(self._halts):
                halt()
            while self._users:
                use.wait()
            lib = self._lib
            if self._ctx:
                lib.hv_context_free(self._ctx)
                self._ctx = None
            if self._vad:
                lib.hv_vad_free(self._vad)
                self._vad = None
            if self._model:
                lib.hv_model_free(self._model)
                self._model = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------- speech detector

    def _detector(self) -> ctypes.c_void_p:
        """The speech detector, loaded at first use."""
        with self._vad_lock:
            if self._vad is not None:
                return self._vad
            lib = self._lib
            path: Optional[str]
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
            st = lib.hv_vad_load(_c_path("vad_model", path), ctypes.byref(vad), err, _ERRBUF)
            if st != 0:
                raise error(st, err.value.decode("utf-8", "replace"))
            self._vad = vad
            self.vad_model = path
            return vad

    # ------------------------------------------------------ transcribe

    def _read_mono(self, audio: Union[str, "os.PathLike[str]", "os.PathLike[bytes]", bytes,
                                      bytearray, memoryview, StandardInput],
                   name: bytes, rate: int, max_audio_bytes: int) -> Tuple[Any, int]:
        """_read_mono with this model's library."""
        return _read_mono(self._lib, audio, name, rate, max_audio_bytes)

    def _samples_budget(self, frames: int, channels: int, rate: int, copy: bool,
                        model: ctypes.c_void_p, max_audio_bytes: int) -> None:
        """LimitError, before anything is copied, when samples of `frames`
        frames x `channels` at `rate` Hz are over the library's budget of a
        call (max_audio_bytes): their length at the model's rate, as
        hv_transcribe judges it, and, when the binding must copy them to
        float32 (copy), that copy's bytes."""
        if not max_audio_bytes:
            return
        model_rate = int(self._lib.hv_model_sample_rate(model))
        at_rate = frames * model_rate / rate
        mib = 1048576.0
        if at_rate * 4 > max_audio_bytes:
            raise LimitError(f"{frames / rate:.1f} s of audio at {rate} Hz is {at_rate:.0f} "
                             f"samples at {model_rate} Hz ({at_rate * 4 / mib:.0f} MiB), more "
                             f"than max_audio_bytes allows ({max_audio_bytes / mib:.0f} MiB)")
        if copy and frames * channels * 4 > max_audio_bytes:
            raise LimitError(f"{frames} frames x {channels} channels of samples would be copied "
                             f"to float32 ({frames * channels * 4 / mib:.0f} MiB), more than "
                             f"max_audio_bytes allows ({max_audio_bytes / mib:.0f} MiB): give "
                             "C-contiguous float32 samples, which are used as they are")

    def _audio(self, audio: Any, sample_rate: Optional[int], model: ctypes.c_void_p,
               max_audio_bytes: int) -> Tuple[Any, int, int, int, Any, Any]:
        """(pointer, n_frames, rate, channels, keep-alive, to-free); a file
        (a path, bytes, a file object's bytes) through _read_mono at the
        model's rate."""
        n: Any
        keep: Any
        ptr: Any
        lib = self._lib
        name = b"<bytes>"
        if not isinstance(audio, (str, bytes, bytearray, memoryview, os.PathLike)) and \
                callable(getattr(audio, "read", None)):
            audio, name = _read_file_object(audio)
        if isinstance(audio, (str, os.PathLike, bytes, bytearray, memoryview, StandardInput)):
            if sample_rate is not None:
                raise InvalidArgument("sample_rate is only for samples, not for a file" + (
                    "" if isinstance(audio, (str, os.PathLike)) else "'s bytes (bytes are an "
                    "audio file; pass samples as floats)"))
            rate = int(lib.hv_model_sample_rate(model))
            pcm, count = self._read_mono(audio, name, rate, max_audio_bytes)
            return pcm, count, rate, 1, None, pcm
        # samples
        is_numpy = type(audio).__module__ == "numpy" and hasattr(audio, "ndim")
        if not is_numpy and not isinstance(audio, (array.array, list, tuple)):
            raise TypeError("audio must be a path, the bytes of an audio file, a file object "
                            "reading them, or float samples (list, array.array or numpy "
                            f"array) with sample_rate, not {type(audio).__name__}")
        if sample_rate is None:
            raise InvalidArgument("samples need sample_rate (their rate in Hz)")
        rate = _int("sample_rate", sample_rate, MIN_SAMPLE_RATE, MAX_SAMPLE_RATE)
        channels = 1
        if is_numpy:
            import numpy as np
            if audio.ndim not in (1, 2):
                raise InvalidArgument("a numpy array of samples must have 1 dimension "
                                      "(mono) or 2 (frames x channels), not "
                                      f"{audio.ndim}")
            if audio.ndim == 2 and audio.shape[1] > 0:
                channels = _int("channels (the array's second dimension)", int(audio.shape[1]),
                                1, MAX_CHANNELS)
            elif audio.ndim == 2:
                channels = 0
            if not np.issubdtype(audio.dtype, np.floating):
                raise TypeError(f"samples must be floating point, not {audio.dtype}")
            if channels < 1:
                raise InvalidArgument("a numpy array of samples needs at least one channel")
            self._samples_budget(int(audio.shape[0]), channels, rate,
                                 audio.dtype != np.float32 or not audio.flags.c_contiguous,
                                 model, max_audio_bytes)
            keep = np.ascontiguousarray(audio, dtype=np.float32)
            ptr = keep.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            n = keep.shape[0]
            return ptr, n, rate, channels, keep, None
        self._samples_budget(len(audio), 1, rate, not isinstance(audio, array.array) or
                             audio.typecode != "f", model, max_audio_bytes)
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

    def transcribe(self, audio: Audio, language: Optional[str] = None,
                   punctuation: bool = True, beams: Optional[int] = None,
                   length_penalty: float = 1.0, sample: bool = False, temperature: float = 1.0,
                   top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                   chunking: Optional[str] = None, word_timestamps: bool = False,
                   progress: Optional[Callable[[float, float], Optional[bool]]] = None,
                   sample_rate: Optional[int] = None, max_tokens: Optional[int] = None,
                   chunk_seconds: Optional[float] = None,
                   on_segment: Optional[Callable[[Segment], Optional[bool]]] = None,
                   beam_size: Optional[int] = None, vad_filter: Optional[bool] = None,
                   *, best_of: int = 1, compression_ratio_threshold: Optional[float] = 2.4,
                   log_prob_threshold: Optional[float] = -1.0,
                   no_speech_threshold: Optional[float] = 0.6,
                   vad_options: Optional[Mapping[str, Any]] = None,
                   speech_probabilities: bool = False,
                   hotwords: Optional[Union[str, Sequence[str]]] = None,
                   hotwords_score: float = HOTWORDS_SCORE, repetition_penalty: float = 1.0,
                   no_repeat_ngram_size: int = 0, diarize: bool = False,
                   diarize_voice: Optional[float] = None,
                   _output: Optional[Callable[[Any], None]] = None,
                   _speech: Optional[int] = None) -> Result:
        """Transcribes `audio`: a path, the bytes of an audio file (any format
        libsndfile reads), a file object reading them (opened "rb";
        read to its end), or float samples (a list, array.array or numpy
        array; numpy 2-D as frames x channels) at `sample_rate` Hz.

        language: a code of `languages` (None: "da" when supported, else
        the first); punctuation: False asks for text without it. Decoding:
        greedy by default; beams > 1 for beam search (with length_penalty);
        sample=True to sample (temperature, top_k, top_p, seed, best_of
        draws; one beam only); temperature=0 is greedy. A list of
        temperatures (e.g. [0, 0.2, 0.4, 0.6, 0.8, 1]) is the temperature
        fallback (docs/DECODING.md): each chunk decoded again at the next
        temperature while its text's compression ratio is above
        compression_ratio_threshold or its average log-prob below
        log_prob_threshold, a chunk whose no_speech_prob is above
        no_speech_threshold (with a low log-prob) dropped as silence (None
        turns a threshold off; 0 is greedy, or beam search with beams, and a
        temperature above 0 samples); not with sample=True. chunking:
        "auto" (the default; = "vad": only speech, found by the speech
        detector), "energy", "fixed" (every chunk_seconds),
        "none"; vad_options: the speech detector's settings, hviske's names
        (docs/VAD.md: threshold, neg_threshold, min_speech_ms,
        min_silence_ms, speech_pad_ms, max_speech_s, edges "signal" or
        "silero", max_gap_s); speech_probabilities=True runs the detector
        whatever the chunking, for each segment's decoding.no_speech_prob.
        hotwords: names and phrases to bias decoding towards (a str of
        phrases separated by commas, or a list of str; docs/DECODING.md
        "Hotwords"), each matched token worth hotwords_score (> 0, default
        1.5, given back when the match fails); a phrase the model's
        vocabulary cannot encode raises InvalidArgument.
        repetition_penalty (> 0, 1: off) and no_repeat_ngram_size (0: off):
        Hugging Face's generate options, over the decoder's prompt and the
        generated tokens (docs/DECODING.md "Repetition").
        diarize=True: a diarize-and-timestamp model's speaker turns, each
        chunk's turns its chunks, every Chunk and Segment with its speaker
        (docs/DIARIZE.md); a model without the speaker and time tokens
        raises InvalidArgument naming the piece. It implies no
        repetition_penalty: the model card's is 1.2. diarize_voice: the
        cosine of two voice signatures over which a speaker silent in a
        window's overlap continues an earlier label and two labels merge
        as one person (0..1, 1: off; None: the library's default;
        docs/DIARIZE.md, rules 4 and 6).
        faster-whisper's names are aliases: beam_size= is beams=,
        vad_filter=True is chunking="vad" and vad_filter=False
        chunking="energy" (or "fixed" or "none" when chunking says so).
        max_tokens: at most this many tokens per chunk (None: the model's).
        word_timestamps: True gives the words with their start and end
        (result.words, and each segment's and chunk's words); the words
        are timed either way, since the segments are made of them
        (docs/TIMESTAMPS.md "Segments").
        progress: called as progress(done_s, total_s) after each chunk, on
        this thread; returning False stops the transcription before its
        next chunk or decoder step (transcribe then raises Cancelled), and
        an exception it raises stops it too and comes out of transcribe.
        on_segment: called as on_segment(segment) with each Segment as soon
        as it is final, in order, on this thread (the segments of the
        result, one by one: those of a chunk once it is transcribed, while
        the audio after it is still being transcribed); returning False
        stops the transcription at the end of that segment's chunk (the
        segments after it in the same chunk are not given), and transcribe
        then returns the Result of the chunks done, all their segments,
        with stopped=True (progress returning False, or an exception from
        either function, then stops it the same way but as described
        above).

        Returns a Result, which also unpacks as `segments, info`; raises an
        Error subclass with the library's message (InvalidArgument, also a
        ValueError, for a bad value; TypeError for a wrong type)."""
        beams = _beams_alias(beams, beam_size)
        chunking = _chunking_alias(chunking, vad_filter)
        one, opts = _options(temperature, best_of, compression_ratio_threshold,
                             log_prob_threshold, no_speech_threshold, vad_options,
                             speech_probabilities, hotwords, hotwords_score,
                             repetition_penalty, no_repeat_ngram_size, diarize, diarize_voice)
        model = self._acquire()
        try:
            return self._transcribe(model, audio, language, punctuation, beams, length_penalty,
                                    sample, one, top_k, top_p, seed, chunking,
                                    word_timestamps, progress, sample_rate, max_tokens,
                                    chunk_seconds, on_segment, opts, _output, _speech)
        finally:
            self._release()

    def _transcribe(self, model: ctypes.c_void_p, audio: Audio, language: Optional[str],
                    punctuation: bool, beams: int, length_penalty: float, sample: bool,
                    temperature: float, top_k: int, top_p: float, seed: int, chunking: str,
                    word_timestamps: bool,
                    progress: Optional[Callable[[float, float], Optional[bool]]],
                    sample_rate: Optional[int], max_tokens: Optional[int],
                    chunk_seconds: Optional[float],
                    on_segment: Optional[Callable[[Segment], Optional[bool]]],
                    opts: _Options,
                    output: Optional[Callable[[Any], None]] = None,
                    speech: Optional[int] = None) -> Result:
        """transcribe() once the model is held (model: its pointer); the
        arguments as given, checked here; speech: an hv_speech of this very
        audio by the model's detector with opts' settings (WhisperModel's,
        so that the detector runs once)."""
        lib = self._lib
        tp = lib.hv_transcribe_default_params()
        if language is not None:
            if not isinstance(language, str):
                raise TypeError(f"language must be a str, not {type(language).__name__}")
            lang = _c_string("language", language)
            tp.language = lang
        for name, value in (("beams", beams), ("length_penalty", length_penalty),
                            ("sample", sample), ("temperature", temperature), ("top_k", top_k),
                            ("top_p", top_p), ("seed", seed), ("chunking", chunking),
                            ("punctuation", punctuation), ("best_of", opts.best_of),
                            ("compression_ratio_threshold", opts.thresholds[0]),
                            ("log_prob_threshold", opts.thresholds[1]),
                            ("no_speech_threshold", opts.thresholds[2])):
            _set(lib, tp, name, value)
        if max_tokens is not None:
            _set(lib, tp, "max_tokens", max_tokens)
        mode = tp.chunking
        if not isinstance(word_timestamps, bool):
            raise TypeError("word_timestamps must be True or False")
        # the segments are cues of the timed words, as the CLI's and the
        # server's (docs/TIMESTAMPS.md "Segments"): the words are always
        # timed; word_timestamps decides whether they are given
        tp.word_timestamps = 1
        if chunk_seconds is not None:
            _set(lib, tp, "chunk_seconds", chunk_seconds)
        elif chunking == "fixed":
            raise InvalidArgument("chunking=\"fixed\" needs chunk_seconds")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable as progress(done_s, total_s)")
        if on_segment is not None and not callable(on_segment):
            raise TypeError("on_segment must be callable as on_segment(segment)")
        if mode in (0, 4) or opts.speech_probabilities:  # HV_CHUNKING_AUTO, HV_CHUNKING_VAD
            tp.vad = self._detector().value
        hot = None
        if opts.hotwords is not None:
            hot = _c_string("hotwords", opts.hotwords)
            tp.hotwords = hot
        for name, value in (("hotwords_score", opts.hotwords_score),
                            ("repetition_penalty", opts.repetition_penalty),
                            ("no_repeat_ngram_size", opts.no_repeat_ngram_size)):
            _set(lib, tp, name, value)
        tp.diarize = int(opts.diarize)
        if opts.diarize_voice is not None:
            _set(lib, tp, "diarize_voice", opts.diarize_voice)
        tp.speech = speech
        temps = None
        if opts.temperatures is not None:
            temps = (ctypes.c_float * len(opts.temperatures))(*opts.temperatures)
            tp.temperatures = ctypes.cast(temps, ctypes.POINTER(ctypes.c_float))
            tp.n_temperatures = len(opts.temperatures)
        for k, v in opts.vad_options.items():
            _set(lib, tp, "vad_" + k, v)
        raised: list[BaseException] = []
        stop: list[bool] = []
        # segments(): its generator closed, seen at every decoder step
        halted: Callable[[], bool] = getattr(self._tls, "halted", None) or (lambda: False)
        if progress is not None:
            report = progress

            def on_progress(_user: Optional[int], done: float, total: float) -> None:
                if raised or stop:
                    return
                try:
                    if report(done, total) is False:
                        stop.append(True)
                except BaseException as e:  # raised after the call
                    raised.append(e)
            tp.progress = PROGRESS(on_progress)
            tp.abort_callback = ABORT(lambda _user: int(bool(raised or stop or halted())))
        if on_segment is not None:
            give = on_segment
            done = [0, 0]  # chunks, segments given so far

            def on_seg(_user: Optional[int], ptr: Any) -> int:
                if raised or stop:
                    return 1
                try:
                    s = ctypes.cast(ptr, ctypes.POINTER(_CSegment)).contents
                    segs = self._cues(s, done[0], done[1], word_timestamps)
                    done[0] += 1
                    done[1] += len(segs)
                    for seg in segs:
                        if give(seg) is False:
                            return 1
                    return 0
                except BaseException as e:  # raised after the call
                    raised.append(e)
                    return 1
            tp.segment_callback = SEGMENT(on_seg)
            if progress is None:
                tp.abort_callback = ABORT(lambda _user: int(bool(raised or halted())))

        # the work budget, before the audio is read
        err = ctypes.create_string_buffer(_ERRBUF)
        most = int(lib.hv_param_find(b"num_beams").contents.hi)  # HV_MAX_BEAMS, its row's
        if lib.hv_work_check(ctypes.byref(tp), most, err, _ERRBUF) != 0:
            raise InvalidArgument(err.value.decode("utf-8", "replace"))
        ptr, n, rate, channels, keep, to_free = self._audio(audio, sample_rate, model,
                                                            tp.max_audio_bytes)
        try:
            res = ctypes.c_void_p()
            own = self._ctx_lock.acquire(blocking=False)
            ctx = None
            try:
                if own:
                    if self._ctx is None:
                        self._ctx = _native.new_context(lib, model)
                    ctx = self._ctx
                else:  # another thread uses the model's context: one of its own
                    ctx = _native.new_context(lib, model)
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
                lib.hv_free(to_free)
            del keep
        try:
            result = self._result(res, word_timestamps)
            if output is not None:  # python -m hviske: the library's writers
                output(res)
        finally:
            lib.hv_result_free(res)
        if raised:
            raise raised[0]
        return result

    def segments(self, audio: Audio, **options: Any) -> Iterator[Segment]:
        """The segments of transcribe(audio, **options), each as soon as it
        is final, while the rest is transcribed on another thread (what
        faster-whisper's segment generator does). Nothing runs before the
        first segment is asked for, and the transcription keeps at most one
        segment ahead of the loop; leaving the loop (or closing the
        generator) stops it within one decoder step. An error of
        the transcription comes out of the loop. Every transcribe option
        but on_segment is taken. close() of the model stops the
        transcription the same way, and the generator then raises Error
        ("the model was closed") instead of giving more."""
        if "on_segment" in options:
            raise TypeError("segments() gives the segments itself: no on_segment")
        ready: list[Tuple[Optional[Segment], Optional[BaseException]]] = []
        cond = threading.Condition()
        state = {"wanted": 1, "stop": False, "closed": False}

        def give(seg: Segment) -> bool:
            with cond:
                ready.append((seg, None))
                cond.notify_all()
                cond.wait_for(lambda: state["wanted"] > 0 or bool(state["stop"]) or
                              bool(state["closed"]))
                state["wanted"] -= 1
                return not (state["stop"] or state["closed"])

        def halt() -> None:  # close() of the model
            with cond:
                state["closed"] = True
                cond.notify_all()

        def work() -> None:
            err: Optional[BaseException] = None
            self._tls.halted = lambda: bool(state["stop"] or state["closed"])
            try:
                self.transcribe(audio, on_segment=give, **options)
            except BaseException as e:  # comes out of the loop
                err = e
            finally:
                self._tls.halted = None
            with cond:
                ready.append((None, err))
                cond.notify_all()

        worker = threading.Thread(target=work, name="hviske-segments", daemon=True)
        with self._use:
            if self._model is None or self._closing:
                raise Error("the model is closed")
            self._halts.add(halt)
        worker.start()
        try:
            while True:
                with cond:
                    cond.wait_for(lambda: bool(ready) or bool(state["closed"]))
                    if state["closed"]:
                        raise Error("the model was closed while this segments() generator was "
                                    "open: it gives no more segments")
                    seg, err = ready.pop(0)
                if seg is None:
                    if err is not None:
                        raise err
                    return
                yield seg
                with cond:
                    state["wanted"] += 1
                    cond.notify_all()
        finally:
            with cond:
                state["stop"] = True
                cond.notify_all()
                closed = state["closed"]
            if not closed:  # else close() waits for the worker itself
                worker.join()
            with self._use:
                self._halts.discard(halt)

    @staticmethod
    def _words(words: Any, first: int, n: int, toks: Any, base: int) -> list[Word]:
        """Words of the library's hv_word array `words`, [first, first + n).
        Their tokens from toks, the array whose element 0 is the token
        numbered `base` in hv_word.first_token's numbering (a result's
        tokens: 0; a chunk's: its first_token)."""
        return [Word(word=(w.text or b"").decode("utf-8", "replace"), start=w.start, end=w.end,
                     probability=w.probability,
                     tokens=[toks[j - base] for j in range(w.first_token,
                                                           w.first_token + w.n_tokens)])
                for w in (words[i] for i in range(first, first + n))]

    @staticmethod
    def _decoding(s: Any) -> Decoding:
        """How the library's hv_segment s was decoded."""
        nsp = s.no_speech_prob
        return Decoding(temperature=s.temperature, avg_logprob=s.avg_logprob,
                        compression_ratio=s.compression_ratio,
                        no_speech_prob=None if math.isnan(nsp) else nsp)

    @classmethod
    def _chunk(cls, s: Any, words: bool) -> Chunk:
        """A Chunk of the library's hv_segment s (its words when `words`)."""
        return Chunk(start=s.start, end=s.end, text=(s.text or b"").decode("utf-8", "replace"),
                     tokens=[s.tokens[j] for j in range(s.n_tokens)],
                     token_logprobs=[s.token_logprobs[j] for j in range(s.n_tokens)],
                     score=s.score,
                     words=cls._words(s.words, 0, s.n_words, s.tokens, s.first_token)
                     if words else [], decoding=cls._decoding(s), speaker=s.speaker)

    def _cues(self, s: Any, chunk: int, first_id: int, words: bool) -> list[Segment]:
        """The segments of the library's hv_segment s (a chunk, the one
        numbered `chunk`), numbered from first_id: its cues
        (hv_segment_cues, the default limits, as the hviske program's JSON
        and the server make them); their words when `words`. The one place
        the package makes segments: Result.segments, the `segments` of
        `segments, info`, on_segment and Model.segments() all come from
        here."""
        lib = self._lib
        cues = ctypes.POINTER(_CCue)()
        n = ctypes.c_int()
        st = lib.hv_segment_cues(ctypes.byref(s), None, ctypes.byref(cues), ctypes.byref(n))
        if st != 0:
            raise error(st, "out of memory making the segments of a chunk")
        try:
            out: list[Segment] = []
            decoding = self._decoding(s)
            for k in range(n.value):
                c = cues[k]
                a, m = c.first_token - s.first_token, c.n_tokens
                if a < 0 or a > s.n_tokens:  # cannot happen: its tokens are the chunk's
                    a, m = 0, 0
                m = max(0, min(m, s.n_tokens - a))
                lps = [s.token_logprobs[j] for j in range(a, a + m)]
                text = (c.text or b"").decode("utf-8", "replace")
                out.append(Segment(
                    start=c.start, end=c.end, text=text.replace("\n", " "),
                    lines=text.split("\n"), decoding=decoding,
                    tokens=[s.tokens[j] for j in range(a, a + m)], token_logprobs=lps,
                    score=sum(lps),
                    words=self._words(s.words, c.first_word, c.n_words, s.tokens,
                                      s.first_token) if words else [],
                    id=first_id + k, chunk=chunk, speaker=s.speaker))
            return out
        finally:
            lib.hv_cues_free(cues, n.value)

    def _result(self, res: Any, words: bool) -> Result:
        lib = self._lib
        n = lib.hv_result_n_tokens(res)
        toks = lib.hv_result_tokens(res)
        lps = lib.hv_result_token_logprobs(res)
        t = lib.hv_result_timings(res)
        chunks: list[Chunk] = []
        segments: list[Segment] = []
        for i in range(lib.hv_result_n_segments(res)):
            s = lib.hv_result_segment(res, i)
            chunks.append(self._chunk(s, words))
            segments += self._cues(s, i, len(segments), words)
        return Result(text=lib.hv_result_text(res).decode("utf-8", "replace"),
                      segments=segments, chunks=chunks,
                      tokens=[toks[j] for j in range(n)],
                      token_logprobs=[lps[j] for j in range(n)] if n else [],
                      score=lib.hv_result_score(res),
                      timings={name: getattr(t, name) for name, _ in t._fields_},
                      language=lib.hv_result_language(res).decode("utf-8"),
                      duration=lib.hv_result_duration(res),
                      words=self._words(lib.hv_result_words(res), 0,
                                        lib.hv_result_n_words(res), toks, 0) if words else [],
                      stopped=bool(lib.hv_result_stopped(res)))


# faster-whisper's WhisperModel (its own module: it builds on Model)
from .whisper import BatchedInferencePipeline, WhisperModel  # noqa: E402
