"""Hugging Face's own cohere_asr (transformers' CohereAsrForConditionalGeneration,
CohereAsrFeatureExtractor and the tokenizer AutoTokenizer picks) on a checkpoint
in the published layout: what tests/oracle/test_hf_oracle.py holds the C engine
against. Runs under the oracle's virtual environment (tests/oracle/requirements.lock,
installed by scripts/oracle-venv.sh), never under Debian's python3.

A published checkpoint's config.json is NeMo's nested layout; transformers reads
its own (CohereAsrConfig with a parakeet_encoder sub-config) and renames the
tensors itself on load (its conversion_mapping.py, "cohere_asr"). hf_dir() writes
that config beside links to the same safetensors files, as the Hugging Face copy
of a published model has it; everything else is transformers' code as shipped.

Where the published layout allows what transformers does not, hf_model() fills
the gap and says so (docs/MODEL.md, "Hugging Face's cohere_asr"):
  * no encoder_decoder_proj (encoder d_model == decoder hidden): transformers
    always has the projection; it gets the identity, which is what the engine
    computes without it;
  * feed-forward and convolution-module biases absent: zero, as the engine has
    them;
  * no log_softmax.mlp.layer0.weight: tie_word_embeddings, the classifier being
    the token embedding, as the engine ties it;
  * no batch_norm.num_batches_tracked: BatchNorm's training counter, unused.
Any other weight missing or left unused fails the load."""

import json
import os

import numpy as np
import torch
import transformers
from transformers import (AutoTokenizer, CohereAsrConfig, CohereAsrFeatureExtractor,
                          CohereAsrForConditionalGeneration)

# the optional biases of docs/CONVENTIONS.md, by transformers' names
HF_ZERO_WHEN_ABSENT = ("feed_forward1.linear1.bias", "feed_forward1.linear2.bias",
                       "feed_forward2.linear1.bias", "feed_forward2.linear2.bias",
                       "conv.pointwise_conv1.bias", "conv.depthwise_conv.bias",
                       "conv.pointwise_conv2.bias")


def versions():
    return "transformers %s, torch %s" % (transformers.__version__, torch.__version__)


def weight_files(model_dir):
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx, encoding="utf-8") as f:
            return sorted(set(json.load(f)["weight_map"].values())), "model.safetensors.index.json"
    return ["model.safetensors"], None


