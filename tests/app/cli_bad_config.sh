#!/usr/bin/env bash
# app: every kind of bad config is refused before any work: one line naming the file, the key and its line
# (or --set), what would be valid, exit code 1, and no run directory created.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
out="$work/run"  # every refused command gets --out "$out"; none may create it

yaml() { printf '%b' "$2" > "$work/$1"; echo "$work/$1"; }

refused_train "config file missing" "missing.yaml: cannot read the config file: no such file" "$work/missing.yaml"
refused_train "config is a directory" "cannot read the config file: is a directory" "$work"
ln -s "$work/loop_b.yaml" "$work/loop_a.yaml"; ln -s "$work/loop_a.yaml" "$work/loop_b.yaml"
refused_train "config is a symlink loop" "loop_a.yaml: cannot read the config file: a loop of symbolic links" "$work/loop_a.yaml"
mkfifo "$work/fifo.yaml"
refused_train "config is a FIFO (no hang)" "fifo.yaml: cannot read the config file: is a FIFO (named pipe), not a regular file" \
  "$work/fifo.yaml"
chmod 000 "$(yaml secret.yaml 'model:\n  d_model: 64\n')"
if [ "$(id -u)" -ne 0 ]; then  # root reads anything
  refused_train "config not readable" "secret.yaml: cannot read the config file: not readable (permission denied)" "$work/secret.yaml"
fi
refused_train "config name empty" "the config file name is empty; give a YAML file" ""
refused_train "config with a NUL byte" "nul.yaml: holds a NUL byte at line 2, column 13 (byte offset 19); a config is text" \
  "$(yaml nul.yaml 'model:\n  d_model: 6\x004\n')"
deep=$(printf '[%.0s' $(seq 1 40))
refused_train "config nested too deeply" "deep.yaml: nests more than 32 levels of [ ] or { } at line 2, column 44" \
  "$(yaml deep.yaml "model:\n  d_model: $deep\n")"
refused_train "config indented too deeply" "indent.yaml: line 3 is indented more than 64 columns" \
  "$(yaml indent.yaml "model:\n  d_model: 4\n$(printf ' %.0s' $(seq 1 70))x: 1\n")"
head -c 1100000 /dev/zero | tr '\0' '#' > "$work/huge.yaml"
refused_train "config over 1 MiB" "huge.yaml: is 1100000 bytes; a config is at most 1048576 bytes (1 MiB)" "$work/huge.yaml"
refused_train "not YAML (unclosed list)" "broken.yaml: not valid YAML at line 3, column 1" \
  "$(yaml broken.yaml 'model:\n  d_model: [1, 2\n')"
refused_train "not YAML (tab indentation)" "tabs.yaml: not valid YAML at line 2, column" "$(yaml tabs.yaml 'model:\n\td_model: 3\n')"
refused_train "a quote that never closes (would hide the keys after it)" \
  "quote.yaml: logging.probe at line 2: a quote (') at column 10 opens a value that never closes" \
  "$(yaml quote.yaml "logging:\n  probe: '12|\ntraining:\n  steps: 5\n")"
refused_train "a quote closed lines later, over keys" \
  "twice.yaml: optimizer.name at line 2: a quote (') at column 9 is closed only on line 5, and YAML reads the lines between into the value, line 3 ('lr: 0.01') too" \
  "$(yaml twice.yaml "optimizer:\n  name: '\n  lr: 0.01\nschedule:\n  name: '\n  warmup_steps: 5\n")"
refused_train "not UTF-8" "latin1.yaml: not UTF-8 text: invalid byte at line 2, column 6" \
  "$(yaml latin1.yaml '# notes\n# caf\xe9 config\nmodel:\n  d_model: 64\n')"
refused_train "top level not a mapping" "the top level must be a mapping of sections" "$(yaml list.yaml '- model\n- data\n')"
refused_train "unknown key" "model.d_modle at line 2: unknown key 'd_modle' in section model; did you mean model.d_model?" \
  "$(yaml typo.yaml 'model:\n  d_modle: 64\n')"
refused_train "unknown section" "unknown section 'optimiser'; did you mean optimizer?" "$(yaml section.yaml 'optimiser:\n  lr: 0.1\n')"
refused_train "key in the wrong section" "did you mean training.batch_size?" "$(yaml wrong.yaml 'model:\n  batch_size: 8\n')"
refused_train "key given twice" "model.n_head appears twice (first at line 2)" "$(yaml twice.yaml 'model:\n  n_head: 4\n  n_head: 2\n')"
refused_train "wrong type (text for an int)" "model.d_model at line 2: expected an integer, got 'sixty-four'" \
  "$(yaml type.yaml 'model:\n  d_model: sixty-four\n')"
