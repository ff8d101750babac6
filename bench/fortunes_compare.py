#!/usr/bin/python3
"""Char vs bpe 512 vs bpe 2048 on the fortunes, each with the same training budget in time: the table of docs/experiments.md.

Trains configs/fortunes_char.yaml, fortunes_bpe512.yaml and fortunes_bpe2048.yaml (the same model, only the
tokenizer differs) one after the other, each until `training.max_seconds` of steps have passed, at a constant
learning rate after the warmup (`schedule.name: warmup`, so that where the budget cuts a run does not change its
schedule), then evaluates each once on every window of the held-out entries (the same last entries of the file
for the three; bits per byte compare them across tokenizers) and prints a Markdown table.

The step a run reaches depends on the machine and its load: the figures are a measurement, not a reproducible
result. Training the SentencePiece model happens before the steps and is not part of the budget.

Usage: bench/fortunes_compare.py [--seconds 180] [--threads 1] [--out runs/fortunes_compare] [--bin build/bin/tinyformer]
Needs configs/data/fortunes.txt (configs/data/fortunes_corpus.sh). Takes about 3 x (seconds + 30 s).
"""
import argparse
import json
import os
import resource
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = [("char", "fortunes_char"), ("bpe 512", "fortunes_bpe512"), ("bpe 2048", "fortunes_bpe2048")]


def last_row_with(path, key):
    row = None
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if key in j:
                row = j
    if row is None:
        sys.exit(f"fortunes_compare.py: {path} has no row with {key}")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=180, help="training.max_seconds of each run")
    ap.add_argument("--threads", type=int, default=1, help="training.threads of each run")
    ap.add_argument("--out", default="runs/fortunes_compare", help="a run directory per tokenizer goes under it")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "tinyformer"))
    args = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, "configs", "data", "fortunes.txt")):
        sys.exit("fortunes_compare.py: configs/data/fortunes.txt is missing: run configs/data/fortunes_corpus.sh first")
    sets = [
        f"training.max_seconds={args.seconds}",
        "training.steps=1000000",  # the budget ends the run
        "schedule.name=warmup",
        f"training.threads={args.threads}",
        "training.eval_interval=1000000",  # one evaluation, after the last step
        "data.eval_size=1000000",  # every held-out window ...
        "training.eval_batches=1000000",  # ... all of them evaluated
        "logging.attention_interval=0",
        "logging.checkpoint_interval=0",
    ]
    rows = []
    for name, config in RUNS:
        out = os.path.join(args.out, config)
        cmd = [args.bin, "train", os.path.join(ROOT, "configs", config + ".yaml"), "--out", out, "--overwrite"]
        for s in sets:
            cmd += ["--set", s]
        print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        print(lines[0] + "\n" + lines[-1], file=sys.stderr, flush=True)  # the header (tokens, parameters), the summary
        row = last_row_with(os.path.join(out, "metrics.jsonl"), "val_bpb")
        rows.append((name, row["step"], cpu, row["val_loss"], row["val_bpb"]))
    best = min(r[4] for r in rows)
    # CPU s: user + sys seconds of the whole process (SentencePiece training and the final evaluation included): on a
    # loaded machine it shows how much of the wall-clock budget each run really had.
    print(f"| tokenizer | steps in {args.seconds:g} s | CPU s | val loss (nats/token) | val_bpb | vs best |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, step, cpu, loss, bpb in rows:
        vs = "best" if bpb == best else f"+{bpb - best:.3f} ({100 * (bpb - best) / best:+.1f} %)"
        print(f"| {name} | {step} | {cpu:.0f} | {loss:.4f} | {bpb:.4f} | {vs} |")


if __name__ == "__main__":
    main()
