"""Runs from Python, each a call of the library's runs layer (the same code behind the `tinyformer` commands): tf.train
(the trainer of `tinyformer train`, calling back after each logged step), tf.load (a checkpoint opened with every
check), prompts encoded as `tinyformer sample` encodes them (<s> first where the vocabulary has it), bounded and
streaming sampling that stops at <s>, attention maps, head tables and ablation, and TransformerLens-style
run_with_cache and forward hooks."""
import json
import os
import sys
import warnings

import numpy as np
import yaml

from . import _core
from . import nn as _nn
from . import serialization as _serialization

_MAX_DEPTH = 32  # the library's config reader refuses deeper nesting: refused here first, without recursion


class Stop:
    """A stop request for tf.train and Model.sample, as threading.Event: set() from a callback or another thread ends
    training after the current step (its checkpoint written), or sampling after the current token."""

    def __init__(self):
        self._flag = _core._StopFlag()

    def set(self):
        self._flag.set()

    def clear(self):
        self._flag.clear()

    def is_set(self):
        return self._flag.is_set()


def _flag_of(stop, name="stop"):
    if stop is None:
        return None
    if not isinstance(stop, Stop):
        raise TypeError(f"{name} must be a tf.Stop (or None), got {type(stop).__name__}")
    return stop._flag


def _jsonable(value, where):
    """A JSON value of a config or an override: NumPy scalars and arrays become numbers and lists, a path (pathlib)
    its text; anything else that JSON cannot hold is a TypeError naming where it is."""
    if isinstance(value, os.PathLike):
        return os.fsdecode(value)  # bytes that are not UTF-8 as surrogates, written back as the same bytes
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{where}: a {type(value).__name__} is not a config value (numbers, strings, booleans, lists)")


