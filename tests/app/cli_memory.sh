#!/usr/bin/env bash
# app: the memory estimate printed in the run's header line ("~ 45 MiB") against reality. For two configs that
# need far more memory than the process's baseline (libraries, OpenBLAS, the thread pool), the measured peak
# resident memory (getrusage's ru_maxrss of the child) minus the baseline of a tiny run is within a stated factor
# of the estimate: 0.5 x growth <= estimate <= 3 x growth.
set -uo pipefail
bin="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
source "$(dirname "$0")/support.sh"
if [ -n "${TINYFORMER_SANITIZED:-}" ]; then
  # Under AddressSanitizer every allocation carries redzones and freed blocks wait in a quarantine, so the resident
  # memory is not the program's own: the comparison runs in the release build only.
  echo "SKIP: sanitizer build; the estimate is compared with the measured memory in the release build"
  exit 0
fi
cfg="$src/configs/reverse.yaml"
common=(--set schedule.warmup_steps=0 --set logging.attention_interval=0 --set training.steps=2
        --set training.eval_interval=2 --set training.eval_batches=1 --set training.threads=1)

# peak LABEL ARGS...: prints "<estimate bytes> <peak RSS bytes>" of `train ARGS`.
peak() {
  local label="$1"; shift
  python3 - "$bin" "$cfg" "$work/$label" "$@" <<'PY' || fail "$label: the run failed"
import re, resource, subprocess, sys
binary, cfg, out, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
p = subprocess.run([binary, "train", cfg, "--out", out] + args, capture_output=True, text=True)
if p.returncode != 0:
    sys.exit(p.stderr)
m = re.search(r"\| ~ ([0-9.]+) (B|KiB|MiB|GiB) \|", p.stdout)
if not m:
    sys.exit("no '~ <size>' in the header: " + p.stdout.splitlines()[0])
units = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
estimate = float(m.group(1)) * units[m.group(2)]
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
print(f"{estimate:.0f} {rss}")
PY
}

read -r est0 base < <(peak tiny "${common[@]}" --set model.d_model=16 --set model.n_layer=1 --set training.batch_size=4 --set data.eval_size=16)
echo "baseline: peak RSS $((base / 1048576)) MiB (estimate $((est0 / 1024)) KiB)"
check() {
  local label="$1"; shift
  local est rss
  read -r est rss < <(peak "$label" "${common[@]}" "$@")
  local growth=$((rss - base))
  echo "$label: estimate $((est / 1048576)) MiB, peak RSS $((rss / 1048576)) MiB, growth $((growth / 1048576)) MiB"
  python3 -c "
import sys
est, growth = $est, $growth
ratio = est / max(growth, 1)
print(f'  estimate / growth = {ratio:.2f}')
sys.exit(0 if 0.5 <= ratio <= 3.0 else 1)" || fail "$label: the estimate is not within 0.5x to 3x of the measured growth"
}
# activations dominate: a large batch of long sequences (the attention's [B,H,T,T])
check activations --set data.length=32 --set training.batch_size=256 --set model.d_model=64
# parameters and AdamW state dominate: a wide, deep model on a small batch
check parameters --set model.d_model=512 --set model.n_layer=6 --set training.batch_size=4
echo "PASS"
