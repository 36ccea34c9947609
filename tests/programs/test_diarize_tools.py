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
    model (each window's reference stream): a dialogue of minutes in
    several windows comes back with each word once, its speakers linked
    across windows, those silent in an overlap by their voice signatures
    from the dialogue's audio: about a label per person and a DER of at
    most 0.10, no two people merged (with diarize_voice 1 more labels and
    a larger DER: splits only); the engine's windows: at most 30 s,
    overlapping; with the overlap's words scrambled, the turns' shared
    time links them; --save-audio writes each dialogue it scores as a
    16 kHz 16-bit WAV file of its samples;
  * the parser is the engine's: test_diarize.c's table of streams gives
    the same segments and repair bits through diarize.parse_tokens; the
    linking is the engine's: test_speaker_link.c's cases through
    diarize.link_speakers (agreement, swapped, new speaker, conflicting
    evidence, turn time, a silent overlap, and rule 4's voice cases: a
    silent speaker continues its label, below the threshold or at 1 new,
    one label for one speaker, the largest total, a label of rule 1 not
    given again, ties); diarize.voice_signature on test_voice.c's known
    vector; the port's default threshold the engine's; diarize.heal_labels
    on test_speaker_link.c's heal cases, diarize.turn_voice_labels on its
    turn-voice cases, diarize.regroup_labels on its regroup cases (rule 8),
    evaluate-diarize's stitch_window on its sentence-voice case (a turn of
    two voices cut between its sentences) and, with regroup_labels, on its
    regroup-window case (one token over two voices split at the end);
  * the port's greedy search penalises repetition on the classifier's
    logits, as transformers' generate and the engine do: the same tokens
    as the engine with repetition_penalty 1, 1.2 and 3.
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
        ("text without any speaker token is speaker -1", body + [T[20]], [(-1, 0.0, 2.0, "Hej.")]),
        ("text before a speaker token is that speaker's", body + [T[20], S[2], T[20]] + body + [T[30]],
         [(2, 0.0, 2.0, "Hej."), (2, 2.0, 3.0, "Hej.")]),
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
    engine_stream_cases()


def engine_stream_cases():
    """The engine's parser table (tests/unit/test_diarize.c's expect()
    calls: stream, window, segments, repair bits) through diarize.py's
    port: the same segments and repairs for every stream."""
    import re
    with open(os.path.join(SOURCE_DIR, "tests", "unit", "test_diarize.c"), encoding="utf-8") as f:
        src = f.read()
    calls = re.findall(r'expect\(\s*"([^"]*)",\s*([0-9.]+),\s*"([^"]*)",\s*([^;]*?)\);', src)
    bits = {"HV_DIAR_" + k: getattr(diarize, k) for k in
            ("NO_START", "NO_END", "BACKWARDS", "PAST_END", "NO_SPEAKER", "MID_WORD")}
    bad = []
    for stream, window, want, rep in calls:
        pieces = []
        for w in stream.split():
            if re.match(r"S[0-9]", w):
                pieces.append("<|spltoken%s|>" % w[1:])
            elif re.match(r"T[0-9]", w):
                pieces.append("<|t:%s|>" % w[1:])
            else:
                pieces.append("\u2581" + w[1:] if w.startswith("_") else w)
        toks = [diarize.classify(p) for p in pieces]
        segs = diarize.parse_tokens(toks, float(window))
        text = lambda pos: "".join(pieces[p] for p in pos if not pieces[p].startswith("<")
                                   ).replace("\u2581", " ").strip()
        got = "|".join("%d %.1f-%.1f %s" % (g["speaker"], g["start"], g["end"], text(g["pos"]))
                       for g in segs)
        want_rep = sum(bits[b.strip()] for b in rep.split("|") if b.strip() != "0")
        got_rep = 0
        for g in segs:
            got_rep |= g["repairs"]
        if got != want or got_rep != want_rep:
            bad.append((stream, got, want, got_rep, want_rep))
    expected = src.count("    expect(")
    report("parse: the engine's %d streams (test_diarize.c) give its segments and repairs" % len(calls),
           len(calls) == expected and len(calls) >= 15 and not bad, (len(calls), expected, bad))


