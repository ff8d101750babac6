#!/usr/bin/env bash
# The whole test suite from a fresh Debian bookworm machine: install what is missing, build, run every test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh" test
bash "$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)"
