#!/usr/bin/env bash
# The portable build (cmake --preset portable) on a CPU without AVX: runs its app under Debian's qemu-user
# (qemu-x86_64 -cpu Nehalem: SSE4.2, no AVX) and checks that nothing dies of an illegal instruction:
#   1. `gradcheck configs/reverse.yaml --small`: every parameter's float64 gradient against finite differences,
#      through the x86-64-v2 kernels (GELU, attention head, softmax, norms);
#   2. a short training run of configs/reverse.yaml, whose losses are compared with the same binary's run natively
#      with the same kernel level (TINYFORMER_KERNEL_ISA=x86-64-v2), OpenBLAS's and libxsmm's code paths pinned to
#      what qemu's CPU gets (OPENBLAS_CORETYPE=Nehalem, LIBXSMM_TARGET=wsm) and every product on OpenBLAS.
# A native build (-march=native) fails step 1 at once with SIGILL on an AVX2 host, which shows the check can fail.
# Usage: scripts/qemu_portable.sh [BUILD_DIR (default build-portable)] [STEPS (default 10)]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-portable} steps=${2:-10}
bin=$build/bin/tinyformer
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v qemu-x86_64 > /dev/null || fail "qemu-x86_64 not found: install qemu-user (scripts/install_deps.sh does)"
[ -x "$bin" ] || fail "$bin not found: cmake --preset portable && cmake --build build-portable --target tinyformer_app"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
