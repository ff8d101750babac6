#!/usr/bin/env python3
"""Writes a tinyformer checkpoint as a nanoGPT checkpoint (what nanoGPT's train.py saves as out_dir/ckpt.pt) and,
for a character vocabulary, nanoGPT's meta.pkl.

    python3 tools/export_nanogpt.py CKPT.safetensors OUT.pt [--meta DIR] [--dataset NAME] [--mask-buffer auto|always|never]

OUT.pt is torch.save of the dict nanoGPT's train.py writes:
  model_args      GPTConfig's fields: n_layer, n_head, n_embd, block_size, bias, vocab_size, dropout
  model           the state_dict of nanoGPT's GPT: every weight under its name, lm_head.weight the same tensor as
                  transformer.wte.weight (nanoGPT ties them), and the causal-mask buffers transformer.h.<i>.attn.bias
                  [1, 1, block_size, block_size] when nanoGPT registers them (see --mask-buffer)
  optimizer       the AdamW state as torch.optim.AdamW.state_dict() of nanoGPT's configure_optimizers groups
                  (dim >= 2 decayed, the rest not); None when the checkpoint's optimizer is not AdamW
  iter_num        tinyformer.step
  best_val_loss   1e9, nanoGPT's starting value (a tinyformer checkpoint records no best validation loss)
  config          the run's settings under nanoGPT's train.py names where there is one, 'dataset' (see --dataset),
                  and 'tinyformer_config': the whole resolved tinyformer config (YAML)
With it nanoGPT's sample.py (init_from='resume') runs GPTConfig(**checkpoint['model_args']), GPT(gptconf),
strips '_orig_mod.' and load_state_dict (strict); train.py's resume also loads 'optimizer', 'iter_num' and
'best_val_loss'. Put OUT.pt at nanoGPT's out_dir/ckpt.pt and meta.pkl at data/<dataset>/meta.pkl, where sample.py
looks for it.

meta.pkl (joined, i.e. character, vocabularies only): pickle of {'vocab_size', 'itos', 'stoi'} as nanoGPT's
data/shakespeare_char/prepare.py writes it, written to DIR (--meta) or next to OUT.pt.

Refused, with one line naming the option, because nanoGPT's GPT cannot hold the model: an untied head
(model.tie_weights: false, tinyformer's default), model.norm rmsnorm, model.mlp swiglu, model.position rope,
model.n_kv_head other than 0 and model.n_head (grouped-query attention), model.mlp_ratio other than 4.
Exported with a note: nanoGPT's MLP uses the exact (erf) GELU, tinyformer the tanh
approximation, so nanoGPT's logits differ slightly (docs/formats.md gives the measured size).
A tied checkpoint may also carry lm_head.weight (as an imported one does); it must equal transformer.wte.weight.
"""
import argparse
import collections
import json
import os
import pickle
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_safetensors import read_safetensors  # noqa: E402
from torch_gpt import model_config  # noqa: E402

try:
    import tinyformer as tf  # the vocabulary text is read and written by the library: tf.Vocabulary
except ImportError as e:
    sys.exit(f"{os.path.basename(sys.argv[0]) or 'export_nanogpt.py'}: needs tinyformer's Python module ({e}): build it "
             "(bash scripts/build.sh) and run with PYTHONPATH=build/python, or install it (docs/python.md)")

NANOGPT_BEST_VAL_LOSS = 1e9  # train.py: best_val_loss = 1e9 before the first evaluation


class ExportError(Exception):
    pass


def nanogpt_supports(cfg):
    """The reasons nanoGPT's GPT cannot represent the model section cfg (empty when it can)."""
    reasons = []
    if not cfg["tie_weights"]:
        reasons.append("model.tie_weights is false: this checkpoint has its own lm_head.weight, but nanoGPT's GPT "
                       "ties lm_head to transformer.wte (one matrix), so one of the two would be lost; train with "
                       "--set model.tie_weights=true to export (tools/torch_gpt.py loads untied checkpoints)")
    if cfg["norm"] != "layernorm":
        reasons.append(f"model.norm is {cfg['norm']}: nanoGPT has LayerNorm only")
    if cfg["mlp"] != "gelu":
        reasons.append(f"model.mlp is {cfg['mlp']}: nanoGPT's MLP is c_fc, GELU, c_proj")
    if cfg["position"] != "learned":
        reasons.append(f"model.position is {cfg['position']}: nanoGPT has a learned positional table "
                       "(transformer.wpe) only")
    if (cfg.get("n_kv_head") or cfg["n_head"]) != cfg["n_head"]:
        reasons.append(f"model.n_kv_head is {cfg['n_kv_head']} (grouped-query attention): nanoGPT's attention has "
                       f"as many key/value heads as query heads (n_head = {cfg['n_head']})")
    if cfg["mlp_ratio"] != 4:
        reasons.append(f"model.mlp_ratio is {cfg['mlp_ratio']}: nanoGPT's MLP is 4 * n_embd wide")
    return reasons


