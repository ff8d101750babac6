"""tf.nn: modules as in torch.nn.

Module is PyTorch's: attributes that are modules or parameters (leaf tensors that require a gradient) are registered,
m(x) calls forward, named_parameters() names them "child.param", named_modules() walks the whole tree, print(m) shows
it as torch prints it. Linear, LayerNorm, RMSNorm, Embedding, CausalSelfAttention and GPT hold the library's nn::
modules, with nanoGPT's parameter names: float32 by default, float64 with dtype=tf.float64 (or np.float64), for
gradient checks; the optimizers take float32 only. A GPT's sub-modules (transformer.h.0.attn, ...) are the library's
own, shown as Python modules (blocks, attn, mlp, ...). Sequential, ModuleList, ModuleDict and the activation modules
(ReLU, GELU, ...) are Python containers around the library's ops. tf.nn.functional (F) has the ops under torch's
names. A GPT also speaks TransformerLens (cfg, W_E ... W_O, blocks, run_with_cache -> ActivationCache): see
tinyformer.lens.
"""
from __future__ import annotations

import json as _json
import sys as _sys
import weakref as _weakref
from collections import OrderedDict as _OrderedDict
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as _np

from . import _core
from . import functional
from . import lens as _lens
from . import nn_init as init
from . import nn_utils as utils
from ._core import Tensor as _Tensor

# `import tinyformer.nn.functional as F` finds it as torch's users write it (as os.path is found under os).
_sys.modules[__name__ + ".functional"] = functional
_sys.modules[__name__ + ".init"] = init
_sys.modules[__name__ + ".utils"] = utils

__all__ = ["Parameter", "Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Embedding", "LayerNorm",
           "RMSNorm", "CausalSelfAttention", "MLP", "Block", "GPT", "ReLU", "GELU", "SiLU", "Tanh", "Softmax",
           "Dropout", "Identity", "HookPoint", "CrossEntropyLoss", "MSELoss", "functional", "init", "utils"]


def Parameter(data: Any, requires_grad: bool = True, dtype: Any = "float32") -> _Tensor:
    """A leaf tensor that requires a gradient (float32 unless dtype says otherwise): what Module registers, and what
    the optimizers take (float32).

        w = tf.nn.Parameter(np.zeros((4, 3)))     # float32, requires_grad=True
    """
    from . import tensor
    return tensor(data, requires_grad=requires_grad, dtype=dtype)