def tensor_shapes(model_dir):
    """{name: shape} from the safetensors headers."""
    import struct
    out = {}
    for fn in weight_files(model_dir)[0]:
        with open(os.path.join(model_dir, fn), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            head = json.loads(f.read(n))
        for k, v in head.items():
            if k != "__metadata__":
                out[k] = tuple(v["shape"])
    return out


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def hf_config(model_dir):
    """transformers' CohereAsrConfig for a checkpoint in the published layout."""
    cfg = read_json(os.path.join(model_dir, "config.json"))
    gen = read_json(os.path.join(model_dir, "generation_config.json"))
    shapes = tensor_shapes(model_dir)
    enc = cfg["encoder"]
    dec = cfg["transf_decoder"]["config_dict"]
    pos_rows = shapes["transf_decoder._embedding.position_embedding.pos_enc"][0]
    return CohereAsrConfig(
        encoder_config={
            "model_type": "parakeet_encoder",
            "hidden_size": enc["d_model"], "num_hidden_layers": enc["n_layers"],
            "num_attention_heads": enc["n_heads"],
            "intermediate_size": enc["d_model"] * enc["ff_expansion_factor"],
            "conv_kernel_size": enc["conv_kernel_size"],
            "subsampling_factor": enc["subsampling_factor"],
            "subsampling_conv_channels": enc["subsampling_conv_channels"],
            "num_mel_bins": enc["feat_in"],
            "max_position_embeddings": enc.get("pos_emb_max_len", 5000)},
        vocab_size=cfg["vocab_size"], hidden_size=dec["hidden_size"],
        num_hidden_layers=dec["num_layers"], num_attention_heads=dec["num_attention_heads"],
        intermediate_size=dec["inner_size"], hidden_act=dec.get("hidden_act", "relu"),
        max_position_embeddings=pos_rows, pad_token_id=gen["pad_token_id"],
        eos_token_id=gen["eos_token_id"], bos_token_id=gen["bos_token_id"],
        decoder_start_token_id=gen["decoder_start_token_id"],
        tie_word_embeddings="log_softmax.mlp.layer0.weight" not in shapes)


def hf_dir(model_dir, out):
    """A folder in transformers' layout for model_dir: its config, the
    generation config, links to the weights and the tokenizer."""
    os.makedirs(out, exist_ok=True)
    hf_config(model_dir).save_pretrained(out)
    files, index = weight_files(model_dir)
    for fn in files + ([index] if index else []) + ["generation_config.json", "tokenizer.model"]:
        dst = os.path.join(out, fn)
        if not os.path.lexists(dst):
            os.symlink(os.path.abspath(os.path.join(model_dir, fn)), dst)
    return out


def hf_model(model_dir, hfdir, dtype=torch.float32):
    """(model, tokenizer) loaded by transformers from hfdir (hf_dir's), in
    dtype (float32 unless said), eager attention; the gaps of the module
    docstring filled."""
    model, info = CohereAsrForConditionalGeneration.from_pretrained(
        hfdir, dtype=dtype, attn_implementation="eager", output_loading_info=True)
    model.eval()
    shapes = tensor_shapes(model_dir)
    state = model.state_dict()
    missing = set(info["missing_keys"])
    filled = set()
    with torch.no_grad():
        for k in sorted(missing):
            if k.startswith("model.encoder.layers.") and any(
                    k.endswith(s) for s in HF_ZERO_WHEN_ABSENT):
                state[k].zero_()
                filled.add(k)
            elif k in ("model.decoder.proj.weight", "model.decoder.proj.bias") and \
                    "encoder_decoder_proj.weight" not in shapes:
                if k.endswith("weight"):
                    if state[k].shape[0] != state[k].shape[1]:
                        raise ValueError("%s: no encoder_decoder_proj, yet d_model != hidden"
                                         % model_dir)
                    state[k].copy_(torch.eye(state[k].shape[0], dtype=state[k].dtype))
                else:
                    state[k].zero_()
                filled.add(k)
            elif k == "proj_out.weight" and model.config.tie_word_embeddings:
                filled.add(k)
            elif k.endswith(".conv.norm.num_batches_tracked"):
                filled.add(k)  # BatchNorm's training counter, unused in eval
    left = missing - filled
    unexpected = [k for k in info["unexpected_keys"]
                  if not k.startswith("preprocessor.featurizer.")]
    if left or unexpected or info.get("mismatched_keys"):
        raise ValueError("%s: transformers' load left missing %s, unexpected %s, mismatched %s"
                         % (model_dir, sorted(left), unexpected, info.get("mismatched_keys")))
    if model.config.tie_word_embeddings and not torch.equal(
            model.proj_out.weight, model.model.decoder.embed_tokens.weight):
        raise ValueError("%s: tied classifier is not the token embedding" % model_dir)
    tok = AutoTokenizer.from_pretrained(hfdir)
    return model, tok


def feature_extractor(model_dir, dither):
    """transformers' CohereAsrFeatureExtractor with the checkpoint's
    preprocessor settings; dither: its amplitude (0 turns it off)."""
    cfg = read_json(os.path.join(model_dir, "config.json"))
    pre = cfg["preprocessor"]
    sr = pre["sample_rate"]
    return CohereAsrFeatureExtractor(
        feature_size=pre["features"], sampling_rate=sr,
        hop_length=int(round(pre["window_stride"] * sr)), n_fft=pre["n_fft"],
        win_length=int(round(pre["window_size"] * sr)), dither=dither,
        max_audio_clip_s=cfg.get("max_audio_clip_s", 35),
        overlap_chunk_second=cfg.get("overlap_chunk_second", 5),
        min_energy_window_samples=cfg.get("min_energy_window_samples", 1600))


def hf_featurizer_tensors(fe):
    """The window and the filterbank transformers computes (it ignores the
    checkpoint's preprocessor.featurizer tensors): float32 numpy arrays in the
    checkpoint's shapes ([win_length], [1, n_mels, n_fft/2+1])."""
    window = torch.hann_window(fe.win_length, periodic=False).numpy().astype(np.float32)
    fb = fe.mel_filters.numpy().astype(np.float32)[None]
    return window, fb


def with_hf_featurizer(model_dir, out, fe):
    """A copy of model_dir (links, but for the weight files) whose
    preprocessor.featurizer window and fb are transformers' own, float32."""
    from safetensors.torch import load_file, save_file
    os.makedirs(out, exist_ok=True)
    window, fb = hf_featurizer_tensors(fe)
    files, index = weight_files(model_dir)
    for fn in os.listdir(model_dir):
        if fn not in files and not os.path.lexists(os.path.join(out, fn)):
            os.symlink(os.path.abspath(os.path.join(model_dir, fn)), os.path.join(out, fn))
    for fn in files:
        t = load_file(os.path.join(model_dir, fn))
        if "preprocessor.featurizer.window" in t:
            t["preprocessor.featurizer.window"] = torch.from_numpy(window)
        if "preprocessor.featurizer.fb" in t:
            t["preprocessor.featurizer.fb"] = torch.from_numpy(fb.reshape(
                t["preprocessor.featurizer.fb"].shape))
        save_file(t, os.path.join(out, fn))
    return out


def features(fe, samples):
    """transformers' features of one float32 16 kHz waveform, as its
    processor makes them: ([frames, n_mels] float32, valid frames), or
    (None, 0) when it makes no chunk of it."""
    r = fe(samples.astype(np.float32), sampling_rate=fe.sampling_rate, return_tensors="pt")
    x = r["input_features"]
    return x[0].numpy(), int(r["attention_mask"][0].sum())


def user_defined_special(tok, sp):
    """Makes the checkpoint's <|...|> pieces (the prompt's and the
    timestamps' control tokens) special added tokens of the tokenizer's
    backend, so that decode(skip_special_tokens=True) drops them as the
    engine does: transformers' conversion of a bare tokenizer.model lists
    them among the special ids but leaves its backend's added tokens
    unmarked, and decode keeps them."""
    from transformers import AddedToken
    names = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
             if sp.id_to_piece(i).startswith("<|") and sp.id_to_piece(i).endswith("|>")]
    tok.add_tokens([AddedToken(n, special=True, normalized=False) for n in names],
                   special_tokens=True)


