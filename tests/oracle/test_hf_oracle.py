#!/usr/bin/env python3
"""The C engine (hviske-dump, --compute f32) against Hugging Face's own
cohere_asr: transformers' CohereAsrFeatureExtractor, CohereAsrForConditionalGeneration
.generate and the tokenizer AutoTokenizer gives the checkpoint (tests/oracle/hflib.py),
on every fixture model (tests/reference/make_fixtures.py: the published layout)
and the demo model. Runs under the oracle's virtual environment (the pinned
transformers and torch of tests/oracle/requirements.lock, which
scripts/oracle-venv.sh installs: CTest's oracle_venv step).

transformers computes the Hann window and the Slaney filterbank itself and
ignores the checkpoint's preprocessor.featurizer tensors; the engine reads
them. Each model is therefore run by the engine from a copy whose two tensors
are transformers' own values (hflib.with_hf_featurizer), so that the same
arithmetic is compared. HF gets the engine's own 16 kHz samples (samples.npy):
reading and resampling are the engine's (test_audio covers them).

Cases, per model:
  features   every fixture audio file (8 to 44.1 kHz, stereo, FLAC), 1, 160
             and 400 samples, 0.5 s, 2 s of digital silence, speech clipped
             at full scale, 30 s of sentences; with dither off and with the
             model's preprocessor.dither as transformers applies it (its
             torch.randn noise seeded with the number of samples): valid
             frame count equal, every valid element within FEAT_TOL (digital
             silence with dither: SILENCE_FEAT_TOL, below);
  greedy     the same runs: tokens identical to generate(num_beams=1), the
             budget of docs/DECODING.md (max_new_tokens of the generation
             config, cut to max_sequence_length less the prompt);
  decode     the text of every token list against the tokenizer's
             decode(skip_special_tokens=True).strip(): identical, except in
             runs of byte pieces that are not valid UTF-8, where
             SentencePiece (the engine) keeps the valid bytes and
             tokenizers' ByteFallback makes every byte U+FFFD (docs/MODEL.md,
             "Hugging Face's cohere_asr"): there the text must be the
             tokenizer's with each such run decoded by the sentencepiece
             library from the checkpoint's tokenizer.model;
  beam       four fixture files, --beams 2, 4 and 5 with --length-penalty 0.5,
             1 and 2 against generate(num_beams, length_penalty): tokens
             identical;
  repeat     the beam files, greedy and --beams 4, with
             --repetition-penalty 1.2, --no-repeat-ngram-size 3 and both,
             against generate(repetition_penalty, no_repeat_ngram_size):
             tokens identical (docs/DECODING.md "Repetition");
  long       a 70 s recording through transformers' own long-form path (its
             feature extractor cuts chunks at the quietest window of
             max_audio_clip_s, batches them, generate, processor.decode with
             audio_chunk_index) against `--chunking energy`: the chunk
             bounds, the first chunk's features (within FEAT_TOL), each
             chunk's tokens and the joined text identical.
The prompt is CohereAsrProcessor.get_decoder_prompt_ids' with the language
token looked up in the tokenizer's vocabulary (hflib.prompt_ids): the
processor's own list of 14 languages leaves Danish out, and this is how the
Hviske models' authors call it.

Environment: HV_FIXTURES, HV_DUMP. Optional arguments: substrings; only cases
whose label contains one of them run. One line per case, then "N passed, M
failed"; exit 1 when any case failed.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "parity"))
sys.path.insert(0, HERE)

import paritylib as PL  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))
from hvtest import oracle_import  # noqa: E402

torch = oracle_import("torch")
oracle_import("transformers")
import hflib as H  # noqa: E402

FEAT_TOL = 1e-3
# Digital silence with dither: every mel band holds only the noise (~1e-5),
# whose log-power after per-feature normalisation to unit variance is where
# two float32 STFTs (transformers' torch.stft, the engine's FFT) part most;
# measured 0.03 on these models. Tokens stay exact.
SILENCE_FEAT_TOL = 0.1
DUMP_TIMEOUT = 600
BEAM_AUDIO = ("da1_16k", "da2_16k", "da4_16k", "da5_16k")
BEAMS = (2, 4, 5)
PENALTIES = (0.5, 1.0, 2.0)
LONG_SECONDS = 70
# (hviske-dump's options, generate's) of the "repeat" cases
REPEAT = ((["--repetition-penalty", "1.2"], {"repetition_penalty": 1.2}),
          (["--no-repeat-ngram-size", "3"], {"no_repeat_ngram_size": 3}),
          (["--repetition-penalty", "1.2", "--no-repeat-ngram-size", "3"],
           {"repetition_penalty": 1.2, "no_repeat_ngram_size": 3}))


def extra_audio(P):
    """The made inputs: (name, path) of 16 kHz WAVs."""
    by = {a["name"]: os.path.join(P.fixtures, a["path"]) for a in P.manifest["audio"]}
    speech = PL.read_wav16(by["da1_16k"])
    made = {
        "1_sample": speech[4000:4001],
        "160_samples": speech[4000:4160],
        "400_samples": speech[4000:4400],
        "half_second": speech[2000:10000],
        "silence_2s": np.zeros(32000, dtype=np.int16),
        "clipped": np.clip(speech.astype(np.int64) * 40, -32768, 32767).astype(np.int16),
        "30s": PL.make_long_audio(P.fixtures, 30, seed=59),
    }
    out = []
    for name, s in made.items():
        out.append((name, PL.write_wav(os.path.join(P.tmp, name + ".wav"), s)))
    return out


def model_list(P):
    demo = {"name": "demo", "path": os.path.join(os.path.dirname(PL.TESTS), "models", "demo")}
    return P.manifest["models"] + [demo]


class Oracle:
    """One model: transformers' folder, model, tokenizer and feature
    extractors, and the engine's copy with transformers' featurizer."""

    def __init__(self, P, mi):
        self.name = mi["name"]
        self.dir = mi["path"] if os.path.isabs(mi["path"]) else P.model_dir(mi)
        base = os.path.join(P.tmp, "m", self.name)
        self.hfdir = H.hf_dir(self.dir, os.path.join(base, "hf"))
        self.model, self.tok = H.hf_model(self.dir, self.hfdir)
        cfg = H.read_json(os.path.join(self.dir, "config.json"))
        gen = H.read_json(os.path.join(self.dir, "generation_config.json"))
        self.dither = float(cfg["preprocessor"].get("dither", 0.0))
        self.fe = {0.0: H.feature_extractor(self.dir, 0.0)}
        if self.dither > 0:
            self.fe[self.dither] = H.feature_extractor(self.dir, self.dither)
        self.ours = H.with_hf_featurizer(self.dir, os.path.join(base, "ours"), self.fe[0.0])
        self.max_seq = cfg["transf_decoder"]["config_dict"]["max_sequence_length"]
        self.gen_max_new = gen.get("max_new_tokens") or 256
        self.prompt = H.prompt_ids(self.tok, "da")
        import sentencepiece
        self.sp = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(self.dir, "tokenizer.model"))
        H.user_defined_special(self.tok, self.sp)
        self.ref = P.R.load_model(self.ours)  # the exact features (float64)

    def budget(self):
        """docs/DECODING.md's max_new."""
        return max(0, min(self.gen_max_new, self.max_seq - len(self.prompt)))


