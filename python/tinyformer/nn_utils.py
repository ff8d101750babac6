"""tf.nn.utils: torch.nn.utils.clip_grad_norm_ and parameters_to_vector, on the library's gradient clipping
(optim/clip.hpp, the one `tinyformer train` uses with training.grad_clip).

    loss.backward()
    tf.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
"""
from __future__ import annotations

from typing import Any, Iterable, Union

import numpy as np

from . import _core

__all__ = ["clip_grad_norm_", "parameters_to_vector"]


def clip_grad_norm_(parameters: Union[Any, Iterable[Any]], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Any:
    """Scales the gradients in place so that their total 2-norm is at most max_norm; returns the total before, as a
    float64 0-d tensor. A non-finite total leaves the gradients as they are (error_if_nonfinite: a RuntimeError)."""
    if norm_type != 2.0:
        raise ValueError(f"clip_grad_norm_: norm_type {norm_type}: only the 2-norm is here")
    params = [parameters] if isinstance(parameters, _core.Tensor) else list(parameters)
    total = _core._clip_grad_norm(params, float(max_norm))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of the gradients is {total}")
    return _core.tensor(total, dtype="float64")


def parameters_to_vector(parameters: Iterable[Any]) -> Any:
    """The parameters' values, flattened and joined (a new constant tensor)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    return _core.cat([_core.reshape(p.detach(), [-1]) for p in params], 0)
