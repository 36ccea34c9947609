#!/usr/bin/python3
"""Export check: loads an exported directory with the PyTorch reference
(tests/reference/reference.py) and compares, on held-out utterances, its
features, encoder states, first-step log-probs and greedy transcript with
the training code's (model.py with the checkpoint's weights rounded as
exported).

  check_export.py --model models/demo [--ckpt build-demo/run/best.pt] [--n 5] [--diarize]

Without --ckpt the training model takes its weights from the exported
model.safetensors itself (checks the architecture mirror only).
--diarize also decodes windows of held-out dialogues with the prompt
`... <|timestamp|><|diarize|>` (looked up in the reference's tokenizer)
and compares first-step log-probs and the greedy token streams.
Exit status 1 when a difference exceeds --tol (default 1e-4).
"""

import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "reference"))
import export as X  # noqa: E402
import frontend  # noqa: E402
import model as M  # noqa: E402
import reference as R  # noqa: E402
import dialogues  # noqa: E402
import diarize  # noqa: E402
import synth  # noqa: E402
import train as TR  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/demo")
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--diarize", action="store_true", help="also check the diarize prompt on dialogue windows")
    a = ap.parse_args()
    torch.set_num_threads(2)
    ref = R.load_model(a.model)
    if a.ckpt:
        ck = torch.load(a.ckpt, map_location="cpu")
        mine = M.HviskeModel(ck["config"])
        mine.load_state_dict(ck["model"])
        mine = TR.exported_copy(mine)
        src = "checkpoint %s (bf16-rounded as exported)" % a.ckpt
    else:
        import json
        cfgj = json.load(open(os.path.join(a.model, "config.json")))
        e, d = cfgj["encoder"], cfgj["transf_decoder"]["config_dict"]
        c = {"vocab_size": cfgj["vocab_size"], "d_model": e["d_model"], "enc_layers": e["n_layers"],
             "enc_heads": e["n_heads"], "ff_exp": e["ff_expansion_factor"], "conv_kernel": e["conv_kernel_size"],
             "sub_channels": e["subsampling_conv_channels"], "sub_factor": e["subsampling_factor"],
             "feat_in": e["feat_in"], "dec_hidden": d["hidden_size"], "dec_inner": d["inner_size"],
             "dec_layers": d["num_layers"], "dec_heads": d["num_attention_heads"],
             "max_seq": d["max_sequence_length"], "dropout": 0.0}
        mine = M.HviskeModel(c)
        st = {k: torch.from_numpy(np.ascontiguousarray(v[1])).to(torch.float32)
              for k, v in R.read_safetensors(os.path.join(a.model, "model.safetensors")).items()
              if not k.startswith("preprocessor.")}
        missing, unexpected = mine.load_state_dict(st, strict=False)
        assert all(k.startswith(M.AUX) for k in missing) and not unexpected, (missing, unexpected)
        mine.eval()
        src = "exported model.safetensors"
    print("training model from", src)
    tok = TR.Tok(os.path.join(a.model, "tokenizer.model"))
    fe = frontend.Frontend()
    prompt = R.build_prompt(ref, "da", True)
    assert prompt == tok.prompt, (prompt, tok.prompt)
    print("prompt", prompt, "eos", ref.eos_id, "start", ref.start_id)
    worst = {"features": 0.0, "encoder": 0.0, "logprobs0": 0.0}
    same_text = 0
    for i in range(a.n):
        x, text, v = synth.make_utterance(a.seed, "test", i)
        res = R.run(ref, x, "da", True)
        f, T = fe(x)
        df = float(np.abs(f - res["features"]).max())
        with torch.no_grad():
            feats = torch.from_numpy(f)[None]
            _, e, L, pad = mine.encode(feats, torch.tensor([T]))
            lp = mine.decode(torch.tensor([prompt]), e, pad)[0, -1]
            hyp = TR.greedy(mine, [{"feats": f[:T], "T": T, "text": text}], tok, max_new=256)[0]
        de = float(np.abs(e[0].numpy() - res["encoder"]).max())
        dl = float(np.abs(lp.numpy() - res["logprobs0"]).max())
        assert int(L) == res["enc_len"]
        worst["features"] = max(worst["features"], df)
        worst["encoder"] = max(worst["encoder"], de)
        worst["logprobs0"] = max(worst["logprobs0"], dl)
        same_text += hyp == res["text"]
        print("utt %d: T %d L %d | max|diff| features %.2e encoder %.2e logprobs0 %.2e (enc scale %.2f)"
              % (i, T, int(L), df, de, dl, float(np.abs(res["encoder"]).max())))
        print("   ref : %r\n   mine: %r\n   true: %r" % (res["text"], hyp, text))
    n_checked = a.n
    if a.diarize:
        dtok = TR.Tok(os.path.join(a.model, "tokenizer.model"), True)
        dprompt = [ref.start_id]
        for p in diarize.PROMPT:
            i = ref.sp.piece_to_id(p)
            assert ref.sp.id_to_piece(i) == p, "reference tokenizer lacks " + p
            dprompt.append(i)
        assert dprompt == dtok.prompt, (dprompt, dtok.prompt)
        import random
        x, units, _ = dialogues.make_dialogue(a.seed, "test", 0, 40, 60)
        wins = dialogues.tile_windows(units, len(x), random.Random(a.seed), lambda w0, w1: True)[:a.n]
        for k, (w0, w1) in enumerate(wins):
            y = x[w0:w1]
            f, T = fe(y)
            rf, rT = R.features(ref, y)
            enc, L = R.encode(ref, rf, rT)
            rtoks = R.greedy(ref, enc, L, dprompt, R.resolve_max_new_tokens(ref, len(dprompt), 480))
            with torch.no_grad():
                _, e, Lm, pad = mine.encode(torch.from_numpy(f)[None], torch.tensor([T]))
                lp = mine.decode(torch.tensor([dprompt]), e, pad)[0, -1]
                rlp = R.log_probs(ref, R.Decoder(ref, enc, L).prefill(dprompt))
                mtoks = TR.greedy(mine, [{"feats": f[:T], "T": T, "text": ""}], dtok, max_new=480,
                                  return_ids=True)[0]
            dl = float(np.abs(lp.numpy() - rlp.to(torch.float32).numpy()).max())
            worst["logprobs0"] = max(worst["logprobs0"], dl)
            same_text += rtoks == mtoks
            n_checked += 1
            print("window %d (%.1f-%.1f s): logprobs0 %.2e, %d tokens, same stream %s\n   %r\n   true: %r"
                  % (k, w0 / 16000, w1 / 16000, dl, len(rtoks), rtoks == mtoks, ref.sp.decode(rtoks)[:300],
                     diarize.window_pieces(units, w0, w1)[:3]))
    print("worst:", {k: "%.2e" % v for k, v in worst.items()}, "same transcript %d/%d" % (same_text, n_checked))
    ok = max(worst.values()) <= a.tol and same_text == n_checked
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
