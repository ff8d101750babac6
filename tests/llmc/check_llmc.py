#!/usr/bin/python3
"""tinyformer export --format llmc, checked with tests/llmc/read_llmc.py (a reader written from llm.c's loader and
docs/interop.md): the header, every tensor equal to the checkpoint's in llm.c's order and the padded rows zero, the
logits of llm.c's GPT-2 forward on model.bin within 1e-4 of tinyformer's, train.bin and val.bin holding the run's ids
and read back by the tokens task as llm.c's dataloader cuts them, and models, vocabularies and token files llm.c
cannot take refused in one line naming the key or file, with nothing written. About 3 seconds (a dozen tiny runs on
configs/data/simple_english.txt)."""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
import read_llmc as llmc  # noqa: E402
from read_safetensors import read_safetensors  # noqa: E402

CORPUS = os.path.join(SOURCE_DIR, "configs", "data", "simple_english.txt")
T = 32
GPT2 = ["model.d_model=32", "model.n_head=4", "model.n_layer=2", f"model.context={T}", "model.tie_weights=true",
        f"data.path={CORPUS}", "training.batch_size=4", "training.eval_batches=1", "logging.attention_interval=0",
        "logging.probe=", "schedule.name=constant", "optimizer.lr=3e-3"]
# llm.c's name of each tensor -> tinyformer's (a name without "transformer." is one per layer)
NAMES = {"wte": "transformer.wte.weight", "wpe": "transformer.wpe.weight", "ln1w": "ln_1.weight", "ln1b": "ln_1.bias",
         "qkvw": "attn.c_attn.weight", "qkvb": "attn.c_attn.bias", "attprojw": "attn.c_proj.weight",
         "attprojb": "attn.c_proj.bias", "ln2w": "ln_2.weight", "ln2b": "ln_2.bias", "fcw": "mlp.c_fc.weight",
         "fcb": "mlp.c_fc.bias", "fcprojw": "mlp.c_proj.weight", "fcprojb": "mlp.c_proj.bias",
         "lnfw": "transformer.ln_f.weight", "lnfb": "transformer.ln_f.bias"}


def run(cmd, expect_ok=True):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if (p.returncode == 0) != expect_ok:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def train(args, name, overrides, expect_ok=True):
    out = os.path.join(args.work_dir, name)
    cmd = [args.app, "train", os.path.join(SOURCE_DIR, "configs", "text.yaml"), "--out", out, "--overwrite", "--quiet"]
    for o in overrides:
        cmd += ["--set", o]
    return os.path.join(out, "checkpoint.safetensors"), run(cmd, expect_ok)


def export(args, ckpt, name, expect_ok=True):
    out = os.path.join(args.work_dir, name)
    return out, run([args.app, "export", ckpt, "--format", "llmc", "--out", out], expect_ok)


def one_line_naming(p, what, case):
    lines = p.stderr.strip().split("\n")
    assert len(lines) == 1 and what in lines[0], (case, p.stderr)
    print(f"refused ({case}): {lines[0]}")


def check_model(args, ckpt, out):
    h, params = llmc.read_model(os.path.join(out, "model.bin"))
    arrays, _ = read_safetensors(ckpt)
    V, L = arrays["transformer.wte.weight"].shape[0], h["L"]
    assert (h["maxT"], h["V"], h["L"], h["NH"], h["C"]) == (T, V, 2, 4, 32), h
    assert h["Vp"] % 128 == 0 and h["V"] <= h["Vp"] < h["V"] + 128, h  # llm.c's train_gpt2.py: a multiple of 128
    for name, ours in NAMES.items():
        theirs = params[name]
        if not ours.startswith("transformer."):  # stacked over the layers
            ours = np.stack([arrays[f"transformer.h.{l}.{ours}"] for l in range(L)])
        else:
            ours = arrays[ours]
        if name == "wte":
            assert not theirs[V:].any(), "the padded rows of wte are not zero"
            theirs = theirs[:V]
        assert theirs.shape == ours.shape and np.array_equal(theirs, ours), name
    print(f"model.bin: header {h}, 16 tensors equal to the checkpoint's in llm.c's order, wte's padding zero")
    ids = np.random.default_rng(0).integers(0, V, size=T)
    ids_path, logits_path = os.path.join(args.work_dir, "ids.npy"), os.path.join(args.work_dir, "logits.npy")
    np.save(ids_path, ids[None].astype(np.int32))
    run([args.logits_tool, ckpt, ids_path, logits_path])
    diff = float(np.abs(np.load(logits_path)[0] - llmc.forward(h, params, ids)).max())
    print(f"logits of {T} tokens: max |tinyformer - llm.c's forward on model.bin| = {diff:.2e}")
    assert diff < 1e-4, diff
    return h


