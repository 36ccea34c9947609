#!/usr/bin/env python3
"""The diarize demo model's training and evaluation tools
(research/train-demo: diarize.py, dialogues.py, extend_tokenizer.py,
train.grow_rows), issue #63 item 6:

  * DER on made cases whose figures follow from the definition (a perfect
    hypothesis under other labels, one speaker for two, a half missed, a
    false alarm, the collar's unscored time), and the speaker mapping
    against every permutation on random score tables;
  * speaker-attributed WER: swapped labels cost nothing, one hypothesis
    speaker for two costs the other speaker's words twice (deleted and
    inserted), the plain WER ignores speakers;
  * the tokenizer extended from the demo model's: every existing id keeps
    its piece, the new pieces follow them, extending twice adds nothing;
  * the stream: a window's turns -> ids -> parse gives the turns back;
    the parser's stated repairs;
  * a dialogue (espeak-ng): the same seed gives the same samples and
    turns; held-out voices, pitch and speed far apart; turns on the 100 ms
    grid without overlap; windows of at most 29.9 s tiling it, cut in
    pauses, speakers numbered by first appearance, times from the window
    start;
  * grow_rows keeps the old rows and appends their mean;
  * evaluate-diarize's long-audio path with an oracle in place of the
    model (each window's reference stream, encoder states that name the
    true speaker): a dialogue of minutes in several windows comes back
    with DER and speaker-attributed WER 0, its speakers linked across
    windows; the words both windows transcribe link speakers (made
    words); with the overlap's words scrambled, linking falls back to
    the encoder states and still finds them; with both scrambled it
    cannot, and the figures say so.
Prints one line per case and ends with "N passed, M failed".
"""

import itertools
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, SOURCE_DIR, finish_in, report, skip_or_fail  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "research", "train-demo"))
import diarize  # noqa: E402


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol


def der_cases():
    ref = [("A", 0.0, 10.0), ("B", 10.0, 20.0)]
    d, det = diarize.der(ref, [("x", 0.0, 10.0), ("y", 10.0, 20.0)], collar=0.0)
    report("der: the reference under other labels is 0", close(d, 0.0) and det["mapping"] == {"x": "A", "y": "B"},
           (d, det))
    d, det = diarize.der(ref, [("x", 0.0, 20.0)], collar=0.0)
    report("der: one speaker for two, confusion 10 of 20 s", close(d, 0.5) and close(det["confusion"], 10.0), det)
    d, det = diarize.der(ref, [("x", 0.0, 20.0)], collar=0.25)
    report("der: the collar leaves 19 of 20 s scored, confusion 9.5 s",
           close(det["scored"], 19.0) and close(det["confusion"], 9.5) and close(d, 0.5), det)
    d, det = diarize.der(ref, [("x", 0.0, 5.0), ("y", 10.0, 20.0)], collar=0.0)
    report("der: 5 s missed of 20", close(d, 0.25) and close(det["missed"], 5.0), det)
    d, det = diarize.der(ref, [("x", 0.0, 10.0), ("y", 10.0, 25.0)], collar=0.0)
    report("der: 5 s false alarm", close(d, 0.25) and close(det["false_alarm"], 5.0), det)
    r = random.Random(5)
    bad = []
    for _ in range(200):
        nr, nh = r.randint(0, 4), r.randint(0, 5)
        sc = {(a, b): r.randint(0, 9) for a in range(nr) for b in range(nh)}
        m = diarize.best_mapping(lambda a, b: sc[(a, b)], range(nr), range(nh))
        got = sum(sc[(m[h], h)] for h in m)
        best = max([sum(sc[(p, h)] for h, p in zip(range(nh), perm) if p is not None)
                    for perm in itertools.permutations(list(range(nr)) + [None] * nh, nh)] or [0])
        if got != best or len(set(m.values())) != len(m):
            bad.append((sc, m, got, best))
    report("mapping: the best one-to-one map on 200 random tables", not bad, bad[:1])


