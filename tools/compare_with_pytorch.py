#!/usr/bin/env python3
"""Parity of tinyformer's GPT with the same model in PyTorch, for each model option and optimizer.

For every variant below, runs the parity_dump tool (tests/tools/parity_dump.cpp) with the variant's config
overrides, builds the same architecture in PyTorch (torch_gpt.py) from the model section it wrote, loads
tinyformer's initial weights from safetensors, feeds the same batches and compares:
  - the initial loss                               within 1e-5 relative
  - every parameter's gradient at the first step   within 1e-4 relative, max-norm: max|g_tf - g_pt| / max|g_pt|
  - the loss before each of 50 optimizer steps     within 1e-5 relative, step by step
Prints the largest differences per variant and exits 1 when a bound is exceeded.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_safetensors import read_safetensors  # noqa: E402
from torch_gpt import GPT, param_groups  # noqa: E402

LOSS_RTOL, GRAD_RTOL, TRAJECTORY_RTOL = 1e-5, 1e-4, 1e-5

VARIANTS = [
    ("default GPT (LayerNorm, GELU, learned positions), AdamW", []),
    ("model.norm=rmsnorm", ["model.norm=rmsnorm"]),
    ("model.mlp=swiglu", ["model.mlp=swiglu"]),
    ("model.position=rope", ["model.position=rope"]),
    ("rmsnorm + swiglu + rope, tied head, no biases",
     ["model.norm=rmsnorm", "model.mlp=swiglu", "model.position=rope", "model.tie_weights=true", "model.bias=false"]),
    ("grouped-query attention: n_head 4, n_kv_head 2, rope", ["model.n_head=4", "model.n_kv_head=2",
                                                              "model.position=rope"]),
    ("multi-query attention: n_kv_head 1, composed attention", ["model.n_kv_head=1", "model.attention=composed"]),
    ("Adam, no weight decay", ["optimizer.name=adam", "optimizer.weight_decay=0"]),
    ("SGD, Nesterov momentum, L2 decay on all parameters",
     ["optimizer.name=sgd", "optimizer.lr=0.05", "optimizer.nesterov=true", "optimizer.weight_decay=0.01",
      "optimizer.decay_rule=all"]),
]


def torch_optimizer(o, model):
    groups = param_groups(model, o["weight_decay"], o["decay_rule"])
    if o["name"] == "adamw":
        return torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])
    if o["name"] == "adam":
        return torch.optim.Adam(groups, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])
    return torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"], nesterov=o["nesterov"])


def compare(d):
    """Runs PyTorch on the dump in directory d; returns (initial rel diff, (worst grad rel diff, name), trajectory)."""
    cfg = json.load(open(os.path.join(d, "config.json")))
    torch.manual_seed(0)
    model = GPT(cfg["model"])
    init, _ = read_safetensors(os.path.join(d, "init.safetensors"))
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()}, strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and cfg["model"]["tie_weights"])]
    if missing or unexpected:
        sys.exit(f"weights do not match: missing {missing}, unexpected {unexpected}")
    inputs = np.load(os.path.join(d, "inputs.npy")).astype(np.int64)
    targets = np.load(os.path.join(d, "targets.npy")).astype(np.int64)
    ours_losses = np.load(os.path.join(d, "losses.npy"))
    ours_grads, _ = read_safetensors(os.path.join(d, "grads.safetensors"))
    opt = torch_optimizer(cfg["optimizer"], model)
    theirs, worst_grad = [], (0.0, "")
    for step in range(cfg["steps"]):
        opt.zero_grad(set_to_none=True)
        _, loss = model(torch.from_numpy(inputs[step]), torch.from_numpy(targets[step]))
        loss.backward()
        theirs.append(loss.item())
        if step == 0:
            for name, p in model.named_parameters():
                g_pt = p.grad.detach().numpy().astype(np.float64)
                rel = np.abs(ours_grads[name].astype(np.float64) - g_pt).max() / max(np.abs(g_pt).max(), 1e-30)
                worst_grad = max(worst_grad, (rel, name))
        opt.step()
    theirs = np.array(theirs)
    return abs(ours_losses[0] - theirs[0]) / abs(theirs[0]), worst_grad, np.abs(ours_losses - theirs) / np.abs(theirs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump-tool", required=True, help="path of the parity_dump executable")
    ap.add_argument("--work-dir", required=True, help="directory the dumps are written to, one per variant")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ok = True
    for i, (name, overrides) in enumerate(VARIANTS):
        d = os.path.join(args.work_dir, f"variant_{i}")
        cmd = [args.dump_tool, d] + [a for o in overrides for a in ("--set", o)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        initial, (grad, grad_name), traj = compare(d)
        passed = initial <= LOSS_RTOL and grad <= GRAD_RTOL and traj.max() <= TRAJECTORY_RTOL
        ok = ok and passed
        print(f"{name}: initial loss rel diff {initial:.2e} (bound {LOSS_RTOL:g}); gradients {grad:.2e} in "
              f"{grad_name} (bound {GRAD_RTOL:g}); {len(traj)} steps: largest loss rel diff {traj.max():.2e} at step "
              f"{int(traj.argmax())} (bound {TRAJECTORY_RTOL:g}){'' if passed else '  FAILED'}")
    print("parity: PASSED" if ok else "parity: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
