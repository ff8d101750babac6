#!/usr/bin/env python3
"""Whether the OpenBLAS core type tinyformer runs is the best one for this CPU: `tinyformer bench --gemm` (SGEMM
GFLOP/s of OpenBLAS at 1 and 2 threads) as it chooses by itself, against the same with OPENBLAS_CORETYPE set to each
core type given, round after round in an order that rotates, each run a fresh process.

For each core type it prints the median GFLOP/s and, per round, the chosen setting's GFLOP/s over that core type's:
the median of these paired ratios is the comparison, as the machine's speed drifts between rounds. Issue 52 asks the
choice to be within 10% of the best core type's (a ratio of at least 0.9 against every core type).

usage: bench_blas_cores.py [--tinyformer build/bin/tinyformer] [--cores SapphireRapids,Cooperlake,SkylakeX,Haswell]
                           [--rounds 7]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def gemm(binary, core):
    """{threads: (GFLOP/s, the core OpenBLAS ran)} of the openblas lines of `bench --gemm`."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if core != "chosen":
        env["OPENBLAS_CORETYPE"] = core
    out = subprocess.run([binary, "bench", "--gemm"], env=env, check=True, capture_output=True, text=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {j["threads"]: (j["sgemm_gflops"], j.get("openblas_core", "?")) for j in lines if j["gemm"] == "openblas"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tinyformer", default=os.path.join(HERE, "..", "build", "bin", "tinyformer"))
    ap.add_argument("--cores", default="SapphireRapids,Cooperlake,SkylakeX,Haswell")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    settings = ["chosen"] + args.cores.split(",")
    print(f"load average before: {load()}; {args.rounds} rounds of `bench --gemm` per setting")
    runs = {s: [] for s in settings}
    for r in range(args.rounds):
        order = settings[r % len(settings):] + settings[:r % len(settings)]
        for s in order:
            runs[s].append(gemm(args.tinyformer, s))
    print(f"load average after: {load()}\n")
    print("| OPENBLAS_CORETYPE | core OpenBLAS ran | GFLOP/s, 1 thread | GFLOP/s, 2 threads | chosen / this, 1 thread "
          "(median, range) | chosen / this, 2 threads |")
    print("|---|---|---|---|---|---|")
    for s in settings:
        cells = []
        for t in (1, 2):
            ratios = sorted(c[t][0] / x[t][0] for c, x in zip(runs["chosen"], runs[s]))
            cells.append(f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})")
        g1 = statistics.median(x[1][0] for x in runs[s])
        g2 = statistics.median(x[2][0] for x in runs[s])
        name = "(unset: tinyformer chooses)" if s == "chosen" else s
        print(f"| {name} | {runs[s][0][1][1]} | {g1:.1f} | {g2:.1f} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
