#!/usr/bin/env bash
# app: one gate for every file tinyformer opens (tensor/files.hpp, io/atomic_file.hpp). No other code opens a file
# (grep); an output that is a device, FIFO, directory or link is refused and left as it was; an input that is a FIFO
# is refused without hanging; every check runs before the first write (--resume, report.html); a run dir is locked;
# a run that never saved leaves no run dir; a failed write to stdout exits 1; closed standard streams are harmless.
# About 20 s on 2 cores.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
short=(--set training.steps=2 --set schedule.warmup_steps=0 --set logging.attention_interval=0 --quiet)
t() { timeout 20 "$@"; }  # a hang is a failure, not a stuck CI

# --- the gate is the only place that opens a file
gate_files='lib/tinyformer/tensor/files.cpp|lib/tinyformer/io/atomic_file.cpp'
opened=$(cd "$src" && grep -rnE 'std::(i|o)?fstream|\bfopen\(|\bfreopen\(|(^|[^A-Za-z_])::open\(|(^|[^A-Za-z_:.>])open\(|\bcreat\(|mkstemp' \
           lib apps --include='*.cpp' --include='*.hpp' | grep -vE "^($gate_files):" | grep -v 'Check open(double')
[ -z "$opened" ] || fail "files opened outside the gate (tensor/files.cpp, io/atomic_file.cpp): $opened"

t "$bin" train "$cfg" --out "$work/a" "${short[@]}" > /dev/null || fail "first run"
t "$bin" train "$cfg" --out "$work/b" "${short[@]}" > /dev/null || fail "second run"

# --- outputs that are not regular files: refused with the path, left as they were
mkdir "$work/dir.html"
mkfifo "$work/fifo.html"
echo "keep me" > "$work/outside.txt"
ln -s "$work/outside.txt" "$work/link.html"
expect_error "compare --out a directory" 1 "$work/dir.html: is a directory" \
  t "$bin" compare "$work/a" "$work/b" --out "$work/dir.html"
[ -d "$work/dir.html" ] || fail "the directory --out was replaced"
expect_error "compare --out a FIFO" 1 "$work/fifo.html: is a FIFO" t "$bin" compare "$work/a" "$work/b" --out "$work/fifo.html"
[ -p "$work/fifo.html" ] || fail "the FIFO --out was replaced"
expect_error "compare --out a symbolic link" 1 "$work/link.html: is a symbolic link" \
  t "$bin" compare "$work/a" "$work/b" --out "$work/link.html"
[ -L "$work/link.html" ] && [ "$(cat "$work/outside.txt")" = "keep me" ] || fail "the link or its target changed"
if mknod "$work/null" c 1 3 2> /dev/null; then
  expect_error "compare --out a character device" 1 "$work/null: is a device" \
    t "$bin" compare "$work/a" "$work/b" --out "$work/null"
  [ -c "$work/null" ] || fail "the character device --out was replaced by a regular file"
fi
before=$(fingerprint "$work/a")
expect_error "compare --out one of its inputs" 1 "is an input of compare" \
  t "$bin" compare "$work/a" "$work/b" --out "$work/a/metrics.jsonl"
[ "$(fingerprint "$work/a")" = "$before" ] || fail "compare overwrote its input"

# --- every check before the first write: a report.html that is a directory, a metrics.jsonl that is a FIFO or a link
mkdir "$work/a/report.html.new"; rm -f "$work/a/report.html"; mv "$work/a/report.html.new" "$work/a/report.html"
before=$(fingerprint "$work/a")
expect_error "--resume with report.html a directory" 1 "$work/a/report.html: is a directory" \
  t "$bin" train "$cfg" --out "$work/a" --resume --set training.steps=4 --set schedule.warmup_steps=0 --quiet
[ "$(fingerprint "$work/a")" = "$before" ] || fail "a refused --resume changed the run dir"
mkdir -p "$work/fresh/report.html"
expect_error "train into a dir whose report.html is a directory" 1 "$work/fresh/report.html: is a directory" \
  t "$bin" train "$cfg" --out "$work/fresh" "${short[@]}"
[ -z "$(ls -A "$work/fresh" | grep -v report.html)" ] || fail "a refused train wrote into the out dir"
rmdir "$work/a/report.html"
mv "$work/b/metrics.jsonl" "$work/b_metrics.jsonl"; mkfifo "$work/b/metrics.jsonl"
before=$(fingerprint "$work/b")
expect_error "--resume with metrics.jsonl a FIFO" 1 "$work/b/metrics.jsonl: is a FIFO" \
  t "$bin" train "$cfg" --out "$work/b" --resume --set training.steps=4 --set schedule.warmup_steps=0 --quiet