refused_train "wrong type (real for an int)" "training.steps (--set training.steps=1e3): expected an integer, got '1e3'" \
  "$cfg" --set training.steps=1e3
refused_train "wrong type (list for a number)" "optimizer.lr at line 2: expected a number, got a list" \
  "$(yaml lr.yaml 'optimizer:\n  lr: [1, 2]\n')"
refused_train "value out of range (dropout)" "model.dropout at line 2: must be in [0, 1), got 1.5" "$(yaml drop.yaml 'model:\n  dropout: 1.5\n')"
refused_train "value out of range (betas)" "optimizer.betas (--set optimizer.betas=[0.9, 1.2]): each value must be in [0, 1)" \
  "$cfg" --set "optimizer.betas=[0.9, 1.2]"
refused_train "integer too large" "integer out of range: at most 2^53 = 9007199254740992, got 99999999999999999999999" "$cfg" --set model.d_model=99999999999999999999999
refused_train "d_model not divisible by n_head" "model.d_model (--set model.d_model=65): 65 is not divisible by model.n_head = 4; valid d_model near it: 64 or 68" \
  "$cfg" --set model.d_model=65
refused_train "n_head 0" "model.n_head (--set model.n_head=0): must be at least 1, got 0" "$cfg" --set model.n_head=0
refused_train "context larger than the task's sequences" "model.context (--set model.context=32): task 'reverse' with data.length 8 makes sequences of T = 16 tokens; model.context 32 is larger, so positions 16..31 of the positional table would never be trained; set model.context to 16 or auto" \
  "$cfg" --set model.context=32
refused_train "context shorter than the task's sequences" "model.context (--set model.context=10): task 'reverse' with data.length 8 makes sequences of T = 16 tokens, longer than model.context 10" \
  "$cfg" --set model.context=10
refused_train "context auto for text" "task 'text' cuts the file into windows: set model.context to the window length" \
  "$src/configs/text.yaml" --set model.context=auto
refused_train "vocab_size smaller than the data's" "model.vocab_size (--set model.vocab_size=5): 5 is smaller than the data's vocabulary of 11 tokens; use 11 or 'auto'" \
  "$cfg" --set model.vocab_size=5
refused_train "batch size 0" "training.batch_size (--set training.batch_size=0): must be at least 1, got 0" "$cfg" --set training.batch_size=0
refused_train "negative steps" "training.steps (--set training.steps=-5): must be >= 0, got -5" "$cfg" --set training.steps=-5
refused_train "warmup longer than training" "schedule.warmup_steps at line 18: 50 is more than training.steps = 10; valid: 0 to 10" \
  "$cfg" --set training.steps=10
refused_train "unknown task" "data.task (--set data.task=revers): unknown value 'revers'; valid: copy, reverse, sort, add, induction, repeats, modular, text, tokens (did you mean reverse?)" \
  "$cfg" --set data.task=revers
refused_train "unknown optimizer" "optimizer.name (--set optimizer.name=adamx): unknown value 'adamx'; valid: sgd, adam, adamw" \
  "$cfg" --set optimizer.name=adamx
refused_train "unknown schedule" "schedule.name (--set schedule.name=cos): unknown value 'cos'; valid: constant, warmup, cosine (did you mean cosine?)" \
  "$cfg" --set schedule.name=cos
refused_train "text task without a file" "data.path (default): task 'text' reads a file: set data.path" "$cfg" --set data.task=text --set model.context=8
refused_train "--set without =" "--set model.d_model: expected key.path=value" "$cfg" --set model.d_model
refused_train "--set unknown key" "--set model.n_heads=4: unknown key 'n_heads' in section model; did you mean model.n_head?" "$cfg" --set model.n_heads=4
refused_train "probe outside the vocabulary" "logging.probe (--set logging.probe=12x): not in the vocabulary: 'x' at position 2" \
  "$cfg" --set logging.probe=12x
expect_error "no config given" 2 "config is required (see tinyformer train --help)" "$bin" train
expect_error "unknown option" 2 "were not expected: 5 --steps (see tinyformer train --help)" "$bin" train "$cfg" --steps 5
echo "PASS: bad configs refused with their file, key, line and valid values; nothing written"
