#!/usr/bin/env bash
# The portable build (cmake --preset portable) on a CPU without AVX, under Debian's qemu-user (qemu-x86_64 -cpu
# Nehalem: SSE4.2, no AVX). Nothing may die of an illegal instruction (status 132).
#   1. The kernel check (tests/tools/kernel_isa_check.cpp, target tinyformer_kernel_check: the dispatched kernels and
#      the few files they call, about twenty compiles): under qemu it must pick x86-64-v2 and print the same bits as
#      the same binary natively with TINYFORMER_KERNEL_ISA=x86-64-v2; natively, every level the CPU has must agree
#      with x86-64-v2 within 1e-5 (float) and 1e-12 (double), relative to each array's largest value.
#   2. With --app (needs the whole portable build, target tinyformer_app): `gradcheck configs/reverse.yaml --small`
#      and STEPS training steps of configs/reverse.yaml under qemu, whose losses are compared with the same binary's
#      natively at x86-64-v2, OpenBLAS's and libxsmm's code paths pinned to what qemu's CPU gets
#      (OPENBLAS_CORETYPE=Nehalem, LIBXSMM_TARGET=wsm) and every product on OpenBLAS.
# A native build (-march=native) dies under qemu -cpu Nehalem on `tinyformer --help` already (status 132 on an
# AVX2 host), which shows the check can fail.
# Usage: scripts/qemu_portable.sh [--app] [BUILD_DIR (default build-portable)] [STEPS (default 10)]
set -uo pipefail
cd "$(dirname "$0")/.."
app=0
if [ "${1:-}" = --app ]; then
  app=1
  shift
fi
build=${1:-build-portable} steps=${2:-10}
bin=$build/bin/tinyformer check=$build/bin/tinyformer_kernel_check
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v qemu-x86_64 > /dev/null || fail "qemu-x86_64 not found: install qemu-user (scripts/install_deps.sh does)"
[ -x "$check" ] || fail "$check not found: cmake --preset portable && cmake --build build-portable --target tinyformer_kernel_check"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
qemu-x86_64 -cpu Nehalem "$check" > "$work/qemu_kernels.txt"
status=$?
[ $status -eq 132 ] && fail "kernel check: illegal instruction under qemu -cpu Nehalem"
[ $status -eq 0 ] || fail "kernel check: exit status $status under qemu -cpu Nehalem"
head -1 "$work/qemu_kernels.txt" | grep -qx "level x86-64-v2" || fail "under qemu -cpu Nehalem the kernels chose $(head -1 "$work/qemu_kernels.txt")"
TINYFORMER_KERNEL_ISA=x86-64-v2 "$check" > "$work/native_v2.txt" || fail "kernel check natively at x86-64-v2"
cmp -s <(tail -n +2 "$work/qemu_kernels.txt") <(tail -n +2 "$work/native_v2.txt") ||
  fail "the x86-64-v2 kernels give other bits under qemu than natively"
for level in x86-64-v3 x86-64-v4; do
  TINYFORMER_KERNEL_ISA=$level "$check" > "$work/native_$level.txt" 2> /dev/null || continue  # a level this CPU lacks
  /usr/bin/python3 scripts/compare_kernel_check.py "$work/native_v2.txt" "$work/native_$level.txt" || exit 1
done
echo "qemu -cpu Nehalem: the kernel check ran at x86-64-v2 with the same bits as natively"
[ $app -eq 1 ] || exit 0
[ -x "$bin" ] || fail "$bin not found: cmake --build build-portable --target tinyformer_app"
pinned=(TINYFORMER_GEMM=openblas OPENBLAS_CORETYPE=Nehalem LIBXSMM_TARGET=wsm OPENBLAS_NUM_THREADS=1)
old_cpu() { env "${pinned[@]}" qemu-x86_64 -cpu Nehalem "$@"; }
check_signal() {  # status of the command just run; 128 + 4 is SIGILL
  [ "$1" -eq 132 ] && fail "$2: illegal instruction under qemu -cpu Nehalem"
  [ "$1" -eq 0 ] || fail "$2: exit status $1 under qemu -cpu Nehalem"
}
old_cpu "$bin" gradcheck configs/reverse.yaml --small --checks 4 > "$work/gradcheck.txt" 2>&1
check_signal $? "gradcheck"
tail -1 "$work/gradcheck.txt"
train=(train configs/reverse.yaml --set training.steps="$steps" --set schedule.warmup_steps=2 --set logging.log_interval=1 --set training.threads=1
  --quiet)
old_cpu "$bin" "${train[@]}" --out "$work/qemu" > "$work/qemu.txt" 2>&1
check_signal $? "train"
env "${pinned[@]}" TINYFORMER_KERNEL_ISA=x86-64-v2 "$bin" "${train[@]}" --out "$work/native" > "$work/native.txt" 2>&1 ||
  fail "train natively: $(cat "$work/native.txt")"
losses() { /usr/bin/python3 -c 'import json, sys; print(" ".join(repr(json.loads(l)["train_loss"]) for l in open(sys.argv[1]) if "\"train_loss\"" in l))' "$1"; }
q=$(losses "$work/qemu/metrics.jsonl") n=$(losses "$work/native/metrics.jsonl")
[ -n "$q" ] || fail "no losses in the qemu run's metrics.jsonl"
if [ "$q" = "$n" ]; then
  echo "qemu -cpu Nehalem: gradcheck and $steps training steps ran; the losses equal the native x86-64-v2 run's bit for bit"
else
  echo "qemu -cpu Nehalem: gradcheck and $steps training steps ran; the losses differ from the native x86-64-v2 run's:"
  echo "  qemu:   $q"
  echo "  native: $n"
  exit 1
fi
