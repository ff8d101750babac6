"""Activation patching under TransformerLens' names (transformer_lens.patching): run the model on corrupted tokens
with one activation (a layer, a position, a head) taken from a clean run's cache, once per index, and record a metric
of each run's logits. Each run is model.run_with_hooks (tinyformer.lens).

    _, clean_cache = model.run_with_cache(clean_tokens)
    metric = lambda logits: logits[0, -1, answer] - logits[0, -1, wrong]
    effect = tf.lens.patching.get_act_patch_resid_pre(model, corrupted_tokens, clean_cache, metric)  # [layer, pos]
    heads = tf.lens.patching.get_act_patch_attn_head_out_all_pos(model, corrupted_tokens, clean_cache, metric)
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Dict, Sequence

import numpy as np

__all__ = ["generic_activation_patch", "get_act_patch_resid_pre", "get_act_patch_resid_mid", "get_act_patch_attn_out",
           "get_act_patch_mlp_out", "get_act_patch_attn_head_out_all_pos", "get_act_patch_attn_head_out_by_pos",
           "get_act_patch_attn_head_pattern_all_pos", "get_act_patch_block_every"]

# Where each index axis sits in an activation with a batch axis, by the hook's kind: the residual stream [B, pos, C],
# z [B, pos, head, d_head], pattern [B, head, query, key]; "layer" picks the hook.
_AXES: Dict[str, Dict[str, int]] = {"resid": {"pos": 1}, "z": {"pos": 1, "head": 2}, "pattern": {"head": 1}}


def generic_activation_patch(model: Any, corrupted_tokens: Any, clean_cache: Any, patching_metric: Callable[[Any], Any],
                             activation_name: str, index_axis_names: Sequence[str] = ("layer", "pos"),
                             kind: str = "resid") -> np.ndarray:
    """metric(logits) of the corrupted run with cache[activation_name, layer] patched in at each index: an array
    shaped as the axes ("layer", "pos", "head"; pos as the corrupted tokens', head as the model's). The clean and
    corrupted runs must have the same shape."""
    tokens = model._tokens(corrupted_tokens)
    cfg = model.cfg
    sizes = {"layer": cfg.n_layers, "pos": tokens.shape[-1], "head": cfg.n_heads}
    unknown = [a for a in index_axis_names if a not in sizes]
    if unknown or "layer" not in index_axis_names:
        raise ValueError(f"index_axis_names {list(index_axis_names)}: each is 'layer', 'pos' or 'head', with 'layer'")
    out = np.zeros([sizes[a] for a in index_axis_names])
    for index in itertools.product(*(range(sizes[a]) for a in index_axis_names)):
        at = dict(zip(index_axis_names, index))
        name = clean_cache._name((activation_name, at["layer"]))
        clean = clean_cache._array(name)
        if clean.shape[0] != tokens.shape[0] or (kind != "pattern" and clean.shape[1] != tokens.shape[1]):
            raise ValueError(f"the clean cache's {name} is {clean.shape}; the corrupted tokens are {tokens.shape}")
        where = [slice(None)] * clean.ndim
        for axis_name, axis in _AXES[kind].items():
            if axis_name in at:
                where[axis] = at[axis_name]

        def patch(activation: np.ndarray, hook: Any, where: tuple = tuple(where), clean: np.ndarray = clean) -> None:
            activation[where] = clean[where]

        logits = model.run_with_hooks(tokens, fwd_hooks=[(name, patch)])
        out[index] = float(np.asarray(patching_metric(logits)))
    return out


def get_act_patch_resid_pre(model: Any, corrupted_tokens: Any, clean_cache: Any, patching_metric: Callable) -> np.ndarray:
    """[layer, pos]: each block's input (resid_pre) at each position patched."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "resid_pre")


def get_act_patch_resid_mid(model: Any, corrupted_tokens: Any, clean_cache: Any, patching_metric: Callable) -> np.ndarray:
    """[layer, pos]: resid_mid (between attention and MLP)."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "resid_mid")


def get_act_patch_attn_out(model: Any, corrupted_tokens: Any, clean_cache: Any, patching_metric: Callable) -> np.ndarray:
    """[layer, pos]: each attention's output."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "attn_out")


def get_act_patch_mlp_out(model: Any, corrupted_tokens: Any, clean_cache: Any, patching_metric: Callable) -> np.ndarray:
    """[layer, pos]: each MLP's output."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "mlp_out")


def get_act_patch_attn_head_out_all_pos(model: Any, corrupted_tokens: Any, clean_cache: Any,
                                        patching_metric: Callable) -> np.ndarray:
    """[layer, head]: each head's output (z) at every position patched."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "z", ("layer", "head"), "z")


def get_act_patch_attn_head_out_by_pos(model: Any, corrupted_tokens: Any, clean_cache: Any,
                                       patching_metric: Callable) -> np.ndarray:
    """[layer, pos, head]: each head's output (z) at each position patched."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "z",
                                    ("layer", "pos", "head"), "z")


def get_act_patch_attn_head_pattern_all_pos(model: Any, corrupted_tokens: Any, clean_cache: Any,
                                            patching_metric: Callable) -> np.ndarray:
    """[layer, head]: each head's whole attention pattern patched."""
    return generic_activation_patch(model, corrupted_tokens, clean_cache, patching_metric, "pattern",
                                    ("layer", "head"), "pattern")


def get_act_patch_block_every(model: Any, corrupted_tokens: Any, clean_cache: Any,
                              patching_metric: Callable) -> np.ndarray:
    """[3, layer, pos]: resid_pre, attn_out and mlp_out patched (attention-only models: the third is zeros)."""
    parts = [get_act_patch_resid_pre, get_act_patch_attn_out]
    out = [f(model, corrupted_tokens, clean_cache, patching_metric) for f in parts]
    has_mlp = not model.cfg.attn_only
    out.append(get_act_patch_mlp_out(model, corrupted_tokens, clean_cache, patching_metric) if has_mlp
               else np.zeros_like(out[0]))
    return np.stack(out)
