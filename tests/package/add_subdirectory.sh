#!/usr/bin/env bash
# A parent project that takes tinyformer's source tree with add_subdirectory (as FetchContent does) and links the
# README snippet to tinyformer::tinyformer: it configures and generates; tinyformer's tests and app stay out of it,
# its -march flag does not reach the parent's target, nothing
# is compiled with -Werror, and the parent's build type is left alone. (Configure only:
# building the library again would take minutes; the examples build against the installed package.)
# usage: add_subdirectory.sh SOURCE_DIR WORK_DIR [cmake arguments...]
set -euo pipefail
source="$1" work="$2"
shift 2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/parent"
cat > "$work/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.19)
project(parent LANGUAGES CXX)
add_subdirectory("$source" tinyformer)
add_executable(snippet "$source/examples/readme_snippet/main.cpp")
target_link_libraries(snippet PRIVATE tinyformer::tinyformer)
foreach(target IN ITEMS tinyformer_tests tinyformer_app fuzz_config)
  if(TARGET \${target})
    message(FATAL_ERROR "\${target} is built inside a parent project")
  endif()
endforeach()
if(NOT CMAKE_BUILD_TYPE STREQUAL "")
  message(FATAL_ERROR "tinyformer set the parent's CMAKE_BUILD_TYPE to \${CMAKE_BUILD_TYPE}")
endif()
CMAKE
cmake -S "$work/parent" -B "$work/build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configure"; }
commands="$work/build/compile_commands.json"
snippet=$(grep -F '"command"' "$commands" | grep -F 'readme_snippet/main.cpp') || fail "no compile command for the snippet"
case "$snippet" in *-march*) fail "the parent's target got a -march flag: $snippet" ;; esac
case "$snippet" in *"$source/lib"*) ;; *) fail "the parent's target does not include $source/lib: $snippet" ;; esac
case "$snippet" in *XTENSOR_USE_XSIMD*) ;; *) fail "the parent's target lacks -DXTENSOR_USE_XSIMD: $snippet" ;; esac
grep -F '"command"' "$commands" | grep -F '/lib/tinyformer/' | grep -- '-march=native' > /dev/null ||
  fail "the library itself is not compiled with -march=native"
# A parent project's build never fails on a warning: -Wall -Wextra, and no -Werror anywhere.
grep -F '"command"' "$commands" | grep -F '/lib/tinyformer/' | grep -- '-Wall -Wextra' > /dev/null ||
  fail "the library is not compiled with -Wall -Wextra"
if grep -F '"command"' "$commands" | grep -- '-Werror' > /dev/null; then
  fail "a compile command of the parent's build has -Werror: $(grep -F '"command"' "$commands" | grep -m1 -- -Werror)"
fi
echo "configured: $(grep -c '"command"' "$commands") compile commands; the snippet's: $snippet"