def nanogpt_names(n_layer, bias, mask_buffer):
    """The keys of nanoGPT's GPT.state_dict() in its order, as (name, kind) with kind 'param', 'mask' (the
    attn.bias buffer) or 'tied' (lm_head.weight, the same tensor as transformer.wte.weight)."""
    def linear(prefix):
        return [(prefix + ".weight", "param")] + ([(prefix + ".bias", "param")] if bias else [])

    names = [("transformer.wte.weight", "param"), ("transformer.wpe.weight", "param")]
    for i in range(n_layer):
        h = f"transformer.h.{i}."
        names += linear(h + "ln_1")
        if mask_buffer:  # a module's own buffers come before its children's entries
            names.append((h + "attn.bias", "mask"))
        names += linear(h + "attn.c_attn") + linear(h + "attn.c_proj") + linear(h + "ln_2")
        names += linear(h + "mlp.c_fc") + linear(h + "mlp.c_proj")
    names += linear("transformer.ln_f")
    names.append(("lm_head.weight", "tied"))
    return names


def nanogpt_shapes(cfg):
    """tinyformer name -> shape for every weight of a nanoGPT-compatible model (cfg with tinyformer's names)."""
    V, T, C, L = cfg["vocab_size"], cfg["context"], cfg["d_model"], cfg["n_layer"]
    shapes = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (T, C)}
    per_block = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (3 * C, C), "attn.c_attn.bias": (3 * C,),
                 "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,), "ln_2.weight": (C,), "ln_2.bias": (C,),
                 "mlp.c_fc.weight": (4 * C, C), "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (C, 4 * C),
                 "mlp.c_proj.bias": (C,)}
    for i in range(L):
        for k, s in per_block.items():
            if cfg["bias"] or not k.endswith(".bias"):
                shapes[f"transformer.h.{i}.{k}"] = s
    shapes["transformer.ln_f.weight"] = (C,)
    if cfg["bias"]:
        shapes["transformer.ln_f.bias"] = (C,)
    return shapes


def parse_run_config(yaml_text):
    """The resolved config tinyformer writes (config::to_yaml: sections of `key: value` lines, flow lists, comments)
    as {section: {key: value}}; values that are JSON (numbers, true/false, null, [a, b]) are converted, the rest
    kept as strings."""
    out, section = {}, None
    for line in yaml_text.split("\n"):
        body = line.split(" #", 1)[0].rstrip() if not line.lstrip().startswith("#") else ""
        if not body:
            continue
        key, _, value = body.strip().partition(":")
        value = value.strip()
        if not line.startswith((" ", "\t")):
            section = out.setdefault(key, {}) if not value else None
            continue
        if section is None:
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            section[key] = value[1:-1]
            continue
        try:
            section[key] = json.loads(value)
        except ValueError:
            section[key] = value
    return out


def nanogpt_config(run, model_args, dataset, yaml_text):
    """nanoGPT's train.py `config` (its global settings) for the keys that have a tinyformer counterpart."""
    get = lambda section, key, default=None: run.get(section, {}).get(key, default)  # noqa: E731
    betas = get("optimizer", "betas", [0.9, 0.999])
    steps = get("training", "steps")
    decay_steps = get("schedule", "decay_steps")
    config = dict(
        dataset=dataset,
        init_from="resume",
        batch_size=get("training", "batch_size"),
        block_size=model_args["block_size"], n_layer=model_args["n_layer"], n_head=model_args["n_head"],
        n_embd=model_args["n_embd"], dropout=model_args["dropout"], bias=model_args["bias"],
        learning_rate=get("optimizer", "lr"), max_iters=steps, weight_decay=get("optimizer", "weight_decay"),
        beta1=betas[0] if isinstance(betas, list) else None, beta2=betas[1] if isinstance(betas, list) else None,
        grad_clip=get("training", "grad_clip"),
        decay_lr=get("schedule", "name") == "cosine", warmup_iters=get("schedule", "warmup_steps"),
        lr_decay_iters=decay_steps if isinstance(decay_steps, int) else steps, min_lr=get("schedule", "min_lr"),
        eval_interval=get("training", "eval_interval"), eval_iters=get("training", "eval_batches"),
        log_interval=get("logging", "log_interval"),
        device="cpu", dtype="float32", compile=False,
        tinyformer_config=yaml_text,
    )
    return config


