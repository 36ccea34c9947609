"""The C library (libhviske) through ctypes: finding and loading it, and the
declarations of include/hviske.h that the package uses."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sysconfig
import threading
from typing import Any, Dict, List, Optional, Tuple, Union

SONAME = "libhviske.so.0"
ENV_LIBRARY = "HVISKE_LIBRARY"


class Error(Exception):
    """Every error of hviske. `status` is the library's hv_status code (None
    for errors found before the library is called), `message` its
    message."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class LibraryNotFound(Error):
    """libhviske could not be found or loaded."""


class FileError(Error, OSError):
    """HV_ERR_IO: a file could not be opened or read (an OSError too, as
    Python's own file errors)."""


class FormatError(Error):
    """HV_ERR_FORMAT: a file or buffer is malformed."""


class InvalidArgument(Error, ValueError):
    """HV_ERR_INVALID_ARG, or an argument refused before the library is
    called: a value out of range."""


class OutOfMemory(Error, MemoryError):
    """HV_ERR_NOMEM."""


class Unsupported(Error):
    """HV_ERR_UNSUPPORTED: valid, but not something hviske can run."""


class LimitError(Error):
    """HV_ERR_LIMIT: the input exceeds what the model allows."""


class Cancelled(Error):
    """HV_ERR_CANCELLED: the progress function stopped the transcription
    (it returned False)."""


class DetectorNotFound(Error):
    """The speech detector that chunking "auto" or "vad" needs was not
    found."""


_BY_STATUS = {1: FileError, 2: FormatError, 3: InvalidArgument, 4: OutOfMemory,
              5: Unsupported, 6: LimitError, 7: Cancelled}


def error(status: int, message: str) -> Error:
    """The exception for a failed library call."""
    return _BY_STATUS.get(status, Error)(message, status)


def new_context(lib: Any, model: ctypes.c_void_p) -> int:
    """A context of model with its threads (hv_context_new); the library's
    error when it cannot be made."""
    ctx = ctypes.c_void_p()
    err = ctypes.create_string_buffer(1024)
    st = lib.hv_context_new(model, 0, ctypes.byref(ctx), err, len(err))
    if st != 0:
        raise error(st, err.value.decode("utf-8", "replace"))
    return int(ctx.value or 0)


# ------------------------------------------------------------ structures

class ModelParams(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("n_threads", ctypes.c_int),
                ("weight_type", ctypes.c_int),
                ("compute", ctypes.c_int)]


class VadParams(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("threshold", ctypes.c_float),
                ("neg_threshold", ctypes.c_float),
                ("min_speech_ms", ctypes.c_int), ("min_silence_ms", ctypes.c_int),
                ("speech_pad_ms", ctypes.c_int), ("max_speech_s", ctypes.c_float),
                ("edges", ctypes.c_int)]


PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double, ctypes.c_double)
ABORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
# int (*segment_callback)(void *user, const hv_segment *seg): the segment
# as a plain pointer, cast to POINTER(Segment) by the callback
SEGMENT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class TranscribeParams(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("language", ctypes.c_char_p),
                ("punctuation", ctypes.c_int),
                ("max_new_tokens", ctypes.c_int), ("dither", ctypes.c_float),
                ("dither_seed", ctypes.c_uint64), ("num_beams", ctypes.c_int),
                ("length_penalty", ctypes.c_float), ("do_sample", ctypes.c_int),
                ("temperature", ctypes.c_float), ("top_k", ctypes.c_int),
                ("top_p", ctypes.c_float), ("seed", ctypes.c_uint64),
                ("best_of", ctypes.c_int), ("temperatures", ctypes.POINTER(ctypes.c_float)),
                ("n_temperatures", ctypes.c_int),
                ("compression_ratio_threshold", ctypes.c_float),
                ("log_prob_threshold", ctypes.c_float), ("no_speech_threshold", ctypes.c_float),
                ("chunking", ctypes.c_int), ("chunk_seconds", ctypes.c_float),
                ("vad", ctypes.c_void_p), ("vad_params", VadParams),
                ("vad_max_gap_s", ctypes.c_float), ("word_timestamps", ctypes.c_int),
                ("progress", PROGRESS),
                ("progress_user", ctypes.c_void_p), ("abort_callback", ABORT),
                ("abort_user", ctypes.c_void_p), ("segment_callback", SEGMENT),
                ("segment_user", ctypes.c_void_p), ("max_audio_bytes", ctypes.c_size_t),
                ("offset_s", ctypes.c_double), ("duration_s", ctypes.c_double),
                ("hotwords", ctypes.c_char_p), ("hotwords_score", ctypes.c_float),
                ("repetition_penalty", ctypes.c_float), ("no_repeat_ngram_size", ctypes.c_int),
                ("diarize", ctypes.c_int), ("diarize_voice", ctypes.c_float),
                ("speech", ctypes.c_void_p)]


