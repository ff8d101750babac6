#!/usr/bin/env bash
# app: under TINYFORMER_GEMM=auto with libxsmm forced to its AVX2 code (LIBXSMM_TARGET=hsw) and OpenBLAS to its
# Haswell kernels, the library chosen for each product shape of tiny's and medium's training step is, timed again in
# the same run (`bench --check-gemm`, both libraries in alternating pairs), at least 0.9x as fast as the faster one.
# A ratio within one run, not a timing. About 15 s of CPU on a 2-core AVX2 machine (medium's step at 1 thread and
# the measurements); skipped in a build without libxsmm, where there is nothing to choose.
set -uo pipefail
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }
if ! TINYFORMER_GEMM=libxsmm "$bin" bench --shape floor --steps 1 --warmup 0 > /dev/null 2>&1; then
  echo "this build has no libxsmm: every product runs on OpenBLAS, nothing to choose"
  exit 0
fi
for shape in tiny medium; do
  out=$(LIBXSMM_TARGET=hsw OPENBLAS_CORETYPE=Haswell TINYFORMER_GEMM=auto \
    "$bin" bench --shape "$shape" --threads 1 --steps 1 --warmup 0 --check-gemm) || fail "bench --shape $shape --check-gemm"
  echo "$out" | grep '"gemm_check"'
  echo "$out" | /usr/bin/python3 -c '
import json, sys
shape = sys.argv[1]
checks = [json.loads(line) for line in sys.stdin if "\"gemm_check\"" in line]
if len(checks) < 4:
    sys.exit(f"FAIL: {shape}: expected a check per product shape (at least 4), got {len(checks)}")
slow = [c for c in checks if c["choice_speed"] < 0.9]
if slow:
    sys.exit(f"FAIL: {shape}: the chosen library runs below 0.9x the faster one on {slow}")
lowest = min(c["choice_speed"] for c in checks)
print(f"{shape}: {len(checks)} product shapes, the choice at least 0.9x the faster library on each (lowest {lowest})")
' "$shape" || exit 1
done
