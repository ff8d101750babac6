#!/usr/bin/env bash
# Fuzzes what a user hands tinyformer (the config and its --set overrides, the command line, .npy files, text and
# tokens data, safetensors checkpoints, the vocabulary in their metadata) with libFuzzer, each target for SECONDS (default 60), starting from the seed corpus in tests/fuzz/corpus/<target>. Needs the clang sanitize build
# (cmake --preset sanitize; scripts/test.sh makes it). A crash, a sanitizer report or a timeout stops the
# script with a non-zero exit and leaves the input in build-sanitize/fuzz/crashes/: fix the bug, then add the
# input to tests/fuzz/regressions/<target>/ so that CTest replays it from then on.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
bin="$root/build-sanitize/fuzz"
crashes="$bin/crashes"
mkdir -p "$crashes"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# One target, fuzzed by WORKERS processes (default 1) at once for SECONDS / WORKERS each, sharing its corpus directory
# (libFuzzer reloads it and picks up what the others found): their logs in build-sanitize/fuzz/<target>.log (the
# second worker's in <target>.2.log, ...), the summary or the failure on stdout.
fuzz_one() {
  local target="$1" workers="${2:-1}"
  local corpus="$bin/corpus/$target"  # what the fuzzer finds; the seeds stay untouched in the source tree
  local each=$(((seconds + workers - 1) / workers)) pids=() logs=() failed=0
  mkdir -p "$corpus"
  local dict=()
  [ -f "$root/tests/fuzz/$target.dict" ] && dict=(-dict="$root/tests/fuzz/$target.dict")
  for ((w = 1; w <= workers; ++w)); do
    local log="$bin/$target.log"
    [ "$w" = 1 ] || log="$bin/$target.$w.log"
    "$bin/fuzz_$target" -max_total_time="$each" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      "${dict[@]}" -artifact_prefix="$crashes/$target-" "$corpus" "$root/tests/fuzz/corpus/$target" > "$log" 2>&1 &
    pids+=($!)
    logs+=("$log")
  done
  for w in "${!pids[@]}"; do
    wait "${pids[$w]}" && continue
    failed=1
    tail -60 "${logs[$w]}"
  done
  if [ "$failed" != 0 ]; then
    echo "FAIL: fuzz_$target found a crash: $(ls "$crashes/$target"-* 2> /dev/null | head -1)"
    return 1
  fi
  local how="${seconds}s"
  [ "$workers" = 1 ] || how="$workers processes x ${each}s"
  echo "fuzz_$target: $how from $(ls "$root/tests/fuzz/corpus/$target" | wc -l) seeds"
  for log in "${logs[@]}"; do
    grep -E "stat::number_of_executed_units|stat::new_units_added|stat::slowest_unit_time_sec|cov:" "$log" | tail -4
  done
}
# As many fuzzer processes at once as there are cores, their reports in order. A last round with fewer targets than
# cores shares them out: on 2 cores the seventh target runs as 2 processes of 10 s instead of one of 20 s beside an
# idle core, the same CPU time in 10 s less.
targets=(config cli npy text tokens safetensors vocab)
jobs=$(nproc)
failed=0
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  round=("${targets[@]:i:jobs}")
  workers=$((jobs / ${#round[@]}))
  pids=()
  for target in "${round[@]}"; do
    fuzz_one "$target" "$workers" > "$bin/$target.summary" 2>&1 &
    pids+=($!)
  done
  for j in "${!pids[@]}"; do
    wait "${pids[$j]}" || failed=1
    cat "$bin/${round[$j]}.summary"
  done
  [ "$failed" = 0 ] || exit 1
done
echo "PASS: fuzz_config, fuzz_cli, fuzz_npy, fuzz_text, fuzz_tokens, fuzz_safetensors and fuzz_vocab were fuzzed ${seconds}s of a core each without a crash"