def adamw_state(arrays, meta, params, model_cfg, run):
    """torch.optim.AdamW(...).state_dict() for nanoGPT's configure_optimizers groups over `params` (name ->
    tensor, in named_parameters order), holding tinyformer's exp_avg, exp_avg_sq and step of each parameter."""
    groups = [[n for n, p in params.items() if p.dim() >= 2], [n for n, p in params.items() if p.dim() < 2]]
    o = run.get("optimizer", {})
    betas = tuple(o.get("betas", [0.9, 0.999]))
    holders = {n: torch.nn.Parameter(p.detach().clone()) for n, p in params.items()}
    opt = torch.optim.AdamW([{"params": [holders[n] for n in groups[0]], "weight_decay": o.get("weight_decay", 0.01)},
                             {"params": [holders[n] for n in groups[1]], "weight_decay": 0.0}],
                            lr=o.get("lr", 1e-3), betas=betas, eps=o.get("eps", 1e-8))
    for n, holder in holders.items():
        kinds = {k: arrays.get(f"optimizer.{k}.{n}") for k in ("step", "exp_avg", "exp_avg_sq")}
        if all(v is None for v in kinds.values()):
            continue  # never stepped
        if any(v is None for v in kinds.values()):
            raise ExportError(f"the optimizer state of {n} is incomplete ({sorted(k for k, v in kinds.items() if v is None)} missing)")
        opt.state[holder] = {"step": torch.tensor(float(kinds["step"].reshape(-1)[0])),
                             "exp_avg": torch.from_numpy(kinds["exp_avg"].copy()),
                             "exp_avg_sq": torch.from_numpy(kinds["exp_avg_sq"].copy())}
    return opt.state_dict()


