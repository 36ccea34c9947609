#!/usr/bin/python3
"""Trains the demo model on the data of make_data.py.

  train.py --data build-demo/data --run build-demo/run --export models/demo [--total-steps N] [--resume]

- Joint loss: cross-entropy of the decoder (targets = prompt + text tokens
  + EOS; the loss covers the text tokens and EOS) plus an auxiliary CTC
  loss on the encoder output (head dropped at export).  The first
  --ctc-only-steps steps use the CTC loss alone, on shortest-first batches
  (DEMO-TRAINING.md: without it the decoder ignores the audio).
- AdamW, linear warm-up then cosine decay to 5 % at --total-steps.
- Every --ckpt-min minutes: run/last.pt (resumable with --resume).
- Every --eval-min minutes: greedy WER on the dev set (held-out sentences
  and voices) with the weights as exported (bf16-rounded); a new best is
  saved as run/best.pt and exported to --export (atomically), with a
  model card that reports the greedy WER/CER on the held-out test set.
- --diarize: data of make_diarize_data.py (the speaker/time stream as
  target, the prompt ending in <|timestamp|><|diarize|>); --init grows
  the vocabulary to the extended tokenizer's; dev selection by the
  windows' speaker-attributed WER (README.md, "Diarize demo model").
"""

import argparse
import copy
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export as X  # noqa: E402
import frontend  # noqa: E402
import model as M  # noqa: E402
import diarize  # noqa: E402
import synth  # noqa: E402
import textgen  # noqa: E402

PROMPT = ["<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", "<|da|>", "<|da|>",
          "<|pnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>"]
TEST_SEED = 1234      # evaluate's default held-out set


def log(msg, f=None):
    line = time.strftime("%H:%M:%S ") + msg
    print(line, flush=True)


class Tok:
    def __init__(self, path, diarize_mode=False):
        import sentencepiece as spm
        self.path = path
        self.sp = spm.SentencePieceProcessor(model_file=path)
        self.V = self.sp.get_piece_size()
        self.pad = self.sp.pad_id()
        self.eos = self.sp.piece_to_id("<|endoftext|>")
        self.start = self.sp.piece_to_id("\u2581")
        pieces = diarize.PROMPT if diarize_mode else PROMPT
        self.prompt = [self.start] + [self.sp.piece_to_id(p) for p in pieces]
        assert self.sp.encode("".join(pieces)) == self.prompt
        self.voc = diarize.Vocab(self.sp) if diarize_mode else None
        self.plain_prompt = [self.start] + [self.sp.piece_to_id(p) for p in PROMPT]
        assert len(self.plain_prompt) == len(self.prompt)
        self.special = {i for i in range(self.V) if self.sp.id_to_piece(i).startswith("<")
                        and self.sp.id_to_piece(i).endswith(">")}

    def text_ids(self, text):
        return self.sp.encode(text)

    def decode(self, ids):
        return self.sp.decode([i for i in ids if i not in self.special]).strip()


def load_split(data, split, tok, plain_share=0.0):
    """plain_share (diarize data, training): that share of the windows,
    chosen by a hash of the line, keeps the plain prompt and plain text
    target, so that the diarize model still transcribes without speakers."""
    metas = [json.loads(line) for line in open(os.path.join(data, split + ".jsonl"), encoding="utf-8")]
    shards = {}
    for m in metas:
        if m["shard"] not in shards:
            shards[m["shard"]] = np.fromfile(os.path.join(data, "%s.%d.f16" % (split, m["shard"])),
                                             dtype=np.float16).reshape(-1, 128)
    utts = []
    for j, m in enumerate(metas):
        f = shards[m["shard"]][m["offset"]:m["offset"] + m["T"]]
        u = {"feats": f, "T": m["T"], "text": m["text"], "ids": tok.text_ids(m["text"])}
        if tok.voc is not None:                  # diarize: the target is the stream, CTC the plain text
            if "pieces" not in m:
                raise ValueError("%s/%s.jsonl: no speaker turns (make the data with make_diarize_data.py)"
                                 % (data, split))
            u["pieces"] = [tuple(p) for p in m["pieces"]]
            if random.Random("plain-%s-%d" % (split, j)).random() < plain_share:
                u["prompt"] = tok.plain_prompt
            else:
                u["ctc_ids"], u["ids"] = u["ids"], tok.voc.stream_ids(u["pieces"])
        utts.append(u)
    return utts


