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
them), so apply_ln below multiplies by the norm's weight. Logits, cache entries, the cache's stacks and what a hook
gets are tensors outside the graph (TransformerLens' detached torch tensors): torch's methods work on them
(`logits.log_softmax(dim=-1)`, `cache["pattern", 0].mean(dim=0)`), and NumPy takes them (np.asarray, plotting).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import sys
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .factored_matrix import FactoredMatrix
from .functional import _full

__all__ = ["HookedTransformerConfig", "ActivationCache", "get_act_name", "HookedTransformer", "AttentionWeights",
           "MLPWeights", "HookPoint", "FactoredMatrix", "lm_cross_entropy_loss", "to_numpy", "test_prompt", "utils", "patching", "head_detector"]

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
    if name in ("scale", "normalized") and layer is None:  # the final norm's
        return f"ln_final.hook_{name}"
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

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict."""
        return dataclasses.asdict(self)

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

    def to_single_str_token(self, int_token: int) -> str:
        """The string of one token id."""
        return self._token_strings([int(int_token)])[0]

    def tokens_to_residual_directions(self, tokens: Any) -> Any:
        """The unembedding direction of each token (a column of W_U): an id (or a one-token string) gives [d_model],
        ids [...] give [..., d_model]. A tensor (gradients reach the head's weight)."""
        if isinstance(tokens, str):
            tokens = self.to_single_token(tokens)
        return _core.embedding(np.asarray(tokens, dtype=np.int64), _core.transpose(self.W_U, 0, 1))

    def loss_fn(self, logits: Any, tokens: Any, per_token: bool = False) -> Any:
        """The next-token loss of logits on tokens (lm_cross_entropy_loss)."""
        return lm_cross_entropy_loss(logits, self._tokens(tokens), per_token)

    @property
    def OV(self) -> "FactoredMatrix":
        """W_V @ W_O as a FactoredMatrix [n_layers, n_heads, d_model, d_model]: what each head writes for what it
        reads (NumPy; model.OV[l, h].AB is the full matrix)."""
        return FactoredMatrix(np.asarray(self.W_V), np.asarray(self.W_O))

    @property
    def QK(self) -> "FactoredMatrix":
        """W_Q @ W_K^T as a FactoredMatrix [n_layers, n_heads, d_model, d_model]: the bilinear form of each head's
        scores (query residual on the left, key residual on the right; before 1/sqrt(d_head) and the rotation of
        model.position: rope)."""
        return FactoredMatrix(np.asarray(self.W_Q), np.swapaxes(np.asarray(self.W_K), -1, -2))

    def set_use_attn_result(self, use_attn_result: bool) -> None:
        """With True, run_with_cache adds blocks.{l}.attn.hook_result to each cache (ActivationCache.
        compute_head_results, from the cached z), as TransformerLens' cfg.use_attn_result."""
        self._hook_state()["use_attn_result"] = bool(use_attn_result)

    def _tokens(self, input: Any) -> np.ndarray:
        """Text (or a list of texts) or ids -> ids [batch, pos] (one row for a 1-D input)."""
        if isinstance(input, str) or (isinstance(input, (list, tuple)) and input and isinstance(input[0], str)):
            return self.to_tokens(input)
        ids = np.asarray(input)
        return ids.reshape(1, -1) if ids.ndim <= 1 else ids

    # -- running: TransformerLens' forward, hooks and cache over the library's forward (nn/hooks.hpp)
    def _run(self, input: Any, return_type: Optional[str], loss_per_token: bool = False, fwd_hooks: Any = (),
             names: Optional[List[str]] = None, cache_all: bool = False, bwd_hooks: Any = ()
             ) -> Tuple[Any, Dict[str, np.ndarray]]:
        """(the forward's output as TransformerLens' return_type, the activations cached by name): the hooks added
        with add_hook, then fwd_hooks, then the cache (every name with cache_all, else `names`); the backward hooks
        added and bwd_hooks go with the forward's graph, for a later backward()."""
        if return_type not in ("logits", "loss", "both", None):
            raise ValueError(f"return_type {return_type!r}: valid are 'logits', 'loss', 'both' and None")
        ids = self._tokens(input)
        if return_type in ("loss", "both") and ids.shape[-1] < 2:
            raise ValueError("return_type 'loss' needs at least two tokens (each predicts the next)")
        state = self._hook_state()
        hooks = self._library_hooks([*state["added"], *fwd_hooks])
        bwd = self._library_hooks([*state["added_bwd"], *bwd_hooks], "bwd_hooks")
        if hooks or bwd or names or cache_all:
            logits, acts = self._impl.run_hooked(ids, hooks, bwd, list(names or []), cache_all)
        else:
            logits, acts = self._impl.forward(ids), {}
        if return_type in (None, "logits"):
            return (None if return_type is None else logits), acts
        loss = lm_cross_entropy_loss(logits, ids, per_token=loss_per_token)
        return (loss if return_type == "loss" else (logits, loss)), acts

    def run_with_cache(self, input: Any, names_filter: Union[None, str, Sequence[str], Callable[[str], bool]] = None,
                       remove_batch_dim: bool = False, return_type: Optional[str] = "logits",
                       loss_per_token: bool = False, incl_bwd: bool = False) -> Tuple[Any, "ActivationCache"]:
        """(logits [batch, pos, d_vocab], cache): the library's forward on text or ids with the activations
        copied into an ActivationCache (tensors outside the graph) under their hook names, after any hooks of
        add_hook or model.hooks(). names_filter: a name, a list of names or a function of the name; only those are
        kept, and a forward whose names stay outside the attention's and the MLP's insides runs the plain (fused)
        modules.
        return_type "loss" or "both" as forward (the loss a tensor). incl_bwd=True (with return_type "loss") also runs
        loss.backward() and caches the gradient at each of those names under name + "_grad" (the parameters' .grad
        receive theirs too, as TransformerLens').

            logits, cache = model.run_with_cache("31415926|62", names_filter=lambda n: n.endswith("hook_pattern"))
            cache["pattern", 0].shape           # (1, n_heads, pos, pos)
        """
        names = _filtered_names(self.hook_names(), names_filter)
        if incl_bwd and return_type != "loss":
            raise ValueError(f"run_with_cache(incl_bwd=True) runs backward() on the output: give return_type='loss' "
                             f"(one number), not {return_type!r}")
        ids = self._tokens(input)  # once: a prompt's encoding (and any warning of it) is not repeated
        grads: Dict[str, Any] = {}
        kept = self.hook_names() if names is None else names
        bwd = [(n, functools.partial(_keep_grad, grads)) for n in kept] if incl_bwd else []
        out, acts = self._run(ids, return_type, loss_per_token, names=names, cache_all=names is None, bwd_hooks=bwd)
        if incl_bwd:
            out.backward()
            acts.update((name + "_grad", grads[name]) for name in kept if name in grads)
        cache = ActivationCache(acts, self, tokens=ids)
        if self._hook_state().get("use_attn_result") and any(k.endswith("attn.hook_z") for k in acts):
            cache.compute_head_results()
        if remove_batch_dim:
            cache.remove_batch_dim()
        return _detached(out, return_type), cache

    def run_with_hooks(self, input: Any, fwd_hooks: Sequence[Tuple[Any, Callable]] = (), bwd_hooks: Sequence[Any] = (),
                       reset_hooks_end: bool = True, clear_contexts: bool = False, return_type: Optional[str] = "logits",
                       loss_per_token: bool = False) -> Any:
        """The forward with hooks [(name, fn)] (and those of add_hook): fn(activation, hook) gets a copy (a tensor)
        and the HookPoint (hook.name, hook.layer(), hook.ctx), and returns a replacement of the same shape, or None:
        the copy goes on, with what fn wrote into it (`z[:, :, head] = 0` ablates a head, as in TransformerLens). A
        name may be a function of the name (every hook it accepts). Logits [B,T,V] (outside the graph), or
        return_type "loss" / "both" as forward. An unknown name or a wrong shape is a ValueError naming it.
        bwd_hooks [(name, fn)]: fn(grad, hook) on the gradient at that point in a later backward() through this
        forward (the output keeps its graph then), answering as a forward hook. They go with that forward's graph,
        so reset_hooks_end does not take them off before the backward (TransformerLens' would).

            def ablate_head_0(z, hook):
                z[:, :, 0] = 0
            loss = model.run_with_hooks(tokens, return_type="loss", fwd_hooks=[("blocks.0.attn.hook_z", ablate_head_0)])
        """
        out, _ = self._run(input, return_type, loss_per_token, fwd_hooks=fwd_hooks, bwd_hooks=bwd_hooks)
        if clear_contexts:
            self._clear_contexts()
        return out if bwd_hooks or self._hook_state()["added_bwd"] else _detached(out, return_type)

    # -- hooks that stay: add_hook, reset_hooks, hooks(), hook_dict
    def _hook_state(self) -> Dict[str, Any]:
        """This model's added hooks and its HookPoints (made on first use: a module's attributes go through
        nn.Module's __setattr__, so the state lives in the instance dict)."""
        state = self.__dict__.get("_lens_hooks")
        if state is None:
            state = {"added": [], "added_bwd": [], "permanent": [],
                     "points": {n: HookPoint(n, self) for n in self.hook_names()}}
            self.__dict__["_lens_hooks"] = state
        return state

    @property
    def hook_dict(self) -> Dict[str, "HookPoint"]:
        """{name: HookPoint} of every hook point, in the forward's order (model.hook_names())."""
        return dict(self._hook_state()["points"])

    def _library_hooks(self, fwd_hooks: Sequence[Tuple[Any, Callable]], what: str = "fwd_hooks"
                       ) -> List[Tuple[str, Callable]]:
        """[(name, fn(activation or gradient, name))] for the library: a name that is a function becomes every hook
        name it accepts, and each fn gets its HookPoint. `what` names the list in a refusal."""
        points = self._hook_state()["points"]
        out = []
        arg = "grad" if what == "bwd_hooks" else "activation"
        if isinstance(fwd_hooks, (str, bytes)) or not isinstance(fwd_hooks, Iterable):
            raise TypeError(f"{what}: expected a list of (name, fn({arg}, hook)), got {type(fwd_hooks).__name__}")
        for i, pair in enumerate(fwd_hooks):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not callable(pair[1]):
                raise TypeError(f"{what}[{i}]: expected (name, fn({arg}, hook)), got {pair!r}")
            name, fn = pair
            if callable(name):
                out += [(n, _with_point(fn, points[n])) for n in points if name(n)]
            elif isinstance(name, str):
                out.append((name, _with_point(fn, points.get(name) or HookPoint(name))))
            else:
                raise TypeError(f"{what}[{i}]: a hook's name is a string or a function of the name, got "
                                f"{type(name).__name__}")
        return out

    def add_hook(self, name: Union[str, Callable[[str], bool]], hook: Callable, dir: str = "fwd",
                 is_permanent: bool = False) -> None:
        """Keeps hook(activation, hook_point) on `name` (a hook name or a function of it) for every later forward,
        run_with_cache and run_with_hooks, until reset_hooks() (is_permanent: reset_hooks(including_permanent=True)).
        dir="bwd": hook(grad, hook_point) on the gradient there, in the backward() through each later forward."""
        _check_dir(dir, "dir", both=False)
        self._library_hooks([(name, hook)], "bwd_hooks" if dir == "bwd" else "fwd_hooks")  # checked now
        state = self._hook_state()
        pair = (name, hook)
        state["added_bwd" if dir == "bwd" else "added"].append(pair)
        if is_permanent:
            state["permanent"].append(pair)

    def reset_hooks(self, clear_contexts: bool = True, direction: str = "both", including_permanent: bool = False
                    ) -> None:
        """Removes the hooks of add_hook in `direction` ("fwd", "bwd" or "both"; the permanent ones too with
        including_permanent) and empties each HookPoint's ctx (clear_contexts)."""
        _check_dir(direction, "direction")
        _take_off(self._hook_state(), direction, including_permanent)
        if clear_contexts:
            self._clear_contexts()

    def _clear_contexts(self) -> None:
        for point in self._hook_state()["points"].values():
            point.ctx.clear()

    @contextlib.contextmanager
    def hooks(self, fwd_hooks: Sequence[Tuple[Any, Callable]] = (), bwd_hooks: Sequence[Any] = (),
              reset_hooks_end: bool = True, clear_contexts: bool = False) -> Iterator["HookedTransformer"]:
        """with model.hooks(fwd_hooks=[(name, fn)], bwd_hooks=[(name, fn)]): every forward inside runs with these
        hooks (a backward hook on the gradient in the backward() through it); they are removed at the end
        (reset_hooks_end=False keeps them).

            with model.hooks(fwd_hooks=[("blocks.0.attn.hook_pattern", show)]):
                model(tokens)
        """
        self._library_hooks(fwd_hooks)  # every pair is checked before any is added
        self._library_hooks(bwd_hooks, "bwd_hooks")
        state = self._hook_state()
        before, before_bwd = list(state["added"]), list(state["added_bwd"])
        for name, fn in fwd_hooks:
            self.add_hook(name, fn)
        for name, fn in bwd_hooks:
            self.add_hook(name, fn, dir="bwd")
        try:
            yield self
        finally:
            if reset_hooks_end:
                state["added"], state["added_bwd"] = before, before_bwd
            if clear_contexts:
                self._clear_contexts()


class HookPoint:
    """What a hook function gets besides the activation, as TransformerLens' HookPoint: hook.name, hook.layer() and
    hook.ctx (a dict kept between forwards until reset_hooks); also a module's attribute (model.blocks[0].attn
    .hook_z), with add_hook and remove_hooks."""

    def __init__(self, name: str, model: Optional[HookedTransformer] = None) -> None:
        self.name = name
        self.ctx: Dict[str, Any] = {}
        self._model = None if model is None else weakref.ref(model)

    def _owner(self) -> HookedTransformer:
        model = self._model() if self._model is not None else None
        if model is None:
            raise ValueError(f"{self.name}: this hook point belongs to no model (add hooks with model.add_hook)")
        return model

    def add_hook(self, hook: Callable, dir: str = "fwd", is_permanent: bool = False) -> None:
        """hook(activation, hook_point) on this point for every later forward (model.add_hook(self.name, hook));
        dir="bwd": hook(grad, hook_point) on the gradient here."""
        self._owner().add_hook(self.name, hook, dir=dir, is_permanent=is_permanent)

    def remove_hooks(self, dir: str = "fwd", including_permanent: bool = False) -> None:
        """Removes the hooks added on this point by name in `dir` ("fwd", "bwd" or "both"; the permanent ones too
        with including_permanent)."""
        _check_dir(dir, "dir")
        _take_off(self._owner()._hook_state(), dir, including_permanent, self.name)

    def layer(self) -> int:
        """The block of this hook (blocks.{l}....); a ValueError for hooks outside the blocks (hook_embed, ...)."""
        match = re.match(r"blocks\.(\d+)\.", self.name)
        if match is None:
            raise ValueError(f"{self.name} is not in a block: it has no layer")
        return int(match.group(1))

    def __repr__(self) -> str:
        return f"HookPoint({self.name!r})"


def module_hook_prefix(path: str) -> str:
    """The hook names' prefix of the module at nanoGPT's `path`: "transformer.h.0.ln_1" -> "blocks.0.ln1.",
    "transformer.ln_f" -> "ln_final.", the model itself ("") -> ""."""
    if not path:
        return ""
    path = re.sub(r"^transformer\.h\.", "blocks.", path)
    path = re.sub(r"^transformer\.ln_f$", "ln_final", path)
    path = re.sub(r"\.ln_([12])$", r".ln\1", path)
    return path + "."


def _check_cpu(device: Any) -> None:
    if _core._device_type(device) != "cpu":
        raise ValueError(f"to({device!r}): tinyformer runs on the CPU ('cpu'); a model's dtype is chosen when it is "
                         f"built (tf.nn.GPT(config, dtype=...))")


def _with_point(fn: Callable, point: HookPoint) -> Callable:
    return lambda activation, name: fn(activation, point)


def _check_dir(value: Any, what: str, both: bool = True) -> None:
    valid = ("fwd", "bwd", "both") if both else ("fwd", "bwd")
    if value not in valid:
        raise ValueError(f"{what} {value!r}: valid are {', '.join(map(repr, valid))}")


def _take_off(state: Dict[str, Any], direction: str, including_permanent: bool, name: Optional[str] = None) -> None:
    """Takes the hooks of add_hook in `direction` ("fwd", "bwd" or "both") off, those added under `name` alone when
    given; a permanent one only with including_permanent."""
    for key, kind in (("added", "fwd"), ("added_bwd", "bwd")):
        if direction not in (kind, "both"):
            continue
        gone = [h for h in state[key] if (name is None or h[0] == name)
                and (including_permanent or not any(h is k for k in state["permanent"]))]
        state[key] = [h for h in state[key] if not any(h is g for g in gone)]
        state["permanent"] = [k for k in state["permanent"] if not any(k is g for g in gone)]


def _keep_grad(grads: Dict[str, Any], grad: Any, hook: "HookPoint") -> None:
    """run_with_cache(incl_bwd=True)'s backward hook: the gradient at the hook, kept by its name."""
    grads[hook.name] = grad


def _detached(out: Any, return_type: Optional[str]) -> Any:
    """run_with_cache and run_with_hooks give logits outside the graph (as TransformerLens' analysis under no_grad);
    a loss keeps its graph, as forward's."""
    if return_type == "logits":
        return out.detach()
    if return_type == "both":
        return out[0].detach(), out[1]
    return out


def _stack_out(stack: np.ndarray, labels: List[str], return_labels: bool) -> Any:
    """A cache helper's result: the stack as a tensor, with its labels when asked."""
    return (_as_tensor(stack), labels) if return_labels else _as_tensor(stack)


def _as_tensor(array: np.ndarray) -> Any:
    """A cache's array as what the cache gives: a tensor outside the graph (a copy; NumPy's dtype kept)."""
    return _core.tensor(np.ascontiguousarray(array))


def test_prompt(prompt: str, answer: str, model: Any, prepend_space_to_answer: bool = False, print_details: bool = True,
                prepend_bos: Optional[bool] = None, top_k: int = 10) -> List[Tuple[str, int]]:
    """TransformerLens' utils.test_prompt: runs prompt + answer and prints, for each token of the answer, its rank
    among the next-token logits, its logit and probability, and the top_k tokens there; returns [(answer token, rank)].
    prepend_space_to_answer defaults to False here (TransformerLens: True, for GPT-2's words that start with a
    space; a character vocabulary has none).

        tf.lens.utils.test_prompt("31415926|", "6", model)
    """
    answer = (" " + answer) if prepend_space_to_answer and not answer.startswith(" ") else answer
    prompt_ids = model.to_tokens(prompt, prepend_bos)[0]
    answer_ids = model.to_tokens(answer, prepend_bos=False)[0]
    ids = np.concatenate([prompt_ids, answer_ids])[None]
    logits = np.asarray(model(ids).detach().numpy(), dtype=np.float64)[0]  # [pos, d_vocab]
    logp = logits - logits.max(-1, keepdims=True)
    probs = np.exp(logp) / np.exp(logp).sum(-1, keepdims=True)
    strings = model.to_str_tokens
    if print_details:
        print("Tokenized prompt:", strings(prompt_ids))
        print("Tokenized answer:", strings(answer_ids))
    ranks = []
    for i, token in enumerate(answer_ids):
        at = len(prompt_ids) + i - 1  # the position whose logits predict this token
        order = np.argsort(-logits[at], kind="stable")
        rank = int(np.nonzero(order == token)[0][0])
        piece = strings([token])[0]
        ranks.append((piece, rank))
        if print_details:
            print(f"Performance on answer token:\nRank: {rank:<8} Logit: {logits[at, token]:5.2f} Prob: "
                  f"{probs[at, token]:6.2%} Token: |{piece}|")
            for k, t in enumerate(order[:top_k]):
                print(f"Top {k}th token. Logit: {logits[at, t]:5.2f} Prob: {probs[at, t]:6.2%} Token: "
                      f"|{strings([t])[0]}|")
    print(f"Ranks of the answer tokens: {ranks}")
    return ranks


def to_numpy(tensor: Any) -> np.ndarray:
    """A tensor (or anything np.asarray takes) as a NumPy array (TransformerLens' utils.to_numpy)."""
    return tensor.detach().numpy() if hasattr(tensor, "detach") else np.asarray(tensor)


def lm_cross_entropy_loss(logits: Any, tokens: Any, per_token: bool = False) -> Any:
    """The next-token loss of logits [batch, pos, d_vocab] on tokens [batch, pos] (TransformerLens'
    utils.lm_cross_entropy_loss): position i predicts token i+1; the mean, or [batch, pos-1] with per_token. A tensor
    with its graph (the library's cross_entropy); NumPy logits are taken as a constant."""
    from .functional import cross_entropy
    logits = logits if hasattr(logits, "backward") else _core.tensor(np.asarray(logits))
    tokens = np.asarray(tokens).reshape(logits.shape[:-1])
    batch, pos, vocab = logits.shape
    flat = _core.reshape(logits[:, :-1], [batch * (pos - 1), vocab])
    loss = cross_entropy(flat, tokens[:, 1:].reshape(-1), reduction="none" if per_token else "mean")
    return _core.reshape(loss, [batch, pos - 1]) if per_token else loss


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
    """The activations of one forward by hook name, as TransformerLens' ActivationCache: a read-only dict with
    TransformerLens' shorthand keys and its stacking helpers, giving tensors outside the graph (TransformerLens'
    detached tensors; np.asarray takes them). Inputs of the helpers may be tensors or NumPy arrays.

        cache["blocks.0.attn.hook_pattern"]           # by full name
        cache["pattern", 0]                           # the same: (name, layer) as utils.get_act_name
        cache["resid_post", -1]                       # the last block's output
        resid, labels = cache.accumulated_resid(apply_ln=True, return_labels=True)   # the logit lens
    """

    def __init__(self, cache_dict: Dict[str, Any], model: Any, has_batch_dim: bool = True,
                 tokens: Optional[np.ndarray] = None) -> None:
        self.cache_dict = {k: v if isinstance(v, _core.Tensor) else _as_tensor(v) for k, v in cache_dict.items()}
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

    def __getitem__(self, key: Any) -> Any:
        """The activation: a tensor outside the graph, the same object each time (a change to it is the cache's)."""
        return self._tensor(key)

    def _array(self, *key: Any) -> np.ndarray:
        """The activation as NumPy (a view), for the helpers below: _array(name) or _array(name, layer)."""
        return np.asarray(self._tensor(key[0] if len(key) == 1 else key))

    def _tensor(self, key: Any) -> Any:
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

    def _stream_before(self, layer: int) -> np.ndarray:
        """The residual stream before block `layer` (after the last block for n_layers)."""
        return self._array("resid_post", layer - 1) if layer else self._array("resid_pre", 0)

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
            layer_logits = resid @ model.W_U
        """
        layer = self._layer_or_all(layer)
        n = self._n_layers()
        parts, labels = [], []
        for l in range(layer + 1):
            if l == n:
                parts.append(self._array("resid_post", n - 1))
                labels.append("final_post")
                continue
            parts.append(self._array("resid_pre", l))
            labels.append(f"{l}_pre")
            if (incl_mid and l < layer) or (mlp_input and l == layer):
                parts.append(self._array("resid_mid", l))
                labels.append(f"{l}_mid")
        stack = np.stack([_apply_slice(p, pos_slice, -2) for p in parts])
        if apply_ln:
            stack = (self._final_norm(stack) if layer == n else
                     np.asarray(self.apply_ln_to_stack(stack, layer, mlp_input=mlp_input, pos_slice=pos_slice)))
        return _stack_out(stack, labels, return_labels)

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
                parts.append(self._array("hook_embed"))
                labels.append("embed")
            if "hook_pos_embed" in self.cache_dict:
                parts.append(self._array("hook_pos_embed"))
                labels.append("pos_embed")
        for l in range(layer):
            if mode != "mlp":
                parts.append(self._array("attn_out", l))
                labels.append(f"{l}_attn_out")
            if mode != "attn" and not self.model.cfg.attn_only:
                parts.append(self._array("mlp_out", l))
                labels.append(f"{l}_mlp_out")
        if mlp_input and mode != "mlp" and layer < self._n_layers():
            parts.append(self._array("attn_out", layer))
            labels.append(f"{layer}_attn_out")
        if not parts:
            raise ValueError("decompose_resid: no component (the cache lacks them, or incl_embeds=False at layer 0)")
        shape = np.broadcast_shapes(*(p.shape for p in parts))  # pos_embed [1,T,C] broadcasts over the batch
        stack = _apply_slice(np.stack([np.broadcast_to(p, shape) for p in parts]), pos_slice, -2)
        if apply_ln:
            stack = np.asarray(self.apply_ln_to_stack(stack, layer, mlp_input=mlp_input, pos_slice=pos_slice))
        return _stack_out(stack, labels, return_labels)

    def get_full_resid_decomposition(self, layer: Optional[int] = None, expand_neurons: bool = True,
                                     apply_ln: bool = False, pos_slice: _PosSlice = None, return_labels: bool = False
                                     ) -> Union[np.ndarray, Tuple[np.ndarray, List[str]]]:
        """The residual stream before block `layer` (None: after the last) in its finest parts: each head
        ("L0H0", ...), each neuron ("L0N0", ...; expand_neurons=False: each MLP, "0_mlp_out"), "embed", "pos_embed"
        and "bias" (the attention's and the MLP's output biases, b_O and b_out, summed): [components, (batch,) pos,
        d_model], adding up to the stream.

            parts, labels = cache.get_full_resid_decomposition(layer=-1, pos_slice=-1, return_labels=True)
        """
        layer = self._layer_or_all(layer)
        heads, labels = self.stack_head_results(layer, return_labels=True, pos_slice=pos_slice)
        heads = np.asarray(heads)
        parts = [heads]
        if not self.model.cfg.attn_only:
            if expand_neurons:
                neurons, names = self.stack_neuron_results(layer, pos_slice=pos_slice, return_labels=True)
            else:
                neurons, names = self.decompose_resid(layer, mode="mlp", pos_slice=pos_slice, incl_embeds=False,
                                                      return_labels=True) if layer else (heads[:0], [])
            parts.append(np.asarray(neurons))
            labels += names
        embeds, names = self.decompose_resid(0, pos_slice=pos_slice, return_labels=True)
        embeds = np.asarray(embeds)
        bias = sum((np.asarray(self.model.b_O)[l] + (0 if self.model.cfg.attn_only else np.asarray(self.model.b_out)[l])
                    for l in range(layer)), np.zeros(embeds.shape[-1], dtype=embeds.dtype))
        parts += [embeds, np.broadcast_to(bias, embeds.shape[1:])[None]]
        labels += [*names, "bias"]
        shape = np.broadcast_shapes(*(p.shape[1:] for p in parts))
        stack = np.concatenate([np.broadcast_to(p, (p.shape[0], *shape)) for p in parts])
        if apply_ln:
            stack = np.asarray(self.apply_ln_to_stack(stack, layer, pos_slice=pos_slice))
        return _stack_out(stack, labels, return_labels)

    def compute_head_results(self) -> None:
        """Adds blocks.{l}.attn.hook_result [(batch,) pos, n_heads, d_model] to the cache: each head's output,
        z[..., h, :] @ W_O[l, h] (without b_O: the attention's output is their sum plus b_O)."""
        W_O = np.asarray(self.model.W_O)
        for l in range(self._n_layers()):
            result = np.einsum("...hd,hdm->...hm", self._array("z", l), W_O[l])
            self.cache_dict[f"blocks.{l}.attn.hook_result"] = _as_tensor(result)

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
            result = _apply_slice(self._array("result", l), pos_slice, -3)  # [..., H, d_model]
            parts.extend(np.moveaxis(result, -2, 0))
            labels.extend(f"L{l}H{h}" for h in range(result.shape[-2]))
        if incl_remainder:
            total = _apply_slice(self._stream_before(layer), pos_slice, -2)
            parts.append(total - (np.sum(parts, axis=0) if parts else 0))
            labels.append("remainder")
        if not parts:
            empty = _apply_slice(self._array("hook_embed"), pos_slice, -2)
            stack = np.zeros((0, *empty.shape), dtype=empty.dtype)
        else:
            stack = np.stack(parts)
        if apply_ln:
            stack = np.asarray(self.apply_ln_to_stack(stack, layer, pos_slice=pos_slice))
        return _stack_out(stack, labels, return_labels)

    def stack_neuron_results(self, layer: int = -1, pos_slice: _PosSlice = None, neuron_slice: _PosSlice = None,
                             return_labels: bool = False, incl_remainder: bool = False, apply_ln: bool = False
                             ) -> Union[np.ndarray, Tuple[np.ndarray, List[str]]]:
        """Each neuron's output of the MLPs before `layer` (-1 or None: all), labelled "L0N0", "L0N1", ...: its
        activation (mlp.hook_post) times its row of W_out, [neurons, (batch,) pos, d_model] (without b_out: the
        MLP's output is their sum plus b_out). neuron_slice picks neurons in each layer; incl_remainder and apply_ln
        as stack_head_results.

            neurons, labels = cache.stack_neuron_results(layer=1, return_labels=True)   # block 0's neurons
        """
        layer = self._layer_or_all(layer)
        W_out = np.asarray(self.model.W_out) if layer else None
        parts, labels = [], []
        for l in range(layer):
            post = _apply_slice(self._array("post", l), pos_slice, -2)  # [..., d_mlp]
            rows = _apply_slice(np.arange(post.shape[-1]), neuron_slice, 0).reshape(-1)
            parts.append(np.einsum("...n,nm->n...m", post[..., rows], W_out[l][rows]))
            labels.extend(f"L{l}N{n}" for n in rows)
        stack = np.concatenate(parts) if parts else np.zeros((0, *_apply_slice(self._array("hook_embed"), pos_slice, -2)
                                                               .shape), dtype=self._array("hook_embed").dtype)
        if incl_remainder:
            total = _apply_slice(self._stream_before(layer), pos_slice, -2)
            stack = np.concatenate([stack, (total - stack.sum(0))[None]])
            labels.append("remainder")
        if apply_ln:
            stack = np.asarray(self.apply_ln_to_stack(stack, layer, pos_slice=pos_slice))
        return _stack_out(stack, labels, return_labels)

    def logit_attrs(self, residual_stack: np.ndarray, tokens: Any, incorrect_tokens: Any = None,
                    pos_slice: _PosSlice = None) -> np.ndarray:
        """Each component's logit for `tokens` (less that of incorrect_tokens): the stack [components, ..., d_model]
        through the final norm (apply_ln_to_stack) dotted with the tokens' unembedding directions
        (model.tokens_to_residual_directions), [components, ...], as TransformerLens' logit_attrs. tokens: an id, or
        ids (or a string) shaped as the stack's axes between the components and d_model.

            stack, labels = cache.decompose_resid(layer=-1, pos_slice=-1, return_labels=True)
            attrs = cache.logit_attrs(stack, tokens=answer_ids)    # [components, batch]
        """
        directions = np.asarray(self.model.tokens_to_residual_directions(tokens))
        if incorrect_tokens is not None:
            directions = directions - np.asarray(self.model.tokens_to_residual_directions(incorrect_tokens))
        scaled = np.asarray(self.apply_ln_to_stack(residual_stack, layer=None, pos_slice=pos_slice))
        return _as_tensor((scaled * directions).sum(-1))

    def to(self, device: Any) -> "ActivationCache":
        """TransformerLens' cache.to(device): the cache is NumPy on the CPU; "cpu" returns it, another device is a
        ValueError."""
        _check_cpu(device)
        return self

    def stack_activation(self, activation_name: str, layer: int = -1, sublayer_type: Optional[str] = None
                         ) -> np.ndarray:
        """cache[activation_name, l] of each block before `layer` (-1: all), stacked: [layers, ...]."""
        layer = self._layer_or_all(layer)
        return _as_tensor(np.stack([self._array(activation_name, l, sublayer_type) if sublayer_type
                                    else self._array(activation_name, l) for l in range(layer)]))

    # -- norms
    def _norm_input(self, layer: int, mlp_input: bool) -> Tuple[np.ndarray, Any]:
        """The residual stream a norm reads and that norm: ln_final after the last block, else ln_1 (ln_2 with
        mlp_input) of `layer`."""
        if layer == self._n_layers():
            return self._array("resid_post", layer - 1), self.model.ln_final
        block = self.model.blocks[layer]
        if mlp_input:
            return self._array("resid_mid", layer), block.ln2
        return self._array("resid_pre", layer), block.ln1

    def apply_ln_to_stack(self, residual_stack: np.ndarray, layer: Optional[int] = None, mlp_input: bool = False,
                          pos_slice: _PosSlice = None) -> np.ndarray:
        """Each component as its share of what the norm before block `layer` (None: the final norm; mlp_input: the
        MLP's norm) makes of the whole stream: centred (LayerNorm), divided by the whole stream's scale
        sqrt(var + eps) (RMSNorm: sqrt(mean(x^2) + eps)), as TransformerLens does with the cached scale, and
        multiplied by the norm's weight (tinyformer does not fold it into the next matrix). The components then add
        up to the norm's output less its bias."""
        layer = self._layer_or_all(layer)
        residual_stack = np.asarray(residual_stack)
        stream, norm = self._norm_input(layer, mlp_input)
        stream = _apply_slice(stream, pos_slice, -2).astype(np.float64)
        layernorm = norm.norm != "rmsnorm"
        centred = stream - stream.mean(-1, keepdims=True) if layernorm else stream
        scale = np.sqrt((centred ** 2).mean(-1, keepdims=True) + norm.eps)
        x = residual_stack - residual_stack.mean(-1, keepdims=True) if layernorm else residual_stack
        weight = dict(norm.named_parameters())["weight"].numpy()
        return _as_tensor((x / scale * weight).astype(residual_stack.dtype))

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
        patterns = [self._array("pattern", l) for l in layers]
        weights = np.stack([p[batch] if self.has_batch_dim else p for p in patterns])
        ids = None if self.tokens is None else (self.tokens[batch] if self.has_batch_dim else self.tokens)
        labels = None if ids is None else self.model.to_str_tokens(np.asarray(ids))
        return AttentionMap(weights, labels, ids=ids, title=title or "attention (run_with_cache)")


# TransformerLens' module names: `from transformer_lens import utils` reads as `from tinyformer.lens import utils`,
# whose get_act_name, to_numpy, lm_cross_entropy_loss and test_prompt are this module's; patching and head_detector are
# tinyformer.patching and tinyformer.head_detector.
utils = sys.modules[__name__]
from . import head_detector, patching  # noqa: E402  (they read the model through the methods above)
