#!/usr/bin/env bash
# app: --resume does what the user means. A longer training.steps keeps the learning-rate schedule continuous
# (decay_steps stays the checkpoint's); every config key that differs from the checkpoint's is listed; a change that
# breaks exact continuation (training.batch_size) is refused without --allow-changes and accepted with it; a change of
# the model's shape is refused even with it; a finished run says "nothing to do" and touches no file; a text file
# changed since the checkpoint (same vocabulary size, other symbols; or another size) is refused naming the change.
# Also the output: one line per log row when stdout is not a terminal, the refreshed line on a terminal (script),
# and --quiet's one summary line.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
small=(--set model.d_model=32 --set training.batch_size=8 --set schedule.warmup_steps=4 --set logging.log_interval=1
       --set training.eval_interval=10 --set logging.attention_interval=0 --set training.eval_batches=2)

# field FILE STEP KEY: KEY's value in the metrics row of STEP
field() { grep "\"step\":$2," "$1" | head -1 | grep -o "\"$3\":[^,}]*" | cut -d: -f2; }
# awk_true EXPR: a floating-point comparison
awk_true() { awk "BEGIN { exit !($1) }"; }
# mtimes DIR: every file with its modification time (ns), sorted
mtimes() { (cd "$1" && find . -type f -printf '%T@ %p\n' | sort); }

# --- --quiet: one summary line, nothing else
"$bin" train "$cfg" --out "$work/ext" "${small[@]}" --set training.steps=20 --quiet > "$work/quiet.txt" 2>&1 \
  || { cat "$work/quiet.txt"; fail "first 20 steps"; }
[ "$(wc -l < "$work/quiet.txt")" -eq 1 ] || { cat "$work/quiet.txt"; fail "--quiet printed more than one line"; }
grep -Eq "^tinyformer: done: step 20 of 20 \(20 this run\) \| train loss [0-9.]+ \| val loss [0-9.]+ \| accuracy [0-9.]+ \| [0-9.]+ s \| out $work/ext\$" \
  "$work/quiet.txt" || { cat "$work/quiet.txt"; fail "--quiet's summary line"; }

# --- steps 20 -> 30: the schedule keeps decay_steps 20, lr stays at min_lr (3e-4 in reverse.yaml), no jump
"$bin" train "$cfg" --out "$work/ext" --resume "${small[@]}" --set training.steps=30 > "$work/ext.txt" 2>&1 \
  || { cat "$work/ext.txt"; fail "resume to 30 steps"; }
grep -qF "tinyformer: resuming at step 20 of 30; the schedule keeps decay_steps 20 from the checkpoint (lr 3.00e-04 at min_lr from step 20); set schedule.decay_steps (with --allow-changes) to change it" \
  "$work/ext.txt" || { cat "$work/ext.txt"; fail "no line on the schedule kept"; }
grep -qF "tinyformer: changed since the checkpoint: training.steps 20 -> 30" "$work/ext.txt" \
  || { cat "$work/ext.txt"; fail "the changed key is not listed"; }
grep -q "^  decay_steps: 20$" "$work/ext/config.yaml" || fail "config.yaml does not record decay_steps 20"
lr20=$(field "$work/ext/metrics.jsonl" 20 lr); lr21=$(field "$work/ext/metrics.jsonl" 21 lr)
lr30=$(field "$work/ext/metrics.jsonl" 30 lr)
awk_true "$lr21 <= $lr20 && $lr21 == 0.0003 && $lr30 == 0.0003" || fail "lr jumps after the resume: $lr20 at 20, $lr21 at 21, $lr30 at 30"
# non-tty output: one line per row (log_interval 1), none redrawn in place
[ "$(grep -c '^step ' "$work/ext.txt")" -eq 10 ] || { cat "$work/ext.txt"; fail "not one progress line per row"; }
grep -Eq "^step +30/30 \| loss [0-9.]+ \| lr 3.00e-04 \| [0-9]+ tok/s \| [0-9]+m[0-9]{2}s elapsed \| ETA 0m00s \| val [0-9.]+ \| acc [0-9.]+$" \
  "$work/ext.txt" || { cat "$work/ext.txt"; fail "the last progress line"; }
if grep -q $'\r' "$work/ext.txt"; then fail "carriage returns in output that is not a terminal"; fi
grep -Eq "^tinyformer: done: step 30 of 30 \(10 this run\)" "$work/ext.txt" || { cat "$work/ext.txt"; fail "no summary line"; }