def make_test_set(n, seed=TEST_SEED):
    fe = frontend.Frontend()
    utts = []
    for i in range(n):
        x, text, v = synth.make_utterance(seed, "test", i)
        x = np.round(x.astype(np.float64) * 32767.0) / 32768.0
        f, T = fe(x, dither=frontend.DITHER, seed=i, pad=False)
        utts.append({"feats": f.astype(np.float16), "T": T, "text": text})
    return utts


def collate(utts, tok, specaug=None):
    B = len(utts)
    Tmax = max(u["T"] for u in utts) + 1
    Tmax += (-Tmax) % 16
    feats = np.zeros((B, Tmax, 128), dtype=np.float32)
    for b, u in enumerate(utts):
        f = u["feats"].astype(np.float32)
        if specaug is not None:
            f = f.copy()
            rng = specaug
            for _ in range(2):
                w = rng.randint(0, 13)
                s = rng.randint(0, 128 - w)
                f[:, s:s + w] = 0.0
            for _ in range(2):
                w = rng.randint(0, min(20, max(1, u["T"] // 20)) + 1)
                s = rng.randint(0, max(1, u["T"] - w))
                f[s:s + w] = 0.0
        feats[b, :u["T"]] = f
    lens = torch.tensor([u["T"] for u in utts], dtype=torch.long)
    out = {"feats": torch.from_numpy(feats), "lens": lens}
    if "pieces" in utts[0]:
        out["speaker_frames"] = speaker_frames(utts, Tmax)
    if "ids" in utts[0]:
        seqs = [u.get("prompt", tok.prompt) + u["ids"] + [tok.eos] for u in utts]
        n = max(len(s) for s in seqs)
        tgt = torch.full((B, n), tok.pad, dtype=torch.long)
        for b, s in enumerate(seqs):
            tgt[b, :len(s)] = torch.tensor(s)
        labels = tgt[:, 1:].clone()
        labels[labels == tok.pad] = -100
        labels[:, :len(tok.prompt) - 1] = -100       # prompt pieces are given, not predicted
        out["inp"], out["labels"] = tgt[:, :-1], labels
        out["ctc_tgt"] = torch.tensor([t for u in utts for t in u.get("ctc_ids", u["ids"])], dtype=torch.long)
        out["ctc_len"] = torch.tensor([len(u.get("ctc_ids", u["ids"])) for u in utts], dtype=torch.long)
    return out


def speaker_frames(utts, Tmax):
    """The auxiliary speaker head's targets [B, encoder frames]: at each
    encoder frame (8 input frames of 10 ms) the window's speaker K + 1 whose
    turn holds the frame's centre, 0 where nobody speaks, -100 past the
    window."""
    n = M.sub_len(M.sub_len(M.sub_len(Tmax)))
    lab = torch.full((len(utts), n), -100, dtype=torch.long)
    for b, u in enumerate(utts):
        L = M.sub_len(M.sub_len(M.sub_len(u["T"])))
        t = (torch.arange(L, dtype=torch.float64) + 0.5) * 0.8      # tenths of a second
        row = torch.zeros(L, dtype=torch.long)
        for k, s, e, _ in u["pieces"]:
            row[(t >= s) & (t < e)] = k + 1
        lab[b, :L] = row
    return lab


def make_batches(utts, batch_frames, max_bs, seed, epoch, shortest_first=False):
    rng = random.Random("%d-%d" % (seed, epoch))
    order = sorted(range(len(utts)), key=lambda i: (utts[i]["T"] + rng.uniform(0, 40)))
    batches, cur, curmax = [], [], 0
    for i in order:
        T = utts[i]["T"] + 16
        if cur and (max(curmax, T) * (len(cur) + 1) > batch_frames or len(cur) >= max_bs):
            batches.append(cur)
            cur, curmax = [], 0
        cur.append(i)
        curmax = max(curmax, T)
    if cur:
        batches.append(cur)
    if not shortest_first:
        rng.shuffle(batches)
    return batches


def losses(model, batch, tok, ctc_w, ce_on=True, label_smoothing=0.1, speaker_w=0.0, speaker_token_w=1.0):
    x, e, L, pad = model.encode(batch["feats"], batch["lens"])
    if ctc_w == 0 and ce_on:                     # fine-tuning without the auxiliary CTC head
        lp = model.decode(batch["inp"], e, pad)
        labels = batch["labels"].reshape(-1)
        if speaker_token_w != 1.0 and tok.voc is not None:   # a turn's speaker: one token, weighed more
            nll = F.nll_loss(lp.reshape(-1, lp.shape[-1]), labels, ignore_index=-100, reduction="none")
            w = torch.where(torch.isin(labels, tok.voc.speaker_ids(labels.device)),
                            torch.tensor(speaker_token_w, dtype=nll.dtype, device=nll.device),
                            (labels != -100).to(nll.dtype))
            ce = (w * nll).sum() / (labels != -100).sum()
        else:
            ce = F.nll_loss(lp.reshape(-1, lp.shape[-1]), labels, ignore_index=-100)
        m = (batch["labels"] != -100).to(lp.dtype)
        smooth = -(lp.mean(dim=-1) * m).sum() / m.sum()
        loss = (1 - label_smoothing) * ce + label_smoothing * smooth
        if speaker_w > 0 and "speaker_frames" in batch:   # who speaks at each encoder frame
            sf = batch["speaker_frames"][:, :x.shape[1]]
            spk = F.cross_entropy(model.speaker_head(x).reshape(-1, M.SPEAKER_CLASSES), sf.reshape(-1),
                                  ignore_index=-100)
            return loss + speaker_w * spk, spk.detach(), ce.detach()
        return loss, torch.zeros(()), ce.detach()
    lp_ctc = torch.log_softmax(model.ctc_head(x), dim=-1).transpose(0, 1)
    ctc = F.ctc_loss(lp_ctc, batch["ctc_tgt"], L, batch["ctc_len"], blank=tok.pad, reduction="mean",
                     zero_infinity=True)
    if not ce_on:
        return ctc, ctc.detach(), torch.zeros(())
    lp = model.decode(batch["inp"], e, pad)
    ce = F.nll_loss(lp.reshape(-1, lp.shape[-1]), batch["labels"].reshape(-1), ignore_index=-100)
    if label_smoothing > 0:
        m = (batch["labels"] != -100).to(lp.dtype)
        smooth = -(lp.mean(dim=-1) * m).sum() / m.sum()
        loss_ce = (1 - label_smoothing) * ce + label_smoothing * smooth
    else:
        loss_ce = ce
    return (1 - ctc_w) * loss_ce + ctc_w * ctc, ctc.detach(), ce.detach()


def apply_repetition_penalty(scores, seen, penalty):
    """Hugging Face's RepetitionPenaltyLogitsProcessor: every token already
    in the decoder input (prompt included) has its score multiplied by the
    penalty where negative, divided where positive. Greedy search gives it
    the raw logits (transformers' cohere_asr returns the classifier's
    output before log-softmax), so a confident token's positive logit
    shrinks by the factor, not its log-prob near 0 (docs/DECODING.md)."""
    if penalty == 1.0:
        return scores
    pen = torch.where(scores < 0, scores * penalty, scores / penalty)
    return torch.where(seen, pen, scores)


@torch.no_grad()
def greedy(model, utts, tok, bs=64, max_new=None, repetition_penalty=1.0, return_ids=False, prompt=None):
    """Batched greedy decoding (KV cache). max_new default: 12 tokens per
    second of the longest utterance + 8, at most 480 (the decoder's
    positions less the prompt).  prompt: default tok.prompt."""
    model.eval()
    hyps = [None] * len(utts)
    order = sorted(range(len(utts)), key=lambda i: utts[i]["T"])
    for s in range(0, len(order), bs):
        idx = order[s:s + bs]
        batch = to_dev(collate([utts[i] for i in idx], tok), DEV)
        _, e, L, pad = model.encode(batch["feats"], batch["lens"])
        B = len(idx)
        limit = max_new or min(480, model.c["max_seq"] - len(tok.prompt),
                               int(max(utts[i]["T"] for i in idx) / 100 * 12) + 8)
        cross = model.cross_kv(e)
        cache = [None] * len(cross)
        prompt = prompt or tok.prompt
        lp = model.decode_incremental(torch.tensor([prompt] * B, dtype=torch.long, device=DEV), 0, cache,
                                      cross, pad, raw=True)
        pos = len(tok.prompt)
        done = torch.zeros(B, dtype=torch.bool)
        out = [[] for _ in range(B)]
        seen = torch.zeros(B, lp.shape[-1], dtype=torch.bool, device=lp.device)
        seen[:, prompt] = True
        for _ in range(limit):
            nxt = apply_repetition_penalty(lp, seen, repetition_penalty).argmax(-1)
            seen[torch.arange(B, device=lp.device), nxt] = True
            nl = nxt.tolist()
            for b in range(B):
                if not done[b]:
                    if nl[b] == tok.eos:
                        done[b] = True
                    else:
                        out[b].append(nl[b])
            if bool(done.all()):
                break
            lp = model.decode_incremental(nxt[:, None], pos, cache, cross, pad, raw=True)
            pos += 1
        for b, i in enumerate(idx):
            hyps[i] = out[b] if return_ids else tok.decode(out[b])
    return hyps


edit_distance = diarize.edit_distance


def wer_cer(refs, hyps):
    we = wn = ce = cn = 0
    for r, h in zip(refs, hyps):
        r, h = textgen.norm(r), textgen.norm(h)
        we += edit_distance(r.split(), h.split())
        wn += len(r.split())
        ce += edit_distance(list(r), list(h))
        cn += len(r)
    return 100.0 * we / max(wn, 1), 100.0 * ce / max(cn, 1)


@torch.no_grad()
def dev_loss(model, utts, tok, bs=64):
    model.eval()
    tot, n = 0.0, 0
    for s in range(0, len(utts), bs):
        batch = to_dev(collate(utts[s:s + bs], tok), DEV)
        _, e, L, pad = model.encode(batch["feats"], batch["lens"])
        lp = model.decode(batch["inp"], e, pad)
        m = batch["labels"] != -100
        tot += float(F.nll_loss(lp.reshape(-1, lp.shape[-1]), batch["labels"].reshape(-1), ignore_index=-100,
                                reduction="sum"))
        n += int(m.sum())
    return tot / n


DEV = torch.device("cpu")


def to_dev(batch, dev):
    return {k: (v.to(dev) if torch.is_tensor(v) and k != "ctc_len" else v) for k, v in batch.items()}


GROWN = ("transf_decoder._embedding.token_embedding.weight", "log_softmax.mlp.layer0.bias")


def grow_rows(v, n, seed=0):
    """v [V, ...] -> [n, ...]: the new rows are the mean of the existing
    ones (a token the model knows nothing about looks like an average
    token), embedding rows plus a little noise (0.02 of the rows' spread)
    so that new tokens can be told apart from the first step."""
    extra = n - v.shape[0]
    if extra <= 0:
        raise ValueError("cannot grow %d rows to %d" % (v.shape[0], n))
    mean = v.mean(dim=0, keepdim=True).expand(extra, *v.shape[1:]).clone()
    if v.dim() > 1:
        g = torch.Generator().manual_seed(seed)
        mean += 0.02 * v.std() * torch.randn(mean.shape, generator=g)
    return torch.cat([v, mean], dim=0)


def load_exported(model, path):
    """Loads an exported model.safetensors (BF16/F32) into the training
    model; the CTC head (not exported) keeps its initialisation.  Where the
    model's vocabulary is larger (a tokenizer extended by appended pieces,
    extend_tokenizer.py), the embedding (= tied classifier) and the
    classifier bias grow by grow_rows()."""
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    sd = model.state_dict()
    new = {}
    for k, h in header.items():
        if k == "__metadata__" or k not in sd:
            continue
        a, b = h["data_offsets"]
        raw = data[a:b]
        if h["dtype"] == "BF16":
            v = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            v = np.frombuffer(raw, dtype="<f4")
        new[k] = torch.from_numpy(v.reshape(h["shape"]).copy()).to(sd[k].dtype)
        if k in GROWN and new[k].shape[0] < sd[k].shape[0]:
            log("%s: %d rows grown to %d" % (k, new[k].shape[0], sd[k].shape[0]))
            new[k] = grow_rows(new[k], sd[k].shape[0])
        if new[k].shape != sd[k].shape:
            raise ValueError("%s: %s has shape %s, the model %s" % (path, k, list(new[k].shape), list(sd[k].shape)))
    missing = [k for k in sd if k not in new]
    assert all(k.startswith(M.AUX) for k in missing), missing
    model.load_state_dict(new, strict=False)
    return len(new)


def exported_copy(model):
    m = copy.deepcopy(model)
    st = {k: v.to(DEV) for k, v in X.rounded_state(model).items()}
    missing, unexpected = m.load_state_dict(st, strict=False)
    assert all(k.startswith(M.AUX) for k in missing) and not unexpected, (missing, unexpected)
    m.eval()
    return m


def lr_at(step, a, elapsed=None):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if a.time_schedule and elapsed is not None:     # cosine over --max-minutes of wall time
        p = min(1.0, elapsed / (a.max_minutes * 60))
    else:
        p = min(1.0, (step - a.warmup) / max(1, a.total_steps - a.warmup))
    return a.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * p)))


