"""tf.optim: the library's SGD, Adam and AdamW (torch 1.13's formulas, float32 parameters), with torch's
param_groups, and tf.optim.lr_scheduler.

    opt = tf.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    for step in range(steps):
        for group in opt.param_groups:          # nanoGPT's schedule loop
            group["lr"] = get_lr(step)
        ...
        opt.step()

Groups as torch takes them: [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}].
The library keeps one learning rate for all groups and one set of betas/eps/momentum: a group may differ from the
others in weight_decay only (ValueError otherwise), and writing group["lr"] sets the optimizer's learning rate.
"""
from __future__ import annotations

import sys as _sys
from typing import Any, Dict, Iterable, List, Tuple, Union

from . import _core
from . import lr_scheduler

# `import tinyformer.optim.lr_scheduler` finds it, as torch.optim.lr_scheduler.
_sys.modules[__name__ + ".lr_scheduler"] = lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]

_Params = Union[Iterable[Any], Iterable[Dict[str, Any]]]


def _named(params: Iterable[Any], prefix: str) -> List[Tuple[str, Any]]:
    """(name, tensor) pairs from named_parameters() or tensors from parameters() (then named "0", "1", ...)."""
    return [p if isinstance(p, tuple) else (f"{prefix}{i}", p) for i, p in enumerate(params)]


class ParamGroup(dict):
    """One of optimizer.param_groups: a dict with "params" and the hyper-parameters, as torch's. Writing "lr" sets the
    library optimizer's learning rate (one for all groups); the other hyper-parameters are fixed once built."""

    def __init__(self, optimizer: "Optimizer", values: Dict[str, Any]) -> None:
        super().__init__(values)
        self._optimizer = optimizer

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "lr":
            self._optimizer._impl.lr = float(value)
            for group in self._optimizer.param_groups:
                dict.__setitem__(group, "lr", float(value))
            return
        if key in self and self[key] != value:
            raise ValueError(f"param_groups: '{key}' is fixed once the optimizer is built (only 'lr' can change)")
        super().__setitem__(key, value)