# decay_steps set on the command line is a change of the schedule (with --allow-changes): the lr rises again
cp -r "$work/ext" "$work/redecay"
"$bin" train "$cfg" --out "$work/redecay" --resume "${small[@]}" --set training.steps=40 --set schedule.decay_steps=40 \
  --allow-changes > "$work/redecay.txt" 2>&1 || { cat "$work/redecay.txt"; fail "resume with decay_steps 40"; }
grep -qF "the schedule takes decay_steps 40 from the command line" "$work/redecay.txt" || { cat "$work/redecay.txt"; fail "decay_steps 40"; }
grep -qF "schedule.decay_steps 20 -> 40 (--allow-changes)" "$work/redecay.txt" || { cat "$work/redecay.txt"; fail "decay_steps change not listed"; }
awk_true "$(field "$work/redecay/metrics.jsonl" 31 lr) > 0.0003" || fail "decay_steps 40 did not raise the lr"

# --- every differing key is listed
"$bin" train "$cfg" --out "$work/ext" --resume "${small[@]}" --set training.steps=32 --set logging.log_interval=2 \
  --set training.threads=2 > "$work/keys.txt" 2>&1 || { cat "$work/keys.txt"; fail "resume with free changes"; }
grep -qF "tinyformer: changed since the checkpoint: training.steps 30 -> 32, training.threads auto -> 2, logging.log_interval 1 -> 2" \
  "$work/keys.txt" || { cat "$work/keys.txt"; fail "differing keys not listed"; }

# --- training.batch_size: refused without --allow-changes (nothing touched), accepted with it
before=$(fingerprint "$work/ext")
expect_error "--resume with another training.batch_size" 1 "training.batch_size 8 -> 16 differs from the checkpoint's config, which breaks exact continuation; resume with --allow-changes to accept it" \
  "$bin" train "$cfg" --out "$work/ext" --resume "${small[@]}" --set training.steps=34 --set training.batch_size=16
[ "$(fingerprint "$work/ext")" = "$before" ] || fail "a refused resume changed the run dir"
"$bin" train "$cfg" --out "$work/ext" --resume "${small[@]}" --set training.steps=34 --set training.batch_size=16 \
  --allow-changes > "$work/batch.txt" 2>&1 || { cat "$work/batch.txt"; fail "--allow-changes refused batch_size"; }
grep -qF "training.batch_size 8 -> 16 (--allow-changes)" "$work/batch.txt" || { cat "$work/batch.txt"; fail "batch_size change not listed"; }
grep -q '"step":34,' "$work/ext/metrics.jsonl" || fail "the run with batch_size 16 did not reach step 34"

# --- the model's shape: refused even with --allow-changes
before=$(fingerprint "$work/ext")
expect_error "--resume with another model.n_layer" 1 "model.n_layer 2 -> 3 differs from the checkpoint's config and cannot change in a resumed run, not even with --allow-changes" \
  "$bin" train "$cfg" --out "$work/ext" --resume "${small[@]}" --set training.steps=40 --set training.batch_size=16 \
  --set model.n_layer=3 --allow-changes
[ "$(fingerprint "$work/ext")" = "$before" ] || fail "a refused resume changed the run dir"
expect_error "--allow-changes without --resume" 2 "--allow-changes requires --resume" \
  "$bin" train "$cfg" --out "$work/other" --allow-changes
nothing_written "$work/other"

# --- a finished run: nothing to do, no file touched
before=$(fingerprint "$work/ext"); times=$(mtimes "$work/ext")
sleep 1
"$bin" train "$cfg" --out "$work/ext" --resume "${small[@]}" --set training.steps=34 --set training.batch_size=16 \
  --quiet > "$work/done.txt" 2>&1 || { cat "$work/done.txt"; fail "resume of a finished run"; }
[ "$(cat "$work/done.txt")" = "tinyformer: run already at step 34 of 34; nothing to do" ] \
  || { cat "$work/done.txt"; fail "a finished run did not say nothing to do"; }
[ "$(fingerprint "$work/ext")" = "$before" ] || fail "resuming a finished run changed a file"
[ "$(mtimes "$work/ext")" = "$times" ] || { diff <(echo "$times") <(mtimes "$work/ext"); fail "resuming a finished run touched a file"; }

