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
# One target: its log in build-sanitize/fuzz/<target>.log, its summary or its failure on stdout.
fuzz_one() {
  local target="$1"
  local corpus="$bin/corpus/$target"  # what the fuzzer finds; the seeds stay untouched in the source tree
  mkdir -p "$corpus"
  local dict=()
  [ -f "$root/tests/fuzz/$target.dict" ] && dict=(-dict="$root/tests/fuzz/$target.dict")
  if ! "$bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        "${dict[@]}" -artifact_prefix="$crashes/$target-" "$corpus" "$root/tests/fuzz/corpus/$target" \
        > "$bin/$target.log" 2>&1; then
    tail -60 "$bin/$target.log"
    echo "FAIL: fuzz_$target found a crash: $(ls "$crashes"/$target-* 2> /dev/null | head -1)"
    return 1
  fi
  echo "fuzz_$target: ${seconds}s from $(ls "$root/tests/fuzz/corpus/$target" | wc -l) seeds"
  grep -E "stat::number_of_executed_units|stat::new_units_added|stat::slowest_unit_time_sec|cov:" "$bin/$target.log" | tail -4
}
# As many targets at once as there are cores (each fuzzer is one process), their reports in order.
targets=(config cli npy text tokens safetensors vocab)
jobs=$(nproc)
failed=0
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  pids=()
  for target in "${targets[@]:i:jobs}"; do
    fuzz_one "$target" > "$bin/$target.summary" 2>&1 &
    pids+=($!)
  done
  for j in "${!pids[@]}"; do
    wait "${pids[$j]}" || failed=1
    cat "$bin/${targets[$((i + j))]}.summary"
  done
  [ "$failed" = 0 ] || exit 1
done
echo "PASS: fuzz_config, fuzz_cli, fuzz_npy, fuzz_text, fuzz_tokens, fuzz_safetensors and fuzz_vocab ran ${seconds}s each without a crash"
