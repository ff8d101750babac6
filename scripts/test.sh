#!/usr/bin/env bash
# The whole test suite from a fresh Debian bookworm machine: install what is missing, build, run every test;
# then the same suite again built with clang under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# three fuzz targets for 60 s each. Usage: test.sh [--release-only] (skips the sanitizer build and fuzzing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh" test
bash "$root/scripts/build.sh" release
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)")
[ "${1:-}" = "--release-only" ] && exit 0
bash "$root/scripts/build.sh" sanitize
(cd "$root" && ctest --preset sanitize -j "$(nproc)")
bash "$root/scripts/fuzz.sh" "${TINYFORMER_FUZZ_SECONDS:-60}"
