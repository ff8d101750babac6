#!/usr/bin/env bash
# From a fresh Debian bookworm machine: install what is missing, build, and train the default config
# (configs/reverse.yaml, about half a minute), leaving runs/reverse with metrics, attention maps,
# checkpoint and report.html.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh" train
# Only what training needs: the library and the app (about 95 of the 213 objects; no tests, tools or fuzz targets).
bash "$root/scripts/build.sh" release tinyformer_app
cd "$root"
# Run again, it trains afresh (--overwrite replaces the earlier runs/reverse), unless told to --resume.
case " $* " in *" --resume "*) again=() ;; *) again=(--overwrite) ;; esac
./build/bin/tinyformer train configs/reverse.yaml "${again[@]}" "$@"
