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

    def stream_ids(self, pieces):
        """pieces: [(speaker index, start tenths, end tenths, text)] -> ids"""
        ids = []
        for k, s, e, text in pieces:
            ids += [self.spk_id[k], self.time_id[s]] + self.sp.encode(text) + [self.time_id[e]]
        return ids

    def parse(self, ids, window_tenths=None):
        """Token stream -> [(speaker, start s, end s, text)].  Repairs, in
        this order: text before any speaker token belongs to speaker 0; a
        segment without a start time starts where the previous one ended
        (0 for the first), and a time token after text without a start
        time is its end; a time token after a segment's end time starts a
        new segment of the same speaker; a missing end time is the next
        segment's start (the window's end, or the start, for the last);
        an end before the start is set to the start.  Segments without
        text are dropped first (their times move nothing)."""
        segs = []
        cur = None

        def close():
            if cur is not None:
                segs.append(cur)

        def new(spk):
            return {"spk": spk, "start": None, "end": None, "ids": []}

        for t in ids:
            t = int(t)
            if t in self.spk:
                close()
                cur = new(self.spk[t])
            elif t in self.time:
                v = self.time[t]
                if cur is None:
                    cur = new(0)
                if cur["start"] is None and not cur["ids"]:
                    cur["start"] = v
                elif cur["end"] is None:        # (text without a start time: this is its end)
                    cur["end"] = v
                else:
                    close()
                    spk = cur["spk"]
                    cur = new(spk)
                    cur["start"] = v
            elif t in self.special:
                continue
            else:
                if cur is None:
                    cur = new(0)
                elif cur["end"] is not None:       # text after the end time: a new segment
                    close()
                    cur = dict(new(cur["spk"]), start=cur["end"])
                cur["ids"].append(t)
        close()
        segs = [x for x in segs if x["ids"]]
        out = []
        prev_end = 0
        for j, s in enumerate(segs):
            start = s["start"] if s["start"] is not None else prev_end
            end = s["end"]
            if end is None:
                nxt = next((x["start"] for x in segs[j + 1:] if x["start"] is not None), None)
                end = nxt if nxt is not None else (window_tenths if window_tenths is not None else start)
            end = max(end, start)
            prev_end = end
            text = self.sp.decode(s["ids"]).strip()
            if text:
                out.append((s["spk"], start / 10.0, end / 10.0, text))
        return out


def window_pieces(units, w0, w1):
    """units: [(speaker id, start sample, end sample, text)] of a dialogue
    whose boundaries lie on the 100 ms grid (make_dialogue); the units
    inside [w0, w1) (grid points too) -> the window's pieces [(speaker
    index by first appearance, start tenths, end tenths, text)]."""
    grid = 1600
    order, pieces = {}, []
    for spk, a, b, text in units:
        if a < w0 or b > w1:
            continue
        k = order.setdefault(spk, len(order))
        s, e = (a - w0) // grid, -((w0 - b) // grid)
        if pieces and pieces[-1][0] == k:
            pieces[-1] = (k, pieces[-1][1], e, pieces[-1][3] + " " + text)
        else:
            pieces.append((k, s, e, text))
    return pieces


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
