#!/usr/bin/env bash
# clang-tidy with the repository's .clang-tidy (bugprone-*, performance-*, readability-function-size at 80 lines) over
# the C++ sources of lib/, apps/, tests/ and python/src/ (the bindings); any finding fails, naming file and line. Usage:
#   check_tidy.sh                 the sources changed since BASE (default: the merge-base with main, or HEAD~1 on main
#                                 itself: a merge's changes), with the uncommitted ones, file by file: before a commit
#   check_tidy.sh --base REF      the same, since REF
#   check_tidy.sh --all           every source of lib/, apps/, tests/ and python/src/ (the tools and fuzz targets too)
#                                 and every header of theirs that a source includes: what scripts/test.sh runs
#   check_tidy.sh FILE...         these files, file by file
# File by file, a changed header is checked through one source that includes it (its own .cpp when there is one), and
# findings are reported only in the files being checked. Runs nproc clang-tidy processes at once; prints the CPU time.
#
# --all checks unity batches of 40 sources a translation unit, 128 for the library and the subcommands (TINYFORMER_UNITY
# with TINYFORMER_UNITY_BATCH=40 and TINYFORMER_UNITY_BATCH_LIBRARY=128 in its own configuration, so the 68 unit-test
# sources are two units and the library one: TINYFORMER_COLD_O1=OFF puts its cold sources with the others, and
# TINYFORMER_PYTHON=ON adds the bindings, one batch (and, with GCC 12, the option that takes self_attention.cpp out of
# the library's batch); the release build's batches are of 32 and 16) and the sources kept out of them (main.cpp,
# dist_mpi.cpp), with findings reported in every file of lib/, apps/, tests/, python/src/ (each once): a finding in one
# included into a batch is reported at its own file and line. Most of clang-tidy's time on a source goes to the headers
# it includes (xtensor's are parsed and their templates matched in each: 74-80% of it is the checks' matching, 20-26%
# parsing), so a batch costs about what one or two sources cost alone. Measured with Debian's clang-tidy 14 on the
# 2-core machine while other builds ran (load about 10), CPU seconds (user + sys): lib's batch of ops/unary.cpp and the
# 7 optim sources took 50 s, three of them alone 22-43 s each (adam 22, clip 24, unary 43); the whole tree took 464-466
# CPU s in 37 translation units with batches of 8, 391 s in 27 with batches of 16 (load 5-8), where file by file it is
# about an hour of CPU. On the quiet machine (27 Nov, one run each): 407 CPU s and 209 s with the library's batches of
# 16 (28 units), 375 CPU s and 192 s with 64 (24 units). The tests in batches of 32 instead of 16, back to back on the
# quiet machine (28 Nov): 411 against 422 CPU s, 23 units against 25 (tests/support/openblas_product.cpp keeps
# <cblas.h>, which conflicts with xtensor-blas's declarations, out of the batches). The tests in 40 and the library in
# 128, each unit alone, two at once (28 Nov): the tests 54.0 CPU s in 2 units against 62.8 in 3, the library's hot code
# 40.0 in 1 against 58.9 in 2. A file-local name that two sources of a batch both define, or a name that a
# using-directive of one source makes ambiguous in another, is a clang-diagnostic-error here even when the build's
# smaller batches keep them apart: rename or qualify it.
# Needs a compile database: build-tidy/ (file by file) or build-tidy-unity/ (--all), configured here each run (about a
# second when nothing changed; nothing is compiled), so that new sources and changed flags are in it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "check_tidy: clang-tidy not found (apt-get install clang-tidy)" >&2; exit 2; }

mode=changed
base=""
files=()
case "${1:-}" in
  --all) mode=all ;;
  --base) base="${2:?check_tidy: --base needs a git revision}" ;;
  "") ;;
  -*) echo "check_tidy: unknown option '$1' (--all, --base REF, or files)" >&2; exit 2 ;;
  *) mode=files; files=("$@") ;;
esac

# The compile database: file by file (a unity build's database holds its batches, not the sources), or for --all a
# unity build's, in batches of 32.
if [ "$mode" = all ]; then db="$root/build-tidy-unity"; unity=ON; else db="$root/build-tidy"; unity=OFF; fi
mkdir -p "$db"
if ! cmake --preset release -B "$db" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DTINYFORMER_UNITY=$unity \
     -DTINYFORMER_UNITY_BATCH=40 -DTINYFORMER_UNITY_BATCH_LIBRARY=128 -DTINYFORMER_COLD_O1=OFF \
     -DTINYFORMER_PYTHON=ON > "$db/configure.log" 2>&1; then
  cat "$db/configure.log" >&2
  exit 2
fi
# clang-tidy checks a source once per compile command of it: the checks read a copy of the database that keeps the
# first command of each source ($db/first/). (tests/fuzz/standalone_main.cpp was compiled into each of the seven fuzz
# targets, 20 CPU s for seven checks of one file; the seven are one executable since, and one unity batch.)
mkdir -p "$db/first"
/usr/bin/python3 -c '
import json, sys
seen, first = set(), []
for entry in json.load(open(sys.argv[1])):
    if entry["file"] not in seen:
        seen.add(entry["file"])
        first.append(entry)
