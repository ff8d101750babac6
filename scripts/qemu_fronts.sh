#!/usr/bin/env bash
# The front ends on Linux on ARM64 (docs/platforms.md): the ARM64 build's CLI, Python module and C++ runs API under
# qemu-aarch64, checked as they are on x86-64. The Python is Debian's arm64 python3 with its NumPy, unpacked into the
# arm64 tree by `scripts/install_deps.sh aarch64`; the CLI, the interpreter and runs_probe are started through small
# wrappers in build-aarch64/qemu-fronts/, so that a test or the tester that starts one (subprocess, sys.executable)
# starts it under qemu too.
#   1. pytest over the Python tests that need neither PyTorch nor matplotlib (not in the arm64 tree): the error
#      boundary, NumPy interop, views, vocabularies, the lens, OpenBLAS's core, and the runs against the CLI's.
#   2. The generative tester (tests/app/generative.py) drawing CLI, Python and C++ cases, every time limit x6.
# Needs: bash scripts/build.sh aarch64 tinyformer_app tinyformer_python tinyformer_test_tools.
# Usage: scripts/qemu_fronts.sh [CASES (default 60: the CLI's; half as many Python, a third C++)] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD build=$PWD/build-aarch64 cases=${1:-60} seed=${2:-$(date -u +%Y%m%d)}
fail() { echo "FAIL: $*" >&2; exit 1; }
for f in bin/tinyformer tests/runs_probe python/tinyformer; do
  [ -e "$build/$f" ] || fail "$build/$f not found: bash scripts/build.sh aarch64 tinyformer_app tinyformer_python " \
    "tinyformer_test_tools (the Python module needs the arm64 python3 of scripts/install_deps.sh aarch64)"
done
mapfile -t emulator < "$build/crosscompiling_emulator.txt"  # qemu-aarch64 -L <cross runtimes> -E LD_LIBRARY_PATH=...
tree=${TINYFORMER_ARM64_ROOT:-/opt/tinyformer-arm64}
lib="$tree/lib/aarch64-linux-gnu:$tree/usr/lib/aarch64-linux-gnu:$tree/usr/lib/aarch64-linux-gnu/openblas-pthread"
wrappers="$build/qemu-fronts"
mkdir -p "$wrappers"
# wrap NAME BINARY [QEMU OPTIONS...]: a script that runs BINARY under qemu, as argv[0] NAME's path (-0), which is what
# Python takes for sys.executable.
wrap() {
  local name=$1 binary=$2
  shift 2
  { printf '#!/bin/bash\nexec'
    printf ' %q' "${emulator[@]:0:3}" -E "LD_LIBRARY_PATH=$lib" -0 "$wrappers/$name" "$@" "$binary"
    printf ' "$@"\n'; } > "$wrappers/$name"
  chmod +x "$wrappers/$name"
}
wrap tinyformer "$build/bin/tinyformer"
wrap runs_probe "$build/tests/runs_probe"
wrap python3 "$tree/usr/bin/python3.11" -E "PYTHONHOME=$tree/usr"
"$wrappers/python3" -c 'import platform, numpy; assert platform.machine() == "aarch64", platform.machine()' ||
  fail "the arm64 python3 does not start under ${emulator[0]}"

start=$SECONDS
tests=(runs views boundary blas_core vocabulary lens numpy_interop)  # the longest first
printf '%s\n' "${tests[@]}" | xargs -P "$(nproc)" -I{} sh -c '
  out=$(cd "$0/python" && PYTHONPATH=. PYTHONDONTWRITEBYTECODE=1 OPENBLAS_NUM_THREADS=1 TINYFORMER_APP="$1/tinyformer" \
        TINYFORMER_SOURCE_DIR="$2" "$1/python3" -m pytest -q -p no:cacheprovider "$2/python/tests/test_{}.py" \
        -k "not test_plotting_and_gradcheck_take_tensors" 2>&1) ||
    { echo "$out" >&2; echo "FAIL: python/tests/test_{}.py under qemu-aarch64" >&2; exit 255; }
  echo "test_{}.py: $(echo "$out" | tail -1)"' "$build" "$wrappers" "$root"
echo "qemu_fronts.sh: pytest took $((SECONDS - start)) s"

start=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$(/usr/bin/python3 tests/app/generative.py "$wrappers/tinyformer" . "$work" --cases "$cases" --seed "$seed" \
  --python-cases $((cases / 2)) --cpp-cases $((cases / 3)) --python-path "$build/python" --python "$wrappers/python3" \
  --probe "$wrappers/runs_probe" --time-scale 6 2>&1) || { echo "$out" >&2; fail "the generative tester under qemu-aarch64 (seed $seed)"; }
echo "$out" | tail -2
echo "qemu_fronts.sh: the generative tester took $((SECONDS - start)) s"
