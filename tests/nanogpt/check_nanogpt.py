#!/usr/bin/env python3
"""Tests of tools/export_nanogpt.py and tools/import_nanogpt.py (registered in tests/CMakeLists.txt).

    check_nanogpt.py STAGE --app TINYFORMER --logits-tool LOGITS_DUMP --work-dir DIR

setup        trains the small checkpoints the other stages use, into DIR (the CTest fixture)
roundtrip    export -> import keeps every tensor byte for byte; a second export is identical to the first
logits       the export in tools/torch_gpt.py gives tinyformer's logits within 1e-5
nanogpt      nanoGPT's loading path (tests/tools/nanogpt_model.py) takes the export strictly: model, mask buffers,
             AdamW state, meta.pkl; its exact-GELU logits are within NANOGPT_LOGITS_BOUND of tinyformer's
refusals     what nanoGPT cannot hold is refused with one line naming the option; bad imports likewise; token-id
             vocabularies get no meta.pkl
init-from    a checkpoint written by nanoGPT's code, imported, starts `tinyformer train --init-from` at exactly its
             weights (tied and untied), and `tinyformer sample` reads it with --meta
Each stage prints its measurements and exits 1 on the first failed check.
"""
import argparse
import collections
import datetime
import json
import os
import pickle
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

from common import (GPT, check, max_abs, random_ids, read_safetensors, run, run_script, tinyformer_logits,
                    torch_gpt_from_checkpoint, train)
from read_safetensors import write_safetensors
import export_nanogpt
import import_nanogpt
import nanogpt_model

LOGITS_BOUND = 1e-5          # tinyformer vs tools/torch_gpt.py (same tanh GELU): the bound
NANOGPT_LOGITS_BOUND = 2e-3  # tinyformer vs nanoGPT's exact-GELU MLP (measured in docs/formats.md)
EXPORT, IMPORT = export_nanogpt.main, import_nanogpt.main  # run in this process: one torch start-up per test

SHORT = ["training.steps=20", "schedule.warmup_steps=5", "logging.attention_interval=0"]
INITIAL = ["training.steps=0", "schedule.warmup_steps=0", "logging.attention_interval=0"]
# name -> (config, overrides); the exportable ones are tied
CHECKPOINTS = {
    "reverse_tied": ("reverse.yaml", SHORT + ["model.tie_weights=true"]),
    "reverse_tied_nobias": ("reverse.yaml", SHORT + ["model.tie_weights=true", "model.bias=false"]),
    "text_tied": ("text.yaml", SHORT + ["model.tie_weights=true", "training.eval_interval=20"]),
    "reverse_sgd": ("reverse.yaml", SHORT + ["model.tie_weights=true", "optimizer.name=sgd", "optimizer.lr=0.05"]),
    "untied": ("reverse.yaml", INITIAL),
    "rmsnorm": ("reverse.yaml", INITIAL + ["model.tie_weights=true", "model.norm=rmsnorm"]),
    "swiglu": ("reverse.yaml", INITIAL + ["model.tie_weights=true", "model.mlp=swiglu"]),
    "rope": ("reverse.yaml", INITIAL + ["model.tie_weights=true", "model.position=rope"]),
    "mlp_ratio": ("reverse.yaml", INITIAL + ["model.tie_weights=true", "model.mlp_ratio=2"]),
    "gqa": ("reverse.yaml", INITIAL + ["model.tie_weights=true", "model.n_kv_head=1"]),
}
EXPORTABLE = ["reverse_tied", "reverse_tied_nobias", "text_tied"]
# the docs/interop.md recipe's run: `tinyformer train configs/reverse.yaml` as scripts/quickstart.sh does it
README_RUN = os.path.join("readme", "runs", "reverse")


def ckpt(work, name):
    return os.path.join(work, name, "checkpoint.safetensors")


STAGE = None  # each stage writes under DIR/<stage>/, so stages can run in parallel


def export(work, name, *extra, expect_ok=True):
    out = os.path.join(work, STAGE, name, "ckpt.pt")
    return run_script(EXPORT, [ckpt(work, name), out, *extra], expect_ok=expect_ok), out


