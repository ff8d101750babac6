#!/usr/bin/env bash
# A user's build never fails on a warning: the presets a user builds with (release, portable) compile the library
# with -Wall -Wextra and without -Werror; the project's own dev preset has -Werror. Configure only.
# usage: user_presets.sh SOURCE_DIR WORK_DIR
set -euo pipefail
source="$1" work="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
for preset in release portable dev; do
  build="$work/$preset"
  (cd "$source" && cmake --preset "$preset" -B "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/$preset.log" 2>&1) ||
    { cat "$work/$preset.log"; fail "cmake --preset $preset"; }
  library=$(grep -F '"command"' "$build/compile_commands.json" | grep -F '/lib/tinyformer/') ||
    fail "$preset: no compile command of the library"
  grep -q -- '-Wall -Wextra' <<< "$library" || fail "$preset: the library is not compiled with -Wall -Wextra"
  werror=$(grep -c -- '-Werror' <<< "$library" || true)
  case "$preset" in
    dev) [ "$werror" -gt 0 ] || fail "dev: the library is not compiled with -Werror" ;;
    *) [ "$werror" -eq 0 ] || fail "$preset: $werror compile commands of the library have -Werror" ;;
  esac
  echo "$preset: $(wc -l <<< "$library") compile commands of the library, $werror with -Werror"
done
rm -rf "$work"
