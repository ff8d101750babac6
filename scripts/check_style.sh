#!/usr/bin/env bash
# Every C++ file of the repository (lib, apps, tests, examples, cmake) against .clang-format: fails on any difference
# and names the files, with the first differing lines. Runs in a few seconds; scripts/test.sh runs it before building.
# Fix with `clang-format -i FILE` (Debian's clang-format 14, as here). Usage: check_style.sh [FILE...] (default: all)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
format=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$format" ] || { echo "check_style: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
if [ $# -gt 0 ]; then
  files=("$@")
elif git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.cc')
else
  mapfile -t files < <(find lib apps tests examples cmake -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc')
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
files=("${existing[@]}")
# One clang-format process checks them all (--dry-run --Werror: a warning per difference, non-zero exit).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bad=()
if ! "$format" --style=file --dry-run --Werror "${files[@]}" > /dev/null 2> "$log"; then
  mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: error: code should be clang-formatted' "$log" | cut -d: -f1 |
                       sort -u)
  [ ${#bad[@]} -gt 0 ] || { cat "$log"; exit 2; }  # clang-format itself failed
fi
if [ ${#bad[@]} -gt 0 ]; then
  for f in "${bad[@]}"; do
    echo "--- $f (clang-format's layout first)"
    "$format" --style=file "$f" | diff -u - "$f" | sed -n '3,14p' || true
  done
  echo "FAIL: ${#bad[@]} of ${#files[@]} C++ files differ from .clang-format: run clang-format -i on: ${bad[*]}"
  exit 1
fi
echo "PASS: ${#files[@]} C++ files match .clang-format ($("$format" --version | grep -o 'version [0-9.]*'))"