json.dump(first, open(sys.argv[2], "w"), indent=1)
' "$db/compile_commands.json" "$db/first/compile_commands.json"
# The translation units of the database under lib/, apps/, tests/, python/src/, and for --all the unity batches of them
# (not the generated header checks of tests/package, not the build's other generated files), as absolute paths.
mapfile -t known < <(/usr/bin/python3 -c '
import json, os, sys
root, db = sys.argv[2], sys.argv[3]
for entry in json.load(open(sys.argv[1])):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    batch = os.path.relpath(path, db).split("/")[0] in ("lib", "apps", "tests", "python") and "/Unity/unity_" in path
    ours = rel.split("/")[0] in ("lib", "apps", "tests") or rel.startswith("python/src/")
    if batch or (ours and not rel.startswith("tests/package/")):
        print(path)
' "$db/first/compile_commands.json" "$root" "$db" | sort -u)

sources=()
headers=()
if [ "$mode" = all ]; then
  sources=("${known[@]}")
  # Every source must be checked: a translation unit itself, or included into a batch. (tests/tools/kernel_isa_check.cpp
  # is built by the portable preset only; tests/package/ holds the examples built against the installed library.)
  mapfile -t covered < <({ printf '%s\n' "${sources[@]}" | grep -v '/Unity/unity_'
                           grep -hoE '^#include "[^"]+"' $(printf '%s\n' "${sources[@]}" | grep '/Unity/unity_') |
                             cut -d'"' -f2; } | sed "s|^$root/||" | sort -u)
  missing=$(comm -23 <(git ls-files -- 'lib/*.cpp' 'apps/*.cpp' 'tests/*.cpp' 'python/src/*.cpp' |
                         grep -v '^tests/package/' |
                         grep -vxF tests/tools/kernel_isa_check.cpp | sort) <(printf '%s\n' "${covered[@]}"))
  if [ -n "$missing" ]; then
    echo "check_tidy: not in the compile database of $db, so not checked:" $missing >&2
    exit 2
  fi
  filter="^$root/(lib|apps|tests|python/src)/"
else
  if [ "$mode" = changed ]; then
    if [ -z "$base" ]; then
      if git rev-parse -q --verify main > /dev/null && [ "$(git merge-base HEAD main)" != "$(git rev-parse HEAD)" ]; then
        base=$(git merge-base HEAD main)
      else
        base=HEAD~1
      fi
    fi
    mapfile -t files < <({ git diff --name-only --diff-filter=d "$base" -- 'lib/*' 'apps/*' 'tests/*' 'python/src/*'
                           git ls-files --others --exclude-standard -- 'lib/*' 'apps/*' 'tests/*' 'python/src/*'; } |
                         grep -E '\.(cpp|hpp)$' | grep -v '^tests/package/' | sort -u || true)
  fi
  # A here-string, not a pipe: under pipefail, grep -q leaving at an early match could end printf by SIGPIPE.
  is_known() { grep -qxF "$root/$1" <<< "$(printf '%s\n' "${known[@]}")"; }
  # Each file to a source that compiles it; a header through a source that includes it.
  for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "check_tidy: no such file: $f" >&2; exit 2; }
    f=$(realpath --relative-to="$root" "$f")
    if [[ "$f" == *.hpp ]]; then
      headers+=("$f")
      if is_known "${f%.hpp}.cpp"; then
        sources+=("$root/${f%.hpp}.cpp")
        continue
      fi
      user=$(grep -lF -e "\"${f#lib/}\"" -e "\"${f#tests/}\"" -e "\"$(basename "$f")\"" "${known[@]}" 2> /dev/null | head -1 || true)
      if [ -n "$user" ]; then sources+=("$user"); else echo "check_tidy: $f: no source includes it, not checked"; fi
    elif is_known "$f"; then
      sources+=("$root/$f")
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
fi

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
start=$(date +%s)
printf '%s\n' "${sources[@]}" |
  xargs -P "$(nproc)" -I{} sh -c '"$1" --config-file="$6/.clang-tidy" -p "$2" --quiet \
                                     --extra-arg=-Wno-unknown-warning-option \
                                     --header-filter="$3" "$4" > "$5/$(echo "$4" | tr / _).log" 2>&1 ||
                                   echo "$4" >> "$5/failed"' sh "$tidy" "$db/first" "$filter" {} "$log" "$root"
elapsed=$(($(date +%s) - start))
# CPU seconds (user + sys) of this script's finished children: the clang-tidy processes.
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($16 + $17) / hz}' /proc/$$/stat)
what="${#sources[@]} translation units"
[ "$mode" = all ] && what="$what (${#covered[@]} sources and the headers they include)"
# Each finding once (a header's is reported by every unit that includes it), its path relative to the repository. A
# unity batch's own #include lines of .cpp files are what a batch is (bugprone-suspicious-include there is dropped;
# in a source it is kept).
findings=$(cat "$log"/*.log | grep -E ': (warning|error): ' | grep -v "^$db/.*\[bugprone-suspicious-include" |
             sed "s|^$root/||" | sort -u || true)
broken=0
if [ -f "$log/failed" ]; then
  while read -r f; do  # a unit that failed without a finding: clang-tidy itself failed
    out="$log/$(echo "$f" | tr / _).log"
    if ! grep -qE ': (warning|error): ' "$out"; then
      echo "check_tidy: clang-tidy failed on $f:"
      tail -5 "$out"
      broken=$((broken + 1))
    fi
  done < <(sort "$log/failed")
fi
if [ -n "$findings" ] || [ "$broken" -gt 0 ]; then
  [ -z "$findings" ] || echo "$findings"
  n=$(printf '%s' "$findings" | grep -c . || true)
  echo "FAIL: $n clang-tidy finding(s) in $what (${elapsed} s, ${cpu} CPU s);" \
    "fix them, or for a false positive add // NOLINT(check-name): reason"
  exit 1
fi
echo "PASS: $what clean under .clang-tidy (${elapsed} s, ${cpu} CPU s;" \
  "$("$tidy" --version | grep -o 'version [0-9.]*'))"
