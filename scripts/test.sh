#!/usr/bin/env bash
# The whole test suite from a fresh Debian bookworm machine: install what is missing, build, run every test;
# then the same suite again built with clang under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# seven fuzz targets for 20 s each. Usage: test.sh [--release-only] (skips the sanitizer build and fuzzing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# Runs one step and says how long it took, in wall time and in CPU time (user + sys of all its processes): where CI's
# time goes (its budget is 45 minutes on 2 cores, so about 5400 CPU s at the most).
cpu_format='%0U+%0S'
step() {
  local start=$SECONDS cpu
  { cpu=$( { TIMEFORMAT=$cpu_format; time "$@" >&3 2>&4; } 2>&1); } 3>&1 4>&2
  echo "test.sh: '${*#"$root/"}' took $((SECONDS - start)) s and $((cpu)) CPU s, $SECONDS s in all" >&2
}
# Work that needs no result of the steps before it runs in the background, in a process group of its own (set -m; not
# a session of its own, which would put it in an autogroup of its own, where its priority would count for nothing
# against the steps in front), its output in build-logs/NAME.log, at one of two priorities:
#   behind NAME CMD...     nice 19: it takes the cores the steps in front leave idle (a build's links and last batches,
#                          tests that sleep or wait for a process), and they lose next to nothing to it;
#   idle NAME CMD...       SCHED_IDLE (chrt --idle), below even nice 19: clang-tidy, which nothing waits for until the
#                          end, yields to the sanitizer build and then fills what the sanitizer suite and fuzzing leave.
# `join NAME` waits for it, prints its log's last lines and fails as it failed. Leaving early (a failed step) stops
# what runs in the background.
background=()
logs="$root/build-logs"
mkdir -p "$logs"
launch() {
  local priority="$1" name="$2"
  shift 2
  local prefix=()
  case "$priority" in
    behind) prefix=(nice -n 19) ;;
    idle) prefix=(chrt --idle 0) ;;
  esac
  set -m
  "${prefix[@]}" bash -c 'TIMEFORMAT="took %0R s and %0U+%0S CPU s"; time "$@"' "$name" "$@" \
    < /dev/null > "$logs/$name.log" 2>&1 &
  set +m
  background+=("$!")
  eval "pid_${name//-/_}=$!"
}
behind() { launch behind "$@"; }
idle() { launch idle "$@"; }
join() {
  local name="$1" var="pid_${1//-/_}" start=$SECONDS code=0
  wait "${!var}" || code=$?
  if [ "$code" -ne 0 ]; then
    tail -100 "$logs/$name.log" >&2
    echo "test.sh: '$name' (in the background, log $logs/$name.log) failed with status $code" >&2
    exit "$code"
  fi
  tail -3 "$logs/$name.log" >&2
  echo "test.sh: '$name' ran in the background, waited $((SECONDS - start)) s for it, $SECONDS s in all" >&2
}
trap 'for pid in "${background[@]}"; do kill -TERM -- "-$pid" 2> /dev/null || true; done' EXIT
step bash "$root/scripts/install_deps.sh" test
step bash "$root/scripts/check_style.sh"  # seconds: the layout of every C++ file against .clang-format
# clang-tidy (.clang-tidy) over every source of lib/, apps/ and tests/ and the headers they include, in 9 units (the
# library in one, the tests in batches of 40): about 3 CPU minutes (184 CPU s alone on the quiet 2-core machine, 226-246
# in the runs of scripts/test.sh), docs/build.md, "Build cost". It is joined last. Before a commit,
# check_tidy.sh checks what changed.
idle tidy bash "$root/scripts/check_tidy.sh" --all
# The portable build's kernels on a CPU without AVX (qemu-x86_64 -cpu Nehalem): only the target the check needs, the
# three levels' kernels and four small files (53 s of CPU from an empty cache, 47 user + 6 sys, measured on the
# 2-core AVX2 machine; the run itself is under 1 s). The whole portable build is not repeated here.
x86_64=0
[ "$(uname -m)" = x86_64 ] && x86_64=1
[ $x86_64 -eq 0 ] || behind portable bash -c \
  'bash "$0/scripts/build.sh" portable tinyformer_kernel_check && bash "$0/scripts/qemu_portable.sh"' "$root"