class Module:
    """The base of every module, as torch.nn.Module: assign modules and parameters as attributes in __init__ (after
    super().__init__()), write forward; m(x) calls it.

        class Net(tf.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = tf.nn.Linear(4, 2)
            def forward(self, x):
                return tf.relu(self.fc(x))
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", _OrderedDict())
        object.__setattr__(self, "_modules", _OrderedDict())
        object.__setattr__(self, "_buffers", _OrderedDict())  # name -> persistent (in state_dict)
        object.__setattr__(self, "training", True)

    def __getattr__(self, name: str) -> Any:
        # Reached only when the usual lookup fails; without _parameters, Module.__init__ has not run yet.
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} is used before it is built: its __init__ must call "
                                 f"super().__init__() first (looking up {name})")
        prop = getattr(type(self), name, None)
        if isinstance(prop, property):  # a property that raised AttributeError: let its own message through
            return prop.fget(self)
        if name in self.__dict__["_modules"]:
            return self.__dict__["_modules"][name]
        own = dict(self._own_parameters())
        if name in own:
            return own[name]
        point = _hook_point(self, name) if name.startswith("hook_") else None
        if point is not None:
            return point
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning {name}")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, _Tensor) and value.is_leaf and value.requires_grad:
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, value: Optional[_Tensor]) -> None:
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

    def register_buffer(self, name: str, tensor: Optional[_Tensor], persistent: bool = True) -> None:
        """Keeps `tensor` as the attribute `name`: not a parameter (no optimizer changes it), listed by
        named_buffers(), and in state_dict() when persistent, as torch's buffers (nanoGPT's causal mask)."""
        if not isinstance(name, str) or not name or "." in name:
            raise TypeError(f"register_buffer: the name must be a non-empty string without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, _Tensor):
            raise TypeError(f"register_buffer('{name}'): a buffer is a tensor or None, got {type(tensor).__name__}")
        if name in self._parameters or name in self._modules:
            raise KeyError(f"register_buffer('{name}'): the name is a parameter or a module of this module already")
        self.__dict__.setdefault("_buffers", _OrderedDict())[name] = bool(persistent)
        object.__setattr__(self, name, tensor)

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[Tuple[str, _Tensor]]:
        """Every buffer (register_buffer), depth first, named as named_parameters() names parameters."""
        for name in self.__dict__.get("_buffers", {}):
            value = self.__dict__.get(name)
            if value is not None:
                yield prefix + name, value
        if recurse:
            for name, child in self._modules.items():
                yield from child.named_buffers(prefix + name + ".")

    def buffers(self, recurse: bool = True) -> Iterator[_Tensor]:
        """The tensors of named_buffers()."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def _state_items(self, prefix: str = "") -> Iterator[Tuple[str, _Tensor]]:
        """What state_dict() holds, in torch's order: each module's parameters, then its persistent buffers, then its
        children's."""
        for name, p in self._own_parameters():
            yield prefix + name, p
        for name, persistent in self.__dict__.get("_buffers", {}).items():
            if persistent and self.__dict__.get(name) is not None:
                yield prefix + name, self.__dict__[name]
        for name, child in self._modules.items():
            yield from child._state_items(prefix + name + ".")

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """model.to("cpu") (or a tf.device): the module itself, as every tensor is on the CPU; another device is a
        ValueError. A dtype: build the module in it (dtype= of the library's modules)."""
        for device in [*args, *kwargs.values()]:
            if _core._device_type(device) != "cpu":
                raise ValueError(f"to({device!r}): tinyformer runs on the CPU ('cpu'); a module's dtype is chosen "
                                 f"when it is built (dtype=)")
        return self

    def cpu(self) -> "Module":
        """The module itself: every tensor is on the CPU."""
        return self

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """Registers `module` as the child `name` (torch's add_module): the same as an assignment."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module('{name}'): {type(module).__name__} is not a tf.nn.Module")
        self.__setattr__(name, module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """What m(...) computes; every subclass writes its own."""
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def _own_parameters(self) -> Iterable[Tuple[str, _Tensor]]:
        return self._parameters.items()

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[Tuple[str, _Tensor]]:
        """Every parameter, depth first, named "child.grandchild.param" (nanoGPT's state_dict names); a parameter
        that two modules share (tied weights) once, under its first name, unless remove_duplicate=False (as torch)."""
        seen: set = set()
        for name, p in self._named_parameters_all(prefix, recurse):
            if remove_duplicate:
                if id(p) in seen:
                    continue
                seen.add(id(p))
            yield name, p

    def _named_parameters_all(self, prefix: str, recurse: bool) -> Iterator[Tuple[str, _Tensor]]:
        for name, p in self._own_parameters():
            yield prefix + name, p
        if recurse:
            for name, child in self._modules.items():
                yield from child._named_parameters_all(prefix + name + ".", True)

    def parameters(self, recurse: bool = True) -> Iterator[_Tensor]:
        """The tensors of named_parameters()."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_children(self) -> Iterator[Tuple[str, "Module"]]:
        """The direct sub-modules, by name, in the order assigned."""
        yield from self._modules.items()

    def children(self) -> Iterator["Module"]:
        """The direct sub-modules."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: Optional[set] = None, prefix: str = "") -> Iterator[Tuple[str, "Module"]]:
        """This module ("") and every module below it, depth first, named "child.grandchild" (torch's order); a
        module reached twice is listed once.

            [name for name, _ in tf.nn.GPT(cfg).named_modules()][:4]  # ['', 'transformer', 'transformer.wte', ...]
        """
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self) -> Iterator["Module"]:
        """The modules of named_modules()."""
        for _, m in self.named_modules():
            yield m

    def apply(self, fn: Callable[["Module"], Any]) -> "Module":
        """Calls fn on every sub-module, then on this one (torch's order); returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def num_parameters(self) -> int:
        """The number of parameter values (elements)."""
        return int(_np.sum([p.numel() for p in self.parameters()]))

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Frees every parameter's gradient (p.grad is None until the next backward)."""
        for p in self.parameters():
            p.zero_grad()

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Sets requires_grad of every parameter (False: frozen, no gradient is kept); returns self."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def train(self, mode: bool = True) -> "Module":
        """Training mode (dropout on) for this module and every module below it; returns self."""
        object.__setattr__(self, "training", bool(mode))
        for child in self._modules.values():
            child.train(mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: train(False)."""
        return self.train(False)

    def state_dict(self) -> "_OrderedDict[str, _np.ndarray]":
        """A dict of NumPy arrays (copies), by parameter and persistent buffer name, in torch's order."""
        return _OrderedDict((name, _np.array(p.numpy())) for name, p in self._state_items())

    def load_state_dict(self, state_dict: Dict[str, Any], strict: bool = True) -> None:
        """Copies the arrays into the parameters in place, all or nothing: every missing or unexpected name, every
        shape that differs, every value that is not an array of finite numbers is named in one ValueError, and then
        no parameter has changed."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: state_dict must be a dict of arrays by name, got "
                            f"{type(state_dict).__name__}")
        params = dict(self._state_items())
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

    def extra_repr(self) -> str:
        """The text inside the parentheses of print(m), after the class name (torch's extra_repr)."""
        return ""

    def _repr_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = [f"({n}): " + repr(m).replace("\n", "\n  ") for n, m in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{self._repr_name()}({extra})"
        body = ([extra] if extra else []) + lines
        return self._repr_name() + "(\n  " + "\n  ".join(body) + "\n)"

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._modules) | {n for n, _ in self._own_parameters()})


# ---- containers


class Sequential(Module):
    """Modules called in turn, each on the previous one's output (torch.nn.Sequential); indexable like a list.

        net = tf.nn.Sequential(tf.nn.Linear(4, 8), tf.nn.ReLU(), tf.nn.Linear(8, 2))
        y = net(x)            # net[0] is the first Linear
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, _OrderedDict)):
            for name, m in modules[0].items():
                self.add_module(str(name), m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, index: Union[int, slice]) -> Any:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(*items[index])
        return items[_list_index(index, len(items))]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def append(self, module: Module) -> "Sequential":
        """Adds a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self


def _list_index(index: int, n: int) -> int:
    if not isinstance(index, (int, _np.integer)):
        raise TypeError(f"indices must be integers or slices, not {type(index).__name__}")
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of range for {n} modules")
    return int(index) % n


class ModuleList(Module):
    """A list of modules, registered (torch.nn.ModuleList): their parameters are the list's, named "0.weight", ...

        self.layers = tf.nn.ModuleList([tf.nn.Linear(8, 8) for _ in range(3)])
        for layer in self.layers: x = layer(x)
    """

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        """Adds a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Adds each module at the end; returns self."""
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, index: Union[int, slice]) -> Any:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(items[index])
        return items[_list_index(index, len(items))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_list_index(index, len(self))), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))


class ModuleDict(Module):
    """A dict of modules, registered by key (torch.nn.ModuleDict).

        self.heads = tf.nn.ModuleDict({"a": tf.nn.Linear(8, 2), "b": tf.nn.Linear(8, 3)})
    """

    def __init__(self, modules: Optional[Dict[str, Module]] = None) -> None:
        super().__init__()
        for name, m in (modules or {}).items():
            self.add_module(name, m)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._modules))

    def keys(self) -> Iterable[str]:
        """The names."""
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        """The modules."""
        return self._modules.values()

    def items(self) -> Iterable[Tuple[str, Module]]:
        """(name, module) pairs."""
        return self._modules.items()


