#!/usr/bin/python3
"""Does an induction head form on real text? docs/experiments.md's answer, re-measured.

Trains configs/fortunes_bpe512.yaml (two layers, four heads, bpe 512 on the fortunes) for a time budget
(`training.max_seconds`, default 600 s) at a constant learning rate after the warmup, evaluating every
--eval-interval steps: each evaluation logs every head's induction score on the held-out entries
(`induction_score` in metrics.jsonl; the report's "Heads" table and chart show it). Then prints, per evaluation,
the best head and its score with val_bpb; the best score over the steps; the step where it rises (the evaluation
with the largest increase of the best score over the previous one); and `tinyformer heads` on the final
checkpoint (the same detector, its verdict per head).

The induction score of a head (analysis/head_patterns.hpp) is the fraction of the attention of each query whose
token occurred earlier in the window that lands on the token right after that earlier occurrence.

Usage: bench/fortunes_induction.py [--seconds 600] [--threads 1] [--eval-interval 50] [--out runs/fortunes_induction]
       [--bin build/bin/tinyformer] [--report-only]   (--report-only: read an existing run, train nothing)
Needs configs/data/fortunes.txt (configs/data/fortunes_corpus.sh).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-interval", type=int, default=50)
    ap.add_argument("--out", default="runs/fortunes_induction")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "tinyformer"))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if not args.report_only:
        cmd = [args.bin, "train", os.path.join(ROOT, "configs", "fortunes_bpe512.yaml"), "--out", args.out,
               "--overwrite"]
        for s in [f"training.max_seconds={args.seconds}", "training.steps=1000000", "schedule.name=warmup",
                  f"training.threads={args.threads}", f"training.eval_interval={args.eval_interval}",
                  f"logging.log_interval={args.eval_interval}", f"logging.attention_interval={args.eval_interval * 4}",
                  "logging.checkpoint_interval=0"]:
            cmd += ["--set", s]
        print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
        summary = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
        print(summary, flush=True)

    rows = []
    with open(os.path.join(args.out, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if "induction_score" in j:
                table = j["induction_score"]
                score, layer, head = max((v, l, h) for l, row in enumerate(table) for h, v in enumerate(row))
                rows.append((j["step"], score, layer, head, j.get("val_bpb")))
    if not rows:
        sys.exit(f"fortunes_induction.py: {args.out}/metrics.jsonl has no induction_score")
    print("| step | best head | induction score | val_bpb |")
    print("|---:|---|---:|---:|")
    for step, score, layer, head, bpb in rows:
        print(f"| {step} | L{layer} H{head} | {score:.3f} | {bpb:.4f} |")
    best = max(rows, key=lambda r: r[1])
    print(f"best induction score over the steps: {best[1]:.3f} (L{best[2]} H{best[3]}, step {best[0]})")
    if len(rows) > 1:
        rise = max(range(1, len(rows)), key=lambda i: rows[i][1] - rows[i - 1][1])
        print(f"largest rise: {rows[rise - 1][1]:.3f} at step {rows[rise - 1][0]} -> {rows[rise][1]:.3f} at step "
              f"{rows[rise][0]}")
    print(subprocess.run([args.bin, "heads", os.path.join(args.out, "checkpoint.safetensors")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout, end="")


if __name__ == "__main__":
    main()
