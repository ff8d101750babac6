"""The GPT architecture of tinyformer in PyTorch, with nanoGPT's parameter names.

GPT(cfg) takes tinyformer's model section as a dict: what a checkpoint stores as JSON in its "tinyformer.model"
metadata (vocab_size, context, d_model, n_head, n_layer, mlp_ratio, dropout, bias, tie_weights, norm, mlp,
position; see docs/config.md), so GPT(json.loads(meta["tinyformer.model"])) rebuilds a trained model. nanoGPT's
names for two of them (n_embd, block_size) are accepted too. Keys that are missing take tinyformer's defaults.
Used by compare_with_pytorch.py (parity), bench_vs_pytorch.py (speed) and export_nanogpt.py.
Pre-LayerNorm blocks, learned positions, GELU (tanh approximation), causal attention, optional tied head.
Options, each default keeping the architecture above:
  norm      "layernorm" | "rmsnorm"   RMSNorm: x * rsqrt(mean(x^2) + 1e-5) * weight, no bias (parameter `weight`)
  mlp       "gelu" | "swiglu"         SwiGLU: c_fc [2*hidden, C] (gate rows first, then up), silu(gate) * up,
                                      c_proj [C, hidden], hidden = swiglu_hidden(C, mlp_ratio)
  position  "learned" | "rope"        rope: no transformer.wpe; q and k rotated (rotate_half pairs, base 10000)
  n_kv_head 0 = n_head (default) | a divisor of n_head: grouped-query attention (Llama 2), 1 = multi-query.
                                      c_attn [(n_head + 2 n_kv_head) D, C]: the q heads, then the k heads, then
                                      the v heads; q head h reads k/v head h // (n_head // n_kv_head)
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


DEFAULTS = dict(mlp_ratio=4, dropout=0.0, bias=True, tie_weights=False, norm="layernorm", mlp="gelu",
                position="learned")
NANOGPT_NAMES = {"n_embd": "d_model", "block_size": "context"}


def model_config(cfg):
    """The model section with tinyformer's names and every default filled in."""
    out = dict(DEFAULTS)
    for key, value in cfg.items():
        out[NANOGPT_NAMES.get(key, key)] = value
    for key in ("vocab_size", "context", "d_model", "n_head", "n_layer"):
        if out.get(key) is None:
            raise ValueError(f"model config needs {key} (got {cfg})")
    return out