# ---- activations and other modules without parameters: each calls one library op (tf.nn.functional)


class ReLU(Module):
    """max(x, 0) (torch.nn.ReLU)."""

    def forward(self, x: _Tensor) -> _Tensor:
        return functional.relu(x)


class GELU(Module):
    """GELU, tanh approximation, as GPT-2 and nanoGPT (torch.nn.GELU(approximate='tanh'); the exact erf form is not a
    library op)."""

    def __init__(self, approximate: str = "tanh") -> None:
        super().__init__()
        if approximate != "tanh":
            raise ValueError(f"GELU(approximate={approximate!r}): the library's GELU is the tanh approximation; "
                             f"use approximate='tanh'")
        self.approximate = approximate

    def forward(self, x: _Tensor) -> _Tensor:
        return functional.gelu(x)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'"


class SiLU(Module):
    """x * sigmoid(x) (torch.nn.SiLU)."""

    def forward(self, x: _Tensor) -> _Tensor:
        return functional.silu(x)


class Tanh(Module):
    """tanh(x) (torch.nn.Tanh)."""

    def forward(self, x: _Tensor) -> _Tensor:
        return functional.tanh(x)


class Softmax(Module):
    """softmax over `dim` (torch.nn.Softmax)."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: _Tensor) -> _Tensor:
        return functional.softmax(x, dim=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Identity(Module):
    """Returns its input (torch.nn.Identity)."""

    def forward(self, x: Any) -> Any:
        return x


class CrossEntropyLoss(Module):
    """loss(input, target) = F.cross_entropy(input, target, ignore_index, reduction) (torch.nn.CrossEntropyLoss)."""

    def __init__(self, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing

    def forward(self, input: _Tensor, target: Any) -> _Tensor:
        return functional.cross_entropy(input, target, self.ignore_index, self.reduction, self.label_smoothing)


class MSELoss(Module):
    """loss(input, target) = F.mse_loss(input, target, reduction) (torch.nn.MSELoss)."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: _Tensor, target: Any) -> _Tensor:
        return functional.mse_loss(input, target, reduction=self.reduction)