def wer_cases():
    ref = [("A", 0, 2, "en to tre"), ("B", 2, 4, "fire fem"), ("A", 4, 6, "seks")]
    e, n, m = diarize.speaker_attributed_wer(ref, [(1, 0, 2, "en to tre"), (0, 2, 4, "fire fem"), (1, 4, 6, "seks")])
    report("sa-wer: swapped labels cost nothing", e == 0 and n == 6 and m == {1: "A", 0: "B"}, (e, n, m))
    hyp = [(0, 0, 6, "en to tre fire fem seks")]
    e, n, _ = diarize.speaker_attributed_wer(ref, hyp)
    pe, pn = diarize.plain_wer(ref, hyp)
    report("sa-wer: one speaker for two: B's 2 words deleted and inserted", e == 4 and pe == 0 and pn == 6, (e, pe))


def tokenizer_cases(tmp):
    import sentencepiece as spm
    import extend_tokenizer
    src = os.path.join(DEMO_MODEL, "tokenizer.model")
    out = os.path.join(tmp, "tok.model")
    added = extend_tokenizer.extend(src, out)
    a, b = spm.SentencePieceProcessor(model_file=src), spm.SentencePieceProcessor(model_file=out)
    n = a.get_piece_size()
    same = all(a.id_to_piece(i) == b.id_to_piece(i) for i in range(n))
    new = [b.id_to_piece(i) for i in range(n, b.get_piece_size())]
    want = [p for p in diarize.MODE_PIECES if a.piece_to_id(p) == a.unk_id()] + diarize.SPEAKER_PIECES \
        + diarize.TIME_PIECES
    report("tokenizer: old ids unchanged, the stream's pieces appended", same and new == want and added == len(want),
           (added, new[:3]))
    again = os.path.join(tmp, "tok2.model")
    report("tokenizer: extending an extended one adds nothing", extend_tokenizer.extend(out, again) == 0)
    return b


def stream_cases(sp):
    v = diarize.Vocab(sp)
    pieces = [(0, 3, 24, "Hej med dig."), (1, 27, 52, "Klokken er fem. Tak!"), (0, 60, 299, "Farvel.")]
    ids = v.stream_ids(pieces)
    text = sp.decode(ids)
    report("stream: the model card's format",
           text.startswith("<|spltoken0|><|t:0.3|> Hej med dig.<|t:2.4|><|spltoken1|><|t:2.7|> Klokken"), text)
    back = v.parse(ids)
    report("stream: parse gives the turns back",
           back == [(k, s / 10, e / 10, t) for k, s, e, t in pieces], back)
    S, T = v.spk_id, v.time_id
    body = sp.encode("Hej.")
    cases = [
        ("text before a speaker is speaker 0", body + [T[20]], [(0, 0.0, 2.0, "Hej.")]),
        ("a missing end is the next start", [S[0], T[1]] + body + [S[1], T[30]] + body + [T[40]],
         [(0, 0.1, 3.0, "Hej."), (1, 3.0, 4.0, "Hej.")]),
        ("the last missing end is the window's end", [S[1], T[5]] + body, [(1, 0.5, 12.0, "Hej.")]),
        ("an end before the start is the start", [S[0], T[50]] + body + [T[10]], [(0, 5.0, 5.0, "Hej.")]),
        ("a time after the end starts a segment", [S[0], T[1], *body, T[5], T[7], *body, T[9]],
         [(0, 0.1, 0.5, "Hej."), (0, 0.7, 0.9, "Hej.")]),
        ("segments without text are dropped", [S[0], T[1], T[2], S[1], T[3]] + body + [T[9]],
         [(1, 0.3, 0.9, "Hej.")]),
        ("segments without text move no time", [S[0], S[0], T[30], S[0]] + body, [(0, 0.0, 12.0, "Hej.")]),
    ]
    for name, ids, want in cases:
        got = v.parse(ids, 120)
        report("parse: " + name, got == want, got)


