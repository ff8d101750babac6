#!/usr/bin/env bash
# app: SIGINT during training finishes the step, writes the checkpoint atomically, exits 130, and --resume continues;
# SIGHUP (a closed terminal) does the same.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
"$bin" train "$src/configs/reverse.yaml" --out "$work/run" --set training.steps=100000 \
  --set logging.checkpoint_interval=0 --set logging.attention_interval=0 --set schedule.warmup_steps=5 > "$work/log.txt" 2>&1 &
pid=$!
for _ in $(seq 1 100); do  # wait until training runs (a metrics line was written)
  [ -s "$work/run/metrics.jsonl" ] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"; code=$?
[ "$code" -eq 130 ] || { echo "FAIL: exit code $code, expected 130"; cat "$work/log.txt"; exit 1; }
[ -f "$work/run/checkpoint.safetensors" ] || { echo "FAIL: no checkpoint after SIGINT"; exit 1; }
ls "$work/run" | grep -q '\.tmp\.' && { echo "FAIL: temporary file left behind"; exit 1; }
grep -q "interrupted after step" "$work/log.txt" || { echo "FAIL: no interruption message"; cat "$work/log.txt"; exit 1; }
step=$(grep -o 'interrupted after step [0-9]*' "$work/log.txt" | grep -o '[0-9]*$')
"$bin" train "$src/configs/reverse.yaml" --out "$work/run" --resume --set training.steps=$((step + 5)) \
  --set logging.checkpoint_interval=0 --set logging.attention_interval=0 --set schedule.warmup_steps=5 > "$work/resume.txt" 2>&1 \
  || { echo "FAIL: resume failed"; cat "$work/resume.txt"; exit 1; }
grep -q "from step $step" "$work/resume.txt" || { echo "FAIL: resume did not start at step $step"; cat "$work/resume.txt"; exit 1; }
# SIGHUP (the terminal closed) stops as SIGINT does: the step finished, a checkpoint, exit 130
"$bin" train "$src/configs/reverse.yaml" --out "$work/hup" --set training.steps=100000 \
  --set logging.checkpoint_interval=0 --set logging.attention_interval=0 --set schedule.warmup_steps=5 > "$work/hup.txt" 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -s "$work/hup/metrics.jsonl" ] && break; sleep 0.1; done
kill -HUP "$pid"
wait "$pid"; code=$?
[ "$code" -eq 130 ] || { echo "FAIL: SIGHUP: exit code $code, expected 130"; cat "$work/hup.txt"; exit 1; }
[ -f "$work/hup/checkpoint.safetensors" ] || { echo "FAIL: no checkpoint after SIGHUP"; exit 1; }
grep -q "interrupted after step" "$work/hup.txt" || { echo "FAIL: SIGHUP: no interruption message"; cat "$work/hup.txt"; exit 1; }
echo "PASS: SIGINT at step $step gave exit 130 and a checkpoint; resume continued from step $step; SIGHUP as SIGINT"