class Dropout(Module):
    """Zeroes each element with probability p in training mode and scales the rest by 1/(1-p); the identity in eval
    mode (torch.nn.Dropout). Its draws come from its own generator, seeded with `seed` (one seed, one result)."""

    def __init__(self, p: float = 0.5, inplace: bool = False, seed: int = 0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Dropout(p={p}): p must be in [0, 1)")
        if inplace:
            raise ValueError("Dropout(inplace=True): tinyformer's ops make new tensors; use inplace=False")
        self.p = p
        self.inplace = inplace
        object.__setattr__(self, "_generator", _core.Generator(seed))

    def forward(self, x: _Tensor) -> _Tensor:
        return _core.dropout(x, self.p, self.training, self._generator)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


# ---- the library's modules


def _impl_class(name: str, dtype: Any) -> Any:
    """The binding of the library's module `name` in dtype: _core._Linear (float32) or _core._Linear64 (float64)."""
    from . import _dtype_name
    return getattr(_core, name + ("64" if (_dtype_name(dtype) or "float32") == "float64" else ""))


class _Wrapped(Module):
    """A Module around one of the library's modules: its parameters are the library's own tensors, its sub-modules
    the library's (each shown as the Python module of its class)."""

    def __init__(self, impl: Any, model: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        object.__setattr__(self, "_impl", impl)
        for name, child in impl.named_children():
            wrapped = _wrap(child, model or {})
            object.__setattr__(wrapped, "_parent", (_weakref.ref(self), name))  # where its hook points are
            self._modules[name] = wrapped

    @classmethod
    def _from_impl(cls, impl: Any, model: Dict[str, Any]) -> "_Wrapped":
        self = cls.__new__(cls)
        _Wrapped.__init__(self, impl, model)
        self._describe(model)
        return self

    def _describe(self, model: Dict[str, Any]) -> None:
        """Sets what a module built by the library (a GPT's sub-module) tells about itself: its sizes, for repr."""

    @property
    def dtype(self) -> str:
        """"float32" or "float64": the dtype of the parameters, and of the inputs forward takes."""
        return "float64" if type(self._impl).__name__.endswith("64") else "float32"

    def _own_parameters(self) -> List[Tuple[str, _Tensor]]:
        """This module's own parameters, the same Python objects every time (m.weight is m.weight, as torch)."""
        own = self.__dict__.get("_own")
        if own is None:
            own = [(n, p) for n, p in self._impl.named_parameters() if "." not in n]
            object.__setattr__(self, "_own", own)
        return own

    def train(self, mode: bool = True) -> "_Wrapped":
        self._impl.train(bool(mode))
        return super().train(mode)

    def __setattr__(self, name: str, value: Any) -> None:
        """A parameter takes another module's (weight tying, nanoGPT's `self.transformer.wte.weight =
        self.lm_head.weight`): the library's module then shares it (Module::set_parameter; a ValueError, with nothing
        changed, for a value that is not a parameter or whose shape or dtype differ). A sub-module cannot be
        replaced."""
        own = self._own_parameters()
        if any(n == name for n, _ in own):
            if not isinstance(value, _Tensor):
                raise TypeError(f"{type(self).__name__}.{name}: a library module's parameter takes a parameter "
                                f"(tf.nn.Parameter, or another module's weight), got {type(value).__name__}")
            self._impl.set_parameter(name, value)
            object.__setattr__(self, "_own", [(n, value if n == name else p) for n, p in own])
            return
        if name in self._modules:
            raise AttributeError(f"{type(self).__name__}.{name} is a part of the library's module and cannot be "
                                 f"replaced; change its values in place (load_state_dict)")
        super().__setattr__(name, value)


class _LibraryContainer(_Wrapped):
    """A container module of the library (a GPT's transformer and transformer.h): shown as ModuleDict or, when its
    children are numbered, ModuleList (as nanoGPT prints them); indexable."""

    def _repr_name(self) -> str:
        return "ModuleList" if all(n.isdigit() for n in self._modules) else "ModuleDict"

    def __getitem__(self, key: Union[int, str, slice]) -> Any:
        items = list(self._modules.values())
        if isinstance(key, slice):
            return items[key]
        if isinstance(key, str):
            return self._modules[key]
        return items[_list_index(key, len(items))]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))


