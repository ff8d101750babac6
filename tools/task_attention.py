#!/usr/bin/env python3
"""Where a trained `sort` or `add` model's heads look, by what each key holds.

For held-out-like sequences (random from a fixed seed, in the task's layout), runs `tinyformer attention` and
splits each head's attention over the keys of every answer query.
  --task sort (n symbols, '|', the sorted symbols): for the query that holds a previous answer value c and predicts
  the next sorted value t:
    below     a source symbol smaller than c
    current   a source copy of c
    target    a source copy of t (the value the query must output)
    above     a source symbol larger than t
    answer    the separator or the answer part (keys n and later)
  (no source value lies strictly between c and t: t is the next value).
  --task add (a + b = c, d digits, c least significant digit first): for the query that predicts the digit of place
  10^k (k < d):
    a_digit   a's digit of place 10^k (the task's expected key)
    b_digit   b's digit of place 10^k
    other     every other key
Prints one line per head with the mean fractions, as JSON with --json.
Usage: task_attention.py TINYFORMER CHECKPOINT [--task sort|add] [--length 8] [--alphabet 10] [--digits 3] [-n 100]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

CATEGORIES = {"sort": ["below", "current", "target", "above", "answer"], "add": ["a_digit", "b_digit", "other"]}
SYMBOLS = "0123456789abcdefghijklmnopqrstuvwxyz"


def sort_queries(rng, n, sym):
    """The prompt, and for each answer query (q, key -> category index) as sort splits it."""
    src = [rng.choice(sym) for _ in range(n)]
    ans = sorted(src, key=sym.index)
    queries = []
    for k in range(1, n):  # the query at n+k holds ans[k-1] and predicts ans[k]
        q, cur, tgt = n + k, sym.index(ans[k - 1]), sym.index(ans[k])
        queries.append((q, [sort_category(src, j, n, cur, tgt, sym) for j in range(q + 1)]))
    return "".join(src) + "|" + "".join(ans[:-1]), queries


def add_queries(rng, d):
    a, b = rng.randrange(10 ** d), rng.randrange(10 ** d)
    answer = f"{a + b:0{d + 1}d}"[::-1]
    prompt = f"{a:0{d}d}+{b:0{d}d}=" + answer[:-1]
    queries = []
    for k in range(d):  # the query at 2d+1+k predicts the digit of place 10^k
        q, a_pos, b_pos = 2 * d + 1 + k, d - 1 - k, 2 * d - k
        queries.append((q, [0 if j == a_pos else 1 if j == b_pos else 2 for j in range(q + 1)]))
    return prompt, queries


def sort_category(src, j, n, cur, tgt, sym):
    if j >= n:
        return 4
    v = sym.index(src[j])
    return 0 if v < cur else 1 if v == cur else 2 if v == tgt else 3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tinyformer")
    ap.add_argument("checkpoint")
    ap.add_argument("--task", choices=["sort", "add"], default="sort")
    ap.add_argument("--length", type=int, default=8)
    ap.add_argument("--digits", type=int, default=3)
    ap.add_argument("--alphabet", type=int, default=10)
    ap.add_argument("-n", type=int, default=100, help="sequences")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    n, sym, cats = args.length, SYMBOLS[: args.alphabet], CATEGORIES[args.task]
    rng = random.Random(args.seed)
    total, queries = None, 0
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.n):
            prompt, answer_queries = sort_queries(rng, n, sym) if args.task == "sort" else add_queries(rng, args.digits)
            subprocess.run([args.tinyformer, "attention", args.checkpoint, "--prompt", prompt, "--out", out],
                           check=True, capture_output=True)
            a = np.load(os.path.join(out, "attention.npy"))  # [L,H,T,T]
            if total is None:
                total = np.zeros(a.shape[:2] + (len(cats),))
            for q, category_of in answer_queries:
                for j, c in enumerate(category_of):
                    total[:, :, c] += a[:, :, q, j]
                queries += 1
    mean = total / queries
    if args.json:
        print(json.dumps({"queries": queries, "categories": cats, "mass": mean.round(4).tolist()}))
        return 0
    print(f"{queries} answer queries; mean attention by what the key holds")
    for l in range(mean.shape[0]):
        for h in range(mean.shape[1]):
            print(f"L{l} H{h}  " + "  ".join(f"{c} {mean[l, h, i]:.2f}" for i, c in enumerate(cats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
