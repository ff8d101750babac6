#!/usr/bin/env python3
"""Training speed from Python: one AdamW step of a bench shape (default small: V 96, T 128, C 128, H 4, L 4, B 16)
driven four ways, each the median ms/step over the timed steps, in one process at the same thread count:

  cli        `tinyformer bench --shape S` (the C++ trainer's step, run as a subprocess)
  module     tf.nn.GPT from Python: forward + loss, backward, tf.optim.AdamW step (one Python call each)
  ops        the same GPT written in Python from tinyformer ops (tf.nn.Module subclass, ~40 ops a layer per step)
  pytorch    tools/torch_gpt.py's GPT with torch.optim.AdamW (a Python training loop in PyTorch)

and tf.train against `tinyformer train` on configs/reverse.yaml (wall seconds of the whole run, median of --runs).
The ratio ops / cli is what driving the library op by op from Python costs a training step.

First, the cost of one op call: a tiny a + b ([4] + [4]) and a @ b ([8,8] @ [8,8]), float32, called from Python in
a loop, against the same op called from a C++ loop in the same process (tf._core._op_loop_seconds), with inputs
that require a gradient (each call records a graph node) and under tf.no_grad(); microseconds per call, the median
of --repeats loops of --calls calls. Python minus C++ is the Python call overhead per op.

Prints one JSON object per line, then a summary line.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_python.py [--shape small] [--threads 1] [--steps 20]
       [--warmup 3] [--tinyformer build/bin/tinyformer] [--runs 3] [--calls 20000] [--repeats 7] [--per-op-only]
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_pytorch import SHAPES, torch_ms_per_step  # noqa: E402

import tinyformer as tf  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class OpsGPT(tf.nn.Module):
    """nanoGPT's GPT from tinyformer ops in Python (fused attention op, composed everything else)."""

    def __init__(self, V, T, C, H, L):
        super().__init__()
        rng = np.random.default_rng(1)
        self.C, self.H, self.L = C, H, L
        self.wte = tf.nn.Parameter(0.02 * rng.standard_normal((V, C)))
        self.wpe = tf.nn.Parameter(0.02 * rng.standard_normal((T, C)))
        for l in range(L):
            setattr(self, f"ln1_w{l}", tf.nn.Parameter(np.ones(C)))
            setattr(self, f"ln1_b{l}", tf.nn.Parameter(np.zeros(C)))
            setattr(self, f"attn{l}", tf.nn.Linear(C, 3 * C, seed=10 + l))
            setattr(self, f"proj{l}", tf.nn.Linear(C, C, seed=20 + l))
            setattr(self, f"ln2_w{l}", tf.nn.Parameter(np.ones(C)))
            setattr(self, f"ln2_b{l}", tf.nn.Parameter(np.zeros(C)))
            setattr(self, f"fc{l}", tf.nn.Linear(C, 4 * C, seed=30 + l))
            setattr(self, f"fc_proj{l}", tf.nn.Linear(4 * C, C, seed=40 + l))
        self.ln_f_w = tf.nn.Parameter(np.ones(C))
        self.ln_f_b = tf.nn.Parameter(np.zeros(C))
        self.head = tf.nn.Linear(C, V, seed=50)

    def forward(self, ids):
        T = ids.shape[1]
        x = tf.embedding(ids, self.wte) + tf.embedding(np.arange(T), self.wpe)
        for l in range(self.L):
            g = lambda n: getattr(self, f"{n}{l}")  # noqa: E731
            h = tf.layer_norm(x, g("ln1_w"), g("ln1_b"))
            x = x + g("proj")(tf.causal_self_attention(g("attn")(h), self.H))
            h = tf.layer_norm(x, g("ln2_w"), g("ln2_b"))
            x = x + g("fc_proj")(tf.gelu(g("fc")(h)))
        return self.head(tf.layer_norm(x, self.ln_f_w, self.ln_f_b))


def median_ms(step, steps, warmup):
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        step()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def per_op_us(op, grad, calls, repeats):
    """(python, cpp): median microseconds per call of `op` on tiny float32 tensors, from Python and from C++."""
    shape = (4,) if op == "add" else (8, 8)
    rng = np.random.default_rng(3)
    a = tf.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)
    b = tf.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)
    py, cpp = [], []
    with contextlib.ExitStack() as stack:
        if not grad:
            stack.enter_context(tf.no_grad())
        for _ in range(repeats):
            t0 = time.perf_counter()
            if op == "add":
                for _ in range(calls):
                    a + b
            else:
                for _ in range(calls):
                    a @ b
            py.append((time.perf_counter() - t0) / calls * 1e6)
            cpp.append(tf._core._op_loop_seconds(op, a, b, calls) / calls * 1e6)
    return statistics.median(py), statistics.median(cpp)


