#!/usr/bin/env bash
# app: SIGINT or SIGTERM ends sample after the token being made, with exit 130: written to a file, the text ends
# whole, with its newline; written to a full pipe that nobody reads, the interrupted write ends the output (no hang).
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
"$bin" train "$src/configs/reverse.yaml" --out "$work/run" --set training.steps=5 --set schedule.warmup_steps=0 \
  --set logging.attention_interval=0 --quiet > /dev/null || fail "training the model to sample from"
sample=("$bin" sample "$work/run/checkpoint.safetensors" --prompt 12 --tokens 1000000 --temperature 1)

# stopped LABEL PID: PID's exit code once it has ended, failing when it runs on 20 s after the signal
stopped() {
  local label="$1" pid="$2"
  for _ in $(seq 1 200); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2> /dev/null; then
    kill -9 "$pid"; wait "$pid"
    fail "$label: still running 20 s after the signal"
  fi
  wait "$pid"
}

for sig in INT TERM; do
  "${sample[@]}" > "$work/out.txt" 2> "$work/err.txt" &
  pid=$!
  for _ in $(seq 1 300); do [ -s "$work/out.txt" ] && break; sleep 0.1; done
  sleep 0.2
  kill -"$sig" "$pid"
  stopped "SIG$sig, stdout a file" "$pid"; code=$?
  [ "$code" -eq 130 ] || { cat "$work/err.txt"; fail "SIG$sig, stdout a file: exit code $code, expected 130"; }
  [ "$(tail -c 1 "$work/out.txt" | od -An -tx1 | tr -d ' ')" = "0a" ] || fail "SIG$sig: the text does not end with its newline"
  [ "$(wc -l < "$work/out.txt")" -eq 1 ] || fail "SIG$sig: the text is not one line"

  # A reader that opens the pipe, shrinks it to one page and never reads: sample's writes block within a few
  # thousand tokens.
  rm -f "$work/fifo"; mkfifo "$work/fifo"
  /usr/bin/python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 4096)
time.sleep(120)' "$work/fifo" &
  reader=$!
  "${sample[@]}" > "$work/fifo" 2> "$work/err.txt" &
  pid=$!
  blocked=""
  for _ in $(seq 1 600); do
    grep -q pipe_write "/proc/$pid/wchan" 2> /dev/null && { blocked=yes; break; }
    sleep 0.1
  done
  [ -n "$blocked" ] || { kill -9 "$pid" "$reader"; fail "SIG$sig: sample's write to the full pipe did not block within 60 s"; }
  kill -"$sig" "$pid"
  stopped "SIG$sig, stdout a full pipe" "$pid"; code=$?
  kill "$reader" 2> /dev/null; wait "$reader" 2> /dev/null
  [ "$code" -eq 130 ] || { cat "$work/err.txt"; fail "SIG$sig, stdout a full pipe: exit code $code, expected 130"; }
done
echo "PASS: SIGINT and SIGTERM stop sample with exit 130, its text whole in a file, and at once on a full pipe"
