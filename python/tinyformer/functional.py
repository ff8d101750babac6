"""tf.nn.functional (import tinyformer.nn.functional as F): torch.nn.functional's names over the library's ops.

    import tinyformer.nn.functional as F
    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))   # nanoGPT's line
    h = F.gelu(F.linear(x, w, b))

Each function calls the library's op (forward and backward in C++); where torch's signature offers more than the
library has, the extra case is refused with a ValueError that says so. Differences from torch: F.gelu is the tanh
approximation (GPT-2's, torch's approximate='tanh'); F.cross_entropy reduces by "mean" or "sum".
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _core

__all__ = ["pad", "one_hot", "normalize", "relu", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax", "linear", "embedding", "layer_norm",
           "rms_norm", "dropout", "cross_entropy", "mse_loss", "scaled_dot_product_attention"]


def relu(input: Any, inplace: bool = False) -> Any:
    """max(x, 0)."""
    return _core.relu(input)


def gelu(input: Any, approximate: str = "tanh") -> Any:
    """GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's (torch's
    approximate='tanh'; torch's default erf form is not a library op and is refused)."""
    if approximate != "tanh":
        raise ValueError(f"gelu(approximate={approximate!r}): the library's GELU is the tanh approximation; pass "
                         f"approximate='tanh'")
    return _core.gelu(input)


def silu(input: Any, inplace: bool = False) -> Any:
    """x * sigmoid(x)."""
    return _core.silu(input)


def tanh(input: Any) -> Any:
    """tanh(x)."""
    return _core.tanh(input)


def sigmoid(input: Any) -> Any:
    """1 / (1 + exp(-x)) (the library's sigmoid op)."""
    op = getattr(_core, "sigmoid", None)
    if op is None:
        raise NotImplementedError("sigmoid: this build's library has no sigmoid op")
    return op(input)


def softmax(input: Any, dim: int = -1) -> Any:
    """exp(x) / sum exp(x) over `dim` (max-subtracted, stable)."""
    return _core.softmax(input, dim)


def log_softmax(input: Any, dim: int = -1) -> Any:
    """log(softmax(x)) over `dim`, computed stably."""
    return _core.log_softmax(input, dim)


def linear(input: Any, weight: Any, bias: Optional[Any] = None) -> Any:
    """x W^T + b: x [..., in], weight [out, in], bias [out] -> [..., out]."""
    return _core.linear(input, weight, bias)


def embedding(input: Any, weight: Any) -> Any:
    """Rows of weight [V, C] by integer ids [...] -> [..., C] (the gradient scatter-adds into weight)."""
    return _core.embedding(np.asarray(input), weight)


def _full(value: float, shape: Sequence[int], dtype: str) -> Any:
    """A constant tensor (no gradient) of `value`, float32 or float64."""
    return _core.full(tuple(shape), float(value), dtype=dtype)


def _width(input: Any, normalized_shape: Union[int, Sequence[int]]) -> int:
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
    if len(shape) != 1 or shape[0] != input.shape[-1]:
        raise ValueError(f"normalized_shape {shape}: the library normalises over the last axis, of width "
                         f"{input.shape[-1]}")
    return int(shape[0])


def layer_norm(input: Any, normalized_shape: Union[int, Sequence[int]], weight: Optional[Any] = None,
               bias: Optional[Any] = None, eps: float = 1e-5) -> Any:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis (weight ones and bias zeros when None)."""
    C = _width(input, normalized_shape)
    weight = _full(1.0, (C,), input.dtype) if weight is None else weight
    bias = _full(0.0, (C,), input.dtype) if bias is None else bias
    return _core.layer_norm(input, weight, bias, eps)


def rms_norm(input: Any, normalized_shape: Union[int, Sequence[int]], weight: Optional[Any] = None,
             eps: Optional[float] = None) -> Any:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (weight ones when None; eps 1e-5 when None)."""
    C = _width(input, normalized_shape)
    weight = _full(1.0, (C,), input.dtype) if weight is None else weight
    return _core.rms_norm(input, weight, _core._norm_eps if eps is None else eps)


def dropout(input: Any, p: float = 0.5, training: bool = True, generator: Optional[Any] = None) -> Any:
    """Zeroes each element with probability p and scales the rest by 1/(1-p) when training; the draws come from
    `generator` (a tf.Generator: one seed, one result), which training with p > 0 needs."""
    if generator is None:
        if training and p > 0:
            raise ValueError("dropout in training needs generator=tf.Generator(seed): tinyformer draws from a seeded "
                             "generator, not a global one")
        generator = _core.Generator(0)
    return _core.dropout(input, p, training, generator)


