#!/usr/bin/env python3
"""Parity of tinyformer's GPT with the same model in PyTorch.

Runs the parity_dump tool (or reads a directory it wrote), builds the same architecture in PyTorch
(torch_gpt.py), loads tinyformer's initial weights from safetensors, feeds the same batches and compares:
  - the initial loss                     within 1e-5 relative
  - every parameter's gradient           within 1e-4 relative, max-norm: max|g_tf - g_pt| / max|g_pt|
  - the losses of 50 AdamW steps         within 1e-3 relative
Prints the largest differences and exits 1 when a bound is exceeded.
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

LOSS_RTOL, GRAD_RTOL, TRAJECTORY_RTOL = 1e-5, 1e-4, 1e-3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump-tool", help="path of the parity_dump executable (run first)")
    ap.add_argument("--work-dir", required=True, help="directory the dump is written to / read from")
    args = ap.parse_args()
    if args.dump_tool:
        subprocess.run([args.dump_tool, args.work_dir], check=True)
    d = args.work_dir
    cfg = json.load(open(os.path.join(d, "config.json")))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = GPT(cfg)
    init, _ = read_safetensors(os.path.join(d, "init.safetensors"))
    state = {k: torch.from_numpy(v.copy()) for k, v in init.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        sys.exit(f"weights do not match: missing {missing}, unexpected {unexpected}")
    inputs = np.load(os.path.join(d, "inputs.npy")).astype(np.int64)
    targets = np.load(os.path.join(d, "targets.npy")).astype(np.int64)
    ours_losses = np.load(os.path.join(d, "losses.npy"))
    ours_grads, _ = read_safetensors(os.path.join(d, "grads.safetensors"))

    opt = torch.optim.AdamW(param_groups(model, cfg["weight_decay"], cfg["decay_rule"]), lr=cfg["lr"],
                            betas=tuple(cfg["betas"]), eps=cfg["eps"])
    theirs_losses = []
    worst_grad = (0.0, "")
    for step in range(cfg["steps"]):
        opt.zero_grad(set_to_none=True)
        _, loss = model(torch.from_numpy(inputs[step]), torch.from_numpy(targets[step]))
        loss.backward()
        theirs_losses.append(loss.item())
        if step == 0:
            for name, p in model.named_parameters():
                g_pt = p.grad.detach().numpy().astype(np.float64)
                g_tf = ours_grads[name].astype(np.float64)
                rel = np.abs(g_tf - g_pt).max() / max(np.abs(g_pt).max(), 1e-30)
                if rel > worst_grad[0]:
                    worst_grad = (rel, name)
        opt.step()
    theirs_losses = np.array(theirs_losses)
    initial_rel = abs(ours_losses[0] - theirs_losses[0]) / abs(theirs_losses[0])
    traj_rel = np.abs(ours_losses - theirs_losses) / np.abs(theirs_losses)
    print(f"initial loss: tinyformer {ours_losses[0]:.8f}  pytorch {theirs_losses[0]:.8f}  rel diff {initial_rel:.3e}"
          f"  (bound {LOSS_RTOL:g})")
    print(f"gradients: largest max-norm relative diff {worst_grad[0]:.3e} in {worst_grad[1]}  (bound {GRAD_RTOL:g})")
    print(f"{cfg['steps']} AdamW steps: largest loss rel diff {traj_rel.max():.3e} at step {int(traj_rel.argmax())};"
          f" final loss tinyformer {ours_losses[-1]:.6f} pytorch {theirs_losses[-1]:.6f}  (bound {TRAJECTORY_RTOL:g})")
    ok = initial_rel <= LOSS_RTOL and worst_grad[0] <= GRAD_RTOL and traj_rel.max() <= TRAJECTORY_RTOL
    print("parity: PASSED" if ok else "parity: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
