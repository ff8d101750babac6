#!/usr/bin/env bash
# One checkpoint format for library and app: examples/train_gpt (a GPT built and trained in code, saved with tf::save)
# writes a file that the installed `tinyformer sample`, `attention` and `heads` read. The trained model reverses
# three letters, so greedy sampling of "abc|" must print "abc|cba". Without its run config the file holds no data to
# score heads on: `heads --data` says so in one line and exits non-zero. About 10 s in the release build.
# usage: library_checkpoint.sh TRAIN_GPT TINYFORMER WORK_DIR
set -euo pipefail
train_gpt="$1" app="$2" work="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
ckpt="$work/library.safetensors"
"$train_gpt" "$ckpt" || fail "train_gpt"

out=$("$app" sample "$ckpt" --prompt "abc|" --tokens 3 --temperature 0) || fail "tinyformer sample"
echo "$out"
grep -qx 'abc|cba' <<<"$out" || fail "sample printed '$out', expected the line 'abc|cba'"

"$app" attention "$ckpt" --prompt "abc|cba" --out "$work/maps" || fail "tinyformer attention"
test -f "$work/maps/attention.npy" || fail "no attention.npy"

"$app" heads "$ckpt" --prompt "abc|cba" || fail "tinyformer heads --prompt"
set +e
err=$("$app" heads "$ckpt" --data 2>&1 >/dev/null)
status=$?
set -e
[ "$status" -ne 0 ] || fail "heads --data exited 0 on a checkpoint without its run config"
grep -q "saved without its run config" <<<"$err" || fail "heads --data said: $err"
echo "ok: sample, attention and heads read the checkpoint a library program saved"
