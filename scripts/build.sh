#!/usr/bin/env bash
# Configures (once) and builds tinyformer. Incremental when nothing changed.
# Usage: build.sh [release|dev|sanitize|portable|aarch64] [TARGET...]   (default: everything; quickstart.sh builds only
# tinyformer_app)
#   release   build/           Release, -O3 -march=native (the default)
#   dev       build/           the same with warnings as errors (-Werror), for whoever changes the code
#   sanitize  build-sanitize/  clang, -O1, AddressSanitizer + UndefinedBehaviorSanitizer, libFuzzer targets
#   portable  build-portable/  Release for any x86-64-v2 CPU, the own kernels also for AVX2 and AVX-512 (docs/build.md)
#   aarch64   build-aarch64/   Linux on ARM64 cross-compiled on x86-64, its tests under qemu-aarch64
#                              (install_deps.sh aarch64 first; docs/platforms.md)
# With ccache installed (install_deps.sh installs Debian's), a new build directory compiles through it: a rebuild
# of unchanged sources, in this or another checkout (CCACHE_BASEDIR), takes the objects from the cache.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset="${1:-release}"
shift || true
case "$preset" in
  release | dev) dir="$root/build" ;;
  sanitize) dir="$root/build-sanitize" ;;
  portable) dir="$root/build-portable" ;;
  aarch64) dir="$root/build-aarch64" ;;
  *) echo "build.sh: unknown build '$preset' (release, dev, sanitize, portable or aarch64)" >&2; exit 2 ;;
esac
# Warnings are errors in the project's own checks only: the dev and sanitize presets, and any build under
# TINYFORMER_WERROR=ON (scripts/test.sh sets it). A tree configured the other way is configured again.
case "$preset" in
  dev | sanitize) werror="${TINYFORMER_WERROR:-ON}" ;;
  *) werror="${TINYFORMER_WERROR:-OFF}" ;;
esac
cached_werror() { sed -n 's/^TINYFORMER_WERROR:BOOL=//p' "$dir/CMakeCache.txt"; }
if [ ! -f "$dir/CMakeCache.txt" ]; then
  launcher=()
  if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  (cd "$root" && cmake --preset "$preset" "${launcher[@]}" -DTINYFORMER_WERROR="$werror" > /dev/null)
elif [ /var/lib/dpkg/status -nt "$dir/CMakeCache.txt" ] || [ "$(cached_werror)" != "$werror" ]; then
  # Packages were installed since the last configure (install_deps.sh build after quickstart.sh): configure again,
  # so that what was optional and missing then (MPI, the Python module, the test suite) is found and built. Or the
  # tree was last configured with the other warning setting.
  (cd "$root" && cmake --preset "$preset" -DTINYFORMER_WERROR="$werror" > /dev/null)
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
