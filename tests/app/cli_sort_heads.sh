#!/usr/bin/env bash
# What docs/experiments.md says configs/sort.yaml learns, measured: no head looks up "the first source position holding the
# value" (every head's expected-pattern score < 0.5); instead the layer-0 heads spread over the source symbols at or
# above the current value, and each of them is needed (zeroing it costs >= 0.2 accuracy) while no layer-1 head costs
# more than 0.1. Usage: cli_sort_heads.sh TINYFORMER SOURCE_DIR WORK_DIR
set -euo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3
"$bin" train "$src/configs/sort.yaml" --out "$work/sort" --set logging.attention_interval=0 --quiet || fail "training sort"
ckpt="$work/sort/checkpoint.safetensors"
"$bin" heads "$ckpt" --ablate --json > "$work/heads.json" || fail "heads --ablate"
"$py" "$src/tools/task_attention.py" "$bin" "$ckpt" --task sort --json > "$work/mass.json" || fail "task_attention.py"
"$py" - "$work/heads.json" "$work/mass.json" <<'PY' || fail "sort's heads are not what docs/experiments.md says"
import json, sys
h = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
expected = h["patterns"]["expected"]["score"]
a = h["ablation"]; intact = a["intact"]["accuracy"]
drop = {(x["layer"], x["head"]): intact - x["result"]["accuracy"] for x in a["heads"]}
cats = m["categories"]
for l, row in enumerate(m["mass"]):
    for hd, mass in enumerate(row):
        at_or_above = sum(mass[cats.index(c)] for c in ("current", "target", "above"))
        print(f"L{l} H{hd}: expected {expected[l][hd]:.2f}, source at or above the current value {at_or_above:.2f}, "
              f"below {mass[cats.index('below')]:.2f}; zeroing it costs {drop[(l, hd)]:.3f} accuracy")
assert intact >= 0.99, intact
assert max(max(r) for r in expected) < 0.5
for hd, mass in enumerate(m["mass"][0]):
    assert drop[(0, hd)] >= 0.2
    assert sum(mass[cats.index(c)] for c in ("current", "target", "above")) > 2 * mass[cats.index("below")]
assert all(drop[(1, hd)] <= 0.1 for hd in range(len(expected[1])))
PY
echo "cli_sort_heads: ok"