[ "$(fingerprint "$work/b")" = "$before" ] || fail "a refused --resume rewrote a file (config.yaml?)"
rm "$work/b/metrics.jsonl"; ln -s "$work/outside.txt" "$work/b/metrics.jsonl"
expect_error "--resume with metrics.jsonl a link leading out of the run dir" 1 "$work/b/metrics.jsonl: is a symbolic link" \
  t "$bin" train "$cfg" --out "$work/b" --resume --set training.steps=4 --set schedule.warmup_steps=0 --quiet
[ "$(cat "$work/outside.txt")" = "keep me" ] || fail "a write went through a planted link"
rm "$work/b/metrics.jsonl"; mv "$work/b_metrics.jsonl" "$work/b/metrics.jsonl"
expect_error "--resume with --init-from" 2 "--resume excludes --init-from" \
  t "$bin" train "$cfg" --out "$work/b" --resume --init-from "$work/a/checkpoint.safetensors"

# --- one run per run dir: a second one is refused naming the holder's PID; a dead holder's lock is taken over
"$bin" train "$cfg" --out "$work/long" --set training.steps=100000 --set schedule.warmup_steps=0 \
  --set logging.attention_interval=0 --quiet > /dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do [ -s "$work/long/tinyformer.lock" ] && break; sleep 0.1; done
expect_error "a second train into a locked run dir" 1 "in use by another tinyformer run (process $holder)" \
  t "$bin" train "$cfg" --out "$work/long" --overwrite "${short[@]}"
kill -9 "$holder"; wait "$holder" 2> /dev/null
[ "$(cat "$work/long/tinyformer.lock")" = "$holder" ] || fail "the lock file does not hold the holder's PID"
t "$bin" train "$cfg" --out "$work/long" --overwrite --set training.steps=2 --set schedule.warmup_steps=0 \
  --set logging.attention_interval=0 > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "taking over a dead lock"; }
grep -qF "took over the lock of $work/long, left by process $holder" "$work/out.txt" || { cat "$work/out.txt"; fail "no note of the takeover"; }

# --- a run that never wrote a checkpoint leaves no run dir behind (a 100 KiB file size limit fails the first save)
(trap '' XFSZ; ulimit -f 100; t "$bin" train "$cfg" --out "$work/never" "${short[@]}") > /dev/null 2> "$work/err.txt"
[ $? -eq 1 ] && grep -qF "removed the new out dir $work/never" "$work/err.txt" || { cat "$work/err.txt"; fail "failed first save"; }
nothing_written "$work/never"

# --- standard streams: a failed write to stdout is an error; closed ones do not swallow files
t "$bin" config --docs > /dev/full 2> "$work/err.txt"
[ $? -eq 1 ] && [ "$(cat "$work/err.txt")" = "tinyformer: error: cannot write to stdout: No space left on device" ] \
  || { cat "$work/err.txt"; fail "> /dev/full did not exit 1 naming stdout"; }
t "$bin" train "$cfg" --out "$work/closed" --set training.steps=2 --set schedule.warmup_steps=0 >&- 2>&- \
  || fail "train with stdout and stderr closed"
grep -v '^{' "$work/closed/metrics.jsonl" && fail "progress lines went into metrics.jsonl"
# --- sample prints its text as the tokens are made: the first tokens of a long sample are there after a second
timeout -s INT 2 "$bin" sample "$work/a/checkpoint.safetensors" --prompt "12|" --tokens 1000000 > "$work/stream.txt" 2>&1
[ "$(head -c 20 "$work/stream.txt" | wc -c)" -eq 20 ] && head -c 3 "$work/stream.txt" | grep -qF "12|" \
  || { head -c 200 "$work/stream.txt"; fail "sample did not stream its tokens"; }

# --- heads and attention rebuild the run's data only when it is still the data the run trained on
printf 'the quick brown fox jumps over the lazy dog\n%.0s' $(seq 40) > "$work/t.txt"
printf 'model:\n  context: 16\n  d_model: 16\n  n_head: 2\n  n_layer: 1\ndata:\n  task: text\n  path: t.txt\n' > "$work/text.yaml"
t "$bin" train "$work/text.yaml" --out "$work/text" "${short[@]}" > /dev/null || fail "text run"
sed -i 's/quick/quack/' "$work/t.txt"
expect_error "heads after the run's text file changed" 1 \
  "text/checkpoint.safetensors: the data differs from the one its run trained on: the vocabulary" \
  t "$bin" heads "$work/text/checkpoint.safetensors" --batches 1 --batch-size 4

echo "PASS: one gate opens every file; outputs that are not regular files refused and unchanged; checks before writes; runs locked; stdout checked"