def _config_json(config):
    """A config dict as JSON text (JSON is YAML), after checking its nesting without recursion."""
    stack = [(config, "config", 1)]
    while stack:
        value, where, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise ValueError(f"{where}: the config nests more than {_MAX_DEPTH} levels; a config needs at most 3 "
                             "(section, key, a list value)")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"{where}: the key {key!r} is a {type(key).__name__}; config keys are strings")
                stack.append((item, f"{where}[{key!r}]", depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
    # one key a line, UTF-8 as it is (YAML reads no surrogate pairs); a message names the key path, not the JSON's
    # line (the module drops it: python/src/module.cpp)
    text = json.dumps(config, default=lambda value: _jsonable(value, "config"), indent=1, ensure_ascii=False)
    return text.encode("utf-8", "surrogateescape")


def _config_source(config):
    """(name, text) of a config: a YAML file's path (text "") or a dict of sections ("<config dict>", its JSON)."""
    if isinstance(config, dict):
        return _core._config_dict_name, _config_json(config)
    if isinstance(config, (str, bytes, os.PathLike)):
        return os.fsencode(config), ""
    raise TypeError(f"config must be a YAML file's path or a dict of sections, got {type(config).__name__}")


def _override_list(overrides):
    """{"training.steps": 100, "optimizer.betas": [0.9, 0.95]} -> ["training.steps=100", ...]: each value as JSON, which
    YAML reads as Python gave it. A str is the text itself, as in a config dict: "#x", "a: b.txt" or "null" stay text
    (as YAML they would be a comment, a mapping and none)."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict of key paths to values, got {type(overrides).__name__}")
    out = []
    for key, value in overrides.items():
        if not isinstance(key, str):
            raise TypeError(f"overrides: the key {key!r} is a {type(key).__name__}; key paths are strings "
                            "('training.steps')")
        text = json.dumps(value, default=lambda v: _jsonable(v, key), ensure_ascii=False)
        out.append(f"{key}={text}")
    return out


def _path(value, name):
    """A path as the library takes it: its bytes (a name that is not UTF-8 reaches the library's message as such)."""
    if value is None:
        return None
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a path, got {type(value).__name__}")
    return os.fsencode(value)


def train(config, overrides=None, out=None, callback=None, resume=False, overwrite=False, allow_changes=False,
          init_from="", progress=False, stop=None):
    """Trains as `tinyformer train` does: same run dir and files (config.yaml, metrics.jsonl, attention/,
    checkpoint.safetensors, report.html), same resume. `config` is a YAML file or a dict of sections (its data.path is
    then relative to the working directory, and the run goes to `out`, or runs/python); `overrides` maps key paths to
    values ({"training.steps": 200}, as --set). callback(step, metrics) is called by the trainer for each logged step
    with that step's row of metrics.jsonl. Ctrl-C, an exception raised by the callback, or stop.set() (a tf.Stop) ends
    training after the current step with its checkpoint written; the exception is then raised (a stop request
    returns, with "interrupted" True). Returns the run's summary as a dict (out_dir, steps_done, last_train_loss,
    last_val_loss, last_accuracy, warnings, ...). The run's warnings (logging.probe cropped to the context, more
    threads than cores, each step skipped under training.nonfinite: skip) are issued with warnings.warn at the end of
    the step they belong to (the setup's with step 1), as the CLI prints them; a warning raised as an error (-W error)
    stops the run as an exception of the callback does."""
    name, text = _config_source(config)
    if text and out is None and "out_dir" not in (config.get("logging") or {}):
        out = os.path.join("runs", "python")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be a function callback(step, metrics), got {type(callback).__name__}")
    last = {"step": None}
    said = []  # the run's warnings from the library not yet given to warnings.warn, in order

    def issue():
        new = said[:]
        said.clear()
        _warn(new)

    def on_step(step, total, skipped, row):
        last["step"] = step
        issue()
        if callback is not None and row is not None:
            callback(step, json.loads(row))

    try:
        return _core._train(name, text, _override_list(overrides), _path(out, "out"), bool(resume), bool(overwrite),
                            bool(allow_changes), _path(init_from, "init_from") or "", bool(progress), _flag_of(stop),
                            on_step, said.append)
    except KeyboardInterrupt:
        if last["step"] is None:
            raise
        raise KeyboardInterrupt(f"training stopped after step {last['step']} with its checkpoint written; continue "
                                "it with resume=True") from None
    finally:
        issue()  # what came after the last step (or with no step at all)


def config_yaml(config, overrides=None):
    """The resolved config (every key, defaults filled) as `tinyformer config` prints it."""
    name, text = _config_source(config)
    return _core._config_yaml(name, text, _override_list(overrides))


def load(checkpoint, map_location=None, weights_only=True):
    """A trained model from a checkpoint.safetensors, opened with every check `tinyformer sample` makes: .config (the
    run's config, a dict), .vocabulary (its tf.Vocabulary), .vocab (the tokens, .vocabulary.tokens), .sample(),
    .attention(), .heads(), .ablate(), .run_with_cache(), .run_with_hooks(); in eval mode. A file that tf.save
    wrote (or a binary file object) gives back what was saved, as torch.load (weights_only: see tf.save);
    map_location is "cpu" or None."""
    if map_location is not None and _core._device_type(map_location) != "cpu":
        raise ValueError(f"load: map_location {map_location!r}: tinyformer runs on the CPU ('cpu')")
    if hasattr(checkpoint, "read"):
        return _serialization.load_object(checkpoint, weights_only)
    path = _path(checkpoint, "checkpoint")
    if os.path.isfile(path) and _serialization.is_saved_object(path):
        return _serialization.load_object(path, weights_only)
    return Model(_core._TrainedModel(path))


def heads(checkpoint, ablate=False, prompt=None, batches=8, batch_size=64, ablate_mode="zero"):
    """What `tinyformer heads --json [--ablate]` prints, as a dict with NumPy tables [L,H]: "patterns" (each with its
    "score" table and uniform "baseline"), "entropy", "verdicts", and with ablate=True "ablation" (Model.ablate)."""
    model = load(checkpoint)
    out = model.heads(prompt, batches, batch_size)
    if ablate:
        out["ablation"] = model.ablate(batches, batch_size, ablate_mode)
    return out


# This package's files as its frames name them (as imported, and absolute): compared without os.path.abspath at the
# time of a warning, which needs the working directory (a removed one made every warning a FileNotFoundError that hid
# the run's own error)
_PACKAGE = tuple({os.path.dirname(__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep})


def _warn(messages):
    """Each message through warnings.warn, attributed to the first caller outside this package (however many of the
    package's functions and wrappers lie between)."""
    frame, level = sys._getframe(1), 2  # level 1 is this function
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    for m in messages:
        warnings.warn(m, stacklevel=level)


class Model(_nn.GPT):
    """A GPT loaded from a checkpoint (see tf.load)."""

    def __init__(self, loaded):
        impl = loaded.model()
        _nn._Wrapped.__init__(self, impl, json.loads(impl.config_json()))
        object.__setattr__(self, "_loaded", loaded)
        object.__setattr__(self, "_run_config", yaml.safe_load(loaded.config_yaml) if loaded.config_yaml else None)
        object.__setattr__(self, "vocabulary", loaded.vocabulary)  # a tf.Vocabulary
        object.__setattr__(self, "vocab", self.vocabulary.tokens)
        object.__setattr__(self, "step", loaded.step)
        self.eval()

    @property
    def config(self):
        """The run's resolved config (every section), as a dict (None for a model saved without one)."""
        return self._run_config

    @property
    def model_config(self):
        return json.loads(self._impl.config_json())

    def encode_prompt(self, prompt, crop=True):
        """The token ids the model reads for `prompt`, as `tinyformer sample` encodes it: a string with <s> first where
        the vocabulary has one (SentencePiece), ids as they are; every id checked, and a prompt longer than the context
        keeps its last tokens with a warning (crop=False: a ValueError)."""
        ids, warning = self._loaded.encode_prompt(prompt, bool(crop))
        if warning:
            _warn([warning])
        return ids

    def to_ids(self, prompt):
        """A string (encoded as encode_prompt does) or ids -> a list of ids."""
        return self.encode_prompt(prompt)

    # TransformerLens' to_tokens, to_str_tokens and to_string (tinyformer.lens) read the vocabulary through these.
    def _encode(self, text, prepend_bos):
        if not text:
            raise ValueError("the prompt is empty; give at least one token")
        if prepend_bos and self._loaded.bos < 0:
            raise ValueError("prepend_bos=True: this vocabulary has no <s> (leave prepend_bos as None)")
        ids, warning = self._loaded.encode_prompt(text, True)
        if warning:
            _warn([warning])
        if prepend_bos is False and self._loaded.bos >= 0 and ids and ids[0] == self._loaded.bos:
            ids = ids[1:]
        return ids

    def _decode(self, ids):
        return self.decode(ids)

    def _token_strings(self, ids):
        return [self.vocab[int(i)] for i in ids]

    def _has_bos(self):
        return self._loaded.bos >= 0

    def encode(self, text):
        return self.encode_prompt(text)

    def decode(self, ids):
        return self._loaded.decode(np.asarray(ids))

    def sample(self, prompt, tokens=None, temperature=1.0, top_k=0, seed=1337, use_cache=True, stream=None,
               stop=None):
        """The prompt and up to `tokens` new tokens, drawn as `tinyformer sample` draws them (temperature 0: greedy;
        tokens None: a task's checkpoint completes the sequence, else 64; generation ends at <s>). A string prompt
        gives the text (what `tinyformer sample` prints), ids give ids. stream(text), when given, is called with the
        text as it is made; Ctrl-C or stop.set() (a tf.Stop) ends sampling after the current token (Ctrl-C raises
        KeyboardInterrupt)."""
        if stream is not None and not callable(stream):
            raise TypeError(f"stream must be a function stream(text), got {type(stream).__name__}")
        r = self._loaded.sample(prompt, tokens, temperature, top_k, seed, use_cache, stream, _flag_of(stop))
        _warn(r["warnings"])
        return r["text"] if isinstance(prompt, str) else r["ids"]

    def attention(self, prompt):
        """The attention of `prompt` (a string or ids) as a tinyformer.AttentionMap: weights [L,H,T,T] and the token
        labels that `tinyformer attention` writes to attention.npy/json (inline in a notebook: the head view, heatmaps
        and the heads' roles; save_png, save_html)."""
        from .views import AttentionMap
        weights, labels, notes, ids = self._loaded.attention(prompt)
        _warn(notes)
        return AttentionMap(weights, labels, ids=ids,
                            title=f"attention of {prompt!r} (step {self.step})" if isinstance(prompt, str)
                            else f"attention (step {self.step})", step=self.step)

    def heads(self, prompt=None, batches=8, batch_size=64):
        """Each head's pattern scores, entropy and verdict (`tinyformer heads --json`), on the run's held-out data or
        on one prompt: a dict with NumPy tables [L,H]."""
        j = json.loads(self._loaded.heads_json(prompt, batches, batch_size))
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
