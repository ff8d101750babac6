"""tf.nn.init: torch.nn.init's initialisers, each changing a tensor's values in place (x.normal_, x.uniform_,
x.fill_) without recording anything, from the default generator (tf.manual_seed) or generator=. nanoGPT's
_init_weights reads as written:

    tf.nn.init.normal_(module.weight, mean=0.0, std=0.02)
    tf.nn.init.zeros_(module.bias)
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

from . import _core

__all__ = ["normal_", "uniform_", "zeros_", "ones_", "constant_", "xavier_uniform_", "xavier_normal_",
           "calculate_gain"]


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0, generator: Optional[Any] = None) -> Any:
    """Values drawn from N(mean, std^2); returns the tensor."""
    with _core.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0, generator: Optional[Any] = None) -> Any:
    """Values drawn from U(a, b); returns the tensor."""
    with _core.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def constant_(tensor: Any, val: float) -> Any:
    """Every value val; returns the tensor."""
    with _core.no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Any) -> Any:
    """Every value 0; returns the tensor."""
    return constant_(tensor, 0.0)


def ones_(tensor: Any) -> Any:
    """Every value 1; returns the tensor."""
    return constant_(tensor, 1.0)


def _fans(tensor: Any) -> Tuple[int, int]:
    """(fan_in, fan_out) of a weight [out, in, *receptive] as torch computes them."""
    if tensor.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor of 2 or more dims, got {tensor.ndim}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """torch's recommended gains: 1 for linear and sigmoid, 5/3 for tanh, sqrt(2) for relu, and for leaky_relu
    sqrt(2 / (1 + slope^2))."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "identity"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: {nonlinearity!r} is not a known nonlinearity")


def xavier_uniform_(tensor: Any, gain: float = 1.0, generator: Optional[Any] = None) -> Any:
    """U(-a, a) with a = gain sqrt(6 / (fan_in + fan_out)) (Glorot); returns the tensor."""
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Any, gain: float = 1.0, generator: Optional[Any] = None) -> Any:
    """N(0, std^2) with std = gain sqrt(2 / (fan_in + fan_out)) (Glorot); returns the tensor."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)