def link_cases():
    """diarize.link_speakers, the engine's rule (speaker_link.c), on the
    cases of test_speaker_link.c."""
    def words(spec):
        return [(diarize.link_norm(w.split("@")[0]), float(w.split("@")[1].split("/")[0]),
                 int(w.split("/")[1])) for w in spec.split()]

    def run(a, b, order, last, first_new, ta=(), tb=()):
        n = [first_new]

        def new():
            n[0] += 1
            return n[0] - 1
        return diarize.link_speakers(words(a) if a else [], words(b) if b else [], list(ta), list(tb),
                                     order, last, new)
    a = "hej@10.0/5 med@10.3/5 dig@10.6/5 godt@11.0/2 at@11.3/2 se@11.6/2"
    m, how = run(a, "Hej,@10.2/0 med@10.4/0 dig@10.7/0 godt@11.1/1 at@11.4/1 se@11.7/1", [0, 1], 2, 6)
    report("link: agreement", m == {0: 5, 1: 2} and set(how.values()) == {"words"}, (m, how))
    m, _ = run(a, "hej@10.2/1 med@10.4/1 dig@10.7/1 godt@11.1/0 at@11.4/0 se@11.7/0", [1, 0], 2, 6)
    report("link: swapped labels", m == {0: 2, 1: 5}, m)
    m, how = run("og@20.0/3 så@20.4/3 videre@20.8/3", "og@20.1/0 så@20.5/0 videre@20.9/0", [0, 1], 3, 4)
    report("link: a new speaker", m == {0: 3, 1: 4} and how[1] == "new", (m, how))
    m, _ = run("a@1.0/1 b@1.2/1 c@1.4/1 d@1.6/2 e@1.8/2 f@2.0/1 g@2.2/1",
               "a@1.0/0 b@1.2/0 c@1.4/0 d@1.6/0 e@1.8/0 f@2.0/1 g@2.2/1", [0, 1], 1, 3)
    report("link: conflicting evidence, the most agreement in all (not greedy)", m == {0: 2, 1: 1}, m)
    m, how = run("x@5.0/7", "y@5.0/0", [1, 0], 4, 9, ta=[(7, 4.0, 6.0), (4, 6.0, 8.0)],
                 tb=[(1, 4.1, 5.9), (0, 5.9, 8.0)])
    report("link: turn time where no word agrees", m == {1: 7, 0: 4} and how[0] == "time", (m, how))
    m, how = run("x@5.0/7", "y@5.0/0", [1, 0], 4, 9, ta=[(7, 4.0, 6.0), (4, 6.0, 8.0)],
                 tb=[(1, 4.1, 4.3), (0, 7.8, 8.0)])
    report("link: speech in the overlap that links nobody: new labels", m == {1: 9, 0: 10}, (m, how))
    m, how = run("", "", [0, 2, 1], 11, 12)
    report("link: a silent overlap, the first speaker continues, the others new",
           m == {0: 11, 2: 12, 1: 13} and how[0] == "adjacent", (m, how))
    voice_link_cases(run)