def byte_groups(tok, ids):
    """ids cut into maximal runs of byte pieces (<0xNN>) and of other
    pieces: [(is_bytes, [ids])]."""
    out = []
    for i in ids:
        p = tok.convert_ids_to_tokens(i)
        b = len(p) == 6 and p.startswith("<0x") and p.endswith(">")
        if out and out[-1][0] == b:
            out[-1][1].append(i)
        else:
            out.append((b, [i]))
    return out


def expected_text(o, ids):
    """(the tokenizer's decode(skip_special_tokens=True) of ids, with each
    run of byte pieces that is not valid UTF-8 decoded by the sentencepiece
    library from the checkpoint's tokenizer.model instead; whether there
    was such a run)."""
    parts, invalid = [], False
    for is_bytes, g in byte_groups(o.tok, ids):
        if is_bytes:
            raw = bytes(int(o.tok.convert_ids_to_tokens(i)[3:5], 16) for i in g)
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                invalid = True
                parts.append(o.sp.decode(g))
                continue
        parts.append(o.tok.decode(g, skip_special_tokens=True))
    return "".join(parts), invalid


def check_text(fails, o, ids, text):
    """The engine's text of ids against the tokenizer's decode: "same", or
    "bytes" where they differ as documented (expected_text)."""
    hf = o.tok.decode(ids, skip_special_tokens=True).strip()
    if text == hf:
        return "same"
    want, invalid = expected_text(o, ids)
    want = want.strip()
    if not invalid or text != want:
        fails.append("text %r != transformers' %r%s" % (
            text, hf, " (with SentencePiece's invalid bytes: %r)" % want if invalid else ""))
        return "differ"
    return "bytes"


def check_greedy(fails, o, res, feats, T, what):
    ref = H.generate(o.model, feats, T, o.prompt, o.budget())
    ct = res.get("tokens")
    if ct != ref["tokens"]:
        k = PL.first_difference(ct or [], ref["tokens"])
        fails.append("greedy tokens differ from transformers' on %s from step %d: c %s hf %s"
                     % (what, k, ct, ref["tokens"]))
        return None
    return ref["tokens"]