def prompt_ids(tok, language, punctuation=True):
    """The decoder prompt of CohereAsrProcessor.get_decoder_prompt_ids, with
    the language token looked up in the tokenizer's vocabulary as the Hviske
    models' authors call it: the processor's own list of 14 codes leaves
    Danish out (it raises for "da")."""
    pnc = "<|pnc|>" if punctuation else "<|nopnc|>"
    toks = ["\u2581", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>",
            "<|%s|>" % language, "<|%s|>" % language, pnc, "<|noitn|>", "<|notimestamp|>",
            "<|nodiarize|>"]
    ids = tok.convert_tokens_to_ids(toks)
    if tok.unk_token_id is not None and tok.unk_token_id in ids:
        raise ValueError("prompt token missing from the vocabulary: %s" % toks[ids.index(
            tok.unk_token_id)])
    return ids


def generate(model, feats, n_valid, prompt, max_new_tokens, num_beams=1, length_penalty=1.0,
             **processors):
    """transformers' generate on one utterance's features: {tokens (EOS and
    after cut), sequence score (beam search), eos (bool)}. processors:
    generate's repetition_penalty, no_repeat_ngram_size."""
    x = torch.from_numpy(np.ascontiguousarray(feats))[None]
    mask = (torch.arange(x.shape[1]) < n_valid)[None]
    with torch.no_grad():
        out = model.generate(input_features=x, attention_mask=mask,
                             decoder_input_ids=torch.tensor([prompt]),
                             max_new_tokens=max_new_tokens, num_beams=num_beams,
                             length_penalty=length_penalty, do_sample=False,
                             return_dict_in_generate=True, output_scores=True, **processors)
    seq = out.sequences[0].tolist()[len(prompt):]
    eos = model.config.eos_token_id
    ended = eos in seq
    if ended:
        seq = seq[:seq.index(eos)]
    score = None
    if num_beams > 1 and getattr(out, "sequences_scores", None) is not None:
        score = float(out.sequences_scores[0])
    return {"tokens": seq, "score": score, "eos": ended}
