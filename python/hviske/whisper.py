"""faster-whisper's WhisperModel over hviske: the constructor, transcribe()
and its Segment, Word and TranscriptionInfo shapes, so that a program that
used faster-whisper changes its import and its model name (a checkpoint
directory) only (python/README.md "Coming from faster-whisper" maps every
parameter and field):

    from hviske import WhisperModel
    model = WhisperModel("hviske-v5.3", device="cpu", compute_type="int8")
    segments, info = model.transcribe("audio.mp3", beam_size=5)
    for segment in segments:
        print("[%.2fs -> %.2fs] %s" % (segment.start, segment.end, segment.text))

What the model cannot do (translation, a text prefix, language detection, a
GPU) is a ValueError saying so, never ignored in silence; hotwords bias the
decoder (docs/DECODING.md "Hotwords")."""
from __future__ import annotations

import array
import ctypes
import math
import os
import sys
import threading
import warnings
import weakref
from dataclasses import asdict, dataclass
from typing import Any, BinaryIO, Iterable, Iterator, List, Optional, Tuple, Union

from . import Model, _read_file_object
from . import Segment as _Cue
from ._native import SpeechRegion, error, new_context

_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
_PREPEND = "\"'“¿([{-"
_APPEND = "\"'.。,，!！?？:：”)]}、"
_RATE = 16000  # faster-whisper's arrays: 16 kHz mono
_DEFAULT_MAX_AUDIO_BYTES = 2 << 30  # HV_DEFAULT_MAX_AUDIO_BYTES


def _deprecated_asdict(obj: Any) -> dict[str, Any]:
    warnings.warn(f"{type(obj).__name__}._asdict() method is deprecated, use "
                  f"dataclasses.asdict({type(obj).__name__}) instead", DeprecationWarning, 3)
    return asdict(obj)


@dataclass
class Word:
    """faster-whisper's Word: start and end in seconds, the word with the
    space before it (so that "".join of a segment's words is its text), and
    the mean probability of its tokens."""
    start: float
    end: float
    word: str
    probability: float

    def _asdict(self) -> dict[str, Any]:
        return _deprecated_asdict(self)


@dataclass
class Segment:
    """faster-whisper's Segment: id (from 1), seek (its start in 10 ms
    frames), start, end, text (with a leading space), tokens, and its
    chunk's avg_logprob, compression_ratio, no_speech_prob (from the speech
    detector) and temperature (docs/DECODING.md "Temperature fallback");
    words (None unless word_timestamps=True)."""
    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: List[int]
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    words: Optional[List[Word]]
    temperature: Optional[float]

    def _asdict(self) -> dict[str, Any]:
        return _deprecated_asdict(self)


@dataclass
class VadOptions:
    """faster-whisper's VAD options, with its defaults; mapped onto the
    speech detector's settings (docs/VAD.md)."""
    threshold: float = 0.5
    neg_threshold: Optional[float] = None
    min_speech_duration_ms: int = 0
    max_speech_duration_s: float = float("inf")
    min_silence_duration_ms: int = 2000
    speech_pad_ms: int = 400


@dataclass
class TranscriptionOptions:
    """The options of a transcription, as given (faster-whisper's fields)."""
    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    repetition_penalty: float
    no_repeat_ngram_size: int
    log_prob_threshold: Optional[float]
    no_speech_threshold: Optional[float]
    compression_ratio_threshold: Optional[float]
    condition_on_previous_text: bool
    prompt_reset_on_temperature: float
    temperatures: List[float]
    initial_prompt: Optional[Union[str, Iterable[int]]]
    prefix: Optional[str]
    suppress_blank: bool
    suppress_tokens: Optional[List[int]]
    without_timestamps: bool
    max_initial_timestamp: float
    word_timestamps: bool
    prepend_punctuations: str
    append_punctuations: str
    multilingual: bool
    max_new_tokens: Optional[int]
    clip_timestamps: Union[str, List[float]]
    hallucination_silence_threshold: Optional[float]
    hotwords: Optional[str]


