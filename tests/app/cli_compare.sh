#!/usr/bin/env bash
# tinyformer compare: two runs on one self-contained page, curves overlaid, the differing config keys in a table;
# a directory without a run is refused naming it. Usage: cli_compare.sh TINYFORMER SOURCE_DIR WORK_DIR
set -euo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--set training.steps=20 --set schedule.warmup_steps=5 --set model.d_model=32 --set training.eval_interval=10
        --set logging.attention_interval=0 --quiet)
"$bin" train "$src/configs/reverse.yaml" --out "$work/a" "${common[@]}" || fail "training a"
"$bin" train "$src/configs/reverse.yaml" --out "$work/b" "${common[@]}" --set optimizer.lr=0.001 || fail "training b"
"$bin" compare "$work/a" "$work/b" --out "$work/cmp.html" > "$work/out.txt" || fail "compare"
grep -q "2 runs, 2 config keys differ" "$work/out.txt" || fail "compare said: $(cat "$work/out.txt")"
html="$work/cmp.html"
for want in 'id="chart-train-loss"' 'id="chart-val-loss"' 'id="chart-accuracy"' 'id="chart-lr"' \
            'id="config-differences"' '<th>optimizer.lr</th><td>0.003</td><td>0.001</td>' '<th>logging.out_dir</th>'; do
  grep -qF "$want" "$html" || fail "the page has no $want"
done
! grep -qE '<(script|link|img)[^>]+src=' "$html" || fail "the page loads something from outside"
mkdir -p "$work/empty"
out=$("$bin" compare "$work/a" "$work/empty" --out "$work/x.html" 2>&1) && fail "a directory without a run was accepted"
[[ "$out" == *"$work/empty: not a run directory (no config.yaml; train writes one)"* ]] || fail "message: $out"
[ ! -e "$work/x.html" ] || fail "a refused compare wrote a page"
echo "cli_compare: ok"