def weights_of(arrays):
    return {k: v for k, v in arrays.items() if not k.startswith("optimizer.")}


def stage_setup(a):
    os.makedirs(a.work_dir, exist_ok=True)
    for name, (config, overrides) in CHECKPOINTS.items():
        train(a.app, os.path.join(a.work_dir, name), config, *overrides)
    train(a.app, os.path.join(a.work_dir, README_RUN), "reverse.yaml")
    print(f"trained {len(CHECKPOINTS) + 1} checkpoints into {a.work_dir}")
    return True


def stage_roundtrip(a):
    ok = True
    for name in EXPORTABLE:
        _, pt = export(a.work_dir, name)
        meta_pkl = os.path.join(os.path.dirname(pt), "meta.pkl")
        imported = os.path.join(a.work_dir, STAGE, name, "imported.safetensors")
        run_script(IMPORT, [pt, imported, "--meta", meta_pkl])
        orig, orig_meta = read_safetensors(ckpt(a.work_dir, name))
        back, back_meta = read_safetensors(imported)
        orig_w = weights_of(orig)
        same = [k for k in orig_w if k in back and back[k].dtype == orig_w[k].dtype
                and back[k].shape == orig_w[k].shape and back[k].tobytes() == orig_w[k].tobytes()]
        extra = sorted(set(back) - set(orig_w))
        ok &= check(len(same) == len(orig_w), f"{name}: {len(same)} of {len(orig_w)} tensors byte-identical after "
                                              "export -> import")
        ok &= check(extra == ["lm_head.weight"] and back["lm_head.weight"].tobytes() == orig["transformer.wte.weight"].tobytes(),
                    f"{name}: the import adds only lm_head.weight, equal to transformer.wte.weight (extra: {extra})")
        m0, m1 = json.loads(orig_meta["tinyformer.model"]), json.loads(back_meta["tinyformer.model"])
        keys = ["vocab_size", "context", "d_model", "n_head", "n_layer", "mlp_ratio", "dropout", "bias",
                "tie_weights", "norm", "mlp", "position"]
        ok &= check(all(m0[k] == m1[k] for k in keys), f"{name}: the imported model section equals the original's "
                                                       f"({ {k: m1[k] for k in keys} })")
        ok &= check(back_meta.get("tinyformer.vocab") == orig_meta["tinyformer.vocab"],
                    f"{name}: the vocabulary survives meta.pkl byte for byte")
        ok &= check(back_meta["tinyformer.step"] == orig_meta["tinyformer.step"], f"{name}: step {back_meta['tinyformer.step']} kept")
        # the import exported again: the same nanoGPT state_dict, key for key and byte for byte
        pt2 = os.path.join(a.work_dir, STAGE, name, "again.pt")
        run_script(EXPORT, [imported, pt2, "--meta", os.path.join(a.work_dir, STAGE, name, "again")])
        c1, c2 = torch.load(pt), torch.load(pt2)
        same_sd = list(c1["model"]) == list(c2["model"]) and all(
            c1["model"][k].numpy().tobytes() == c2["model"][k].numpy().tobytes() for k in c1["model"])
        ok &= check(same_sd and c1["model_args"] == c2["model_args"] and c1["iter_num"] == c2["iter_num"],
                    f"{name}: export -> import -> export gives the same state_dict ({len(c1['model'])} entries), "
                    "model_args and iter_num")
    return ok


def torch_gpt_from_export(pt):
    """tools/torch_gpt.py's GPT built from the export's model_args (nanoGPT's names) with its state_dict
    (strict; the mask buffers are not weights)."""
    c = torch.load(pt)
    model = GPT(c["model_args"] | {"tie_weights": True}).eval()
    model.load_state_dict({k: v for k, v in c["model"].items() if not k.endswith(".attn.bias")})
    return model


