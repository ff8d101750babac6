#!/usr/bin/env bash
# mpi: rank 0 alone prints and writes the run; --resume under mpirun continues bit for bit, and one process with the
# whole batch continues an -np 2 checkpoint; ranks that differ in config, weights or inputs are refused before
# step 1, naming the ranks, and nothing is written.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
source "$src/tests/app/support.sh"
source "$src/tests/app/mpi_support.sh"
rm -rf "$work"; mkdir -p "$work"
cfg="$src/configs/reverse.yaml"
common=(--set model.d_model=32 --set schedule.warmup_steps=5 --set schedule.decay_steps=30 --set logging.log_interval=1
        --set training.eval_interval=10 --set logging.attention_interval=10 --set logging.checkpoint_interval=15
        --set training.batch_size=16 --set model.dropout=0.1)

# 30 steps on two processes, in one go
mpirun_np 2 "$bin" train "$cfg" --out "$work/full" "${common[@]}" --set training.steps=30 > "$work/full.log" 2>&1 \
  || { cat "$work/full.log"; fail "mpirun -np 2 train failed"; }
[ "$(grep -c '"train_loss"' "$work/full/metrics.jsonl")" -eq 30 ] || fail "metrics.jsonl should have 30 rows (rank 0 only)"
[ "$(grep -c 'report written' "$work/full.log")" -eq 1 ] || { cat "$work/full.log"; fail "more than one process printed"; }
grep -q "2 process(es) x grad_accum 1 x batch_size 16 = 32 sequences per step" "$work/full.log" \
  || { cat "$work/full.log"; fail "no line on the global batch"; }
grep -q '"allreduce_ms"' "$work/full/metrics.jsonl" || fail "metrics lack allreduce_ms"
for f in config.yaml checkpoint.safetensors report.html heads.json attention/step_000010.npy attention/step_000030.png; do
  [ -s "$work/full/$f" ] || fail "missing $f"
done
no_temporaries "$work/full"

# 15 steps, then --resume for 15 more: the same losses, bit for bit (dropout on: its generator is in the checkpoint)
mpirun_np 2 "$bin" train "$cfg" --out "$work/parts" "${common[@]}" --set training.steps=15 > "$work/p1.log" 2>&1 \
  || { cat "$work/p1.log"; fail "first part failed"; }
# another number of processes changes the global batch (32 sequences a step here): an `exact` change like
# training.batch_size, refused in one line naming both counts and changing nothing, accepted with --allow-changes
before=$(fingerprint "$work/parts")
for np in 1 4; do
  mpirun_np "$np" "$bin" train "$cfg" --out "$work/parts" --resume "${common[@]}" --set training.steps=30 \
    > "$work/np$np.out" 2> "$work/np$np.err" && { cat "$work/np$np.err"; fail "a resume with -np $np ran"; }
  # the error line is checked by messages.py
  messages_kept=$((messages_kept + 1)); grep '^tinyformer: error: ' "$work/np$np.err" > "$messages_dir/$messages_kept.exit1.txt"
  [ "$(grep -c '^tinyformer: error: ' "$work/np$np.err")" -eq 1 ] || { cat "$work/np$np.err"; fail "-np $np: not one error line"; }
  procs="$np processes"; [ "$np" -eq 1 ] && procs="1 process"
  grep -qF "tinyformer: error: --resume from $work/parts/checkpoint.safetensors: the checkpoint's steps took 32 sequences (2 processes), this run's take $((16 * np)) ($procs x grad_accum 1 x batch_size 16), which breaks exact continuation; resume with --allow-changes" \
    "$work/np$np.err" || { cat "$work/np$np.err"; fail "-np $np: the message does not name both counts"; }
  [ "$(fingerprint "$work/parts")" = "$before" ] || fail "a refused resume with -np $np changed the run dir"
  no_temporaries "$work/parts"
done
# The error line is the only line of tinyformer's: when the first rank exits 1, mpirun sends SIGTERM to the ranks still
# ending, and those said 'interrupted outside the training steps' in 2 of 6 such runs before rank 0 alone spoke.
for i in 1 2 3 4 5 6; do
  mpirun_np 4 "$bin" train "$cfg" --out "$work/parts" --resume "${common[@]}" --set training.steps=30 \
    > "$work/again.out" 2> "$work/again.err" && fail "a resume with -np 4 ran"
  [ "$(grep -c '^tinyformer: ' "$work/again.err")" -eq 1 ] || { cat "$work/again.err"; fail "-np 4, run $i: not one line"; }
done
cp -a "$work/parts" "$work/changed"
mpirun_np 4 "$bin" train "$cfg" --out "$work/changed" --resume --allow-changes "${common[@]}" --set training.steps=16 \
  > "$work/changed.log" 2>&1 || { cat "$work/changed.log"; fail "--allow-changes did not accept -np 4"; }
grep -qF "tinyformer: the checkpoint's steps took 32 sequences (2 processes), this run's take 64 (4 processes x grad_accum 1 x batch_size 16): the run goes on with the new global batch" \
  "$work/changed.log" || { cat "$work/changed.log"; fail "the accepted change of processes is not noted"; }