def run_case(P, o, audio_name, path, dither):
    name = "%s %s%s" % (o.name, audio_name, " --dither default" if dither else "")
    if not P.wanted(name):
        return
    fails, meas = [], []
    dump_args = ["-l", "da"] + (["--dither", "-1"] if dither else [])
    c, err = P.run_dump(o.ours, path, dump_args, ("samples", "features"), DUMP_TIMEOUT)
    fe = o.fe[o.dither if dither else 0.0]
    if err and "audio too short" in err:
        # below two frames of 10 ms transformers' per-feature normalisation
        # divides by zero (T - 1 = 0, or T = 0): its features are not finite;
        # the engine refuses such input (docs/MODEL.md)
        n = int(err.split("audio too short: ")[1].split()[0])
        feats, T = H.features(fe, PL.read_wav16(path).astype(np.float32) / 32768.0)
        if T >= 2 or np.isfinite(feats[:T]).all() and T > 0:
            fails.append("the engine refuses %d samples, transformers makes %d valid frames of "
                         "finite features" % (n, T))
        P.report(name, fails, "refused (%d samples); transformers: %d frames, not finite" % (n, T))
        return
    if err:
        P.report(name, [err])
        return
    res = c["result"]
    samples = c["samples"].astype(np.float32).reshape(-1)
    feats, T = H.features(fe, samples)
    ours = c["features"]
    if res.get("n_valid_frames") != T:
        fails.append("valid frames %r != transformers' %d" % (res.get("n_valid_frames"), T))
        P.report(name, fails)
        return
    # transformers computes in float32; where its features are further
    # from the exact (float64) ones than FEAT_TOL, the engine must be within
    # twice transformers' own deviation, and the models are compared on the
    # same features only
    exact, _ = P.R.features(o.ref, samples, dither=o.dither if dither else 0.0)
    hf_dev = PL.max_abs(feats[:T], exact.numpy()[:T])
    tol = max(FEAT_TOL, 2 * hf_dev)
    d = PL.check_close(fails, "features", ours[:T], feats[:T], tol, ("frame", "mel"))
    if d is not None:
        meas.append("feat=%.1e" % d)
    if hf_dev > FEAT_TOL:
        meas.append("(hf f32 off exact by %.1e)" % hf_dev)
    if res.get("prompt") != o.prompt:
        fails.append("prompt %r != %r" % (res.get("prompt"), o.prompt))
    # the model: transformers' encoder and generate on the engine's own
    # features; then, where the frontends agree within FEAT_TOL, on its own
    toks = check_greedy(fails, o, res, ours, T, "the engine's features")
    if toks is not None and hf_dev <= FEAT_TOL:
        toks = check_greedy(fails, o, res, feats, T, "its own features")
    if toks is not None:
        meas.append("tokens=%d" % len(toks))
        meas.append("text=" + check_text(fails, o, toks, res.get("text")))
    P.report(name, fails, " ".join(meas))


def run_beams(P, o, audio):
    for a in audio:
        for n in BEAMS:
            for lp in PENALTIES:
                name = "%s %s --beams %d --length-penalty %g" % (o.name, a["name"], n, lp)
                if not P.wanted(name):
                    continue
                c, err = P.run_dump(o.ours, os.path.join(P.fixtures, a["path"]),
                                    ["-l", "da", "--beams", n, "--length-penalty", repr(lp)],
                                    ("samples",), DUMP_TIMEOUT)
                if err:
                    P.report(name, [err])
                    continue
                res, fails = c["result"], []
                feats, T = H.features(o.fe[0.0], c["samples"].astype(np.float32).reshape(-1))
                ref = H.generate(o.model, feats, T, o.prompt, o.budget(), n, lp)
                if res.get("tokens") != ref["tokens"]:
                    ct = res.get("tokens") or []
                    fails.append("tokens differ from step %d: c %s hf %s" % (
                        PL.first_difference(ct, ref["tokens"]), ct, ref["tokens"]))
                else:
                    check_text(fails, o, ref["tokens"], res.get("text"))
                P.report(name, fails, "tokens=%d" % len(ref["tokens"]))