def voice_link_cases(run):
    """Rule 4 on test_speaker_link.c's voice cases (voice_base and
    voice_cases there): K 0 agrees with label 5 by its words (and by its
    voice, but where a case says otherwise), K 1 (and K 2) are silent in
    the overlap; labels 0..5 with voices but 2."""
    import math
    import numpy as np
    labels = {0: (.2, .1, .9), 1: (-.5, .5, .1), 3: (1, 0, 0), 4: (0, 1, 0), 5: (.3, .3, .3)}

    def vrun(vb, thr=0.85, order=(0, 1), lab=None, k0=(.3, .3, .3)):
        sig_b = {k: np.array(v, dtype=float) for k, v in vb.items()}
        sig_b[0] = np.array(k0, dtype=float)
        sig_l = {g: np.array(v, dtype=float) for g, v in (lab or labels).items()}
        a, b = "og@20.0/5 så@20.4/5 videre@20.8/5", "og@20.1/0 så@20.5/0 videre@20.9/0"
        n = [6]

        def new():
            n[0] += 1
            return n[0] - 1
        m, how = diarize.link_speakers(
            [(diarize.link_norm(w.split("@")[0]), float(w.split("@")[1].split("/")[0]), int(w.split("/")[1]))
             for w in a.split()],
            [(diarize.link_norm(w.split("@")[0]), float(w.split("@")[1].split("/")[0]), int(w.split("/")[1]))
             for w in b.split()], [], [], list(order), 5, new, (sig_b, sig_l, thr))
        return m, how, n[0]
    m, how, nxt = vrun({1: (1.98, .2, 0)})
    report("link: voice, a speaker silent in the overlap continues its label",
           m == {0: 5, 1: 3} and how[1] == "voice" and nxt == 6, (m, how))
    m, how, _ = vrun({1: (.5, .5, -.7071)})
    report("link: voice below the threshold: new", m[1] == 6 and how[1] == "new", (m, how))
    m, how, _ = vrun({1: (1.98, .2, 0)}, thr=1)
    report("link: voice at threshold 1: off", m[1] == 6 and how[1] == "new", (m, how))
    m, how, nxt = vrun({1: (.95, .05, .3), 2: (1, .02, 0)}, order=(0, 1, 2))
    report("link: voice, one label for one speaker (the closer)",
           m[2] == 3 and how[2] == "voice" and m[1] == 6 and nxt == 7, (m, how))
    r = math.radians
    m, how, nxt = vrun({1: (math.cos(r(20)), math.sin(r(20)), 0), 2: (math.cos(r(25)), -math.sin(r(25)), 0)},
                       thr=0.6, order=(0, 1, 2), lab={**labels, 4: (math.cos(r(50)), math.sin(r(50)), 0)})
    report("link: voice, the largest total, not the closest pair first",
           m[1] == 4 and m[2] == 3 and how[1] == how[2] == "voice" and nxt == 6, (m, how))
    m, how, _ = vrun({1: (.3, .3, .3)})
    report("link: voice, a label of rule 1 is not given again", m == {0: 5, 1: 6} and how[1] == "new", (m, how))
    m, how, _ = vrun({1: (1, 1, 0)}, thr=0.5)
    report("link: voice, a tie of two labels links nobody", how[1] == "new" and m[1] == 6, (m, how))
    m, how, nxt = vrun({1: (1, 0, 0), 2: (1, 0, 0)}, order=(0, 1, 2))
    report("link: voice, a tie of two speakers links nobody",
           how[1] == how[2] == "new" and nxt == 8, (m, how))
    m, how, nxt = vrun({}, k0=(1, .05, 0))
    report("link: voice contradicts the words' link: undone, the voice's label",
           m == {0: 3, 1: 6} and how[0] == "voice" and nxt == 7, (m, how))
    m, how, nxt = vrun({}, k0=(1, .3, .3), thr=0.8)
    report("link: another label's voice closer by the margin undoes the words' link",
           m == {0: 3, 1: 6} and how[0] == "voice" and nxt == 7, (m, how))
    m, how, _ = vrun({}, k0=(1, .35, .35), thr=0.8)
    report("link: closer by less than the margin: the words' link stays", m[0] == 5 and how[0] == "words", (m, how))
    m, how, _ = vrun({}, k0=(0, 0, -1))
    report("link: a voice like no other label keeps the words' link", m[0] == 5 and how[0] == "words", (m, how))
    m, how, _ = vrun({}, k0=(1, .05, 0), thr=1)
    report("link: no contradiction with the voice rule off", m[0] == 5 and how[0] == "words", (m, how))
    # test_voice.c's known vector: A and B by turns over 60 frames, 40
    # frames of pause below the median, the level out
    A, B = [1, 2, 3, 4], [4, 3, 2, 1]
    lm = np.array([A if t % 2 == 0 else B for t in range(400)], dtype=float) + 7
    lm[100:160] = [A if t % 2 == 0 else B for t in range(100, 160)]
    lm[160:200] = -10
    v, secs = diarize.voice_signature(lm, [(1.0, 2.0)])
    want = np.concatenate([np.array([-.5, -.5, -.5, -.5, 1, 0, 0, 1]) / math.sqrt(3), np.zeros(diarize.PITCH_BINS)])
    none, s2 = diarize.voice_signature(lm, [(0.0, 0.6), (0.3, 0.99)])
    report("voice: test_voice.c's known vector, and under 1 s none",
           v is not None and np.allclose(v, want, atol=1e-12) and abs(secs - 1) < 1e-9 and none is None
           and abs(s2 - 0.99) < 1e-9, (v, secs, s2))
    # and its pitch: every other speech frame at 120 Hz, the pause's and
    # the other sounds' 300 Hz not counted
    f0 = np.array([(0 if t % 2 else 120) if 100 <= t < 160 else 300 for t in range(400)], dtype=float)
    vp, _ = diarize.voice_signature(lm, [(1.0, 2.0)], 0.01, f0)
    h = np.array([math.exp(-0.5 * (b - 12) ** 2) if 8 <= b <= 16 else 0 for b in range(diarize.PITCH_BINS)])
    wantp = np.concatenate([want[:8], diarize.PITCH_WEIGHT * h / np.linalg.norm(h)]) / math.hypot(1, diarize.PITCH_WEIGHT)
    report("voice: test_voice.c's pitch histogram", vp is not None and np.allclose(vp, wantp, atol=1e-12), vp)
    # test_pitch.c's tones: every inner frame within 1 %; noise unvoiced
    sr, ok = 16000, []
    for f in (75, 110, 150, 230, 330):
        t = np.arange(sr) / sr
        x = 0.2 * sum(0.7 ** (k - 1) * np.sin(2 * np.pi * f * k * t + k) for k in range(1, 11))
        p = diarize.pitch_track(x, 100)
        ok.append((f, int(np.sum(np.abs(p[5:95] - f) <= f / 100))))
    noise = np.random.default_rng(1).uniform(-0.5, 0.5, sr)
    voiced = int(np.sum(diarize.pitch_track(noise, 100) > 0))
    report("pitch: the port tracks test_pitch.c's tones, noise unvoiced",
           all(k == 90 for _, k in ok) and voiced <= 5, (ok, voiced))
    import re
    with open(os.path.join(SOURCE_DIR, "include", "hviske.h"), encoding="utf-8") as f:
        c_default = float(re.search(r"#define HV_DEFAULT_DIARIZE_VOICE ([0-9.]+)f", f.read()).group(1))
    report("voice: the port's default threshold is the engine's", diarize.DIARIZE_VOICE == c_default,
           (diarize.DIARIZE_VOICE, c_default))