def stage_logits(a):
    ok = True
    for name in EXPORTABLE:
        _, pt = export(a.work_dir, name)
        model = torch_gpt_from_export(pt)
        ids = random_ids(model.cfg["vocab_size"], model.cfg["context"])
        ours = tinyformer_logits(a.logits_tool, ckpt(a.work_dir, name), ids, os.path.dirname(pt))
        with torch.no_grad():
            theirs = model(torch.from_numpy(ids))[0].numpy()
        d = max_abs(ours, theirs)
        ok &= check(d <= LOGITS_BOUND, f"{name}: logits of the export in tools/torch_gpt.py vs tinyformer: max abs "
                                       f"difference {d:.2e} over {ids.size} positions x {ours.shape[-1]} (bound "
                                       f"{LOGITS_BOUND:g}; logits up to {np.abs(ours).max():.2f})")
    return ok


class FakeFlashAttention:
    """Stands in for torch >= 2.0's F.scaled_dot_product_attention (causal, no dropout), so that the nanoGPT
    mirror takes its flash path, where it registers no mask buffer."""

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) / (k.size(-1) ** 0.5)
        att = att.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
        return att @ v


def strict_load_error(pt):
    try:
        nanogpt_model.load_nanogpt_checkpoint(pt)
        return None
    except RuntimeError as e:
        return str(e).splitlines()[0] + " " + " ".join(str(e).split()[1:])[:160]