def _model_json(**keys: Any) -> str:
    return _json.dumps({k: v for k, v in keys.items() if v is not None})


class Linear(_Wrapped):
    """y = x W^T + b: x [..., in] -> [..., out]; weight [out, in], bias [out] (torch.nn.Linear). Weight by `init`
    (xavier_uniform, xavier_normal or normal, the config's model.init), from the generator seeded with `seed`; dtype
    float32 or float64 (the same draws, rounded to float32 or not).

        fc = tf.nn.Linear(4, 8)          # Linear(in_features=4, out_features=8, bias=True)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, init: Optional[str] = None,
                 seed: int = 0, dtype: Any = None) -> None:
        impl = _impl_class("_Linear", dtype)
        super().__init__(impl(in_features, out_features, bias, _model_json(init=init), seed))
        object.__setattr__(self, "in_features", in_features)
        object.__setattr__(self, "out_features", out_features)

    def _describe(self, model: Dict[str, Any]) -> None:
        out_features, in_features = dict(self._own_parameters())["weight"].shape
        object.__setattr__(self, "in_features", in_features)
        object.__setattr__(self, "out_features", out_features)

    def forward(self, x: _Tensor) -> _Tensor:
        return self._impl.forward(x)

    def extra_repr(self) -> str:
        has_bias = "bias" in dict(self._own_parameters())
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={has_bias}"


class Embedding(_Wrapped):
    """Rows of weight [num_embeddings, embedding_dim] by integer ids: ids [...] -> [..., embedding_dim]
    (torch.nn.Embedding); the library's initialisation N(0, 0.02^2) (GPT-2's; torch draws N(0, 1)), from the
    generator seeded with `seed`.

        wte = tf.nn.Embedding(11, 64)
        x = wte(np.array([[1, 2, 3]]))   # [1, 3, 64]
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, seed: int = 0, dtype: Any = None) -> None:
        super().__init__(_impl_class("_Embedding", dtype)(num_embeddings, embedding_dim, seed))
        object.__setattr__(self, "num_embeddings", num_embeddings)
        object.__setattr__(self, "embedding_dim", embedding_dim)

    def _describe(self, model: Dict[str, Any]) -> None:
        num, dim = dict(self._own_parameters())["weight"].shape
        object.__setattr__(self, "num_embeddings", num)
        object.__setattr__(self, "embedding_dim", dim)

    def forward(self, ids: Any) -> _Tensor:
        return self._impl.forward(_np.asarray(ids))

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