# The compile matrix (x86-64 only; docs/platforms.md): CI's 7 targets (5 with GCC, 2 AVX-512 ones with clang;
# check_matrix.py's CI_TARGETS), warnings as errors, compile only, every source under ops/kernels/ (the dispatched
# SIMD kernels, where GCC 12's AVX-512 warning was) and tensor/ (GEMM, the allocator, threads), each alone: about 50 CPU
# s a build from an empty cache. All 12 targets, or the whole library (about 180 CPU s a build), by hand:
# `scripts/check_matrix.py` without --ci, or without --under. Every target's line, its warnings and CPU time are
# printed at its join.
[ $x86_64 -eq 0 ] ||
  behind matrix /usr/bin/python3 "$root/scripts/check_matrix.py" --ci --under ops/kernels --under tensor
# Linux on ARM64 (x86-64 hosts; docs/platforms.md): cross-compiled, its CTest subset (the preset aarch64: the ops,
# gradient checks, seeds, checkpoints, modules and tensors, and reverse.yaml shortened; 289 tests) under qemu-aarch64,
# its kernels against x86-64's, and at the end its front ends (the CLI, the Python module in the arm64 python3, the
# C++ runs API) under qemu: scripts/qemu_fronts.sh.
if [ $x86_64 -eq 1 ]; then
  step bash "$root/scripts/install_deps.sh" aarch64
  behind aarch64 bash -c 'TINYFORMER_WERROR=ON bash "$0/scripts/build.sh" aarch64 tinyformer_tests \
    tinyformer_kernel_check tinyformer_app tinyformer_python tinyformer_test_tools && cd "$0" &&
    ctest --preset aarch64 -j "$(nproc)"' "$root"
fi
step bash "$root/scripts/build.sh" dev
# The sanitizer build (clang) behind the release suite and the portable check, ahead of clang-tidy
[ "${1:-}" = "--release-only" ] || behind sanitize-build bash "$root/scripts/build.sh" sanitize
# The presets run each test on one thread (OMP_NUM_THREADS=1, which training.threads auto and bench read), nproc tests
# at once: two tests of two threads each on 2 cores took turns, and the release suite took 343 s (640 CPU s) where
# one thread a test took 252 s (460 CPU s), the sanitizer suite 292 s against 260 s (docs/build.md). Tests of
# more threads ask for them.
step bash -c 'cd "$0" && ctest --preset release -j "$(nproc)"' "$root"
[ $x86_64 -eq 0 ] || join portable
platforms() {  # the matrix's lines, the ARM64 suite's summary and its kernels against x86-64's
  [ $x86_64 -eq 1 ] || return 0
  join matrix
  grep '^compile matrix' "$logs/matrix.log" >&2
  join aarch64
  step bash "$root/scripts/qemu_aarch64.sh"
  step bash "$root/scripts/qemu_fronts.sh"
}
[ "${1:-}" = "--release-only" ] && { platforms; join tidy; exit 0; }
join sanitize-build
# Under the sanitizers every test runs except those labelled release-only, whose point the sanitizers cannot change
# (learning, timing, repetitions of one property; tests/CMakeLists.txt says which and why).
step bash -c 'cd "$0" && ctest --preset sanitize -j "$(nproc)" -LE release-only' "$root"
# 20 s of a core a target, as many fuzzers at once as there are cores (on 2 cores three rounds of two targets, then the
# seventh as two processes of 10 s: about 75 s with the corpora's replay), keeps CI within its budget; the corpora in tests/fuzz/corpus are replayed by CTest in both builds, and
# `bash scripts/fuzz.sh 600` fuzzes longer by hand.
step bash "$root/scripts/fuzz.sh" "${TINYFORMER_FUZZ_SECONDS:-20}"
platforms
join tidy
