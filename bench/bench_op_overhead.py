#!/usr/bin/env python3
"""The cost of one tiny op called from Python, tinyformer against PyTorch, in one process: each case is timed as a
loop of --calls calls, tinyformer's loop and torch's loop in turn (A B A B ...), --repeats times; the figures are the
medians of the microseconds per call, and the ratio is taken pair by pair (its median), so that a drift of the
machine's speed during the run moves both sides alike. Both libraries run on 1 thread (their best setting for tensors
of a few elements: no pool to wake).

Cases (float32, inputs that require a gradient unless the name says no_grad):
  add                   a + b, [4] + [4]: one op, its graph node recorded
  add_no_grad           a + b under no_grad
  mul_sum_backward      (a * b).sum().backward(): a tiny op with its backward (two ops and a backward sweep)
  matmul                a @ b, [8,8] @ [8,8]
  exp_mean_backward     x.exp().mean().backward(), [16]
  index_backward        x[1:3].sum().backward(), [4, 4]  (only where the module has indexing)
  pow_backward          (x ** 3).sum().backward(), [16]  (only where the module has any real exponent)

Prints one JSON object per case and a summary line. Run it twice with two builds on PYTHONPATH to compare a change:
the ratio against torch is what carries over between runs (absolute times move by up to 2x on a shared machine).

usage: PYTHONPATH=build/python /usr/bin/python3 bench/bench_op_overhead.py [--calls 5000] [--repeats 9]
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch

import tinyformer as tf


def cases(lib):
    """name -> (setup() -> state, call(state)) for one library ('tf' or 'torch')."""
    rng = np.random.default_rng(3)

    def make(shape, grad=True):
        a = rng.standard_normal(shape).astype(np.float32)
        if lib == "tf":
            return tf.tensor(a, requires_grad=grad)
        return torch.tensor(a, requires_grad=grad)

    def no_grad():
        return tf.no_grad() if lib == "tf" else torch.no_grad()

    def add(s):
        return s[0] + s[1]

    def add_no_grad(s):
        with no_grad():
            return s[0] + s[1]

    def mul_sum_backward(s):
        (s[0] * s[1]).sum().backward()

    def exp_mean_backward(s):
        s[0].exp().mean().backward()

    def index_backward(s):
        s[0][1:3].sum().backward()

    def pow_backward(s):
        (s[0] ** 3).sum().backward()

    table = {
        "add": (lambda: (make(4), make(4)), add),
        "add_no_grad": (lambda: (make(4, False), make(4, False)), add_no_grad),
        "mul_sum_backward": (lambda: (make(4), make(4)), mul_sum_backward),
        "matmul": (lambda: (make((8, 8)), make((8, 8))), lambda s: s[0] @ s[1]),
        "exp_mean_backward": (lambda: (make(16),), exp_mean_backward),
        "index_backward": (lambda: (make((4, 4)),), index_backward),
        "pow_backward": (lambda: (make(16),), pow_backward),
    }
    return table


def supported(name, setup, call):
    try:
        call(setup())
        return True
    except (TypeError, ValueError):
        return False


def loop_us(setup, call, calls):
    state = setup()
    t0 = time.perf_counter()
    for _ in range(calls):
        call(state)
    return (time.perf_counter() - t0) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=5000, help="calls per timed loop")
    ap.add_argument("--repeats", type=int, default=9, help="timed loop pairs per case (medians are reported)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all the module supports)")
    args = ap.parse_args()
    tf.set_num_threads(1)
    torch.set_num_threads(1)
    ours, theirs = cases("tf"), cases("torch")
    wanted = [c for c in args.cases.split(",") if c] or list(ours)
    ratios = {}
    for name in wanted:
        if not supported(name, *ours[name]):
            print(json.dumps({"case": name, "skipped": "this tinyformer build does not have it"}))
            continue
        loop_us(*ours[name], calls=max(1, args.calls // 10))  # warm-up of both
        loop_us(*theirs[name], calls=max(1, args.calls // 10))
        tf_us, torch_us, pair = [], [], []
        for _ in range(args.repeats):
            a = loop_us(*ours[name], calls=args.calls)
            b = loop_us(*theirs[name], calls=args.calls)
            tf_us.append(a)
            torch_us.append(b)
            pair.append(a / b)
        ratios[name] = statistics.median(pair)
        print(json.dumps({"case": name, "tinyformer_us": round(statistics.median(tf_us), 2),
                          "torch_us": round(statistics.median(torch_us), 2), "ratio": round(ratios[name], 3),
                          "ratio_min": round(min(pair), 3), "ratio_max": round(max(pair), 3)}))
    print("summary: tinyformer/torch per call: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