def heal_cases():
    """diarize.heal_labels on test_speaker_link.c's heal cases (the
    engine's hv_speaker_heal from the identity)."""
    import math
    import numpy as np
    r = math.radians

    def heal(vs, shared, thr):
        voices = {l: np.array(v, dtype=float) for l, v in enumerate(vs) if any(v)}
        share = {(a, b) for a, b in shared} | {(b, a) for a, b in shared}
        return diarize.heal_labels(len(vs), voices, share, thr)
    c15, s15, c5, s5 = math.cos(r(15)), math.sin(r(15)), math.cos(r(5)), math.sin(r(5))
    v = [(1, 0, 0), (0, 0, 3), (c15, s15, 0)]
    g = heal(v, [(0, 1), (1, 2)], 0.75)
    report("heal: one voice in two windows: one label", g == [0, 1, 0], g)
    report("heal: under the threshold, or at 1: apart",
           heal(v, [(0, 1), (1, 2)], 0.95) == heal(v, [(0, 1), (1, 2)], 1) == [0, 1, 2])
    v25 = [(1, 0, 0), (0, 0, 3), (math.cos(r(25)), math.sin(r(25)), 0)]
    g = heal(v25, [(0, 1), (1, 2), (0, 2)], 0.75)
    report("heal: sharing a window, 25 degrees: apart", g == [0, 1, 2], g)
    g = heal(v25, [(0, 1), (1, 2)], 0.75)
    report("heal: never sharing one, 25 degrees: one", g == [0, 1, 0], g)
    g = heal([(1, 0, 0), (0, 0, 3), (c5, s5, 0)], [(0, 1), (1, 2), (0, 2)], 0.75)
    report("heal: sharing a window, 5 degrees: one", g == [0, 1, 0], g)
    report("heal: no voice: apart", heal([(1, 0, 0), (0, 0, 3), (0, 0, 0)], [], 0.75) == [0, 1, 2])
    g = heal([(math.cos(r(12)), math.sin(r(12)), 0), (1, 0, 0), (0, 0, 1), (c5, -s5, 0)],
             [(1, 2), (2, 3)], 0.75)
    report("heal: greedy, the closest pair first, then the merged sum", g == [0, 0, 2, 0], g)


def turn_voice_cases():
    """diarize.turn_voice_labels on test_speaker_link.c's turn-voice cases
    (the engine's hv_speaker_turn_voice, rule 7)."""
    import math
    import numpy as np
    r = math.radians

    def tv(vs, x, own, thr, group=None):
        voices = {l: np.array(v, dtype=float) for l, v in enumerate(vs) if any(v)}
        sig = np.array(x, dtype=float) if any(x) else None
        return diarize.turn_voice_labels([own], [sig], group or list(range(len(vs))), voices, thr)[0]
    v = [(1, 0, 0), (0, 2, 0), (0, 0, 0)]
    other, between = (0.1, 1, 0), (1, 0.9, 0)
    report("turn voice: another label's voice: moves; threshold 1: stays",
           tv(v, other, 0, 0.8) == 1 and tv(v, other, 0, 1) == 0)
    report("turn voice: nobody's over the threshold: stays", tv(v, between, 0, 0.8) == 0)
    report("turn voice: own label without a voice, no voice, no label: stays",
           tv(v, other, 2, 0.8) == 2 and tv(v, (0, 0, 0), 0, 0.8) == 0 and tv(v, other, -1, 0.8) == -1)
    a47, a50 = (math.cos(r(47)), math.sin(r(47)), 0), (math.cos(r(50)), math.sin(r(50)), 0)
    report("turn voice: inside the margin stays, past it moves",
           tv(v, a47, 0, 0.5) == 0 and tv(v, a50, 0, 0.5) == 1)
    report("turn voice: to a group, never its member",
           tv([(1, 0, 0), (0, 1, 0), (0, 0, 1)], (1, 0.05, 1), 1, 0.8, [0, 1, 0]) == 0)


