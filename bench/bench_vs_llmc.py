#!/usr/bin/env python3
"""Training against llm.c's CPU trainer (train_gpt2.c) from the same weights on the same tokens: the losses of the
first steps side by side, and the step times at 1 and 2 threads.

1. llm.c's train_gpt2 is built from the checkout given with --llmc as its Makefile builds it for a CPU (cc -Ofast
   -march=native ..., once without and once with -fopenmp -DOMP), into --work (outside both repositories). Its code
   is not changed.
2. The tokens: the first (B + 1) T + 1 bytes of configs/data/simple_english.txt as ids (each below 256, so any
   vocabulary of 256 or more holds them), written as an llm.c token file (header 256 int32: 20240520, 1, count;
   uint16 ids). Both trainers read this one file. llm.c's train loader cuts it into (count - 1) // (B T) = 1 batch,
   so it trains on ids[0 : B T + 1] at every step whatever its shuffle does; tinyformer's tokens task cuts it into
   windows of T + 1 ids, T apart (as llm.c does): rows 0..B-1 are the same batch, row B is held out, and
   data.shuffle false gives rows 0..B-1 at every step.
3. The weights: `tinyformer train bench/llmc_gpt2.yaml --set training.steps=0` initialises the model (GPT-2's
   N(0, 0.02) init) and saves it; `tinyformer export --format llmc` writes llm.c's model.bin from that checkpoint.
   llm.c runs in a scratch directory where gpt2_124M.bin and dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin
   are links to the export and the token file (the paths train_gpt2.c reads); tinyformer trains with --init-from that
   checkpoint and the hyperparameters of train_gpt2.c (bench/llmc_gpt2.yaml: AdamW lr 1e-4, betas 0.9/0.999, eps
   1e-8, weight decay 0, no clipping, no warmup, constant rate, B 4, T 64).
4. Rounds: each configuration runs in a fresh process, in turn, --rounds times: llm.c without OpenMP (1 thread),
   with OpenMP at OMP_NUM_THREADS 1 and 2, tinyformer at training.threads 1 and 2 (OpenBLAS on the core type
   tinyformer picks for this CPU, tensor/blas_core.hpp). llm.c prints each step's loss and time (forward, backward,
   update); it is stopped after --steps steps (it would go on to 40, with evaluations and sampling). tinyformer's
   metrics.jsonl has each step's loss and tokens/s (the time between two log rows: the step and its log row, whose
   weight norm and attention entropies llm.c does not compute). A step time is the median over steps 2..N of a run
   (the first step allocates, and tinyformer measures its GEMM plan there); a configuration's time is the median of
   its rounds' medians, and each round's ratio of the bests is printed too.
5. The losses of the first round, step by step, and the largest difference (llm.c's own test_gpt2.c accepts 1e-2 on
   the loss); the step times and llm.c's best over tinyformer's best. The load average before and after.

usage: bench_vs_llmc.py --llmc PATH/TO/llm.c [--tinyformer build/bin/tinyformer] [--work /tmp/bench_vs_llmc]
                        [--shape gpt2 | --set KEY=VALUE ...] [--rounds 2] [--steps 10]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, ".."))
CONFIG = os.path.join(HERE, "llmc_gpt2.yaml")
CORPUS = os.path.join(SOURCE_DIR, "configs", "data", "simple_english.txt")
# llm.c's Makefile for a CPU: CFLAGS, the -march=native it adds when the compiler takes it, and OpenMP's flags
CFLAGS = ["-Ofast", "-Wno-unused-result", "-Wno-ignored-pragmas", "-Wno-unknown-attributes", "-march=native"]
B, T = 4, 64  # train_gpt2.c's main
STEP = re.compile(r"^step (\d+): train loss ([0-9.naif]+) \(took ([0-9.]+) ms\)")


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def build_llmc(src, work):
    out = {}
    for name, extra, libs in [("train_gpt2", [], ["-lm"]), ("train_gpt2_omp", ["-fopenmp", "-DOMP"], ["-lm", "-lgomp"])]:
        binary = os.path.join(work, "bin", name)
        os.makedirs(os.path.dirname(binary), exist_ok=True)
        cmd = ["nice", "-n", "10", "cc", *CFLAGS, *extra, "train_gpt2.c", *libs, "-o", binary]
        print(f"# ({src}) {' '.join(cmd[3:])}", flush=True)
        run(cmd, cwd=src)
        out[name] = binary
    return out


def write_tokens(path, ids):
    header = np.zeros(256, dtype="<i4")
    header[:3] = [20240520, 1, len(ids)]
    with open(path, "wb") as f:
        f.write(header.tobytes() + np.asarray(ids, dtype="<u2").tobytes())


def llmc_run(binary, scratch, threads, steps):
    """llm.c's losses and step times (ms) of steps 0..steps-1; the process is stopped after the last one."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.Popen(["stdbuf", "-oL", binary], cwd=scratch, env=env, stdout=subprocess.PIPE, text=True)
    losses, ms, log = [], [], []
    for line in p.stdout:
        log.append(line)
        m = STEP.match(line)
        if m:
            losses.append(float(m.group(2)))
            ms.append(float(m.group(3)))
            if len(losses) == steps:
                break
    p.kill()
    p.wait()
    if len(losses) < steps:
        sys.exit(f"{binary}: {len(losses)} steps before it ended:\n{''.join(log)}")
    return losses, ms


