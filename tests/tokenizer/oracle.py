#!/usr/bin/env python3
"""Reference answers for tests/unit/test_tokenizer.c, from python3-sentencepiece.

    oracle.py pieces MODEL   one line per piece: "id type piece_hex score_hex"
    oracle.py decode MODEL   stdin: lines of space-separated ids; stdout: per
                             line the hex UTF-8 of the transcript, "-" if empty
    oracle.py find MODEL     stdin: lines of hex piece text; stdout: the id of
                             that exact piece, or -1
    oracle.py encode MODEL   stdin: lines of hex UTF-8 text; stdout: per line
                             sp.encode's ids, space-separated, "-" if none

decode follows docs/MODEL.md: keep in-range NORMAL and BYTE pieces, sp.decode,
drop U+0000, then str.strip(). Piece types come from a small independent protobuf reader
here (sentencepiece's Python API cannot tell NORMAL from USER_DEFINED) and
are cross-checked against sp.is_control/is_unknown/is_unused/is_byte.
Output is hex so that every byte compares exactly.
"""
import struct
import sys

import sentencepiece as spm


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """(field, wire, value) for each top-level field; groups are not used
    by sentencepiece's writer, so they are not supported here."""
    i = 0
    while i < len(buf):
        tag, i = varint(buf, i)
        f, w = tag >> 3, tag & 7
        if w == 0:
            v, i = varint(buf, i)
        elif w == 1:
            v, i = buf[i:i + 8], i + 8
        elif w == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif w == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def piece_types(path):
    with open(path, "rb") as fh:
        data = fh.read()
    types = []
    for f, w, v in fields(data):
        if f == 1 and w == 2:
            t = 1
            for f2, w2, v2 in fields(v):
                if f2 == 3 and w2 == 0:
                    t = v2
            types.append(t)
    return types


def load(path):
    sp = spm.SentencePieceProcessor(model_file=path)
    types = piece_types(path)
    assert len(types) == sp.get_piece_size(), "piece count differs"
    for i, t in enumerate(types):
        flags = (sp.is_unknown(i), sp.is_control(i), sp.is_unused(i),
                 sp.is_byte(i))
        want = (t == 2, t == 3, t == 5, t == 6)
        assert flags == want, "piece %d: type %d but flags %s" % (i, t, flags)
    return sp, types


def main():
    mode, path = sys.argv[1], sys.argv[2]
    sp, types = load(path)
    n = sp.get_piece_size()
    out = sys.stdout
    if mode == "pieces":
        for i in range(n):
            score = struct.pack("<f", sp.get_score(i)).hex()
            out.write("%d %d %s %s\n" % (i, types[i],
                                         sp.id_to_piece(i).encode().hex(),
                                         score))
    elif mode == "decode":
        for line in sys.stdin:
            ids = [int(x) for x in line.split()]
            keep = [i for i in ids if 0 <= i < n and types[i] in (1, 6)]
            # hviske drops U+0000 (from <0x00>): its result is a C string
            text = sp.decode(keep).replace("\0", "").strip()
            out.write((text.encode("utf-8").hex() or "-") + "\n")
    elif mode == "find":
        for line in sys.stdin:
            piece = bytes.fromhex(line.strip()).decode("utf-8")
            i = sp.piece_to_id(piece)
            out.write("%d\n" % (i if sp.id_to_piece(i) == piece else -1))
    elif mode == "encode":
        for line in sys.stdin:
            text = bytes.fromhex(line.strip()).decode("utf-8")
            ids = sp.encode(text)
            out.write((" ".join(str(i) for i in ids) or "-") + "\n")
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
