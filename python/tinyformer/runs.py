"""Runs from Python: tf.train (the trainer of `tinyformer train`), tf.load (a checkpoint's model, config and
vocabulary), sampling, attention maps, head tables and ablation, and TransformerLens-style run_with_cache and
forward hooks."""
import json
import os
import tempfile
import threading

import numpy as np
import yaml

from . import _core
from . import nn as _nn


def _override_list(overrides):
    """{"training.steps": 100, "optimizer.betas": [0.9, 0.95]} -> ["training.steps=100", ...] (values as YAML)."""
    out = []
    for key, value in (overrides or {}).items():
        text = value if isinstance(value, str) else json.dumps(value)
        out.append(f"{key}={text}")
    return out


class _MetricsFollower:
    """Reads the rows that the trainer appends to <out>/metrics.jsonl (one JSON object per logged step)."""

    def __init__(self, path):
        self.path = path
        self.offset = os.path.getsize(path) if os.path.exists(path) else 0
        self.last_step = -1

    def poll(self, callback):
        if callback is None or not os.path.exists(self.path):
            return
        size = os.path.getsize(self.path)
        if size < self.offset:  # a resumed run truncated rows after its checkpoint
            self.offset = 0
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # whole lines only
        self.offset += end
        for line in data[:end].splitlines():
            row = json.loads(line)
            step = row.get("step", -1)
            if step > self.last_step:
                self.last_step = step
                callback(step, row)


def train(config, overrides=None, out=None, callback=None, resume=False, overwrite=False, allow_changes=False,
          init_from="", progress=False):
    """Trains as `tinyformer train` does: same run dir and files (config.yaml, metrics.jsonl, attention/,
    checkpoint.safetensors, report.html), same resume. `config` is a YAML file or a dict of sections (its data.path is
    then relative to the working directory, and the run goes to `out`, or runs/python); `overrides` maps key paths to
    values ({"training.steps": 200}, as --set). callback(step, metrics) is called for each logged step (the row of
    metrics.jsonl). Ctrl-C (KeyboardInterrupt) finishes the current step, writes the checkpoint, then raises.
    Returns the run's summary as a dict (out_dir, steps_done, last_train_loss, last_val_loss, last_accuracy, ...)."""
    temp = None
    if isinstance(config, dict):
        fd, temp = tempfile.mkstemp(prefix=".tinyformer-", suffix=".yaml", dir=os.getcwd())
        with os.fdopen(fd, "w") as f:
            json.dump(config, f)  # JSON is YAML
        if out is None and "out_dir" not in config.get("logging", {}):
            out = os.path.join("runs", "python")
        config_path = temp
    else:
        config_path = os.fspath(config)
    try:
        return _train(config_path, _override_list(overrides), out, callback, resume, overwrite, allow_changes,
                      init_from, progress)
    except (ValueError, OSError, RuntimeError) as e:
        if temp is None:
            raise
        raise type(e)(str(e).replace(temp, "<config dict>")) from None
    finally:
        if temp is not None:
            os.unlink(temp)


def _train(config_path, overrides, out, callback, resume, overwrite, allow_changes, init_from, progress):
    try:
        resolved = yaml.safe_load(_core._config_yaml(config_path, overrides))
    except ValueError as e:
        if not os.path.exists(config_path):  # the library words it as a config error; Python's class for it
            raise FileNotFoundError(str(e)) from None
        raise
    out_dir = out if out is not None else resolved["logging"]["out_dir"]
    metrics = _MetricsFollower(os.path.join(out_dir, "metrics.jsonl"))
    stop = _core._StopFlag()
    outcome = {}

    def work():
        try:
            outcome["result"] = _core._train(config_path, overrides, out, resume, overwrite, allow_changes, init_from,
                                             progress, stop)
        except BaseException as e:  # noqa: B902 (handed to the caller's thread)
            outcome["error"] = e

    worker = threading.Thread(target=work, name="tinyformer-train", daemon=True)
    worker.start()
    interrupted = False
    while worker.is_alive():
        try:
            worker.join(0.05)
            metrics.poll(callback)
        except KeyboardInterrupt:
            interrupted = True
            stop.set()  # the trainer finishes the step and writes the checkpoint
    metrics.poll(callback)
    if "error" in outcome:
        raise outcome["error"]
    if interrupted:
        raise KeyboardInterrupt(f"training stopped after step {outcome['result']['steps_done']}; checkpoint written "
                                f"to {outcome['result']['out_dir']} (continue with resume=True)")
    return outcome["result"]


def load(checkpoint):
    """A trained model from a checkpoint.safetensors: .config (the run's config, a dict), .vocab (the tokens),
    .sample(), .attention(), .heads(), .ablate(), .run_with_cache(), .run_with_hooks(); in eval mode."""
    return Model(_core._Loaded(os.fspath(checkpoint)))


