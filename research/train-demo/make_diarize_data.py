#!/usr/bin/python3
"""Generates the diarize demo model's data: the demo tokenizer extended
with the stream's pieces (extend_tokenizer.py), then synthetic dialogues
(dialogues.py) cut into windows of at most --clip-s, float16
features of each window (docs/MODEL.md frontend, per window as the engine
computes them) and the window's target stream.

  make_diarize_data.py --out build-demo/data-dz [--train 400] [--dev 24] [--seed 1] [--jobs 2]
                       [--tilings 2] [--min-s 30 --max-s 90] [--windows engine|pauses] [--clip-s 30]

--windows engine (default): the windows the engine decodes with energy
chunking (dialogues.plan_windows: cores cut at the quietest 100 ms, each
widened by 2 s into its neighbours, so an outer edge may cut a sentence;
the words of a cut sentence whose middle lies inside the window are its
target, diarize.window_pieces).  pauses: windows that begin and end in
pauses (dialogues.tile_windows), whole sentences only.
--clip-s: the model's longest clip (config.json's max_audio_clip_s, which
plans the engine's windows: cores of clip - 4 s); windows of pauses are at
most clip - 0.1 s.  stats.json records it, and train.py exports it.
--train/--dev count dialogues.  Each training dialogue is cut --tilings
times with different window lengths and places (one espeak-ng run, several
examples: the speaker numbering and times differ per window; with engine
windows the first tiling is the engine's own, the others have cores of
CORE_S seconds); dev once, as the engine cuts it.
Output as make_data.py's ({split}.{w}.f16, {split}.jsonl), each line with
"pieces" ([speaker, start tenths, end tenths, text]) and "text" (the
plain transcript) besides; stats.json: windows, hours, tokens per window.
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dialogues  # noqa: E402
import diarize  # noqa: E402
import extend_tokenizer  # noqa: E402
import frontend  # noqa: E402

MAX_TARGET = 512 - 10 - 1          # decoder positions - prompt - EOS
CORE_S = 6.0                       # the shortest core of the engine windows' other tilings


def worker(args):
    out, split, seed, n, w, W, tilings, min_s, max_s, engine, clip_s = args
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "tokenizer.model"))
    voc = diarize.Vocab(sp)
    fe = frontend.Frontend()
    meta, off = [], 0
    with open(os.path.join(out, "%s.%d.f16" % (split, w)), "wb") as f:
        for i in range(w, n, W):
            x, units, info = dialogues.make_dialogue(seed, split, i, min_s, max_s)

            def fits(w0, w1):
                return len(voc.stream_ids(diarize.window_pieces(units, w0, w1, engine))) <= MAX_TARGET
            for t in range(tilings):
                rng = random.Random("tile/%d/%s/%d/%d" % (seed, split, i, t))
                if engine:
                    core = (lambda: rng.uniform(CORE_S, clip_s - dialogues.OVERLAP_S)) if t else None
                    wins = dialogues.plan_windows(x, clip_s, core_s=core)[0]
                    wins = [w for w in wins if fits(*w)]
                else:
                    wins = dialogues.tile_windows(units, len(x), rng, fits, long_s=(12.0, clip_s - 0.1))
                for k, (w0, w1) in enumerate(wins):
                    pieces = diarize.window_pieces(units, w0, w1, engine)
                    y = np.round(x[w0:w1].astype(np.float64) * 32767.0) / 32768.0
                    fseed = dialogues.dialogue_seed(seed, split, i * 1000 + t * 100 + k) % (2 ** 31)
                    feats, T = fe(y, dither=frontend.DITHER, seed=fseed, pad=False)
                    f.write(feats.astype(np.float16).tobytes())
                    meta.append({"i": i, "tiling": t, "window": k, "shard": w, "offset": off, "T": int(T),
                                 "n": int(w1 - w0), "w0": int(w0), "pieces": [list(p) for p in pieces],
                                 "text": " ".join(p[3] for p in pieces), "n_tokens": len(voc.stream_ids(pieces)),
                                 "n_speakers": len(info["speakers"])})
                    off += T
    return meta


def gen_split(out, split, seed, n, jobs, tilings, min_s, max_s, engine, clip_s):
    t0 = time.time()
    with mp.Pool(jobs) as pool:
        metas = pool.map(worker, [(out, split, seed, n, w, jobs, tilings, min_s, max_s, engine, clip_s)
                                  for w in range(jobs)])
    meta = sorted([m for ms in metas for m in ms], key=lambda m: (m["i"], m["tiling"], m["window"]))
    with open(os.path.join(out, "%s.jsonl" % split), "w", encoding="utf-8") as f:
        for m in meta:
            f.write(json.dumps(m, ensure_ascii=False) + "\n")
    secs = [m["n"] / 16000 for m in meta]
    toks = [m["n_tokens"] for m in meta]
    st = {"dialogues": n, "windows": len(meta), "hours": round(sum(secs) / 3600, 2),
          "window_s": {"mean": round(float(np.mean(secs)), 1), "p10": round(float(np.percentile(secs, 10)), 1),
                       "p90": round(float(np.percentile(secs, 90)), 1), "max": round(max(secs), 1)},
          "tokens": {"mean": round(float(np.mean(toks)), 1), "max": max(toks)},
          "seconds_to_make": round(time.time() - t0, 1)}
    print("%s: %s" % (split, json.dumps(st)), flush=True)
    return st


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build-demo/data-dz")
    ap.add_argument("--train", type=int, default=400, help="training dialogues")
    ap.add_argument("--dev", type=int, default=24, help="dev dialogues (held-out voices and sentences)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tilings", type=int, default=2)
    ap.add_argument("--min-s", type=float, default=30.0)
    ap.add_argument("--max-s", type=float, default=90.0)
    ap.add_argument("--windows", choices=["engine", "pauses"], default="engine",
                    help="engine: the engine's windows (energy chunking, 2 s into each neighbour, so an edge may "
                         "cut a sentence); pauses: windows that begin and end in pauses")
    ap.add_argument("--clip-s", type=float, default=30.0,
                    help="the model's longest clip (max_audio_clip_s), 16 to 30 s: the time tokens end at 29.9")
    ap.add_argument("--tokenizer", default="models/demo/tokenizer.model",
                    help="the tokenizer to extend (the model the training starts from)")
    a = ap.parse_args()
    if not 16.0 <= a.clip_s <= 30.0:
        ap.error("--clip-s %g: between 16 and 30" % a.clip_s)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    src = os.path.join(a.out, "tokenizer.src.model")
    shutil.copyfile(a.tokenizer, src)
    n = extend_tokenizer.extend(src, os.path.join(a.out, "tokenizer.model"))
    os.remove(src)
    print("tokenizer: %d pieces added" % n, flush=True)
    engine = a.windows == "engine"
    stats = {"dev": gen_split(a.out, "dev", a.seed, a.dev, a.jobs, 1, a.min_s, a.max_s, engine, a.clip_s),
             "train": gen_split(a.out, "train", a.seed, a.train, a.jobs, a.tilings, a.min_s, a.max_s, engine,
                                a.clip_s),
             "clip_s": a.clip_s}
    with open(os.path.join(a.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    with open(os.path.join(a.out, "done.json"), "w") as f:
        json.dump(vars(a), f)
    print("total %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
