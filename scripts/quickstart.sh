#!/usr/bin/env bash
# From a fresh Debian bookworm machine: install what is missing, build, and train the default config
# (configs/reverse.yaml, about 20 s), leaving runs/reverse with metrics, attention maps, checkpoint and report.html.
# From a bare quiet 2-core machine, estimated at about 3 minutes (docs/build.md, "Build cost").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# Only the packages the library and the app need; `install_deps.sh build` adds the tests' libraries, MPI and Python.
bash "$root/scripts/install_deps.sh" train
# Only what training needs: the library and the app (no tests, tools, Python module or fuzz targets).
bash "$root/scripts/build.sh" release tinyformer_app
cd "$root"
# Run again, it trains afresh (--overwrite replaces the earlier runs/reverse), unless told to --resume.
case " $* " in *" --resume "*) again=() ;; *) again=(--overwrite) ;; esac
./build/bin/tinyformer train configs/reverse.yaml "${again[@]}" "$@"