def dialogue_cases():
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        skip_or_fail("dialogues", "espeak-ng or sox missing")
        return
    import numpy as np
    import dialogues
    import synth
    x, units, info = dialogues.make_dialogue(7, "test", 3, 20.0, 40.0, 3)
    x2, units2, _ = dialogues.make_dialogue(7, "test", 3, 20.0, 40.0, 3)
    report("dialogue: same seed, same samples and turns", np.array_equal(x, x2) and units == units2)
    x3, units3, _ = dialogues.make_dialogue(8, "test", 3, 20.0, 40.0, 3)
    report("dialogue: another seed, other turns", units3 != units)
    sp = info["speakers"]
    pitch = sorted(s["pitch"] for s in sp)
    speed = sorted(s["speed"] for s in sp)
    report("dialogue: 3 held-out voices, pitch and speed far apart",
           len(sp) == 3 and all(s["variant"] in synth.HELDOUT_VARIANTS for s in sp)
           and len({s["variant"] for s in sp}) == 3
           and min(b - a for a, b in zip(pitch, pitch[1:])) >= 0.6 * 80 / 3 - 1
           and min(b - a for a, b in zip(speed, speed[1:])) >= 0.6 * 120 / 3 - 1, sp)
    ok = all(u[1] % 1600 == 0 and u[2] % 1600 == 0 and u[1] < u[2] for u in units) \
        and all(a[2] <= b[1] for a, b in zip(units, units[1:])) and {u[0] for u in units} == {0, 1, 2}
    report("dialogue: sentences on the 100 ms grid, in order, no overlap, every speaker", ok, units[:3])
    quiet = all(np.max(np.abs(x[a[2] + 160:b[1] - 160]), initial=0) < 0.05 for a, b in zip(units, units[1:]))
    report("dialogue: the pauses are quiet", quiet)
    wins = dialogues.tile_windows(units, len(x), random.Random(1), lambda a, b: True)
    tiled = wins[0][0] == 0 and all(a[1] == b[0] for a, b in zip(wins, wins[1:]))
    short = all(b - a <= 29.9 * 16000 for a, b in wins)
    inside = all(not (u[1] < w1 < u[2]) for u in units for _, w1 in wins)
    covered = sum(1 for u in units if any(a <= u[1] and u[2] <= b for a, b in wins)) == len(units)
    report("windows: tile the dialogue, at most 29.9 s, cut in pauses, every sentence in one",
           tiled and short and inside and covered, wins)
    w0, w1 = next((a, b) for a, b in wins if len({u[0] for u in units if a <= u[1] and u[2] <= b}) > 1)
    p = diarize.window_pieces(units, w0, w1)
    first = [u for u in units if w0 <= u[1] and u[2] <= w1]
    report("windows: speakers by first appearance, times from the window start",
           p[0][0] == 0 and p[0][1] == (first[0][1] - w0) // 1600 and max(k for k, *_ in p) == len({k for k, *_ in p}) - 1
           and all(0 <= s <= e <= 299 for _, s, e, _ in p), p)


def grow_cases():
    import torch
    import train
    v = torch.randn(10, 4)
    g = train.grow_rows(v, 13)
    report("grow_rows: old rows kept, new rows near their mean",
           g.shape == (13, 4) and torch.equal(g[:10], v)
           and float((g[10:] - v.mean(0)).abs().max()) < 0.2 * float(v.std()), g[10:])
    b = torch.randn(10)
    gb = train.grow_rows(b, 12)
    report("grow_rows: a bias grows by its mean", torch.allclose(gb[10:], b.mean().expand(2)) and torch.equal(gb[:10], b))


