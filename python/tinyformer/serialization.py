"""tf.save and loading what it saved, as torch.save and torch.load: any object of dicts, lists, numbers, strings,
NumPy arrays and tensors (a state_dict, an optimizer's, nanoGPT's checkpoint dict) pickled into one file. Loading
takes only those kinds unless weights_only=False (torch's rule since 2.6: a pickle can run code).

    tf.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 100}, "ckpt.pt")
    checkpoint = tf.load("ckpt.pt")          # a run's checkpoint.safetensors still gives its model
"""
from __future__ import annotations

import io
import os
import pickle
import tempfile
from typing import Any, BinaryIO, Union

__all__ = ["save", "load_object", "is_saved_object"]

# What a weights-only load may build: containers, NumPy arrays and dtypes, and tensors (tf.tensor).
_ALLOWED = {
    ("builtins", name) for name in ("dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str",
                                    "bytes", "bytearray", "bool", "slice")
} | {
    ("collections", "OrderedDict"), ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
    ("codecs", "encode"), ("tinyformer.serialization", "_rebuild_tensor"),
}

_Target = Union[str, "os.PathLike[str]", BinaryIO]


def _rebuild_tensor(values: Any, requires_grad: bool, dtype: str) -> Any:
    """A pickled tensor back (Tensor.__reduce__ names this function): a new leaf."""
    from . import _core
    return _core.tensor(values, requires_grad=requires_grad, dtype=dtype)


class UnpicklingError(pickle.UnpicklingError, ValueError):
    """A weights-only load met a kind it does not build: torch's UnpicklingError, and a ValueError."""


class _WeightsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise UnpicklingError(f"the file holds {module}.{name}, which a weights-only load does not build "
                              f"(dicts, lists, numbers, strings, arrays and tensors); load it with "
                              f"weights_only=False if you trust the file")


def save(obj: Any, f: _Target) -> None:
    """Pickles obj into f (a path or a binary file). A path is written whole or not at all: to a temporary file in
    its directory, renamed over it at the end."""
    if hasattr(f, "write"):
        pickle.dump(obj, f, protocol=4)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tf-save-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            pickle.dump(obj, out, protocol=4)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def is_saved_object(path: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether the file starts as a pickle does (what save() writes), not as a safetensors checkpoint."""
    with open(path, "rb") as fh:
        return fh.read(1) == b"\x80"


def load_object(f: _Target, weights_only: bool = True) -> Any:
    """What save() wrote into f; with weights_only (the default) only the kinds save() is for are built."""
    fh = f if hasattr(f, "read") else open(f, "rb")
    try:
        data = fh.read()
    finally:
        if fh is not f:
            fh.close()
    where = f if not hasattr(f, "read") else getattr(f, "name", "the file")
    where = where if isinstance(where, int) else os.fsdecode(where)
    try:
        if weights_only:
            return _WeightsOnly(io.BytesIO(data)).load()
        return pickle.loads(data)
    except UnpicklingError as e:
        raise UnpicklingError(f"{where}: {e}") from None
    except MemoryError:
        raise
    except Exception as e:  # a damaged pickle fails in many ways (EOFError, KeyError, struct.error, ...)
        raise ValueError(f"{where}: not a whole file of tf.save's ({type(e).__name__}: {e})") from e
