#!/usr/bin/env bash
# app: train, sample, attention and gradcheck from the command line, end to end (bad input: cli_bad_*.sh).
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
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
# another architecture is refused naming the keys that differ (cli_bad_checkpoint.sh lists tensors of weights without
# a model record)
"$bin" train "$src/configs/reverse.yaml" --out "$work/run3" --quiet --set model.d_model=32 \
  --init-from "$work/run/checkpoint.safetensors" 2> "$work/err.txt" && fail "--init-from another architecture succeeded"
grep -qF "its model differs from the config's in what shapes the weights (model.d_model 64 -> 32" "$work/err.txt" \
  || { cat "$work/err.txt"; fail "the differing key is not named"; }

# bad input of every kind: cli_bad_config.sh, cli_bad_data.sh, cli_bad_checkpoint.sh, cli_bad_output.sh
echo "PASS: train, sample, attention and gradcheck"
