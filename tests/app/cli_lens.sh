#!/usr/bin/env bash
# tinyformer lens on a trained reverse model: the logit lens has a row for the embeddings and each block, its last row's
# top token is what greedy sampling writes next; the direct logit attribution's parts add up to the logit difference
# it prints, and the head that reverse's detector names carries most of it; --json holds the same; bad --position,
# --top and --answer are refused in one line. Usage: cli_lens.sh TINYFORMER SOURCE_DIR WORK_DIR
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
py=/usr/bin/python3
ckpt="$work/reverse/checkpoint.safetensors"

# batches of 16, not reverse.yaml's 64: the detector's head still writes the answer (its attribution 1.01, the largest),
# and the sanitizer build takes 17 CPU s for this test, not 60
"$bin" train "$src/configs/reverse.yaml" --out "$work/reverse" --set logging.attention_interval=0 \
  --set training.batch_size=16 --quiet > /dev/null || fail "training reverse"
prompt="31415926|62"
"$bin" lens "$ckpt" --prompt "$prompt" --top 3 > "$work/lens.txt" || { cat "$work/lens.txt"; fail "lens"; }
cat "$work/lens.txt"
for want in "at position 10 (token '2'), top 3:" "  embed " "  block 0 " "  block 1 " "direct logit attribution of" \
  "  L0 " "  L1 " "embeddings"; do
  grep -qF -- "$want" "$work/lens.txt" || fail "lens' output has no '$want'"
done
# the last block's top token is the model's greedy next token
next=$("$bin" sample "$ckpt" --prompt "$prompt" --tokens 1 --temperature 0 2> /dev/null | tail -c 2 | head -c 1)
grep -q "^  block 1  *'$next' " "$work/lens.txt" || fail "the last row's top token is not greedy sampling's '$next'"

"$bin" lens "$ckpt" --prompt "$prompt" --json > "$work/lens.json" || fail "lens --json"
"$bin" heads "$ckpt" --json > "$work/heads.json" || fail "heads --json"
"$py" - "$work/lens.json" "$work/heads.json" <<'PY' || fail "the attribution does not add up or misses reverse's head"
import json, sys
j, heads = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [r["stage"] for r in j["lens"]] == ["embed", "block 0", "block 1"], j["lens"]
a = j["direct_logit_attribution"]
parts = a["embed"] + a["final_bias"] + sum(map(sum, a["heads"])) + sum(a["attention_bias"]) + sum(a["mlp"])
print(f"logit difference {a['logit']:.4f}, parts {parts:.4f}")
assert abs(parts - a["logit"]) <= 1e-3 * max(1, abs(a["logit"])), (parts, a["logit"])
assert j["answer"] == j["lens"][-1]["top"][0]["token"]
table = heads["patterns"]["expected"]["score"]
_, l, h = max((v, l, h) for l, row in enumerate(table) for h, v in enumerate(row))
top = max(abs(v) for row in a["heads"] for v in row)
print(f"detector's best head L{l} H{h}: attribution {a['heads'][l][h]:.3f}, largest |head| {top:.3f}")
assert a["heads"][l][h] == top, "the head that attends to the mirrored token is not the one that writes the answer"
PY

expect_error "position past the prompt" 1 "--position 11 is past the prompt's 11 tokens; valid: 0 to 10" \
  "$bin" lens "$ckpt" --prompt "$prompt" --position 11
expect_error "answer of two tokens" 1 "--answer '12' is 2 tokens of this vocabulary; give exactly one" \
  "$bin" lens "$ckpt" --prompt "$prompt" --answer 12
expect_error "answer not in the vocabulary" 1 "--answer: " "$bin" lens "$ckpt" --prompt "$prompt" --answer x
expect_error "top 0" 2 "--top: must be a whole number >= 1, got '0'" "$bin" lens "$ckpt" --prompt "$prompt" --top 0
expect_error "top above the vocabulary" 1 "--top 12 is more than the vocabulary's 11 tokens" \
  "$bin" lens "$ckpt" --prompt "$prompt" --top 12
echo "lens: OK"
