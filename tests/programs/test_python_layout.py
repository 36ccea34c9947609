"""Python's ctypes mirror of the public structs (python/hviske/_native.py)
is the compiler's layout of include/hviske.h and hviske_output.h: a small C program, written
from the mirror's field lists and built here with the C compiler, prints
sizeof of every struct, offsetof and sizeof of every field it names; each
must equal ctypes' size, offset and field size. The structs that grow
(the params structs, hv_output_spec) start with their size field. A
field added to a C struct and not to the mirror changes the struct's
size, a field moved or retyped its offsets.

Environment: HV_SOURCE_DIR. Needs a C compiler (cc, or $CC).
"""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import SOURCE_DIR, finish, report, skip_or_fail  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
from hviske import _native  # noqa: E402

# the mirror's classes and the C structs they stand for
STRUCTS = {"ModelParams": "hv_model_params", "VadParams": "hv_vad_params",
           "TranscribeParams": "hv_transcribe_params", "Param": "hv_param",
           "Timings": "hv_timings", "Word": "hv_word", "Segment": "hv_segment",
           "SpeechRegion": "hv_speech_region", "Cue": "hv_cue", "CueParams": "hv_cue_params",
           "OutputSpec": "hv_output_spec"}
# the structs the library will grow: each starts with its size field
# (docs/CONVENTIONS.md), in C and in the mirror
SIZED = ("ModelParams", "VadParams", "TranscribeParams", "CueParams", "OutputSpec")
# Python names of C fields that are Python keywords
C_NAME = {"def_": "def"}


def program():
    """The C program: one line "STRUCT size N", and "STRUCT.FIELD offset N"
    and "STRUCT.FIELD size N" for each field."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "hviske.h"',
             '#include "hviske_output.h"',
             "int main(void) {"]
    for py, c in STRUCTS.items():
        lines.append(f'    printf("{c} size %zu\\n", sizeof({c}));')
        for name, _ in getattr(_native, py)._fields_:
            f = C_NAME.get(name, name)
            lines.append(f'    printf("{c}.{f} offset %zu\\n", offsetof({c}, {f}));')
            lines.append(f'    printf("{c}.{f} size %zu\\n", sizeof((({c} *)0)->{f}));')
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def expected():
    """What ctypes says, in the program's lines."""
    out = {}
    for py, c in STRUCTS.items():
        cls = getattr(_native, py)
        out[f"{c} size"] = ctypes.sizeof(cls)
        for name, _ in cls._fields_:
            field = getattr(cls, name)
            out[f"{c}.{C_NAME.get(name, name)} offset"] = field.offset
            out[f"{c}.{C_NAME.get(name, name)} size"] = field.size
    return out


def main():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        skip_or_fail("ctypes layouts", "no C compiler (cc)")
        return finish()
    tmp = tempfile.mkdtemp(prefix="hv-layout-")
    try:
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(src, "w", encoding="utf-8") as f:
            f.write(program())
        p = subprocess.run([cc, "-std=c11", "-Wall", "-I", os.path.join(SOURCE_DIR, "include"),
                            "-o", exe, src], capture_output=True, text=True)
        report("the layout program builds against include/hviske.h (every field the mirror "
               "names is in the C struct)", p.returncode == 0, p.stderr[-1500:])
        if p.returncode != 0:
            return finish()
        got = {}
        for line in subprocess.run([exe], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            key, value = line.rsplit(" ", 1)
            got[key] = int(value)
        want = expected()
        for py, c in STRUCTS.items():
            keys = [k for k in want if k.split(" ")[0].split(".")[0] == c]
            bad = [f"{k}: C {got.get(k)}, ctypes {want[k]}" for k in keys if got.get(k) != want[k]]
            report(f"{py} is {c}: size, and offset and size of {(len(keys) - 1) // 2} fields",
                   not bad,
                   "; ".join(bad))
        for py in SIZED:
            c, first = STRUCTS[py], getattr(_native, py)._fields_[0]
            report(f"{c} starts with size_t size (the mirror's {py} too)",
                   first == ("size", ctypes.c_size_t) and got.get(f"{c}.size offset") == 0 and
                   got.get(f"{c}.size size") == ctypes.sizeof(ctypes.c_size_t), f"{first}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