def regroup_cases():
    """diarize.regroup_labels on test_speaker_link.c's regroup cases (the
    engine's hv_speaker_regroup, rule 8)."""
    import math
    import numpy as np
    c20, s20 = math.cos(math.radians(20)), math.sin(math.radians(20))
    c25, s25 = math.cos(math.radians(25)), math.sin(math.radians(25))
    A, B = (1, 0, 0), (0, 1, 0)

    def rg(vs, labels, thr, next_label, secs=2.0):
        sigs = [((np.array(v, dtype=float) / np.linalg.norm(v)) if any(v) else None, secs) for v in vs]
        return diarize.regroup_labels(labels, sigs, thr, next_label)
    report("regroup: split, the second seed's half takes the next label",
           rg([A, B, A, B, B], [0] * 5, 0.8, 3) == [0, 3, 0, 3, 3])
    report("regroup: threshold 1: off", rg([A, B, A, B, B], [0] * 5, 1, 3) == [0] * 5)
    report("regroup: a short half stays", rg([A, A, B], [0] * 3, 0.8, 1) == [0] * 3)
    near = [(1, 0, 0), (c20, s20, 0), (1, 0, 0), (c20, s20, 0)]
    report("regroup: close halves stay one", rg(near, [0] * 4, 0.8, 1) == [0] * 4)
    report("regroup: a segment moves", rg([A, A, B, B, B], [0, 0, 1, 1, 0], 0.8, 2) == [0, 0, 1, 1, 1])
    report("regroup: one voice merges into the smaller",
           rg([A, A, (1, .1, 0), (1, .1, 0), (0, 0, 0), B], [2, 2, 1, 1, 1, -1], 0.8, 3) == [1, 1, 1, 1, 1, -1])
    apart = [(1, 0, 0), (1, 0, 0), (c25, s25, 0), (c25, s25, 0)]
    report("regroup: two labels 25 degrees apart stay", rg(apart, [0, 0, 1, 1], 0.8, 2) == [0, 0, 1, 1])


def diarize_tok(tmp, name):
    """train.Tok of the demo tokenizer extended by the diarize pieces,
    written to tmp/name."""
    import extend_tokenizer
    import train
    path = os.path.join(tmp, name)
    extend_tokenizer.extend(os.path.join(DEMO_MODEL, "tokenizer.model"), path)
    return train.Tok(path, True)


# test_speaker_link.c's voice_frames: voice v's two spectra by frames
VOICE_SPECTRA = [[[1, 2, 3, 4], [4, 3, 2, 1]], [[0, 5, 5, 0], [2, 3, 3, 2]]]


def sentence_voice_cases(tmp):
    """evaluate-diarize's stitch_window on test_speaker_link.c's
    sentence-voice case: a turn under voice 0's token says "e f." in voice
    0 and "g h." in voice 1; with a log-mel the second sentence takes voice
    1's label as a segment of its own, and label 0 learns voice 0 alone."""
    import numpy as np
    E = load_evaluate_diarize()
    tok = diarize_tok(tmp, "sentence-voice.model")

    def frames(v, t0, t1):
        return [VOICE_SPECTRA[v][t % 2] for t in range(t0, t1)]
    lm = np.array(frames(0, 0, 1000) + frames(1, 1000, 2000) + frames(0, 2000, 2500) + frames(1, 2500, 3000),
                  dtype=np.float32)
    ids = tok.voc.stream_ids([(0, 0, 100, "a b."), (1, 100, 200, "c d."), (0, 200, 299, "e f. g h.")])
    wins, cuts = [(0, 30 * 16000)], [0, 30 * 16000]
    for with_ in (False, True):
        st = E.Stitch()
        got = [(lab, text) for lab, _, _, text in E.stitch_window(st, tok, ids, 0, wins, cuts,
                                                                  lm if with_ else None, 0.85)]
        want = [(0, "a b."), (1, "c d.")] + ([(0, "e f."), (1, "g h.")] if with_ else [(0, "e f. g h.")])
        report("sentence voice (%s log-mel): %s" % ("with" if with_ else "without", want), got == want, got)
    alone = diarize.voice_signature(np.array(frames(0, 0, 1000), dtype=np.float32), [(0, 10)])[0]
    c = diarize._cosine(st.voices.get(0, np.zeros(8)), alone)
    report("sentence voice: label 0 learns voice 0 alone (cosine %.6f)" % c, c > 0.9999)