def run_repeat(P, o, audio):
    for a in audio:
        for n in (1, 4):
            for args, kw in REPEAT:
                name = "%s %s --beams %d %s" % (o.name, a["name"], n, " ".join(args))
                if not P.wanted(name):
                    continue
                c, err = P.run_dump(o.ours, os.path.join(P.fixtures, a["path"]),
                                    ["-l", "da", "--beams", n] + args, ("samples",),
                                    DUMP_TIMEOUT)
                if err:
                    P.report(name, [err])
                    continue
                res, fails = c["result"], []
                feats, T = H.features(o.fe[0.0], c["samples"].astype(np.float32).reshape(-1))
                ref = H.generate(o.model, feats, T, o.prompt, o.budget(), n, 1.0, **kw)
                plain = H.generate(o.model, feats, T, o.prompt, o.budget(), n, 1.0)
                if res.get("tokens") != ref["tokens"]:
                    ct = res.get("tokens") or []
                    fails.append("tokens differ from step %d: c %s hf %s" % (
                        PL.first_difference(ct, ref["tokens"]), ct, ref["tokens"]))
                P.report(name, fails, "tokens=%d%s" % (
                    len(ref["tokens"]),
                    "" if plain["tokens"] == ref["tokens"] else " (differ from without)"))


def run_long(P, o, path):
    name = "%s long %d s --chunking energy" % (o.name, LONG_SECONDS)
    if not P.wanted(name):
        return
    fails = []
    c, err = P.run_dump(o.ours, path, ["-l", "da", "--chunking", "energy"],
                        ("samples", "features"), DUMP_TIMEOUT)
    if err:
        P.report(name, [err])
        return
    res = c["result"]
    samples = c["samples"].astype(np.float32).reshape(-1)
    fe = o.fe[0.0]
    r = fe(samples, sampling_rate=fe.sampling_rate, return_tensors="pt")
    chunks = fe._split_audio_chunks_energy(torch.from_numpy(samples))
    bounds = [0]
    for ch in chunks:
        bounds.append(bounds[-1] + int(ch.shape[0]))
    if res.get("bounds") != bounds:
        fails.append("bounds %s != transformers' %s" % (res.get("bounds"), bounds))
    x, mask = r["input_features"], r["attention_mask"]
    # the first chunk's features (the dump's), from transformers' padded batch
    T0 = int(mask[0].sum())
    d = None
    if c["result"].get("n_valid_frames") != T0:
        fails.append("first chunk's valid frames %r != transformers' %d" % (
            c["result"].get("n_valid_frames"), T0))
    else:
        d = PL.check_close(fails, "first chunk's features", c["features"][:T0],
                           x[0, :T0].numpy(), FEAT_TOL, ("frame", "mel"))
    with torch.no_grad():
        out = o.model.generate(input_features=x, attention_mask=mask,
                               decoder_input_ids=torch.tensor([o.prompt] * x.shape[0]),
                               max_new_tokens=o.budget(), num_beams=1, do_sample=False)
    eos = o.model.config.eos_token_id
    hf_tokens = []
    for row in out[:, len(o.prompt):].tolist():
        hf_tokens.append(row[:row.index(eos)] if eos in row else row)
    segs = res.get("segments") or []
    ours = [s.get("tokens") for s in segs]
    if ours != hf_tokens:
        k = PL.first_difference(ours, hf_tokens)
        fails.append("chunk %d tokens: c %s hf %s" % (
            k, ours[k] if k < len(ours) else None, hf_tokens[k] if k < len(hf_tokens) else None))
    else:
        # processor.decode with audio_chunk_index joins the chunks' texts;
        # each chunk's text as check_text decodes it
        texts = [expected_text(o, t)[0] for t in hf_tokens]
        from transformers import CohereAsrProcessor
        proc = CohereAsrProcessor(feature_extractor=fe, tokenizer=o.tok)
        joined = proc._reassemble_chunk_texts(texts, r["audio_chunk_index"], " ")[0].strip()
        if res.get("text") != joined:
            fails.append("text %r != transformers' %r" % (res.get("text"), joined))
    P.report(name, fails, "chunks=%d%s" % (len(hf_tokens), "" if d is None else
                                            " feat(chunk 0)=%.1e" % d))


def run(P):
    torch.set_num_threads(1)
    print("# %s" % H.versions())
    audio = [(a["name"], os.path.join(P.fixtures, a["path"])) for a in P.manifest["audio"]]
    audio += extra_audio(P)
    beam_audio = [a for a in P.manifest["audio"] if a["name"] in BEAM_AUDIO]
    long_path = PL.write_wav(os.path.join(P.tmp, "long.wav"),
                             PL.make_long_audio(P.fixtures, LONG_SECONDS, seed=5959))
    for mi in model_list(P):
        try:
            o = Oracle(P, mi)
        except Exception as e:  # a load failure fails the model's case
            P.report("%s load" % mi["name"], ["%s: %s" % (type(e).__name__, e)])
            continue
        for audio_name, path in audio:
            for dither in (False, True):
                run_case(P, o, audio_name, path, dither)
        run_beams(P, o, beam_audio)
        run_repeat(P, o, beam_audio)
        run_long(P, o, long_path)


if __name__ == "__main__":
    sys.exit(PL.run_cases(PL.Parity("hv-hf-oracle-", 52), run))
