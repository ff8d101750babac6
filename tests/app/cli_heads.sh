#!/usr/bin/env bash
# tinyformer heads on trained reverse and induction models: the detector finds the documented head (expected-pattern
# score >= 0.8, verdict naming the pattern), --json is valid, and ablating reverse's best head costs far more than
# ablating its most diffuse head. Usage: cli_heads.sh TINYFORMER SOURCE_DIR WORK_DIR
set -euo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3

for task in reverse induction; do
  "$bin" train "$src/configs/$task.yaml" --out "$work/$task" --set logging.attention_interval=0 --quiet \
    || fail "training $task"
  "$bin" heads "$work/$task/checkpoint.safetensors" --json > "$work/$task.json" || fail "heads --json on $task"
  "$py" - "$work/$task.json" <<'PY' || fail "$task: no head with expected score >= 0.8 named by its verdict"
import json, sys
j = json.load(open(sys.argv[1]))
table = j["patterns"]["expected"]["score"]
best = max((v, l, h) for l, row in enumerate(table) for h, v in enumerate(row))
v, l, h = best
print(f"best head L{l} H{h}: expected {v:.3f}; verdict: {j['verdicts'][l][h]}")
assert v >= 0.8 and j["verdicts"][l][h].startswith("expected")
PY
done
# the text report: one table per pattern and a verdict per head
"$bin" heads "$work/induction/checkpoint.safetensors" > "$work/induction.txt" || fail "heads (text)"
for want in "previous_token:" "induction:" "expected:" "verdicts" "layer 0 head 0:"; do
  grep -q "$want" "$work/induction.txt" || fail "heads' text output has no '$want'"
done
# a prompt instead of the held-out data
"$bin" heads "$work/reverse/checkpoint.safetensors" --prompt "12345678|" > "$work/prompt.txt" || fail "heads --prompt"
grep -q "on the prompt (9 tokens)" "$work/prompt.txt" || fail "heads --prompt does not say what it scored"

"$bin" heads "$work/reverse/checkpoint.safetensors" --ablate --json > "$work/ablate.json" || fail "heads --ablate"
"$py" - "$work/ablate.json" <<'PY' || fail "ablating reverse's best head does not cost far more than its most diffuse head"
import json, sys
j = json.load(open(sys.argv[1]))
table = j["patterns"]["expected"]["score"]
_, bl, bh = max((v, l, h) for l, row in enumerate(table) for h, v in enumerate(row))
_, dl, dh = max((e, l, h) for l, row in enumerate(j["entropy"]) for h, e in enumerate(row))
a = j["ablation"]
by = {(x["layer"], x["head"]): x["result"] for x in a["heads"]}
intact = a["intact"]
def cost(l, h):
    return by[(l, h)]["loss"] - intact["loss"], intact["accuracy"] - by[(l, h)]["accuracy"]
best, diffuse = cost(bl, bh), cost(dl, dh)
print(f"ablating best head L{bl} H{bh}: +{best[0]:.4f} loss, -{best[1]:.3f} accuracy; "
      f"most diffuse L{dl} H{dh}: +{diffuse[0]:.4f} loss, -{diffuse[1]:.3f} accuracy")
assert best[0] >= 10 * max(diffuse[0], 1e-6) and best[1] >= diffuse[1] and best[1] > 0
PY
"$bin" heads "$work/reverse/checkpoint.safetensors" --ablate --ablate-mode mean > "$work/ablate_mean.txt" \
  || fail "heads --ablate --ablate-mode mean"
grep -q "ablation (mean" "$work/ablate_mean.txt" || fail "mean ablation not reported"
# attention for a prompt: the checkpoint's step, its config, expected keys and scores when the prompt fits the task;
# a prompt of another shape is accepted with a one-line warning saying what was trained, and gets no expected keys
"$bin" attention "$work/reverse/checkpoint.safetensors" --prompt "12345678|8765" --out "$work/maps" 2> "$work/att_err.txt" \
  || fail "attention"
[ ! -s "$work/att_err.txt" ] || fail "attention warned about a prompt of the trained shape: $(cat "$work/att_err.txt")"
"$py" - "$work/maps/attention.json" "$work/maps/report.html" <<'PY' || fail "attention files lack the step, expected keys or scores"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["step"] == 400, j["step"]
assert j["expected"][8:] == [7, 6, 5, 4, 3], j["expected"]
assert len(j["attention_score"]) == 2 and max(j["attention_score"][0]) >= 0.8
html = open(sys.argv[2]).read()
assert "(step 400)" in html and "task: reverse" in html and "No metrics were logged" not in html
assert "chart-loss" not in html  # no training curves without metrics
PY
"$bin" attention "$work/reverse/checkpoint.safetensors" --prompt "1234|" --out "$work/maps_short" 2> "$work/att_err.txt" \
  || fail "attention with a short prompt"
[ "$(wc -l < "$work/att_err.txt")" -eq 1 ] && grep -q "warning: the model was trained on 8 symbols | the same 8 symbols reversed (T = 16); the prompt has '|' at position 4" "$work/att_err.txt" \
  || fail "a prompt of another shape: $(cat "$work/att_err.txt")"
"$py" -c "import json,sys; j=json.load(open(sys.argv[1])); assert 'expected' not in j" "$work/maps_short/attention.json" \
  || fail "expected keys drawn for a prompt of another shape"
# sampling a task checkpoint: by default the sequence is completed to its answer's end; temperature 0 is greedy;
# the KV cache writes what the full recomputation writes
out=$("$bin" sample "$work/reverse/checkpoint.safetensors" --prompt "12345678|" --temperature 0) || fail "sample --temperature 0"
[ "$out" = "12345678|87654321" ] || fail "sample wrote '$out', expected the reversed source and nothing more"
out_nc=$("$bin" sample "$work/reverse/checkpoint.safetensors" --prompt "12345678|" --temperature 0 --no-cache) \
  || fail "sample --no-cache"
[ "$out_nc" = "$out" ] || fail "sample --no-cache wrote '$out_nc', with the cache '$out'"
out=$("$bin" sample "$work/reverse/checkpoint.safetensors" --prompt "12345678|876" --temperature 0) || fail "sample"
[ "$out" = "12345678|87654321" ] || fail "sample of a started answer wrote '$out'"
echo "cli_heads: ok"
