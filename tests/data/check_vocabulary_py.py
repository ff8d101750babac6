#!/usr/bin/python3
"""scripts/vocabulary.py on the sentencepiece layout (data.tokenizer bpe and unigram), against tinyformer itself:
for a checkpoint of each tokenizer it reads the pieces (parse_vocabulary), gets the model's bytes back
(sentencepiece_model) and writes the same text again (serialize_sentencepiece); Python's SentencePiece on those
bytes encodes 200 generated texts to tinyformer's ids (tests/tools/encode_text); and 300 generated corruptions
of the text (a byte changed anywhere) are refused with ValueError, or read back as the same pieces. About two
seconds (two tokenizers trained on configs/data/simple_english.txt, no training steps).
Usage: check_vocabulary_py.py --app build/bin/tinyformer --encode-tool build/tests/encode_text --work-dir DIR"""
import argparse
import os
import random
import subprocess
import sys

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
import vocabulary  # noqa: E402
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
        text = read_safetensors(ckpt)[1]["tinyformer.vocab"]
        layout, pieces = vocabulary.parse_vocabulary(text)
        assert layout == "sentencepiece" and len(pieces) == 400, (layout, len(pieces))
        assert pieces[:3] == ["<unk>", "<s>", "</s>"] and pieces[3] == "<0x00>" and pieces[258] == "<0xFF>"
        model = vocabulary.sentencepiece_model(text)
        assert vocabulary.serialize_sentencepiece(model) == text, "serialize_sentencepiece does not give the same text"
        sp = sentencepiece.SentencePieceProcessor(model_proto=model)
        assert [sp.IdToPiece(i) for i in range(sp.GetPieceSize())] == pieces

        samples = texts(200, 7)
        path = os.path.join(args.work_dir, f"{tokenizer}_texts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in samples))
        ours = [[int(x) for x in line.split()] for line in run([args.encode_tool, ckpt, path]).split("\n")[:-1]]
        assert len(ours) == len(samples), (len(ours), len(samples))
        for t, ids in zip(samples, ours):
            assert sp.encode(t) == ids, (t, sp.encode(t), ids)

        rng = random.Random(11)
        refused = same = 0
        for _ in range(300):
            at = rng.randrange(len(text))
            bad = text[:at] + chr(rng.choice([c for c in range(32, 127) if chr(c) != text[at]] + [10, 0xe9])) + \
                text[at + 1:]
            try:
                got = vocabulary.parse_vocabulary(bad)
            except ValueError:
                refused += 1
                continue
            assert got == (layout, pieces), f"a corruption at {at} was read as other pieces"
            same += 1
        assert refused >= 290, (refused, same)
        print(f"{tokenizer}: {len(pieces)} pieces read, the same text written back, {len(samples)} texts encoded to "
              f"tinyformer's ids; {refused} of 300 corruptions refused, {same} read as the same pieces")
    print("PASS")


if __name__ == "__main__":
    main()
