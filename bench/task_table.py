#!/usr/bin/env python3
"""The table of tasks of docs/experiments.md (and the README's): trains each config as `tinyformer train
configs/X.yaml` does (its own steps, into a scratch directory) and prints one Markdown row per config: steps, wall
time of the whole command (evaluation, snapshots and the report included), held-out exact match (or validation loss
for text) and the head with the largest expected-pattern score (heads.json).

    python3 bench/task_table.py [--bin build/bin/tinyformer] [--configs copy,reverse,sort,induction,add,text]
                                  [--keep DIR]   (the runs stay in DIR/<config>, for `tinyformer heads` and
                                                  tools/task_attention.py)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def last_eval(metrics_path):
    row = None
    with open(metrics_path) as f:
        for line in f:
            r = json.loads(line)
            if "val_loss" in r:
                row = r
    return row


def best_expected(heads_path):
    with open(heads_path) as f:
        heads = json.load(f)
    expected = heads["patterns"].get("expected")
    if not expected:
        return "none known"
    best = max((s, l, h) for l, row in enumerate(expected["score"]) for h, s in enumerate(row))
    return f"{best[0]:.3f} (layer {best[1]} head {best[2]})"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.path.join(root, "build", "bin", "tinyformer"))
    p.add_argument("--configs", default="copy,reverse,sort,induction,add,text")
    p.add_argument("--keep", help="write the runs into this directory and keep them")
    a = p.parse_args()
    print("| config | steps | wall time | held-out exact match | validation loss | best head's expected-pattern score |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = a.keep or scratch
        for name in a.configs.split(","):
            out = os.path.join(tmp, name)
            t0 = time.perf_counter()
            subprocess.run([a.bin, "train", os.path.join(root, "configs", f"{name}.yaml"), "--out", out, "--quiet"]
                           + (["--overwrite"] if os.path.exists(out) else []),
                           check=True, stdout=subprocess.DEVNULL)
            secs = time.perf_counter() - t0
            row = last_eval(os.path.join(out, "metrics.jsonl"))
            acc = f"{row['accuracy']:.3f}" if "accuracy" in row else "-"
            print(f"| {name} | {row['step']} | {secs:.1f} s | {acc} | {row['val_loss']:.3f} | "
                  f"{best_expected(os.path.join(out, 'heads.json'))} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
