#!/usr/bin/env bash
# app: `tinyformer bench` prints one JSON line per shape with every field the issue names, --profile adds
# the per-op table, --gemm the SGEMM limit; and the losses of a run do not depend on the thread count.
set -uo pipefail
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }
out=$("$bin" bench --shape tiny --steps 3 --warmup 1 --threads 1) || fail "bench tiny"
for key in shape context batch threads params ms_per_step tokens_per_s gflops peak_rss_mb final_loss; do
  echo "$out" | grep -q "\"$key\"" || fail "bench output lacks $key: $out"
done
prof=$("$bin" bench --shape tiny --steps 3 --warmup 1 --threads 2 --profile) || fail "bench --profile"
for op in linear causal_self_attention layer_norm gelu cross_entropy "optimizer step (AdamW)"; do
  echo "$prof" | grep -qF "$op" || fail "profile lacks $op: $prof"
done
gemm=$("$bin" bench --gemm) || fail "bench --gemm"
[ "$(echo "$gemm" | grep -c sgemm_gflops)" -eq 2 ] || fail "bench --gemm should print 2 lines: $gemm"
# the same seed gives the same loss bits at 1 and 2 threads (the JSON carries the last loss exactly)
l1=$(echo "$out" | grep -o '"final_loss":"[^"]*"')
l2=$("$bin" bench --shape tiny --steps 3 --warmup 1 --threads 2 | grep -o '"final_loss":"[^"]*"')
[ -n "$l1" ] && [ "$l1" = "$l2" ] || fail "final loss differs between 1 and 2 threads: $l1 vs $l2"
"$bin" bench --shape huge 2> /dev/null && fail "an unknown shape was accepted"
# floor: tiny's graph at V 4, T 2, C 8, B 1 (the per-step overhead), not one of `all`'s shapes
floor=$("$bin" bench --shape floor --steps 3 --warmup 1 --threads 2) || fail "bench --shape floor"
echo "$floor" | grep -q '"shape":"floor","threads":2' && echo "$floor" | grep -q '"context":2,' ||
  fail "bench --shape floor: $floor"
"$bin" bench --steps 1 --warmup 0 --threads 1 | grep -q '"shape":"floor"' && fail "bench --shape all ran floor"
# --scaling: one line per T = 64 ... 1024, each from its own process, at 2048 tokens a step, with every field
scaling=$("$bin" bench --scaling --steps 1 --warmup 0 --threads 2) || fail "bench --scaling"
[ "$(echo "$scaling" | grep -c '"ms_per_step"')" -eq 5 ] || fail "bench --scaling should print 5 lines: $scaling"
i=0
for T in 64 128 256 512 1024; do
  i=$((i + 1))
  line=$(echo "$scaling" | sed -n "${i}p")
  echo "$line" | grep -q "\"shape\":\"T$T\"" || fail "line $i of --scaling is not T$T: $line"
  echo "$line" | grep -q "\"context\":$T," || fail "line $i of --scaling lacks context $T: $line"
  echo "$line" | grep -q "\"batch\":$((2048 / T))," || fail "T$T should run batch $((2048 / T)): $line"
  for key in threads params ms_per_step tokens_per_s gflops peak_rss_mb final_loss; do
    echo "$line" | grep -q "\"$key\"" || fail "bench --scaling T$T lacks $key: $line"
  done
done
echo "PASS: bench, --profile, --gemm, thread-independent losses, floor, --scaling"