def check_tokens(args, out, h):
    """train.bin and val.bin hold the run's ids (one per character of the corpus); the tokens task reads train.bin as
    llm.c's dataloader cuts it, and its export writes the same ids back."""
    train_ids, val_ids = (llmc.read_tokens(os.path.join(out, f)) for f in ("train.bin", "val.bin"))
    chars = len(open(CORPUS, encoding="utf-8").read())
    assert train_ids.size + val_ids.size == chars, (train_ids.size, val_ids.size, chars)
    assert max(train_ids.max(), val_ids.max()) < h["V"]
    print(f"train.bin, val.bin: {train_ids.size} + {val_ids.size} ids, one per character of the corpus")
    data = os.path.join(out, "train.bin")
    ckpt, _ = train(args, "from_bin", [*GPT2, "data.task=tokens", f"data.path={data}", f"model.vocab_size={h['V']}",
                                       "data.shuffle=false", "training.steps=1"])
    again, _ = export(args, ckpt, "from_bin_llmc")
    t2, v2 = (llmc.read_tokens(os.path.join(again, f)) for f in ("train.bin", "val.bin"))
    n = (train_ids.size - 1) // T  # llm.c's windows of T + 1 ids, T apart
    assert t2[-1] == v2[0] and np.array_equal(np.concatenate([t2, v2[1:]]), train_ids[:n * T + 1]), "round trip"
    assert (t2.size - 1) % T == 0 and (v2.size - 1) % T == 0
    print(f"tokens task on train.bin ({n} windows of {T} + 1) exports its training and held-out ids back unchanged")
    # V beyond uint16: the model goes to llm.c, its tokens cannot
    big, _ = train(args, "big_vocab", [*GPT2, "data.task=tokens", f"data.path={data}", "model.vocab_size=70000",
                                       "model.d_model=8", "model.n_head=2", "model.n_layer=1", "training.steps=1"])
    o, p = export(args, big, "big_vocab_llmc", expect_ok=False)
    one_line_naming(p, "model.vocab_size", "vocab 70000")
    assert not os.path.exists(o), o


def check_bad_token_files(args, out):
    good = open(os.path.join(out, "train.bin"), "rb").read()
    header = np.frombuffer(good[:1024], dtype="<i4").copy()
    bad_version = header.copy()
    bad_version[1] = 2
    cases = [("version 2", bad_version.tobytes() + good[1024:], "version 2"),
             ("a count that is not the size", good[:-2], "tokens"),
             ("a header cut short", good[:100], "header")]
    for name, blob, what in cases:
        path = os.path.join(args.work_dir, "bad.bin")
        open(path, "wb").write(blob)
        _, p = train(args, "bad_tokens", [*GPT2, "data.task=tokens", f"data.path={path}", "training.steps=1"], False)
        one_line_naming(p, path, name)
        assert what in p.stderr, (name, p.stderr)
    _, p = train(args, "bad_tokens", [*GPT2, "data.task=tokens", f"data.path={os.path.join(out, 'train.bin')}",
                                      "model.context=auto", "training.steps=1"], False)
    one_line_naming(p, "model.context", "an llm.c token file without model.context")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--app", required=True)
    ap.add_argument("--logits-tool", required=True)
    ap.add_argument("--work-dir", required=True)
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)

    ckpt, _ = train(args, "gpt2", [*GPT2, "training.steps=5"])
    out, p = export(args, ckpt, "gpt2_llmc")
    assert "train.bin" in p.stdout and "val.bin" in p.stdout, p.stdout
    h = check_model(args, ckpt, out)
    check_tokens(args, out, h)
    check_bad_token_files(args, out)

    refusals = [("rmsnorm", ["model.norm=rmsnorm"], "model.norm"), ("swiglu", ["model.mlp=swiglu"], "model.mlp"),
                ("relu", ["model.mlp=relu"], "model.mlp"), ("rope", ["model.position=rope"], "model.position"),
                ("no bias", ["model.bias=false"], "model.bias"),
                ("untied", ["model.tie_weights=false"], "model.tie_weights"),
                ("mlp_ratio 2", ["model.mlp_ratio=2"], "model.mlp_ratio"),
                ("grouped-query", ["model.n_kv_head=2"], "model.n_kv_head"),
                ("llama-shaped", ["model.norm=rmsnorm", "model.mlp=swiglu", "model.position=rope", "model.bias=false"],
                 "model.norm")]
    for name, overrides, key in refusals:
        bad, _ = train(args, "refused", [*GPT2, *overrides, "training.steps=1"])
        o, p = export(args, bad, "refused_llmc", expect_ok=False)
        one_line_naming(p, key, name)
        assert not os.path.exists(o), name
    return 0


if __name__ == "__main__":
    sys.exit(main())
