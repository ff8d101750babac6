#!/usr/bin/env bash
# Builds examples/custom_op/main.cpp with nothing but the compiler and `pkg-config --cflags --libs tinyformer` of the
# installed prefix (no CMake, no -march flag), and runs it.
# usage: pkg_config.sh PREFIX EXAMPLES_DIR WORK_DIR CXX [extra compiler flags...]
set -euo pipefail
prefix="$1" examples="$2" work="$3" cxx="$4"
shift 4
rm -rf "$work"
mkdir -p "$work"
pcdir=$(dirname "$(find "$prefix" -name tinyformer.pc)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs tinyformer)
set -x
# shellcheck disable=SC2086 # $flags is a list of flags
"$cxx" -std=c++17 -O1 "$@" "$examples/custom_op/main.cpp" -o "$work/custom_op" $flags
"$work/custom_op"