def _normalized_width(normalized_shape: Union[int, Sequence[int]]) -> int:
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, _np.integer)) else tuple(normalized_shape)
    if len(shape) != 1:
        raise ValueError(f"normalized_shape {shape}: the library normalises over the last axis only; give one width")
    return int(shape[0])


def _check_eps(eps: float) -> None:
    if eps != _core._norm_eps:
        raise ValueError(f"eps={eps}: the library's norms use eps={_core._norm_eps} (torch's default)")


class LayerNorm(_Wrapped):
    """Over the last axis of width normalized_shape: weight (ones) and bias (zeros, unless bias=False)
    (torch.nn.LayerNorm; eps is the library's 1e-05). norm="rmsnorm" makes it RMSNorm (weight only), as the config's
    model.norm. dtype float32 or float64.

        ln = tf.nn.LayerNorm(64)        # LayerNorm((64,), eps=1e-05, elementwise_affine=True)
    """

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, norm: str = "layernorm",
                 dtype: Any = None) -> None:
        _check_eps(eps)
        if not elementwise_affine:
            raise ValueError("LayerNorm(elementwise_affine=False): the library's norms always have a weight")
        d = _normalized_width(normalized_shape)
        impl = _impl_class("_Norm", dtype)
        super().__init__(impl(_model_json(d_model=d, bias=bias, norm=norm, n_head=1)))
        object.__setattr__(self, "normalized_shape", (d,))
        object.__setattr__(self, "eps", _core._norm_eps)
        object.__setattr__(self, "norm", norm)

    def _describe(self, model: Dict[str, Any]) -> None:
        object.__setattr__(self, "normalized_shape", tuple(dict(self._own_parameters())["weight"].shape))
        object.__setattr__(self, "eps", _core._norm_eps)
        object.__setattr__(self, "norm", model.get("norm", "layernorm"))

    def forward(self, x: _Tensor) -> _Tensor:
        return self._impl.forward(x)

    def _repr_name(self) -> str:
        return "RMSNorm" if self.norm == "rmsnorm" else "LayerNorm"

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps:g}, elementwise_affine=True"