class Optimizer:
    """The base of SGD, Adam and AdamW: param_groups, step(), zero_grad(), state_dict-style state_tensors()."""

    _hyper: Tuple[str, ...] = ()

    def __init__(self, params: _Params, defaults: Dict[str, Any]) -> None:
        items = list(params)
        if not items:
            raise ValueError("the optimizer got an empty parameter list")
        raw_groups = items if isinstance(items[0], dict) else [{"params": items}]
        groups = []
        for g, group in enumerate(raw_groups):
            if not isinstance(group, dict) or "params" not in group:
                raise TypeError("param groups are dicts with a 'params' list, as torch takes them")
            unknown = set(group) - {"params", "lr", "weight_decay", *self._hyper}
            if unknown:
                raise ValueError(f"param group {g}: unknown key {sorted(unknown)[0]!r} (valid: params, lr, "
                                 f"weight_decay, {', '.join(self._hyper)})")
            merged = {**defaults, **group}
            merged["params"] = _named(group["params"], f"{g}." if len(raw_groups) > 1 else "")
            groups.append(merged)
        first = groups[0]
        for g, group in enumerate(groups):
            for key in ("lr", *self._hyper):
                if group[key] != first[key]:
                    raise ValueError(f"param group {g}: '{key}' {group[key]} differs from group 0's {first[key]}; the "
                                     f"library's optimizers share every hyper-parameter but weight_decay")
        self.defaults = dict(defaults)
        self._impl = self._make([(g["params"], float(g["weight_decay"])) for g in groups], first)
        self.param_groups = [ParamGroup(self, {**g, "params": [p for _, p in g["params"]]}) for g in groups]

    def _make(self, groups: List[Tuple[List[Tuple[str, Any]], float]], hyper: Dict[str, Any]) -> Any:
        raise NotImplementedError

    def step(self) -> None:
        """Updates every parameter that has a gradient (the library's step; others are skipped)."""
        self._impl.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Frees every parameter's gradient (torch's zero_grad(set_to_none=True))."""
        self._impl.zero_grad()

    @property
    def lr(self) -> float:
        """The learning rate (of every group)."""
        return self._impl.lr

    @lr.setter
    def lr(self, value: float) -> None:
        self.param_groups[0]["lr"] = value

    @property
    def step_count(self) -> int:
        """step() calls so far."""
        return self._impl.step_count

    @property
    def name(self) -> str:
        """"SGD", "Adam" or "AdamW"."""
        return self._impl.name

    def state_dict(self) -> Dict[str, Any]:
        """What load_state_dict() restores (torch's use, tinyformer's content): {"state": the state tensors by
        "<kind>.<parameter name>" (NumPy copies), "step": step_count, "param_groups": each group's hyper-parameters}."""
        return {"state": self.state_tensors(), "step": self.step_count,
                "param_groups": [{k: v for k, v in g.items() if k != "params"} for g in self.param_groups]}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict() of an optimizer of the same kind over the same parameters: the state tensors (the
        library checks their names and shapes, all or nothing), the step count and each group's hyper-parameters."""
        if not isinstance(state_dict, dict) or not {"state", "step", "param_groups"} <= set(state_dict):
            raise ValueError("load_state_dict: expected what state_dict() gives: a dict with 'state', 'step' and "
                             "'param_groups'")
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError(f"load_state_dict: {len(state_dict['param_groups'])} param groups, this optimizer has "
                             f"{len(self.param_groups)}")
        for g, (group, saved) in enumerate(zip(self.param_groups, state_dict["param_groups"])):
            fixed = [k for k, v in saved.items() if k != "lr" and k in group and group[k] != v]
            if fixed:
                raise ValueError(f"load_state_dict: param group {g}'s {fixed[0]!r} is {saved[fixed[0]]}, this "
                                 f"optimizer's {group[fixed[0]]} (only lr can differ; nothing was loaded)")
        self._impl.load_state(dict(state_dict["state"]), int(state_dict["step"]))
        self.param_groups[0]["lr"] = state_dict["param_groups"][0].get("lr", self.lr)

    def state_tensors(self) -> Dict[str, Any]:
        """The per-parameter state as NumPy copies, named "<kind>.<parameter name>" (exp_avg.<p>, ...)."""
        return self._impl.state_tensors()

    def __repr__(self) -> str:
        lines = [f"{self.name} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in g.items() if k != "params")
        return "\n".join(lines) + "\n)"


class SGD(Optimizer):
    """torch.optim.SGD: lr, momentum, dampening, nesterov, weight_decay (L2 added to the gradient).

        opt = tf.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    _hyper = ("momentum", "dampening", "nesterov")

    def __init__(self, params: _Params, lr: float, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening, "nesterov": nesterov,
                                  "weight_decay": weight_decay})

    def _make(self, groups: Any, h: Dict[str, Any]) -> Any:
        return _core._SGD(groups, h["lr"], h["momentum"], h["dampening"], h["nesterov"])


class Adam(Optimizer):
    """torch.optim.Adam: lr, betas, eps, weight_decay (L2 added to the gradient).

        opt = tf.optim.Adam(model.parameters(), lr=1e-3)
    """

    _hyper = ("betas", "eps")

    def __init__(self, params: _Params, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})

    def _make(self, groups: Any, h: Dict[str, Any]) -> Any:
        return _core._Adam(groups, h["lr"], h["betas"][0], h["betas"][1], h["eps"])


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the update).

        opt = tf.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    """

    def __init__(self, params: _Params, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)

    def _make(self, groups: Any, h: Dict[str, Any]) -> Any:
        return _core._AdamW(groups, h["lr"], h["betas"][0], h["betas"][1], h["eps"])
