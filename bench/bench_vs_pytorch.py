#!/usr/bin/env python3
"""Training speed of tinyformer against PyTorch on the same GPT shapes, side by side in one run.

For each shape it alternates, round after round: PyTorch at 1 and 2 threads and `tinyformer bench` at 1 and 2
threads, every measurement in a fresh process (so its peak RSS, VmHWM, is that shape's alone), each the median
ms/step over the timed steps, with AdamW on random tokens, untied LM head, biases on, dropout 0. For each engine
and thread count the best of the rounds is kept. Prints a Markdown table with both engines' 1- and 2-thread
ms/step, the ratio PyTorch ms / tinyformer ms taken at the better thread count of each side (and at 1 thread
alone), tinyformer's GFLOP/s and fraction of the measured 2-thread SGEMM peak (the best line of `tinyformer bench
--gemm`: the faster of OpenBLAS, libxsmm and the choice per shape, so the fraction is of this machine's best
library), and the peak RSS of the two runs in the ratio.

Both sides get the same OpenBLAS kernels: PyTorch (Debian's links the system OpenBLAS) runs with OPENBLAS_CORETYPE set
to the core type tinyformer runs (the `openblas_core` of `tinyformer bench --gemm`: on a CPU Debian's OpenBLAS does not
know, the best this CPU allows instead of its fallback, tensor/blas_core.hpp), unless OPENBLAS_CORETYPE is set already;
each PyTorch worker reports the core type it ran, and the table's first line says it.

PyTorch's threads: Debian's PyTorch calls the system OpenBLAS for its products (its Linear layers included), and
torch.set_num_threads does not reach OpenBLAS's own threads, which default to every core. So "1 thread" sets
OPENBLAS_NUM_THREADS=1 beside torch.set_num_threads(1), "2 threads" sets both to 2, and a third setting is PyTorch's
default with set_num_threads(1): one thread for its own loops, OpenBLAS on every core ("1T+B", on this project's
2-core machines 2 BLAS threads; measured: a 2048 x 1024 x 256 product used 2.00 CPU seconds a second). The ratio at
the best thread count takes the best of all three; the ratio at 1 thread is 1 thread on both sides.

Shapes: tiny, small, medium, large (the bench's), and with --scaling T64 ... T1024 instead: T = 64 ... 1024 at
V 512, C 256, H 8, L 4 and 2048 tokens a step (B = 2048 / T), as `tinyformer bench --scaling`.

usage: bench_vs_pytorch.py [--tinyformer build/bin/tinyformer] [--shapes tiny,small,medium,large] [--scaling]
                           [--steps N] [--warmup N] [--rounds R]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from torch_gpt import GPT, param_groups  # noqa: E402

SHAPES = {  # vocab, T, d_model, heads, layers, batch
    "tiny": (64, 32, 64, 4, 2, 32),
    "small": (96, 128, 128, 4, 4, 16),
    "medium": (256, 256, 256, 8, 6, 8),
    "large": (512, 1024, 256, 8, 4, 2),
}
# PyTorch's settings: (label, torch.set_num_threads, OPENBLAS_NUM_THREADS or None for OpenBLAS's default)
TORCH_SETTINGS = [("1T", 1, 1), ("2T", 2, 2), ("1T+B", 1, None)]
SCALING = [f"T{T}" for T in (64, 128, 256, 512, 1024)]  # tinyformer bench --scaling's shapes
for _T in (64, 128, 256, 512, 1024):
    SHAPES[f"T{_T}"] = (512, _T, 256, 8, 4, 2048 // _T)


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


def openblas():
    """The process's OpenBLAS (the one PyTorch and NumPy share here), or None when it is not OpenBLAS."""
    import ctypes
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib


def openblas_threads():
    """The threads the process's OpenBLAS runs its products on (0 when it is not OpenBLAS)."""
    lib = openblas()
    return lib.openblas_get_num_threads() if lib else 0


def openblas_core():
    """The core type the process's OpenBLAS runs."""
    lib = openblas()
    return lib.openblas_get_corename().decode() if lib else "not OpenBLAS"


