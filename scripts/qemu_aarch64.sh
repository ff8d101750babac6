#!/usr/bin/env bash
# The ARM64 build's kernels against the x86-64 ones (docs/platforms.md): the kernel check (tests/tools/
# kernel_isa_check.cpp) of build-aarch64, its kernels on NEON, run under qemu-aarch64 as CTest runs the preset's tests
# (build-aarch64/crosscompiling_emulator.txt), compared with the portable build's at x86-64-v2 on this machine. Results
# need not match bit for bit across architectures: every array must agree within the portable check's tolerances,
# 1e-5 (float) and 1e-12 (double) of its largest value (scripts/compare_kernel_check.py).
# Needs: cmake --build build-aarch64 --target tinyformer_kernel_check; the same in build-portable.
set -euo pipefail
cd "$(dirname "$0")/.."
arm=build-aarch64 x86=build-portable
fail() { echo "FAIL: $*" >&2; exit 1; }
for build in "$arm:aarch64" "$x86:portable"; do
  [ -x "${build%:*}/bin/tinyformer_kernel_check" ] ||
    fail "${build%:*}/bin/tinyformer_kernel_check not found: bash scripts/build.sh ${build#*:} tinyformer_kernel_check"
done
mapfile -t emulator < "$arm/crosscompiling_emulator.txt"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${emulator[@]}" "$arm/bin/tinyformer_kernel_check" > "$work/aarch64.txt" ||
  fail "the ARM64 kernel check under ${emulator[0]}"
TINYFORMER_KERNEL_ISA=x86-64-v2 "$x86/bin/tinyformer_kernel_check" > "$work/x86.txt" ||
  fail "the x86-64-v2 kernel check"
sed -i '1s/.*/level aarch64/' "$work/aarch64.txt"  # its kernel_isa() is "native"
/usr/bin/python3 scripts/compare_kernel_check.py "$work/x86.txt" "$work/aarch64.txt"
