#!/usr/bin/env python3
"""Converts a nanoGPT checkpoint (out_dir/ckpt.pt as nanoGPT's train.py writes it) to a safetensors file that
`tinyformer train CONFIG --init-from OUT.safetensors` starts from, and `tinyformer sample` reads when --meta gives
the vocabulary.

    python3 tools/import_nanogpt.py IN.pt OUT.safetensors [--meta meta.pkl] [--trust-pickle]

Reads checkpoint['model_args'] (GPTConfig's fields) and checkpoint['model'] (the state_dict; a '_orig_mod.' prefix,
left by torch.compile, is stripped; the causal-mask buffers transformer.h.<i>.attn.bias are dropped, as nanoGPT's
from_pretrained does). Writes every weight as float32 under the same nanoGPT name, and lm_head.weight as well: it is
the same matrix as transformer.wte.weight in nanoGPT, so the file starts a tied tinyformer model
(model.tie_weights: true; tinyformer ignores the copy) or an untied one whose head starts equal to the embedding,
which computes the same function. Metadata: "tinyformer.model" (the model section), "tinyformer.config" (the
model section as YAML, printed too), "tinyformer.step" (iter_num); with --meta, "tinyformer.vocab" from nanoGPT's
meta.pkl (itos, one character per id: the joined layout) and empty generator states, which is what `sample` needs.
The file holds no optimizer state and no generator state, so it is a starting point, not a run to --resume.
Refused with one line: a pickle that names any class but tensors, OrderedDict, torch.Size and _codecs.encode
(checked before torch.load runs, since loading could run code; --trust-pickle skips the check), a state_dict that is
not nanoGPT's GPT of model_args (missing, unexpected or misshapen tensors), a meta.pkl that holds anything but plain
dicts, ints and strings or whose itos is not one character for each of the model's ids.
"""
import argparse
import collections
import io
import json
import os
import pickle
import pickletools
import sys
import zipfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_nanogpt import nanogpt_names, nanogpt_shapes, tf  # noqa: E402  (tf: tinyformer's module)
from read_safetensors import write_safetensors  # noqa: E402

UNWANTED_PREFIX = "_orig_mod."  # nanoGPT's name for it too


class ImportError_(Exception):
    pass


class _PlainUnpickler(pickle.Unpickler):
    """meta.pkl holds dicts of ints and strings: refuse anything that would run code."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"meta.pkl refers to {module}.{name}; only plain dicts, ints and strings are read")


def read_meta_pkl(path, vocab_size):
    with open(path, "rb") as f:
        meta = _PlainUnpickler(io.BytesIO(f.read())).load()
    if not isinstance(meta, dict) or "itos" not in meta:
        raise ImportError_(f"{path}: not nanoGPT's meta.pkl (a dict with 'itos', 'stoi', 'vocab_size')")
    itos = meta["itos"]
    if sorted(itos) != list(range(len(itos))):
        raise ImportError_(f"{path}: itos must map the ids 0..N-1, got {len(itos)} keys")
    tokens = [itos[i] for i in range(len(itos))]
    if len(tokens) != vocab_size:
        raise ImportError_(f"{path}: {len(tokens)} tokens, but the model's vocab_size is {vocab_size}; tinyformer's "
                           "vocabulary must name every id")
    bad = [i for i, t in enumerate(tokens) if not isinstance(t, str) or len(t) != 1]
    if bad:
        raise ImportError_(f"{path}: token {bad[0]} ({tokens[bad[0]]!r}) is not one character; tinyformer reads "
                           "character vocabularies from meta.pkl")
    try:
        return tf.Vocabulary(tokens, "joined").to_str()
    except ValueError as e:  # a token twice
        raise ImportError_(f"{path}: itos: {e}") from None


def model_section(model_args, tied):
    """tinyformer's model section (the checkpoint's "tinyformer.model") for nanoGPT's model_args."""
    return collections.OrderedDict(
        vocab_size=int(model_args["vocab_size"]), context=int(model_args["block_size"]),
        d_model=int(model_args["n_embd"]), n_head=int(model_args["n_head"]), n_layer=int(model_args["n_layer"]),
        mlp_ratio=4, dropout=float(model_args.get("dropout", 0.0)), bias=bool(model_args.get("bias", True)),
        tie_weights=tied, init="normal", attention="fused", norm="layernorm", mlp="gelu", position="learned")