def regroup_stitch_cases(tmp):
    """evaluate-diarize's stitch_window and regroup on test_speaker_link.c's
    regroup-window case: one speaker token over turns of two voices (4 s
    and 6 s, three times); the segments' own signatures split the label at
    the end, voice 1's turns taking the next label."""
    import numpy as np
    E = load_evaluate_diarize()
    tok = diarize_tok(tmp, "regroup.model")
    lm = np.array([VOICE_SPECTRA[0 if t % 1000 < 400 else 1][t % 2] for t in range(3000)], dtype=np.float32)
    turns = [(0, 100 * i + (0 if j == 0 else 40), min(100 * i + (40 if j == 0 else 100), 299), "abcdef"[2 * i + j])
             for i in range(3) for j in range(2)]
    ids = tok.voc.stream_ids(turns)
    wins, cuts = [(0, 30 * 16000)], [0, 30 * 16000]
    for with_ in (False, True):
        st = E.Stitch()
        out = E.stitch_window(st, tok, ids, 0, wins, cuts, lm if with_ else None, 0.85)
        got = diarize.regroup_labels([h[0] for h in out], st.seg_voices, 0.85, st.next)
        want = [0, 1, 0, 1, 0, 1] if with_ else [0] * 6
        report("regroup window (%s log-mel): %s" % ("with" if with_ else "without", want),
               [h[0] for h in out] == [0] * 6 and got == want, got)


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
    engine_window_cases(x, units)


