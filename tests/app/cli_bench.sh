#!/usr/bin/env bash
# app: `tinyformer bench` prints one JSON line per shape with every field the issue names, --profile adds
# the per-op table, --gemm the SGEMM limit; and the losses of a run do not depend on the thread count.
set -uo pipefail
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }
out=$(TINYFORMER_GEMM=measure "$bin" bench --shape tiny --steps 3 --warmup 1 --threads 1) || fail "bench tiny"
for key in shape context batch threads params ms_per_step tokens_per_s gflops peak_rss_mb final_loss gemm gemm_plan; do
  grep -q "\"$key\"" <<< "$out" || fail "bench output lacks $key: $out"
done
# what measure measured is in its JSON; auto's rule measures nothing and prints no such field
grep -q '"gemm_measured_us"' <<< "$out" || fail "bench under measure lacks gemm_measured_us: $out"
"$bin" bench --shape floor --steps 1 --warmup 0 | grep -q '"gemm_measured_us"' && fail "auto printed gemm_measured_us"
# one thread is one thread: the process uses no more CPU time than wall-clock time at --threads 1 (OpenBLAS's own
# workers, which spin for about 0.1 s when idle, are stopped: tensor/parallel.cpp). With them running, 10 steps of
# tiny took 1.9x the CPU time of the wall-clock time on the 2-core host; a loaded machine can only lower the ratio.
one=$("$bin" bench --shape tiny --threads 1 --steps 10 --warmup 2) || fail "bench tiny at 1 thread"
/usr/bin/python3 -c 'import json, sys; r = json.loads(sys.argv[1]); ratio = r["cpu_ms_per_step"] / r["ms_per_step"]
sys.exit(0 if ratio <= 1.25 else f"FAIL: at 1 thread a step took {ratio:.2f}x its wall-clock time in CPU time")' \
  "$one" || exit 1
prof=$("$bin" bench --shape tiny --steps 3 --warmup 1 --threads 2 --profile) || fail "bench --profile"
for op in linear causal_self_attention layer_norm gelu cross_entropy "optimizer step (AdamW)"; do
  grep -qF "$op" <<< "$prof" || fail "profile lacks $op: $prof"
done
gemm=$("$bin" bench --gemm) || fail "bench --gemm"
# each library and the choice per shape (auto's rule, and measure's timing where there are two libraries), at 1 and 2
# threads; libxsmm where the build has it
libs=openblas choices=auto
TINYFORMER_GEMM=libxsmm "$bin" bench --shape floor --steps 1 --warmup 0 > /dev/null 2>&1 &&
  libs="openblas libxsmm" choices="auto measure"
for g in $libs $choices; do
  for t in 1 2; do
    grep -q "\"gemm\":\"$g\".*\"threads\":$t}" <<< "$gemm" || fail "bench --gemm lacks $g at $t threads: $gemm"
  done
done
# OpenBLAS's lines name the core type it runs and the best one this CPU allows (a user's OPENBLAS_CORETYPE may hold it
# below that)
grep '"gemm":"openblas"' <<< "$gemm" | grep -q '"openblas_core":.*"openblas_cpu_best":' ||
  fail "bench --gemm's OpenBLAS lines lack openblas_core or openblas_cpu_best: $gemm"
# the same seed gives the same loss bits at 1 and 2 threads, in two processes (the JSON carries the last loss exactly),
# under each forced library and under auto (the default, a rule), and under measure when the 2-thread run replays the
# plan of the 1-thread run (TINYFORMER_GEMM_PLAN)
final_loss() { grep -o '"final_loss":"[^"]*"'; }
for g in $libs auto; do
  l1=$(TINYFORMER_GEMM=$g "$bin" bench --shape tiny --steps 3 --warmup 1 --threads 1 | final_loss)
  l2=$(TINYFORMER_GEMM=$g "$bin" bench --shape tiny --steps 3 --warmup 1 --threads 2 | final_loss)
  [ -n "$l1" ] && [ "$l1" = "$l2" ] || fail "TINYFORMER_GEMM=$g: final loss differs at 1 and 2 threads: $l1 vs $l2"
done
plan=$(mktemp)
trap 'rm -f "$plan"' EXIT
echo "$out" | /usr/bin/python3 -c 'import json, sys; print("\n".join(json.loads(sys.stdin.read())["gemm_plan"]))' \
  > "$plan" || fail "bench output has no gemm_plan: $out"
l1=$(echo "$out" | final_loss)
l2=$(TINYFORMER_GEMM=measure TINYFORMER_GEMM_PLAN="$plan" "$bin" bench --shape tiny --steps 3 --warmup 1 --threads 2 | final_loss)
[ -n "$l1" ] && [ "$l1" = "$l2" ] || fail "final loss differs between 1 and 2 threads on one plan: $l1 vs $l2"
bad=$(TINYFORMER_GEMM=fast "$bin" bench --shape floor --steps 1 2>&1) && fail "TINYFORMER_GEMM=fast was accepted: $bad"
[ "$bad" = "tinyformer: error: TINYFORMER_GEMM='fast': expected auto, measure, openblas or libxsmm" ] ||
  fail "a bad TINYFORMER_GEMM was not refused in one line: $bad"
