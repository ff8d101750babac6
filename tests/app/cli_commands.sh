#!/usr/bin/env bash
# app: train, sample, attention and gradcheck from the command line, and one-line errors with a non-zero exit.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
expect_error() {  # expect_error "needle" cmd...: non-zero exit and a one-line message containing needle
  local needle="$1"; shift
  "$@" > "$work/out.txt" 2> "$work/err.txt" && fail "'$*' succeeded"
  grep -qF -- "$needle" "$work/err.txt" || { cat "$work/err.txt"; fail "'$*' did not say '$needle'"; }
  [ "$(wc -l < "$work/err.txt")" -eq 1 ] || { cat "$work/err.txt"; fail "'$*' printed more than one line"; }
}
"$bin" --help | grep -q "gradcheck" || fail "--help does not list gradcheck"
for cmd in train sample attention gradcheck bench; do "$bin" "$cmd" --help > /dev/null || fail "$cmd --help"; done

"$bin" train "$src/configs/reverse.yaml" --out "$work/run" --quiet --set training.steps=30 \
  --set schedule.warmup_steps=5 --set logging.attention_interval=15 || fail "train"
for f in config.yaml metrics.jsonl checkpoint.safetensors report.html attention/step_000015.npy \
         attention/step_000030.png attention/step_000030.json; do
  [ -s "$work/run/$f" ] || fail "missing $f"
done
out=$("$bin" sample "$work/run/checkpoint.safetensors" --prompt "1234|" --tokens 4 --top-k 1) || fail "sample"
[ "${#out}" -eq 9 ] || fail "sample printed '$out', expected 5 prompt + 4 new characters"
a=$("$bin" sample "$work/run/checkpoint.safetensors" --prompt "12" --tokens 10 --seed 3)
b=$("$bin" sample "$work/run/checkpoint.safetensors" --prompt "12" --tokens 10 --seed 3)
[ "$a" = "$b" ] || fail "the same seed sampled '$a' and '$b'"
"$bin" attention "$work/run/checkpoint.safetensors" --prompt "1234|4" --out "$work/maps" > /dev/null || fail "attention"
for f in attention.npy attention.json attention.png report.html; do [ -s "$work/maps/$f" ] || fail "missing maps/$f"; done
"$bin" gradcheck "$src/configs/reverse.yaml" --small --checks 4 > "$work/gc.txt" || { cat "$work/gc.txt"; fail "gradcheck"; }
grep -q "gradcheck: PASSED" "$work/gc.txt" || fail "gradcheck did not pass"
[ "$(grep -c '^ok ' "$work/gc.txt")" -ge 20 ] || fail "gradcheck printed too few parameter lines"

"$bin" train "$src/configs/reverse.yaml" --out "$work/run2" --quiet --set training.steps=2 --set schedule.warmup_steps=1 \
  --init-from "$work/run/checkpoint.safetensors" || fail "--init-from a checkpoint"
# a weight mismatch lists every tensor on its own line under the one-line summary
"$bin" train "$src/configs/reverse.yaml" --out "$work/run3" --quiet --set model.d_model=32 \
  --init-from "$work/run/checkpoint.safetensors" 2> "$work/err.txt" && fail "--init-from another architecture succeeded"
grep -q "the weights do not match the model" "$work/err.txt" || fail "no mismatch summary"
grep -q "transformer.wte.weight: the file has shape \[11, 64\], the model needs \[11, 32\]" "$work/err.txt" \
  || { cat "$work/err.txt"; fail "mismatch of transformer.wte.weight not listed"; }

expect_error "no such file" "$bin" train "$work/missing.yaml"
printf 'model:\n  d_modle: 64\n' > "$work/typo.yaml"
expect_error "did you mean model.d_model" "$bin" train "$work/typo.yaml"
expect_error "not divisible" "$bin" train "$src/configs/reverse.yaml" --set model.n_head=5
expect_error "not in the vocabulary: 'x' at position 1" "$bin" sample "$work/run/checkpoint.safetensors" --prompt "1x"
expect_error "--prompt is empty" "$bin" sample "$work/run/checkpoint.safetensors" --prompt ""
head -c 100 "$work/run/checkpoint.safetensors" > "$work/truncated.safetensors"
expect_error "truncated.safetensors" "$bin" sample "$work/truncated.safetensors" --prompt "1"
"$bin" sample "$work/run/checkpoint.safetensors" --prompt "1234567890123456789012345678901234567890" --tokens 1 \
  > /dev/null 2> "$work/warn.txt" || fail "a long prompt should be cropped, not refused"
grep -q "keeping the last 32" "$work/warn.txt" || fail "no crop warning"
echo "PASS: train, sample, attention, gradcheck and their errors"
