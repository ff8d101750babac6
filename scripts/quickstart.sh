#!/usr/bin/env bash
# From a fresh Debian bookworm machine: install what is missing, build, and run the default example.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh" build
bash "$root/scripts/build.sh"
"$root/build/bin/tinyformer" demo
