"""Batched PyTorch model of exactly the Hviske / Cohere Transcribe
architecture (docs/MODEL.md), with parameter names equal to the published
tensor names (docs/CONVENTIONS.md), so that state_dict() is the
checkpoint layout.  Only additions: `ctc_head` (auxiliary CTC loss on the
encoder output) and `speaker_head` (the diarize fine-tune's auxiliary
per-frame speaker loss), both dropped at export (AUX)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

NEG = -1e9


def default_config(vocab_size):
    return {
        "vocab_size": vocab_size,
        "d_model": 160, "enc_layers": 4, "enc_heads": 4, "ff_exp": 4, "conv_kernel": 9,
        "sub_channels": 64, "sub_factor": 8, "feat_in": 128,
        "dec_hidden": 144, "dec_inner": 576, "dec_layers": 2, "dec_heads": 4, "max_seq": 512,
        "dropout": 0.05,
    }


AUX = ("ctc_head.", "speaker_head.")   # training-only heads, not in the checkpoint
SPEAKER_CLASSES = 9                    # no speech, or the window's speaker 0..7


def sub_len(n):
    return (n + 2 - 3) // 2 + 1


def zero_time_from(h, lengths):
    """h [B, C, T, F]; zero time steps t >= lengths[b]."""
    T = h.shape[2]
    keep = (torch.arange(T, device=h.device)[None, :] < lengths[:, None]).to(h.dtype)
    return h * keep[:, None, :, None]


class PreEncode(nn.Module):
    def __init__(self, c):
        super().__init__()
        C = c["sub_channels"]
        self.n_stages = int(round(math.log2(c["sub_factor"])))
        mods = [nn.Conv2d(1, C, 3, 2, 1), nn.ReLU()]
        for _ in range(1, self.n_stages):
            mods += [nn.Conv2d(C, C, 3, 2, 1, groups=C), nn.Conv2d(C, C, 1), nn.ReLU()]
        self.conv = nn.Sequential(*mods)
        f = c["feat_in"]
        for _ in range(self.n_stages):
            f = sub_len(f)
        self.out = nn.Linear(C * f, c["d_model"])
        # He-normal init of the convolutions, zero biases (DEMO-TRAINING.md)
        for m in self.conv:
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
                nn.init.zeros_(m.bias)

    def forward(self, x, lengths):
        """x [B, T, F] -> ([B, T', d], lengths')"""
        h = x[:, None]
        L = lengths
        h = zero_time_from(h, L)
        h = F.relu(self.conv[0](h))
        L = sub_len(L)
        for s in range(1, self.n_stages):
            h = zero_time_from(h, L)
            h = self.conv[3 * s - 1](h)
            L = sub_len(L)
            h = zero_time_from(h, L)
            h = F.relu(self.conv[3 * s](h))
        B, C, T, Fq = h.shape
        h = h.transpose(1, 2).reshape(B, T, C * Fq)
        return self.out(h), L


def rel_pos_emb(n, d, device=None):
    pos = torch.arange(n - 1, -n, -1, dtype=torch.float64)[:, None]
    i = torch.arange(0, d // 2, dtype=torch.float64)[None, :]
    w = torch.pow(10000.0, -2.0 * i / d)
    pe = torch.zeros(2 * n - 1, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * w)
    pe[:, 1::2] = torch.cos(pos * w)
    return pe.to(torch.float32).to(device)


def rel_shift(bd):
    B, H, n, m = bd.shape
    x = F.pad(bd, (1, 0)).reshape(B, H, m + 1, n)
    return x[:, :, 1:, :].reshape(B, H, n, m)[:, :, :, :n]


class FF(nn.Module):
    def __init__(self, d, inner, drop):
        super().__init__()
        self.linear1 = nn.Linear(d, inner)
        self.linear2 = nn.Linear(inner, d)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.linear2(self.drop(F.silu(self.linear1(x))))


class RelMHSA(nn.Module):
    def __init__(self, d, H, drop):
        super().__init__()
        self.H, self.dk = H, d // H
        self.linear_q = nn.Linear(d, d)
        self.linear_k = nn.Linear(d, d)
        self.linear_v = nn.Linear(d, d)
        self.linear_out = nn.Linear(d, d)
        self.linear_pos = nn.Linear(d, d, bias=False)
        self.pos_bias_u = nn.Parameter(torch.zeros(H, self.dk))
        self.pos_bias_v = nn.Parameter(torch.zeros(H, self.dk))
        nn.init.xavier_uniform_(self.pos_bias_u)
        nn.init.xavier_uniform_(self.pos_bias_v)
        self.drop = nn.Dropout(drop)

    def forward(self, x, pos_emb, pad):
        B, n, d = x.shape
        H, dk = self.H, self.dk
        q = self.linear_q(x).reshape(B, n, H, dk).transpose(1, 2)
        k = self.linear_k(x).reshape(B, n, H, dk).transpose(1, 2)
        v = self.linear_v(x).reshape(B, n, H, dk).transpose(1, 2)
        p = self.linear_pos(pos_emb).reshape(2 * n - 1, H, dk).transpose(0, 1)   # [H, 2n-1, dk]
        ac = (q + self.pos_bias_u[None, :, None, :]) @ k.transpose(2, 3)
        bd = (q + self.pos_bias_v[None, :, None, :]) @ p.transpose(1, 2)[None]
        bd = rel_shift(bd)
        scores = (ac + bd) / math.sqrt(dk)
        mask = (pad[:, :, None] | pad[:, None, :])[:, None]           # [B, 1, n, n]
        scores = scores.masked_fill(mask, NEG)
        attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        ctx = (self.drop(attn) @ v).transpose(1, 2).reshape(B, n, d)
        return self.linear_out(ctx)


class MaskedBatchNorm1d(nn.Module):
    """BatchNorm over channels of [B, C, T] whose statistics use only the
    valid (unpadded) time steps; eval uses the running statistics."""

    def __init__(self, C, momentum=0.1, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C))
        self.bias = nn.Parameter(torch.zeros(C))
        self.register_buffer("running_mean", torch.zeros(C))
        self.register_buffer("running_var", torch.ones(C))
        self.momentum, self.eps = momentum, eps

    def forward(self, y, valid):
        if self.training:
            m = valid[:, None, :].to(y.dtype)                         # [B, 1, T]
            cnt = m.sum()
            mean = (y * m).sum(dim=(0, 2)) / cnt
            var = (((y - mean[None, :, None]) ** 2) * m).sum(dim=(0, 2)) / cnt
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean.detach())
                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var.detach() * cnt / max(cnt - 1, 1))
        else:
            mean, var = self.running_mean, self.running_var
        return (y - mean[None, :, None]) / torch.sqrt(var[None, :, None] + self.eps) * self.weight[None, :, None] \
            + self.bias[None, :, None]


class ConvModule(nn.Module):
    def __init__(self, d, K, drop):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise_conv = nn.Conv1d(d, d, K, padding=(K - 1) // 2, groups=d)
        self.batch_norm = MaskedBatchNorm1d(d)
        self.pointwise_conv2 = nn.Conv1d(d, d, 1)
        self.drop = nn.Dropout(drop)

    def forward(self, x, pad):
        y = x.transpose(1, 2)
        y = F.glu(self.pointwise_conv1(y), dim=1)
        y = y.masked_fill(pad[:, None, :], 0.0)
        y = self.depthwise_conv(y)
        y = F.silu(self.batch_norm(y, ~pad))
        y = self.pointwise_conv2(y)
        return self.drop(y.transpose(1, 2))


class ConformerLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, drop = c["d_model"], c["dropout"]
        self.norm_feed_forward1 = nn.LayerNorm(d)
        self.feed_forward1 = FF(d, d * c["ff_exp"], drop)
        self.norm_self_att = nn.LayerNorm(d)
        self.self_attn = RelMHSA(d, c["enc_heads"], drop)
        self.norm_conv = nn.LayerNorm(d)
        self.conv = ConvModule(d, c["conv_kernel"], drop)
        self.norm_feed_forward2 = nn.LayerNorm(d)
        self.feed_forward2 = FF(d, d * c["ff_exp"], drop)
        self.norm_out = nn.LayerNorm(d)
        self.drop = nn.Dropout(drop)

    def forward(self, x, pos_emb, pad):
        x = x + 0.5 * self.drop(self.feed_forward1(self.norm_feed_forward1(x)))
        x = x + self.drop(self.self_attn(self.norm_self_att(x), pos_emb, pad))
        x = x + self.conv(self.norm_conv(x), pad)
        x = x + 0.5 * self.drop(self.feed_forward2(self.norm_feed_forward2(x)))
        return self.norm_out(x)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pre_encode = PreEncode(c)
        self.layers = nn.ModuleList([ConformerLayer(c) for _ in range(c["enc_layers"])])
        self.d = c["d_model"]

    def forward(self, feats, lengths):
        x, L = self.pre_encode(feats, lengths)
        n = x.shape[1]
        pad = torch.arange(n, device=x.device)[None, :] >= L[:, None]
        pos = rel_pos_emb(n, self.d, x.device)
        for layer in self.layers:
            x = layer(x, pos, pad)
        return x, L, pad


def decoder_pos_enc(max_len, h):
    """NeMo FixedPositionalEncoding: sin at even, cos at odd columns,
    divided by sqrt(hidden)."""
    pe = torch.zeros(max_len, h, dtype=torch.float64)
    position = torch.arange(0.0, max_len, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0.0, h, 2.0, dtype=torch.float64) * -(math.log(10000.0) / h))
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)
    return (pe / math.sqrt(h)).to(torch.float32)


class PositionEmbedding(nn.Module):
    def __init__(self, max_len, h):
        super().__init__()
        self.register_buffer("pos_enc", decoder_pos_enc(max_len, h))


class Embedding(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["dec_hidden"]
        self.token_embedding = nn.Embedding(c["vocab_size"], h)
        nn.init.normal_(self.token_embedding.weight, 0.0, h ** -0.5)
        self.position_embedding = PositionEmbedding(c["max_seq"], h)
        self.layer_norm = nn.LayerNorm(h)


class MHA(nn.Module):
    def __init__(self, h, H, drop):
        super().__init__()
        self.H, self.dk = H, h // H
        self.query_net = nn.Linear(h, h)
        self.key_net = nn.Linear(h, h)
        self.value_net = nn.Linear(h, h)
        self.out_projection = nn.Linear(h, h)
        self.drop = nn.Dropout(drop)

    def forward(self, x, mem, mask):
        """mask: bool, broadcastable to [B, 1, nq, nk], True = masked."""
        B, nq, h = x.shape
        nk = mem.shape[1]
        q = self.query_net(x).reshape(B, nq, self.H, self.dk).transpose(1, 2)
        k = self.key_net(mem).reshape(B, nk, self.H, self.dk).transpose(1, 2)
        v = self.value_net(mem).reshape(B, nk, self.H, self.dk).transpose(1, 2)
        s = (q @ k.transpose(2, 3)) / math.sqrt(self.dk)
        s = s.masked_fill(mask, NEG)
        a = self.drop(torch.softmax(s, dim=-1))
        return self.out_projection((a @ v).transpose(1, 2).reshape(B, nq, h))


class DecFF(nn.Module):
    def __init__(self, h, inner, drop):
        super().__init__()
        self.dense_in = nn.Linear(h, inner)
        self.dense_out = nn.Linear(inner, h)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.dense_out(self.drop(F.relu(self.dense_in(x))))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, drop = c["dec_hidden"], c["dropout"]
        self.layer_norm_1 = nn.LayerNorm(h)
        self.first_sub_layer = MHA(h, c["dec_heads"], drop)
        self.layer_norm_2 = nn.LayerNorm(h)
        self.second_sub_layer = MHA(h, c["dec_heads"], drop)
        self.layer_norm_3 = nn.LayerNorm(h)
        self.third_sub_layer = DecFF(h, c["dec_inner"], drop)
        self.drop = nn.Dropout(drop)

    def forward(self, x, enc, self_mask, cross_mask):
        y = self.layer_norm_1(x)
        x = x + self.drop(self.first_sub_layer(y, y, self_mask))
        x = x + self.drop(self.second_sub_layer(self.layer_norm_2(x), enc, cross_mask))
        x = x + self.drop(self.third_sub_layer(self.layer_norm_3(x)))
        return x


class DecoderStack(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c["dec_layers"])])
        self.final_layer_norm = nn.LayerNorm(c["dec_hidden"])


class TransfDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self._embedding = Embedding(c)
        self._decoder = DecoderStack(c)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer0 = nn.Module()
        self.layer0.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class Head(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.mlp = MLP(c)


class HviskeModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = dict(c)
        self.encoder = Encoder(c)
        if c["d_model"] != c["dec_hidden"]:
            self.encoder_decoder_proj = nn.Linear(c["d_model"], c["dec_hidden"])
        else:
            self.encoder_decoder_proj = None
        self.transf_decoder = TransfDecoder(c)
        self.log_softmax = Head(c)
        self.ctc_head = nn.Linear(c["d_model"], c["vocab_size"])
        self.speaker_head = nn.Linear(c["d_model"], SPEAKER_CLASSES)
        self.emb_drop = nn.Dropout(c["dropout"])

    def encode(self, feats, lengths):
        """-> (encoder states before the projection, projected states, L, pad)"""
        x, L, pad = self.encoder(feats, lengths)
        e = self.encoder_decoder_proj(x) if self.encoder_decoder_proj is not None else x
        return x, e, L, pad

    def decode(self, tokens, enc, enc_pad, start_pos=0):
        """tokens [B, n] -> log-probs [B, n, V] (full recompute, causal)."""
        E = self.transf_decoder._embedding
        B, n = tokens.shape
        x = E.token_embedding(tokens) + E.position_embedding.pos_enc[start_pos:start_pos + n][None]
        x = self.emb_drop(E.layer_norm(x))
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool, device=tokens.device), 1)[None, None]
        cross = enc_pad[:, None, None, :]
        D = self.transf_decoder._decoder
        for layer in D.layers:
            x = layer(x, enc, causal, cross)
        x = D.final_layer_norm(x)
        logits = x @ E.token_embedding.weight.t() + self.log_softmax.mlp.layer0.bias
        return torch.log_softmax(logits, dim=-1)

    def cross_kv(self, enc):
        """Per decoder layer the cross-attention keys and values [B, H, ne, dk]."""
        out = []
        for layer in self.transf_decoder._decoder.layers:
            a = layer.second_sub_layer
            B, ne, _ = enc.shape
            k = a.key_net(enc).reshape(B, ne, a.H, a.dk).transpose(1, 2)
            v = a.value_net(enc).reshape(B, ne, a.H, a.dk).transpose(1, 2)
            out.append((k, v))
        return out

    @torch.no_grad()
    def decode_incremental(self, tokens, start_pos, cache, cross, enc_pad, raw=False):
        """Eval-mode decoding with a self-attention KV cache.  tokens [B, n]
        at positions start_pos..; cache: list of (k, v) per layer or None
        (updated in place); returns log-probs of the last position [B, V],
        or with raw the classifier's logits before log-softmax (what
        transformers' model returns, and so what its greedy search
        penalises)."""
        E = self.transf_decoder._embedding
        B, n = tokens.shape
        x = E.token_embedding(tokens) + E.position_embedding.pos_enc[start_pos:start_pos + n][None]
        x = E.layer_norm(x)
        total = start_pos + n
        qpos = torch.arange(start_pos, total, device=tokens.device)[:, None]
        kpos = torch.arange(0, total, device=tokens.device)[None, :]
        self_mask = (kpos > qpos)[None, None]
        cmask = enc_pad[:, None, None, :]
        D = self.transf_decoder._decoder
        for li, layer in enumerate(D.layers):
            a = layer.first_sub_layer
            y = layer.layer_norm_1(x)
            q = a.query_net(y).reshape(B, n, a.H, a.dk).transpose(1, 2)
            k = a.key_net(y).reshape(B, n, a.H, a.dk).transpose(1, 2)
            v = a.value_net(y).reshape(B, n, a.H, a.dk).transpose(1, 2)
            if cache[li] is not None:
                k = torch.cat([cache[li][0], k], dim=2)
                v = torch.cat([cache[li][1], v], dim=2)
            cache[li] = (k, v)
            s = (q @ k.transpose(2, 3)) / math.sqrt(a.dk)
            s = s.masked_fill(self_mask, NEG)
            x = x + a.out_projection((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, n, -1))
            c = layer.second_sub_layer
            y = layer.layer_norm_2(x)
            q = c.query_net(y).reshape(B, n, c.H, c.dk).transpose(1, 2)
            ck, cv = cross[li]
            s = (q @ ck.transpose(2, 3)) / math.sqrt(c.dk)
            s = s.masked_fill(cmask, NEG)
            x = x + c.out_projection((torch.softmax(s, -1) @ cv).transpose(1, 2).reshape(B, n, -1))
            x = x + layer.third_sub_layer(layer.layer_norm_3(x))
        x = D.final_layer_norm(x[:, -1])
        logits = x @ E.token_embedding.weight.t() + self.log_softmax.mlp.layer0.bias
        return logits if raw else torch.log_softmax(logits, dim=-1)

    def export_state(self):
        """The checkpoint tensors (published names), the auxiliary heads dropped."""
        sd = self.state_dict()
        return {k: v for k, v in sd.items() if not k.startswith(AUX)}