@dataclass
class TranscriptionInfo:
    """faster-whisper's TranscriptionInfo. language_probability is 1.0: the
    language is the one given or the model's default, never detected (as
    faster-whisper reports a given language); all_language_probs is None.
    duration_after_vad: with vad_filter, the seconds of the speech regions
    the detector finds (with the same settings, before the transcription),
    else the duration."""
    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    all_language_probs: Optional[List[Tuple[str, float]]]
    transcription_options: TranscriptionOptions
    vad_options: Optional[VadOptions]


# compute_type: (weight_type, compute) of hviske.Model (docs/QUANTIZE.md,
# docs/KERNELS.md)
_COMPUTE_TYPES = {
    "default": ("auto", "auto"), "auto": ("auto", "auto"),
    "int8": ("q8_0", "auto"), "int8_float32": ("q8_0", "f32"),
    "int8_float16": ("q8_0", "auto"), "int8_bfloat16": ("q8_0", "bf16"),
    "float16": ("f16", "auto"), "bfloat16": ("bf16", "bf16"), "float32": ("f32", "f32"),
}


def _refuse(name: str, value: object, default: object, why: str) -> None:
    """ValueError unless value is the default (what faster-whisper does
    unless asked otherwise), saying what hviske cannot do."""
    if value != default or type(value) is not type(default):
        raise ValueError(f"{name}={value!r}: {why}")


def _cpu_threads(cpu_threads: int) -> int:
    """faster-whisper's cpu_threads: 0 is $OMP_NUM_THREADS when set, else 4."""
    if isinstance(cpu_threads, bool) or not isinstance(cpu_threads, int) or cpu_threads < 0:
        raise ValueError(f"cpu_threads must be an int >= 0, not {cpu_threads!r}")
    if cpu_threads:
        return cpu_threads
    omp = os.environ.get("OMP_NUM_THREADS", "")
    return int(omp) if omp.isdigit() and int(omp) > 0 else 4


def _vad_options(p: Union[None, dict[str, Any], VadOptions]) -> VadOptions:
    if p is None:
        return VadOptions()
    if isinstance(p, VadOptions):
        return p
    if isinstance(p, dict):
        return VadOptions(**p)  # unknown keys: TypeError, as faster-whisper's
    raise TypeError("vad_parameters must be a dict or a VadOptions")


def _detector_settings(v: VadOptions) -> dict[str, Any]:
    """VadOptions as hviske.Model's vad_options."""
    return {"threshold": v.threshold,
            "neg_threshold": -1.0 if v.neg_threshold is None else v.neg_threshold,
            "min_speech_ms": v.min_speech_duration_ms,
            "min_silence_ms": v.min_silence_duration_ms, "speech_pad_ms": v.speech_pad_ms,
            "max_speech_s": 0.0 if math.isinf(v.max_speech_duration_s)
            else v.max_speech_duration_s}


class _Reading:
    """An hv_speech (the detector's reading of one input), freed with this
    object."""

    def __init__(self, lib: Any, ptr: int) -> None:
        self.ptr = ptr
        weakref.finalize(self, lib.hv_speech_free, ptr)


def _float_array(samples: Any) -> array.array[float]:
    """samples as an array.array of C floats (the same floats the library
    reads from it), copied only when they are not one already."""
    if isinstance(samples, array.array) and samples.typecode == "f":
        return samples  # type: ignore[return-value]  # "f" holds floats
    out: array.array[float] = array.array("f")
    if type(samples).__module__ == "numpy":
        out.frombytes(samples.astype("float32").tobytes())
    else:
        out.extend(samples)
    return out


