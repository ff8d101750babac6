#!/usr/bin/env bash
# app: damaged checkpoints, checkpoints of another model and bad prompts are refused with one line (or a
# summary line and an indented list of mismatches) and exit code 1 (2 for command-line usage); a refused
# --init-from creates no run dir and a refused --resume changes nothing in the run dir.
set -uo pipefail
bin="$1"; src="$2"; work="$3"; bad_files="$4"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
cfg="$src/configs/reverse.yaml"
short=(--set training.steps=4 --set schedule.warmup_steps=0 --set logging.attention_interval=0 --quiet)
"$bin" train "$cfg" --out "$work/good" "${short[@]}" || fail "training the reference checkpoint"
good="$work/good/checkpoint.safetensors"
before=$(fingerprint "$work/good")

# damaged files: sample, --init-from and --resume each refuse them
declare -A says=(
  [truncated]="truncated: the header describes 1230452 bytes of tensor data but only"
  [header_not_json]="the safetensors header is not valid JSON"
  [header_length_past_end]="corrupt safetensors file: the header length field says"
  [offsets_past_end]="tensor 'transformer.wte.weight': data_offsets [1230452, 1233268] go past the end of the data section (1230452 bytes)"
  [dtype_f16]="tensor 'transformer.wte.weight': unknown dtype 'F16' (tinyformer reads F32, F64, I32, I64)"
  [huge_model]="corrupt checkpoint: its metadata implies transformer.wte.weight [11, 1099511627776] but the tensor has shape [11, 64]"
  [no_metadata]="not a tinyformer checkpoint (no 'tinyformer.model' in its metadata)"
)
for kind in truncated header_not_json header_length_past_end offsets_past_end dtype_f16 huge_model no_metadata; do
  "$bad_files" checkpoint "$kind" "$good" "$work/$kind.safetensors" || fail "bad_files checkpoint $kind"
  expect_error "checkpoint $kind (sample)" 1 "$work/$kind.safetensors: ${says[$kind]}" \
    "$bin" sample "$work/$kind.safetensors" --prompt 12
done
: > "$work/empty.safetensors"
expect_error "checkpoint empty" 1 "empty.safetensors: not a safetensors file: it is 0 bytes long" \
  "$bin" sample "$work/empty.safetensors" --prompt 12
expect_error "checkpoint missing" 2 "checkpoint: $work/none.safetensors: no such file (see tinyformer sample --help)" \
  "$bin" sample "$work/none.safetensors" --prompt 12
expect_error "checkpoint is a directory" 2 "checkpoint: $work/good: is a directory (see tinyformer sample --help)" \
  "$bin" sample "$work/good" --prompt 12
ln -s "$work/loop_b.safetensors" "$work/loop_a.safetensors"; ln -s "$work/loop_a.safetensors" "$work/loop_b.safetensors"
expect_error "checkpoint is a symlink loop" 2 "checkpoint: $work/loop_a.safetensors: a loop of symbolic links" \
  "$bin" attention "$work/loop_a.safetensors" --prompt 12 --out "$work/maps_loop"
nothing_written "$work/maps_loop"
mkfifo "$work/fifo.safetensors"
expect_error "checkpoint is a FIFO (no hang)" 2 "checkpoint: $work/fifo.safetensors: is a FIFO (named pipe), not a regular file" \
  timeout 10 "$bin" heads "$work/fifo.safetensors"
"$bad_files" checkpoint nan_weight "$good" "$work/nan_weight.safetensors" || fail "bad_files checkpoint nan_weight"
expect_error "weights holding NaN (sample)" 1 "nan_weight.safetensors: tensor transformer.h.0.mlp.c_fc.weight holds nan at [3, 17] (and 1 more values that are not finite), which no model can compute with" \
  "$bin" sample "$work/nan_weight.safetensors" --prompt 12
expect_error "weights holding NaN (--init-from)" 1 "nan_weight.safetensors: tensor transformer.h.0.mlp.c_fc.weight holds nan at [3, 17]" \
  "$bin" train "$cfg" --init-from "$work/nan_weight.safetensors" --out "$work/init_nan"
nothing_written "$work/init_nan"
cp -r "$work/good" "$work/nan_run"
"$bad_files" checkpoint nan_optimizer_state "$good" "$work/nan_run/checkpoint.safetensors" || fail "bad_files nan_optimizer_state"
nan_before=$(fingerprint "$work/nan_run")
expect_error "optimizer state holding NaN (--resume)" 1 "checkpoint.safetensors: optimizer state: tensor optimizer.exp_avg_sq.lm_head.weight holds nan at [0, 0]" \
  "$bin" train "$cfg" --out "$work/nan_run" --resume "${short[@]}"