def tinyformer_run(args, init, data, threads, out):
    cmd = [args.tinyformer, "train", CONFIG, "--init-from", init, "--out", out, "--overwrite", "--quiet",
           "--set", f"data.path={data}", "--set", f"training.steps={args.steps}", "--set", f"training.threads={threads}"]
    for s in args.set:
        cmd += ["--set", s]
    run(cmd)
    rows = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    rows = [r for r in rows if "train_loss" in r]
    assert [r["step"] for r in rows] == list(range(1, args.steps + 1)), [r["step"] for r in rows]
    return [r["train_loss"] for r in rows], [B * T / r["tokens_per_s"] * 1000 for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llmc", required=True, help="a checkout of karpathy/llm.c")
    ap.add_argument("--tinyformer", default=os.path.join(SOURCE_DIR, "build", "bin", "tinyformer"))
    ap.add_argument("--work", default="/tmp/bench_vs_llmc")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a model key for both (e.g. model.vocab_size=512); default GPT-2 124M's shape")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    print(f"# load average before: {load()}", flush=True)
    binaries = build_llmc(args.llmc, args.work)

    data = os.path.join(args.work, "tokens.bin")
    ids = np.frombuffer(open(CORPUS, "rb").read(), dtype=np.uint8)[:(B + 1) * T + 1]
    write_tokens(data, ids)
    init_dir, export_dir = os.path.join(args.work, "init"), os.path.join(args.work, "export")
    sets = [a for s in args.set for a in ("--set", s)]
    run([args.tinyformer, "train", CONFIG, "--out", init_dir, "--overwrite", "--quiet", "--set", f"data.path={data}",
         "--set", "training.steps=0", *sets])
    init = os.path.join(init_dir, "checkpoint.safetensors")
    shutil.rmtree(export_dir, ignore_errors=True)
    print("# " + run([args.tinyformer, "export", init, "--format", "llmc", "--out", export_dir]).stdout.strip())
    # the export's train.bin is the training rows' ids: llm.c's one batch
    exported = np.fromfile(os.path.join(export_dir, "train.bin"), dtype="<u2", offset=1024)
    assert np.array_equal(exported, ids[:B * T + 1]), "the exported train.bin is not the batch"

    scratch = os.path.join(args.work, "llmc_run")
    shards = os.path.join(scratch, "dev", "data", "tinyshakespeare")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(shards)
    os.symlink(os.path.join(export_dir, "model.bin"), os.path.join(scratch, "gpt2_124M.bin"))
    for split in ("train", "val"):
        os.symlink(data, os.path.join(shards, f"tiny_shakespeare_{split}.bin"))

    configs = [("llm.c train_gpt2 (no OpenMP), 1 thread", "llmc", binaries["train_gpt2"], 1),
               ("llm.c train_gpt2 (OpenMP), 1 thread", "llmc", binaries["train_gpt2_omp"], 1),
               ("llm.c train_gpt2 (OpenMP), 2 threads", "llmc", binaries["train_gpt2_omp"], 2),
               ("tinyformer, 1 thread", "tf", None, 1),
               ("tinyformer, 2 threads", "tf", None, 2)]
    losses, times = {}, {c[0]: [] for c in configs}
    for r in range(args.rounds):
        for name, kind, binary, threads in configs:
            if kind == "llmc":
                loss, ms = llmc_run(binary, scratch, threads, args.steps)
            else:
                loss, ms = tinyformer_run(args, init, data, threads, os.path.join(args.work, f"tf_{threads}"))
            losses.setdefault(name, loss)
            times[name].append(statistics.median(ms[1:]))
            print(f"# round {r + 1}: {name}: median {times[name][-1]:.0f} ms/step (steps 2..{args.steps}), "
                  f"losses {' '.join(f'{x:.4f}' for x in loss)}", flush=True)
    print(f"# load average after: {load()}\n")

    ref, ours = losses[configs[0][0]], losses["tinyformer, 1 thread"]
    print("| step | llm.c | tinyformer | abs. difference |\n|---|---|---|---|")
    for i, (a, b) in enumerate(zip(ref, ours)):
        print(f"| {i + 1} | {a:.6f} | {b:.6f} | {abs(a - b):.2e} |")
    worst = max(abs(a - b) for name in losses for a, b in zip(ref, losses[name]))
    print(f"\nlargest |difference| over all configurations and steps: {worst:.2e} (test_gpt2.c's tolerance 1e-2)\n")

    med = {name: statistics.median(v) for name, v in times.items()}
    best_llmc = min(v for k, v in med.items() if k.startswith("llm.c"))
    print("| configuration | ms/step (median) | llm.c's best / this |\n|---|---|---|")
    for name in times:
        print(f"| {name} | {med[name]:.0f} | {best_llmc / med[name]:.2f} |")
    best_tf = min(v for k, v in med.items() if k.startswith("tinyformer"))
    per_round = [min(v[r] for k, v in times.items() if k.startswith("llm.c")) /
                 min(v[r] for k, v in times.items() if k.startswith("tinyformer")) for r in range(args.rounds)]
    print(f"\ntinyformer's best is {best_llmc / best_tf:.2f}x llm.c's best ({args.rounds} rounds; per round, best "
          f"over best: {', '.join(f'{x:.2f}' for x in per_round)})")
    return 0 if worst <= 1e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