def stage_nanogpt(a):
    ok = True
    for name in EXPORTABLE:
        _, pt = export(a.work_dir, name)
        model, checkpoint = nanogpt_model.load_nanogpt_checkpoint(pt)  # GPTConfig(**model_args), strict load
        model.eval()
        ok &= check(True, f"{name}: nanoGPT's GPTConfig(**model_args), GPT(conf) and strict load_state_dict take the "
                          "export")
        ok &= check(list(checkpoint["model"]) == list(model.state_dict()),
                    f"{name}: the export's keys are nanoGPT's state_dict() keys in its order "
                    f"({len(checkpoint['model'])} entries with the attn.bias buffers)")
        arrays, meta = read_safetensors(ckpt(a.work_dir, name))
        ids = random_ids(model.config.vocab_size, model.config.block_size)
        ours = tinyformer_logits(a.logits_tool, ckpt(a.work_dir, name), ids, os.path.dirname(pt))
        with torch.no_grad():
            exact = model(torch.from_numpy(ids), torch.zeros_like(torch.from_numpy(ids)))[0].numpy()
            last = model(torch.from_numpy(ids))[0].numpy()
            for block in model.transformer.h:  # nanoGPT with tinyformer's GELU: the only difference
                block.mlp.gelu = torch.nn.GELU(approximate="tanh")
            tanh = model(torch.from_numpy(ids), torch.zeros_like(torch.from_numpy(ids)))[0].numpy()
        d_exact, d_tanh = max_abs(ours, exact), max_abs(ours, tanh)
        ok &= check(1e-6 < d_exact <= NANOGPT_LOGITS_BOUND,
                    f"{name}: nanoGPT's logits (exact erf GELU) vs tinyformer's (tanh GELU): max abs difference "
                    f"{d_exact:.2e}, mean {np.abs(ours - exact).mean():.2e} (bound {NANOGPT_LOGITS_BOUND:g}, and "
                    "above 1e-6: the GELUs do differ)")
        ok &= check(d_tanh <= LOGITS_BOUND, f"{name}: nanoGPT's model with its GELU set to tanh vs tinyformer: "
                                            f"{d_tanh:.2e} (bound {LOGITS_BOUND:g}): the GELU is the only difference")
        # the same float32 sums in products of other shapes: 9.5e-7 measured on text_tied here, above 1e-6 on CI
        d_last = max_abs(last[:, 0], exact[:, -1])
        ok &= check(last.shape[1] == 1 and d_last <= LOGITS_BOUND, f"{name}: nanoGPT's forward without targets gives "
                                                                   f"the last position's logits ({d_last:.1e}, bound "
                                                                   f"{LOGITS_BOUND:g})")

        # train.py's resume: the optimizer from configure_optimizers loads the AdamW state, which is tinyformer's
        conf = checkpoint["config"]
        opt = model.configure_optimizers(conf["weight_decay"], conf["learning_rate"], (conf["beta1"], conf["beta2"]), "cpu")
        opt.load_state_dict(checkpoint["optimizer"])
        worst, n = 0.0, 0
        for pname, p in model.named_parameters():
            st = opt.state[p]
            for kind in ("exp_avg", "exp_avg_sq"):
                worst = max(worst, max_abs(st[kind].numpy(), arrays[f"optimizer.{kind}.{pname}"]))
            worst = max(worst, abs(float(st["step"]) - float(arrays[f"optimizer.step.{pname}"].reshape(-1)[0])))
            n += 1
        ok &= check(worst == 0.0 and n == len([k for k in arrays if k.startswith("optimizer.exp_avg.")]),
                    f"{name}: nanoGPT's configure_optimizers AdamW loads the state: {n} parameters, exp_avg, "
                    f"exp_avg_sq and step equal to tinyformer's (largest difference {worst})")
        model.train()
        _, loss = model(torch.from_numpy(ids), torch.from_numpy(ids))
        loss.backward()
        opt.step()
        ok &= check(checkpoint["iter_num"] == int(meta["tinyformer.step"]) and checkpoint["best_val_loss"] == 1e9,
                    f"{name}: iter_num {checkpoint['iter_num']}, best_val_loss 1e9; an AdamW step after loading runs")
        model.eval()

        # sample.py: meta.pkl from data/<config['dataset']>/, encode, generate, decode
        meta_path = os.path.join(os.path.dirname(pt), "meta.pkl")
        with open(meta_path, "rb") as f:
            pkl = pickle.load(f)
        stoi, itos = pkl["stoi"], pkl["itos"]
        encode = lambda s: [stoi[c] for c in s]  # noqa: E731
        decode = lambda l: "".join([itos[i] for i in l])  # noqa: E731
        prompt = "62597177|" if name.startswith("reverse") else "The model "
        x = torch.tensor(encode(prompt), dtype=torch.long)[None, ...]
        y = model.generate(x, 8, temperature=1.0, top_k=1)
        text = decode(y[0].tolist())
        ok &= check(pkl["vocab_size"] == model.config.vocab_size and text.startswith(prompt) and len(text) == len(prompt) + 8,
                    f"{name}: sample.py's meta.pkl path: vocab_size {pkl['vocab_size']}, config['dataset'] = "
                    f"{conf['dataset']!r}, greedy continuation {text!r}")

    # the mask buffers: needed by nanoGPT on torch < 2.0, unexpected on torch >= 2.0 (flash attention)
    name = "reverse_tied"
    _, with_mask = export(a.work_dir, name)
    without = os.path.join(a.work_dir, STAGE, name, "no_mask.pt")
    run_script(EXPORT, [ckpt(a.work_dir, name), without, "--mask-buffer", "never"])
    err = strict_load_error(without)
    ok &= check(err is not None and "attn.bias" in err,
                f"torch {torch.__version__} (no flash attention): nanoGPT's strict load refuses an export without the "
                f"mask buffers: {err}")
    F.scaled_dot_product_attention = FakeFlashAttention()
    try:
        model, _ = nanogpt_model.load_nanogpt_checkpoint(without)
        ok &= check(all(b.attn.flash for b in model.transformer.h), "with flash attention (as torch >= 2.0): "
                                                                    "--mask-buffer never loads strictly")
        ids = random_ids(11, 16)
        with torch.no_grad():
            flash = model.eval()(torch.from_numpy(ids), torch.from_numpy(ids))[0].numpy()
        err = strict_load_error(with_mask)
        ok &= check(err is not None and "Unexpected key" in err,
                    f"with flash attention an export with the buffers is refused: {err}")
    finally:
        del F.scaled_dot_product_attention
    model, _ = nanogpt_model.load_nanogpt_checkpoint(with_mask)
    with torch.no_grad():
        manual = model.eval()(torch.from_numpy(ids), torch.from_numpy(ids))[0].numpy()
    ok &= check(max_abs(flash, manual) <= LOGITS_BOUND,
                f"both attention paths give the same logits ({max_abs(flash, manual):.1e}, bound {LOGITS_BOUND:g})")
    return ok


