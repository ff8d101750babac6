"""TransformerLens' names on tinyformer's GPT: what an interpretability notebook written for TransformerLens reaches
for, over the library's model and hook points (nn/hooks.hpp), with nothing of the model computed twice.

    model = tf.load("runs/reverse/checkpoint.safetensors")
    logits, cache = model.run_with_cache("31415926|62", names_filter=lambda name: "resid" in name)
    cache["resid_post", -1].shape                  # (1, 12, 64): blocks.1.hook_resid_post
    model.W_Q.shape                                # (n_layers, n_heads, d_model, d_head)
    model.cfg.d_head

Shapes and names follow TransformerLens: W_E [d_vocab, d_model], W_pos [n_ctx, d_model], W_Q/W_K/W_V [n_layers,
n_heads, d_model, d_head] (grouped keys and values repeated for each query head that uses them), W_O [n_layers,
n_heads, d_head, d_model], b_Q/b_K/b_V [n_layers, n_heads, d_head], b_O [n_layers, d_model], W_in [n_layers,
d_model, d_mlp], W_out [n_layers, d_mlp, d_model], W_U [d_model, d_vocab]. The weights are tensors made from the
parameters by the library's ops (split, reshape, permute, cat), so a gradient flows back to the parameters. Where
tinyformer differs: the norms' weights are not folded into the next matrix (TransformerLens' from_pretrained folds
them), so apply_ln below multiplies by the norm's weight; and a cache holds NumPy arrays (TransformerLens holds
detached torch tensors).
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .functional import _full

__all__ = ["HookedTransformerConfig", "ActivationCache", "get_act_name", "HookedTransformer", "AttentionWeights",
           "MLPWeights"]

_LAYER_TYPE_ALIASES = {"a": "attn", "m": "mlp", "b": "", "block": "", "blocks": "", "attention": "attn"}
_NAME_ALIASES = {"attn": "pattern", "attn_logits": "attn_scores", "key": "k", "query": "q", "value": "v",
                 "mlp_pre": "pre", "mlp_mid": "mid", "mlp_post": "post"}
_ATTN_NAMES = {"k", "v", "q", "z", "rot_k", "rot_q", "result", "pattern", "attn_scores"}
_MLP_NAMES = {"pre", "post", "mid", "pre_linear"}


def get_act_name(name: str, layer: Optional[Union[int, str]] = None, layer_type: Optional[str] = None) -> str:
    """A hook's full name from TransformerLens' shorthand (transformer_lens.utils.get_act_name): ("pattern", 0) ->
    "blocks.0.attn.hook_pattern", ("resid_pre", 1) -> "blocks.1.hook_resid_pre", "embed" -> "hook_embed",
    "k6" -> "blocks.6.attn.hook_k"; a full name is returned as given.

        tf.lens.get_act_name("pattern", 0)          # 'blocks.0.attn.hook_pattern'
    """
    if ("." in name or name.startswith("hook_")) and layer is None and layer_type is None:
        return name
    match = re.fullmatch(r"([a-z_]+?)(\d+)([a-z_]*\d*)", name)
    if match is not None and layer is None:
        name, layer, layer_type = match.group(1), match.group(2), match.group(3) or None
    name = _NAME_ALIASES.get(name, name)
    if name in _ATTN_NAMES:
        layer_type = "attn"
    elif name in _MLP_NAMES:
        layer_type = "mlp"
    elif layer_type in _LAYER_TYPE_ALIASES:
        layer_type = _LAYER_TYPE_ALIASES[layer_type]
    full = f"blocks.{layer}." if layer is not None else ""
    if layer_type:
        full += f"{layer_type}."
    return full + f"hook_{name}"


@dataclasses.dataclass
class HookedTransformerConfig:
    """A model's sizes and kinds under TransformerLens' field names (model.cfg). The model section's own names are
    in model.config; this is derived from it and from the parameters' shapes.

        model.cfg.n_layers, model.cfg.d_head, model.cfg.d_vocab
    """

    n_layers: int
    d_model: int
    n_ctx: int
    d_head: int
    n_heads: int
    d_mlp: Optional[int]
    d_vocab: int
    d_vocab_out: int
    act_fn: Optional[str]
    normalization_type: Optional[str]
    positional_embedding_type: str
    n_key_value_heads: Optional[int] = None
    gated_mlp: bool = False
    attn_only: bool = False
    eps: float = 1e-5
    dtype: str = "float32"
    default_prepend_bos: bool = False
    tokenizer_name: Optional[str] = None
    original_architecture: str = "tinyformer.GPT"
    model_name: str = "tinyformer"

    @classmethod
    def from_model(cls, model: Any) -> "HookedTransformerConfig":
        """The config of a tinyformer GPT (tf.nn.GPT or a loaded checkpoint)."""
        c = model.config if "d_model" in model.config else model.model_config
        params = dict(model.named_parameters())
        mlp = c.get("mlp", "gelu")
        fc = params.get("transformer.h.0.mlp.c_fc.weight")
        d_mlp = None if fc is None else (fc.shape[0] // 2 if mlp == "swiglu" else fc.shape[0])
        norm = c.get("norm", "layernorm")
        n_kv = c.get("n_kv_head") or 0
        return cls(n_layers=int(c["n_layer"]), d_model=int(c["d_model"]), n_ctx=int(c["context"]),
                   d_head=int(c["d_model"]) // int(c["n_head"]), n_heads=int(c["n_head"]), d_mlp=d_mlp,
                   d_vocab=int(c["vocab_size"]), d_vocab_out=int(c["vocab_size"]),
                   act_fn=None if fc is None else {"gelu": "gelu_new", "swiglu": "silu"}.get(mlp, mlp),
                   normalization_type={"layernorm": "LN", "rmsnorm": "RMS"}.get(norm),
                   positional_embedding_type="rotary" if c.get("position") == "rope" else "standard",
                   n_key_value_heads=int(n_kv) if n_kv and n_kv != c["n_head"] else None,
                   gated_mlp=mlp == "swiglu", attn_only=fc is None, eps=float(_core._norm_eps), dtype=model.dtype,
                   default_prepend_bos=bool(getattr(model, "_has_bos", lambda: False)()))


# ---- weights as TransformerLens shapes them, built by the library's ops (gradients reach the parameters)


def _zeros(shape: Sequence[int], dtype: str) -> Any:
    """A constant tensor of zeros (a bias the model does not have, as TransformerLens' zero biases)."""
    return _full(0.0, shape, dtype)


def _stack(tensors: Sequence[Any]) -> Any:
    """[t0, t1, ...] each [...] -> [n, ...] (cat of [1, ...] views)."""
    return _core.cat([_core.reshape(t, [1, *t.shape]) for t in tensors], 0)


def _per_query_head(parts: Sequence[Any], n_head: int) -> Any:
    """Key/value heads [Hkv, ...] stacked for each of n_head query heads: query head h uses kv head h // (H / Hkv),
    as the library's attention does (nn/self_attention.cpp, repeat_kv)."""
    group = n_head // len(parts)
    return _core.cat([parts[h // group] for h in range(n_head)], 0)


class AttentionWeights:
    """TransformerLens' per-head weights of a CausalSelfAttention (mixed into tf.nn.CausalSelfAttention): c_attn's
    rows are q (H D), k (Hkv D), v (Hkv D); c_proj's columns are the heads' outputs, head-major."""

    def _qkv(self, which: int, bias: bool) -> Any:
        c_attn = self._modules["c_attn"]
        H, Hkv = self.n_head, self.n_kv_head
        C = c_attn.in_features
        D = C // H
        params = dict(c_attn._own_parameters())
        if bias and "bias" not in params:
            return _zeros((H, D), self.dtype)
        w = params["bias" if bias else "weight"]
        part = _core.split(w, [C, Hkv * D, Hkv * D], 0)[which]
        n = H if which == 0 else Hkv
        if bias:
            heads = _core.reshape(part, [n, D])  # [n, D]
        else:
            heads = _core.permute(_core.reshape(part, [n, D, C]), [0, 2, 1])  # [n, C, D]
        if which == 0 or Hkv == H:
            return heads
        return _per_query_head(_core.split(heads, [1] * Hkv, 0), H)

    @property
    def W_Q(self) -> Any:
        """[n_heads, d_model, d_head]: q of head h = x @ W_Q[h] (+ b_Q[h])."""
        return self._qkv(0, False)

    @property
    def W_K(self) -> Any:
        """[n_heads, d_model, d_head] (a shared key head repeated for each query head that uses it)."""
        return self._qkv(1, False)

    @property
    def W_V(self) -> Any:
        """[n_heads, d_model, d_head] (a shared value head repeated for each query head that uses it)."""
        return self._qkv(2, False)

    @property
    def b_Q(self) -> Any:
        """[n_heads, d_head] (zeros without model.bias)."""
        return self._qkv(0, True)

    @property
    def b_K(self) -> Any:
        """[n_heads, d_head] (zeros without model.bias)."""
        return self._qkv(1, True)

    @property
    def b_V(self) -> Any:
        """[n_heads, d_head] (zeros without model.bias)."""
        return self._qkv(2, True)

    @property
    def W_O(self) -> Any:
        """[n_heads, d_head, d_model]: the attention's output = sum over heads of z[h] @ W_O[h] + b_O."""
        c_proj = self._modules["c_proj"]
        C = c_proj.in_features
        w = dict(c_proj._own_parameters())["weight"]  # [C out, C in]
        return _core.reshape(_core.transpose(w, 0, 1), [self.n_head, C // self.n_head, C])

    @property
    def b_O(self) -> Any:
        """[d_model] (zeros without model.bias)."""
        c_proj = self._modules["c_proj"]
        params = dict(c_proj._own_parameters())
        return params["bias"] if "bias" in params else _zeros((c_proj.out_features,), self.dtype)


class MLPWeights:
    """TransformerLens' MLP weights (mixed into tf.nn.MLP): gelu: post = gelu(x @ W_in + b_in); swiglu (TransformerLens'
    gated MLP): post = silu(x @ W_gate + b_gate) * (x @ W_in + b_in); out = post @ W_out + b_out."""

    def _fc(self, which: str, gate: bool = False) -> Any:
        c_fc = self._modules["c_fc"]
        params = dict(c_fc._own_parameters())
        gated = self.kind == "swiglu"
        hidden = c_fc.out_features // 2 if gated else c_fc.out_features
        if which == "bias" and "bias" not in params:
            return _zeros((hidden,), self.dtype)
        t = params[which]
        if gated:  # c_fc's rows: [gate; up]
            t = _core.split(t, [hidden, hidden], 0)[0 if gate else 1]
        return _core.transpose(t, 0, 1) if which == "weight" else t

    @property
    def W_in(self) -> Any:
        """[d_model, d_mlp] (swiglu: the 'up' half of c_fc)."""
        return self._fc("weight")

    @property
    def b_in(self) -> Any:
        """[d_mlp] (zeros without model.bias)."""
        return self._fc("bias")

    @property
    def W_gate(self) -> Any:
        """[d_model, d_mlp]: the gate half of c_fc (model.mlp: swiglu only)."""
        if self.kind != "swiglu":
            raise AttributeError("W_gate: this MLP is not gated (model.mlp is not swiglu)")
        return self._fc("weight", gate=True)

    @property
    def W_out(self) -> Any:
        """[d_mlp, d_model]."""
        return _core.transpose(dict(self._modules["c_proj"]._own_parameters())["weight"], 0, 1)

    @property
    def b_out(self) -> Any:
        """[d_model] (zeros without model.bias)."""
        c_proj = self._modules["c_proj"]
        params = dict(c_proj._own_parameters())
        return params["bias"] if "bias" in params else _zeros((c_proj.out_features,), self.dtype)


# ---- the model


class HookedTransformer:
    """TransformerLens' HookedTransformer names on tinyformer's GPT (mixed into tf.nn.GPT and tf.load's model)."""

    # -- structure
    @property
    def cfg(self) -> HookedTransformerConfig:
        """Sizes and kinds under TransformerLens' field names (d_model, n_heads, d_head, n_layers, d_vocab, n_ctx,
        d_mlp, act_fn, normalization_type, positional_embedding_type, ...)."""
        return HookedTransformerConfig.from_model(self)

    @property
    def blocks(self) -> Any:
        """The blocks (transformer.h) as a list of modules: blocks[l].attn, .mlp, .ln1, .ln2."""
        return self._modules["transformer"]._modules["h"]

    @property
    def ln_final(self) -> Any:
        """The final norm (transformer.ln_f)."""
        return self._modules["transformer"]._modules["ln_f"]

    def _param(self, name: str) -> Any:
        return dict(self.named_parameters())[name]

    @property
    def W_E(self) -> Any:
        """[d_vocab, d_model]: the token embedding (transformer.wte.weight)."""
        return self._param("transformer.wte.weight")

    @property
    def W_pos(self) -> Any:
        """[n_ctx, d_model]: the learned positions (transformer.wpe.weight; none with model.position: rope)."""
        params = dict(self.named_parameters())
        if "transformer.wpe.weight" not in params:
            raise AttributeError("W_pos: this model has no position table (model.position: rope turns q and k instead)")
        return params["transformer.wpe.weight"]

    @property
    def W_U(self) -> Any:
        """[d_model, d_vocab]: the unembedding, lm_head.weight transposed (wte's with model.tie_weights)."""
        params = dict(self.named_parameters())
        return _core.transpose(params.get("lm_head.weight", params["transformer.wte.weight"]), 0, 1)

    @property
    def b_U(self) -> Any:
        """[d_vocab]: zeros (the head has no bias, as nanoGPT's)."""
        return _zeros((self.W_E.shape[0],), self.dtype)

    def _stacked(self, part: str, name: str) -> Any:
        return _stack([getattr(getattr(b, part), name) for b in self.blocks])

    W_Q = property(lambda self: self._stacked("attn", "W_Q"),
                   doc="[n_layers, n_heads, d_model, d_head]: each block's attn.W_Q.")
    W_K = property(lambda self: self._stacked("attn", "W_K"), doc="[n_layers, n_heads, d_model, d_head].")
    W_V = property(lambda self: self._stacked("attn", "W_V"), doc="[n_layers, n_heads, d_model, d_head].")
    W_O = property(lambda self: self._stacked("attn", "W_O"), doc="[n_layers, n_heads, d_head, d_model].")
    b_Q = property(lambda self: self._stacked("attn", "b_Q"), doc="[n_layers, n_heads, d_head].")
    b_K = property(lambda self: self._stacked("attn", "b_K"), doc="[n_layers, n_heads, d_head].")
    b_V = property(lambda self: self._stacked("attn", "b_V"), doc="[n_layers, n_heads, d_head].")
    b_O = property(lambda self: self._stacked("attn", "b_O"), doc="[n_layers, d_model].")
    W_in = property(lambda self: self._stacked("mlp", "W_in"), doc="[n_layers, d_model, d_mlp].")
    W_gate = property(lambda self: self._stacked("mlp", "W_gate"), doc="[n_layers, d_model, d_mlp] (swiglu).")
    W_out = property(lambda self: self._stacked("mlp", "W_out"), doc="[n_layers, d_mlp, d_model].")
    b_in = property(lambda self: self._stacked("mlp", "b_in"), doc="[n_layers, d_mlp].")
    b_out = property(lambda self: self._stacked("mlp", "b_out"), doc="[n_layers, d_model].")

    # -- tokens (a model with a vocabulary: tf.load's)
    def _encode(self, text: str, prepend_bos: Optional[bool]) -> List[int]:
        raise TypeError("this GPT has no vocabulary (built from a config): give token ids, or load a checkpoint with "
                        "tf.load for text")

    def _decode(self, ids: Sequence[int]) -> str:
        raise TypeError("this GPT has no vocabulary (built from a config); load a checkpoint with tf.load for text")

    def _token_strings(self, ids: Sequence[int]) -> List[str]:
        return [str(int(i)) for i in ids]

    def to_tokens(self, input: Union[str, Sequence[str]], prepend_bos: Optional[bool] = None) -> np.ndarray:
        """Text -> token ids [batch, pos] (int64), encoded as the CLI encodes a prompt: <s> first where the
        vocabulary has it (prepend_bos=False leaves it out). A list of texts is a batch; they must encode to the
        same length.

            model.to_tokens("31415926|")        # array([[3, 1, 4, 1, 5, 9, 2, 6, 10]])
        """
        texts = [input] if isinstance(input, str) else list(input)
        rows = [self._encode(t, prepend_bos) for t in texts]
        if len({len(r) for r in rows}) > 1:
            raise ValueError(f"to_tokens: the texts encode to {sorted({len(r) for r in rows})} tokens; a batch needs "
                             f"one length (tinyformer has no padding token)")
        return np.asarray(rows, dtype=np.int64)

    def to_str_tokens(self, input: Union[str, Sequence[int], np.ndarray], prepend_bos: Optional[bool] = None
                      ) -> List[str]:
        """Text or ids -> one string per token (the vocabulary's pieces, <s> included where the prompt has it).

            model.to_str_tokens("314|")         # ['3', '1', '4', '|']
        """
        ids = self.to_tokens(input, prepend_bos)[0] if isinstance(input, str) else np.asarray(input).reshape(-1)
        return self._token_strings(ids)

    def to_string(self, tokens: Union[Sequence[int], np.ndarray]) -> Union[str, List[str]]:
        """Ids -> text: [pos] gives a string, [batch, pos] a list of strings."""
        arr = np.asarray(tokens)
        if arr.ndim == 2:
            return [self._decode(row) for row in arr]
        return self._decode(arr.reshape(-1))

    def to_single_token(self, string: str) -> int:
        """The id of a string that is exactly one token (without <s>); ValueError otherwise."""
        ids = self._encode(string, False)
        if len(ids) != 1:
            raise ValueError(f"to_single_token: {string!r} is {len(ids)} tokens, not one")
        return int(ids[0])

    def _tokens(self, input: Any) -> np.ndarray:
        """Text (or a list of texts) or ids -> ids [batch, pos] (one row for a 1-D input)."""
        if isinstance(input, str) or (isinstance(input, (list, tuple)) and input and isinstance(input[0], str)):
            return self.to_tokens(input)
        ids = np.asarray(input)
        return ids.reshape(1, -1) if ids.ndim <= 1 else ids

    # -- running with a cache
    def run_with_cache(self, input: Any, names_filter: Union[None, str, Sequence[str], Callable[[str], bool]] = None,
                       remove_batch_dim: bool = False) -> Tuple[np.ndarray, "ActivationCache"]:
        """(logits [batch, pos, d_vocab], cache): the library's forward on text or ids with the activations copied
        into an ActivationCache (NumPy arrays) under their hook names. names_filter: a name, a list of names or a
        function of the name; only those are kept, and a forward whose names stay outside the attention's insides
        runs the plain (fused) attention.

            logits, cache = model.run_with_cache("31415926|62", names_filter=lambda n: n.endswith("hook_pattern"))
            cache["pattern", 0].shape           # (1, n_heads, pos, pos)
        """
        ids = self._tokens(input)
        names = _filtered_names(self.hook_names(), names_filter)
        logits, acts = self._run_with_cache(ids, names)
        cache = ActivationCache(acts, self, tokens=ids)
        if remove_batch_dim:
            cache.remove_batch_dim()
        return logits, cache


def _filtered_names(all_names: List[str], names_filter: Any) -> Optional[List[str]]:
    if names_filter is None:
        return None
    if isinstance(names_filter, str):
        wanted = [names_filter]
    elif callable(names_filter):
        wanted = [n for n in all_names if names_filter(n)]
    else:
        wanted = list(names_filter)
    unknown = [n for n in wanted if n not in all_names]
    if unknown:
        raise ValueError(f"names_filter: {unknown[0]!r} is not a hook of this model (model.hook_names() lists them)")
    return wanted


# ---- the cache

_PosSlice = Union[None, int, slice, Tuple[int, ...], Sequence[int], np.ndarray]


def _apply_slice(x: np.ndarray, pos_slice: _PosSlice, dim: int) -> np.ndarray:
    """TransformerLens' Slice on axis `dim`: None keeps all, an int picks one position (the axis goes), a tuple is
    slice(*t), a list or array picks those positions."""
    if pos_slice is None:
        return x
    if isinstance(pos_slice, tuple):
        pos_slice = slice(*pos_slice)
    index = [slice(None)] * x.ndim
    index[dim] = pos_slice if isinstance(pos_slice, (int, np.integer, slice)) else np.asarray(pos_slice)
    return x[tuple(index)]


class ActivationCache(Mapping):
    """The activations of one forward by hook name (NumPy arrays), as TransformerLens' ActivationCache: a read-only
    dict with TransformerLens' shorthand keys and its stacking helpers.

        cache["blocks.0.attn.hook_pattern"]           # by full name
        cache["pattern", 0]                           # the same: (name, layer) as utils.get_act_name
        cache["resid_post", -1]                       # the last block's output
        resid, labels = cache.accumulated_resid(apply_ln=True, return_labels=True)   # the logit lens
    """

    def __init__(self, cache_dict: Dict[str, np.ndarray], model: Any, has_batch_dim: bool = True,
                 tokens: Optional[np.ndarray] = None) -> None:
        self.cache_dict = dict(cache_dict)
        self.model = model
        self.has_batch_dim = has_batch_dim
        self.tokens = tokens

    # -- the mapping
    def _name(self, key: Any) -> str:
        if isinstance(key, str):
            return key if key in self.cache_dict else get_act_name(key)
        if not isinstance(key, tuple) or not key or not isinstance(key[0], str):
            raise KeyError(f"{key!r}: a cache key is a hook name or (name, layer[, layer_type])")
        name, *rest = key
        if rest and rest[0] is not None and int(rest[0]) < 0:
            rest[0] = self.model.cfg.n_layers + int(rest[0])
        return get_act_name(name, *rest)

    def __getitem__(self, key: Any) -> np.ndarray:
        name = self._name(key)
        if name not in self.cache_dict:
            hint = ("; it was left out by names_filter" if name in self.model.hook_names()
                    else " (model.hook_names() lists the hooks)")
            raise KeyError(f"{name!r} is not in the cache{hint}")
        return self.cache_dict[name]

    def __contains__(self, key: object) -> bool:
        try:
            return self._name(key) in self.cache_dict
        except (KeyError, TypeError, ValueError):
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self.cache_dict)

    def __len__(self) -> int:
        return len(self.cache_dict)

    def __repr__(self) -> str:
        return f"ActivationCache with keys {list(self.cache_dict)}"

    def remove_batch_dim(self) -> "ActivationCache":
        """Drops the batch axis (batch size 1 only) of every activation; returns self."""
        if self.has_batch_dim:
            sizes = {v.shape[0] for v in self.cache_dict.values() if v.ndim and v.shape[0] != 1}
            if sizes:
                raise ValueError(f"remove_batch_dim: the batch has {sorted(sizes)[0]} rows, not 1")
            self.cache_dict = {k: (v[0] if v.ndim and v.shape[0] == 1 else v) for k, v in self.cache_dict.items()}
            self.has_batch_dim = False
            if self.tokens is not None:
                self.tokens = self.tokens[0]
        return self

    # -- the residual stream
    def _n_layers(self) -> int:
        return self.model.cfg.n_layers

    def _layer_or_all(self, layer: Optional[int]) -> int:
        n = self._n_layers()
        if layer is None or layer == -1:
            return n
        if not 0 <= layer <= n:
            raise ValueError(f"layer {layer}: valid are 0 to {n} (or -1 / None: after the last block)")
        return int(layer)

    def accumulated_resid(self, layer: Optional[int] = None, incl_mid: bool = False, apply_ln: bool = False,
                          pos_slice: _PosSlice = None, mlp_input: bool = False, return_labels: bool = False
                          ) -> Union[np.ndarray, Tuple[np.ndarray, List[str]]]:
        """The residual stream before each block up to `layer` (labels "0_pre", "1_pre", ..., with incl_mid also
        "0_mid", ...), and after the last block ("final_post") when layer is None, -1 or n_layers:
        [components, (batch,) pos, d_model]. apply_ln: after the last block each component goes through the final
        norm itself (so final_post @ W_U are the model's logits: the logit lens); before it, see apply_ln_to_stack.

            resid, labels = cache.accumulated_resid(apply_ln=True, return_labels=True)
            layer_logits = resid @ model.W_U.numpy()
        """
        layer = self._layer_or_all(layer)
        n = self._n_layers()
        parts, labels = [], []
        for l in range(layer + 1):
            if l == n:
                parts.append(self["resid_post", n - 1])
                labels.append("final_post")
                continue
            parts.append(self["resid_pre", l])
            labels.append(f"{l}_pre")
            if (incl_mid and l < layer) or (mlp_input and l == layer):
                parts.append(self["resid_mid", l])
                labels.append(f"{l}_mid")
        stack = np.stack([_apply_slice(p, pos_slice, -2) for p in parts])
        if apply_ln:
            stack = (self._final_norm(stack) if layer == n
                     else self.apply_ln_to_stack(stack, layer, mlp_input=mlp_input, pos_slice=pos_slice))
        return (stack, labels) if return_labels else stack

    def decompose_resid(self, layer: Optional[int] = None, mlp_input: bool = False, mode: str = "all",
                        apply_ln: bool = False, pos_slice: _PosSlice = None, incl_embeds: bool = True,
                        return_labels: bool = False) -> Union[np.ndarray, Tuple[np.ndarray, List[str]]]:
        """The residual stream before block `layer` (None: after the last) as the sum of its parts: "embed",
        "pos_embed" (learned positions; broadcast over the batch), and each earlier block's "{l}_attn_out" and
        "{l}_mlp_out" (mode "attn" or "mlp" keeps one kind): [components, (batch,) pos, d_model]. The parts add up to
        resid_pre of `layer` (resid_post of the last block for None). apply_ln: see apply_ln_to_stack.

            parts, labels = cache.decompose_resid(return_labels=True)
        """
        if mode not in ("all", "attn", "mlp"):
            raise ValueError(f"decompose_resid: mode {mode!r}: valid are 'all', 'attn', 'mlp'")
        layer = self._layer_or_all(layer)
        parts, labels = [], []
        if incl_embeds:
            if "hook_embed" in self.cache_dict:
                parts.append(self["hook_embed"])
                labels.append("embed")
            if "hook_pos_embed" in self.cache_dict:
                parts.append(self["hook_pos_embed"])
                labels.append("pos_embed")
        for l in range(layer):
            if mode != "mlp":
                parts.append(self["attn_out", l])
                labels.append(f"{l}_attn_out")
            if mode != "attn" and not self.model.cfg.attn_only:
                parts.append(self["mlp_out", l])
                labels.append(f"{l}_mlp_out")
        if mlp_input and mode != "mlp" and layer < self._n_layers():
            parts.append(self["attn_out", layer])
            labels.append(f"{layer}_attn_out")
        if not parts:
            raise ValueError("decompose_resid: no component (the cache lacks them, or incl_embeds=False at layer 0)")
        shape = np.broadcast_shapes(*(p.shape for p in parts))  # pos_embed [1,T,C] broadcasts over the batch
        stack = _apply_slice(np.stack([np.broadcast_to(p, shape) for p in parts]), pos_slice, -2)
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, mlp_input=mlp_input, pos_slice=pos_slice)
        return (stack, labels) if return_labels else stack

    def compute_head_results(self) -> None:
        """Adds blocks.{l}.attn.hook_result [(batch,) pos, n_heads, d_model] to the cache: each head's output,
        z[..., h, :] @ W_O[l, h] (without b_O: the attention's output is their sum plus b_O)."""
        W_O = np.asarray(self.model.W_O)
        for l in range(self._n_layers()):
            self.cache_dict[f"blocks.{l}.attn.hook_result"] = np.einsum("...hd,hdm->...hm", self["z", l], W_O[l])

    def stack_head_results(self, layer: int = -1, return_labels: bool = False, incl_remainder: bool = False,
                           pos_slice: _PosSlice = None, apply_ln: bool = False
                           ) -> Union[np.ndarray, Tuple[np.ndarray, List[str]]]:
        """Each head's output of the blocks before `layer` (-1 or None: all), labelled "L0H0", "L0H1", ...:
        [layer * n_heads, (batch,) pos, d_model]; incl_remainder adds "remainder", the rest of that residual stream
        (so the stack sums to it). apply_ln: see apply_ln_to_stack.

            heads, labels = cache.stack_head_results(return_labels=True)
        """
        layer = self._layer_or_all(layer)
        if f"blocks.{max(layer - 1, 0)}.attn.hook_result" not in self.cache_dict:
            self.compute_head_results()
        parts, labels = [], []
        for l in range(layer):
            result = _apply_slice(self["result", l], pos_slice, -3)  # [..., H, d_model]
            parts.extend(np.moveaxis(result, -2, 0))
            labels.extend(f"L{l}H{h}" for h in range(result.shape[-2]))
        if incl_remainder:
            total = _apply_slice(self["resid_post", layer - 1] if layer else self["resid_pre", 0], pos_slice, -2)
            parts.append(total - (np.sum(parts, axis=0) if parts else 0))
            labels.append("remainder")
        if not parts:
            empty = _apply_slice(self["hook_embed"], pos_slice, -2)
            stack = np.zeros((0, *empty.shape), dtype=empty.dtype)
        else:
            stack = np.stack(parts)
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer, pos_slice=pos_slice)
        return (stack, labels) if return_labels else stack

    def stack_activation(self, activation_name: str, layer: int = -1, sublayer_type: Optional[str] = None
                         ) -> np.ndarray:
        """cache[activation_name, l] of each block before `layer` (-1: all), stacked: [layers, ...]."""
        layer = self._layer_or_all(layer)
        return np.stack([self[activation_name, l, sublayer_type] if sublayer_type else self[activation_name, l]
                         for l in range(layer)])

    # -- norms
    def _norm_input(self, layer: int, mlp_input: bool) -> Tuple[np.ndarray, Any]:
        """The residual stream a norm reads and that norm: ln_final after the last block, else ln_1 (ln_2 with
        mlp_input) of `layer`."""
        if layer == self._n_layers():
            return self["resid_post", layer - 1], self.model.ln_final
        block = self.model.blocks[layer]
        return (self["resid_mid", layer], block.ln2) if mlp_input else (self["resid_pre", layer], block.ln1)

    def apply_ln_to_stack(self, residual_stack: np.ndarray, layer: Optional[int] = None, mlp_input: bool = False,
                          pos_slice: _PosSlice = None) -> np.ndarray:
        """Each component as its share of what the norm before block `layer` (None: the final norm; mlp_input: the
        MLP's norm) makes of the whole stream: centred (LayerNorm), divided by the whole stream's scale
        sqrt(var + eps) (RMSNorm: sqrt(mean(x^2) + eps)), as TransformerLens does with the cached scale, and
        multiplied by the norm's weight (tinyformer does not fold it into the next matrix). The components then add
        up to the norm's output less its bias."""
        layer = self._layer_or_all(layer)
        stream, norm = self._norm_input(layer, mlp_input)
        stream = _apply_slice(stream, pos_slice, -2).astype(np.float64)
        layernorm = norm.norm != "rmsnorm"
        centred = stream - stream.mean(-1, keepdims=True) if layernorm else stream
        scale = np.sqrt((centred ** 2).mean(-1, keepdims=True) + norm.eps)
        x = residual_stack - residual_stack.mean(-1, keepdims=True) if layernorm else residual_stack
        weight = dict(norm.named_parameters())["weight"].numpy()
        return (x / scale * weight).astype(residual_stack.dtype)

    def _final_norm(self, stack: np.ndarray) -> np.ndarray:
        """The model's final norm (the library's op) on each component."""
        from . import tensor, no_grad
        with no_grad():
            return np.asarray(self.model.ln_final(tensor(np.ascontiguousarray(stack), dtype=self.model.dtype)))

    # -- attention maps
    def attention_map(self, batch: int = 0, layers: Optional[Sequence[int]] = None, title: Optional[str] = None
                      ) -> Any:
        """The patterns (blocks.{l}.attn.hook_pattern) of one batch row as a tinyformer.AttentionMap [L,H,T,T] with
        the row's tokens: it shows inline in a notebook (head view, maps, score table), .save_png(), .save_html().

            cache.attention_map()               # in a notebook cell: the head view
        """
        from .views import AttentionMap
        layers = list(range(self._n_layers())) if layers is None else list(layers)
        patterns = [self["pattern", l] for l in layers]
        weights = np.stack([p[batch] if self.has_batch_dim else p for p in patterns])
        ids = None if self.tokens is None else (self.tokens[batch] if self.has_batch_dim else self.tokens)
        labels = None if ids is None else self.model.to_str_tokens(np.asarray(ids))
        return AttentionMap(weights, labels, ids=ids, title=title or "attention (run_with_cache)")
