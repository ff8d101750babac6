#!/usr/bin/env bash
# Configures examples/ (every example and the README snippet, one CMake project) against an installed tinyformer
# with find_package and builds it, as a user would: only CMAKE_PREFIX_PATH is given, no -march flag. Checks that the
# package came from the prefix, that no compile command carries -march, and that headers come from the prefix, not
# from the source tree.
# usage: build_examples.sh PREFIX EXAMPLES_DIR BUILD_DIR SOURCE_DIR [cmake arguments: compiler, build type, flags...]
set -euo pipefail
prefix="$1" examples="$2" build="$3" source="$4"
shift 4
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$build"
cmake -S "$examples" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@" > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; fail "configure"; }
found=$(sed -n 's/^tinyformer_DIR:PATH=//p' "$build/CMakeCache.txt")
[ "$(realpath "$found")" = "$(realpath "$(dirname "$(find "$prefix" -name tinyformerConfig.cmake)")")" ] ||
  fail "find_package(tinyformer) found $found, not the package in $prefix"
commands="$build/compile_commands.json"
if grep -- '-march' "$commands"; then fail "a compile command has a -march flag"; fi
if grep -F "$source/lib" "$commands"; then fail "a compile command includes the source tree"; fi
grep -qF "$(realpath "$prefix")/include" "$commands" || grep -qF "$prefix/include" "$commands" ||
  fail "no compile command includes $prefix/include"
cmake --build "$build" -j "$(nproc)" || fail "build"
echo "built: $(cd "$build" && find . -type f -perm -u+x -name '[a-z]*' ! -name '*.*' | sort | tr '\n' ' ')"