class RMSNorm(LayerNorm):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (LLaMA's; torch.nn.RMSNorm): the library's RMSNorm.

        norm = tf.nn.RMSNorm(64)
    """

    def __init__(self, normalized_shape: Union[int, Sequence[int]], eps: float = 1e-5,
                 elementwise_affine: bool = True, dtype: Any = None) -> None:
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine, bias=False, norm="rmsnorm",
                         dtype=dtype)


class CausalSelfAttention(_Wrapped, _lens.AttentionWeights):
    """nanoGPT's CausalSelfAttention: c_attn [3C, C], the fused causal attention of n_head heads, c_proj [C, C];
    x [B,T,C] -> [B,T,C]. Other model keys (bias, dropout, init, attention, position, n_kv_head) as keyword
    arguments; dtype float32 or float64. TransformerLens' per-head weights: W_Q, W_K, W_V [H, C, D], W_O [H, D, C],
    b_Q, b_K, b_V [H, D], b_O [C].

        attn = tf.nn.CausalSelfAttention(64, 4)
        y = attn(x)                       # x [B,T,64]
    """

    def __init__(self, d_model: int, n_head: int, seed: int = 0, dtype: Any = None, **model_keys: Any) -> None:
        impl = _impl_class("_CausalSelfAttention", dtype)
        super().__init__(impl(_model_json(d_model=d_model, n_head=n_head, **model_keys), seed))
        self._describe({"d_model": d_model, "n_head": n_head, **model_keys})

    def _describe(self, model: Dict[str, Any]) -> None:
        n_head = int(model.get("n_head", 1))
        object.__setattr__(self, "n_head", n_head)
        object.__setattr__(self, "n_kv_head", int(model.get("n_kv_head") or n_head))

    def forward(self, x: _Tensor) -> _Tensor:
        return self._impl.forward(x)

    def attention_weights(self, x: _Tensor) -> _np.ndarray:
        """The weights [B,H,T,T] of the attention over x."""
        self._impl.record_weights(True)
        try:
            self._impl.forward(x)
            return self._impl.last_weights()
        finally:
            self._impl.record_weights(False)

    def extra_repr(self) -> str:
        return f"n_head={self.n_head}" + (f", n_kv_head={self.n_kv_head}" if self.n_kv_head != self.n_head else "")


class MLP(_Wrapped, _lens.MLPWeights):
    """A GPT block's MLP (the library's): c_proj(gelu(c_fc(x))), or with model.mlp: swiglu c_proj(silu(gate) * up);
    x [B,T,C] -> [B,T,C]. TransformerLens' W_in [C, d_mlp], W_out [d_mlp, C] (and W_gate for swiglu), b_in, b_out."""

    def _describe(self, model: Dict[str, Any]) -> None:
        object.__setattr__(self, "kind", model.get("mlp", "gelu"))

    def forward(self, x: _Tensor) -> _Tensor:
        return self._impl.forward(x)


class Block(_Wrapped):
    """A GPT block (the library's): x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)); x [B,T,C] -> [B,T,C]. Its parts under
    nanoGPT's names (ln_1, attn, ln_2, mlp) and TransformerLens' (ln1, ln2).

        block = model.blocks[0]
        y = block(x)
        block.attn.W_Q.shape              # (H, C, D)
    """

    def forward(self, x: _Tensor) -> _Tensor:
        return self._impl.forward(x)

    @property
    def ln1(self) -> LayerNorm:
        """TransformerLens' name for ln_1."""
        return self._modules["ln_1"]

    @property
    def ln2(self) -> LayerNorm:
        """TransformerLens' name for ln_2."""
        return self._modules["ln_2"]


def _hook_point(module: Module, name: str) -> Optional[Any]:
    """TransformerLens' hook points as module attributes: model.blocks[0].attn.hook_pattern is the model's HookPoint
    blocks.0.attn.hook_pattern (model.hook_dict); None for a module outside a GPT or a name it has no hook of."""
    path = []
    while "_parent" in module.__dict__:
        parent, child_name = module.__dict__["_parent"]
        module = parent()
        if module is None:
            return None
        path.append(child_name)
    if not isinstance(module, _lens.HookedTransformer):
        return None
    prefix = _lens.module_hook_prefix(".".join(reversed(path)))
    return module._hook_state()["points"].get(prefix + name)


def _wrap(impl: Any, model: Dict[str, Any]) -> Module:
    """The Python module for one of the library's modules, by its bound class."""
    kind = type(impl).__name__
    kind = kind[:-2] if kind.endswith("64") else kind
    classes = {"_Linear": Linear, "_Embedding": Embedding, "_Attention": CausalSelfAttention,
               "_CausalSelfAttention": CausalSelfAttention, "_MLP": MLP, "_Block": Block,
               "_Norm": RMSNorm if model.get("norm") == "rmsnorm" else LayerNorm}
    return classes.get(kind, _LibraryContainer)._from_impl(impl, model)


