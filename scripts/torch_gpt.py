"""The GPT architecture of tinyformer in PyTorch, with nanoGPT's parameter names.

Used by compare_with_pytorch.py (parity of losses and gradients) and bench_vs_pytorch.py (speed).
Pre-LayerNorm blocks, learned positions, GELU (tanh approximation), causal attention, optional tied head.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bias, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head = n_head
        self.dropout = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        H, D = self.n_head, C // self.n_head
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))  # [B,H,T,D]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        att = F.dropout(att, self.dropout, self.training)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return F.dropout(self.c_proj(y), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, n_embd, ratio, bias, dropout):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, ratio * n_embd, bias=bias)
        self.c_proj = nn.Linear(ratio * n_embd, n_embd, bias=bias)
        self.dropout = dropout

    def forward(self, x):
        return F.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")), self.dropout, self.training)


class LayerNorm(nn.Module):
    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.attn = CausalSelfAttention(cfg["n_embd"], cfg["n_head"], cfg["bias"], cfg["dropout"])
        self.ln_2 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.mlp = MLP(cfg["n_embd"], cfg["mlp_ratio"], cfg["bias"], cfg["dropout"])

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg["vocab_size"], cfg["n_embd"]),
            wpe=nn.Embedding(cfg["block_size"], cfg["n_embd"]),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])]),
            ln_f=LayerNorm(cfg["n_embd"], cfg["bias"]),
        ))
        self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_weights"):
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = F.dropout(self.transformer.wte(idx) + self.transformer.wpe(pos), self.cfg["dropout"], self.training)
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
