#!/usr/bin/env bash
# app: an out dir that cannot be written, an out dir that holds an earlier run, and a disk that fills up while
# a checkpoint is written: one clear line, a non-zero exit, and nothing lost (the earlier run and the previous
# checkpoint stay intact, no temporary file is left).
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
short=(--set training.steps=4 --set schedule.warmup_steps=0 --set logging.attention_interval=2 --quiet)

# --- an out dir that cannot be created or written
: > "$work/a_file"
expect_error "--out empty (train)" 2 "--out: must not be empty (give a path) (see tinyformer train --help)" \
  "$bin" train "$cfg" --out "" "${short[@]}"
expect_error "--out empty (compare)" 2 "--out: must not be empty (give a path) (see tinyformer compare --help)" \
  "$bin" compare "$work" "$work" --out ""
expect_error "out dir below a regular file" 1 "cannot create the out dir $work/a_file/run: Not a directory; choose another --out" \
  "$bin" train "$cfg" --out "$work/a_file/run" "${short[@]}"
mkdir -p "$work/ro"
# run_read_only DIR CMD...: CMD sees DIR read-only (a read-only bind mount in a private mount namespace when
# root, since root ignores permission bits; chmod otherwise).
run_read_only() {
  local dir="$1"; shift
  if [ "$(id -u)" -ne 0 ]; then
    chmod a-w "$dir"; "$@"; local code=$?; chmod u+w "$dir"; return $code
  fi
  unshare -m bash -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "${@}"' "$dir" "$@"
}
if [ "$(id -u)" -eq 0 ] && ! unshare -m true 2> /dev/null; then
  echo "note: no mount namespace here (unshare -m refused); the read-only out dir case is not run"
else
  expect_error "out dir not writable" 1 "cannot write in the out dir $work/ro: Read-only file system; choose another --out" \
    run_read_only "$work/ro" "$bin" train "$cfg" --out "$work/ro" "${short[@]}"
  [ -z "$(ls -A "$work/ro")" ] || fail "something was written to the read-only dir"
  "$bin" train "$cfg" --out "$work/ro" "${short[@]}" || fail "train into ro (writable now)"
  expect_error "attention --out not writable" 1 "$work/ro/maps: cannot be created: '$work/ro' is not writable (Read-only file system)" \
    run_read_only "$work/ro" "$bin" attention "$work/ro/checkpoint.safetensors" --prompt 12 --out "$work/ro/maps"
fi

# --- an out dir that holds an earlier run: refused unless --resume or --overwrite
"$bin" train "$cfg" --out "$work/run" "${short[@]}" || fail "first run"
expect_error "--out empty (attention)" 2 "--out: must not be empty (give a path) (see tinyformer attention --help)" \
  "$bin" attention "$work/run/checkpoint.safetensors" --prompt 12 --out ""
before=$(fingerprint "$work/run")
expect_error "out dir holds an earlier run" 1 "$work/run already holds a run ($work/run/checkpoint.safetensors): continue it with --resume, start over with --overwrite, or choose another --out" \
  "$bin" train "$cfg" --out "$work/run" "${short[@]}"
[ "$(fingerprint "$work/run")" = "$before" ] || fail "a refused run changed the earlier run"
expect_error "--resume with --overwrite" 2 "--resume excludes --overwrite (see tinyformer train --help)" \
  "$bin" train "$cfg" --out "$work/run" --resume --overwrite
"$bin" train "$cfg" --out "$work/run" --overwrite --set training.steps=3 --set schedule.warmup_steps=0 \
  --set logging.attention_interval=3 --set logging.attention_schedule=interval --quiet || fail "--overwrite"
[ -f "$work/run/attention/step_000003.npy" ] && [ ! -e "$work/run/attention/step_000002.npy" ] \
  || fail "--overwrite kept the earlier run's attention snapshots: $(ls "$work/run/attention")"

# --- the disk fills up while the second checkpoint is written: the first one survives intact
# A 2 MB tmpfs holds one checkpoint of the default model (1.26 MB) but not a second beside it. Without a mount
# namespace, a file size limit (ulimit -f, SIGXFSZ ignored) makes the same write fail with EFBIG instead.
disk_full_run() {  # disk_full_run DIR: trains into DIR, checkpoint every 2 steps, 4 steps
  "$bin" train "$cfg" --out "$1" --set training.steps=4 --set schedule.warmup_steps=0 \
    --set logging.attention_interval=0 --set logging.checkpoint_interval=2 --quiet
}
mkdir -p "$work/full"
if unshare -m true 2> /dev/null; then
  how="a 2 MB tmpfs"
  export bin cfg work
  export -f disk_full_run
  unshare -m bash -c 'mount -t tmpfs -o size=2m tmpfs "$work/full" && {
      disk_full_run "$work/full/run" 2> "$work/err.txt"; echo $? > "$work/code.txt"
      cp -r "$work/full/run" "$work/after_full"; }'
  expected_error="No space left on device"
else
  how="a 1 MB file size limit"
  "$bin" train "$cfg" --out "$work/full/run" --set training.steps=2 --set schedule.warmup_steps=0 \
    --set logging.attention_interval=0 --quiet || fail "first checkpoint"
  (trap '' XFSZ; ulimit -f 1024; "$bin" train "$cfg" --out "$work/full/run" --resume --set training.steps=4 \
     --set schedule.warmup_steps=0 --set logging.attention_interval=0 --set logging.checkpoint_interval=2 --quiet) \
     2> "$work/err.txt"; echo $? > "$work/code.txt"
  cp -r "$work/full/run" "$work/after_full"
  expected_error="File too large"
fi
[ "$(cat "$work/code.txt")" -eq 1 ] || { cat "$work/err.txt"; fail "disk full: exit code $(cat "$work/code.txt"), expected 1"; }
grep -qF "step 4: the checkpoint could not be saved: $work/full/run/checkpoint.safetensors: writing '$work/full/run/checkpoint.safetensors.tmp." "$work/err.txt" \
  && grep -qF "failed: $expected_error; the previous checkpoint there is unchanged" "$work/err.txt" \
  || { cat "$work/err.txt"; fail "disk full: unexpected message"; }
[ "$(wc -l < "$work/err.txt")" -eq 1 ] || { cat "$work/err.txt"; fail "disk full: more than one line"; }
record_error "disk full while writing a checkpoint ($how)" 1
no_temporaries "$work/after_full"
"$bin" train "$cfg" --out "$work/after_full" --resume --set training.steps=4 --set schedule.warmup_steps=0 \
  --set logging.attention_interval=0 > "$work/resume.txt" 2>&1 || { cat "$work/resume.txt"; fail "the surviving checkpoint does not load"; }
grep -q "4 steps from step 2" "$work/resume.txt" || { cat "$work/resume.txt"; fail "the surviving checkpoint is not step 2's"; }
echo "PASS: unwritable out dirs refused, an earlier run kept, a full disk kept the previous checkpoint ($how)"