def swiglu_hidden(d_model, mlp_ratio):
    """LLaMA's 2/3 rule: 2 * mlp_ratio * d_model // 3 rounded up to a multiple of 8 (C=64, ratio 4 -> 176)."""
    return (2 * mlp_ratio * d_model // 3 + 7) // 8 * 8


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rotary(x, base=10000.0):
    """x [B,H,T,D]: the pair (x_i, x_{i+D/2}) of position t turned by t * base^(-2i/D) (GPT-NeoX / HF LLaMA).
    cos and sin are computed in float64 and rounded to x's dtype once, as tinyformer's rotary_qk."""
    T, D = x.shape[-2], x.shape[-1]
    if D % 2:
        raise ValueError(f"rope needs an even head size, got D = {D}")
    inv_freq = base ** (-2.0 * torch.arange(D // 2, dtype=torch.float64) / D)
    angle = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    angle = torch.cat((angle, angle), dim=-1)  # [T, D]
    cos, sin = angle.cos().to(x.dtype).to(x.device), angle.sin().to(x.dtype).to(x.device)
    return x * cos + rotate_half(x) * sin


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, bias, dropout, rope=False, n_kv_head=None):
        super().__init__()
        self.n_kv_head = n_kv_head or n_head
        if n_head % self.n_kv_head:
            raise ValueError(f"n_kv_head = {self.n_kv_head} must divide n_head = {n_head}")
        D = d_model // n_head
        self.c_attn = nn.Linear(d_model, (n_head + 2 * self.n_kv_head) * D, bias=bias)
        self.c_proj = nn.Linear(d_model, d_model, bias=bias)
        self.n_head = n_head
        self.dropout = dropout
        self.rope = rope

    def forward(self, x):
        B, T, C = x.shape
        H, Hkv, D = self.n_head, self.n_kv_head, C // self.n_head
        q, k, v = self.c_attn(x).split([H * D, Hkv * D, Hkv * D], dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)  # [B,H,T,D]
        k, v = (t.view(B, T, Hkv, D).transpose(1, 2) for t in (k, v))  # [B,Hkv,T,D]
        if self.rope:
            q, k = rotary(q), rotary(k)
        if Hkv != H:  # each k/v head serves H / Hkv consecutive q heads
            k, v = (t.repeat_interleave(H // Hkv, dim=1) for t in (k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        att = F.dropout(att, self.dropout, self.training)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return F.dropout(self.c_proj(y), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, d_model, ratio, bias, dropout, kind="gelu"):
        super().__init__()
        if kind not in ("gelu", "swiglu"):
            raise ValueError(f"mlp must be gelu or swiglu, got {kind!r}")
        self.kind = kind
        hidden = ratio * d_model if kind == "gelu" else swiglu_hidden(d_model, ratio)
        fc_out = hidden if kind == "gelu" else 2 * hidden  # swiglu: gate rows, then up rows
        self.c_fc = nn.Linear(d_model, fc_out, bias=bias)
        self.c_proj = nn.Linear(hidden, d_model, bias=bias)
        self.dropout = dropout

    def forward(self, x):
        h = self.c_fc(x)
        if self.kind == "gelu":
            h = F.gelu(h, approximate="tanh")
        else:
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        return F.dropout(self.c_proj(h), self.dropout, self.training)


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm (torch 1.13 has no nn.RMSNorm): a weight, no bias, eps 1e-5."""

    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


def make_norm(cfg):
    kind = cfg.get("norm", "layernorm")
    if kind == "layernorm":
        return LayerNorm(cfg["d_model"], cfg["bias"])
    if kind == "rmsnorm":
        return RMSNorm(cfg["d_model"])
    raise ValueError(f"norm must be layernorm or rmsnorm, got {kind!r}")


def position_kind(cfg):
    kind = cfg.get("position", "learned")
    if kind not in ("learned", "rope"):
        raise ValueError(f"position must be learned or rope, got {kind!r}")
    return kind


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = make_norm(cfg)
        self.attn = CausalSelfAttention(cfg["d_model"], cfg["n_head"], cfg["bias"], cfg["dropout"],
                                        rope=position_kind(cfg) == "rope", n_kv_head=cfg.get("n_kv_head"))
        self.ln_2 = make_norm(cfg)
        self.mlp = MLP(cfg["d_model"], cfg["mlp_ratio"], cfg["bias"], cfg["dropout"], cfg.get("mlp", "gelu"))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        cfg = model_config(cfg)
        self.cfg = cfg
        modules = dict(wte=nn.Embedding(cfg["vocab_size"], cfg["d_model"]))
        if position_kind(cfg) == "learned":
            modules["wpe"] = nn.Embedding(cfg["context"], cfg["d_model"])
        modules["h"] = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
        modules["ln_f"] = make_norm(cfg)
        self.transformer = nn.ModuleDict(modules)
        self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_weights"):
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.transformer.wte(idx)
        if "wpe" in self.transformer:
            x = x + self.transformer.wpe(torch.arange(T, device=idx.device))
        x = F.dropout(x, self.cfg["dropout"], self.training)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def param_groups(model, weight_decay, rule="matrices_no_embeddings"):
    """Weight decay groups with tinyformer's rules (see lib/tinyformer/optim)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if rule == "all":
            use = True
        elif rule == "none":
            use = False
        elif rule == "matrices":
            use = p.dim() >= 2
        else:  # matrices_no_embeddings
            use = p.dim() >= 2 and "wte" not in name and "wpe" not in name
        (decay if use else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