class GPT(_Wrapped, _lens.HookedTransformer):
    """The library's GPT (nanoGPT's architecture and parameter names), from the model section of a config as a
    dict: {"vocab_size": 11, "context": 16, "d_model": 64, "n_head": 4, "n_layer": 2, ...} (docs/config.md);
    `seed` drives the initialisation. forward(ids [B,T]) -> logits [B,T,V]; loss(ids, targets) -> the mean
    cross-entropy (targets -1 ignored). dtype float32 or float64. TransformerLens' names too (tinyformer.lens): cfg,
    W_E, W_pos, W_Q, W_K, W_V, W_O, W_in, W_out, W_U and their b_*, blocks, run_with_cache, run_with_hooks.

        model = tf.nn.GPT({"vocab_size": 11, "context": 16, "d_model": 64, "n_head": 4, "n_layer": 2})
        logits = model(np.array([[1, 2, 3]]))      # [1, 3, 11]
        model.W_Q.shape                            # (2, 4, 64, 16): [n_layers, n_heads, d_model, d_head]
    """

    def __init__(self, config: Dict[str, Any], seed: int = 1337, dtype: Any = None) -> None:
        impl = _impl_class("_GPT", dtype)(_json.dumps(dict(config)), seed)
        super().__init__(impl, _json.loads(impl.config_json()))

    @property
    def config(self) -> Dict[str, Any]:
        """The model section, completed with the library's defaults."""
        return _json.loads(self._impl.config_json())

    def forward(self, input: Any, return_type: Optional[str] = "logits", loss_per_token: bool = False) -> Any:
        """Logits [B,T,V] of ids [B,T] ([T] and text are one row; text needs a vocabulary: tf.load's model), with
        the hooks of add_hook or model.hooks() (tinyformer.lens). As TransformerLens: return_type "loss" gives the
        mean next-token loss of the input ([B,T-1] with loss_per_token), "both" (logits, loss), None nothing."""
        return self._run(input, return_type, loss_per_token)[0]

    def loss(self, ids: Any, targets: Any) -> _Tensor:
        """The mean cross-entropy of the next-token logits of ids [B,T] against targets [B,T] (-1: ignored)."""
        return self._impl.loss(_np.asarray(ids), _np.asarray(targets))

    def hook_names(self) -> List[str]:
        """The names of the forward's hook points, TransformerLens' (blocks.{l}.attn.hook_pattern, ...), in the order
        the forward reaches them (nn/hooks.hpp lists them with their shapes)."""
        return self._impl.hook_names()

    def sample(self, ids: Any, tokens: int = 32, temperature: float = 1.0, top_k: int = 0, seed: int = 1337,
               use_cache: bool = True) -> List[int]:
        """ids (a list or 1-D array of token ids) + `tokens` new ids, drawn as `tinyformer sample` draws them
        (infer::generate: temperature 0 is greedy, top_k 0 keeps every token; the seed fixes the draws). float32
        models only.

            model.sample([1, 2, 3], tokens=5, temperature=0)
        """
        if not hasattr(self._impl, "generate"):
            raise TypeError("sample: the library samples from float32 models; build the GPT with dtype=tf.float32")
        return self._impl.generate([int(i) for i in _np.asarray(ids).reshape(-1)], tokens, temperature, top_k, seed,
                                   use_cache)

    def generate(self, idx: Any, max_new_tokens: int = 10, temperature: float = 1.0, top_k: Optional[int] = None,
                 seed: int = 1337, do_sample: bool = True, use_past_kv_cache: bool = True, verbose: bool = False
                 ) -> Any:
        """nanoGPT's generate: idx [1,T] (or [T]) -> [1, T + max_new_tokens] ids (sample() under nanoGPT's names).
        TransformerLens' too: text in gives text out (a model with a vocabulary), do_sample=False is greedy,
        use_past_kv_cache=False recomputes every position; verbose (a progress bar there) prints nothing here."""
        if isinstance(idx, str):
            out = self.generate(self.to_tokens(idx), max_new_tokens, temperature, top_k, seed, do_sample,
                                use_past_kv_cache)
            return self.to_string(out[0])
        ids = self.sample(idx, tokens=max_new_tokens, temperature=temperature if do_sample else 0.0,
                          top_k=top_k or 0, seed=seed, use_cache=use_past_kv_cache)
        return _np.asarray(ids, dtype=_np.int64)[None, :]

    def _repr_name(self) -> str:
        return "GPT"


HookPoint = _lens.HookPoint  # what a hook function gets (tinyformer.lens), here as before
