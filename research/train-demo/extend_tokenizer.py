#!/usr/bin/python3
"""Appends the diarize stream's pieces to a SentencePiece tokenizer as
user-defined pieces (ids after the existing ones, so every existing id
keeps its meaning): <|spltoken0|>..<|spltoken7|>, <|t:0.0|>..<|t:29.9|>,
and <|timestamp|> / <|diarize|> where the tokenizer lacks them.  Edits the
ModelProto with the sentencepiece package's protobuf module.

  extend_tokenizer.py --src models/demo/tokenizer.model --out build-demo/data-dz/tokenizer.model
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diarize  # noqa: E402


def extend(src, dst):
    """Returns the number of pieces added."""
    from sentencepiece import sentencepiece_model_pb2 as pb
    m = pb.ModelProto()
    with open(src, "rb") as f:
        m.ParseFromString(f.read())
    have = {p.piece for p in m.pieces}
    added = 0
    for piece in diarize.MODE_PIECES + diarize.SPEAKER_PIECES + diarize.TIME_PIECES:
        if piece in have:
            continue
        p = m.pieces.add()
        p.piece, p.score, p.type = piece, 0.0, pb.ModelProto.SentencePiece.USER_DEFINED
        added += 1
    tmp = dst + ".tmp"
    with open(tmp, "wb") as f:
        f.write(m.SerializeToString())
    os.replace(tmp, dst)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=dst)
    diarize.Vocab(sp)                      # every piece is there, one id each
    return added


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default="models/demo/tokenizer.model")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    n = extend(a.src, a.out)
    import sentencepiece as spm
    print("%s: %d pieces added, %d in all" % (a.out, n, spm.SentencePieceProcessor(model_file=a.out).get_piece_size()))


if __name__ == "__main__":
    main()
