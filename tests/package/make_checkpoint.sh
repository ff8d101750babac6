#!/usr/bin/env bash
# A small trained checkpoint for examples/read_attention, and the attention the app writes for a prompt:
# `tinyformer train configs/reverse.yaml` for a few steps, then `tinyformer attention --out`.
# usage: make_checkpoint.sh TINYFORMER SOURCE_DIR WORK_DIR PROMPT
set -euo pipefail
app="$1" source="$2" work="$3" prompt="$4"
rm -rf "$work"
mkdir -p "$work"
"$app" train "$source/configs/reverse.yaml" --out "$work/run" --quiet --set training.steps=60 \
  --set schedule.warmup_steps=10 --set logging.attention_interval=0
"$app" attention "$work/run/checkpoint.safetensors" --prompt "$prompt" --out "$work/maps"
test -f "$work/maps/attention.npy"