def model_yaml(model, source):
    lines = [f"# the model of {source}, imported by tools/import_nanogpt.py", "model:"]
    for k in ("vocab_size", "context", "d_model", "n_head", "n_layer", "mlp_ratio", "dropout", "bias", "tie_weights"):
        v = model[k]
        lines.append(f"  {k}: {str(v).lower() if isinstance(v, bool) else v}")
    return "\n".join(lines) + "\n"


# What a nanoGPT checkpoint's pickle may refer to: tensors (rebuilt from storages), OrderedDict, torch.Size and
# _codecs.encode (protocol 2's way to write bytes). Anything else could run code while loading, so it is refused
# before torch.load runs (torch 1.13's weights_only=True cannot read floats, which every nanoGPT checkpoint has,
# and it ignores a pickle_module of one's own when weights_only is False).
SAFE_GLOBALS = {("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"),
                ("torch._utils", "_rebuild_parameter"), ("torch", "Size"), ("_codecs", "encode")}
STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"}


def pickle_references(data):
    """The (module, name) pairs a pickle looks up (GLOBAL, INST, STACK_GLOBAL); None for one it cannot tell."""
    refs, recent, memo = [], [], {}
    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in ("GLOBAL", "INST"):
            refs.append(tuple(arg.split(" ", 1)))
        elif name == "STACK_GLOBAL":
            pair = recent[-2:]
            refs.append(tuple(pair) if len(pair) == 2 and all(isinstance(x, str) for x in pair) else None)
        elif name in ("EXT1", "EXT2", "EXT4"):
            refs.append(None)
        if name in STRING_OPS:
            recent.append(arg)
        elif name in ("BINGET", "LONG_BINGET", "GET"):
            recent.append(memo.get(arg))
        elif name in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
            memo[len(memo) if name == "MEMOIZE" else arg] = recent[-1] if recent else None
        else:
            recent.append(None)
    return refs


def check_pickle(path):
    if not zipfile.is_zipfile(path):
        raise ImportError_("not a zip file as torch.save writes since torch 1.6; if you trust it, pass --trust-pickle")
    with zipfile.ZipFile(path) as z:
        pickles = [n for n in z.namelist() if n == "data.pkl" or n.endswith("/data.pkl")]
        if not pickles:
            raise ImportError_("no data.pkl in the zip file: not a torch checkpoint")
        for n in pickles:
            for ref in pickle_references(z.read(n)):
                safe = ref is not None and (ref in SAFE_GLOBALS or (ref[0] == "torch" and ref[1].endswith("Storage")))
                if not safe:
                    what = ".".join(ref) if ref else "an object it names indirectly"
                    raise ImportError_(f"it refers to {what}, which is not a tensor, a dict or a number (loading could "
                                       "run code); if you trust the file, pass --trust-pickle")


def load_checkpoint(path, trust_pickle):
    if not trust_pickle:
        check_pickle(path)
    return torch.load(path, map_location="cpu", weights_only=False)


