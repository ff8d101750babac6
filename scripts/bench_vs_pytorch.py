#!/usr/bin/env python3
"""Training speed of tinyformer against PyTorch on the same GPT shapes, side by side in one run.

For each shape (tiny, small, medium) it alternates: PyTorch at 1 and 2 threads (each in a fresh process, for its peak RSS; the best is kept) and
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


def peak_rss_mb():
    """VmHWM of this process (ru_maxrss would include the parent's peak, inherited across exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def torch_worker(shape, threads, steps, warmup):
    """One PyTorch measurement in a fresh process, so its peak RSS is that shape's alone."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-worker", shape, str(threads), str(steps),
                          str(warmup)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


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
    ap.add_argument("--torch-worker", nargs=4, metavar=("SHAPE", "THREADS", "STEPS", "WARMUP"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        shape, threads, steps, warmup = args.torch_worker
        ms = torch_ms_per_step(shape, int(threads), int(steps), int(warmup))
        rss_mb = peak_rss_mb()
        print(json.dumps({"ms_per_step": ms, "peak_rss_mb": rss_mb}))
        return 0
    def sgemm_peak():  # 2-thread SGEMM GFLOP/s now; measured before every shape, the best is the limit
        gemm = subprocess.run([args.tinyformer, "bench", "--gemm"], check=True, capture_output=True, text=True).stdout
        return max(json.loads(line)["sgemm_gflops"] for line in gemm.splitlines() if '"threads": 2' in line)

    peaks = []
    rows = []
    for shape in args.shapes.split(","):
        peaks.append(sgemm_peak())
        best_pt, best_tf = None, None
        for _ in range(args.rounds):
            for threads in (1, 2):
                p = torch_worker(shape, threads, args.steps, args.warmup)
                p["threads"] = threads
                if best_pt is None or p["ms_per_step"] < best_pt["ms_per_step"]:
                    best_pt = p
                r = tinyformer_run(args.tinyformer, shape, threads, args.steps, args.warmup)
                if best_tf is None or r["ms_per_step"] < best_tf["ms_per_step"]:
                    best_tf = r
        rows.append((shape, best_pt, best_tf))
    peak2 = max(peaks)
    print(f"SGEMM peak measured here: {peak2:.1f} GFLOP/s at 2 threads (best of {', '.join(f'{p:.1f}' for p in peaks)})\n")
    print("| shape | PyTorch ms/step (threads) | tinyformer ms/step (threads) | PyTorch / tinyformer | "
          "tinyformer GFLOP/s | fraction of SGEMM peak | peak RSS MB PyTorch / tinyformer |")
    print("|---|---|---|---|---|---|---|")
    for shape, pt, tf in rows:
        print(f"| {shape} | {pt['ms_per_step']:.1f} ({pt['threads']}) | {tf['ms_per_step']:.1f} ({tf['threads']}) | "
              f"{pt['ms_per_step'] / tf['ms_per_step']:.2f}x | {tf['gflops']:.1f} | {tf['gflops'] / peak2:.0%} | "
              f"{pt['peak_rss_mb']:.0f} / {tf['peak_rss_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
