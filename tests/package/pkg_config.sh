#!/usr/bin/env bash
# Builds examples/custom_op/main.cpp with nothing but the compiler and `pkg-config --cflags --libs tinyformer` of the
# installed prefix (no CMake, no -march flag), and runs it. MPI is hidden from pkg-config (a search path of every
# system .pc file except OpenMPI's), as on a machine without OpenMPI's development files: tinyformer.pc must not
# need it. With the library built with MPI, tinyformer-mpi.pc (data-parallel training) must then be refused, and
# resolve once MPI is visible again.
# usage: pkg_config.sh PREFIX EXAMPLES_DIR WORK_DIR CXX [extra compiler flags...]
set -euo pipefail
prefix="$1" examples="$2" work="$3" cxx="$4"
shift 4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/pc-without-mpi"
pcdir=$(dirname "$(find "$prefix" -name tinyformer.pc)")
IFS=: read -r -a system_dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for dir in "${system_dirs[@]}"; do
  [ -d "$dir" ] || continue
  for pc in "$dir"/*.pc; do
    [ -e "$pc" ] || continue
    case "$(basename "$pc")" in ompi* | mpi* | orte* | pmix*) continue ;; esac
    [ -e "$work/pc-without-mpi/$(basename "$pc")" ] || ln -s "$pc" "$work/pc-without-mpi/"
  done
done
hidden() { PKG_CONFIG_LIBDIR="$work/pc-without-mpi" PKG_CONFIG_PATH="$pcdir" pkg-config "$@"; }
if hidden --exists ompi-c; then fail "MPI is not hidden: ompi-c still resolves"; fi
if hidden --print-requires tinyformer | grep -E '^(ompi|mpi)'; then fail "tinyformer.pc requires MPI"; fi
flags=$(hidden --cflags --libs tinyformer) || fail "pkg-config tinyformer with MPI hidden"
if [ -f "$pcdir/tinyformer-mpi.pc" ]; then
  if hidden --exists tinyformer-mpi; then fail "tinyformer-mpi.pc resolved without MPI"; fi
  PKG_CONFIG_PATH="$pcdir" pkg-config --libs tinyformer-mpi | grep -q -- '-ltinyformer_mpi' ||
    fail "tinyformer-mpi.pc does not link libtinyformer_mpi.a"
  echo "tinyformer-mpi.pc: refused with MPI hidden, resolves with MPI: $(PKG_CONFIG_PATH="$pcdir" pkg-config --libs tinyformer-mpi)"
fi
set -x
# shellcheck disable=SC2086 # $flags is a list of flags
"$cxx" -std=c++17 -O1 "$@" "$examples/custom_op/main.cpp" -o "$work/custom_op" $flags
"$work/custom_op"
