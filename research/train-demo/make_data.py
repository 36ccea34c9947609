#!/usr/bin/python3
"""Generates the demo model's data set: text corpus, SentencePiece
tokenizer (spm_train), and log-mel features (docs/MODEL.md frontend, float16)
of synthetic espeak-ng utterances for the train and dev splits.

  make_data.py --out build-demo/data [--train 24000] [--dev 150] [--seed 1] [--jobs 2]

Output (in --out):
  tokenizer.model / tokenizer.vocab   SentencePiece BPE model
  corpus.txt                          text the tokenizer was trained on
  {split}.{w}.f16                     features of worker w, [frames, 128] float16, concatenated
  {split}.jsonl                       one line per utterance: i, shard, offset (rows), T, text, voice
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frontend  # noqa: E402
import synth  # noqa: E402
import textgen  # noqa: E402

SPECIALS = ["<|nospeech|>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>", "<|nopnc|>",
            "<|startofcontext|>", "<|itn|>", "<|noitn|>", "<|timestamp|>", "<|notimestamp|>",
            "<|diarize|>", "<|nodiarize|>", "<|emo:undefined|>", "<|da|>", "<|en|>"]


def train_tokenizer(out, seed, vocab_size, n_sent=120000):
    rng = random.Random("corpus-%d" % seed)
    lines = [textgen.utterance_text(rng, "train", p_two=0.0) for _ in range(n_sent)]
    corpus = os.path.join(out, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    prefix = os.path.join(out, "tokenizer")
    cmd = ["spm_train", "--input=" + corpus, "--model_prefix=" + prefix, "--vocab_size=%d" % vocab_size,
           "--model_type=bpe", "--character_coverage=1.0", "--unk_id=0", "--pad_id=2",
           "--bos_id=-1", "--eos_id=-1", "--pad_piece=<pad>", "--unk_piece=<unk>",
           "--user_defined_symbols=" + ",".join(SPECIALS), "--input_sentence_size=0",
           "--shuffle_input_sentence=false", "--seed_sentencepiece_size=200000",
           "--num_threads=1", "--minloglevel=1"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    assert sp.piece_to_id("\u2581") != sp.unk_id(), "no bare word-start piece"
    assert sp.id_to_piece(3) == "<|endoftext|>", sp.id_to_piece(3)
    prompt = "<|startofcontext|><|startoftranscript|><|emo:undefined|><|da|><|da|><|pnc|><|noitn|><|notimestamp|><|nodiarize|>"
    ids = sp.encode(prompt)
    assert len(ids) == 10 and ids[0] == sp.piece_to_id("\u2581"), ids
    print("tokenizer: %d pieces, prompt ids %s" % (sp.get_piece_size(), ids), flush=True)


def worker(args):
    out, split, seed, n, w, W, v2, clean_every = args
    fe = frontend.Frontend()
    feats_path = os.path.join(out, "%s.%d.f16" % (split, w))
    meta = []
    off = 0
    with open(feats_path, "wb") as f:
        for i in range(w, n, W):
            if v2 and not (clean_every and i % clean_every == 0):
                x, text, v = synth.make_utterance_v2(seed, split, i)   # the v2 condition mixture
            else:
                x, text, v = synth.make_utterance(seed, split, i)      # the v1 recipe
            x = np.round(x.astype(np.float64) * 32767.0) / 32768.0   # 16-bit PCM like a WAV file
            feats, T = fe(x, dither=frontend.DITHER, seed=synth.utt_seed(seed, split, i) % (2 ** 31), pad=False)
            f.write(feats.astype(np.float16).tobytes())
            meta.append({"i": i, "shard": w, "offset": off, "T": int(T), "n": int(len(x)), "text": text, "voice": v})
            off += T
    return meta


def gen_split(out, split, seed, n, jobs, v2=False, clean_every=0):
    t0 = time.time()
    with mp.Pool(jobs) as pool:
        metas = pool.map(worker, [(out, split, seed, n, w, jobs, v2, clean_every) for w in range(jobs)])
    meta = sorted([m for ms in metas for m in ms], key=lambda m: m["i"])
    with open(os.path.join(out, "%s.jsonl" % split), "w", encoding="utf-8") as f:
        for m in meta:
            f.write(json.dumps(m, ensure_ascii=False) + "\n")
    hours = sum(m["n"] for m in meta) / 16000 / 3600
    print("%s: %d utterances, %.2f h audio, %.1f s" % (split, len(meta), hours, time.time() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build-demo/data")
    ap.add_argument("--train", type=int, default=24000)
    ap.add_argument("--dev", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--vocab-size", type=int, default=1000)
    ap.add_argument("--v2", action="store_true",
                    help="v2 data (issue #13): the condition mixture of synth.make_utterance_v2 (long "
                         "multi-sentence clips, silence/noise with empty targets, telephone, codecs, speeds, "
                         "whisper, low SNR, reverb, loudness), every --clean-every-th utterance the v1 recipe")
    ap.add_argument("--clean-every", type=int, default=5, help="with --v2: utterance i %% N == 0 is v1-style")
    ap.add_argument("--tokenizer", default=None,
                    help="copy this tokenizer.model instead of training one (fine-tuning an exported model)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    if a.tokenizer:
        import shutil
        shutil.copyfile(a.tokenizer, os.path.join(a.out, "tokenizer.model"))
    else:
        train_tokenizer(a.out, a.seed, a.vocab_size)
    print("tokenizer: %.1f s" % (time.time() - t0), flush=True)
    gen_split(a.out, "dev", a.seed, a.dev, a.jobs, a.v2, 0)
    gen_split(a.out, "train", a.seed, a.train, a.jobs, a.v2, a.clean_every)
    with open(os.path.join(a.out, "done.json"), "w") as f:
        json.dump(vars(a), f)
    print("total %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