class Param(ctypes.Structure):
    """hv_param: a row of the library's parameter table."""
    _fields_ = [("name", ctypes.c_char_p), ("alias", ctypes.c_char_p), ("type", ctypes.c_int),
                ("offset", ctypes.c_size_t), ("lo", ctypes.c_double), ("hi", ctypes.c_double),
                ("lo_open", ctypes.c_int), ("none", ctypes.c_int), ("def_", ctypes.c_double),
                ("choices", ctypes.POINTER(ctypes.c_char_p)), ("metavar", ctypes.c_char_p),
                ("help", ctypes.c_char_p)]


# hv_param_type
PARAM_BOOL, PARAM_INT, PARAM_U64, PARAM_SIZE, PARAM_FLOAT, PARAM_DOUBLE, PARAM_ENUM, \
    PARAM_STRING = range(8)


class Timings(ctypes.Structure):
    _fields_ = [("frontend_ms", ctypes.c_double), ("encoder_ms", ctypes.c_double),
                ("decoder_ms", ctypes.c_double), ("prefill_ms", ctypes.c_double),
                ("steps_ms", ctypes.c_double), ("n_steps", ctypes.c_int),
                ("n_tokens", ctypes.c_int), ("vad_ms", ctypes.c_double),
                ("encoded_s", ctypes.c_double), ("align_ms", ctypes.c_double),
                ("encoder_gflop", ctypes.c_double), ("diarize_ms", ctypes.c_double)]


class Word(ctypes.Structure):
    _fields_ = [("text", ctypes.c_char_p), ("start", ctypes.c_double), ("end", ctypes.c_double),
                ("probability", ctypes.c_float), ("first_token", ctypes.c_int),
                ("n_tokens", ctypes.c_int)]


class Segment(ctypes.Structure):
    _fields_ = [("start", ctypes.c_double), ("end", ctypes.c_double),
                ("start_sample", ctypes.c_int64), ("end_sample", ctypes.c_int64),
                ("text", ctypes.c_char_p), ("tokens", ctypes.POINTER(ctypes.c_int32)),
                ("token_logprobs", ctypes.POINTER(ctypes.c_float)),
                ("n_tokens", ctypes.c_int), ("score", ctypes.c_double),
                ("words", ctypes.POINTER(Word)), ("n_words", ctypes.c_int),
                ("first_token", ctypes.c_int), ("temperature", ctypes.c_float),
                ("avg_logprob", ctypes.c_double), ("compression_ratio", ctypes.c_double),
                ("no_speech_prob", ctypes.c_double), ("speaker", ctypes.c_int)]


class SpeechRegion(ctypes.Structure):
    """hv_speech_region: seconds, and samples at the detector's rate."""
    _fields_ = [("start", ctypes.c_double), ("end", ctypes.c_double),
                ("start_sample", ctypes.c_int64), ("end_sample", ctypes.c_int64)]


class Cue(ctypes.Structure):
    """hv_cue: a segment (sentence-sized) of a chunk, hv_segment_cues."""
    _fields_ = [("start", ctypes.c_double), ("end", ctypes.c_double),
                ("first_word", ctypes.c_int), ("n_words", ctypes.c_int),
                ("first_token", ctypes.c_int), ("n_tokens", ctypes.c_int),
                ("text", ctypes.c_char_p)]


class CueParams(ctypes.Structure):
    """hv_cue_params: the limits of a cue."""
    _fields_ = [("size", ctypes.c_size_t), ("max_seconds", ctypes.c_double),
                ("max_lines", ctypes.c_int), ("max_line_chars", ctypes.c_int),
                ("max_cps", ctypes.c_double),
                ("min_seconds", ctypes.c_double), ("min_gap", ctypes.c_double)]