def engine_window_cases(x, units):
    import dialogues
    wins, cuts = dialogues.plan_windows(x)
    report("engine windows: cores of 26 s widened by 2 s, at most 30 s, covering the dialogue",
           wins[0][0] == 0 and wins[-1][1] == len(x) and all(b - a <= 30 * 16000 for a, b in wins)
           and all(b[0] == c - 2 * 16000 and a[1] == c + 2 * 16000 for a, b, c in zip(wins, wins[1:], cuts[1:])),
           (wins, cuts))
    y, yunits, _ = dialogues.make_dialogue(5, "test", 1, 60.0, 70.0, 2)
    w30, c30 = dialogues.plan_windows(y)
    w25, c25 = dialogues.plan_windows(y, 25.0)
    report("engine windows of a 25 s model (max_audio_clip_s 25): cores of at most 21 s, windows of at "
           "most 25 s, covering the dialogue",
           len(w25) > len(w30) and all(b - a <= 25 * 16000 for a, b in w25) and max(b - a for a, b in w30) > 25 * 16000
           and all(b - a <= 21 * 16000 for a, b in zip(c25[:-2], c25[1:-1])) and w25[0][0] == 0
           and w25[-1][1] == len(y), (w25, c25))
    w20 = dialogues.tile_windows(yunits, len(y), random.Random(1), lambda a, b: True, long_s=(12.0, 20.0))
    report("windows in pauses of a shorter clip: at most its length", all(b - a <= 20 * 16000 for a, b in w20)
           and w20[-1][1] > 40 * 16000, w20)
    rng = random.Random(3)
    short, _ = dialogues.plan_windows(x, core_s=lambda: rng.uniform(6, 10))
    report("engine windows: shorter cores on request",
           len(short) > len(wins) and all(b - a <= 14 * 16000 for a, b in short), short)
    # a window whose start cuts a sentence: its later words only, from the window's start
    u = max(units, key=lambda u: len(u[3].split()))
    mid = (u[1] + u[2]) // 2 // 1600 * 1600
    p = diarize.window_pieces(units, mid, u[2], partial=True)
    words = u[3].split()
    report("window pieces: a cut sentence keeps the words inside, its start at the window's",
           len(p) == 1 and p[0][:3] == (0, 0, (u[2] - mid) // 1600) and 0 < len(p[0][3].split()) < len(words)
           and words[-len(p[0][3].split()):] == p[0][3].split(), (p, u))
    head = diarize.window_pieces(units, u[1], mid, partial=True)
    report("window pieces: the window's end cuts a sentence: its first words, to the window's end",
           len(head) == 1 and head[0][1:3] == (0, (mid - u[1]) // 1600)
           and (head[0][3] + " " + p[0][3]).split() == words, (head, p))
    report("window pieces: without partial a cut sentence is left out",
           diarize.window_pieces(units, mid, u[2]) == [])


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


def penalty_cases(tmp):
    """The port's greedy search (train.greedy, evaluate-diarize's default
    backend) penalises repetition as transformers' generate does, on the
    classifier's logits: its tokens are the engine's (the CLI, compute f32,
    token for token with generate: tests/oracle) with repetition_penalty
    1.2 and 3 on the demo model's example said three times."""
    cli = os.environ.get("HV_CLI")
    if not cli:
        skip_or_fail("greedy search's penalty", "HV_CLI unset (run under CTest)")
        return
    import json
    import subprocess
    import wave
    import numpy as np
    import torch
    import frontend
    import train
    from hvtest import sentences_wav
    wav = sentences_wav(os.path.join(tmp, "three.wav"), 3, 0.3)
    with wave.open(wav, "rb") as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
    torch.set_num_threads(1)
    m = load_evaluate_diarize().load_training_model(DEMO_MODEL)
    tok = train.Tok(os.path.join(DEMO_MODEL, "tokenizer.model"))
    f, T = frontend.Frontend()(x)
    port = {}
    for p in (1.0, 1.2, 3.0):
        port[p] = train.greedy(m, [{"feats": f[:T], "T": T, "text": ""}], tok, repetition_penalty=p,
                               return_ids=True)[0]
        r = subprocess.run([cli, "-m", DEMO_MODEL, "--json", "--compute", "f32", "--dither", "0",
                            "--repetition-penalty", str(p), wav], capture_output=True, text=True, timeout=300)
        mine = json.loads(r.stdout)["tokens"] if r.returncode == 0 else None
        report("greedy search with repetition_penalty %g: the port's tokens are the engine's" % p,
               port[p] == mine, (tok.sp.decode(port[p]), mine and tok.sp.decode(mine), r.stderr[-300:]))
    report("repetition_penalty 3 changes the tokens (the cases above can tell)", port[3.0] != port[1.0],
           tok.sp.decode(port[3.0]))


def load_evaluate_diarize():
    import importlib.machinery
    import importlib.util
    path = os.path.join(SOURCE_DIR, "research", "train-demo", "evaluate-diarize")
    loader = importlib.machinery.SourceFileLoader("hv_evaluate_diarize", path)
    spec = importlib.util.spec_from_loader("hv_evaluate_diarize", loader)
    E = importlib.util.module_from_spec(spec)
    loader.exec_module(E)
    return E


def save_audio_case(tmp):
    """evaluate-diarize --save-audio: the dialogue it scored, as a WAV."""
    import subprocess
    import wave
    import numpy as np
    import dialogues
    out = os.path.join(tmp, "saved")
    p = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "research", "train-demo",
                                                     "evaluate-diarize"),
                        "--model", os.path.join(SOURCE_DIR, "models", "demo-diarize"), "--backend",
                        "oracle", "--count", "1", "--seed", "11", "--minutes", "0.2", "0.3",
                        "--save-audio", out], capture_output=True, text=True, timeout=600)
    x, _, _ = dialogues.make_dialogue(11, "test", 0, 12.0, 18.0, 2)
    try:
        with wave.open(os.path.join(out, "dialogue-00.wav")) as w:
            fmt = (w.getnchannels(), w.getsampwidth(), w.getframerate())
            y = np.frombuffer(w.readframes(w.getnframes()), "<i2") / 32767.0
    except (OSError, EOFError, wave.Error) as e:
        fmt, y = str(e), np.zeros(0)
    report("evaluate --save-audio: the scored dialogue as a 16 kHz 16-bit WAV of its samples",
           p.returncode == 0 and fmt == (1, 2, 16000) and len(y) == len(x)
           and float(np.abs(y - np.clip(x, -1, 1)).max()) <= 1 / 32767 + 1e-9,
           f"rc {p.returncode} {fmt} {len(y)} vs {len(x)} {p.stderr[-300:]}")


