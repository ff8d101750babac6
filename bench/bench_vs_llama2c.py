#!/usr/bin/env python3
"""Decoding speed of `tinyformer sample`'s engine against llama2.c's run.c (and runq.c) on the same model, side by side
in one run.

The checkpoint (a Llama-shaped model: rmsnorm, swiglu, rope, no biases, a bpe vocabulary) is exported with `tinyformer
export --format llama2c` (and --format llama2c-q8 for runq). Then, for each thread count, round after round, every
engine decodes greedily --new-tokens tokens after --prompt, each run a fresh process, in an order that rotates from
round to round:
  tinyformer   `tinyformer bench --sample --checkpoint CK` (the engine of `sample`, infer::Decoder; --int8 for int8):
               new tokens over the time from the prompt's first token to the last new one, after loading
  run.c        each binary given with --run-c NAME=PATH (built as llama2.c's Makefile builds `runfast` and `runomp`),
               its own "achieved tok/s" (positions after the first over the time since the first), -n prompt + new
               tokens; OMP_NUM_THREADS is the thread count (binaries without OpenMP run one thread whatever it is)
The tables give each engine's median tok/s and, per round, tinyformer's tok/s over the faster run.c binary's of the same
round: the median of these paired ratios (and their range) is the comparison, as the machine's speed drifts between
rounds. The faster binary is the one with the higher median over all rounds at that thread count. Taking the larger of
the binaries' two rates in each round instead would compare one sample against the maximum of two: at one thread
runfast and runomp are the same loop, and the maximum of two noisy samples of one speed is above that speed (by about
half the spread of a round). That figure is printed as well, as "max of both", a bound that leans towards run.c.
The load average before and after is printed: on a shared machine only the ratios mean much.

usage: bench_vs_llama2c.py --checkpoint CK --run-c runfast=PATH --run-c runomp=PATH [--int8 --run-q runq=PATH]
                           [--tinyformer build/bin/tinyformer] [--threads 1,2] [--rounds 5] [--prompt TEXT]
                           [--new-tokens 200]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def named(values, flag):
    out = {}
    for v in values:
        if "=" not in v:
            sys.exit(f"{flag} {v}: expected NAME=PATH")
        name, path = v.split("=", 1)
        if not os.access(path, os.X_OK):
            sys.exit(f"{flag} {v}: {path} is not an executable file")
        out[name] = path
    return out


def tinyformer_run(args, threads, new_tokens):
    cmd = [args.tinyformer, "bench", "--sample", "--checkpoint", args.checkpoint, "--prompt", args.prompt,
           "--new-tokens", str(new_tokens), "--threads", str(threads)]
    if args.int8:
        cmd.append("--int8")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_c(path, model_dir, model, prompt, steps, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([path, os.path.join(model_dir, model), "-z", os.path.join(model_dir, "tokenizer.bin"), "-t",
                        "0", "-n", str(steps), "-i", prompt], env=env, capture_output=True, text=True, check=True)
    m = re.search(r"achieved tok/s: ([0-9.]+)", p.stderr)
    if not m:
        sys.exit(f"{path}: no 'achieved tok/s' in its output:\n{p.stderr}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinyformer", default=os.path.join(HERE, "..", "build", "bin", "tinyformer"))
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--run-c", action="append", default=[], metavar="NAME=PATH", help="a run.c binary (repeatable)")
    ap.add_argument("--int8", action="store_true", help="tinyformer with int8 weights against the --run-q binaries")
    ap.add_argument("--run-q", action="append", default=[], metavar="NAME=PATH", help="a runq.c binary (repeatable)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prompt", default="Once upon a time")
    ap.add_argument("--new-tokens", type=int, default=200)
    args = ap.parse_args()
    peers = named(args.run_q if args.int8 else args.run_c, "--run-q" if args.int8 else "--run-c")
    if not peers:
        ap.error("give at least one binary of llama2.c: --run-c NAME=PATH (or with --int8, --run-q NAME=PATH)")
    model = "model_q80.bin" if args.int8 else "model.bin"
    with tempfile.TemporaryDirectory() as model_dir:
        fmt = "llama2c-q8" if args.int8 else "llama2c"
        subprocess.run([args.tinyformer, "export", args.checkpoint, "--format", fmt, "--out", model_dir], check=True,
                       capture_output=True)
        print(f"load average before: {load()}; model {os.path.getsize(os.path.join(model_dir, model)) / 1e6:.1f} MB "
              f"({fmt}); prompt {args.prompt!r}, {args.new_tokens} new tokens, greedy; {args.rounds} rounds")
        names = ["tinyformer"] + list(peers)
        # untimed: the prompt's length in tokens (run.c's -n counts the prompt's positions), and warm caches
        steps = tinyformer_run(args, 1, 1)["prompt_tokens"] + args.new_tokens
        table = []
        for threads in [int(t) for t in args.threads.split(",")]:
            rates = {n: [] for n in names}
            fractions = []
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                this_round = {}
                for name in order:
                    if name == "tinyformer":
                        j = tinyformer_run(args, threads, args.new_tokens)
                        this_round[name] = j["tokens_per_s"]
                        fractions.append(j["bandwidth_fraction"])
                    else:
                        this_round[name] = run_c(peers[name], model_dir, model, args.prompt, steps, threads)
                for n in names:
                    rates[n].append(this_round[n])
            medians = {n: statistics.median(v) for n, v in rates.items()}
            faster = max(peers, key=lambda n: medians[n])
            ratios = [t / f for t, f in zip(rates["tinyformer"], rates[faster])]
            ratios_max = [rates["tinyformer"][r] / max(rates[n][r] for n in peers) for r in range(args.rounds)]
            table.append((threads, medians, faster, statistics.median(ratios), min(ratios), max(ratios),
                          statistics.median(ratios_max), statistics.median(fractions)))
            print(f"{threads} thread(s): " + ", ".join(f"{n} {medians[n]:.1f}" for n in names) +
                  f" tok/s; tinyformer / {faster} (the faster) per round: " + " ".join(f"{x:.2f}" for x in ratios) +
                  "; over the max of both per round: " + " ".join(f"{x:.2f}" for x in ratios_max), flush=True)
        print(f"load average after: {load()}\n")
        peer = "runq" if args.int8 else "run.c"
        print("| threads | tinyformer tok/s | " + " | ".join(f"{n} tok/s" for n in peers) +
              f" | tinyformer / faster {peer} (median of {args.rounds} rounds, range) | over the max of both per round"
              " | tinyformer's fraction of the read bandwidth |")
        print("|---" * (len(peers) + 5) + "|")
        for threads, medians, faster, ratio, lo, hi, ratio_max, fraction in table:
            print(f"| {threads} | {medians['tinyformer']:.1f} | " + " | ".join(f"{medians[n]:.1f}" for n in peers) +
                  f" | {ratio:.2f} ({lo:.2f}-{hi:.2f}, {faster}) | {ratio_max:.2f} | {fraction:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