def one_line_refusal(p, out, needle):
    lines = p.stderr.strip().splitlines()
    return p.returncode == 1 and len(lines) == 1 and needle in lines[0] and not os.path.exists(out)


def stage_refusals(a):
    ok = True
    needles = {"untied": "model.tie_weights is false", "rmsnorm": "model.norm is rmsnorm",
               "swiglu": "model.mlp is swiglu", "rope": "model.position is rope", "mlp_ratio": "model.mlp_ratio is 2",
               "gqa": "model.n_kv_head is 1"}
    for name, needle in needles.items():
        p, out = export(a.work_dir, name, expect_ok=False)
        ok &= check(one_line_refusal(p, out, needle), f"{name}: refused in one line, nothing written: "
                                                      f"{p.stderr.strip()}")
    p, out = export(a.work_dir, "reverse_sgd")
    c = torch.load(out)
    ok &= check(c["optimizer"] is None and "'optimizer' is None" in p.stdout,
                "SGD checkpoint: exported with optimizer None and a note saying so")

    # token-id data (a spaced vocabulary): exported without meta.pkl, and saying so
    d = os.path.join(a.work_dir, STAGE, "tokens")
    os.makedirs(d)
    np.save(os.path.join(d, "rows.npy"), np.random.default_rng(0).integers(0, 9, size=(20, 9)).astype(np.int32))
    with open(os.path.join(d, "tokens.yaml"), "w") as f:
        f.write("model: {d_model: 16, n_head: 2, n_layer: 1, tie_weights: true}\n"
                "data: {task: tokens, path: rows.npy}\nschedule: {warmup_steps: 0}\ntraining: {steps: 0}\n"
                "logging: {attention_interval: 0}\n")
    run([a.app, "train", os.path.join(d, "tokens.yaml"), "--out", os.path.join(d, "run")])
    out = os.path.join(d, "ckpt.pt")
    p = run_script(EXPORT, [os.path.join(d, "run", "checkpoint.safetensors"), out])
    ok &= check(os.path.exists(out) and not os.path.exists(os.path.join(d, "meta.pkl")) and "no meta.pkl" in p.stdout,
                "tokens checkpoint (spaced vocabulary): exported without meta.pkl, with a note")

    # a vocabulary text that the library refuses (read through tf.Vocabulary): the line named, nothing written
    arrays, meta = read_safetensors(ckpt(a.work_dir, "reverse_tied"))
    lines = meta["tinyformer.vocab"].split("\n")
    lines[2] = "\\x"
    bad_vocab = os.path.join(a.work_dir, STAGE, "bad_vocab.safetensors")
    write_safetensors(bad_vocab, arrays, dict(meta, **{"tinyformer.vocab": "\n".join(lines)}))
    out = os.path.join(a.work_dir, STAGE, "bad_vocab", "ckpt.pt")
    p = run_script(EXPORT, [bad_vocab, out], expect_ok=False)
    ok &= check(one_line_refusal(p, out, "'tinyformer.vocab'") and "line 3 has an invalid escape" in p.stderr,
                f"a checkpoint whose vocabulary has a bad escape: {p.stderr.strip()}")

    # imports that are not nanoGPT's GPT of their model_args
    _, good = export(a.work_dir, "reverse_tied")
    bad_dir = os.path.join(a.work_dir, STAGE, "bad_imports")
    os.makedirs(bad_dir, exist_ok=True)
    c = torch.load(good)
    variants = {
        "missing": ({**c, "model": {k: v for k, v in c["model"].items() if k != "transformer.h.1.mlp.c_fc.bias"}},
                    "missing transformer.h.1.mlp.c_fc.bias"),
        "shape": ({**c, "model_args": {**c["model_args"], "n_embd": 32}}, "transformer.wte.weight has shape [11, 64]"),
        "no_model_args": ({"model": c["model"]}, "not a nanoGPT checkpoint"),
        "a class in it": ({**c, "config": {**c["config"], "when": datetime.date(2024, 1, 1)}},
                          "refers to datetime.date"),
    }
    for name, (content, needle) in variants.items():
        stem = name.replace(" ", "_")
        src, out = os.path.join(bad_dir, stem + ".pt"), os.path.join(bad_dir, stem + ".safetensors")
        torch.save(content, src)
        p = run_script(IMPORT, [src, out], expect_ok=False)
        ok &= check(one_line_refusal(p, out, needle), f"import of a checkpoint with {name}: {p.stderr.strip()[:240]}")
    meta_pkl = os.path.join(os.path.dirname(good), "meta.pkl")
    with open(meta_pkl, "rb") as f:
        pkl = pickle.load(f)
    short = os.path.join(bad_dir, "short_meta.pkl")
    with open(short, "wb") as f:
        pickle.dump({"vocab_size": 10, "itos": {i: str(i) for i in range(10)}, "stoi": {str(i): i for i in range(10)}}, f)
    evil = os.path.join(bad_dir, "evil_meta.pkl")
    with open(evil, "wb") as f:
        pickle.dump(collections.OrderedDict(pkl), f)  # a class reference: could as well be os.system
    twice = os.path.join(bad_dir, "twice_meta.pkl")
    with open(twice, "wb") as f:
        pickle.dump({"vocab_size": 11, "itos": {i: "0123456789|"[min(i, 9)] for i in range(11)}, "stoi": {}}, f)
    for path, needle in ((short, "10 tokens, but the model's vocab_size is 11"), (evil, "collections.OrderedDict"),
                         (twice, "twice_meta.pkl: itos: Vocabulary(): argument 'tokens': token '9' appears twice")):
        out = os.path.join(bad_dir, "meta.safetensors")
        p = run_script(IMPORT, [good, out, "--meta", path], expect_ok=False)
        ok &= check(one_line_refusal(p, out, needle), f"import with {os.path.basename(path)}: {p.stderr.strip()}")
    return ok


