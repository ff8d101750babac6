#!/usr/bin/env bash
# app: SIGINT, SIGTERM and SIGHUP stop any command at once with exit 130 and one line, and a write in progress
# leaves no temporary file (export's model.bin caught while being written); a file written before stays whole. Under
# nohup, SIGHUP stays ignored.
# (train and sample finish their step or token first: cli_sigint.sh, cli_faults.sh, cli_sample_interrupt.sh.)
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
# llm.c's model.bin of a 13M-parameter GPT (52 MB), written in a few hundredths of a second; its one step on a batch of
# 1 (reverse.yaml's 64 took 33 s of the sanitizer build's 78 CPU s for this test)
"$bin" train "$src/configs/reverse.yaml" --out "$work/run" --set model.d_model=384 --set model.n_head=4 \
  --set model.n_layer=7 --set model.tie_weights=true --set training.steps=1 --set schedule.warmup_steps=0 \
  --set training.batch_size=1 --set logging.attention_interval=0 --quiet > /dev/null ||
  fail "training the model to export"
"$bin" export "$work/run/checkpoint.safetensors" --format llmc --out "$work/before" > /dev/null || fail "a whole export"
whole=$(sha256sum < "$work/before/model.bin")

for sig in INT TERM HUP; do
  caught=""
  for attempt in $(seq 1 10); do
    rm -rf "$work/exp"; mkdir -p "$work/exp"; cp "$work/before/model.bin" "$work/exp/model.bin"
    "$bin" export "$work/run/checkpoint.safetensors" --format llmc --out "$work/exp" > /dev/null 2> "$work/err.txt" &
    pid=$!
    for _ in $(seq 1 100000); do
      if compgen -G "$work/exp/model.bin.tmp.*" > /dev/null; then kill -"$sig" "$pid"; caught=yes; break; fi
      kill -0 "$pid" 2> /dev/null || break
    done
    wait "$pid"; code=$?
    [ -n "$caught" ] && break
    echo "SIG$sig, attempt $attempt: the write ended before the signal; again"
  done
  [ -n "$caught" ] || fail "SIG$sig: could not signal export during its write in 10 attempts"
  [ "$code" -eq 130 ] || { cat "$work/err.txt"; fail "SIG$sig during export's write: exit code $code, expected 130"; }
  grep -qx "tinyformer: interrupted: stopped now (no file is left half-written)" "$work/err.txt" \
    || { cat "$work/err.txt"; fail "SIG$sig: no interrupt line"; }
  no_temporaries "$work/exp"
  [ "$(sha256sum < "$work/exp/model.bin")" = "$whole" ] || fail "SIG$sig: the model.bin written before changed"
done

# Under nohup (SIGHUP ignored when the process starts) a SIGHUP changes nothing: export writes its file
caught=""
for attempt in $(seq 1 10); do
  rm -rf "$work/exp"
  (trap '' HUP; exec "$bin" export "$work/run/checkpoint.safetensors" --format llmc --out "$work/exp" > /dev/null \
    2> "$work/err.txt") &
  pid=$!
  for _ in $(seq 1 100000); do
    if compgen -G "$work/exp/model.bin.tmp.*" > /dev/null; then kill -HUP "$pid"; caught=yes; break; fi
    kill -0 "$pid" 2> /dev/null || break
  done
  wait "$pid"; code=$?
  [ -n "$caught" ] && break
done
[ -n "$caught" ] || fail "SIGHUP under nohup: could not signal export during its write in 10 attempts"
[ "$code" -eq 0 ] || { cat "$work/err.txt"; fail "SIGHUP under nohup: exit code $code, expected 0 (the export written)"; }
[ "$(sha256sum < "$work/exp/model.bin")" = "$whole" ] || fail "SIGHUP under nohup: model.bin is not the whole export"

# A command that writes nothing: bench, stopped in its steps
"$bin" bench --shape medium --steps 100 > /dev/null 2> "$work/err.txt" &
pid=$!
sleep 1
kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" -eq 130 ] || { cat "$work/err.txt"; fail "SIGTERM during bench: exit code $code, expected 130"; }
echo "PASS: SIGINT, SIGTERM and SIGHUP in the middle of export's write: exit 130, no temporary file, the old file whole"
