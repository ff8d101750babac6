#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy (bugprone-*, performance-*, readability-function-size at 80 lines) over
# the C++ sources of lib/, apps/ and tests/; any finding fails, naming file and line. Usage:
#   check_tidy.sh                 the sources changed since BASE (default: the merge-base with main, or HEAD~1 on main
#                                 itself: a merge's changes), with the uncommitted ones: before a commit
#   check_tidy.sh --base REF      the same, since REF
#   check_tidy.sh --listed        the sources in scripts/tidy_files.txt: those found clean so far, which stay clean
#                                 (what scripts/test.sh runs; a source joins the list once it is clean)
#   check_tidy.sh --all           every source (lib, apps, tests, fuzz targets)
#   check_tidy.sh FILE...         these files
# A changed header is checked through one source that includes it (its own .cpp when there is one), and findings are
# reported only in the files being checked. Runs nproc clang-tidy processes at once; prints the CPU time it took.
# Cost, measured with Debian's clang-tidy 14: 10-25 CPU seconds a source (xtensor's headers are parsed and matched
# in every one; 12 s for config/config_yaml.cpp, 17 s for nn/gpt.cpp, 18 s for train/trainer.cpp, 25 s for
# ops/unary.cpp), so --all (164 sources) is about an hour of CPU and stays out of CI, which checks the list.
# Needs build-tidy/compile_commands.json: configured here each run (about a second when nothing changed; nothing is
# compiled), so that new sources and changed flags are in it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "check_tidy: clang-tidy not found (apt-get install clang-tidy)" >&2; exit 2; }
db="$root/build-tidy"
mkdir -p "$db"
# File by file (TINYFORMER_UNITY=OFF): a unity build's database holds its batches, not the sources.
if ! cmake --preset release -B "$db" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DTINYFORMER_UNITY=OFF > "$db/configure.log" 2>&1; then
  cat "$db/configure.log" >&2
  exit 2
fi
# The sources clang-tidy can check: those of the compile database under lib/, apps/, tests/ (not the generated
# header checks of tests/package, not the build's generated files).
mapfile -t known < <(/usr/bin/python3 -c '
import json, os, sys
root = sys.argv[2]
for entry in json.load(open(sys.argv[1])):
    path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
    if path.split("/")[0] in ("lib", "apps", "tests") and not path.startswith("tests/package/"):
        print(path)
' "$db/compile_commands.json" "$root" | sort -u)

mode=changed
base=""
files=()
case "${1:-}" in
  --all) mode=all ;;
  --listed) mode=files; mapfile -t files < <(grep -vE '^(#|$)' "$root/scripts/tidy_files.txt") ;;
  --base) base="${2:?check_tidy: --base needs a git revision}" ;;
  "") ;;
  -*) echo "check_tidy: unknown option '$1' (--all, --base REF, or files)" >&2; exit 2 ;;
  *) mode=files; files=("$@") ;;
esac
if [ "$mode" = changed ]; then
  if [ -z "$base" ]; then
    if git rev-parse -q --verify main > /dev/null && [ "$(git merge-base HEAD main)" != "$(git rev-parse HEAD)" ]; then
      base=$(git merge-base HEAD main)
    else
      base=HEAD~1
    fi
  fi
  mapfile -t files < <({ git diff --name-only --diff-filter=d "$base" -- 'lib/*' 'apps/*' 'tests/*'
                         git ls-files --others --exclude-standard -- 'lib/*' 'apps/*' 'tests/*'; } |
                       grep -E '\.(cpp|hpp)$' | grep -v '^tests/package/' | sort -u || true)
elif [ "$mode" = all ]; then
  files=("${known[@]}")
fi

is_known() { printf '%s\n' "${known[@]}" | grep -qxF "$1"; }
# Each file to a source that compiles it; a header through a source that includes it.
sources=()
headers=()
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "check_tidy: no such file: $f" >&2; exit 2; }
  if [[ "$f" == *.hpp ]]; then
    headers+=("$f")
    if is_known "${f%.hpp}.cpp"; then
      sources+=("${f%.hpp}.cpp")
      continue
    fi
    user=$(grep -lF -e "\"${f#lib/}\"" -e "\"$(basename "$f")\"" "${known[@]}" 2> /dev/null | head -1 || true)
    if [ -n "$user" ]; then sources+=("$user"); else echo "check_tidy: $f: no source includes it, not checked"; fi
  elif is_known "$f"; then
    sources+=("$f")
  elif [ "${1:-}" = --listed ]; then  # the list is CI's: every source of it must be checked
    echo "check_tidy: $f (scripts/tidy_files.txt) is not in the compile database of $db" >&2
    exit 2
  else
    echo "check_tidy: $f: not in the compile database, not checked"
  fi
done
if [ ${#sources[@]} -eq 0 ]; then
  echo "PASS: no C++ source to check${base:+ (none changed since $base)}"
  exit 0
fi
mapfile -t sources < <(printf '%s\n' "${sources[@]}" | sort -u)
# Findings only in the files being checked: the sources themselves, and the headers named (escaped for the regex).
filter='^$'
if [ ${#headers[@]} -gt 0 ]; then
  filter="^$root/($(printf '%s\n' "${headers[@]}" | sed 's/[.+]/\\&/g' | paste -sd'|'))\$"
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
start=$(date +%s)
printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -I{} sh -c '"$1" -p "$2" --quiet --extra-arg=-Wno-unknown-warning-option --header-filter="$3" "$4" > "$5/$(echo "$4" | tr / _).log" 2>&1 ||
                                   echo "$4" >> "$5/failed"' sh "$tidy" "$db" "$filter" {} "$log"
elapsed=$(($(date +%s) - start))
# CPU seconds (user + sys) of this script's finished children: the clang-tidy processes.
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($16 + $17) / hz}' /proc/$$/stat)
if [ -f "$log/failed" ]; then
  n=0
  while read -r f; do
    out="$log/$(echo "$f" | tr / _).log"
    findings=$(grep -E ': (warning|error): ' "$out" || true)
    if [ -n "$findings" ]; then
      echo "$findings"
      n=$((n + $(echo "$findings" | wc -l)))
    else
      echo "check_tidy: clang-tidy failed on $f:"
      tail -5 "$out"
    fi
  done < <(sort "$log/failed")
  echo "FAIL: $n clang-tidy finding(s) in $(wc -l < "$log/failed") of ${#sources[@]} sources (${elapsed} s," \
    "${cpu} CPU s); fix them, or for a false positive add // NOLINT(check-name): reason"
  exit 1
fi
echo "PASS: ${#sources[@]} C++ sources clean under .clang-tidy (${elapsed} s, ${cpu} CPU s;" \
  "$("$tidy" --version | grep -o 'version [0-9.]*'))"
