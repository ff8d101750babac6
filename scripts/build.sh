#!/usr/bin/env bash
# Configures (once) and builds tinyformer. Incremental when nothing changed. Usage: build.sh [release|sanitize]
#   release   build/           Release, -O3 -march=native (the default)
#   sanitize  build-sanitize/  clang, -O1, AddressSanitizer + UndefinedBehaviorSanitizer, libFuzzer targets
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
preset="${1:-release}"
case "$preset" in
  release) dir="$root/build" ;;
  sanitize) dir="$root/build-sanitize" ;;
  *) echo "build.sh: unknown build '$preset' (release or sanitize)" >&2; exit 2 ;;
esac
if [ ! -f "$dir/CMakeCache.txt" ]; then
  (cd "$root" && cmake --preset "$preset" > /dev/null)
fi
cmake --build "$dir" -j "$(nproc)"