# hv_output_write_fn: int (*)(void *arg, const char *data, size_t n)
OUTPUT_WRITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
                                ctypes.c_size_t)


class OutputSpec(ctypes.Structure):
    """hv_output_spec (hviske_output.h): how a result is written."""
    _fields_ = [("size", ctypes.c_size_t), ("format", ctypes.c_int), ("write", OUTPUT_WRITE),
                ("write_arg", ctypes.c_void_p), ("cues", CueParams), ("words", ctypes.c_int),
                ("timestamps", ctypes.c_int), ("name_lines", ctypes.c_int),
                ("model_dir", ctypes.c_char_p), ("model", ctypes.c_void_p),
                ("granularities", ctypes.c_int), ("logprobs", ctypes.c_int),
                ("srt_speakers", ctypes.c_int)]


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_P = ctypes.c_void_p
_F = ctypes.POINTER(ctypes.c_float)
_SIGNATURES = {
    "hv_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "hv_weight_type_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "hv_compute_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "hv_chunking_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
    "hv_model_default_params": (ModelParams, []),
    "hv_model_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ModelParams),
                                     ctypes.POINTER(_P), ctypes.c_char_p, ctypes.c_size_t]),
    "hv_model_free": (None, [_P]),
    "hv_model_weight_bytes": (ctypes.c_size_t, [_P]),
    "hv_model_sample_rate": (ctypes.c_int, [_P]),
    "hv_model_n_languages": (ctypes.c_int, [_P]),
    "hv_model_language": (ctypes.c_char_p, [_P, ctypes.c_int]),
    "hv_model_default_language": (ctypes.c_char_p, [_P]),
    "hv_context_new": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(_P), ctypes.c_char_p,
                                      ctypes.c_size_t]),
    "hv_context_free": (None, [_P]),
    "hv_context_error": (ctypes.c_char_p, [_P]),
    "hv_vad_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), ctypes.c_char_p,
                                   ctypes.c_size_t]),
    "hv_vad_free": (None, [_P]),
    "hv_vad_default_params": (VadParams, []),
    "hv_transcribe_default_params": (TranscribeParams, []),
    "hv_param_count": (ctypes.c_int, []),
    "hv_param_at": (ctypes.POINTER(Param), [ctypes.c_int]),
    "hv_param_find": (ctypes.POINTER(Param), [ctypes.c_char_p]),
    "hv_param_expect": (ctypes.c_char_p, [ctypes.POINTER(Param), ctypes.c_char_p,
                                          ctypes.c_size_t]),
    "hv_params_set": (ctypes.c_int, [ctypes.POINTER(TranscribeParams), ctypes.c_char_p,
                                     ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "hv_work_check": (ctypes.c_int, [ctypes.POINTER(TranscribeParams), ctypes.c_int,
                                     ctypes.c_char_p, ctypes.c_size_t]),
    "hv_transcribe": (ctypes.c_int, [_P, _F, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(TranscribeParams), ctypes.POINTER(_P)]),
    "hv_result_text": (ctypes.c_char_p, [_P]),
    "hv_result_n_tokens": (ctypes.c_int, [_P]),
    "hv_result_tokens": (ctypes.POINTER(ctypes.c_int32), [_P]),
    "hv_result_token_logprobs": (_F, [_P]),
    "hv_result_score": (ctypes.c_double, [_P]),
    "hv_result_timings": (Timings, [_P]),
    "hv_result_duration": (ctypes.c_double, [_P]),
    "hv_result_language": (ctypes.c_char_p, [_P]),
    "hv_result_n_segments": (ctypes.c_int, [_P]),
    "hv_result_stopped": (ctypes.c_int, [_P]),
    "hv_result_segment": (Segment, [_P, ctypes.c_int]),
    "hv_result_n_words": (ctypes.c_int, [_P]),
    "hv_result_words": (ctypes.POINTER(Word), [_P]),
    "hv_result_free": (None, [_P]),
    "hv_segment_cues": (ctypes.c_int, [ctypes.POINTER(Segment), _P,
                                       ctypes.POINTER(ctypes.POINTER(Cue)),
                                       ctypes.POINTER(ctypes.c_int)]),
    "hv_cues_free": (None, [ctypes.POINTER(Cue), ctypes.c_int]),
    "hv_output_default_spec": (OutputSpec, [ctypes.c_int]),
    "hv_output_format_parse": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_int)]),
    "hv_output_write_result": (ctypes.c_int, [ctypes.POINTER(OutputSpec), ctypes.c_char_p, _P]),
    "hv_free": (None, [ctypes.c_void_p]),
    "hv_audio_max_seconds": (ctypes.c_double, [ctypes.c_size_t, ctypes.c_int]),
    "hv_audio_read_mono": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_double,
                                          ctypes.POINTER(_F), ctypes.POINTER(ctypes.c_size_t),
                                          ctypes.c_char_p, ctypes.c_size_t]),
    "hv_audio_read_fd_mono": (ctypes.c_int, [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                             ctypes.c_double, ctypes.POINTER(_F),
                                             ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p,
                                             ctypes.c_size_t]),
    "hv_audio_read_buffer_mono": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t,
                                                 ctypes.c_char_p, ctypes.c_int, ctypes.c_double,
                                                 ctypes.POINTER(_F),
                                                 ctypes.POINTER(ctypes.c_size_t),
                                                 ctypes.c_char_p, ctypes.c_size_t]),
    "hv_vad_regions": (ctypes.c_int, [_P, _P, _F, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(VadParams),
                                      ctypes.POINTER(ctypes.POINTER(SpeechRegion)),
                                      ctypes.POINTER(ctypes.c_size_t)]),
    "hv_vad_speech": (ctypes.c_int, [_P, _P, _F, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                     ctypes.POINTER(VadParams), ctypes.POINTER(_P)]),
    "hv_speech_regions": (ctypes.c_size_t, [_P, ctypes.POINTER(ctypes.POINTER(SpeechRegion))]),
    "hv_speech_free": (None, [_P]),
}


