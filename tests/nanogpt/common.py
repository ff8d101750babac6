"""Shared by the Python tests under tests/nanogpt: the repository's tools/ on sys.path, running the tinyformer
app and the logits_dump tool, loading a checkpoint into tools/torch_gpt.py."""
import contextlib
import io
import json
import os
import subprocess
import sys
import types

import numpy as np
import torch

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = os.path.join(SOURCE_DIR, "tools")
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "tools"))

from read_safetensors import read_safetensors  # noqa: E402
from torch_gpt import GPT  # noqa: E402

PYTHON = sys.executable


def run(cmd, expect_ok=True, **kw):
    """Runs cmd; returns the CompletedProcess (text). Exits the test with both outputs when the exit status is not
    what was expected."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if (p.returncode == 0) != expect_ok:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def run_script(main, argv, expect_ok=True):
    """Runs a script's main(argv) in this process (no second torch start-up), as run() does a command: returns
    returncode, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    p = types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
    if (code == 0) != expect_ok:
        sys.exit(f"FAILED: {main.__module__} {' '.join(map(str, argv))} returned {code}\nstdout:\n{p.stdout}\n"
                 f"stderr:\n{p.stderr}")
    return p


def train(app, out_dir, config, *overrides):
    args = [app, "train", os.path.join(SOURCE_DIR, "configs", config), "--out", out_dir, "--overwrite"]
    for o in overrides:
        args += ["--set", o]
    run(args)
    return os.path.join(out_dir, "checkpoint.safetensors")


def tinyformer_logits(tool, ckpt, ids, work, name="ids"):
    """The logits tinyformer computes for ids [B, T] (tests/tools/logits_dump.cpp), float32 [B, T, V]."""
    ids_path, out_path = os.path.join(work, name + ".npy"), os.path.join(work, name + ".logits.npy")
    np.save(ids_path, np.asarray(ids, dtype=np.int32))
    run([tool, ckpt, ids_path, out_path])
    return np.load(out_path)


def torch_gpt_from_checkpoint(path):
    """tools/torch_gpt.py's GPT with the checkpoint's weights (strict), in eval mode; and the metadata."""
    arrays, meta = read_safetensors(path)
    model = GPT(json.loads(meta["tinyformer.model"])).eval()
    weights = {k: torch.from_numpy(v) for k, v in arrays.items() if not k.startswith("optimizer.")}
    if model.cfg["tie_weights"]:
        weights["lm_head.weight"] = weights["transformer.wte.weight"]
    model.load_state_dict(weights)
    return model, meta


def random_ids(vocab_size, context, batch=3, seed=0):
    return np.random.default_rng(seed).integers(0, vocab_size, size=(batch, context)).astype(np.int64)


def max_abs(a, b):
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())


def check(ok, message):
    print(("ok: " if ok else "FAILED: ") + message)
    return bool(ok)
