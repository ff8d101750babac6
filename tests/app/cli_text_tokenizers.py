#!/usr/bin/python3
"""Text runs with each tokenizer: val_bpb where the loss is, and `sample` printing SentencePiece tokens as they come.

A small run of each of data.tokenizer char, bpe and unigram (40 steps on configs/data/simple_english.txt) writes
val_bpb beside every val_loss of metrics.jsonl, in its summary line and in its report's chart. Then for bpe and unigram
and a prompt with characters outside the vocabulary (☃ and é: byte fallback):
  - the greedy text equals the whole sequence decoded at once: ids made greedily from tests/tools/logits_dump's logits,
    decoded by Python's SentencePiece from the checkpoint's own model (docs/formats.md), against the printed
    text of `sample --temperature 0 --no-cache`, which prints as it goes;
  - the checkpoint alone serves them (the training text is removed first): `attention` labels the maps with the pieces
    (▁ shown as ␣) and `heads --prompt` scores the heads;
  - the text comes while the tokens are made: with --tokens 1000000 (minutes of work), the prompt and the first new
    characters arrive while the process is still running, in reads of less than stdio's 4096-byte buffer, each read
    whole UTF-8 (a byte-fallback character never cut at a flush); then the process is killed.
About 6 CPU seconds (two tokenizers trained, three tiny trainings, 2 x 24 logits_dump calls).
usage: cli_text_tokenizers.py --app BIN --logits-tool TOOL --work-dir DIR"""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import time

import numpy as np

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
from read_safetensors import read_safetensors  # noqa: E402

CORPUS = os.path.join(SOURCE_DIR, "configs", "data", "simple_english.txt")
PROMPT = "The snowman \u2603 sat in the caf\u00e9"
NEW_TOKENS = 24


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout!r}\n{p.stderr!r}")
    return p.stdout