def import_checkpoint(in_path, out_path, meta_pkl=None, trust_pickle=False):
    """Returns (model section, config YAML, notes). Raises ImportError_ with a one-line reason."""
    ckpt = load_checkpoint(in_path, trust_pickle)
    if not isinstance(ckpt, dict) or "model_args" not in ckpt or "model" not in ckpt:
        raise ImportError_("not a nanoGPT checkpoint (a dict with 'model_args' and 'model')")
    args = ckpt["model_args"]
    missing = [k for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size") if args.get(k) is None]
    if missing:
        raise ImportError_(f"model_args has no {', '.join(missing)}")
    state = {}
    for k, v in ckpt["model"].items():
        state[k[len(UNWANTED_PREFIX):] if k.startswith(UNWANTED_PREFIX) else k] = v
    bias = bool(args.get("bias", True))
    T = int(args["block_size"])
    notes = []
    for name, kind in nanogpt_names(int(args["n_layer"]), bias, True):
        if kind == "mask" and name in state:
            if tuple(state[name].shape) != (1, 1, T, T):
                raise ImportError_(f"{name} has shape {list(state[name].shape)}, nanoGPT's causal mask is "
                                   f"[1, 1, {T}, {T}]")
            del state[name]
    if "lm_head.weight" not in state:
        raise ImportError_("the state_dict has no lm_head.weight")
    wte = state.get("transformer.wte.weight")
    tied = wte is not None and torch.equal(state["lm_head.weight"], wte)
    if not tied:
        notes.append("lm_head.weight differs from transformer.wte.weight (not nanoGPT's tied GPT): imported as an "
                     "untied model (model.tie_weights: false)")
    model = model_section(args, tied)
    shapes = nanogpt_shapes(model)
    shapes["lm_head.weight"] = (model["vocab_size"], model["d_model"])
    problems = [f"missing {k} {list(s)}" for k, s in shapes.items() if k not in state]
    problems += [f"{k} has shape {list(state[k].shape)}, model_args need {list(s)}"
                 for k, s in shapes.items() if k in state and tuple(state[k].shape) != s]
    problems += [f"unexpected tensor {k}" for k in state if k not in shapes]
    if problems:
        raise ImportError_("the state_dict is not nanoGPT's GPT of its model_args: " + "; ".join(problems))
    arrays = collections.OrderedDict()
    for name, kind in nanogpt_names(model["n_layer"], model["bias"], False):
        t = state[name].detach()
        if t.dtype != torch.float32:
            notes.append(f"{name} is {t.dtype}, converted to float32")
        arrays[name] = t.to(torch.float32).contiguous().numpy().astype(np.float32, copy=True)

    yaml_text = model_yaml(model, os.path.basename(in_path))
    metadata = {"format": "pt", "tinyformer.model": json.dumps(model), "tinyformer.config": yaml_text,
                "tinyformer.step": str(int(ckpt.get("iter_num", 0) or 0))}
    if meta_pkl:
        metadata["tinyformer.vocab"] = read_meta_pkl(meta_pkl, model["vocab_size"])
        metadata["tinyformer.rng.data"] = ""  # none: the file is a start, not a run to resume
        metadata["tinyformer.rng.dropout"] = ""
    write_safetensors(out_path, arrays, metadata)
    return model, yaml_text, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="nanoGPT's ckpt.pt")
    ap.add_argument("out", help="the safetensors file to write")
    ap.add_argument("--meta", metavar="META_PKL", help="nanoGPT's meta.pkl (character vocabulary) to store as "
                                                        "tinyformer.vocab, so that `tinyformer sample` reads the file")
    ap.add_argument("--trust-pickle", action="store_true",
                    help="load the checkpoint with plain torch.load, which can run code in the file (by default only "
                         "tensors, dicts, lists, strings and numbers are read)")
    args = ap.parse_args(argv)
    try:
        model, yaml_text, notes = import_checkpoint(args.checkpoint, args.out, args.meta, args.trust_pickle)
    except (ImportError_, ValueError, OSError, pickle.UnpicklingError, RuntimeError) as e:
        print(f"import_nanogpt.py: {args.checkpoint}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}; for `tinyformer train CONFIG --init-from {args.out}` the config's model section must be:")
    print("".join(line + "\n" for line in yaml_text.splitlines()[1:]), end="")
    if model["tie_weights"]:
        print("(model.tie_weights: false works too: the head then starts as a copy of transformer.wte.weight)")
    print("The data must give the same token ids, e.g. a text whose sorted distinct characters are meta.pkl's.")
    for n in notes:
        print(f"note: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