def nanogpt_native_checkpoint(path):
    """A checkpoint as nanoGPT's train.py writes it after torch.compile: '_orig_mod.' prefixes, the mask buffers,
    AdamW state, GPT-2 init (normal 0.02)."""
    torch.manual_seed(7)
    conf = nanogpt_model.GPTConfig(block_size=16, vocab_size=11, n_layer=2, n_head=4, n_embd=64, bias=True, dropout=0.0)
    model = nanogpt_model.GPT(conf)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn_like(p) * 0.02)
            else:  # LayerNorm weights near 1, biases near 0: not the values of a fresh model
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if "ln_" in pname and pname.endswith("weight") else 0.0))
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
    x = torch.randint(0, 11, (4, 16))
    _, loss = model(x, x)
    loss.backward()
    opt.step()
    torch.save({"model": {"_orig_mod." + k: v for k, v in model.state_dict().items()}, "optimizer": opt.state_dict(),
                "model_args": dict(n_layer=2, n_head=4, n_embd=64, block_size=16, bias=True, vocab_size=11, dropout=0.0),
                "iter_num": 1, "best_val_loss": torch.tensor(2.5), "config": {"dataset": "reverse"}}, path)
    with open(os.path.join(os.path.dirname(path), "meta.pkl"), "wb") as f:
        chars = sorted("0123456789|")
        pickle.dump({"vocab_size": 11, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}, f)
    return model