[ "$(grep -c '"train_loss"' "$work/changed/metrics.jsonl")" -eq 16 ] || fail "the resumed -np 4 run did not add step 16"
mpirun_np 2 "$bin" train "$cfg" --out "$work/parts" --resume "${common[@]}" --set training.steps=30 > "$work/p2.log" 2>&1 \
  || { cat "$work/p2.log"; fail "resume under mpirun failed"; }
grep -q "from step 15" "$work/p2.log" || { cat "$work/p2.log"; fail "resume did not start at step 15"; }
losses "$work/full/metrics.jsonl" > "$work/full.losses"
losses "$work/parts/metrics.jsonl" > "$work/parts.losses"
cmp -s "$work/full.losses" "$work/parts.losses" || { paste "$work/full.losses" "$work/parts.losses"; fail "resumed losses differ"; }

# one process with the whole batch of 32 continues a two-process checkpoint as the two processes would (within 1e-5;
# dropout 0 here: with dropout each process draws its own masks)
nodrop=("${common[@]}" --set model.dropout=0)
mpirun_np 2 "$bin" train "$cfg" --out "$work/full0" "${nodrop[@]}" --set training.steps=30 > "$work/full0.log" 2>&1 \
  && mpirun_np 2 "$bin" train "$cfg" --out "$work/single" "${nodrop[@]}" --set training.steps=15 > "$work/s1.log" 2>&1 \
  || fail "the runs without dropout failed"
"$bin" train "$cfg" --out "$work/single" --resume "${nodrop[@]}" --set training.batch_size=32 --set training.steps=30 \
  > "$work/single.log" 2>&1 || { cat "$work/single.log"; fail "one process could not resume a two-process checkpoint"; }
losses "$work/full0/metrics.jsonl" | tail -15 > "$work/a"
losses "$work/single/metrics.jsonl" | tail -15 > "$work/b"
d=$(max_rel_diff "$work/b" "$work/a")
within "$work/b" "$work/a" 1e-5 || { paste "$work/a" "$work/b"; fail "one process resumed differently ($d)"; }

# ranks that differ are refused before step 1 and write nothing (MPMD: one rank per command line)
out="$work/refused"
mpirun --oversubscribe --bind-to none -np 1 "$bin" train "$cfg" --out "$out" --set training.seed=1 \
  : -np 1 "$bin" train "$cfg" --out "$out" --set training.seed=2 > "$work/seed.log" 2>&1 && fail "different seeds ran"
grep -q "tinyformer: error: the 2 processes disagree on the resolved config (training.threads may differ); line [0-9]*: rank 0 has '  seed: 1', rank 1 has '  seed: 2'" "$work/seed.log" \
  || { cat "$work/seed.log"; fail "no message naming the differing config line"; }
nothing_written "$out"
# the same config, different --init-from weights (relative paths in different working directories)
mkdir -p "$work/w1" "$work/w2"
"$bin" train "$cfg" --out "$work/w1/run" --quiet --set model.d_model=32 --set training.steps=0 --set schedule.warmup_steps=0 > /dev/null \
  && "$bin" train "$cfg" --out "$work/w2/run" --quiet --set model.d_model=32 --set training.steps=0 --set schedule.warmup_steps=0 \
     --set training.seed=7 > /dev/null || fail "could not write the weights"
mpirun --oversubscribe --bind-to none -np 1 -wdir "$work/w1" "$bin" train "$cfg" --out "$out" --set model.d_model=32 \
  --init-from run/checkpoint.safetensors : -np 1 -wdir "$work/w2" "$bin" train "$cfg" --out "$out" --set model.d_model=32 \
  --init-from run/checkpoint.safetensors > "$work/weights.log" 2>&1 && fail "different initial weights ran"
grep -q "tinyformer: error: the 2 processes disagree on the initial parameters (hash of every weight); rank 0 has '[0-9a-f]*', rank 1 has '[0-9a-f]*'" "$work/weights.log" \
  || { cat "$work/weights.log"; fail "no message on the parameters"; }
nothing_written "$out"
# an input that one rank cannot read: that rank's message, named
mpirun --oversubscribe --bind-to none -np 1 "$bin" train "$cfg" --out "$out" \
  : -np 1 "$bin" train "$cfg" --out "$out" --init-from "$work/none.safetensors" > "$work/input.log" 2>&1 && fail "a missing input ran"
grep -q "tinyformer: error: rank 1: .*none.safetensors" "$work/input.log" || { cat "$work/input.log"; fail "the failing rank is not named"; }
[ "$(grep -c 'tinyformer: error' "$work/input.log")" -eq 1 ] || { cat "$work/input.log"; fail "more than one error line"; }
nothing_written "$out"
echo "PASS: rank 0 alone writes; resume under mpirun is bit for bit; one process with batch 32 resumes an -np 2 checkpoint within $d; differing ranks are refused before step 1"