def heads(checkpoint, ablate=False, prompt=None, batches=8, batch_size=64, ablate_mode="zero"):
    """What `tinyformer heads --json [--ablate]` prints, as a dict with NumPy tables [L,H]: "patterns" (each with its
    "score" table and uniform "baseline"), "entropy", "verdicts", and with ablate=True "ablation" (Model.ablate)."""
    model = load(checkpoint)
    out = model.heads(prompt, batches, batch_size)
    if ablate:
        out["ablation"] = model.ablate(batches, batch_size, ablate_mode)
    return out


class Model(_nn.GPT):
    """A GPT loaded from a checkpoint (see tf.load)."""

    def __init__(self, loaded):
        impl = loaded.model()
        _nn._Wrapped.__init__(self, impl, json.loads(impl.config_json()))
        object.__setattr__(self, "_loaded", loaded)
        object.__setattr__(self, "_run_config", yaml.safe_load(loaded.config_yaml))
        object.__setattr__(self, "vocab", loaded.vocab_tokens())
        object.__setattr__(self, "step", loaded.step)
        self.eval()

    @property
    def config(self):
        """The run's resolved config (every section), as a dict."""
        return self._run_config

    @property
    def model_config(self):
        return json.loads(self._impl.config_json())

    def to_ids(self, prompt):
        """A string (encoded as the CLI encodes a prompt: <s> first where the vocabulary has it) or ids -> a list of
        ids."""
        if isinstance(prompt, str):
            return self._encode(prompt, None)
        return [int(i) for i in np.asarray(prompt).reshape(-1)]

    # TransformerLens' to_tokens, to_str_tokens and to_string (tinyformer.lens) read the vocabulary through these.
    def _encode(self, text, prepend_bos):
        if not text:
            raise ValueError("the prompt is empty; give at least one token")
        if prepend_bos and self._loaded.bos < 0:
            raise ValueError("prepend_bos=True: this vocabulary has no <s> (leave prepend_bos as None)")
        return self._loaded.encode_prompt(text, prepend_bos is not False)

    def _decode(self, ids):
        return self.decode(ids)

    def _token_strings(self, ids):
        return [self.vocab[int(i)] for i in ids]

    def _has_bos(self):
        return self._loaded.bos >= 0

    def encode(self, text):
        return self._loaded.encode(text)

    def decode(self, ids):
        return self._loaded.decode([int(i) for i in ids])

    def sample(self, prompt, tokens=32, temperature=1.0, top_k=0, seed=1337, use_cache=True):
        """prompt + `tokens` new tokens, drawn as `tinyformer sample` does (temperature 0: greedy). A string prompt
        gives a string, ids give ids."""
        ids = self._loaded.generate(self.to_ids(prompt), tokens, temperature, top_k, seed, use_cache)
        return self.decode(ids) if isinstance(prompt, str) else ids

    def attention(self, prompt):
        """(weights [L,H,T,T] as NumPy, token labels): what `tinyformer attention` writes to attention.npy/json, as a
        tinyformer.AttentionMap (inline in a notebook: the head view, heatmaps and the heads' roles; save_png,
        save_html)."""
        from .views import AttentionMap
        ids = self.to_ids(prompt)
        return AttentionMap(self._loaded.attention(ids), self._loaded.labels(ids), ids=ids,
                            title=f"attention of {prompt!r} (step {self.step})" if isinstance(prompt, str)
                            else f"attention (step {self.step})", step=self.step)

    def heads(self, prompt=None, batches=8, batch_size=64):
        """Each head's pattern scores, entropy and verdict (`tinyformer heads --json`), on the run's held-out data or
        on one prompt: a dict with NumPy tables [L,H]."""
        ids = None if prompt is None else self.to_ids(prompt)
        j = json.loads(self._loaded.heads_json(ids, batches, batch_size))
        for p in j["patterns"].values():
            p["score"] = np.array(p["score"])
        j["entropy"] = np.array(j["entropy"])
        return j

    def ablate(self, batches=8, batch_size=64, mode="zero"):
        """Each head zeroed (or mean-replaced) in turn on the held-out data, as `tinyformer heads --ablate`:
        {"intact": {loss, accuracy}, "loss": [L,H], "accuracy": [L,H] or None, "heads": [...]}."""
        r = self._loaded.ablate(batches, batch_size, mode)
        L = max(h["layer"] for h in r["heads"]) + 1
        H = max(h["head"] for h in r["heads"]) + 1
        r["loss"] = np.zeros((L, H))
        r["accuracy"] = None if r["intact"]["accuracy"] is None else np.zeros((L, H))
        for h in r["heads"]:
            r["loss"][h["layer"], h["head"]] = h["loss"]
            if r["accuracy"] is not None:
                r["accuracy"][h["layer"], h["head"]] = h["accuracy"]
        return r
