#!/usr/bin/python3
"""tinyformer export --format llama2c, checked with tests/llama2c/read_llama2c.py (a reader written from
docs/formats.md): the logits within 1e-5 (tied and untied classifiers), run.c's encoder on tokenizer.bin equal to
SentencePiece's ids on generated texts, `sample --temperature 0` equal to run.c's greedy generation, and models or
tokenizers run.c cannot run refused in one line naming the option. With --run-c (a built llama2.c `run`), run.c's
own output is compared too. A few seconds here (eight tiny trainings on configs/data/simple_english.txt)."""
import argparse
import json
import os
import random
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_llama2c as llama2c  # noqa: E402

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(SOURCE_DIR, "configs", "data", "simple_english.txt")
LLAMA = ["model.norm=rmsnorm", "model.mlp=swiglu", "model.position=rope", "model.bias=false", "model.d_model=32",
         "model.n_head=4", "model.n_layer=2", "model.context=48", f"data.path={CORPUS}", "data.tokenizer=bpe",
         "data.vocab_size=400", "training.batch_size=8", "training.eval_interval=1000", "training.eval_batches=1",
         "logging.attention_interval=0", "logging.probe=", "schedule.name=constant", "optimizer.lr=3e-3"]


def run(cmd, expect_ok=True):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if (p.returncode == 0) != expect_ok:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def train(args, name, *overrides):
    out = os.path.join(args.work_dir, name)
    cmd = [args.app, "train", os.path.join(SOURCE_DIR, "configs", "text.yaml"), "--out", out, "--overwrite",
           "--quiet"]
    for o in overrides:
        cmd += ["--set", o]
    run(cmd)
    return os.path.join(out, "checkpoint.safetensors")


def export(args, ckpt, name, expect_ok=True, fmt="llama2c"):
    out = os.path.join(args.work_dir, name)
    p = run([args.app, "export", ckpt, "--format", fmt, "--out", out], expect_ok)
    return out, p


def tinyformer_logits(args, ckpt, ids):
    ids_path, out_path = os.path.join(args.work_dir, "ids.npy"), os.path.join(args.work_dir, "logits.npy")
    np.save(ids_path, np.asarray([ids], dtype=np.int32))
    run([args.logits_tool, ckpt, ids_path, out_path])
    return np.load(out_path)[0]


def check_logits(args, ckpt, out):
    cfg, w = llama2c.read_model(os.path.join(out, "model.bin"))
    tok = llama2c.read_tokenizer(os.path.join(out, "tokenizer.bin"), cfg["vocab_size"])
    ids = llama2c.encode(tok, "Once upon a time, there was a little fox. It lived in the woods")[:cfg["seq_len"]]
    ours, theirs = tinyformer_logits(args, ckpt, ids), llama2c.forward(cfg, w, ids)
    diff = float(np.abs(ours - theirs).max())
    print(f"logits of {len(ids)} tokens: max |tinyformer - reader| = {diff:.2e} (shared classifier: "
          f"{cfg['shared_classifier']})")
    assert diff < 1e-5, diff
    return cfg, w, tok


def random_texts(n, seed):
    """Texts from the corpus's words, punctuation, digits, spaces and characters outside it (byte fallback)."""
    rng = random.Random(seed)
    words = open(CORPUS, encoding="utf-8").read().split()[:5000]
    extra = ["é", "☃", "𝄞", "  ", "12345", "\t", "ß", "—", "x", ",", "The", "\\n"]
    texts = []
    for _ in range(n):
        parts = [rng.choice(words) if rng.random() < 0.7 else rng.choice(extra) for _ in range(rng.randint(1, 12))]
        texts.append((" " if rng.random() < 0.8 else "").join(parts))
    return texts