def python_step_ms(kind, shape, steps, warmup):
    V, T, C, H, L, B = SHAPES[shape]
    rng = np.random.default_rng(2)
    if kind == "module":
        model = tf.nn.GPT(dict(vocab_size=V, context=T, d_model=C, n_head=H, n_layer=L), seed=1)
        loss_of = lambda x, y: model.loss(x, y)  # noqa: E731
    else:
        model = OpsGPT(V, T, C, H, L)
        loss_of = lambda x, y: tf.cross_entropy(model(x), y)  # noqa: E731
    opt = tf.optim.AdamW(model.named_parameters(), lr=3e-4)

    def step():
        x, y = rng.integers(0, V, (B, T)), rng.integers(0, V, (B, T))
        opt.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        opt.step()

    return median_ms(step, steps, warmup)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="small", choices=[s for s in SHAPES if not s.startswith("T")])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3, help="runs of tf.train and tinyformer train each")
    ap.add_argument("--tinyformer", default=os.path.join(ROOT, "build", "bin", "tinyformer"))
    ap.add_argument("--calls", type=int, default=20000, help="op calls per timed loop")
    ap.add_argument("--repeats", type=int, default=7, help="timed loops per op (the median is reported)")
    ap.add_argument("--per-op-only", action="store_true", help="only the cost of one op call")
    args = ap.parse_args()
    tf.set_num_threads(args.threads)
    overheads = []
    for op in ("add", "matmul"):
        for grad in (True, False):
            py, cpp = per_op_us(op, grad, args.calls, args.repeats)
            overheads.append(py - cpp)
            print(json.dumps({"op": op, "grad": grad, "python_us": round(py, 2), "cpp_us": round(cpp, 2),
                              "overhead_us": round(py - cpp, 2), "ratio": round(py / cpp, 2)}))
    print(f"per-op summary: the Python call adds {min(overheads):.2f} to {max(overheads):.2f} us per op")
    if args.per_op_only:
        return 0
    rows = {}
    cli = subprocess.run([args.tinyformer, "bench", "--shape", args.shape, "--threads", str(args.threads), "--steps",
                          str(args.steps), "--warmup", str(args.warmup)], check=True, capture_output=True, text=True)
    rows["cli"] = json.loads(cli.stdout.strip().splitlines()[-1])["ms_per_step"]
    rows["module"] = python_step_ms("module", args.shape, args.steps, args.warmup)
    rows["ops"] = python_step_ms("ops", args.shape, args.steps, args.warmup)
    rows["pytorch"] = torch_ms_per_step(args.shape, args.threads, args.steps, args.warmup)
    for k, v in rows.items():
        print(json.dumps({"shape": args.shape, "threads": args.threads, "way": k, "ms_per_step": round(v, 2)}))

    overrides = {"training.steps": 100, "training.threads": args.threads}
    config = os.path.join(ROOT, "configs", "reverse.yaml")
    py_s, cli_s = [], []
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.runs):
            t0 = time.perf_counter()
            tf.train(config, overrides=overrides, out=os.path.join(work, f"py{r}"))
            py_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run([args.tinyformer, "train", config, "--quiet", "--out", os.path.join(work, f"cli{r}")] +
                           [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")], check=True)
            cli_s.append(time.perf_counter() - t0)
    print(json.dumps({"run": "reverse, 100 steps", "tf.train_s": round(statistics.median(py_s), 3),
                      "tinyformer_train_s": round(statistics.median(cli_s), 3)}))
    print(f"summary ({args.shape}, {args.threads} thread(s)): ops/cli {rows['ops'] / rows['cli']:.2f}x, "
          f"module/cli {rows['module'] / rows['cli']:.2f}x, pytorch/ops {rows['pytorch'] / rows['ops']:.2f}x; "
          f"tf.train/cli train {statistics.median(py_s) / statistics.median(cli_s):.2f}x")


if __name__ == "__main__":
    sys.exit(main())
