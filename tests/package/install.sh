#!/usr/bin/env bash
# `cmake --install` of the build into a fresh prefix, and what must be there: exactly the public headers (no internal
# one, and every tinyformer header an installed header includes is installed), the static library, the tinyformer
# executable (it runs), the CMake package (config, version file, exported target with XTENSOR_USE_XSIMD and without
# -march, no path into the source or build tree) and a pkg-config file whose flags name the prefix.
# usage: install.sh BUILD_DIR PREFIX PUBLIC_HEADERS_LIST SOURCE_DIR
set -euo pipefail
build="$1" prefix="$2" expected="$3" source="$4"
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$prefix"
mkdir -p "$(dirname "$prefix")"
cmake --install "$build" --prefix "$prefix" > "$prefix.install.log" || { cat "$prefix.install.log"; fail "cmake --install"; }

installed=$(cd "$prefix/include" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
if [ "$installed" != "$(LC_ALL=C sort "$expected")" ]; then
  diff <(echo "$installed") <(LC_ALL=C sort "$expected") >&2 || true
  fail "the installed headers (<) are not the public headers (>)"
fi
while read -r inc; do
  [ -f "$prefix/include/$inc" ] || fail "an installed header includes $inc, which is not installed"
done < <(grep -rhoE '#include [<"]tinyformer/[^">]+' "$prefix/include" | sed -E 's/#include [<"]//' | sort -u)
echo "headers: $(echo "$installed" | wc -l) public headers installed, every tinyformer include among them"

lib=$(find "$prefix" -name libtinyformer.a)
[ -n "$lib" ] || fail "no libtinyformer.a under $prefix"
[ -x "$prefix/bin/tinyformer" ] || fail "no $prefix/bin/tinyformer"
"$prefix/bin/tinyformer" --help > /dev/null || fail "the installed tinyformer does not run"

config=$(find "$prefix" -name tinyformerConfig.cmake)
[ -n "$config" ] || fail "no tinyformerConfig.cmake"
cmakedir=$(dirname "$config")
for f in tinyformerConfigVersion.cmake tinyformerTargets.cmake; do
  [ -f "$cmakedir/$f" ] || fail "no $f next to tinyformerConfig.cmake"
done
targets="$cmakedir/tinyformerTargets.cmake"
grep -q 'add_library(tinyformer::tinyformer STATIC IMPORTED)' "$targets" || fail "no imported target tinyformer::tinyformer"
grep -q 'INTERFACE_COMPILE_DEFINITIONS "XTENSOR_USE_XSIMD"' "$targets" || fail "XTENSOR_USE_XSIMD is not exported"
if grep -n -- '-march' "$cmakedir"/tinyformerTargets*.cmake; then fail "the exported target passes a -march flag on"; fi
if grep -n -e "$source" -e "$build" "$cmakedir"/*.cmake; then fail "the CMake package names the source or build tree"; fi
echo "cmake package: $cmakedir"

pc=$(find "$prefix" -name tinyformer.pc)
[ -n "$pc" ] || fail "no tinyformer.pc"
flags=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs tinyformer) || fail "pkg-config tinyformer"
for want in "-I$(dirname "$pc")/../../include" -DXTENSOR_USE_XSIMD -ltinyformer -lopenblas -lyaml-cpp -lfmt -lstb; do
  case " $flags " in *" $want "*) ;; *) fail "pkg-config --cflags --libs tinyformer has no $want: $flags" ;; esac
done
case "$flags" in *-march*) fail "pkg-config passes a -march flag on: $flags" ;; esac
echo "pkg-config: $flags"
