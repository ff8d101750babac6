#!/usr/bin/env bash
# app: faults during training. A non-finite loss stops the run at that step and leaves the last good checkpoint
# as it was (or, with training.nonfinite: skip, the step is skipped); SIGTERM finishes the step, checkpoints
# atomically and exits 130; kill -9 in the middle of writing a checkpoint leaves the previous one loadable, and
# the next --resume removes the cut-off temporary file and continues from it.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
quiet=(--set schedule.warmup_steps=0 --set logging.attention_interval=0 --quiet)

# --- a non-finite loss: stop at that step, the last good checkpoint untouched
"$bin" train "$cfg" --out "$work/nan" --set training.steps=4 "${quiet[@]}" || fail "first 4 steps"
before=$(sha256sum < "$work/nan/checkpoint.safetensors")
expect_error "non-finite loss (optimizer.lr 1e30)" 1 "The last good checkpoint is $work/nan/checkpoint.safetensors" \
  "$bin" train "$cfg" --out "$work/nan" --resume --set training.steps=40 --set optimizer.lr=1e30 --set schedule.decay_steps=40 --allow-changes "${quiet[@]}"
grep -Eq "step (5|6|7|8): the (loss is (nan|inf|-nan)|gradient of [a-z_.0-9]+ is not finite); training stopped \(training.nonfinite: stop\)" "$work/err.txt" \
  || { cat "$work/err.txt"; fail "the message does not name the step and what is not finite"; }
[ "$(sha256sum < "$work/nan/checkpoint.safetensors")" = "$before" ] || fail "the last good checkpoint changed"
no_temporaries "$work/nan"
"$bin" train "$cfg" --out "$work/nan" --resume --set training.steps=40 --set optimizer.lr=1e30 --set schedule.decay_steps=40 --allow-changes \
  --set training.nonfinite=skip "${quiet[@]}" 2> "$work/skip.txt" || { cat "$work/skip.txt"; fail "nonfinite: skip stopped"; }
grep -q "step skipped (training.nonfinite: skip)" "$work/skip.txt" || { cat "$work/skip.txt"; fail "no step was skipped"; }

# --- SIGTERM: finish the step, checkpoint atomically, exit 130, resume continues
"$bin" train "$cfg" --out "$work/term" --set training.steps=100000 --set logging.checkpoint_interval=0 \
  --set logging.attention_interval=0 --set schedule.warmup_steps=5 > "$work/term.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$work/term/metrics.jsonl" ] && break; sleep 0.1; done
kill -TERM "$pid"; wait "$pid"; code=$?
[ "$code" -eq 130 ] || { cat "$work/term.txt"; fail "SIGTERM: exit code $code, expected 130"; }
grep -q "interrupted after step" "$work/term.txt" || { cat "$work/term.txt"; fail "SIGTERM: no interruption message"; }
no_temporaries "$work/term"
step=$(grep -o 'interrupted after step [0-9]*' "$work/term.txt" | grep -o '[0-9]*$')
"$bin" train "$cfg" --out "$work/term" --resume --set training.steps=$((step + 2)) "${quiet[@]}" --set schedule.warmup_steps=5 \
  --set logging.checkpoint_interval=0 \
  || fail "resume after SIGTERM"

# --- a second SIGINT stops at once, without waiting for the step and the save (the big model's steps are slow)
"$bin" train "$cfg" --out "$work/twice" --set model.d_model=384 --set model.n_head=4 --set model.n_layer=4 \
  --set training.steps=1000 --set logging.checkpoint_interval=0 "${quiet[@]}" > /dev/null 2> "$work/twice.txt" &
pid=$!
for _ in $(seq 1 300); do [ -s "$work/twice/config.yaml" ] && break; sleep 0.1; done
sleep 0.5  # config.yaml is written just before the steps begin (before them, one signal stops at once)
kill -INT "$pid"; sleep 0.05; kill -INT "$pid"; wait "$pid"; code=$?
[ "$code" -eq 130 ] || { cat "$work/twice.txt"; fail "two SIGINTs: exit code $code, expected 130"; }
grep -q "second interrupt: stopping now without saving" "$work/twice.txt" || { cat "$work/twice.txt"; fail "no second-interrupt message"; }

# --- kill -9 while a checkpoint is being written: the previous checkpoint stays loadable
# A model whose checkpoint (weights + AdamW state) is about 90 MB, saved after every step, so that a save is
# easy to catch in the act: the test waits until a temporary file exists next to a finished checkpoint.
big=(--set model.d_model=384 --set model.n_head=4 --set model.n_layer=4 --set training.batch_size=8
     --set logging.checkpoint_interval=1 --set schedule.warmup_steps=0 --set logging.attention_interval=0)
caught=""
for attempt in 1 2 3 4 5; do
  rm -rf "$work/kill"
  "$bin" train "$cfg" --out "$work/kill" "${big[@]}" --set training.steps=1000 --quiet > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 200000); do
    if [ -f "$work/kill/checkpoint.safetensors" ] && compgen -G "$work/kill/checkpoint.safetensors.tmp.*" > /dev/null; then
      kill -9 "$pid"; break
    fi
    kill -0 "$pid" 2> /dev/null || break
  done
  kill -9 "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
  if compgen -G "$work/kill/checkpoint.safetensors.tmp.*" > /dev/null; then caught=yes; break; fi
  echo "attempt $attempt: the save finished before the kill; again"
done
[ -n "$caught" ] || fail "could not kill the process during a save in 5 attempts"
left=$(compgen -G "$work/kill/checkpoint.safetensors.tmp.*")
"$bin" sample "$work/kill/checkpoint.safetensors" --prompt 12 --tokens 2 > /dev/null 2> "$work/err.txt" \
  || { cat "$work/err.txt"; fail "the previous checkpoint does not load after kill -9"; }
"$bin" train "$cfg" --out "$work/kill" --resume "${big[@]}" --set training.steps=0 > "$work/resume.txt" 2>&1 \
  || { cat "$work/resume.txt"; fail "resume after kill -9"; }
grep -qF "removed $left, left by a save that was cut off" "$work/resume.txt" || { cat "$work/resume.txt"; fail "the stale temporary file was not removed"; }
grep -Eq "run already at step [1-9][0-9]*, past training.steps 0; nothing to do" "$work/resume.txt" \
  || { cat "$work/resume.txt"; fail "resume did not load the saved step"; }
no_temporaries "$work/kill"
echo "PASS: non-finite loss stopped at its step with the checkpoint untouched; SIGTERM saved and exited 130; kill -9 during a save (attempt $attempt) kept the previous checkpoint"