# --- a text file changed since the checkpoint
text=(--set data.task=text --set data.path="$work/t.txt" --set model.context=16 --set training.steps=4
      --set schedule.warmup_steps=1 --set logging.attention_interval=0 --set model.d_model=32)
head -c 4000 "$src/configs/data/simple_english.txt" > "$work/t.txt"
"$bin" train "$cfg" --out "$work/text" "${text[@]}" --quiet > /dev/null 2>&1 || fail "text run"
cp "$work/t.txt" "$work/t.orig"
sed -i 's/h/#/g' "$work/t.txt"  # one symbol for another: the same vocabulary size, other symbols, the same bytes
before=$(fingerprint "$work/text")
expect_error "--resume after the text file changed (same vocabulary size)" 1 "the data differs from the checkpoint's: the vocabulary" \
  "$bin" train "$cfg" --out "$work/text" --resume "${text[@]}" --set training.steps=6
grep -Eq "the vocabulary \(([0-9]+) symbols in the checkpoint, \1 now\); data.path $work/t.txt: its content \(the same size, 4000 bytes\); resume with --allow-changes" \
  "$work/err.txt" || { cat "$work/err.txt"; fail "the message does not name the vocabulary and the content"; }
[ "$(fingerprint "$work/text")" = "$before" ] || fail "a refused resume changed the run dir"
cp "$work/t.orig" "$work/t.txt"; echo "The end." >> "$work/t.txt"
expect_error "--resume after the text file grew" 1 "data.path $work/t.txt: its size (4000 bytes in the checkpoint, 4009 now)" \
  "$bin" train "$cfg" --out "$work/text" --resume "${text[@]}" --set training.steps=6
"$bin" train "$cfg" --out "$work/text" --resume "${text[@]}" --set training.steps=6 --allow-changes \
  2>&1 | grep -q "done: step 6 of 6" || fail "--allow-changes did not accept the grown file"
# a checkpoint written before the fingerprint (its key removed): resumes with a note
cp "$work/t.orig" "$work/t.txt"
"$bin" train "$cfg" --out "$work/old" "${text[@]}" --quiet > /dev/null 2>&1 || fail "text run (old)"
python3 - "$work/old/checkpoint.safetensors" << 'EOF' || fail "could not remove tinyformer.data"
import json, struct, sys
path = sys.argv[1]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
del header["__metadata__"]["tinyformer.data"]
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-(8 + len(text)) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
EOF
"$bin" train "$cfg" --out "$work/old" --resume "${text[@]}" --set training.steps=6 \
  > "$work/old.txt" 2>&1 || { cat "$work/old.txt"; fail "an old checkpoint did not resume"; }
grep -qF "tinyformer: the checkpoint has no data fingerprint (tinyformer.data; written by an earlier version): only its vocabulary is compared with the data's" \
  "$work/old.txt" || { cat "$work/old.txt"; fail "no note on the missing fingerprint"; }

# --- on a terminal: the line is redrawn in place, between rows too (log_interval 1000: one row, at the end)
if command -v script > /dev/null; then
  script -qec "'$bin' train '$cfg' --out '$work/tty' --set model.d_model=128 --set training.batch_size=64 \
    --set training.steps=60 --set logging.log_interval=1000 --set training.eval_interval=1000 \
    --set logging.attention_interval=0" /dev/null > "$work/tty.txt" 2>&1 || { cat "$work/tty.txt"; fail "train under script"; }
  grep -q $'\r''step     60/60 | loss' "$work/tty.txt" || { cat -A "$work/tty.txt" | head; fail "no line redrawn in place"; }
  secs=$(grep -o '| [0-9.]* s | out' "$work/tty.txt" | grep -o '[0-9.]*' | head -1)
  draws=$(tr '\r' '\n' < "$work/tty.txt" | grep -c '^step ')
  # about once a second: a run of S seconds draws at least S - 1 lines before its last row
  if awk_true "$secs >= 2.5"; then
    awk_true "$draws >= 2" || { cat -A "$work/tty.txt"; fail "$secs s with only $draws progress lines"; }
  fi
  echo "terminal: $draws progress lines in $secs s"
fi
echo "PASS: resume keeps the schedule, lists and checks changed keys and data, says nothing to do; progress and --quiet"