def train(args, tokenizer):
    out = os.path.join(args.work_dir, tokenizer)
    sets = [f"data.path={args.corpus}", f"data.tokenizer={tokenizer}", "model.context=48",
            "model.d_model=32", "model.n_layer=1", "training.batch_size=8", "training.steps=40",
            "schedule.name=constant", "optimizer.lr=3e-3", "training.eval_interval=20", "training.eval_batches=1",
            "logging.attention_interval=0", "logging.probe="] + (["data.vocab_size=400"] if tokenizer != "char" else [])
    cmd = [args.app, "train", os.path.join(SOURCE_DIR, "configs", "text.yaml"), "--out", out, "--overwrite", "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    summary = run(cmd).decode()
    check_bpb(tokenizer, out, summary)
    return os.path.join(out, "checkpoint.safetensors")


def check_bpb(tokenizer, out, summary):
    """val_bpb beside every val_loss in metrics.jsonl, in the summary line and in the report's chart."""
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    evals = [r for r in rows if "val_loss" in r]
    assert [r["step"] for r in evals] == [20, 40], (tokenizer, evals)
    for r in evals:
        assert "val_bpb" in r and 0 < r["val_bpb"] < 20, (tokenizer, r)
    last = evals[-1]["val_bpb"]
    assert f"| val bpb {last:.4f}" in summary, (tokenizer, summary)
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        assert "Bits per byte (held out)" in f.read(), f"{tokenizer}: no bits-per-byte chart in the report"
    print(f"{tokenizer}: val_bpb at steps 20 and 40 in metrics.jsonl, {last:.4f} in the summary line and the report")


def greedy_text(args, ckpt, sp):
    """The prompt and NEW_TOKENS greedy tokens (sample's <s> first, its stop at <s>), decoded at once."""
    ids = [1] + sp.encode(PROMPT)
    assert any(3 <= i <= 258 for i in ids), f"the prompt should fall back to byte pieces: {ids}"
    ids_path, out_path = os.path.join(args.work_dir, "ids.npy"), os.path.join(args.work_dir, "logits.npy")
    for _ in range(NEW_TOKENS):
        np.save(ids_path, np.asarray([ids], dtype=np.int32))
        run([args.logits_tool, ckpt, ids_path, out_path])
        token = int(np.argmax(np.load(out_path)[0, -1]))
        if token == 1:
            break
        ids.append(token)
    return ids, sp.decode(ids)


def first_text_while_running(args, ckpt):
    """Reads sample's stdout until the prompt and 20 more bytes came; returns the reads and whether it still ran."""
    p = subprocess.Popen([args.app, "sample", ckpt, "--prompt", PROMPT, "--temperature", "0", "--tokens", "1000000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reads, got, deadline = [], b"", time.monotonic() + 60
    try:
        while len(got) < len(PROMPT.encode()) + 20 and time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 1.0)
            if not ready:
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            reads.append(chunk)
            got += chunk
        running = p.poll() is None
    finally:
        p.kill()
        p.wait()
    return reads, running


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--app", required=True)
    ap.add_argument("--logits-tool", required=True)
    ap.add_argument("--work-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    import sentencepiece
    args.corpus = os.path.join(args.work_dir, "corpus.txt")  # a copy, removed after training
    shutil.copy(CORPUS, args.corpus)
    train(args, "char")
    checkpoints = {tokenizer: train(args, tokenizer) for tokenizer in ("bpe", "unigram")}
    os.remove(args.corpus)  # sample, attention and heads --prompt need nothing beside the checkpoint
    for tokenizer, ckpt in checkpoints.items():
        maps = os.path.join(args.work_dir, f"{tokenizer}_maps")
        run([args.app, "attention", ckpt, "--prompt", PROMPT, "--out", maps])
        with open(os.path.join(maps, "report.html"), encoding="utf-8") as f:
            page = f.read()
        assert "\u2423" in page or "\\u2423" in page, f"{tokenizer}: the maps do not label pieces with ␣ for ▁"
        heads = run([args.app, "heads", ckpt, "--prompt", PROMPT]).decode()
        assert "L0 H0" in heads or "layer 0" in heads, heads
        model = read_safetensors(ckpt)[1]["tinyformer.vocab"].split("\n")[1]  # line 2: the model in base64
        sp = sentencepiece.SentencePieceProcessor(model_proto=base64.b64decode(model, validate=True))
        ids, expected = greedy_text(args, ckpt, sp)
        printed = run([args.app, "sample", ckpt, "--prompt", PROMPT, "--temperature", "0", "--no-cache",
                       "--tokens", len(ids) - 1 - len(sp.encode(PROMPT))]).decode("utf-8")
        assert printed == expected + "\n", (tokenizer, ids, printed, expected)
        assert printed.startswith(PROMPT), (tokenizer, printed)
        bytes_new = sum(3 <= i <= 258 for i in ids[1 + len(sp.encode(PROMPT)):])

        reads, running = first_text_while_running(args, ckpt)
        got = b"".join(reads)
        assert running, f"{tokenizer}: sample ended before its first {len(got)} bytes were read: {got!r}"
        assert got.startswith(PROMPT.encode()), (tokenizer, got)
        assert len(got) >= len(PROMPT.encode()) + 20, f"{tokenizer}: only {got!r} within 60 s"
        assert max(len(r) for r in reads) < 4096, f"{tokenizer}: a read of {max(len(r) for r in reads)} bytes"
        for r in reads:
            r.decode("utf-8")  # raises on a character cut at a flush
        print(f"{tokenizer}: sample --temperature 0 prints {len(ids) - 1} tokens ({bytes_new} new byte pieces) as "
              f"SentencePiece decodes them at once: {printed.strip()!r}; with --tokens 1000000 its first "
              f"{len(got)} bytes came in {len(reads)} reads of whole UTF-8 while it ran")
    print("PASS")


if __name__ == "__main__":
    main()
