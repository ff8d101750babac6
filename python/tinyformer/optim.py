"""tf.optim: the library's SGD, Adam and AdamW (torch 1.13's formulas, float32 parameters)."""
from . import _core


def _named(params):
    """(name, tensor) pairs from named_parameters() or tensors from parameters() (then named "0", "1", ...)."""
    out = []
    for i, p in enumerate(params):
        out.append(p if isinstance(p, tuple) else (str(i), p))
    if not out:
        raise ValueError("the optimizer got an empty parameter list")
    return out


class SGD(_core._SGD):
    def __init__(self, params, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
        super().__init__(_named(params), lr, momentum, dampening, nesterov, weight_decay)


class Adam(_core._Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(_named(params), lr, betas[0], betas[1], eps, weight_decay)


class AdamW(_core._AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(_named(params), lr, betas[0], betas[1], eps, weight_decay)
