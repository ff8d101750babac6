#!/usr/bin/env python3
"""Where a trained `sort` model's heads look, by the value of each source symbol.

For held-out-like sequences (random sources from a fixed seed, the task's layout: n symbols, '|', the sorted
symbols), runs `tinyformer attention` and, for every answer query that holds a previous answer value c and predicts
the next sorted value t, splits each head's attention over the keys by what they hold:
  below     a source symbol smaller than c
  current   a source copy of c
  target    a source copy of t (the value the query must output)
  above     a source symbol larger than t
  answer    the separator or the answer part (keys n and later)
(no source value lies strictly between c and t: t is the next value). Prints one line per head with the mean
fractions, as JSON with --json. Usage: sort_attention.py TINYFORMER CHECKPOINT [--length 8] [--alphabet 10] [-n 100]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

CATEGORIES = ["below", "current", "target", "above", "answer"]
SYMBOLS = "0123456789abcdefghijklmnopqrstuvwxyz"


def category(src, j, n, cur, tgt):
    if j >= n:
        return 4
    v = SYMBOLS.index(src[j])
    return 0 if v < cur else 1 if v == cur else 2 if v == tgt else 3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tinyformer")
    ap.add_argument("checkpoint")
    ap.add_argument("--length", type=int, default=8)
    ap.add_argument("--alphabet", type=int, default=10)
    ap.add_argument("-n", type=int, default=100, help="sequences")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    n, sym = args.length, SYMBOLS[: args.alphabet]
    rng = random.Random(args.seed)
    total, queries = None, 0
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.n):
            src = [rng.choice(sym) for _ in range(n)]
            ans = sorted(src, key=sym.index)
            prompt = "".join(src) + "|" + "".join(ans[:-1])
            subprocess.run([args.tinyformer, "attention", args.checkpoint, "--prompt", prompt, "--out", out],
                           check=True, capture_output=True)
            a = np.load(os.path.join(out, "attention.npy"))  # [L,H,T,T]
            if total is None:
                total = np.zeros(a.shape[:2] + (len(CATEGORIES),))
            for k in range(1, n):  # the query at n+k holds ans[k-1] and predicts ans[k]
                q, cur, tgt = n + k, sym.index(ans[k - 1]), sym.index(ans[k])
                for j in range(q + 1):
                    total[:, :, category(src, j, n, cur, tgt)] += a[:, :, q, j]
                queries += 1
    mean = total / queries
    if args.json:
        print(json.dumps({"queries": queries, "categories": CATEGORIES, "mass": mean.round(4).tolist()}))
        return 0
    print(f"{queries} answer queries; mean attention by what the key holds")
    for l in range(mean.shape[0]):
        for h in range(mean.shape[1]):
            print(f"L{l} H{h}  " + "  ".join(f"{c} {mean[l, h, i]:.2f}" for i, c in enumerate(CATEGORIES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