def torch_worker(shape, threads, steps, warmup, coretype, blas_threads):
    """One PyTorch measurement in a fresh process, so its peak RSS is that shape's alone, with OPENBLAS_CORETYPE and
    OPENBLAS_NUM_THREADS (None: OpenBLAS's default, every core)."""
    env = dict(os.environ)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    # Debian's OpenBLAS 0.3.21 takes its thread count from any of these (measured: OMP_NUM_THREADS=1 or
    # GOTO_NUM_THREADS=1 alone gives 1 thread), so a user's OMP_NUM_THREADS=1 would turn "1T+B" into 1T
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(name, None)
    if blas_threads:
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--torch-worker", shape, str(threads), str(steps),
                          str(warmup)], check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def tinyformer_run(binary, shape, threads, steps, warmup):
    out = subprocess.run([binary, "bench", "--shape", shape, "--threads", str(threads), "--steps", str(steps),
                          "--warmup", str(warmup)], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinyformer", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "tinyformer"))
    ap.add_argument("--shapes", default="tiny,small,medium,large")
    ap.add_argument("--scaling", action="store_true",
                    help="the shapes T64 ... T1024 (2048 tokens a step) instead of --shapes")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best median of each is kept")
    ap.add_argument("--torch-worker", nargs=4, metavar=("SHAPE", "THREADS", "STEPS", "WARMUP"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        shape, threads, steps, warmup = args.torch_worker
        ms = torch_ms_per_step(shape, int(threads), int(steps), int(warmup))
        rss_mb = peak_rss_mb()
        print(json.dumps({"ms_per_step": ms, "peak_rss_mb": rss_mb, "openblas_core": openblas_core(),
                          "openblas_threads": openblas_threads()}))
        return 0
    cores = set()  # the OpenBLAS core type tinyformer ran, as each `bench --gemm` reported it

    def sgemm_peak():  # the best library's 2-thread SGEMM GFLOP/s, measured before every shape
        gemm = subprocess.run([args.tinyformer, "bench", "--gemm"], check=True, capture_output=True, text=True).stdout
        lines = [json.loads(line) for line in gemm.splitlines() if line.startswith("{")]
        cores.update(j["openblas_core"] for j in lines if "openblas_core" in j)
        return max(j["sgemm_gflops"] for j in lines if j["threads"] == 2)

    shapes = SCALING if args.scaling else args.shapes.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            ap.error(f"unknown shape {shape}: expected one of {', '.join(SHAPES)}")
    peaks = []
    rows = []
    torch_cores = set()
    for shape in shapes:
        peaks.append(sgemm_peak())
        # PyTorch gets tinyformer's OpenBLAS kernels, unless the user chose a core type for both
        coretype = None if os.environ.get("OPENBLAS_CORETYPE") else next(iter(cores), None)
        pt, tf = {}, {}  # setting -> the best (lowest median) measurement over the rounds
        for _ in range(args.rounds):
            for label, threads, blas_threads in TORCH_SETTINGS:
                p = torch_worker(shape, threads, args.steps, args.warmup, coretype, blas_threads)
                torch_cores.add(p["openblas_core"])
                p["label"] = label
                if label not in pt or p["ms_per_step"] < pt[label]["ms_per_step"]:
                    pt[label] = p
                if label == "1T+B":
                    continue
                r = tinyformer_run(args.tinyformer, shape, threads, args.steps, args.warmup)
                r["label"] = label
                if label not in tf or r["ms_per_step"] < tf[label]["ms_per_step"]:
                    tf[label] = r
        rows.append((shape, pt, tf))
        print(f"{shape}: PyTorch {pt['1T']['ms_per_step']:.1f} / {pt['2T']['ms_per_step']:.1f} / "
              f"{pt['1T+B']['ms_per_step']:.1f} ms (1, 2 threads, 1 with OpenBLAS on "
              f"{pt['1T+B']['openblas_threads']}), "
              f"tinyformer {tf['1T']['ms_per_step']:.1f} / {tf['2T']['ms_per_step']:.1f} ms (1 / 2 threads)",
              file=sys.stderr, flush=True)
    peak2 = max(peaks)
    given = "set by the user" if os.environ.get("OPENBLAS_CORETYPE") else "given to PyTorch as tinyformer chose it"
    print(f"OpenBLAS core type: tinyformer {', '.join(sorted(cores))}, PyTorch {', '.join(sorted(torch_cores))} "
          f"(OPENBLAS_CORETYPE {given})")
    print(f"SGEMM peak measured here: {peak2:.1f} GFLOP/s at 2 threads (best of {', '.join(f'{p:.1f}' for p in peaks)})\n")
    lead = "| T | B " if args.scaling else "| shape (V, T, C, H, L, B) "
    print(lead + "| PyTorch ms/step 1T / 2T / 1T+B | tinyformer ms/step 1T / 2T | PyTorch / tinyformer (best "
          "setting of each) | at 1 thread | tinyformer GFLOP/s | fraction of SGEMM peak | peak RSS MB PyTorch / tinyformer |")
    print("|---" * (lead.count("|") + 7) + "|")
    for shape, pt, tf in rows:
        bp = min(pt.values(), key=lambda m: m["ms_per_step"])
        bt = min(tf.values(), key=lambda m: m["ms_per_step"])
        V, T, C, H, L, B = SHAPES[shape]
        head = f"| {T} | {B} " if args.scaling else f"| {shape} ({V}, {T}, {C}, {H}, {L}, {B}) "
        print(head + f"| {pt['1T']['ms_per_step']:.1f} / {pt['2T']['ms_per_step']:.1f} "
              f"/ {pt['1T+B']['ms_per_step']:.1f} "
              f"| {tf['1T']['ms_per_step']:.1f} / {tf['2T']['ms_per_step']:.1f} "
              f"| {bp['ms_per_step'] / bt['ms_per_step']:.2f}x ({bp['label']} / {bt['label']}) "
              f"| {pt['1T']['ms_per_step'] / tf['1T']['ms_per_step']:.2f}x "
              f"| {bt['gflops']:.1f} | {bt['gflops'] / peak2:.0%} "
              f"| {bp['peak_rss_mb']:.0f} / {bt['peak_rss_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
