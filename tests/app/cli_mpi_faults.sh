#!/usr/bin/env bash
# mpi: faults under mpirun. kill -9 of one rank ends the whole job within seconds, mpirun names the rank, and the
# last checkpoint stays loadable; SIGUSR1 to mpirun (forwarded to every rank) stops all ranks at the same step,
# rank 0 saves, exit 130; Ctrl-C (SIGINT) to mpirun: mpirun sends SIGTERM to the ranks, rank 0 saves before the
# SIGKILL that follows, and the run resumes from that step (mpirun itself exits 1: it aborted the job).
set -uo pipefail
bin="$1"; src="$2"; work="$3"
source "$src/tests/app/support.sh"
source "$src/tests/app/mpi_support.sh"
rm -rf "$work"; mkdir -p "$work"
cfg="$src/configs/reverse.yaml"
common=(--set model.d_model=32 --set schedule.warmup_steps=5 --set training.batch_size=16 --set training.steps=100000
        --set logging.attention_interval=0 --set training.eval_interval=100000)

# start NAME CHECKPOINT_INTERVAL: mpirun -np 2 training in the background ($pid: mpirun's); waits for metrics
start() {
  mpirun --oversubscribe --bind-to none -np 2 "$bin" train "$cfg" --out "$work/$1" "${common[@]}" --set logging.checkpoint_interval="$2" \
    > "$work/$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [ -s "$work/$1/metrics.jsonl" ] && break; sleep 0.05; done
  [ -s "$work/$1/metrics.jsonl" ] || { kill -9 "$pid"; cat "$work/$1.log"; fail "$1: training did not start"; }
}
# rank_pid NAME R: the pid of rank R of run NAME (its command line names the out dir; its environment the rank). grep
# reads the environment itself (-z: entries end in NUL): behind a pipe under pipefail, grep -q leaving at the match
# while tr still wrote an environment longer than one buffer ended tr by SIGPIPE, and the pipe counted as no match
# (seen once, in a fresh chroot: "rank 1 not found among mpirun's children").
rank_pid() {
  local p
  for p in $(pgrep -f -- "--out $work/$1 "); do
    grep -qxz "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2> /dev/null && { echo "$p"; return; }
  done
}
# resumes NAME: the run's checkpoint loads: mpirun -np 2 --resume trains 2 more steps from it; prints its step
resumes() {
  local from
  from=$(head -c 100000 "$work/$1/checkpoint.safetensors" | grep -ao '"tinyformer.step":"[0-9]*"' | grep -o '[0-9]*')
  [ -n "$from" ] || fail "$1: no step in the checkpoint"
  mpirun_np 2 "$bin" train "$cfg" --out "$work/$1" --resume "${common[@]}" --set training.steps=$((from + 2)) \
    > "$work/$1.resume.log" 2>&1 || { cat "$work/$1.resume.log"; fail "$1: resume under mpirun failed"; }
  grep -q "steps from step $from " "$work/$1.resume.log" || { cat "$work/$1.resume.log"; fail "$1: resumed elsewhere"; }
  echo "$from"
}

# kill -9 of rank 1 while training: the job ends within seconds, mpirun names rank 1, the checkpoint loads
start killed 20
for _ in $(seq 1 200); do [ -f "$work/killed/checkpoint.safetensors" ] && break; sleep 0.05; done
victim=$(rank_pid killed 1)
[ -n "$victim" ] || { kill -9 "$pid"; fail "rank 1 not found among mpirun's children"; }
t0=$(date +%s%N)
kill -9 "$victim"
for _ in $(seq 1 300); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done
kill -0 "$pid" 2> /dev/null && { kill -9 "$pid"; cat "$work/killed.log"; fail "the job still runs 15 s after rank 1 died"; }
wait "$pid"; code=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$code" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
grep -q "process rank 1 .* exited on signal 9" "$work/killed.log" || { cat "$work/killed.log"; fail "mpirun did not name rank 1"; }
pgrep -f -- "--out $work/killed " > /dev/null && fail "a rank of the killed job is still running"
no_temporaries "$work/killed"
step=$(resumes killed) || exit 1
echo "kill -9 of rank 1: mpirun exited $code after $ms ms, naming rank 1; checkpoint of step $step loads"

# SIGUSR1 to mpirun: every rank stops at the same step, rank 0 saves, exit 130
start usr1 0
kill -USR1 "$pid"
wait "$pid"; code=$?
[ "$code" -eq 130 ] || { cat "$work/usr1.log"; fail "SIGUSR1: mpirun exited $code, expected 130"; }
stopped=$(grep -o 'interrupted after step [0-9]*' "$work/usr1.log" | grep -o '[0-9]*$')
[ -n "$stopped" ] || { cat "$work/usr1.log"; fail "SIGUSR1: no interruption message"; }
[ "$(grep -c 'interrupted after step' "$work/usr1.log")" -eq 1 ] || fail "SIGUSR1: more than one rank printed"
step=$(resumes usr1) || exit 1
[ "$step" = "$stopped" ] || fail "SIGUSR1: stopped after step $stopped but the checkpoint is of step $step"
echo "SIGUSR1 to mpirun: exit 130, checkpoint of step $step"

# Ctrl-C to mpirun: SIGTERM reaches the ranks, rank 0 saves before mpirun's SIGKILL, the run resumes from there.
# mpirun waits odls_base_sigkill_timeout (1 s) before the SIGTERM and as long again before the SIGKILL; 3 s here, so
# that a loaded machine (or the sanitizer build) still saves in time.
export OMPI_MCA_odls_base_sigkill_timeout=3
start sigint 0
kill -INT "$pid"
wait "$pid"; code=$?
[ -f "$work/sigint/checkpoint.safetensors" ] || { cat "$work/sigint.log"; fail "Ctrl-C: no checkpoint written"; }
no_temporaries "$work/sigint"
step=$(resumes sigint) || exit 1
echo "Ctrl-C to mpirun: mpirun exited $code, checkpoint of step $step"
# A bad value of tinyformer's own variables in every rank's environment: the job tells it once, from rank 0, as one
# process does (each rank printed "rank N: ...; ending all 2 processes" before)
bad=$(TINYFORMER_GEMM=fast mpirun_np 2 -x TINYFORMER_GEMM "$bin" config "$cfg" 2>&1) && fail "TINYFORMER_GEMM=fast ran"
[ "$(grep -c '^tinyformer: ' <<< "$bad")" -eq 1 ] &&
  grep -qxF "tinyformer: error: TINYFORMER_GEMM='fast': expected auto, measure, openblas or libxsmm" <<< "$bad" ||
  { echo "$bad"; fail "a bad TINYFORMER_GEMM under mpirun was not one line of rank 0"; }
echo "PASS: a killed rank ends the job naming it; SIGUSR1 and Ctrl-C to mpirun leave a checkpoint that resumes; a bad variable is told once"
