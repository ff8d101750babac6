"""tinyformer from Python: the C++ library's tensors, autodiff, modules, optimizers and trainer, with NumPy in and
out and PyTorch's names.

    import tinyformer as tf
    x = tf.tensor(np.random.randn(4, 8), requires_grad=True)   # float64 from a float64 array, else float32
    loss = tf.softmax(x @ x.transpose(0, 1)).sum()
    loss.backward(); x.grad                                      # NumPy

Every op calls the library (python/src/*.cpp bind it); nothing is computed twice. The GIL is released while an op,
a backward, an optimizer step or a training run works.
"""
import numpy as _np

from . import _core
from ._core import (Tensor, Generator, no_grad, is_grad_enabled, set_num_threads, get_num_threads, GradcheckResult,
                    sum, mean, exp, log, tanh, relu, gelu, silu, swiglu, causal_mask, softmax, log_softmax, scale,
                    matmul, linear, layer_norm, rms_norm, embedding, cross_entropy, dropout, causal_self_attention,
                    rotary_qk, permute, transpose, reshape, split, cat)

float32 = "float32"
float64 = "float64"


def _dtype_name(dtype):
    if dtype is None:
        return None
    name = _np.dtype(dtype).name
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype {name} is not supported: tinyformer tensors are float32 or float64")
    return name


def tensor(data, requires_grad=False, dtype=None):
    """A new leaf tensor holding a copy of `data` (an ndarray, nested lists or a number): float64 when `data` is a
    float64 array (or dtype=float64), float32 otherwise."""
    if isinstance(data, Tensor):
        data = _np.asarray(data)
    arr = _np.asarray(data)
    name = _dtype_name(dtype) or ("float64" if arr.dtype == _np.float64 else "float32")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"tf.tensor needs numbers, got an array of dtype {arr.dtype}")
    make = _core._tensor_f64 if name == "float64" else _core._tensor_f32
    return make(_np.ascontiguousarray(arr, dtype=name), bool(requires_grad))


def zeros(*shape, requires_grad=False, dtype=float32):
    return tensor(_np.zeros(shape), requires_grad=requires_grad, dtype=dtype)


def ones(*shape, requires_grad=False, dtype=float32):
    return tensor(_np.ones(shape), requires_grad=requires_grad, dtype=dtype)


def gradcheck(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-8, names=None, raise_exception=True):
    """Checks fn's gradient with respect to each input against central finite differences in float64 (the library's
    tf::gradcheck): fn gets one float64 tensor per input and returns a tensor (a non-scalar output is reduced with
    fixed random weights). An element passes when |analytic - numeric| <= atol + rtol |numeric|. Returns a
    GradcheckResult (true when every element passed; .report() has one line per input); with raise_exception (the
    default, as torch.autograd.gradcheck) a failure raises RuntimeError with that report."""
    arrays = [_np.asarray(x, dtype=_np.float64) for x in inputs]
    result = _core._gradcheck(fn, arrays, eps, rtol, atol, list(names or []))
    if raise_exception and not result.ok:
        raise RuntimeError("gradcheck failed:\n" + result.report())
    return result


def gradcheck_params(fn, params, eps=1e-6, rtol=1e-5, atol=1e-8, raise_exception=True):
    """Checks the gradient of fn() (no arguments) with respect to each parameter in `params` (named_parameters() of a
    float64 module, or (name, tensor) pairs of float64 leaves) against central finite differences, the library's
    tf::gradcheck_params: each parameter's values are perturbed in place and restored. Returns a GradcheckResult as
    gradcheck does; with raise_exception a failure raises RuntimeError with the report."""
    named = [p if isinstance(p, tuple) else (str(i), p) for i, p in enumerate(params)]
    if not named:
        raise ValueError("gradcheck_params: got an empty parameter list")
    result = _core._gradcheck_params(fn, named, eps, rtol, atol)
    if raise_exception and not result.ok:
        raise RuntimeError("gradcheck failed:\n" + result.report())
    return result


# ---- Tensor methods with PyTorch's names (each one an op above)
def _reshape(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return reshape(self, list(shape))


def _permute(self, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    n = self.ndim
    return permute(self, [d + n if d < 0 else d for d in dims])


def _repr(self):
    grad = ", requires_grad=True" if self.requires_grad else ""
    body = _np.array2string(self.numpy(), prefix="tensor(")
    return f"tensor({body}, dtype={self.dtype}{grad})"


def _pow(self, exponent):
    if exponent == 2:
        return self * self
    if exponent == 1:
        return self
    raise ValueError(f"** supports the exponents 1 and 2 (got {exponent}); use tf.exp(tf.log(x) * p) for others")


Tensor.sum = lambda self, dim=None, keepdim=False: sum(self, dim, keepdim)
Tensor.mean = lambda self, dim=None, keepdim=False: mean(self, dim, keepdim)
Tensor.reshape = _reshape
Tensor.view = _reshape
Tensor.permute = _permute
Tensor.transpose = lambda self, dim0, dim1: transpose(self, dim0, dim1)
Tensor.T = property(lambda self: transpose(self, 0, 1) if self.ndim == 2 else _permute(self, *reversed(range(self.ndim))))
Tensor.softmax = lambda self, dim=-1: softmax(self, dim)
Tensor.log_softmax = lambda self, dim=-1: log_softmax(self, dim)
Tensor.exp = lambda self: exp(self)
Tensor.log = lambda self: log(self)
Tensor.tanh = lambda self: tanh(self)
Tensor.relu = lambda self: relu(self)
Tensor.size = lambda self, dim=None: self.shape if dim is None else self.shape[dim]
Tensor.__pow__ = _pow
Tensor.__repr__ = _repr

from . import nn, optim  # noqa: E402  (they use the names above)
from .runs import train, load, heads  # noqa: E402

# ---- modules, TransformerLens' names, notebook views and the version (docs/python.md)
import functools as _functools  # noqa: E402

from . import lens  # noqa: E402
from .nn import functional  # noqa: E402
from .views import AttentionMap, RunReport, report  # noqa: E402

__version__: str = _core.__version__  # the project's version (CMakeLists.txt), compiled into the module


class no_grad(_core.no_grad):
    """Ops record nothing for backward (their results are constants): as a context manager, `with tf.no_grad():`,
    or as a decorator, `@tf.no_grad()` (each call of the function runs without grad), as torch.no_grad."""

    def __call__(self, fn):
        @_functools.wraps(fn)
        def without_grad(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return without_grad

