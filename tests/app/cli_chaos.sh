#!/usr/bin/env bash
# app: chaos. A small run (reverse, d_model 32, 60 steps, a checkpoint every 5 steps, attention snapshots and
# evaluations every 10) is trained once uninterrupted; then the same run is killed with SIGKILL at 20 moments drawn
# by a seeded generator (a random fraction of half the uninterrupted run's time after each start, so the kills land
# in start-up, steps, evaluations, snapshots and saves), and resumed after each kill (trained afresh while it has no
# checkpoint yet) until it finishes; a run that finishes before all 20 kills were made is checked and started
# again from scratch. The final checkpoint's bytes and every logged loss, learning rate, gradient
# norm, validation loss and accuracy in metrics.jsonl equal the uninterrupted run's bit for bit, metrics.jsonl has
# each step once, and no temporary file survives.
set -uo pipefail
bin="$(realpath "$1")"; src="$(realpath "$2")"; work="$3"; seed="${4:-20261124}"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
args=(--set model.d_model=32 --set training.steps=60 --set schedule.warmup_steps=5 --set training.batch_size=32
      --set logging.checkpoint_interval=5 --set logging.attention_interval=10 --set logging.attention_schedule=interval
      --set training.eval_interval=10 --set training.eval_batches=2 --set data.eval_size=64 --set logging.log_interval=1
      --set training.threads=1 --quiet)

# Both runs write to "run" in their own working directory: the checkpoint holds the resolved config, out_dir included.
mkdir -p "$work/clean_wd" "$work/chaos_wd"
t0=$(date +%s.%N)
(cd "$work/clean_wd" && "$bin" train "$cfg" --out run "${args[@]}") > /dev/null 2> "$work/clean.err" \
  || { cat "$work/clean.err"; fail "uninterrupted run"; }
t1=$(date +%s.%N)
full=$(python3 -c "print(max(0.2, $t1 - $t0))")

# the 20 delays, in seconds: uniform in [0, full / 2) from the seeded generator
mapfile -t delays < <(python3 -c "
import random
r = random.Random($seed)
for _ in range(20): print(f'{r.random() * $full / 2:.3f}')
")

# same_as_clean: the finished chaos run equals the uninterrupted one (checkpoint bytes, every metrics row but the
# wall-clock tokens_per_s, each step once, the attention snapshots) and left no temporary file.
same_as_clean() {
  cmp "$work/clean_wd/run/checkpoint.safetensors" "$run/checkpoint.safetensors" \
    || fail "round $rounds: the final checkpoint differs from the uninterrupted run's"
  python3 - "$work/clean_wd/run/metrics.jsonl" "$run/metrics.jsonl" <<'PY' || fail "round $rounds: metrics.jsonl differs from the uninterrupted run's"
import json, sys
def rows(path):
    out = []
    for line in open(path):
        row = json.loads(line)
        row.pop("tokens_per_s", None)  # wall-clock speed, the one field that may differ
        out.append(row)
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
steps = [r["step"] for r in b]
if steps != sorted(set(steps)):
    sys.exit(f"steps logged more than once or out of order: {steps}")
if a != b:
    for x, y in zip(a, b):
        if x != y:
            sys.exit(f"first difference: {x} vs {y}")
    sys.exit(f"{len(a)} rows vs {len(b)}")
PY
  for f in "$work"/clean_wd/run/attention/*.npy; do
    cmp "$f" "$run/attention/$(basename "$f")" || fail "round $rounds: attention snapshot $(basename "$f") differs"
  done
  no_temporaries "$run"
}

# Start (or resume) the run; while fewer than 20 kills were made, SIGKILL it after the next delay. A round that
# finishes is compared with the uninterrupted run; if kills remain, the next round starts afresh.
kills=0 starts=0 rounds=0
run="$work/chaos_wd/run"
while :; do
  mode=(); [ -f "$run/checkpoint.safetensors" ] && mode=(--resume)
  (cd "$work/chaos_wd" && exec "$bin" train "$cfg" --out run "${args[@]}" "${mode[@]}") > /dev/null 2>> "$work/chaos.err" &
  pid=$!
  starts=$((starts + 1))
  if [ "$kills" -lt 20 ]; then
    sleep "${delays[$kills]}"
    kill -KILL "$pid" 2> /dev/null
  fi
  wait "$pid" 2> /dev/null; code=$?
  if [ "$code" -eq 137 ]; then kills=$((kills + 1)); continue; fi
  [ "$code" -eq 0 ] || { tail -5 "$work/chaos.err"; fail "start $starts (after $kills kills) exited $code"; }
  rounds=$((rounds + 1))
  same_as_clean
  [ "$kills" -ge 20 ] && break
  rm -rf "$run"
done
echo "killed $kills times in $starts starts over $rounds round(s), each equal to the uninterrupted run (${full} s)"
echo "PASS"