"$bin" bench --shape huge 2> /dev/null && fail "an unknown shape was accepted"
# TINYFORMER_KERNEL_ISA: a level for a portable build's kernels; a native build refuses it, a portable one refuses
# what is not a level, each in one line before any work
kernels=$("$bin" bench --shape floor --steps 1 --warmup 0 | grep -o '"kernels":"[^"]*"') || fail "bench lacks kernels"
for value in x86-64-v2 x86-64-v4 avx2 v3 x86-64-v5 'x86-64-v3 '; do
  bad=$(TINYFORMER_KERNEL_ISA="$value" "$bin" bench --shape floor --steps 1 --warmup 0 2>&1)
  status=$?
  if [ "$kernels" = '"kernels":"native"' ]; then
    [ $status -ne 0 ] && [ "$bad" = "tinyformer: error: TINYFORMER_KERNEL_ISA=$value: this build is native (-march=native), its kernels have one instruction set; the variable applies to a portable build (cmake --preset portable)" ] ||
      fail "a native build did not refuse TINYFORMER_KERNEL_ISA=$value in one line: $bad"
  else
    case "$value" in x86-64-v2 | x86-64-v4) continue ;; esac  # levels (v4 is refused only where the CPU lacks it)
    [ $status -ne 0 ] && [ "$bad" = "tinyformer: error: TINYFORMER_KERNEL_ISA='$value': expected x86-64-v2, x86-64-v3 or x86-64-v4" ] ||
      fail "TINYFORMER_KERNEL_ISA=$value was not refused in one line: $bad"
  fi
done
# floor: tiny's graph at V 4, T 2, C 8, B 1 (the per-step overhead), not one of `all`'s shapes
floor=$("$bin" bench --shape floor --steps 3 --warmup 1 --threads 2) || fail "bench --shape floor"
grep -q '"shape":"floor","threads":2' <<< "$floor" && grep -q '"context":2,' <<< "$floor" ||
  fail "bench --shape floor: $floor"
"$bin" bench --steps 1 --warmup 0 --threads 1 | grep -q '"shape":"floor"' && fail "bench --shape all ran floor"
# --scaling: one line per T = 64 ... 1024, each from its own process, at 2048 tokens a step, with every field
scaling=$("$bin" bench --scaling --steps 1 --warmup 0 --threads 2) || fail "bench --scaling"
[ "$(echo "$scaling" | grep -c '"ms_per_step"')" -eq 5 ] || fail "bench --scaling should print 5 lines: $scaling"
i=0
for T in 64 128 256 512 1024; do
  i=$((i + 1))
  line=$(echo "$scaling" | sed -n "${i}p")
  grep -q "\"shape\":\"T$T\"" <<< "$line" || fail "line $i of --scaling is not T$T: $line"
  grep -q "\"context\":$T," <<< "$line" || fail "line $i of --scaling lacks context $T: $line"
  grep -q "\"batch\":$((2048 / T))," <<< "$line" || fail "T$T should run batch $((2048 / T)): $line"
  for key in threads params ms_per_step tokens_per_s gflops peak_rss_mb final_loss; do
    grep -q "\"$key\"" <<< "$line" || fail "bench --scaling T$T lacks $key: $line"
  done
done
# --compare-gemm: the plan of the timed steps against another, paired steps in one process; each plan's libraries as
# they were in force (every product on OpenBLAS against the plan of TINYFORMER_GEMM=libxsmm: all on libxsmm), the
# ratio between its quartiles; a bad value, or one that --gemm or --sample would ignore, refused in one line
against=openblas
[ "$libs" = openblas ] || against=other
cmp=$(TINYFORMER_GEMM=${libs##* } "$bin" bench --shape tiny --steps 4 --warmup 1 --threads 1 --compare-gemm "$against" |
  grep '"gemm_compare"') || fail "bench --compare-gemm $against"
echo "$cmp" | /usr/bin/python3 -c '
import json, sys
against, lib = sys.argv[1], sys.argv[2]
c = json.loads(sys.stdin.read())
assert c["gemm_compare"] == "tiny" and c["against"] == against and c["pairs"] == 4 and c["threads"] == 1, c
assert c["chosen_ms"] > 0 and c["against_ms"] > 0 and 0 < c["ratio_q1"] <= c["ratio"] <= c["ratio_q3"], c
other = "openblas" if lib == "libxsmm" else "libxsmm"
assert c["chosen_plan"].startswith(f"{other} 0, ") or c["chosen_plan"].endswith(f"{other} 0"), c  # all on lib
if against == "openblas":
    assert c["against_plan"].startswith("libxsmm 0, "), c
else:  # each shape on the other library: everything moved
    assert c["against_plan"].startswith("libxsmm 0, ") or c["against_plan"].endswith("openblas 0"), c
    assert c["against_plan"] != c["chosen_plan"], c
' "$against" "${libs##* }" || fail "bench --compare-gemm: $cmp"
bad=$("$bin" bench --shape tiny --compare-gemm fastest 2>&1) && fail "--compare-gemm fastest was accepted"
[ "$(echo "$bad" | wc -l)" -eq 1 ] && grep -qF "fastest not in {openblas,libxsmm,other}" <<< "$bad" ||
  fail "a bad --compare-gemm was not refused in one line: $bad"
for other in --gemm --sample --scaling; do
  bad=$("$bin" bench $other --compare-gemm openblas 2>&1) && fail "$other --compare-gemm was accepted"
  grep -q "excludes" <<< "$bad" || fail "$other --compare-gemm was not refused as a usage error: $bad"
done
echo "PASS: bench, --profile, --gemm per library, thread-independent losses per library and plan, floor, --scaling, --compare-gemm"
