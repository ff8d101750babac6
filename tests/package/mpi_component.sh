#!/usr/bin/env bash
# MPI is the package's component mpi and nothing else needs it: the generated CMake files hold no literal if(ON) or
# if(OFF); find_package(tinyformer) configures with MPI hidden from CMake (CMAKE_DISABLE_FIND_PACKAGE_MPI); and,
# when the library was built with MPI, find_package(tinyformer COMPONENTS mpi) gives tinyformer::mpi with MPI
# visible and fails with MPI hidden. Configure only (a few seconds); build_examples.sh builds the examples with MPI
# hidden, and pkg_config.sh does the same for pkg-config.
# usage: mpi_component.sh PREFIX WORK_DIR [cmake arguments...]
set -euo pipefail
prefix="$1" work="$2"
shift 2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
cmakedir=$(dirname "$(find "$prefix" -name tinyformerConfig.cmake)")
if grep -nE 'if\((ON|OFF|TRUE|FALSE|YES|NO|0|1)\)' "$cmakedir"/*.cmake; then fail "a literal if() in the generated files"; fi

consumer() {  # consumer NAME FIND_PACKAGE_ARGS LINK_TARGETS
  mkdir -p "$work/$1"
  printf 'int main() { return 0; }\n' > "$work/$1/main.cpp"
  cat > "$work/$1/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.19)
project(consumer LANGUAGES CXX)
find_package(tinyformer REQUIRED $2)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE $3)
CMAKE
}
configure() {  # configure NAME [cmake arguments...]
  local name="$1"
  shift
  cmake -S "$work/$name" -B "$work/$name/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    "$@" > "$work/$name.log" 2>&1
}

consumer plain "" tinyformer::tinyformer
configure plain -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "$@" || { cat "$work/plain.log"; fail "find_package(tinyformer) with MPI hidden"; }
if grep -q "MPI_C_FOUND:BOOL=TRUE\|MPI_C_LIB_NAMES" "$work/plain/build/CMakeCache.txt"; then
  fail "find_package(tinyformer) looked for MPI"
fi
echo "ok: find_package(tinyformer) configures with MPI hidden and does not look for it"

if [ -f "$cmakedir/tinyformerMpiTargets.cmake" ]; then
  consumer parallel "COMPONENTS mpi" "tinyformer::tinyformer tinyformer::mpi"
  configure parallel "$@" || { cat "$work/parallel.log"; fail "find_package(tinyformer COMPONENTS mpi)"; }
  echo "ok: find_package(tinyformer COMPONENTS mpi) gives tinyformer::mpi"
  rm -rf "$work/parallel/build"
  if configure parallel -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON "$@"; then
    fail "find_package(tinyformer COMPONENTS mpi) succeeded with MPI hidden"
  fi
  echo "ok: find_package(tinyformer REQUIRED COMPONENTS mpi) fails with MPI hidden"
fi