def cross_entropy(input: Any, target: Any, ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    """The cross-entropy of logits against integer targets, as torch's: input [N, C] with target [N], or
    [N, C, d1, ...] with target [N, d1, ...] (the classes on axis 1); targets equal to ignore_index count for
    nothing. reduction "mean" (over the counted targets), "sum", or "none" (each target's loss, shaped as target;
    0 where ignored).

        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    """
    if label_smoothing != 0.0:
        raise ValueError("cross_entropy: label_smoothing is not a library op; use label_smoothing=0.0")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction={reduction!r}: valid are 'mean', 'sum' and 'none'")
    target = np.asarray(target)
    if target.dtype.kind not in "iu":
        raise ValueError(f"cross_entropy: target must hold integer class ids, got dtype {target.dtype}")
    ignored = target == ignore_index
    if ignore_index != -1 and (target == -1).any():
        raise ValueError("cross_entropy: target holds -1, which is no class (ignore_index is "
                         f"{ignore_index})")
    target = np.where(ignored, -1, target)  # the library's mark of an ignored target
    if input.ndim > 2:  # torch puts the classes on axis 1; the library's op takes them last
        input = _core.permute(input, [0, *range(2, input.ndim), 1])
    if reduction == "none":  # -log p[target] of each row: log_softmax, gather, the ignored ones times 0
        picked = _core.gather(_core.log_softmax(input, -1), -1, _core.tensor(np.where(ignored, 0, target)[..., None]))
        kept = _core.tensor((~ignored).astype(np.float64), dtype=input.dtype)
        return _core.reshape(picked, list(target.shape)) * kept * -1.0
    loss = _core.cross_entropy(input, target, -1)
    if reduction == "sum":
        loss = loss * float((~ignored).sum())
    return loss


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """mean((input - target)^2) (reduction "mean") or its sum ("sum"), from the library's sub, mul and mean/sum."""
    if reduction not in ("mean", "sum"):
        raise ValueError(f"mse_loss: reduction={reduction!r}: valid are 'mean' and 'sum'")
    diff = input - target
    return _core.mean(diff * diff) if reduction == "mean" else _core.sum(diff * diff)


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None) -> Any:
    """softmax(q k^T * scale (+ the causal mask)) v for q [..., T, D], k and v [..., S, D], composed from the
    library's matmul, scale, causal_mask and softmax (torch 2's F.scaled_dot_product_attention; scale defaults to
    1/sqrt(D)). For the fused kernel over qkv [B,T,3C] see tf.causal_self_attention."""
    if attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: attn_mask is not supported; use is_causal=True")
    if dropout_p != 0.0:
        raise ValueError("scaled_dot_product_attention: dropout_p must be 0 (use tf.causal_self_attention with a "
                         "generator for attention dropout)")
    D = query.shape[-1]
    scores = _core.scale(_core.matmul(query, key, False, True), 1.0 / math.sqrt(D) if scale is None else scale)
    if is_causal:
        scores = _core.causal_mask(scores)
    return _core.matmul(_core.softmax(scores, -1), value)


def pad(input: Any, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Any:
    """torch.nn.functional.pad with mode "constant": pad = (left, right) for the last dim, then (top, bottom) for the
    one before, ...; value fills the new entries (the gradient reaches input's). Negative pads are refused."""
    if mode != "constant":
        raise ValueError(f"pad: mode {mode!r}: only 'constant' is here")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: {list(pad)} must hold (before, after) pairs for at most {input.ndim} dims")
    if any(int(p) < 0 for p in pad):
        raise ValueError(f"pad: {list(pad)}: negative pads (cropping) are not here; slice the tensor instead")
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        parts = []
        for n in (before, after):
            shape = list(out.shape)
            shape[dim] = n
            parts.append(_core.full(tuple(shape), value, dtype=out.dtype) if n else None)
        out = _core.cat([p for p in (parts[0], out, parts[1]) if p is not None], dim)
    return out


def one_hot(tensor: Any, num_classes: int = -1) -> Any:
    """int64 [..., num_classes] with a 1 at each id (num_classes -1: the largest id + 1), as torch."""
    ids = np.asarray(tensor)
    if ids.dtype.kind not in "iu":
        raise ValueError(f"one_hot: expected integer class ids, got dtype {ids.dtype}")
    n = int(ids.max()) + 1 if num_classes < 0 and ids.size else num_classes
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"one_hot: ids must be in [0, {n}), got {int(ids.min())} to {int(ids.max())}")
    return _core.tensor(np.eye(n, dtype=np.int64)[ids] if ids.size else np.zeros((*ids.shape, n), np.int64))


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Any:
    """input / max(||input||_2 over dim, eps) (p=2 only), as torch.nn.functional.normalize."""
    if p != 2:
        raise ValueError(f"normalize: p={p}: only the 2-norm is here")
    return input / _core.clamp(_core.norm(input, dim=dim, keepdim=True), min=eps)