def check_encoder(args, ckpt, tok):
    texts = random_texts(300, 5)
    path = os.path.join(args.work_dir, "texts.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in texts))
    lines = run([args.encode_tool, ckpt, path]).stdout.split("\n")
    for text, line in zip(texts, lines):
        spm = [1] + [int(x) for x in line.split()]
        runc = llama2c.encode(tok, text.replace("\\n", "\n"))
        assert runc == spm, (text, runc, spm)
    print(f"run.c's encoder on tokenizer.bin gives SentencePiece's ids for {len(texts)} generated texts")


def check_greedy(args, ckpt, out, cfg, w, tok):
    for prompt in ["Once upon a time", "The little", "It was"]:
        steps = 40
        ids, printed = llama2c.generate_greedy(cfg, w, tok, prompt, steps)
        new = steps - len(llama2c.encode(tok, prompt)) + 1  # run.c's -n counts the prompt's tokens after <s>
        ours = run([args.app, "sample", ckpt, "--prompt", prompt, "--temperature", "0", "--tokens", new]).stdout
        assert ours == printed.decode("utf-8") + "\n", (prompt, ours, printed)
        if args.run_c:
            theirs = run([args.run_c, os.path.join(out, "model.bin"), "-z", os.path.join(out, "tokenizer.bin"),
                          "-t", "0", "-n", steps, "-i", prompt]).stdout
            assert theirs == ours, (prompt, theirs, ours)
        print(f"greedy from {prompt!r}: sample prints the reader's run.c generation"
              f"{' and run.c prints it too' if args.run_c else ''}: {ours.strip()!r}")


def check_q8(args, ckpt, name, prompt_check):
    """--format llama2c-q8 (runq.c's model_q80.bin): each weight within half its group's scale of model.bin's, the
    scale max|w| / 127, the norms exact, the same tokenizer.bin; the logits through the dequantised weights close."""
    out = export(args, ckpt, name + "_llama2c")[0]
    out_q = export(args, ckpt, name + "_llama2c_q8", fmt="llama2c-q8")[0]
    cfg, w = llama2c.read_model(os.path.join(out, "model.bin"))
    cfg_q, w_q, gs = llama2c.read_model_q80(os.path.join(out_q, "model_q80.bin"))
    assert {k: cfg[k] for k in llama2c.HEADER} == {k: cfg_q[k] for k in llama2c.HEADER}, (cfg, cfg_q)
    assert cfg["shared_classifier"] == cfg_q["shared_classifier"]
    assert open(os.path.join(out, "tokenizer.bin"), "rb").read() == open(os.path.join(out_q, "tokenizer.bin"),
                                                                          "rb").read()
    worst = 0.0
    for k, v in w_q.items():
        ref = w[k]
        if k.startswith("rms_"):
            assert np.array_equal(v, ref), k
            continue
        groups, deq = ref.reshape(-1, gs), v.reshape(-1, gs)
        scale = np.abs(groups).max(axis=1, keepdims=True) / 127
        err = np.abs(groups - deq)
        assert np.all(err <= scale * (0.5 + 1e-5) + 1e-12), (k, float((err / np.maximum(scale, 1e-30)).max()))
        worst = max(worst, float((err / np.maximum(scale, 1e-30)).max()))
    tok = llama2c.read_tokenizer(os.path.join(out, "tokenizer.bin"), cfg["vocab_size"])
    ids = llama2c.encode(tok, "Once upon a time, there was a little fox. It lived in the woods")[:cfg["seq_len"]]
    f, q = llama2c.forward(cfg, w, ids), llama2c.forward(cfg_q, w_q, ids)
    rel = float(np.abs(f - q).max() / np.abs(f).max())
    assert rel < 0.05, rel
    agree = float(np.mean(f.argmax(axis=1) == q.argmax(axis=1)))
    print(f"llama2c-q8 ({name}): group size {gs}, every weight within {worst:.3f} of its group's scale, logits of "
          f"{len(ids)} tokens within {rel:.2e} of the largest, argmax agreeing at {agree:.0%} of positions")
    if args.run_q and prompt_check:
        theirs = run([args.run_q, os.path.join(out_q, "model_q80.bin"), "-z", os.path.join(out_q, "tokenizer.bin"),
                      "-t", "0", "-n", 40, "-i", "Once upon a time"]).stdout
        assert theirs.startswith("Once upon a time") and len(theirs) > len("Once upon a time\n"), theirs
        print(f"runq.c reads it and prints: {theirs.strip()!r}")


def check_int8_decoder(args, ckpt):
    """The decoder's own int8 weights (`sample`'s engine, bench --sample --int8) against float32 on the tied model:
    perplexity on the corpus's last 20 kB within 2 %, the most likely next token the same at 90 % of positions."""
    text = os.path.join(args.work_dir, "tail.txt")
    with open(CORPUS, encoding="utf-8") as f:
        body = f.read()
    with open(text, "w", encoding="utf-8") as f:
        f.write(body[-20000:])
    j = json.loads(run([args.int8_tool, ckpt, text, 2000, "Once upon a time", 40]).stdout)
    assert j["perplexity_q8"] < 1.02 * j["perplexity_f32"] and j["top1_agreement"] >= 0.9, j
    print(f"int8 decoder: perplexity {j['perplexity_q8']:.3f} against float32's {j['perplexity_f32']:.3f} on "
          f"{j['scored_tokens']} tokens, top-1 agreement {j['top1_agreement']:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--app", required=True)
    ap.add_argument("--logits-tool", required=True)
    ap.add_argument("--encode-tool", required=True)
    ap.add_argument("--int8-tool", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--run-c", default=os.environ.get("LLAMA2C_RUN", ""), help="a built llama2.c run (optional)")
    ap.add_argument("--run-q", default=os.environ.get("LLAMA2C_RUNQ", ""), help="a built llama2.c runq (optional)")
    args = ap.parse_args()
    if args.run_q and not os.access(args.run_q, os.X_OK):
        print(f"note: {args.run_q} is not an executable file: runq.c itself is not run")
        args.run_q = ""
    if args.run_c and not os.access(args.run_c, os.X_OK):
        print(f"note: {args.run_c} is not an executable file: run.c itself is not run")
        args.run_c = ""
    elif not args.run_c:
        print("note: run.c itself is not run (no llama2.c here; configure with -DTINYFORMER_LLAMA2C_RUN=path/to/run or "
              "set LLAMA2C_RUN): the greedy text is compared with this reader's run.c generation only")
    os.makedirs(args.work_dir, exist_ok=True)

    tied = train(args, "tied", *LLAMA, "model.tie_weights=true", "training.steps=60")
    out, _ = export(args, tied, "tied_llama2c")
    cfg, w, tok = check_logits(args, tied, out)
    check_encoder(args, tied, tok)
    check_greedy(args, tied, out, cfg, w, tok)
    check_q8(args, tied, "tied", True)
    check_int8_decoder(args, tied)

    untied = train(args, "untied", *LLAMA, "model.tie_weights=false", "training.steps=3")
    check_logits(args, untied, export(args, untied, "untied_llama2c")[0])
    check_q8(args, untied, "untied", False)
    # grouped-query attention: 4 query heads on 2 key/value heads (run.c's n_kv_heads, kv head = h / (H / Hkv))
    gqa = train(args, "gqa", *LLAMA, "model.tie_weights=true", "model.n_kv_head=2", "training.steps=3")
    check_logits(args, gqa, export(args, gqa, "gqa_llama2c")[0])

    refusals = [("layernorm", ["model.norm=layernorm"], "model.norm"), ("gelu", ["model.mlp=gelu"], "model.mlp"),
                ("learned", ["model.position=learned"], "model.position"), ("bias", ["model.bias=true"], "model.bias"),
                ("unigram", ["data.tokenizer=unigram", "data.vocab_size=340"], "data.tokenizer"),
                ("char", ["data.tokenizer=char"], "data.tokenizer")]
    for name, overrides, key in refusals:
        ckpt = train(args, name, *LLAMA, *overrides, "training.steps=1")
        out, p = export(args, ckpt, name + "_llama2c", expect_ok=False)
        lines = p.stderr.strip().split("\n")
        assert len(lines) == 1 and key in lines[0], (name, p.stderr)
        assert not os.path.exists(os.path.join(out, "model.bin")), name
        print(f"refused ({name}): {lines[0]}")
        if name == "layernorm":  # llama2c-q8 goes through the same checks
            out, p = export(args, ckpt, name + "_llama2c_q8", expect_ok=False, fmt="llama2c-q8")
            lines = p.stderr.strip().split("\n")
            assert len(lines) == 1 and key in lines[0], (name, p.stderr)
            # the flag's value and the program as given: it said "--format llama2c" and run.c for runq.c's format
            assert "--format llama2c-q8:" in lines[0] and "runq.c" in lines[0], (name, p.stderr)
            assert not os.path.exists(os.path.join(out, "model_q80.bin")), name
    return 0


if __name__ == "__main__":
    sys.exit(main())