class Library:
    """A loaded libhviske: its functions as attributes, and `path`, the file
    it was loaded from."""

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.cdll = cdll
        self.path = path
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                raise LibraryNotFound(f"{path}: not libhviske (no {name})") from None
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)

    def __getattr__(self, name: str) -> Any:
        """The C functions are set by __init__; this tells type checkers
        so (it is only called for a name that is not there)."""
        raise AttributeError(f"libhviske has no function {name} here")


_lock = threading.Lock()
_loaded: Dict[Optional[str], Library] = {}  # path as asked for -> Library


def _real_path(cdll: ctypes.CDLL, fallback: str) -> str:
    """The file the dynamic linker loaded cdll from (dladdr)."""
    try:
        libc = ctypes.CDLL(None)
        info = _DlInfo()
        addr = ctypes.cast(cdll.hv_model_load, ctypes.c_void_p)
        if libc.dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(os.fsdecode(info.dli_fname))
    except (AttributeError, OSError):
        pass
    return fallback


def _open(name: str) -> Library:
    cdll = ctypes.CDLL(name)
    return Library(cdll, _real_path(cdll, name))


def _bundled() -> List[str]:
    """The libhviske.so.0 a wheel built for this machine carries beside the
    package's modules (python/_hviske_clib.py), when it is there."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    return [path] if os.path.isfile(path) else []


def _recorded() -> Optional[str]:
    """The library recorded when the package was built into a wheel
    (hviske/_installed.py, python/_hviske_build.py); None in the source
    tree."""
    try:
        from ._installed import LIBRARY  # type: ignore[import]
    except ImportError:
        return None
    return LIBRARY if isinstance(LIBRARY, str) else None


def _beside_package() -> List[str]:
    """libhviske.so.0 in the prefix the package is installed in: for
    PREFIX/lib/pythonX.Y/site-packages/hviske (pip install --prefix or
    --user, make's PREFIX the same), PREFIX/lib, PREFIX/lib64 and
    PREFIX/lib/<multiarch>."""
    pkg = os.path.dirname(os.path.abspath(__file__))
    site = os.path.dirname(pkg)
    if os.path.basename(site) not in ("site-packages", "dist-packages"):
        return []
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(site)))
    multiarch = sysconfig.get_config_var("MULTIARCH")
    dirs = ["lib", "lib64"] + ([os.path.join("lib", multiarch)] if multiarch else [])
    return [os.path.join(prefix, d, SONAME) for d in dirs]


def _pkg_config() -> List[str]:
    """libhviske.so.0 in `pkg-config --variable=libdir hviske`."""
    if shutil.which("pkg-config") is None:
        return []
    try:
        p = subprocess.run(["pkg-config", "--variable=libdir", "hviske"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    libdir = p.stdout.strip()
    return [os.path.join(libdir, SONAME)] if p.returncode == 0 and libdir else []


def library_candidates() -> List[Tuple[str, str]]:
    """(how it was found, file or name) of each place the installed
    library is looked for, in order, after the library argument and
    $HVISKE_LIBRARY."""
    out = [("built with the package", p) for p in _bundled()]
    rec = _recorded()
    if rec:
        out.append(("recorded when the package was installed", rec))
    out += [("in the prefix the package is installed in", p) for p in _beside_package()
            if os.path.isfile(p)]
    found = ctypes.util.find_library("hviske")
    if found:
        out.append(("ctypes.util.find_library", found))
    out.append(("the dynamic linker", SONAME))
    out += [("pkg-config", p) for p in _pkg_config()]
    return out


def load_library(path: Union[str, "os.PathLike[str]", None] = None) -> Library:
    """Loads libhviske and returns it (once per process for each way of
    finding it). Looks, in order, at `path` when given, at $HVISKE_LIBRARY
    when set, then at the installed library: the one built with the
    package (hviske/libhviske.so.0, when pip built it), the one recorded
    when the package was installed (the library `make install` had put in place:
    python/README.md "Installing"), libhviske.so.0 in the prefix the
    package itself is installed in, ctypes.util.find_library (which asks
    ldconfig, the compiler and $LD_LIBRARY_PATH), the dynamic linker itself
    for libhviske.so.0, and the libdir of `pkg-config hviske`. Raises
    LibraryNotFound, saying what was tried, when none loads."""
    with _lock:
        key = os.fspath(path) if path is not None else os.environ.get(ENV_LIBRARY) or None
        if key in _loaded:
            return _loaded[key]
        if key is not None:
            where = "the library argument" if path is not None else f"${ENV_LIBRARY}"
            try:
                lib = _open(key)
            except (OSError, LibraryNotFound) as e:
                raise LibraryNotFound(f"cannot load libhviske from {key} ({where}): {e}") \
                    from None
            _loaded[key] = lib
            return lib
        tried = []
        for how, name in library_candidates():
            if os.sep in name and not os.path.isfile(name):
                tried.append(f"{name} ({how}): no such file")
                continue
            try:
                lib = _open(name)
            except (OSError, LibraryNotFound) as e:
                tried.append(f"{name} ({how}): {e}")
                continue
            _loaded[None] = lib
            return lib
        raise LibraryNotFound(
            "libhviske not found: install it (make install in the hviske source tree, then "
            "pip install its python/ folder, which records where the library is), or name "
            f"the file with ${ENV_LIBRARY} or the library argument (tried: {'; '.join(tried)})")


def detector_candidates(lib: Library) -> List[str]:
    """Where the speech detector is looked for, in order, after
    $HVISKE_VAD_MODEL: silero-vad beside the library (the one a wheel with
    its own library carries), PREFIX/share/hviske/silero-vad for the prefix
    the library is installed in (lib/ or lib/<multiarch>/ under it), then
    the source tree's models/silero-vad when the library is in a CMake
    build folder of hviske."""
    libdir = os.path.dirname(lib.path)
    out = [os.path.join(libdir, "silero-vad")]
    for up in (1, 2):
        prefix = libdir
        for _ in range(up):
            prefix = os.path.dirname(prefix)
        out.append(os.path.join(prefix, "share", "hviske", "silero-vad"))
    cache = os.path.join(libdir, "CMakeCache.txt")
    try:
        with open(cache, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("hviske_SOURCE_DIR:"):
                    src = line.split("=", 1)[1].strip()
                    out.append(os.path.join(src, "models", "silero-vad"))
                    break
    except OSError:
        pass
    return out
