#!/usr/bin/env python3
"""Training speed of tinyformer against PyTorch on the same GPT shapes, side by side in one run.

For each shape (tiny, small, medium) it alternates: PyTorch at 1 and 2 threads (the best is kept) and
`tinyformer bench` at 1 and 2 threads (the best is kept), each the median ms/step over the timed steps, with
AdamW on random tokens, untied LM head, biases on, dropout 0. Prints a Markdown table with the ratio
PyTorch ms / tinyformer ms and tinyformer's fraction of the measured 2-thread SGEMM peak.

usage: bench_vs_pytorch.py [--tinyformer build/bin/tinyformer] [--shapes tiny,small,medium] [--steps N] [--rounds R]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_gpt import GPT, param_groups  # noqa: E402

SHAPES = {  # vocab, T, d_model, heads, layers, batch
    "tiny": (64, 32, 64, 4, 2, 32),
    "small": (96, 128, 128, 4, 4, 16),
    "medium": (256, 256, 256, 8, 6, 8),
}


def torch_ms_per_step(shape, threads, steps, warmup):
    V, T, C, H, L, B = SHAPES[shape]
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = GPT(dict(vocab_size=V, block_size=T, n_embd=C, n_head=H, n_layer=L, mlp_ratio=4, bias=True,
                     dropout=0.0, tie_weights=False))
    opt = torch.optim.AdamW(param_groups(model, 0.01), lr=3e-4)
    times = []
    for i in range(warmup + steps):
        x = torch.randint(0, V, (B, T))
        y = torch.randint(0, V, (B, T))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def tinyformer_run(binary, shape, threads, steps, warmup):
    out = subprocess.run([binary, "bench", "--shape", shape, "--threads", str(threads), "--steps", str(steps),
                          "--warmup", str(warmup)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinyformer", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "tinyformer"))
    ap.add_argument("--shapes", default="tiny,small,medium")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best median of each side is kept")
    args = ap.parse_args()
    gemm = subprocess.run([args.tinyformer, "bench", "--gemm"], check=True, capture_output=True, text=True).stdout
    peak2 = max(json.loads(line)["sgemm_gflops"] for line in gemm.splitlines() if '"threads": 2' in line)
    rows = []
    for shape in args.shapes.split(","):
        best_pt, best_tf = float("inf"), None
        for _ in range(args.rounds):
            for threads in (1, 2):
                best_pt = min(best_pt, torch_ms_per_step(shape, threads, args.steps, args.warmup))
                r = tinyformer_run(args.tinyformer, shape, threads, args.steps, args.warmup)
                if best_tf is None or r["ms_per_step"] < best_tf["ms_per_step"]:
                    best_tf = r
        rows.append((shape, best_pt, best_tf))
    print(f"SGEMM peak measured here: {peak2:.1f} GFLOP/s at 2 threads\n")
    print("| shape | PyTorch ms/step | tinyformer ms/step (threads) | PyTorch / tinyformer | tinyformer GFLOP/s | "
          "fraction of SGEMM peak | tinyformer peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for shape, pt, tf in rows:
        print(f"| {shape} | {pt:.1f} | {tf['ms_per_step']:.1f} ({tf['threads']}) | {pt / tf['ms_per_step']:.2f}x | "
              f"{tf['gflops']:.1f} | {tf['gflops'] / peak2:.0%} | {tf['peak_rss_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
