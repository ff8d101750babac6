"""torch.linalg's vector norms: vector_norm and norm of vectors (and the Frobenius norm of a matrix), over tf.norm.

    tf.linalg.vector_norm(x, ord=2, dim=-1)
    tf.linalg.norm(x, dim=-1)
"""
from typing import Any, Optional, Sequence, Union

from . import _core

__all__ = ["vector_norm", "norm"]

_Dim = Optional[Union[int, Sequence[int]]]


def vector_norm(x: Any, ord: Union[int, float] = 2, dim: _Dim = None, keepdim: bool = False) -> Any:
    """The ord-norm of x's entries over dim (None: all): tf.norm(x, p=ord, dim, keepdim), with gradient."""
    return _core.norm(x, ord, dim, keepdim)


def norm(x: Any, ord: Optional[Union[int, float, str]] = None, dim: _Dim = None, keepdim: bool = False) -> Any:
    """torch.linalg.norm for vectors: ord None is the 2-norm over dim (all entries when None, which for a matrix is
    its Frobenius norm, as torch's); "fro" likewise. Matrix norms other than the Frobenius one ("nuc", ord 2 over two
    dims) are not here: a ValueError."""
    dims = [dim] if isinstance(dim, int) else (None if dim is None else list(dim))
    matrix = (dims is None and x.dim() == 2) or (dims is not None and len(dims) == 2)
    if ord in (None, "fro") or not matrix:
        if isinstance(ord, str) and ord != "fro":
            raise ValueError(f"linalg.norm: ord={ord!r} is not here; give a number, None or 'fro'")
        return _core.norm(x, 2 if ord in (None, "fro") else ord, dim, keepdim)
    raise ValueError(f"linalg.norm: the matrix norm ord={ord!r} is not here (the Frobenius norm is: ord=None or 'fro')")
