#!/usr/bin/python3
"""A checkpoint's SentencePiece model (data.tokenizer bpe and unigram) in Python, as docs/formats.md describes it:
line 2 of the `tinyformer.vocab` metadata is the model in base64; Python's SentencePiece loads those bytes, has the
header's count of pieces with <unk>, <s>, </s> and the byte pieces at their documented ids, and encodes 200
generated texts to tinyformer's ids (tests/tools/encode_text). About two seconds (two tokenizers trained on
configs/data/simple_english.txt, no training steps).
Usage: check_sentencepiece_py.py --app build/bin/tinyformer --encode-tool build/tests/encode_text --work-dir DIR"""
import argparse
import base64
import os
import random
import subprocess
import sys

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
from read_safetensors import read_safetensors  # noqa: E402

CORPUS = os.path.join(SOURCE_DIR, "configs", "data", "simple_english.txt")


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def checkpoint(args, tokenizer):
    out = os.path.join(args.work_dir, tokenizer)
    run([args.app, "train", os.path.join(SOURCE_DIR, "configs", "text.yaml"), "--out", out, "--overwrite", "--quiet",
         "--set", f"data.path={CORPUS}", "--set", f"data.tokenizer={tokenizer}", "--set", "data.vocab_size=400",
         "--set", "model.context=48", "--set", "training.steps=0", "--set", "schedule.warmup_steps=0",
         "--set", "logging.attention_interval=0", "--set", "logging.probe="])
    return os.path.join(out, "checkpoint.safetensors")


def texts(n, seed):
    rng = random.Random(seed)
    words = open(CORPUS, encoding="utf-8").read().split()[:3000]
    extra = ["é", "☃", "𝄞", "  ", "12345", "\t", "ß", "—", ",", "The"]
    return [" ".join(rng.choice(words) if rng.random() < 0.7 else rng.choice(extra)
                     for _ in range(rng.randint(1, 10))) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--encode-tool", required=True)
    ap.add_argument("--work-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    import sentencepiece
    for tokenizer in ("bpe", "unigram"):
        ckpt = checkpoint(args, tokenizer)
        header, model, end = read_safetensors(ckpt)[1]["tinyformer.vocab"].split("\n")
        magic, version, layout, count, checksum = header.split(" ")
        assert (magic, version, layout, count, end) == ("tinyformer-vocabulary", "1", "sentencepiece", "400", ""), header
        assert len(checksum) == 16, checksum
        sp = sentencepiece.SentencePieceProcessor(model_proto=base64.b64decode(model, validate=True))
        pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
        assert len(pieces) == 400, len(pieces)
        assert pieces[:3] == ["<unk>", "<s>", "</s>"] and pieces[3] == "<0x00>" and pieces[258] == "<0xFF>"

        samples = texts(200, 7)
        path = os.path.join(args.work_dir, f"{tokenizer}_texts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in samples))
        ours = [[int(x) for x in line.split()] for line in run([args.encode_tool, ckpt, path]).split("\n")[:-1]]
        assert len(ours) == len(samples), (len(ours), len(samples))
        for t, ids in zip(samples, ours):
            assert sp.encode(t) == ids, (t, sp.encode(t), ids)

        print(f"{tokenizer}: the model of the checkpoint's vocabulary loaded, {len(pieces)} pieces; {len(samples)} "
              "texts encoded to tinyformer's ids")
    print("PASS")


if __name__ == "__main__":
    main()
