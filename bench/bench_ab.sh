#!/usr/bin/env bash
# Compares builds of tinyformer on one bench shape: runs `BIN bench --shape SHAPE --threads 2` for each binary in
# turn, ROUNDS times (A B A B ...: a drift of the machine's speed hits both alike), and prints each binary's median,
# min and max ms/step, and for each BIN after the first the median of the per-round ratios first BIN / this BIN.
# Usage: [THREADS=N] [METRIC=cpu_ms_per_step] bench/bench_ab.sh SHAPE STEPS ROUNDS BIN [BIN ...]
# METRIC=cpu_ms_per_step compares the CPU time of the process per step instead of the wall-clock time: on a machine
# that other jobs share it leaves out the time they held the cores (cache sharing still counts).
# e.g. build an earlier commit in a worktree, then
#   bench/bench_ab.sh medium 5 6 ../before/build/bin/tinyformer ./build/bin/tinyformer
# A BIN may be a command with environment variables, one word per BIN, e.g. the libraries of products compared:
#   bench/bench_ab.sh tiny 10 6 TINYFORMER_GEMM=openblas:./build/bin/tinyformer TINYFORMER_GEMM=auto:./build/bin/tinyformer
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 SHAPE STEPS ROUNDS BIN [BIN ...]" >&2; exit 2; }
shape=$1 steps=$2 rounds=$3 threads=${THREADS:-2} metric=${METRIC:-ms_per_step}
shift 3
for _ in $(seq "$rounds"); do
  for bin in "$@"; do
    if [[ "$bin" == *=*:* ]]; then  # VAR=VALUE:BIN
      ms=$(env "${bin%%:*}" "${bin#*:}" bench --shape "$shape" --threads "$threads" --steps "$steps" --warmup 1 |
        grep -o "\"$metric\":[0-9.]*")
    else
      ms=$("$bin" bench --shape "$shape" --threads "$threads" --steps "$steps" --warmup 1 | grep -o "\"$metric\":[0-9.]*")
    fi
    echo "$bin ${ms#*:}"
  done
done | /usr/bin/python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    name, ms = line.split()
    runs[name].append(float(ms))
names = list(runs)
for name, ms in runs.items():
    line = f"{name}: median {statistics.median(ms):.2f} {sys.argv[1]} (min {min(ms):.2f}, max {max(ms):.2f}, {len(ms)} runs)"
    if name != names[0]:  # each round ran the first BIN next to this one: the median of those paired ratios
        ratios = [a / b for a, b in zip(runs[names[0]], ms)]
        line += f", first BIN / this one per round: median {statistics.median(ratios):.3f}"
        line += f" (min {min(ratios):.3f}, max {max(ratios):.3f})"
    print(line)
' "$metric"