def save(path, obj):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def card_text(info):
    return open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "card.md.in"),
                encoding="utf-8").read().format(**info)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="build-demo/data")
    ap.add_argument("--run", default="build-demo/run")
    ap.add_argument("--export", default="models/demo")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--total-steps", type=int, default=7500)
    ap.add_argument("--max-steps", type=int, default=10 ** 9, help="stop after this step (testing)")
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup", type=int, default=400)
    ap.add_argument("--ctc-only-steps", type=int, default=300)
    ap.add_argument("--ctc-weight", type=float, default=0.3)
    ap.add_argument("--specaug-from", type=int, default=1500)
    ap.add_argument("--batch-frames", type=int, default=9000)
    ap.add_argument("--max-bs", type=int, default=48)
    ap.add_argument("--ckpt-min", type=float, default=5.0)
    ap.add_argument("--eval-min", type=float, default=12.0)
    ap.add_argument("--eval-steps", type=int, default=0, help="also evaluate every N steps (testing)")
    ap.add_argument("--n-test", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads; 1 is faster than 2 on a busy 2-core machine")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--reset-best", action="store_true",
                    help="on resume, forget the best dev WER and the history (after the dev set changed)")
    ap.add_argument("--config", default=None, help="JSON overrides of model.default_config")
    ap.add_argument("--init", default=None,
                    help="start from an exported model directory (its model.safetensors; config must match)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--diarize", action="store_true",
                    help="data of make_diarize_data.py: prompt with <|timestamp|><|diarize|>, targets the speaker "
                         "and time stream; dev selection by speaker-attributed WER of the windows")
    ap.add_argument("--speaker-token-weight", type=float, default=1.0,
                    help="--diarize: the weight of the speaker tokens' cross-entropy (one token per turn) "
                         "relative to the others'")
    ap.add_argument("--speaker-weight", type=float, default=0.0,
                    help="with --diarize: weight of an auxiliary per-frame speaker loss on the encoder output "
                         "(which of the window's speakers, by first appearance, speaks at each frame; "
                         "the head is dropped at export); the log's ctc column shows it")
    ap.add_argument("--plain-share", type=float, default=0.15,
                    help="with --diarize: share of the training windows kept in plain transcription (plain "
                         "prompt, text target)")
    ap.add_argument("--repetition-penalty", type=float, default=None,
                    help="greedy decoding's repetition penalty in evaluation (default 1.2 with --diarize, else 1)")
    ap.add_argument("--eval-first", action="store_true", help="evaluate (and export) before the first step")
    ap.add_argument("--time-schedule", action="store_true",
                    help="cosine decay over --max-minutes of wall time instead of --total-steps")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop (evaluate, export, checkpoint) after this many minutes of wall time")
    a = ap.parse_args()
    global DEV
    DEV = torch.device(a.device)
    t_start = time.time()
    torch.set_num_threads(a.threads)
    if a.time_schedule and a.max_minutes is None:
        ap.error("--time-schedule needs --max-minutes")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    os.makedirs(a.run, exist_ok=True)
    tok = Tok(os.path.join(a.data, "tokenizer.model"), a.diarize)
    rp = a.repetition_penalty if a.repetition_penalty is not None else (1.2 if a.diarize else 1.0)
    t0 = time.time()
    train = load_split(a.data, "train", tok, a.plain_share if a.diarize else 0.0)
    dev = load_split(a.data, "dev", tok)
    diarize_config = dict(X.DIARIZE_CONFIG)
    stats = os.path.join(a.data, "stats.json")
    if a.diarize and os.path.exists(stats):        # the windows' clip length (make_diarize_data --clip-s)
        with open(stats) as f:
            diarize_config["max_audio_clip_s"] = json.load(f).get("clip_s", diarize_config["max_audio_clip_s"])
    hours = sum(u["T"] for u in train) / 100 / 3600
    log("data: %d train utterances (%.2f h), %d dev, loaded in %.1f s" % (len(train), hours, len(dev), time.time() - t0))

    cfg = M.default_config(tok.V)
    if a.config:
        cfg.update(json.loads(a.config))
    torch.manual_seed(a.seed)
    model = M.HviskeModel(cfg)
    if a.init and not a.resume:
        nt = load_exported(model, os.path.join(a.init, "model.safetensors"))
        log("initialised %d tensors from %s" % (nt, a.init))
    model.to(DEV)
    n_params = sum(p.numel() for k, p in model.state_dict().items() if not k.startswith(M.AUX))
    log("model: %.2f M exported parameters, config %s" % (n_params / 1e6, json.dumps(cfg)))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    step, epoch, bpos, best = 0, 0, 0, {"wer": 1e9}
    train_time = 0.0
    history = []
    if a.resume and os.path.exists(os.path.join(a.run, "last.pt")):
        ck = torch.load(os.path.join(a.run, "last.pt"), map_location="cpu")
        cfg = ck["config"]
        model = M.HviskeModel(cfg)
        missing, unexpected = model.load_state_dict(ck["model"], strict=False)
        assert all(k.startswith(M.AUX) for k in missing) and not unexpected, (missing, unexpected)
        model.to(DEV)
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
        if missing:                              # a checkpoint from before an auxiliary head: fresh moments
            log("resume: %s new; the optimizer starts afresh" % ", ".join(missing))
        else:
            opt.load_state_dict(ck["opt"])
        step, epoch, bpos, best = ck["step"], ck["epoch"], ck["bpos"], ck["best"]
        train_time, history = ck.get("train_time", 0.0), ck.get("history", [])
        torch.set_rng_state(ck["torch_rng"])
        log("resumed at step %d (epoch %d, batch %d), best dev WER %.2f" % (step, epoch, bpos, best["wer"]))
        if a.reset_best:
            best, history = {"wer": 1e9}, []
            log("best dev WER and history reset")

    def stop_now():
        return a.max_minutes is not None and time.time() - t_start > a.max_minutes * 60

    test = None
    sa_rng = np.random.RandomState(a.seed * 1000 + step)
    last_ckpt = last_eval = time.time()
    t_log, tr_acc = time.time(), []

    def checkpoint():
        save(os.path.join(a.run, "last.pt"), {
            "config": cfg, "model": model.state_dict(), "opt": opt.state_dict(), "step": step, "epoch": epoch,
            "bpos": bpos, "best": best, "torch_rng": torch.get_rng_state(), "train_time": train_time,
            "history": history, "args": vars(a)})

    def evaluate_and_export_diarize():
        nonlocal best
        te0 = time.time()
        em = exported_copy(model)
        ids = greedy(em, dev, tok, repetition_penalty=rp, return_ids=True)
        sa_err = pl_err = nw = 0
        ders = []
        for u, h in zip(dev, ids):
            ref = [(k, s / 10, e / 10, t) for k, s, e, t in u["pieces"]]
            hyp = tok.voc.parse(h, u["T"] // 10)
            e1, n1, _ = diarize.speaker_attributed_wer(ref, hyp)
            e2, _ = diarize.plain_wer(ref, hyp)
            sa_err, pl_err, nw = sa_err + e1, pl_err + e2, nw + n1
            ders.append(diarize.der([r[:3] for r in ref], [x[:3] for x in hyp])[1])
        sawer, wer = 100.0 * sa_err / max(nw, 1), 100.0 * pl_err / max(nw, 1)
        plain = greedy(em, dev, tok, repetition_penalty=rp, prompt=tok.plain_prompt)
        plain_wer = wer_cer([u["text"] for u in dev], plain)[0]
        sc = sum(d["scored"] for d in ders)
        der = 100.0 * sum(d["missed"] + d["false_alarm"] + d["confusion"] for d in ders) / max(sc, 1e-9)
        dl = dev_loss(em, dev, tok)
        rec = {"step": step, "epoch": epoch, "train_min": round(train_time / 60, 1), "dev_loss": round(dl, 4),
               "dev_wer": round(wer, 2), "dev_sawer": round(sawer, 2), "dev_der": round(der, 2),
               "dev_plain_wer": round(plain_wer, 2)}
        history.append(rec)
        log("eval step %d: dev loss %.4f WER %.2f %% speaker-attributed WER %.2f %% DER %.2f %%, plain prompt "
            "WER %.2f %% (%d windows, %.1f s) | e.g. %r" % (step, dl, wer, sawer, der, plain_wer, len(dev),
                                                           time.time() - te0, tok.sp.decode(ids[0])[:200]))
        if (sawer, dl) < (best["wer"], best.get("loss", 1e9)):
            best = {"wer": sawer, "loss": dl, "step": step}
            save(os.path.join(a.run, "best.pt"), {"config": cfg, "model": model.state_dict(), "step": step,
                                                  "best": best, "history": history})
            if a.export:
                X.write_dir(model, tok.path, a.export, None, dict(X.DIARIZE_GENERATION, repetition_penalty=rp),
                            diarize_config)
                log("exported %s (step %d)" % (a.export, step))
        model.train()

    def evaluate_and_export():
        nonlocal test, best
        if a.diarize:
            return evaluate_and_export_diarize()
        te0 = time.time()
        em = exported_copy(model)
        hyps = greedy(em, dev, tok, repetition_penalty=rp)
        wer, cer = wer_cer([u["text"] for u in dev], hyps)
        dl = dev_loss(em, dev, tok)
        rec = {"step": step, "epoch": epoch, "train_min": round(train_time / 60, 1), "dev_loss": round(dl, 4),
               "dev_wer": round(wer, 2), "dev_cer": round(cer, 2)}
        history.append(rec)
        log("eval step %d: dev loss %.4f WER %.2f %% CER %.2f %% (%.1f s) | e.g. %r -> %r"
            % (step, dl, wer, cer, time.time() - te0, dev[0]["text"], hyps[0]))
        if (wer, dl) < (best["wer"], best.get("loss", 1e9)):
            best = {"wer": wer, "loss": dl, "step": step}
            if test is None:
                test = make_test_set(a.n_test)
            th = greedy(em, test, tok)
            twer, tcer = wer_cer([u["text"] for u in test], th)
            rec["test_wer"], rec["test_cer"] = round(twer, 2), round(tcer, 2)
            log("new best: held-out test (%d utts, seed %d) WER %.2f %% CER %.2f %%" % (len(test), TEST_SEED, twer, tcer))
            info = {"step": step, "epoch": epoch, "train_min": round(train_time / 60), "dev_wer": "%.2f" % wer,
                    "dev_cer": "%.2f" % cer, "test_wer": "%.2f" % twer, "test_cer": "%.2f" % tcer,
                    "n_test": len(test), "n_train": len(train), "train_hours": "%.1f" % hours,
                    "n_params": "%.2f" % (n_params / 1e6), "d_model": cfg["d_model"],
                    "enc_layers": cfg["enc_layers"], "sub_channels": cfg["sub_channels"],
                    "dec_hidden": cfg["dec_hidden"], "dec_layers": cfg["dec_layers"], "vocab": tok.V,
                    "history": "\n".join("| %d | %.1f | %.4f | %.2f | %s |" % (h["step"], h["train_min"], h["dev_loss"],
                                                                             h["dev_wer"], h.get("test_wer", ""))
                                         for h in history)}
            card = card_text(info)
            save(os.path.join(a.run, "best.pt"), {"config": cfg, "model": model.state_dict(), "step": step,
                                                  "card": card, "best": best})
            if a.export:
                X.write_dir(model, tok.path, a.export, card)
                log("exported %s (step %d)" % (a.export, step))
        model.train()

    if a.eval_first:                             # the starting point is the best so far (fine-tuning)
        evaluate_and_export()
        last_eval = time.time()
    model.train()
    while step < a.max_steps and not stop_now():
        batches = make_batches(train, a.batch_frames, a.max_bs, a.seed, epoch,
                               shortest_first=(epoch == 0 and step < a.ctc_only_steps))
        while bpos < len(batches) and step < a.max_steps and not stop_now():
            ts = time.time()
            utts = [train[i] for i in batches[bpos]]
            batch = to_dev(collate(utts, tok, specaug=sa_rng if step >= a.specaug_from else None), DEV)
            ctc_only = step < a.ctc_only_steps
            lr = lr_at(step, a, time.time() - t_start)
            for g in opt.param_groups:
                g["lr"] = lr
            loss, ctc, ce = losses(model, batch, tok, a.ctc_weight, ce_on=not ctc_only, speaker_w=a.speaker_weight,
                                   speaker_token_w=a.speaker_token_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            bpos += 1
            train_time += time.time() - ts
            tr_acc.append((float(ctc), float(ce), len(utts), float(gn)))
            if step % 25 == 0:
                n = len(tr_acc)
                log("step %d ep %d lr %.2e ctc %.3f ce %.3f bs %.1f gnorm %.2f %.2f s/step" % (
                    step, epoch, lr, sum(t[0] for t in tr_acc) / n, sum(t[1] for t in tr_acc) / n,
                    sum(t[2] for t in tr_acc) / n, sum(t[3] for t in tr_acc) / n, (time.time() - t_log) / n))
                tr_acc, t_log = [], time.time()
            now = time.time()
            if (now - last_eval > a.eval_min * 60 and step > a.ctc_only_steps) or \
                    (a.eval_steps and step % a.eval_steps == 0):
                evaluate_and_export()
                last_eval = time.time()
                checkpoint()
                last_ckpt = time.time()
                t_log = time.time()
            elif now - last_ckpt > a.ckpt_min * 60:
                checkpoint()
                last_ckpt = time.time()
        if bpos >= len(batches):
            epoch += 1
            bpos = 0
    evaluate_and_export()
    checkpoint()
    log("done at step %d" % step)


if __name__ == "__main__":
    main()
