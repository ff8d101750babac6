"""tf.optim.lr_scheduler: learning-rate schedules that set optimizer.param_groups[i]["lr"], as torch's do.

    sched = tf.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 100))
    for step in range(steps):
        ...; opt.step(); sched.step()

TrainerSchedule is the schedule of `tinyformer train` (optim/schedule.hpp: constant, warmup, cosine; nanoGPT's
get_lr), computed by the library.
"""
from __future__ import annotations

import math
from typing import Any, Callable, List

from . import _core

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "CosineAnnealingLR", "TrainerSchedule"]


class LRScheduler:
    """The base: base_lrs from the groups' lr at construction, step() advances last_epoch and sets each group's lr to
    get_lr(); get_last_lr() returns what was set."""

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs: List[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> List[float]:
        """The learning rate of each group at last_epoch."""
        raise NotImplementedError

    def step(self) -> None:
        """Moves to the next step and sets the groups' learning rate."""
        self.last_epoch += 1
        lrs = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> List[float]:
        """The learning rates the last step() set."""
        return list(self._last_lr)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(step) (torch.optim.lr_scheduler.LambdaLR)."""

    def __init__(self, optimizer: Any, lr_lambda: Callable[[int], float], last_epoch: int = -1) -> None:
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        return [base * self.lr_lambda(self.last_epoch) for base in self.base_lrs]


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (step // step_size) (torch.optim.lr_scheduler.StepLR, in its closed form)."""

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if step_size < 1:
            raise ValueError(f"StepLR: step_size {step_size} must be at least 1")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi step / T_max)) / 2 (torch's CosineAnnealingLR, in its closed
    form; past T_max the cosine goes on, as torch's)."""

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max {T_max} must be at least 1")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class TrainerSchedule(LRScheduler):
    """The schedule of `tinyformer train` (the config's schedule section), from the library: "constant", "warmup"
    (linear from lr/(W+1) to lr over warmup_steps) or "cosine" (the same warmup, then a cosine down to min_lr at
    decay_steps); the optimizer's lr is the peak.

        sched = tf.optim.lr_scheduler.TrainerSchedule(opt, "cosine", warmup_steps=100, decay_steps=2000, min_lr=1e-4)
    """

    def __init__(self, optimizer: Any, name: str = "cosine", warmup_steps: int = 0, decay_steps: int = 0,
                 min_lr: float = 0.0, last_epoch: int = -1) -> None:
        self.name, self.warmup_steps, self.decay_steps, self.min_lr = name, warmup_steps, decay_steps, min_lr
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:
        return [_core._schedule_lr(self.name, base, self.warmup_steps, self.decay_steps, self.min_lr, self.last_epoch)
                for base in self.base_lrs]