[ "$(fingerprint "$work/nan_run")" = "$nan_before" ] || fail "a refused --resume changed the run dir"
"$bad_files" checkpoint dtype_i32 "$good" "$work/dtype_i32.safetensors"
expect_listing "checkpoint with the wrong dtype" 1 "transformer.wte.weight: dtype I32 in the file, F32 needed" \
  "$bin" sample "$work/dtype_i32.safetensors" --prompt 12
expect_error "--init-from a truncated file" 1 "truncated.safetensors: truncated: the header describes" \
  "$bin" train "$cfg" --init-from "$work/truncated.safetensors" --out "$work/init"
nothing_written "$work/init"

# another architecture: a checkpoint that records its model is refused naming the keys that differ, before a model of
# the config's size is built; weights without that record (another program's) list every mismatching tensor
"$bin" train "$cfg" --out "$work/narrow" "${short[@]}" --set model.d_model=32 --set model.n_layer=1 || fail "narrow model"
expect_error "--init-from another architecture" 1 "its model differs from the config's in what shapes the weights (model.d_model 32 -> 64, model.n_layer 1 -> 2 (checkpoint -> config))" \
  "$bin" train "$cfg" --init-from "$work/narrow/checkpoint.safetensors" --out "$work/init"
nothing_written "$work/init"
python3 - "$work/narrow/checkpoint.safetensors" "$work/narrow_bare.safetensors" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
del header["__metadata__"]["tinyformer.model"]
text = json.dumps(header).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
expect_listing "--init-from weights of another architecture without a model record" 1 "the weights do not match the model" \
  "$bin" train "$cfg" --init-from "$work/narrow_bare.safetensors" --out "$work/init"
# one line of at most 1 KB: the count, the first problems, and " [...]" where the line is cut
for needle in "(29 problems): transformer.wte.weight: the file has shape [11, 32], the model needs [11, 64]; " \
              "transformer.wpe.weight: the file has shape [16, 32], the model needs [16, 64]; " " [...]"; do
  grep -qF -- "$needle" "$work/err.txt" || { cat "$work/err.txt"; fail "mismatch not listed: $needle"; }
done
nothing_written "$work/init"
"$bin" train "$cfg" --out "$work/len4" "${short[@]}" --set data.length=4 || fail "length-4 model"
expect_error "--init-from a smaller positional table" 1 "model.context 8 -> auto (16, from data.length 8)" \
  "$bin" train "$cfg" --init-from "$work/len4/checkpoint.safetensors" --out "$work/init"
nothing_written "$work/init"

# resume: a changed model, another optimizer, a damaged checkpoint; the run dir stays as it was
expect_error "--resume with a changed model config" 1 "model.n_layer 2 -> 3 differs from the checkpoint's config and cannot change in a resumed run, not even with --allow-changes" \
  "$bin" train "$cfg" --out "$work/good" --resume --set training.steps=8 --set schedule.warmup_steps=0 --set model.n_layer=3
[ "$(fingerprint "$work/good")" = "$before" ] || fail "a refused resume changed the run dir"
expect_error "--resume with another optimizer" 1 "optimizer.name adamw -> sgd differs from the checkpoint's config and cannot change in a resumed run" \
  "$bin" train "$cfg" --out "$work/good" --resume --set training.steps=8 --set schedule.warmup_steps=0 --set optimizer.name=sgd
[ "$(fingerprint "$work/good")" = "$before" ] || fail "a refused resume changed the run dir"
expect_error "--resume without a checkpoint" 1 "--resume: no checkpoint at $work/fresh/checkpoint.safetensors" \
  "$bin" train "$cfg" --out "$work/fresh" --resume
nothing_written "$work/fresh"
cp -r "$work/good" "$work/damaged"
head -c 1000 "$good" > "$work/damaged/checkpoint.safetensors"
damaged=$(fingerprint "$work/damaged")
expect_error "--resume from a truncated checkpoint" 1 "damaged/checkpoint.safetensors: corrupt safetensors file" \
  "$bin" train "$cfg" --out "$work/damaged" --resume --set training.steps=8 --set schedule.warmup_steps=0
[ "$(fingerprint "$work/damaged")" = "$damaged" ] || fail "a refused resume changed the run dir"

# a damaged tokenizer (the SentencePiece model in tinyformer.vocab, its checksum made to match): every reader of the
# checkpoint refuses it naming the checkpoint, and a refused --resume changes nothing
bpe=(--set data.path="$src/configs/data/simple_english.txt" --set data.tokenizer=bpe --set data.vocab_size=400
     --set model.context=32 --set model.norm=rmsnorm --set model.mlp=swiglu --set model.position=rope
     --set model.bias=false --set schedule.warmup_steps=0 --set logging.attention_interval=0 --set logging.probe=)