def evaluate_cases():
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        skip_or_fail("evaluate-diarize", "espeak-ng or sox missing")
        return
    import importlib.machinery
    import importlib.util
    import numpy as np
    import dialogues
    path = os.path.join(SOURCE_DIR, "research", "train-demo", "evaluate-diarize")
    loader = importlib.machinery.SourceFileLoader("hv_evaluate_diarize", path)
    spec = importlib.util.spec_from_loader("hv_evaluate_diarize", loader)
    E = importlib.util.module_from_spec(spec)
    loader.exec_module(E)
    import train
    tmp = tempfile.mkdtemp(prefix="hv-diarize-eval-")
    import extend_tokenizer
    extend_tokenizer.extend(os.path.join(DEMO_MODEL, "tokenizer.model"), os.path.join(tmp, "tokenizer.model"))
    tok = train.Tok(os.path.join(tmp, "tokenizer.model"), True)
    shutil.rmtree(tmp)
    x, units, _ = dialogues.make_dialogue(11, "test", 0, 100.0, 110.0, 3)
    ref = dialogues.reference_turns(units)

    class Oracle:
        def __init__(self, scramble_words, scramble_states):
            self.sw, self.ss = scramble_words, scramble_states

        def decode(self, windows):
            out = []
            plan = E.plan_windows(x)
            assert [len(w) for w in windows] == [b - a for a, b in plan]
            for (w0, w1) in plan:
                inside = [u for u in units if w0 <= u[1] and u[2] <= w1]
                order = {}
                for u in inside:
                    order.setdefault(u[0], len(order))
                pieces = diarize.window_pieces(units, w0, w1)
                if self.sw:                  # other words in every window: no overlap agreement
                    pieces = [(k, s, e, " ".join("w%d%d" % (w0, j) for j in range(len(t.split()))))
                              for k, s, e, t in pieces]
                enc = np.zeros(((w1 - w0) // 1280 + 1, 8), dtype=np.float32)
                for spk, a, b, _ in inside:
                    enc[(a - w0) // 1280:(b - w0) // 1280 + 1, order[spk] if self.ss else spk] = 1.0
                out.append((tok.voc.stream_ids(pieces), enc))
            return out

    def run(sw, ss):
        hyp, wins = E.transcribe(x, Oracle(sw, ss), tok, 29.9, 0.9)
        d, det = diarize.der([r[:3] for r in ref], [h[:3] for h in hyp])
        sa, n, _ = diarize.speaker_attributed_wer(ref, hyp)
        return hyp, wins, d, sa, n

    hyp, wins, d, sa, n = run(False, False)
    report("evaluate: oracle windows give DER 0 and speaker-attributed WER 0 over %d windows" % len(wins),
           len(wins) >= 4 and d == 0 and sa == 0 and len({h[0] for h in hyp}) == 3, (d, sa, n, hyp[:4]))
    prev = [(10.0, "g0", "en", 0), (10.5, "g0", "to", 0), (11.0, "g1", "tre", 1), (11.5, "g1", "fire", 1),
            (12.0, "g0", "fem", 2)]
    cur = [(10.1, 1, "En", 0), (10.4, 1, "to", 0), (11.1, 0, "tre.", 1), (11.4, 0, "fire", 1), (12.1, 1, "fem", 2),
           (14.0, 2, "seks", 3)]
    labels = iter(["new"])
    m = E.link(prev, cur, 9.5, 12.5, {0, 1, 2}, {}, {"g0": np.ones(2)}, 0.9, lambda: next(labels))
    report("evaluate: the overlap's words link the speakers, one without words nor states is new",
           m == {1: "g0", 0: "g1", 2: "new"}, m)
    hyp, wins, d, sa, n = run(True, False)
    report("evaluate: without overlap words the encoder states link the speakers",
           d == 0 and len({h[0] for h in hyp}) == 3, (d, len({h[0] for h in hyp})))
    hyp, wins, d, sa, n = run(True, True)
    report("evaluate: with neither, speakers are not linked (more speakers, DER > 0)",
           d > 0 and len({h[0] for h in hyp}) > 3, (d, len({h[0] for h in hyp})))


def main():
    tmp = tempfile.mkdtemp(prefix="hv-diarize-")
    der_cases()
    wer_cases()
    sp = tokenizer_cases(tmp)
    stream_cases(sp)
    dialogue_cases()
    grow_cases()
    evaluate_cases()
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