def export(ckpt_path, out_path, meta_dir=None, dataset=None, mask_buffer="auto"):
    """Returns (notes, meta_path or None). Raises ExportError with a one-line reason."""
    arrays, meta = read_safetensors(ckpt_path)
    if "tinyformer.model" not in meta:
        raise ExportError("not a tinyformer checkpoint (no 'tinyformer.model' in its metadata)")
    cfg = model_config(json.loads(meta["tinyformer.model"]))
    reasons = nanogpt_supports(cfg)
    if reasons:
        raise ExportError("nanoGPT's GPT cannot represent this model: " + "; ".join(reasons))

    shapes = nanogpt_shapes(cfg)
    weights = {k: v for k, v in arrays.items() if not k.startswith("optimizer.")}
    head = weights.pop("lm_head.weight", None)  # a tied file may carry the shared matrix twice, as PyTorch's do
    if head is not None and not ("transformer.wte.weight" in weights and np.array_equal(head, weights["transformer.wte.weight"])):
        raise ExportError("model.tie_weights is true but lm_head.weight differs from transformer.wte.weight")
    problems = [f"missing {k} {list(s)}" for k, s in shapes.items() if k not in weights]
    problems += [f"{k} has shape {list(weights[k].shape)}, the model needs {list(s)}"
                 for k, s in shapes.items() if k in weights and tuple(weights[k].shape) != s]
    problems += [f"{k} is {weights[k].dtype}, float32 expected" for k in shapes if k in weights
                 and weights[k].dtype.str != "<f4"]
    problems += [f"unexpected tensor {k}" for k in weights if k not in shapes]
    if problems:
        raise ExportError("the tensors do not match the model in its metadata: " + "; ".join(problems))

    if mask_buffer == "auto":  # nanoGPT registers the mask only where torch has no flash attention (torch < 2.0)
        mask_buffer = "never" if hasattr(torch.nn.functional, "scaled_dot_product_attention") else "always"
    T = cfg["context"]
    mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    state = collections.OrderedDict()
    for name, kind in nanogpt_names(cfg["n_layer"], cfg["bias"], mask_buffer == "always"):
        if kind == "param":
            state[name] = torch.from_numpy(weights[name])
        elif kind == "mask":
            state[name] = mask.clone()
        else:
            state[name] = state["transformer.wte.weight"]  # tied: one tensor under both names, as nanoGPT saves it

    model_args = dict(n_layer=cfg["n_layer"], n_head=cfg["n_head"], n_embd=cfg["d_model"], block_size=T,
                      bias=bool(cfg["bias"]), vocab_size=cfg["vocab_size"], dropout=float(cfg["dropout"]))
    yaml_text = meta.get("tinyformer.config", "")
    run = parse_run_config(yaml_text)
    if dataset is None:
        data = run.get("data", {})
        path = data.get("path") or ""
        dataset = os.path.splitext(os.path.basename(path))[0] if path else str(data.get("task", "tinyformer"))
    notes = ["nanoGPT's MLP uses the exact (erf) GELU where tinyformer uses the tanh approximation: its logits "
             "differ slightly from tinyformer's (tools/torch_gpt.py reproduces tinyformer's)"]

    optimizer = None
    if meta.get("tinyformer.optimizer") == "AdamW":
        params = collections.OrderedDict((n, state[n]) for n, k in nanogpt_names(cfg["n_layer"], cfg["bias"], False)
                                         if k == "param")
        optimizer = adamw_state(arrays, meta, params, cfg, run)
    else:
        notes.append(f"'optimizer' is None: the checkpoint's optimizer is {meta.get('tinyformer.optimizer', 'none')}, "
                     "nanoGPT resumes AdamW only (sample.py does not need it)")

    checkpoint = {
        "model": state,
        "optimizer": optimizer,
        "model_args": model_args,
        "iter_num": int(meta.get("tinyformer.step", "0")),
        "best_val_loss": NANOGPT_BEST_VAL_LOSS,
        "config": nanogpt_config(run, model_args, dataset, yaml_text),
    }

    meta_path = None
    vocab_text = meta.get("tinyformer.vocab")
    if vocab_text:
        try:
            vocab = tf.Vocabulary.from_str(vocab_text)
        except ValueError as e:
            raise ExportError(f"its metadata 'tinyformer.vocab': {e}") from None
        if vocab.layout == "joined":
            tokens = vocab.tokens
            if len(tokens) != cfg["vocab_size"]:
                raise ExportError(f"the vocabulary has {len(tokens)} tokens but the model's vocab_size is "
                                  f"{cfg['vocab_size']}")
            meta_path = os.path.join(meta_dir if meta_dir is not None else os.path.dirname(os.path.abspath(out_path)),
                                     "meta.pkl")
        else:
            notes.append(f"no meta.pkl: the vocabulary is {vocab.layout}, not one character a token")
    else:
        notes.append("no meta.pkl: the checkpoint has no vocabulary")

    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    torch.save(checkpoint, out_path + ".tmp")
    os.replace(out_path + ".tmp", out_path)
    if meta_path:
        os.makedirs(os.path.dirname(meta_path), exist_ok=True)
        pkl = {"vocab_size": len(tokens), "itos": dict(enumerate(tokens)), "stoi": {t: i for i, t in enumerate(tokens)}}
        with open(meta_path + ".tmp", "wb") as f:
            pickle.dump(pkl, f)
        os.replace(meta_path + ".tmp", meta_path)
    return notes, meta_path, checkpoint


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="a tinyformer checkpoint (.safetensors)")
    ap.add_argument("out", help="the nanoGPT checkpoint to write (.pt; nanoGPT's name is out_dir/ckpt.pt)")
    ap.add_argument("--meta", metavar="DIR", help="directory for meta.pkl (default: OUT's directory)")
    ap.add_argument("--dataset", help="config['dataset'], the folder under nanoGPT's data/ where sample.py looks "
                                      "for meta.pkl (default: the name of data.path without extension, or the task)")
    ap.add_argument("--mask-buffer", choices=("auto", "always", "never"), default="auto",
                    help="write the causal-mask buffers transformer.h.<i>.attn.bias: nanoGPT registers them on torch "
                         "without F.scaled_dot_product_attention (< 2.0) and its strict load then needs them, while "
                         "on torch >= 2.0 they are unexpected keys. auto: as the torch running this script")
    args = ap.parse_args(argv)
    try:
        notes, meta_path, ckpt = export(args.checkpoint, args.out, args.meta, args.dataset, args.mask_buffer)
    except (ExportError, ValueError, OSError) as e:
        print(f"export_nanogpt.py: {args.checkpoint}: {e}", file=sys.stderr)
        return 1
    a = ckpt["model_args"]
    print(f"wrote {args.out}: nanoGPT GPTConfig({', '.join(f'{k}={v!r}' for k, v in a.items())}), iter_num "
          f"{ckpt['iter_num']}, optimizer {'AdamW state' if ckpt['optimizer'] else 'None'}, "
          f"{'with' if any(k.endswith('.attn.bias') for k in ckpt['model']) else 'without'} attn.bias mask buffers")
    if meta_path:
        print(f"wrote {meta_path}: vocab_size {a['vocab_size']} (nanoGPT's sample.py reads "
              f"data/{ckpt['config']['dataset']}/meta.pkl)")
    for n in notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