"$bin" train "$src/configs/text.yaml" --out "$work/bpe" "${bpe[@]}" --set training.steps=2 --quiet || fail "bpe checkpoint"
# another tokenizer or vocabulary size for a resumed run is refused like another model, and changes nothing
bpe_run=$(fingerprint "$work/bpe")
expect_error "--resume with another tokenizer" 1 "--resume from $work/bpe/checkpoint.safetensors: data.tokenizer bpe -> unigram differs from the checkpoint's config and cannot change in a resumed run, not even with --allow-changes" \
  "$bin" train "$src/configs/text.yaml" --out "$work/bpe" --resume "${bpe[@]}" --set data.tokenizer=unigram --set training.steps=4 --allow-changes
expect_error "--resume with another data.vocab_size" 1 "--resume from $work/bpe/checkpoint.safetensors: data.vocab_size 400 -> 350 differs" \
  "$bin" train "$src/configs/text.yaml" --out "$work/bpe" --resume "${bpe[@]}" --set data.vocab_size=350 --set training.steps=4
[ "$(fingerprint "$work/bpe")" = "$bpe_run" ] || fail "a refused resume with another tokenizer changed the run dir"
"$bad_files" checkpoint damaged_tokenizer "$work/bpe/checkpoint.safetensors" "$work/bad_tok.safetensors" ||
  fail "bad_files checkpoint damaged_tokenizer"
says_tok="$work/bad_tok.safetensors: corrupt 'tinyformer.vocab' metadata: line 2: the SentencePiece model"
expect_error "damaged tokenizer (sample)" 1 "$says_tok" "$bin" sample "$work/bad_tok.safetensors" --prompt "The"
expect_error "damaged tokenizer (heads)" 1 "$says_tok" "$bin" heads "$work/bad_tok.safetensors"
expect_error "damaged tokenizer (attention)" 1 "$says_tok" \
  "$bin" attention "$work/bad_tok.safetensors" --prompt "The" --out "$work/maps_tok"
nothing_written "$work/maps_tok"
expect_error "damaged tokenizer (export)" 1 "$says_tok" \
  "$bin" export "$work/bad_tok.safetensors" --format llama2c --out "$work/export_tok"
nothing_written "$work/export_tok"
cp "$work/bad_tok.safetensors" "$work/bpe/checkpoint.safetensors"
bad_tok_run=$(fingerprint "$work/bpe")
expect_error "damaged tokenizer (--resume)" 1 "bpe/checkpoint.safetensors: corrupt 'tinyformer.vocab' metadata" \
  "$bin" train "$src/configs/text.yaml" --out "$work/bpe" --resume "${bpe[@]}" --set training.steps=4
[ "$(fingerprint "$work/bpe")" = "$bad_tok_run" ] || fail "a refused resume changed the run dir"

# prompts
expect_error "prompt outside the vocabulary" 1 "--prompt: not in the vocabulary: 'x' at position 1, 'y' at position 3 (characters counted from 0); the vocabulary's 11 characters: 0 1 2 3 4 5 6 7 8 9 |" \
  "$bin" sample "$good" --prompt "1x2y"
expect_error "prompt empty" 1 "--prompt is empty; give at least one token" "$bin" sample "$good" --prompt ""
expect_error "prompt not UTF-8" 1 "--prompt: invalid UTF-8 at byte offset 2" "$bin" sample "$good" --prompt $'12\xff'
expect_error "prompt longer than the context (attention)" 0 "warning: the prompt has 20 tokens, the context is 16: keeping the last 16" \
  "$bin" attention "$good" --prompt "12345678901234567890" --out "$work/maps"
out=$("$bin" sample "$good" --prompt "12345678901234567890" --tokens 3 --top-k 1 2> "$work/err.txt") || fail "long prompt refused"
grep -q "keeping the last 16" "$work/err.txt" || fail "no crop warning"
[ "${#out}" -eq 19 ] || fail "sample printed '$out', expected the last 16 prompt characters + 3"
expect_error "negative --tokens" 2 "--tokens: must be a whole number >= 0, got '-3' (see tinyformer sample --help)" \
  "$bin" sample "$good" --prompt 12 --tokens -3
expect_error "negative temperature" 2 "--temperature: must be a number >= 0, got '-1' (see tinyformer sample --help)" \
  "$bin" sample "$good" --prompt 12 --temperature -1
echo "PASS: damaged and mismatching checkpoints and bad prompts refused; nothing written or changed"
