"""tf.nn: modules as in torch.nn. Module is PyTorch's: attributes that are modules or parameters (leaf tensors that
require a gradient) are registered, m(x) calls forward, named_parameters() names them "child.param". Linear,
LayerNorm, CausalSelfAttention and GPT hold the library's nn:: modules, with nanoGPT's parameter names: float32 by
default, float64 with dtype=tf.float64 (or np.float64), for gradient checks; the optimizers take float32 only."""
import json as _json
from collections import OrderedDict as _OrderedDict

import numpy as _np

from . import _core
from ._core import Tensor as _Tensor


def Parameter(data, requires_grad=True, dtype="float32"):
    """A leaf tensor that requires a gradient (float32 unless dtype says otherwise): what Module registers, and what
    the optimizers take (float32)."""
    from . import tensor
    return tensor(data, requires_grad=requires_grad, dtype=dtype)


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", _OrderedDict())
        object.__setattr__(self, "_modules", _OrderedDict())
        object.__setattr__(self, "training", True)

    def __getattr__(self, name):
        # Reached only when the usual lookup fails; without _parameters, Module.__init__ has not run yet.
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} is used before it is built: its __init__ must call "
                                 f"super().__init__() first (looking up {name})")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning {name}")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, _Tensor) and value.is_leaf and value.requires_grad:
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name, value):
        """Registers `value` as the parameter `name`: a leaf tensor that requires a gradient (tf.nn.Parameter), or
        None to remove it. Anything else is a TypeError: a NumPy array or a tensor that is not a parameter would
        otherwise be kept as a plain attribute that no optimizer updates."""
        if not isinstance(name, str) or not name or "." in name:
            raise TypeError(f"register_parameter: the name must be a non-empty string without '.', got {name!r}")
        if value is None:
            self._parameters.pop(name, None)
            object.__setattr__(self, name, None)
            return
        if not (isinstance(value, _Tensor) and value.is_leaf and value.requires_grad):
            what = type(value).__name__ if not isinstance(value, _Tensor) else (
                "a tensor that does not require a gradient" if value.is_leaf else "an op's result (not a leaf)")
            raise TypeError(f"register_parameter('{name}'): a parameter is a leaf tensor that requires a gradient, got "
                            f"{what}; wrap it: tf.nn.Parameter(value)")
        self.__setattr__(name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        """Every parameter, depth first, named "child.grandchild.param"."""
        for name, p in self._own_parameters():
            yield prefix + name, p
        for name, child in self._modules.items():
            yield from child.named_parameters(prefix + name + ".")

    def _own_parameters(self):
        return self._parameters.items()

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + name)

    def num_parameters(self):
        return int(_np.sum([p.numel() for p in self.parameters()]))

    def zero_grad(self):
        for p in self.parameters():
            p.zero_grad()

    def train(self, mode=True):
        object.__setattr__(self, "training", bool(mode))
        for child in self._modules.values():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """A dict of NumPy arrays (copies), by parameter name."""
        return _OrderedDict((name, _np.array(p.numpy())) for name, p in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copies the arrays into the parameters in place, all or nothing: every missing or unexpected name, every
        shape that differs, every value that is not an array of finite numbers is named in one ValueError, and then
        no parameter has changed."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: state_dict must be a dict of arrays by name, got "
                            f"{type(state_dict).__name__}")
        params = dict(self.named_parameters())
        problems = []
        missing = [n for n in params if n not in state_dict]
        unexpected = [n for n in state_dict if n not in params]
        if strict and missing:
            problems.append("missing: " + ", ".join(missing))
        if strict and unexpected:
            problems.append("unexpected: " + ", ".join(str(n) for n in unexpected))
        arrays = {}
        for name, value in state_dict.items():
            if name not in params:
                continue
            try:
                array = _np.asarray(value)
            except (TypeError, ValueError):
                array = None
            if array is None or array.dtype.kind not in "biuf":
                problems.append(f"{name}: not an array of numbers ({type(value).__name__})")
            elif tuple(array.shape) != params[name].shape:
                problems.append(f"{name}: shape {list(array.shape)}, the parameter's {list(params[name].shape)}")
            elif not _np.all(_np.isfinite(array)):
                problems.append(f"{name}: holds values that are not finite (NaN or infinity)")
            else:
                arrays[name] = _np.ascontiguousarray(array, dtype=params[name].dtype)
        if problems:
            raise ValueError("load_state_dict: " + "; ".join(problems) + " (no parameter was changed)")
        for name, array in arrays.items():
            _core._copy_into(params[name], array)

    def __repr__(self):
        lines = [f"  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items()]
        return type(self).__name__ + ("(\n" + "\n".join(lines) + "\n)" if lines else "()")


def _impl_class(name, dtype):
    """The binding of the library's module `name` in dtype: _core._Linear (float32) or _core._Linear64 (float64)."""
    from . import _dtype_name
    return getattr(_core, name + ("64" if (_dtype_name(dtype) or "float32") == "float64" else ""))


class _Wrapped(Module):
    """A Module around one of the library's modules (its parameters are the library's own tensors)."""

    def __init__(self, impl):
        super().__init__()
        object.__setattr__(self, "_impl", impl)

    @property
    def dtype(self):
        """"float32" or "float64": the dtype of the parameters, and of the inputs forward takes."""
        return "float64" if type(self._impl).__name__.endswith("64") else "float32"

    def _own_parameters(self):
        return self._impl.named_parameters()

    def train(self, mode=True):
        self._impl.train(bool(mode))
        return super().train(mode)


def _model_json(**keys):
    return _json.dumps({k: v for k, v in keys.items() if v is not None})


class Linear(_Wrapped):
    """y = x W^T + b: x [..., in] -> [..., out]; weight [out, in], bias [out]. Weight by `init` (xavier_uniform,
    xavier_normal or normal, the config's model.init), from the generator seeded with `seed`; dtype float32 or
    float64 (the same draws, rounded to float32 or not)."""

    def __init__(self, in_features, out_features, bias=True, init=None, seed=0, dtype=None):
        impl = _impl_class("_Linear", dtype)
        super().__init__(impl(in_features, out_features, bias, _model_json(init=init), seed))
        object.__setattr__(self, "in_features", in_features)
        object.__setattr__(self, "out_features", out_features)

    def forward(self, x):
        return self._impl.forward(x)

    def __repr__(self):
        return f"Linear(in_features={self.in_features}, out_features={self.out_features})"


class LayerNorm(_Wrapped):
    """Over the last axis of width d_model: weight (ones) and bias (zeros, unless bias=False); norm="rmsnorm" for
    RMSNorm (weight only), as the config's model.norm. dtype float32 or float64."""

    def __init__(self, d_model, bias=True, norm="layernorm", dtype=None):
        impl = _impl_class("_Norm", dtype)
        super().__init__(impl(_model_json(d_model=d_model, bias=bias, norm=norm, n_head=1)))

    def forward(self, x):
        return self._impl.forward(x)


class CausalSelfAttention(_Wrapped):
    """nanoGPT's CausalSelfAttention: c_attn [3C, C], the fused causal attention of n_head heads, c_proj [C, C];
    x [B,T,C] -> [B,T,C]. Other model keys (bias, dropout, init, attention, position) as keyword arguments; dtype
    float32 or float64."""

    def __init__(self, d_model, n_head, seed=0, dtype=None, **model_keys):
        impl = _impl_class("_CausalSelfAttention", dtype)
        super().__init__(impl(_model_json(d_model=d_model, n_head=n_head, **model_keys), seed))

    def forward(self, x):
        return self._impl.forward(x)

    def attention_weights(self, x):
        """The weights [B,H,T,T] of the attention over x."""
        self._impl.record_weights(True)
        try:
            self._impl.forward(x)
            return self._impl.last_weights()
        finally:
            self._impl.record_weights(False)


class GPT(_Wrapped):
    """The library's GPT (nanoGPT's architecture and parameter names), from the model section of a config as a
    dict: {"vocab_size": 11, "context": 16, "d_model": 64, "n_head": 4, "n_layer": 2, ...} (docs/config.md);
    `seed` drives the initialisation. forward(ids [B,T]) -> logits [B,T,V]; loss(ids, targets) -> the mean
    cross-entropy (targets -1 ignored). dtype float32 or float64."""

    def __init__(self, config, seed=1337, dtype=None):
        super().__init__(_impl_class("_GPT", dtype)(_json.dumps(dict(config)), seed))

    @property
    def config(self):
        return _json.loads(self._impl.config_json())

    def forward(self, ids):
        return self._impl.forward(_np.asarray(ids))

    def loss(self, ids, targets):
        return self._impl.loss(_np.asarray(ids), _np.asarray(targets))

    def hook_names(self):
        """The names of the forward's hook points, TransformerLens' (blocks.{l}.attn.hook_pattern, ...), in the order
        the forward reaches them (nn/hooks.hpp lists them with their shapes)."""
        return self._impl.hook_names()

    def run_with_cache(self, ids):
        """(logits [B,T,V], cache): the library's forward (nn::GPT::run_with_cache) with every activation copied into
        a dict of NumPy arrays under its hook name, in the forward's order."""
        return self._impl.run_with_cache(_np.asarray(ids))

    def run_with_hooks(self, ids, fwd_hooks=()):
        """Logits [B,T,V] of the library's forward with hooks [(name, fn)]: fn(activation, hook) gets a NumPy copy
        and hook.name, and returns a replacement of the same shape or None to keep it (activation patching, the
        logit lens). A wrong shape or an unknown name is a ValueError naming it."""
        hooks = [(name, _hook_call(fn)) for name, fn in fwd_hooks]
        return self._impl.run_with_hooks(_np.asarray(ids), hooks)

    def __repr__(self):
        return f"GPT({self.config})"


class HookPoint:
    """What a hook function gets besides the activation: its name (hook.name), as in TransformerLens."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"HookPoint({self.name!r})"


def _hook_call(fn):
    return lambda activation, name: fn(activation, HookPoint(name))