class WhisperModel:
    """faster-whisper's WhisperModel on a hviske checkpoint directory.
    device: "cpu" or "auto" (hviske runs on the CPU; "cuda" is a
    ValueError); compute_type: "int8" (q8_0 weights), "float16",
    "bfloat16", "float32", or "default"/"auto" (the checkpoint's own);
    cpu_threads: threads per transcription (0: $OMP_NUM_THREADS, else 4);
    num_workers: how many transcriptions run at once when called from
    several threads (the others wait). Nothing is downloaded: a model
    name, download_root, files, revision and use_auth_token are refused.
    `model` is the hviske.Model underneath."""

    def __init__(self, model_size_or_path: str, device: str = "auto",
                 device_index: Union[int, List[int]] = 0, compute_type: str = "default",
                 cpu_threads: int = 0, num_workers: int = 1,
                 download_root: Optional[str] = None, local_files_only: bool = False,
                 files: Optional[dict[str, Any]] = None, revision: Optional[str] = None,
                 use_auth_token: Optional[Union[str, bool]] = None,
                 **model_kwargs: Any) -> None:
        if device not in ("cpu", "auto"):
            raise ValueError(f"device={device!r}: hviske runs on the CPU only; use device="
                             "\"cpu\" or \"auto\"")
        if device_index not in (0, [0]):
            raise ValueError(f"device_index={device_index!r}: it picks a GPU, and hviske "
                             "runs on the CPU only")
        if compute_type not in _COMPUTE_TYPES:
            raise ValueError(f"compute_type={compute_type!r}: hviske computes in "
                             f"{', '.join(_COMPUTE_TYPES)} (int16 weights it has not)")
        for name, value in (("download_root", download_root), ("files", files),
                            ("revision", revision), ("use_auth_token", use_auth_token)):
            if value is not None:
                raise ValueError(f"{name}={value!r}: hviske downloads nothing and loads a "
                                 "checkpoint directory")
        if not isinstance(local_files_only, bool):
            raise TypeError("local_files_only must be True or False")
        if model_kwargs:
            raise TypeError(f"unexpected keyword arguments {', '.join(sorted(model_kwargs))} "
                            "(CTranslate2's; hviske has none of them)")
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
            raise ValueError(f"num_workers must be an int >= 1, not {num_workers!r}")
        if not isinstance(model_size_or_path, (str, os.PathLike)) or \
                not os.path.isdir(model_size_or_path):
            raise ValueError(f"{model_size_or_path!r} is no checkpoint directory: hviske loads "
                             "one (config.json, tokenizer.model, model.safetensors) and "
                             "downloads no model by name")
        weight_type, compute = _COMPUTE_TYPES[compute_type]
        self.model = Model(model_size_or_path, threads=_cpu_threads(cpu_threads),
                           weight_type=weight_type, compute=compute)
        self._workers = threading.BoundedSemaphore(num_workers)

    @property
    def supported_languages(self) -> List[str]:
        """The languages of the checkpoint (config.json)."""
        return self.model.languages

    def detect_language(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: the model has no language detection."""
        raise ValueError("the model has no language detection: give the language (one of "
                         f"{', '.join(self.model.languages)})")

    def transcribe(
        self,
        audio: Union[str, BinaryIO, Any],
        language: Optional[str] = None,
        task: str = "transcribe",
        log_progress: bool = False,
        beam_size: int = 5,
        best_of: int = 5,
        patience: float = 1,
        length_penalty: float = 1,
        repetition_penalty: float = 1,
        no_repeat_ngram_size: int = 0,
        temperature: Union[float, List[float], Tuple[float, ...]] = list(_TEMPERATURES),
        compression_ratio_threshold: Optional[float] = 2.4,
        log_prob_threshold: Optional[float] = -1.0,
        no_speech_threshold: Optional[float] = 0.6,
        condition_on_previous_text: bool = True,
        prompt_reset_on_temperature: float = 0.5,
        initial_prompt: Optional[Union[str, Iterable[int]]] = None,
        prefix: Optional[str] = None,
        suppress_blank: bool = True,
        suppress_tokens: Optional[List[int]] = [-1],
        without_timestamps: bool = False,
        max_initial_timestamp: float = 1.0,
        word_timestamps: bool = False,
        prepend_punctuations: str = _PREPEND,
        append_punctuations: str = _APPEND,
        multilingual: bool = False,
        vad_filter: bool = False,
        vad_parameters: Optional[Union[dict[str, Any], VadOptions]] = None,
        max_new_tokens: Optional[int] = None,
        chunk_length: Optional[int] = None,
        clip_timestamps: Union[str, List[float]] = "0",
        hallucination_silence_threshold: Optional[float] = None,
        hotwords: Optional[str] = None,
        language_detection_threshold: Optional[float] = 0.5,
        language_detection_segments: int = 1,
    ) -> Tuple[Iterator[Segment], TranscriptionInfo]:
        """faster-whisper's transcribe: (a generator of Segment,
        TranscriptionInfo). The audio is read at once; the transcription
        runs as the segments are asked for, each coming when its chunk is
        done. python/README.md "Coming from faster-whisper" says what each
        argument does here; those hviske cannot honour are a ValueError
        unless left at faster-whisper's default."""
        if task == "translate":
            raise ValueError("task=\"translate\": the model transcribes, it does not translate")
        _refuse("task", task, "transcribe", "the model transcribes only")
        # a prompt is context the model family has no input for: accepted
        # with a notice, as hviske's --prompt and the server's prompt are;
        # a prefix would change the text asked for: refused; hotwords are
        # hviske's contextual biasing (phrases separated by commas)
        if initial_prompt is not None:
            warnings.warn("initial_prompt: the model family takes no text prompt: not used",
                          stacklevel=2)
        if prefix is not None:
            raise ValueError(f"prefix={prefix!r}: the model takes no text prompt")
        _refuse("multilingual", multilingual, False, "the model has no language detection")
        _refuse("language_detection_threshold", language_detection_threshold, 0.5,
                "the model has no language detection")
        _refuse("language_detection_segments", language_detection_segments, 1,
                "the model has no language detection")
        _refuse("patience", float(patience) if isinstance(patience, int) else patience, 1.0,
                "hviske's beam search stops when beam_size hypotheses are finished "
                "(patience 1)")
        _refuse("max_initial_timestamp", float(max_initial_timestamp)
                if isinstance(max_initial_timestamp, int) else max_initial_timestamp, 1.0,
                "the model has no timestamp tokens")
        _refuse("prepend_punctuations", prepend_punctuations, _PREPEND,
                "punctuation joins the word before it, as the tokenizer splits words")
        _refuse("append_punctuations", append_punctuations, _APPEND,
                "punctuation joins the word before it, as the tokenizer splits words")
        _refuse("clip_timestamps", clip_timestamps if clip_timestamps != [] else "0", "0",
                "hviske transcribes the whole audio (cut it first, or use vad_filter)")
        if hallucination_silence_threshold is not None:
            raise ValueError(f"hallucination_silence_threshold={hallucination_silence_threshold!r}"
                             ": hviske has no such heuristic (speech detection leaves pauses "
                             "out instead: vad_filter=True)")
        if suppress_tokens not in ([-1], None, []):
            raise ValueError(f"suppress_tokens={suppress_tokens!r}: hviske suppresses no tokens")
        for name, flag in (("suppress_blank", suppress_blank),
                           ("condition_on_previous_text", condition_on_previous_text),
                           ("without_timestamps", without_timestamps),
                           ("word_timestamps", word_timestamps), ("vad_filter", vad_filter),
                           ("log_progress", log_progress)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False")
        temps = list(temperature) if isinstance(temperature, (list, tuple)) else [temperature]
        chunking = "vad" if vad_filter else "energy"
        chunk_seconds: Optional[float] = None
        if chunk_length is not None:
            if vad_filter:
                raise ValueError("chunk_length with vad_filter: hviske's speech chunks are up "
                                 "to the model's max_audio_clip_s, cut in pauses")
            chunking, chunk_seconds = "fixed", chunk_length
        vad = _vad_options(vad_parameters) if vad_filter else None
        if language is not None and language not in self.model.languages:
            raise ValueError(f"language={language!r}: the model transcribes "
                             f"{', '.join(self.model.languages)}")
        if language is None:
            language = self.model.languages[0] if len(self.model.languages) == 1 else None
            if language is None:
                warnings.warn("the model has no language detection: transcribing in its "
                              "default language; give language= to choose", UserWarning, 2)
        samples, rate = self._samples(audio)
        duration = len(samples) / rate
        options = TranscriptionOptions(
            beam_size=beam_size, best_of=best_of, patience=patience,
            length_penalty=length_penalty, repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size, log_prob_threshold=log_prob_threshold,
            no_speech_threshold=no_speech_threshold,
            compression_ratio_threshold=compression_ratio_threshold,
            condition_on_previous_text=condition_on_previous_text,
            prompt_reset_on_temperature=prompt_reset_on_temperature, temperatures=temps,
            initial_prompt=initial_prompt, prefix=prefix, suppress_blank=suppress_blank,
            suppress_tokens=suppress_tokens, without_timestamps=without_timestamps,
            max_initial_timestamp=max_initial_timestamp, word_timestamps=word_timestamps,
            prepend_punctuations=prepend_punctuations, append_punctuations=append_punctuations,
            multilingual=multilingual, max_new_tokens=max_new_tokens,
            clip_timestamps=clip_timestamps,
            hallucination_silence_threshold=hallucination_silence_threshold, hotwords=hotwords)
        kwargs: dict[str, Any] = dict(
            language=language, beams=beam_size, best_of=best_of, length_penalty=length_penalty,
            temperature=temps, compression_ratio_threshold=compression_ratio_threshold,
            log_prob_threshold=log_prob_threshold, no_speech_threshold=no_speech_threshold,
            chunking=chunking, chunk_seconds=chunk_seconds, max_tokens=max_new_tokens,
            word_timestamps=word_timestamps, sample_rate=rate, speech_probabilities=True,
            vad_options=_detector_settings(vad) if vad else None, hotwords=hotwords,
            repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size)
        if log_progress:
            kwargs["progress"] = _show_progress
        after, reading = duration, None
        if vad:
            samples = _float_array(samples)
            reading, after = self._read_speech(samples, rate, vad)
            if reading is not None:
                kwargs["_speech"] = reading.ptr
        info = TranscriptionInfo(
            language=language or self._default_language(), language_probability=1.0,
            duration=duration, duration_after_vad=after, all_language_probs=None,
            transcription_options=options, vad_options=vad)
        return self._segments(samples, kwargs, without_timestamps, word_timestamps,
                              reading), info

    # ------------------------------------------------------------ helpers

    def _samples(self, audio: Any) -> Tuple[Any, int]:
        """(mono samples, their rate) of audio: a path or a file object read
        by the library's mono readers at the model's rate (within the
        library's default memory budget), or samples as faster-whisper
        takes them (16 kHz mono floats)."""
        lib = self.model._lib
        if not isinstance(audio, (str, os.PathLike)) and not callable(getattr(audio, "read", None)):
            if not (type(audio).__module__ == "numpy" or
                    isinstance(audio, (array.array, list, tuple))):
                raise TypeError("audio must be a path, a file object reading an audio file, or "
                                "16 kHz mono float samples (a numpy array, array.array or list)"
                                f", not {type(audio).__name__}")
            return audio, _RATE
        rate = self.model.sample_rate
        name = b""
        if not isinstance(audio, (str, os.PathLike)):
            audio, name = _read_file_object(audio)
        pcm, n = self.model._read_mono(audio, name, rate, _DEFAULT_MAX_AUDIO_BYTES)
        try:
            samples = array.array("f")
            if n:
                block = (ctypes.c_float * n).from_address(ctypes.addressof(pcm.contents))
                samples.frombytes(memoryview(block).cast("B"))
        finally:
            lib.hv_free(pcm)
        return samples, rate

    def _default_language(self) -> str:
        lib = self.model._lib
        code = self.model._call(lib.hv_model_default_language)
        return str(code.decode("utf-8")) if code else ""

    def _read_speech(self, samples: Any, rate: int,
                     vad: VadOptions) -> Tuple[Optional[_Reading], float]:
        """The detector's reading of samples (at rate, array.array "f") with
        vad's settings, for the transcription to take (the detector runs
        once), and the seconds of its speech regions (duration_after_vad)."""
        lib, m = self.model._lib, self.model
        n = len(samples)
        if n == 0:
            return None, 0.0
        ptr = ctypes.cast((ctypes.c_float * n).from_buffer(samples),
                          ctypes.POINTER(ctypes.c_float))
        params = lib.hv_vad_default_params()
        for k, v in _detector_settings(vad).items():
            setattr(params, k, v)
        detector = m._detector()

        def read(model: ctypes.c_void_p) -> Tuple[_Reading, float]:
            ctx = new_context(lib, model)
            out = ctypes.c_void_p()
            try:
                st = lib.hv_vad_speech(ctx, detector, ptr, n, rate, 1, ctypes.byref(params),
                                       ctypes.byref(out))
                if st != 0:
                    raise error(st, lib.hv_context_error(ctx).decode("utf-8", "replace"))
            finally:
                lib.hv_context_free(ctx)
            if not out.value:
                raise MemoryError("out of memory reading speech")
            reading = _Reading(lib, out.value)
            r = ctypes.POINTER(SpeechRegion)()
            count = lib.hv_speech_regions(out, ctypes.byref(r))
            return reading, float(sum(r[i].end - r[i].start for i in range(count)))
        return m._call(read)  # type: ignore[no-any-return]

    def _segments(self, samples: Any, kwargs: dict[str, Any], whole_chunks: bool,
                  words: bool, reading: Optional[_Reading]) -> Iterator[Segment]:
        """faster-whisper's segments of hviske's (Model.segments, lazy),
        numbered from 1; whole_chunks (without_timestamps) merges those of
        each chunk into one, as faster-whisper's window without timestamps;
        reading (kwargs' _speech) is kept alive while the generator is."""
        with self._workers:
            group: List[_Cue] = []
            n = 0
            for cue in self.model.segments(samples, **kwargs):
                if not whole_chunks:
                    n += 1
                    yield _segment(n, [cue], words)
                    continue
                if group and cue.chunk != group[0].chunk:
                    n += 1
                    yield _segment(n, group, words)
                    group = []
                group.append(cue)
            if group:
                yield _segment(n + 1, group, words)


def _segment(id: int, cues: List[_Cue], words: bool) -> Segment:
    """A faster-whisper Segment of hviske segments (one, or those of one
    chunk): words and text with the space before each word."""
    d = cues[0].decoding
    return Segment(
        id=id, seek=int(math.floor(cues[0].start * 100)), start=cues[0].start,
        end=cues[-1].end, text="".join(" " + c.text for c in cues),
        tokens=[t for c in cues for t in c.tokens], avg_logprob=d.avg_logprob,
        compression_ratio=d.compression_ratio,
        no_speech_prob=d.no_speech_prob if d.no_speech_prob is not None else math.nan,
        words=[Word(start=w.start, end=w.end, word=" " + w.word, probability=w.probability)
               for c in cues for w in c.words] if words else None,
        temperature=d.temperature)


def _show_progress(done: float, total: float) -> None:
    """log_progress: a line per chunk on standard error (faster-whisper
    draws a tqdm bar over the audio's seconds)."""
    pct = 100.0 * done / total if total > 0 else 100.0
    print(f"hviske: {done:.1f}/{total:.1f} s ({pct:.0f}%)", file=sys.stderr, flush=True)


class BatchedInferencePipeline:
    """faster-whisper's batched pipeline over a WhisperModel: transcribe()
    with its defaults (speech detection on, one segment per chunk, only
    the first temperature). hviske decodes its chunks one after another,
    so batch_size changes the speed of nothing (it must be >= 1)."""

    def __init__(self, model: WhisperModel) -> None:
        if not isinstance(model, WhisperModel):
            raise TypeError("BatchedInferencePipeline takes a hviske WhisperModel")
        self.model = model

    def transcribe(
        self,
        audio: Union[str, BinaryIO, Any],
        language: Optional[str] = None,
        task: str = "transcribe",
        log_progress: bool = False,
        beam_size: int = 5,
        best_of: int = 5,
        patience: float = 1,
        length_penalty: float = 1,
        repetition_penalty: float = 1,
        no_repeat_ngram_size: int = 0,
        temperature: Union[float, List[float], Tuple[float, ...]] = list(_TEMPERATURES),
        compression_ratio_threshold: Optional[float] = 2.4,
        log_prob_threshold: Optional[float] = -1.0,
        no_speech_threshold: Optional[float] = 0.6,
        condition_on_previous_text: bool = True,
        prompt_reset_on_temperature: float = 0.5,
        initial_prompt: Optional[Union[str, Iterable[int]]] = None,
        prefix: Optional[str] = None,
        suppress_blank: bool = True,
        suppress_tokens: Optional[List[int]] = [-1],
        without_timestamps: bool = True,
        max_initial_timestamp: float = 1.0,
        word_timestamps: bool = False,
        prepend_punctuations: str = _PREPEND,
        append_punctuations: str = _APPEND,
        multilingual: bool = False,
        vad_filter: bool = True,
        vad_parameters: Optional[Union[dict[str, Any], VadOptions]] = None,
        max_new_tokens: Optional[int] = None,
        chunk_length: Optional[int] = None,
        clip_timestamps: Optional[List[dict[str, float]]] = None,
        hallucination_silence_threshold: Optional[float] = None,
        batch_size: int = 8,
        hotwords: Optional[str] = None,
        language_detection_threshold: Optional[float] = 0.5,
        language_detection_segments: int = 1,
    ) -> Tuple[Iterator[Segment], TranscriptionInfo]:
        """faster-whisper's BatchedInferencePipeline.transcribe, its
        parameters in its order with its defaults: WhisperModel.transcribe
        with vad_filter=True (with a minimum silence of 160 ms and at most
        30 s of speech per chunk unless vad_parameters say otherwise),
        without_timestamps=True, condition_on_previous_text taken as False
        (the batched pipeline conditions on no earlier text), and of a
        temperature list the first value alone; task=None is "transcribe",
        clip_timestamps a list of {"start", "end"} (refused but for None or
        [])."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, not {batch_size!r}")
        if clip_timestamps:
            raise ValueError(f"clip_timestamps={clip_timestamps!r}: hviske transcribes the whole "
                             "audio (cut it first, or use vad_filter)")
        if vad_filter and vad_parameters is None:
            vad_parameters = VadOptions(max_speech_duration_s=30, min_silence_duration_ms=160)
        if isinstance(temperature, (list, tuple)):
            temperature = temperature[0]
        return self.model.transcribe(
            audio, language=language, task="transcribe" if task is None else task,
            log_progress=log_progress, beam_size=beam_size, best_of=best_of, patience=patience,
            length_penalty=length_penalty, repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size, temperature=temperature,
            compression_ratio_threshold=compression_ratio_threshold,
            log_prob_threshold=log_prob_threshold, no_speech_threshold=no_speech_threshold,
            condition_on_previous_text=False,
            prompt_reset_on_temperature=prompt_reset_on_temperature,
            initial_prompt=initial_prompt, prefix=prefix, suppress_blank=suppress_blank,
            suppress_tokens=suppress_tokens, without_timestamps=without_timestamps,
            max_initial_timestamp=max_initial_timestamp, word_timestamps=word_timestamps,
            prepend_punctuations=prepend_punctuations, append_punctuations=append_punctuations,
            multilingual=multilingual, vad_filter=vad_filter, vad_parameters=vad_parameters,
            max_new_tokens=max_new_tokens, chunk_length=chunk_length,
            hallucination_silence_threshold=hallucination_silence_threshold, hotwords=hotwords,
            language_detection_threshold=language_detection_threshold,
            language_detection_segments=language_detection_segments)
