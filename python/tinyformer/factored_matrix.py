"""A matrix kept as the product of two factors, A @ B (TransformerLens' FactoredMatrix), for the low-rank circuits of
attention: model.OV = W_V @ W_O and model.QK = W_Q @ W_K^T, [n_layers, n_heads, d_model, d_model] of rank d_head.
NumPy arrays; leading axes broadcast as in np.matmul.

    OV = model.OV[1, 4]                         # one head: A [d_model, d_head], B [d_head, d_model]
    full = model.W_E @ OV @ model.W_U           # [d_vocab, d_vocab], still factored
    U, S, Vh = full.svd()                       # full.AB == U @ np.diag(S) @ Vh.T
    full.eigenvalues                            # of B @ A [d_head, d_head]: AB's nonzero ones
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

__all__ = ["FactoredMatrix"]


def _array(x: Any) -> np.ndarray:
    """A tensor (detached) or anything np.asarray takes."""
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


class FactoredMatrix:
    """A @ B without forming it: A [..., ldim, mdim], B [..., mdim, rdim]."""

    def __init__(self, A: Any, B: Any) -> None:
        self.A, self.B = _array(A), _array(B)
        if self.A.ndim < 2 or self.B.ndim < 2 or self.A.shape[-1] != self.B.shape[-2]:
            raise ValueError(f"FactoredMatrix: A {self.A.shape} and B {self.B.shape} do not multiply (A [..., l, m], "
                             f"B [..., m, r])")
        self.ldim, self.mdim, self.rdim = self.A.shape[-2], self.A.shape[-1], self.B.shape[-1]
        self.shape = (*np.broadcast_shapes(self.A.shape[:-2], self.B.shape[:-2]), self.ldim, self.rdim)
        self.ndim = len(self.shape)

    @property
    def AB(self) -> np.ndarray:
        """The full product [..., ldim, rdim]."""
        return self.A @ self.B

    @property
    def BA(self) -> np.ndarray:
        """B @ A [..., mdim, mdim] (square matrices only: ldim == rdim), whose eigenvalues are AB's nonzero ones."""
        if self.ldim != self.rdim:
            raise ValueError(f"BA: the matrix is {self.ldim} x {self.rdim}, not square")
        return self.B @ self.A

    @property
    def T(self) -> "FactoredMatrix":
        """The transpose, B^T @ A^T."""
        return FactoredMatrix(np.swapaxes(self.B, -1, -2), np.swapaxes(self.A, -1, -2))

    def __matmul__(self, other: Any) -> "FactoredMatrix":
        """(A B) @ other: a FactoredMatrix or a matrix [..., rdim, n] (a vector [rdim] gives an array)."""
        if isinstance(other, FactoredMatrix):
            return (self @ other.A) @ other.B
        other = _array(other)
        if other.ndim == 1:
            return self.A @ (self.B @ other)
        return FactoredMatrix(self.A, self.B @ other)

    def __rmatmul__(self, other: Any) -> "FactoredMatrix":
        """other @ (A B) for a matrix [..., n, ldim] (a vector [ldim] gives an array)."""
        other = _array(other)
        if other.ndim == 1:
            return (other @ self.A) @ self.B
        return FactoredMatrix(other @ self.A, self.B)

    def __mul__(self, scalar: float) -> "FactoredMatrix":
        return FactoredMatrix(self.A * scalar, self.B)

    __rmul__ = __mul__

    def __getitem__(self, index: Any) -> "FactoredMatrix":
        """Indexes the leading (batch) axes, as model.OV[layer, head]; the last two stay."""
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > self.ndim - 2:
            raise IndexError(f"FactoredMatrix: {len(index)} indices for {self.ndim - 2} leading axes "
                             f"(shape {self.shape}); index AB for the matrix's own axes")
        lead = self.shape[:-2]
        A = np.broadcast_to(self.A, (*lead, *self.A.shape[-2:]))
        B = np.broadcast_to(self.B, (*lead, *self.B.shape[-2:]))
        return FactoredMatrix(A[index], B[index])

    def svd(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(U [..., ldim, mdim], S [..., mdim], Vh [..., rdim, mdim]) with AB = U diag(S) Vh^T (TransformerLens'
        convention, torch.svd's V), from the factors' SVDs: never forms AB."""
        Ua, Sa, Vat = np.linalg.svd(self.A, full_matrices=False)  # A = Ua diag(Sa) Vat
        Ub, Sb, Vbt = np.linalg.svd(self.B, full_matrices=False)
        middle = Sa[..., :, None] * (Vat @ Ub) * Sb[..., None, :]
        Um, S, Vmt = np.linalg.svd(middle, full_matrices=False)
        return Ua @ Um, S, np.swapaxes(Vbt, -1, -2) @ np.swapaxes(Vmt, -1, -2)

    @property
    def S(self) -> np.ndarray:
        """The singular values [..., mdim], largest first."""
        return self.svd()[1]

    @property
    def eigenvalues(self) -> np.ndarray:
        """The eigenvalues of BA [..., mdim] (complex): the nonzero eigenvalues of AB."""
        return np.linalg.eigvals(self.BA)

    def norm(self) -> np.ndarray:
        """The Frobenius norm of AB, from the singular values."""
        return np.sqrt((self.S ** 2).sum(-1))

    def get_corner(self, k: int = 3) -> np.ndarray:
        """AB[..., :k, :k], computed from the factors' corners."""
        return self.A[..., :k, :] @ self.B[..., :, :k]

    def __repr__(self) -> str:
        return f"FactoredMatrix: shape {self.shape}, hidden dim {self.mdim}"
