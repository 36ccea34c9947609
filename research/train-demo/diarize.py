"""The diarize model's token stream and its measures.

Stream (the published diarize fine-tunes' format): per speaker turn
`<|spltokenK|><|t:S|> text<|t:E|>`, speakers numbered 0.. by order of first
appearance within the window, times in seconds from the window start at
100 ms resolution (`<|t:0.0|>`..`<|t:29.9|>`).  The prompt ends in
`<|timestamp|><|diarize|>` instead of `<|notimestamp|><|nodiarize|>`.

Measures: DER (NIST md-eval definition: the speech time missed, falsely
detected or given the wrong speaker under the best one-to-one speaker
mapping, over the reference speech time, with a no-score collar of
+-collar seconds around every reference segment boundary), cpWER-style
speaker-attributed WER, plain WER.
"""

import re

import textgen

N_SPEAKERS = 8
N_TIMES = 300                 # 0.0 .. 29.9 s
MAX_WINDOW_S = 29.9
SPEAKER_PIECES = ["<|spltoken%d|>" % k for k in range(N_SPEAKERS)]
TIME_PIECES = ["<|t:%d.%d|>" % (k // 10, k % 10) for k in range(N_TIMES)]
MODE_PIECES = ["<|timestamp|>", "<|diarize|>"]
PROMPT = ["<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", "<|da|>", "<|da|>",
          "<|pnc|>", "<|noitn|>", "<|timestamp|>", "<|diarize|>"]


def time_piece(tenths):
    return TIME_PIECES[max(0, min(N_TIMES - 1, int(tenths)))]


class Vocab:
    """Ids of the stream's special pieces in a SentencePiece processor."""

    def __init__(self, sp):
        self.sp = sp
        self.spk = {}
        self.time = {}
        for k, p in enumerate(SPEAKER_PIECES):
            i = sp.piece_to_id(p)
            if sp.id_to_piece(i) != p:
                raise ValueError("tokenizer lacks %s (extend it with extend_tokenizer.py)" % p)
            self.spk[i] = k
        for k, p in enumerate(TIME_PIECES):
            i = sp.piece_to_id(p)
            if sp.id_to_piece(i) != p:
                raise ValueError("tokenizer lacks %s (extend it with extend_tokenizer.py)" % p)
            self.time[i] = k
        self.spk_id = {k: i for i, k in self.spk.items()}
        self.time_id = {k: i for i, k in self.time.items()}
        n = sp.get_piece_size()
        self.special = {i for i in range(n) if sp.id_to_piece(i).startswith("<") and sp.id_to_piece(i).endswith(">")}

    def speaker_ids(self, device=None):
        """The speaker tokens' ids, a tensor."""
        import torch
        return torch.tensor(sorted(self.spk_id.values()), dtype=torch.long, device=device)

    def stream_ids(self, pieces):
        """pieces: [(speaker index, start tenths, end tenths, text)] -> ids"""
        ids = []
        for k, s, e, text in pieces:
            ids += [self.spk_id[k], self.time_id[s]] + self.sp.encode(text) + [self.time_id[e]]
        return ids

    def toks(self, ids):
        """ids -> [(kind, value, word_start)] as the engine classifies
        them (classify)."""
        return [classify(self.sp.id_to_piece(int(t)) if 0 <= int(t) < self.sp.get_piece_size() else "",
                         self.sp.is_byte(int(t)) if 0 <= int(t) < self.sp.get_piece_size() else False)
                for t in ids]

    def parse(self, ids, window_tenths=None):
        """Token stream -> [(speaker, start s, end s, text)] by the
        engine's rules (parse_tokens; docs/DIARIZE.md): a window of
        window_tenths (None: 30 s); a segment whose text decodes to
        nothing is none."""
        ids = [int(t) for t in ids]
        window = MAX_WINDOW_S + 0.1 if window_tenths is None else window_tenths / 10.0
        out = []
        for g in parse_tokens(self.toks(ids), window):
            text = self.sp.decode([ids[i] for i in g["pos"]]).strip()
            if text:
                out.append((g["speaker"], round(g["start"], 6), round(g["end"], 6), text))
        return out


# ------------------------------------------------ the engine's stream rules
#
# A port of src/timing/diarize.c (hv_diarize_classify, hv_diarize_parse),
# so that figures taken here and through the engine mean the same thing;
# tests/programs/test_diarize_tools.py runs it on test_diarize.c's streams.

TEXT, SPEAKER, TIME = 0, 1, 2
NO_START, NO_END, BACKWARDS, PAST_END, NO_SPEAKER, MID_WORD = 1, 2, 4, 8, 16, 32
_SPK = re.compile(r"<\|spltoken([0-9]{1,7})\|>\Z")
_TIME = re.compile(r"<\|t:([0-9]{1,7}(?:\.[0-9]{1,7})?)\|>\Z")


def classify(piece, is_byte=False):
    """(kind, value, word_start) of a piece: <|spltokenK|> (K < 8) a
    speaker, <|t:S|> or <|t:S.S|> a time, anything else text that starts a
    word unless it is a byte piece or a normal piece without a leading
    U+2581 (a control piece, "<...>", starts one)."""
    m = _SPK.match(piece)
    if m and int(m.group(1)) < N_SPEAKERS:
        return (SPEAKER, int(m.group(1)), True)
    m = _TIME.match(piece)
    if m and len(m.group(1).replace(".", "")) <= 7:
        return (TIME, float(m.group(1)), True)
    if is_byte:
        return (TEXT, 0.0, False)
    if piece.startswith("<") and piece.endswith(">"):
        return (TEXT, 0.0, True)
    return (TEXT, 0.0, piece.startswith("\u2581"))


def parse_tokens(toks, window):
    """toks: [(kind, value, word_start)] of a window of `window` seconds ->
    [{"speaker", "start", "end", "pos" (the text tokens' positions),
    "repairs" (bits)}], the engine's hv_diarize_parse."""
    segs, window = [], max(window, 0.0)
    speaker = first_speaker = cur = -1
    has_pending, pending, pending_rep, last = False, 0.0, 0, 0.0
    for i, (kind, value, _) in enumerate(toks):
        if kind == TIME:
            v, rep = value, 0
            if v > window:
                v, rep = window, rep | PAST_END
            if v < last:
                v, rep = last, rep | BACKWARDS
            last = v
            if cur >= 0:
                segs[cur]["end"] = v
                segs[cur]["repairs"] = (segs[cur]["repairs"] & ~NO_END) | rep
                cur = -1
            else:
                has_pending, pending, pending_rep = True, v, rep
        elif kind == SPEAKER:
            cur, has_pending, pending_rep = -1, False, 0
            speaker = int(value)
            if first_speaker < 0:
                first_speaker = speaker
        else:
            if cur < 0:
                segs.append({"speaker": speaker, "start": pending if has_pending else 0.0, "end": 0.0,
                             "pos": [], "repairs": NO_END | (pending_rep if has_pending else NO_START)
                             | (NO_SPEAKER if speaker < 0 else 0)})
                cur = len(segs) - 1
                has_pending, pending_rep = False, 0
            segs[cur]["pos"].append(i)
    for g in segs:
        if g["speaker"] >= 0:
            break
        g["speaker"] = first_speaker
    k = 1                                   # word-continuing pieces join the segment before
    while k < len(segs):
        g, m = segs[k], 0
        while m < len(g["pos"]) and not toks[g["pos"][m]][2]:
            m += 1
        if m:
            segs[k - 1]["pos"] += g["pos"][:m]
            segs[k - 1]["repairs"] |= MID_WORD
            g["pos"] = g["pos"][m:]
            if not g["pos"]:
                del segs[k]
                continue
        k += 1
    for k, g in enumerate(segs):            # missing times
        if g["repairs"] & NO_START:
            g["start"] = segs[k - 1]["end"] if k else 0.0
        if not g["repairs"] & NO_END:
            continue
        g["end"] = window
        for o in segs[k + 1:]:
            if not o["repairs"] & NO_START:
                g["end"] = o["start"]
                break
            if not o["repairs"] & NO_END:
                g["end"] = o["end"]
                break
        g["end"] = max(g["end"], g["start"])
    return segs


# ------------------------------------------- the engine's speaker linking
#
# A port of src/timing/speaker_link.c and diarize_stitch.c's word times:
# the rules of docs/DIARIZE.md "Any length".

LINK_TOL_S = 1.5
LINK_MIN_TIME_S = 0.5
VOICE_MARGIN = 0.05           # speaker_link.c's: how much closer another label's voice undoes a link
DIARIZE_VOICE = 0.8           # include/hviske.h's HV_DEFAULT_DIARIZE_VOICE
VOICE_MIN_S = 1.0             # src/timing/voice.h's HV_VOICE_MIN_S


def link_norm(text):
    """A word as linking compares it (hv_link_norm): ASCII letters and
    digits lower-cased, other ASCII dropped, other bytes kept (63 at most)."""
    out = bytearray()
    for c in text.encode("utf-8"):
        if 65 <= c <= 90:
            c += 32
        if c < 0x80 and not (97 <= c <= 122 or 48 <= c <= 57):
            continue
        out.append(c)
    return bytes(out[:63])


def _assign(w, rows, cols, total=False):
    """The one-to-one pairs (row, col) with w[row][col] > 0 whose sum is
    largest (exact, over at most 8 columns; on a tie a row stays unlinked,
    else the lowest column), as the engine's assign(); with total, (the
    pairs, their sum)."""
    rows, cols = list(rows), list(cols)
    memo = {}

    def best(r, used):
        if r == len(rows):
            return 0.0
        key = (r, used)
        if key not in memo:
            b = best(r + 1, used)
            for j, c in enumerate(cols):
                if not used >> j & 1 and w.get((rows[r], c), 0) > 0:
                    b = max(b, w[(rows[r], c)] + best(r + 1, used | 1 << j))
            memo[key] = b
        return memo[key]

    pairs, used = [], 0
    for r in range(len(rows)):
        if best(r, used) == best(r + 1, used):
            continue
        for j, c in enumerate(cols):
            x = w.get((rows[r], c), 0)
            if not used >> j & 1 and x > 0 and x + best(r + 1, used | 1 << j) == best(r, used):
                pairs.append((rows[r], c))
                used |= 1 << j
                break
    return (pairs, best(0, 0)) if total else pairs


PITCH_MIN_HZ, PITCH_MAX_HZ = 60.0, 420.0   # src/audio/pitch.h's HV_PITCH_MIN_HZ, _MAX_HZ
PITCH_VOICED, PITCH_OCTAVE_COST = 0.45, 0.02   # and HV_PITCH_VOICED, HV_PITCH_OCTAVE_COST
PITCH_RATE, PITCH_FRAME = 4000, 160        # and HV_PITCH_RATE, HV_PITCH_FRAME
PITCH_BINS, PITCH_SPREAD, PITCH_WEIGHT = 35, 4, 0.5   # src/timing/voice.h's HV_VOICE_PITCH_*


def pitch_track(samples, n_frames, sample_rate=16000, hop=160):
    """The engine's hv_pitch_track (src/audio/pitch.c): f0 [n_frames] in
    Hz (0: unvoiced) of the frames centred at t * hop. The engine resamples
    to 4 kHz with soxr, this with a windowed-sinc low-pass (a pass band to
    1.8 kHz as soxr's): the tracks agree within a semitone on most frames."""
    import numpy as np
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    f0 = np.zeros(n_frames)
    if n_frames <= 0 or not len(x):
        return f0
    step = sample_rate // PITCH_RATE
    n = np.arange(-8 * step, 8 * step + 1)
    cut = 1800.0 / sample_rate
    h = np.sinc(2 * cut * n) * 2 * cut * np.hanning(len(n) + 2)[1:-1]
    y = np.convolve(x, h / h.sum(), mode="same")[::step]
    w = 0.5 - 0.5 * np.cos(2 * np.pi * (np.arange(PITCH_FRAME) + 1) / (PITCH_FRAME + 1))
    rw = np.array([w[:PITCH_FRAME - k] @ w[k:] for k in range(PITCH_FRAME)])
    rw /= rw[0]
    yp = np.pad(y, (PITCH_FRAME // 2, PITCH_FRAME // 2 + PITCH_FRAME))
    c = np.rint(np.arange(n_frames) * hop * PITCH_RATE / sample_rate).astype(int)
    F = yp[c[:, None] + np.arange(PITCH_FRAME)[None, :]] * w
    R = np.fft.irfft(np.abs(np.fft.rfft(F, 256, axis=1)) ** 2, 256, axis=1)[:, :PITCH_FRAME]
    ok = R[:, 0] > 0
    Rn = R / np.where(ok, R[:, 0], 1)[:, None] / rw
    lag0, lag1 = int(np.ceil(PITCH_RATE / PITCH_MAX_HZ)), int(np.floor(PITCH_RATE / PITCH_MIN_HZ))
    best = np.full(n_frames, -np.inf)
    peak, lag = np.zeros(n_frames), np.zeros(n_frames)
    for l in range(lag0, lag1 + 1):
        a, b, c = Rn[:, l - 1], Rn[:, l], Rn[:, l + 1]
        local = (b >= a) & (b >= c)    # there |dl| <= 0.5
        den = np.where(local, a - 2 * b + c, -1)
        with np.errstate(divide="ignore", invalid="ignore"):   # den 0: not taken
            dl = np.where(den < 0, 0.5 * (a - c) / den, 0.0)
        top = b - 0.25 * (a - c) * dl
        score = top - PITCH_OCTAVE_COST * np.log2((l + np.where(local, dl, 0)) * PITCH_MIN_HZ / PITCH_RATE)
        take = local & (score > best)
        best[take], peak[take], lag[take] = score[take], top[take], l + dl[take]
    v = ok & (lag > 0) & (peak >= PITCH_VOICED)
    f0[v] = PITCH_RATE / lag[v]
    return f0


def voice_signature(logmel, spans, frame_s=0.01, f0=None):
    """The engine's hv_voice_signature (src/timing/voice.c): logmel [T, M]
    (the raw log-mel of a window), f0 [T] (pitch_track's, or None), spans
    [(start, end)] window seconds of one speaker's turns -> (unit vector
    [2 M + PITCH_BINS] or None, seconds)."""
    import numpy as np
    T = len(logmel)
    mask = np.zeros(T, dtype=bool)
    for s, e in spans:
        a, b = int(np.clip(np.floor(s / frame_s), 0, T)), int(np.clip(np.floor(e / frame_s), 0, T))
        mask[a:b] = True
    n = int(mask.sum())
    if n == 0 or n < int(np.ceil(VOICE_MIN_S / frame_s - 1e-9)):
        return None, n * frame_s
    frames = np.asarray(logmel, dtype=np.float64)[mask]
    level = frames.mean(1)
    used = level >= np.median(level)
    sp = frames[used]
    mean = sp.mean(0)
    v = np.concatenate([mean - mean.mean(), sp.std(0)])
    v -= v.mean()
    norm = np.linalg.norm(v)
    if not norm > 0:
        return None, n * frame_s
    h = np.zeros(PITCH_BINS)
    if f0 is not None:
        p = np.asarray(f0, dtype=np.float64)[mask][used]
        for s in 12 * np.log2(p[p > 0] / PITCH_MIN_HZ):
            b = np.arange(max(int(np.ceil(s - PITCH_SPREAD)), 0), min(int(np.floor(s + PITCH_SPREAD)), PITCH_BINS - 1) + 1)
            h[b] += np.exp(-0.5 * (s - b) ** 2)
        if np.linalg.norm(h) > 0:
            h *= PITCH_WEIGHT / np.linalg.norm(h)
    v = np.concatenate([v / norm, h])
    return v / np.linalg.norm(v), n * frame_s


def _cosine(x, y):
    import numpy as np
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    return float(x @ y) / (nx * ny) if nx > 0 and ny > 0 else -1.0


def _voice_veto(m, how, voice):
    """Rule 4's first step (the engine's voice_veto): a link by words or
    time is undone where another label's voice is over the threshold with
    the speaker's and its own label's is not, or is VOICE_MARGIN less."""
    sig_b, sig_labels, threshold = voice
    if not threshold < 1:
        return
    for k in sorted(m):
        g, y = m[k], sig_b.get(k)
        if how[k] not in ("words", "time") or y is None or sig_labels.get(g) is None:
            continue
        own = _cosine(sig_labels[g], y)
        for h in sorted(sig_labels):
            x = sig_labels[h]
            if h == g or x is None:
                continue
            c = _cosine(x, y)
            if c > threshold and (own <= threshold or c >= own + VOICE_MARGIN):
                del m[k], how[k]
                break


def _voice_link(m, how, order, voice):
    """Rule 4 of link_speakers: voice = (the later window's signatures {K:
    vector}, the labels' {label: vector, any length}, the threshold)."""
    sig_b, sig_labels, threshold = voice
    left = sorted(k for k in order if k not in m and sig_b.get(k) is not None)
    if not left or not threshold < 1:
        return
    w = {}
    for g in sorted(sig_labels):
        x = sig_labels[g]
        if x is None or g in m.values():
            continue
        for k in left:
            c = _cosine(x, sig_b[k])
            if c > threshold:
                w[(g, k)] = c - threshold
    rows = sorted({g for g, _ in w})
    pairs, best = _assign(w, rows, left, total=True)
    for g, k in pairs:
        # a pair that another optimum leaves out is a tie: nobody links
        if _assign({**w, (g, k): 0}, rows, left, total=True)[1] >= best - 1e-12:
            continue
        m[k], how[k] = g, "voice"


HEAL_APART_STRICTNESS = 2      # speaker_link.h's HV_HEAL_APART_STRICTNESS
HEAL_SHARED_STRICTNESS = 3     # and HV_HEAL_SHARED_STRICTNESS


def heal_labels(n, voices, share, threshold):
    """The engine's hv_speaker_heal from the identity: labels 0..n-1 that
    are one person merged. voices: {label: summed signature}, share: the
    set of (a, b) label pairs given in one window (both orders), threshold:
    diarize_voice. Greedily the two groups whose summed signatures have the
    largest cosine merge while it is above 1 - (1 - threshold) /
    HEAL_APART_STRICTNESS (groups that never share a window) or /
    HEAL_SHARED_STRICTNESS (groups that do); returns group[label], each
    group's smallest label."""
    import numpy as np
    group = list(range(n))
    if n < 2 or not threshold < 1:
        return group
    apart = 1 - (1 - threshold) / HEAL_APART_STRICTNESS
    shared_ = 1 - (1 - threshold) / HEAL_SHARED_STRICTNESS
    sums = {g: np.array(v, dtype=np.float64) for g, v in voices.items() if g < n and v is not None}
    shared = {(a, b) for a, b in share if a < n and b < n}
    while True:
        best, pair = -1.0, None
        for a in sorted(sums):
            for b in sorted(sums):
                if b <= a:
                    continue
                c = _cosine(sums[a], sums[b])
                if c > (shared_ if (a, b) in shared else apart) and c > best:
                    best, pair = c, (a, b)
        if pair is None:
            return group
        a, b = pair
        group = [a if g == b else g for g in group]
        sums[a] = sums[a] + sums.pop(b)
        for x in range(n):
            if (b, x) in shared:
                shared |= {(a, x), (x, a)}


def _claim(sums, own, c_own, x, threshold):
    """Rule 7's claim (the engine's claim): the label of sums {label:
    vector}, not own, whose cosine with x is the largest, where that is
    over threshold and c_own (own's) is not, or is VOICE_MARGIN less;
    else None."""
    best, to = -1.0, None
    for g in sorted(sums):
        if g != own:
            c = _cosine(sums[g], x)
            if c > best:
                best, to = c, g
    if to is not None and best > threshold and (c_own <= threshold or best >= c_own + VOICE_MARGIN):
        return to
    return None


def turn_voice_labels(labels, sigs, group, voices, threshold):
    """The engine's hv_speaker_turn_voice (rule 7): labels, one turn's
    merged label each (a group of heal_labels' group), sigs each turn's own
    signature (or None), voices {label: summed signature}. A turn moves to
    the group whose summed signature has the largest cosine with its own
    where that is over threshold and its own group's is not, or is
    VOICE_MARGIN less; returns the new labels."""
    import numpy as np
    labels = list(labels)
    if not threshold < 1:
        return labels
    sums = {}
    for lab, v in voices.items():
        if v is not None and 0 <= lab < len(group) and 0 <= group[lab] < len(group):
            sums[group[lab]] = sums.get(group[lab], 0) + np.asarray(v, dtype=np.float64)
    for t, (own, x) in enumerate(zip(labels, sigs)):
        if x is None or own not in sums:
            continue
        to = _claim(sums, own, _cosine(sums[own], x), x, threshold)
        if to is not None:
            labels[t] = to
    return labels


SPLIT_COSINE = 0.9             # speaker_link.h's HV_SPLIT_COSINE
SPLIT_MIN_S = 3.0              # and HV_SPLIT_MIN_S
REGROUP_ROUNDS = 5             # and HV_REGROUP_ROUNDS


def regroup_labels(labels, sigs, threshold, next_label):
    """The engine's hv_speaker_regroup (rule 8, the recording's end):
    labels, one per segment of the recording (-1: none), sigs each
    segment's own (unit vector or None, seconds). A label whose segments
    form two halves (spherical 2-means, seeded with the segment least like
    the label's centroid and the one least like that) with a cosine under
    SPLIT_COSINE, each of at least SPLIT_MIN_S, is two labels (the second
    seed's half takes next_label, which counts up); then each segment moves to the label
    whose centroid (the seconds-weighted sum of its segments' signatures,
    its own left out) claims it as rule 7 does, all at once, for at most
    REGROUP_ROUNDS rounds; then the labels merge greedily while two
    centroids' cosine is over 1 - (1 - threshold) /
    HEAL_SHARED_STRICTNESS (into the smaller). Returns the new labels."""
    import numpy as np
    labels = list(labels)
    if not threshold < 1:
        return labels
    V = [None if v is None else np.asarray(v, dtype=np.float64) for v, _ in sigs]
    S = [s for _, s in sigs]
    for lab in sorted({x for x in labels if x >= 0}):
        idx = [i for i, x in enumerate(labels) if x == lab and V[i] is not None]
        if len(idx) < 2:
            continue
        c = sum(S[i] * V[i] for i in idx)
        a = min(idx, key=lambda i: float(V[i] @ c))
        b = min(idx, key=lambda i: float(V[i] @ V[a]))
        if a == b:
            continue
        ca, cb, side = V[a], V[b], None
        for _ in range(20):
            new = [float(V[i] @ ca) < float(V[i] @ cb) for i in idx]
            if not any(new) or all(new):
                side = None
                break
            if new == side:
                break
            side = new
            ca = sum(S[i] * V[i] for i, x in zip(idx, side) if not x)
            cb = sum(S[i] * V[i] for i, x in zip(idx, side) if x)
            na, nb = np.linalg.norm(ca), np.linalg.norm(cb)
            if na == 0 or nb == 0:
                side = None
                break
            ca, cb = ca / na, cb / nb
        if side is None:
            continue
        sa = sum(S[i] for i, x in zip(idx, side) if not x)
        sb = sum(S[i] for i, x in zip(idx, side) if x)
        if _cosine(ca, cb) < SPLIT_COSINE and min(sa, sb) >= SPLIT_MIN_S:
            for i, x in zip(idx, side):
                if x:
                    labels[i] = next_label
            next_label += 1

    def centroids():
        cen = {}
        for x, v, s in zip(labels, V, S):
            if v is not None and x >= 0:
                cen[x] = cen.get(x, 0) + s * v
        return cen

    for _ in range(REGROUP_ROUNDS):
        cen, new = centroids(), list(labels)
        for i, (x, v, s) in enumerate(zip(labels, V, S)):
            if v is None or x < 0:
                continue
            to = _claim(cen, x, _cosine(cen[x] - s * v, v), v, threshold)
            if to is not None:
                new[i] = to
        if new == labels:
            break
        labels = new
    merge = 1 - (1 - threshold) / HEAL_SHARED_STRICTNESS
    while True:
        cen, best, pair = centroids(), merge, None
        for a in sorted(cen):
            for b in sorted(cen):
                if a < b and _cosine(cen[a], cen[b]) > best:
                    best, pair = _cosine(cen[a], cen[b]), (a, b)
        if pair is None:
            return labels
        labels = [pair[0] if x == pair[1] else x for x in labels]


def link_speakers(a, b, ta, tb, order, last_label, next_label, voice=None):
    """The engine's hv_speaker_link. a: the earlier window's overlap words
    [(norm text, time, label)] in time order, b: the later window's
    [(norm text, time, K)], ta/tb: their turns in the overlap [(speaker,
    start, end)], order: the later window's speakers in the order they
    first speak, last_label: the label of the last segment before it
    (None: none), next_label(): a new label, voice: rule 4's (the later
    window's signatures {K: vector}, the labels' {label: vector}, the
    threshold) or None. Returns ({K: label}, {K: rule}), rules "words",
    "time", "adjacent", "voice", "new"."""
    rows = []

    def row(g):
        if g in rows:
            return True
        if len(rows) == N_SPEAKERS:
            return False
        rows.append(g)
        return True

    na, nb = min(len(a), 1024), min(len(b), 1024)

    def same(i, j):
        return bool(a[i][0]) and a[i][0] == b[j][0] and abs(a[i][1] - b[j][1]) <= LINK_TOL_S

    L = [[0] * (nb + 1) for _ in range(na + 1)]
    for i in range(na - 1, -1, -1):
        for j in range(nb - 1, -1, -1):
            L[i][j] = max(L[i + 1][j], L[i][j + 1], 1 + L[i + 1][j + 1] if same(i, j) else 0)
    votes, i, j = {}, 0, 0
    while i < na and j < nb:
        if same(i, j) and L[i][j] == 1 + L[i + 1][j + 1]:
            if row(a[i][2]):
                votes[(a[i][2], b[j][2])] = votes.get((a[i][2], b[j][2]), 0) + 1
            i, j = i + 1, j + 1
        elif L[i + 1][j] >= L[i][j + 1]:
            i += 1
        else:
            j += 1
    present = [k for k in range(N_SPEAKERS) if k in order]
    m, how = {}, {}
    for g, k in _assign(votes, list(rows), present):
        m[k], how[k] = g, "words"
    secs = {}
    for s, x0, x1 in ta:
        for k, y0, y1 in tb:
            d = min(x1, y1) - max(x0, y0)
            if row(s) and d > 0:
                secs[(s, k)] = secs.get((s, k), 0) + d
    secs = {key: v for key, v in secs.items() if v >= LINK_MIN_TIME_S}
    for g, k in _assign(secs, [r for r in rows if r not in m.values()], [k for k in present if k not in m]):
        m[k], how[k] = g, "time"
    if not m and not ta and not tb and order and last_label is not None:
        m[order[0]], how[order[0]] = last_label, "adjacent"
    if voice is not None:
        _voice_veto(m, how, voice)
        _voice_link(m, how, order, voice)
    for k in order:
        if k not in m:
            m[k], how[k] = next_label(), "new"
    return m, how


def timed_words(segs, toks, lens, decode, to_input):
    """The engine's words of a window (diarize_stitch.c): each segment of
    parse_tokens split at word starts (toks), each word at the middle of
    its share of the segment by its pieces' byte lengths (lens[pos]).
    decode(positions) -> text; to_input(t, end) the window's seconds on
    the input. Returns [(time, segment index, positions, norm text)]."""
    out = []
    for k, g in enumerate(segs):
        pos = g["pos"]
        total, before, j = sum(lens[p] for p in pos), 0, 0
        while j < len(pos):
            j1 = j + 1
            while j1 < len(pos) and not toks[pos[j1]][2]:
                j1 += 1
            n = sum(lens[p] for p in pos[j:j1])
            f = (before + n / 2) / total if total > 0 else 0.5
            out.append((to_input(g["start"] + (g["end"] - g["start"]) * f, False), k, pos[j:j1],
                        link_norm(decode(pos[j:j1]))))
            before += n
            j = j1
    return out


def window_pieces(units, w0, w1, partial=False):
    """units: [(speaker id, start sample, end sample, text)] of a dialogue
    whose boundaries lie on the 100 ms grid (make_dialogue); the units
    inside [w0, w1) (grid points too) -> the window's pieces [(speaker
    index by first appearance, start tenths, end tenths, text)].
    partial: a unit the window's edge cuts keeps the words that lie
    inside it (each word's middle placed by spreading the unit's time over
    its words by their length), its time clipped to the window; without
    it such a unit is left out."""
    grid = 1600
    order, pieces = {}, []
    for spk, a, b, text in units:
        if b <= w0 or a >= w1:
            continue
        if a < w0 or b > w1:
            if not partial:
                continue
            text = " ".join(_words_inside(text, a, b, w0, w1))
            if not text:
                continue
            a, b = max(a, w0), min(b, w1)
        k = order.setdefault(spk, len(order))
        s, e = (a - w0) // grid, -((w0 - b) // grid)
        if pieces and pieces[-1][0] == k:
            pieces[-1] = (k, pieces[-1][1], e, pieces[-1][3] + " " + text)
        else:
            pieces.append((k, s, e, text))
    return pieces


def _words_inside(text, a, b, w0, w1):
    """The words of a unit spoken over [a, b) whose middles lie in [w0, w1):
    each word gets the unit's time in proportion to its characters plus one
    for the gap after it."""
    ws = text.split()
    total = sum(len(w) + 1 for w in ws)
    out, c = [], 0
    for w in ws:
        mid = a + (b - a) * (c + len(w) / 2) / total
        c += len(w) + 1
        if w0 <= mid < w1:
            out.append(w)
    return out


# ----------------------------------------------------------------- measures

def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
        prev = cur
    return prev[len(b)]


def words(text):
    return textgen.norm(text).split()


def hungarian(cost):
    """Minimum-cost assignment of a square matrix (list of lists): returns
    {row: column}.  The O(n^3) potentials method (Kuhn-Munkres)."""
    n = len(cost)
    inf = float("inf")
    u, v, p, way = [0.0] * (n + 1), [0.0] * (n + 1), [0] * (n + 1), [0] * (n + 1)
    for i in range(1, n + 1):
        p[0], j0 = i, 0
        minv, used = [inf] * (n + 1), [False] * (n + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            for j in range(1, n + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(n + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    return {p[j] - 1: j - 1 for j in range(1, n + 1)}


def best_mapping(score, refs, hyps):
    """One-to-one map hyp label -> ref label maximising the summed
    score(ref, hyp) >= 0 (hyp labels left over map to nothing)."""
    refs, hyps = list(refs), list(hyps)
    n = max(len(refs), len(hyps))
    if n == 0:
        return {}
    cost = [[-(score(refs[c], hyps[r]) if r < len(hyps) and c < len(refs) else 0) for c in range(n)]
            for r in range(n)]
    a = hungarian(cost)
    return {hyps[r]: refs[c] for r, c in a.items() if r < len(hyps) and c < len(refs)}


def der(ref, hyp, collar=0.25, step=0.01):
    """ref, hyp: [(label, start s, end s)].  Returns (der, detail dict) with
    the scored reference speech, missed, false alarm and confusion seconds
    (10 ms frames; frames within +-collar of a reference boundary are not
    scored; the speaker mapping maximises the jointly spoken time)."""
    end = max([e for _, _, e in ref] + [e for _, _, e in hyp] + [0.0])
    n = int(round(end / step)) + 1

    def frames(segs):
        out = [set() for _ in range(n)]
        for lab, s, e in segs:
            for f in range(int(round(s / step)), min(n, int(round(e / step)))):
                out[f].add(lab)
        return out

    R, H = frames(ref), frames(hyp)
    scored = [True] * n
    c = int(round(collar / step))
    for _, s, e in ref:
        for b in (int(round(s / step)), int(round(e / step))):
            for f in range(max(0, b - c), min(n, b + c)):
                scored[f] = False
    joint = {}
    for f in range(n):
        if scored[f]:
            for r in R[f]:
                for h in H[f]:
                    joint[(r, h)] = joint.get((r, h), 0) + 1
    rl = sorted({lab for lab, _, _ in ref}, key=str)
    hl = sorted({lab for lab, _, _ in hyp}, key=str)
    m = best_mapping(lambda r, h: joint.get((r, h), 0), rl, hl)
    tot = miss = fa = conf = 0
    for f in range(n):
        if not scored[f]:
            continue
        nr, nh = len(R[f]), len(H[f])
        mapped = sum(1 for h in H[f] if m.get(h) in R[f])
        tot += nr
        miss += max(0, nr - nh)
        fa += max(0, nh - nr)
        conf += min(nr, nh) - mapped
    d = {"scored": tot * step, "missed": miss * step, "false_alarm": fa * step, "confusion": conf * step,
         "mapping": m}
    return (miss + fa + conf) / max(tot, 1), d


def speaker_attributed_wer(ref, hyp):
    """ref, hyp: [(label, start, end, text)].  cpWER: each speaker's words
    in time order, the speaker mapping with the fewest errors, unmatched
    speakers' words all errors.  Returns (errors, reference words, map)."""
    def per_speaker(segs):
        out = {}
        for lab, s, e, t in sorted(segs, key=lambda x: x[1]):
            out.setdefault(lab, []).extend(words(t))
        return out
    R, H = per_speaker(ref), per_speaker(hyp)
    cost = {}
    for r in R:
        for h in H:
            cost[(r, h)] = len(R[r]) + len(H[h]) - edit_distance(R[r], H[h])   # saved errors vs. unmatched
    m = best_mapping(lambda r, h: cost[(r, h)], list(R), list(H))
    err = 0
    for r in R:
        hs = [h for h, rr in m.items() if rr == r]
        err += edit_distance(R[r], H[hs[0]]) if hs else len(R[r])
    for h in H:
        if h not in m:
            err += len(H[h])
    return err, sum(len(v) for v in R.values()), m


def plain_wer(ref, hyp):
    """Words of all segments in time order, speakers ignored: (errors, ref words)."""
    r = [w for seg in sorted(ref, key=lambda x: x[1]) for w in words(seg[3])]
    h = [w for seg in sorted(hyp, key=lambda x: x[1]) for w in words(seg[3])]
    return edit_distance(r, h), len(r)


def turns(segs, join_gap=None):
    """Consecutive segments of one speaker merged into turns."""
    out = []
    for lab, s, e, t in sorted(segs, key=lambda x: x[1]):
        if out and out[-1][0] == lab and (join_gap is None or s - out[-1][2] <= join_gap):
            out[-1] = (lab, out[-1][1], max(e, out[-1][2]), out[-1][3] + " " + t)
        else:
            out.append((lab, s, e, t))
    return out


def turn_start_errors(ref, hyp, mapping):
    """For every reference turn, the distance to the nearest hypothesis turn start of the mapped speaker;
    None where that speaker has no turn."""
    rt, ht = turns(ref), turns(hyp)
    inv = {}
    for h, r in mapping.items():
        inv.setdefault(r, []).append(h)
    out = []
    for lab, s, _, _ in rt:
        cands = [hs for hl, hs, _, _ in ht if hl in inv.get(lab, [])]
        out.append(min(abs(c - s) for c in cands) if cands else None)
    return out
