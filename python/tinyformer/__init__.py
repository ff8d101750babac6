"""tinyformer from Python: the C++ library's tensors, autodiff, modules, optimizers and trainer, with NumPy in and
out and PyTorch's names.

    import tinyformer as tf
    x = tf.tensor(np.random.randn(4, 8), requires_grad=True)   # float64 from a float64 array, else float32
    loss = tf.softmax(x @ x.transpose(0, 1)).sum()
    loss.backward(); x.grad                                      # a tensor

Every op calls the library (python/src/*.cpp bind it); nothing is computed twice. The GIL is released while an op,
a backward, an optimizer step or a training run works.
"""
import numpy as _np

from . import _core
from ._arguments import one_line_type_errors as _one_line_type_errors

_one_line_type_errors(_core)  # pybind11's multi-line message for an argument it cannot convert, as one line naming it

from ._core import (Tensor, Generator, no_grad, is_grad_enabled, set_num_threads, get_num_threads, GradcheckResult,
                    sum, mean, exp, log, tanh, relu, gelu, silu, swiglu, causal_mask, softmax, log_softmax, scale,
                    matmul, linear, layer_norm, rms_norm, embedding, cross_entropy, dropout, causal_self_attention,
                    rotary_qk, permute, transpose, reshape, split, cat, Vocabulary)
# ---- tensors as PyTorch users write them: every function below is a C++ binding (python/src), and Tensor's methods
# are defined there too; nothing is computed or patched on here.
from ._core import (tensor, zeros, ones, full, zeros_like, ones_like, full_like, arange, rand, randn, randint,
                    rand_like, randn_like, manual_seed, default_generator, float32, float64, int64, double, long,
                    add, sub, mul, div, pow, neg, abs, sqrt, sigmoid, clone, where, masked_fill, maximum, minimum, eq,
                    ne, lt, le, gt, ge, isnan, isinf, isfinite, logical_not, logical_and, logical_or, logical_xor,
                    var, std, max, min, argmax, argmin, t, unsqueeze, squeeze, flatten, broadcast_to, chunk, unbind,
                    stack, take, tril, triu, any, all, return_types, _dtype_name, clamp, clip, rsqrt, isclose,
                    allclose, gather, flip, topk, multinomial, remainder, floor_divide, einsum,
                    from_numpy, sort, argsort, cumsum, logsumexp, norm, amax, amin, bmm, outer, index_select,
                    nonzero, linspace, randperm, device, log2, log10, repeat_interleave, bincount, unique, histc,
                    equal, empty, empty_like, scatter_add, round, floor, ceil, trunc, sign, frac, sin, cos, tan,
                    log1p, expm1, erf)


def __getattr__(name):
    # tf.bool and tf.float: dtype names that would shadow Python's builtins if they were globals of this module.
    if name == "bool":
        return _core.bool_
    if name == "float":
        return _core.float32
    raise AttributeError(f"module 'tinyformer' has no attribute '{name}'")
# ---- end of the tensor names


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


from . import nn, optim  # noqa: E402  (they use the names above)
from .runs import train, load, heads, config_yaml, Stop  # noqa: E402
from .serialization import save  # noqa: E402

# ---- modules, TransformerLens' names, notebook views and the version (docs/python.md)
import functools as _functools  # noqa: E402

from . import lens, linalg  # noqa: E402
from .nn import functional  # noqa: E402
from .views import AttentionMap, RunReport, report  # noqa: E402

__version__: str = _core.__version__  # the project's version (CMakeLists.txt), compiled into the module


def compile(model=None, **options):  # noqa: A001 (torch.compile's name)
    """torch.compile's place in a training script (nanoGPT's `model = torch.compile(model)`): gives back `model`
    itself, or as a decorator the function itself. tinyformer's ops are compiled C++ already, and a forward's graph
    is not traced or fused further; the options (mode, fullgraph, dynamic, backend) are accepted and change nothing."""
    if model is None:
        return lambda fn: fn
    return model


def get_default_dtype():
    """float32: the dtype of a tensor made from Python floats and of the factories (as torch's default)."""
    return float32


class _Cuda:
    """torch.cuda's questions, answered for a CPU library: no CUDA device here."""

    @staticmethod
    def is_available():
        """False: tinyformer runs on the CPU."""
        return False

    @staticmethod
    def device_count():
        """0."""
        return 0


cuda = _Cuda()


class no_grad(_core.no_grad):
    """Ops record nothing for backward (their results are constants): as a context manager, `with tf.no_grad():`,
    or as a decorator, `@tf.no_grad()` (each call of the function runs without grad), as torch.no_grad."""

    def __call__(self, fn):
        @_functools.wraps(fn)
        def without_grad(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return without_grad


class inference_mode(no_grad):
    """torch.inference_mode: no_grad (the library has no separate inference mode); a context manager or decorator.
    inference_mode(False) records as usual."""

    def __init__(self, mode=True):
        super().__init__()
        self._mode = mode

    def __enter__(self):
        if self._mode:
            super().__enter__()

    def __exit__(self, *exc):
        if self._mode:
            super().__exit__(*exc)


class set_grad_enabled:
    """torch.set_grad_enabled(mode): switches recording on or off from here on, and as a context manager restores the
    previous mode at its end.

        with tf.set_grad_enabled(is_train):
            loss = model(x)
    """

    def __init__(self, mode):
        self._previous = is_grad_enabled()
        _core._set_grad_enabled(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _core._set_grad_enabled(self._previous)
