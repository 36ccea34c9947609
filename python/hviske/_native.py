"""The C library (libhviske) through ctypes: finding and loading it, and the
declarations of include/hviske.h that the package uses."""
import ctypes
import ctypes.util
import os
import threading

SONAME = "libhviske.so.0"
ENV_LIBRARY = "HVISKE_LIBRARY"


class Error(Exception):
    """Every error of hviske. `status` is the library's hv_status code (None
    for errors found before the library is called), `message` its
    message."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        self.status = status


class LibraryNotFound(Error):
    """libhviske could not be found or loaded."""


class FileError(Error):
    """HV_ERR_IO: a file could not be opened or read."""


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


def error(status, message):
    """The exception for a failed library call."""
    return _BY_STATUS.get(status, Error)(message, status)


# ------------------------------------------------------------ structures

class ModelParams(ctypes.Structure):
    _fields_ = [("n_threads", ctypes.c_int), ("weight_type", ctypes.c_int),
                ("compute", ctypes.c_int)]


class VadParams(ctypes.Structure):
    _fields_ = [("threshold", ctypes.c_float), ("neg_threshold", ctypes.c_float),
                ("min_speech_ms", ctypes.c_int), ("min_silence_ms", ctypes.c_int),
                ("speech_pad_ms", ctypes.c_int), ("max_speech_s", ctypes.c_float)]


PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double, ctypes.c_double)
ABORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
# int (*segment_callback)(void *user, const hv_segment *seg): the segment
# as a plain pointer, cast to POINTER(Segment) by the callback
SEGMENT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class TranscribeParams(ctypes.Structure):
    _fields_ = [("language", ctypes.c_char_p), ("punctuation", ctypes.c_int),
                ("max_new_tokens", ctypes.c_int), ("dither", ctypes.c_float),
                ("dither_seed", ctypes.c_uint64), ("num_beams", ctypes.c_int),
                ("length_penalty", ctypes.c_float), ("do_sample", ctypes.c_int),
                ("temperature", ctypes.c_float), ("top_k", ctypes.c_int),
                ("top_p", ctypes.c_float), ("seed", ctypes.c_uint64),
                ("chunking", ctypes.c_int), ("chunk_seconds", ctypes.c_float),
                ("vad", ctypes.c_void_p), ("vad_params", VadParams),
                ("vad_max_gap_s", ctypes.c_float), ("word_timestamps", ctypes.c_int),
                ("progress", PROGRESS),
                ("progress_user", ctypes.c_void_p), ("abort_callback", ABORT),
                ("abort_user", ctypes.c_void_p), ("segment_callback", SEGMENT),
                ("segment_user", ctypes.c_void_p)]


class Timings(ctypes.Structure):
    _fields_ = [("frontend_ms", ctypes.c_double), ("encoder_ms", ctypes.c_double),
                ("decoder_ms", ctypes.c_double), ("prefill_ms", ctypes.c_double),
                ("steps_ms", ctypes.c_double), ("n_steps", ctypes.c_int),
                ("n_tokens", ctypes.c_int), ("vad_ms", ctypes.c_double),
                ("encoded_s", ctypes.c_double), ("align_ms", ctypes.c_double),
                ("encoder_gflop", ctypes.c_double)]


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
                ("words", ctypes.POINTER(Word)), ("n_words", ctypes.c_int)]


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
    "hv_context_new": (_P, [_P, ctypes.c_int]),
    "hv_context_free": (None, [_P]),
    "hv_context_error": (ctypes.c_char_p, [_P]),
    "hv_vad_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), ctypes.c_char_p,
                                   ctypes.c_size_t]),
    "hv_vad_free": (None, [_P]),
    "hv_vad_default_params": (VadParams, []),
    "hv_transcribe_default_params": (TranscribeParams, []),
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
    "hv_audio_read": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_F),
                                     ctypes.POINTER(ctypes.c_size_t),
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                     ctypes.c_char_p, ctypes.c_size_t]),
    "hv_audio_read_buffer": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                            ctypes.c_double, ctypes.POINTER(_F),
                                            ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.POINTER(ctypes.c_int),
                                            ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                            ctypes.c_size_t]),
    "hv_audio_free": (None, [_F]),
}


class Library:
    """A loaded libhviske: its functions as attributes, and `path`, the file
    it was loaded from."""

    def __init__(self, cdll, path):
        self.cdll = cdll
        self.path = path
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                raise LibraryNotFound(f"{path}: not libhviske (no {name})") from None
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)


_lock = threading.Lock()
_loaded = {}  # path as asked for -> Library


def _real_path(cdll, fallback):
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


def _open(name):
    cdll = ctypes.CDLL(name)
    return Library(cdll, _real_path(cdll, name))


def load_library(path=None):
    """Loads libhviske and returns it (once per process for each way of
    finding it). Looks, in order, at `path` when given, at $HVISKE_LIBRARY
    when set, then at the installed library (ctypes.util.find_library,
    which asks ldconfig, the compiler and $LD_LIBRARY_PATH, then the dynamic
    linker itself for libhviske.so.0). Raises LibraryNotFound, saying what
    was tried, when none loads."""
    with _lock:
        key = path if path is not None else os.environ.get(ENV_LIBRARY) or None
        if key in _loaded:
            return _loaded[key]
        if key is not None:
            where = "the library argument" if path is not None else f"${ENV_LIBRARY}"
            try:
                lib = _open(os.fspath(key))
            except (OSError, LibraryNotFound) as e:
                raise LibraryNotFound(f"cannot load libhviske from {key} ({where}): {e}") \
                    from None
            _loaded[key] = lib
            return lib
        tried = []
        found = ctypes.util.find_library("hviske")
        for name in ([found] if found else []) + [SONAME]:
            try:
                lib = _open(name)
            except (OSError, LibraryNotFound) as e:
                tried.append(f"{name}: {e}")
                continue
            _loaded[None] = lib
            return lib
        raise LibraryNotFound(
            "libhviske not found: install it (make install in the hviske source tree; "
            "run ldconfig or set LD_LIBRARY_PATH for a prefix the dynamic linker does not "
            f"search), or name the file with ${ENV_LIBRARY} or the library argument "
            f"(tried: {'; '.join(tried) or 'nothing'})")


def detector_candidates(lib):
    """Where the speech detector is looked for, in order, after
    $HVISKE_VAD_MODEL: PREFIX/share/hviske/silero-vad for the prefix the
    library is installed in (lib/ or lib/<multiarch>/ under it), then the
    source tree's models/silero-vad when the library is in a CMake build
    folder of hviske."""
    out = []
    libdir = os.path.dirname(lib.path)
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
