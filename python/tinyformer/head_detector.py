"""Which heads attend as a given pattern does, under TransformerLens' names (transformer_lens.head_detector): a
score per head [n_layers, n_heads] of how much of its attention on a sequence falls where a detection pattern
[pos, pos] (lower triangular) says. `tinyformer heads` (tf.heads) scores heads on a run's own data instead.

    scores = tf.lens.head_detector.detect_head(model, tokens, "induction_head")   # [n_layers, n_heads]
    model.cfg.n_heads * scores.argmax() ...

error_measure "mul" (the default): the attention on the pattern's ones over all the attention, in [0, 1].
"abs": 1 - (the mean |pattern - attention| times pos), rounded to 3 places; 1 is an exact match.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["detect_head", "get_previous_token_head_detection_pattern", "get_duplicate_token_head_detection_pattern",
           "get_induction_head_detection_pattern", "HEAD_NAMES"]

HEAD_NAMES = ("previous_token_head", "duplicate_token_head", "induction_head")


def get_previous_token_head_detection_pattern(tokens: Any) -> np.ndarray:
    """[pos, pos]: each position attends to the one before it."""
    n = np.asarray(tokens).shape[-1]
    return np.eye(n, k=-1)


def get_duplicate_token_head_detection_pattern(tokens: Any) -> np.ndarray:
    """[pos, pos]: each position attends to earlier positions holding the same token."""
    ids = np.asarray(tokens).reshape(-1)
    return np.tril(ids[:, None] == ids[None, :], k=-1).astype(np.float64)


def get_induction_head_detection_pattern(tokens: Any) -> np.ndarray:
    """[pos, pos]: each position attends to the token after an earlier copy of itself (the duplicate pattern moved
    one key to the right, within the lower triangle)."""
    duplicate = get_duplicate_token_head_detection_pattern(tokens)
    induction = np.zeros_like(duplicate)
    induction[:, 1:] = duplicate[:, :-1]
    return np.tril(induction)


def _score(pattern: np.ndarray, detection: np.ndarray, exclude_bos: bool, exclude_current_token: bool,
           error_measure: str) -> float:
    """One head's pattern [q, k] against the detection pattern."""
    pattern = pattern.astype(np.float64)
    if error_measure == "mul":
        if exclude_bos:
            pattern[:, 0] = 0
        if exclude_current_token:
            np.fill_diagonal(pattern, 0)
        return float((pattern * detection).sum() / pattern.sum())
    diff = np.abs(pattern - detection)
    if exclude_bos:
        diff[:, 0] = 0
    if exclude_current_token:
        np.fill_diagonal(diff, 0)
    return 1 - round(float(diff.mean() * len(diff)), 3)


def detect_head(model: Any, seq: Union[str, Sequence[str], Any], detection_pattern: Union[str, Any],
                heads: Optional[Union[List[Tuple[int, int]], Dict[int, List[int]]]] = None, cache: Any = None, *,
                exclude_bos: bool = False, exclude_current_token: bool = False, error_measure: str = "mul"
                ) -> np.ndarray:
    """Each head's score [n_layers, n_heads] on one sequence (text, or ids [pos] / [1, pos]; a list of texts: the mean
    of their scores) against detection_pattern, one of HEAD_NAMES or a lower-triangular [pos, pos] array. heads: only
    those (a list of (layer, head) or {layer: [heads]}), the rest -1. cache: a cache of this sequence's patterns
    (batch 1, or without the batch axis) instead of a new forward."""
    if error_measure not in ("mul", "abs"):
        raise ValueError(f"error_measure {error_measure!r}: valid are 'mul' and 'abs'")
    if isinstance(seq, (list, tuple)) and seq and isinstance(seq[0], str):
        if not isinstance(detection_pattern, str):
            raise ValueError("detect_head: a list of sequences needs a named detection_pattern (one of "
                             f"{list(HEAD_NAMES)}), since each sequence has its own pattern")
        return np.mean([detect_head(model, s, detection_pattern, heads, exclude_bos=exclude_bos,
                                    exclude_current_token=exclude_current_token, error_measure=error_measure)
                        for s in seq], axis=0)
    tokens = model._tokens(seq)
    if tokens.shape[0] != 1:
        raise ValueError(f"detect_head: one sequence at a time, got a batch of {tokens.shape[0]}")
    n = tokens.shape[-1]
    if not 2 <= n <= model.cfg.n_ctx:
        raise ValueError(f"detect_head: the sequence has {n} tokens; valid are 2 to the context, {model.cfg.n_ctx}")
    if isinstance(detection_pattern, str):
        if detection_pattern not in HEAD_NAMES:
            raise ValueError(f"detection_pattern {detection_pattern!r}: valid are {list(HEAD_NAMES)} or an array")
        detection = globals()[f"get_{detection_pattern}_detection_pattern"](tokens)
    else:
        detection = np.asarray(detection_pattern, dtype=np.float64)
        if detection.shape != (n, n) or np.triu(detection, k=1).any():
            raise ValueError(f"detection_pattern: expected a lower-triangular [{n}, {n}] array (the sequence has {n} "
                             f"tokens), got shape {detection.shape}")
    if cache is None:
        _, cache = model.run_with_cache(tokens, names_filter=lambda name: name.endswith("hook_pattern"))
    cfg = model.cfg
    if heads is None:
        chosen = {layer: list(range(cfg.n_heads)) for layer in range(cfg.n_layers)}
    elif isinstance(heads, dict):
        chosen = heads
    else:
        chosen = {}
        for layer, head in heads:
            chosen.setdefault(layer, []).append(head)
    scores = -np.ones((cfg.n_layers, cfg.n_heads))
    for layer, layer_heads in chosen.items():
        patterns = np.asarray(cache["pattern", layer])
        patterns = patterns[0] if patterns.ndim == 4 else patterns  # [heads, q, k]
        for head in layer_heads:
            scores[layer, head] = _score(patterns[head], detection, exclude_bos, exclude_current_token, error_measure)
    return scores