def evaluate_cases(tmp):
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        skip_or_fail("evaluate-diarize", "espeak-ng or sox missing")
        return
    import numpy as np
    import dialogues
    E = load_evaluate_diarize()
    tok = diarize_tok(tmp, "evaluate.model")
    x, units, _ = dialogues.make_dialogue(11, "test", 0, 100.0, 110.0, 3)
    ref = dialogues.reference_turns(units)

    def letters(n):
        """n in letters (the demo tokenizer has no digits)."""
        return "".join(chr(ord("a") + int(c)) for c in str(n))

    class Oracle(E.OracleBackend):
        """evaluate-diarize's oracle on this dialogue; scramble_words: other
        words in every window, so that no overlap agrees."""
        def __init__(self, scramble_words):
            super().__init__(tok, units)
            self.sw = scramble_words

        def pieces(self, w0, w1):
            pieces = super().pieces(w0, w1)
            if self.sw:
                pieces = [(k, s, e, " ".join(letters(w0) + "q" + letters(j) for j in range(len(t.split()))))
                          for k, s, e, t in pieces]
            return pieces

    def run(sw):
        hyp, wins = E.transcribe(x, Oracle(sw), tok)
        d, det = diarize.der([r[:3] for r in ref], [h[:3] for h in hyp])
        pl, n = diarize.plain_wer(ref, hyp)
        return hyp, wins, d, pl, n

    def pure(hyp):
        """Each hypothesis label on one reference speaker only (no two
        people merged), by the words' times."""
        owner = {}
        for lab, s, e, _ in hyp:
            for r in ref:
                if min(e, r[2]) - max(s, r[1]) > 0.05:
                    owner.setdefault(lab, set()).add(r[0])
        return all(len(v) == 1 for v in owner.values())

    def words_once(hyp, wins, cuts):
        """Every reference word at most once, none added; missing only the
        words of a sentence that crosses a cut and sticks out of one of
        the two windows (the oracle gives a window whole sentences only)."""
        import difflib
        r = [w for seg in sorted(ref, key=lambda x: x[1]) for w in diarize.words(seg[3])]
        h = [w for seg in sorted(hyp, key=lambda x: x[1]) for w in diarize.words(seg[3])]
        lost = sum(len(diarize.words(u[3])) for u in units for i in range(1, len(wins))
                   if u[1] < cuts[i] < u[2] and not (wins[i][0] <= u[1] and u[2] <= wins[i - 1][1]))
        ops = difflib.SequenceMatcher(None, r, h, autojunk=False).get_opcodes()
        gone = sum(i2 - i1 for op, i1, i2, _, _ in ops if op == "delete")
        return all(op in ("equal", "delete") for op, _, _, _, _ in ops) and gone <= lost

    hyp, wins, d, pl, n = run(False)
    labels = len({h[0] for h in hyp})
    people = len(set(u[0] for u in units))
    per_window = sum(len(set(k for k, _, _, _ in diarize.window_pieces(units, a, b))) for a, b in wins)
    # the overlaps' speakers linked by rules 1-3, those silent there by
    # their voices (rule 4, signatures of the dialogue's own audio): about
    # a label per person, no two people merged
    report("evaluate: oracle windows (%d): each word once, no two speakers merged, about a label per person "
           "(%d labels for %d window speakers, %d people; DER %.2f)" % (len(wins), labels, per_window, people, d),
           len(wins) >= 4 and words_once(hyp, wins, E.plan_windows(x)[1]) and pure(hyp)
           and labels <= people + 1 and d <= 0.10, (pl, n, hyp[:4]))
    off, _ = E.transcribe(x, Oracle(False), tok, voice=1.0)
    d_off, _ = diarize.der([r[:3] for r in ref], [h[:3] for h in off])
    n_off = len({h[0] for h in off})
    # without rule 4 a speaker silent in an overlap is a new label: more
    # labels, no merges (docs/DIARIZE.md, rule 5)
    report("evaluate: the same windows with diarize_voice 1: splits only (%d labels, DER %.2f)" % (n_off, d_off),
           pure(off) and n_off > labels and d_off > d, (n_off, d_off))
    plan, cuts = E.plan_windows(x)
    report("evaluate: the engine's windows: at most 30 s, neighbours overlapping, cores cut in between",
           all(b - a <= 30 * 16000 for a, b in plan) and
           all(plan[i + 1][0] < plan[i][1] and plan[i + 1][0] <= cuts[i + 1] <= plan[i][1]
               for i in range(len(plan) - 1)), (plan, cuts))
    save_audio_case(tmp)
    scrambled, _, d2, _, _ = run(True)
    report("evaluate: without overlap words the turns' shared time links the same speakers",
           [h[0] for h in scrambled] == [h[0] for h in hyp] and abs(d2 - d) < 1e-9,
           ([h[0] for h in scrambled], [h[0] for h in hyp]))


def main():
    tmp = tempfile.mkdtemp(prefix="hv-diarize-")
    der_cases()
    wer_cases()
    sp = tokenizer_cases(tmp)
    stream_cases(sp)
    dialogue_cases()
    grow_cases()
    link_cases()
    heal_cases()
    turn_voice_cases()
    regroup_cases()
    sentence_voice_cases(tmp)
    regroup_stitch_cases(tmp)
    penalty_cases(tmp)
    evaluate_cases(tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
