"""A result written in one of the library's output formats
(include/hviske_output.h): the bytes hviske and hviske-server write."""
from __future__ import annotations

import ctypes
import os
from typing import Any

from ._native import OUTPUT_WRITE, Library


SRT_SPEAKERS = ("label", "dash")  # hv_output_spec.srt_speakers, in order


def write_result(lib: Library, res: Any, fmt: str, file: str,
                 srt_speakers: str = "label", words: bool = False) -> bytes:
    """The bytes of the library's result `res` (an hv_result *) in format
    fmt ("txt", "jsonl", "json", "srt", "vtt", ...: hv_output_format_parse),
    for the input named `file`, with the default spec but srt_speakers
    (SRT_SPEAKERS: how srt shows speakers) and words (json, jsonl: each
    word, as hviske's --word-timestamps)."""
    code = ctypes.c_int()
    name = fmt.encode()
    if lib.hv_output_format_parse(name, len(name), ctypes.byref(code)) != 0:
        raise ValueError(f"no output format {fmt!r}")
    spec = lib.hv_output_default_spec(code.value)
    spec.srt_speakers = SRT_SPEAKERS.index(srt_speakers)
    spec.words = int(words)
    out = bytearray()

    def write(_arg: Any, data: Any, n: int) -> int:
        out.extend(ctypes.string_at(data, n))
        return 0
    spec.write = OUTPUT_WRITE(write)
    st = lib.hv_output_write_result(ctypes.byref(spec), os.fsencode(file), res)
    if st != 0:
        raise MemoryError(f"writing {fmt}: {lib.hv_status_name(st).decode()}")
    return bytes(out)