def stage_init_from(a):
    ok = True
    d = os.path.join(a.work_dir, STAGE)
    os.makedirs(d)
    pt = os.path.join(d, "ckpt.pt")
    native = nanogpt_native_checkpoint(pt)
    imported = os.path.join(d, "imported.safetensors")
    p = run_script(IMPORT, [pt, imported, "--meta", os.path.join(d, "meta.pkl")])
    printed = p.stdout.split("must be:\n", 1)[1].split("(model.tie_weights")[0]
    print(p.stdout.strip())
    ok &= check("  tie_weights: true" in printed and "  context: 16" in printed, "the import prints the model section")
    want = {k: v.numpy() for k, v in native.state_dict().items() if not k.endswith(".attn.bias")}

    # the printed model section is a config that --init-from takes
    config = os.path.join(d, "imported.yaml")
    with open(config, "w") as f:
        f.write(printed + "data:\n  task: reverse\n  length: 8\nschedule:\n  warmup_steps: 0\ntraining:\n  steps: 0\n"
                          "logging:\n  attention_interval: 0\n")
    for tie in ("true", "false"):
        out = os.path.join(d, f"init_{tie}")
        run([a.app, "train", config, "--init-from", imported, "--set", f"model.tie_weights={tie}", "--out", out,
             "--overwrite"])
        got, meta = read_safetensors(os.path.join(out, "checkpoint.safetensors"))
        got = weights_of(got)
        expected = {k: v for k, v in want.items() if tie == "false" or k != "lm_head.weight"}
        equal = sorted(got) == sorted(expected) and all(got[k].tobytes() == expected[k].tobytes() for k in expected)
        ok &= check(equal and meta["tinyformer.step"] == "0",
                    f"--init-from with model.tie_weights={tie}: the step-0 checkpoint holds nanoGPT's {len(expected)} "
                    "weights byte for byte" + (" (lm_head = wte)" if tie == "false" else ""))

    # the imported file computes what nanoGPT's model computes (up to the GELU)
    ids = random_ids(11, 16, seed=3)
    ours = tinyformer_logits(a.logits_tool, imported, ids, d)
    torch_model, _ = torch_gpt_from_checkpoint(imported)
    with torch.no_grad():
        theirs = torch_model(torch.from_numpy(ids))[0].numpy()
        exact = native.eval()(torch.from_numpy(ids), torch.from_numpy(ids))[0].numpy()
    ok &= check(max_abs(ours, theirs) <= LOGITS_BOUND,
                f"imported file: tinyformer's logits vs tools/torch_gpt.py {max_abs(ours, theirs):.2e} (bound "
                f"{LOGITS_BOUND:g}); vs nanoGPT's own model (exact GELU) {max_abs(ours, exact):.2e}")

    # sample reads the import with its vocabulary, and without one says what is missing
    s = run([a.app, "sample", imported, "--prompt", "62597177|", "--tokens", "8", "--top-k", "1"])
    with torch.no_grad():
        x = torch.tensor([[sorted("0123456789|").index(c) for c in "62597177|"]])
        for _ in range(8):
            x = torch.cat([x, torch_model(x)[0][:, -1:].argmax(-1)], dim=1)
    greedy = "".join(sorted("0123456789|")[i] for i in x[0].tolist())
    ok &= check(s.stdout.strip() == greedy, f"`tinyformer sample --top-k 1` on the import: {s.stdout.strip()!r}, "
                                            f"tools/torch_gpt.py greedy: {greedy!r}")
    bare = os.path.join(d, "bare.safetensors")
    run_script(IMPORT, [pt, bare])
    s = run([a.app, "sample", bare, "--prompt", "1|"], expect_ok=False)
    ok &= check("tinyformer.vocab" in s.stderr, f"without --meta, sample names what is missing: {s.stderr.strip()}")
    return ok


STAGES = {"setup": stage_setup, "roundtrip": stage_roundtrip, "logits": stage_logits, "nanogpt": stage_nanogpt,
          "refusals": stage_refusals, "init-from": stage_init_from}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=sorted(STAGES))
    ap.add_argument("--app", required=True)
    ap.add_argument("--logits-tool", required=True)
    ap.add_argument("--work-dir", required=True)
    a = ap.parse_args()
    a.app = os.path.abspath(a.app)
    a.logits_tool = a.logits_tool and os.path.abspath(a.logits_tool)
    a.work_dir = os.path.abspath(a.work_dir)
    global STAGE
    STAGE = a.stage
    shutil.rmtree(os.path.join(a.work_dir, STAGE), ignore_errors=True)
    torch.set_num_threads(1)
    ok = STAGES[a.stage](a)
    print(f"{a.stage}: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
