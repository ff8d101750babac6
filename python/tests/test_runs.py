"""Runs from Python against the CLI: tf.train writes the run `tinyformer train` writes (the same losses, bit for
bit), tf.load reads it back, sample and attention agree with `tinyformer sample` and `attention`, run_with_cache
has TransformerLens' names and agrees with the model, hooks replace activations, Ctrl-C saves first, errors are
the CLI's lines as the fitting exception."""
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tinyformer as tf

SRC = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
APP = os.environ.get("TINYFORMER_APP")
REVERSE = os.path.join(SRC, "configs", "reverse.yaml")
# Batches of 8, not 64: the tests check what a run writes and how the fronts agree, not what it learns, and under
# qemu-aarch64 (scripts/qemu_fronts.sh) a step of 64 takes seconds.
QUICK = {"training.steps": 40, "training.batch_size": 8, "schedule.warmup_steps": 5,
         "logging.attention_interval": 20, "logging.log_interval": 10}


def _set_args(overrides):
    return [a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A short reverse run trained from Python, its callback rows, and the same run by the CLI."""
    work = tmp_path_factory.mktemp("runs")
    rows = []
    result = tf.train(REVERSE, overrides=QUICK, out=str(work / "py"), callback=lambda step, m: rows.append((step, m)))
    cli = None
    if APP:
        subprocess.run([APP, "train", REVERSE, "--out", str(work / "cli"), "--quiet"] + _set_args(QUICK), check=True)
        cli = work / "cli"
    return {"dir": work / "py", "result": result, "rows": rows, "cli": cli, "work": work}


def _metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_train_writes_the_clis_run_and_calls_back_each_logged_step(run):
    d, r = run["dir"], run["result"]
    for f in ["config.yaml", "metrics.jsonl", "checkpoint.safetensors", "report.html", "attention/step_000020.npy"]:
        assert (d / f).stat().st_size > 0, f
    assert r["steps_done"] == 40 and not r["interrupted"] and len(r["train_losses"]) == 40
    assert [s for s, _ in run["rows"]] == [row["step"] for row in _metrics(d / "metrics.jsonl")]
    assert [s for s, _ in run["rows"]] == [10, 20, 30, 40]
    assert run["rows"][-1][1]["train_loss"] == pytest.approx(r["last_train_loss"], rel=1e-6)


@pytest.mark.skipif(not APP, reason="needs the tinyformer app (TINYFORMER_APP)")
def test_train_from_python_and_the_cli_give_the_same_losses_bit_for_bit(run):
    ours = _metrics(run["dir"] / "metrics.jsonl")
    theirs = _metrics(run["cli"] / "metrics.jsonl")
    assert [r["train_loss"] for r in ours] == [r["train_loss"] for r in theirs]
    assert [r.get("val_loss") for r in ours] == [r.get("val_loss") for r in theirs]


def test_train_takes_a_config_dict_and_names_bad_keys(tmp_path):
    cfg = {"model": {"d_model": 16, "n_head": 2, "n_layer": 1}, "data": {"task": "reverse", "length": 4},
           "training": {"steps": 3, "batch_size": 8}, "schedule": {"warmup_steps": 1}}
    r = tf.train(cfg, out=str(tmp_path / "dict"))
    assert r["steps_done"] == 3 and (tmp_path / "dict" / "checkpoint.safetensors").exists()
    with pytest.raises(ValueError, match="training.batch_size") as e:
        tf.train(cfg, overrides={"training.batch_size": 0}, out=str(tmp_path / "bad"))
    assert ".tinyformer-" not in str(e.value) and "\n" not in str(e.value).strip()
    with pytest.raises(ValueError, match="model.n_hed"):
        tf.train(REVERSE, overrides={"model.n_hed": 2}, out=str(tmp_path / "bad2"))
    assert not (tmp_path / "bad2").exists()  # refused before anything was written
    with pytest.raises(FileNotFoundError, match="no_such.yaml: cannot read the config file: no such file"):
        tf.train(str(tmp_path / "no_such.yaml"))


def test_train_gives_the_runs_warnings_as_python_warnings(tmp_path):
    cfg = {"model": {"d_model": 16, "n_head": 2, "n_layer": 1}, "data": {"task": "reverse", "length": 4},
           "training": {"steps": 1, "batch_size": 8}, "schedule": {"warmup_steps": 0},
           "logging": {"attention_interval": 0, "probe": "0123456789" * 3}}
    with pytest.warns(UserWarning, match=r"^logging\.probe has 30 tokens, the context is \d+: keeping the last") as w:
        r = tf.train(cfg, out=str(tmp_path / "warned"))
    assert r["warnings"] == [str(x.message) for x in w]
    assert [x.filename for x in w] == [__file__] * len(w)  # the line that called tf.train, not the package's


def test_train_gives_each_skipped_step_as_a_python_warning(tmp_path, capfd):
    cfg = {"model": {"d_model": 16, "n_head": 2, "n_layer": 1}, "data": {"task": "reverse", "length": 4},
           "training": {"steps": 4, "batch_size": 8, "nonfinite": "skip"}, "schedule": {"warmup_steps": 0},
           "optimizer": {"lr": 1e30}, "logging": {"attention_interval": 0}}
    with pytest.warns(UserWarning, match=r"^step \d+: .*; step skipped \(training\.nonfinite: skip\)$") as w:
        r = tf.train(cfg, out=str(tmp_path / "skipped"))
    assert len(w) >= 1 and r["warnings"] == [str(x.message) for x in w]
    assert [x.filename for x in w] == [__file__] * len(w)
    assert "step skipped" not in capfd.readouterr().err  # a warning, not a raw line on stderr


def test_a_warning_raised_as_an_error_stops_the_run_after_its_step(tmp_path):
    cfg = {"model": {"d_model": 16, "n_head": 2, "n_layer": 1}, "data": {"task": "reverse", "length": 4},
           "training": {"steps": 6, "batch_size": 8, "nonfinite": "skip"}, "schedule": {"warmup_steps": 0},
           "optimizer": {"lr": 1e30}, "logging": {"attention_interval": 0}}
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match=r"^step (\d+): .*; step skipped") as e:
            tf.train(cfg, out=str(tmp_path / "strict"), callback=lambda step, row: seen.append(step))
    step = int(re.match(r"step (\d+)", str(e.value)).group(1))
    assert step < 6  # raised at the end of the skipped step, not when the run had ended
    assert tf.load(tmp_path / "strict" / "checkpoint.safetensors").step == step  # stopped there, checkpoint written


def test_load_gives_the_model_its_config_and_vocabulary(run):
    m = tf.load(run["dir"] / "checkpoint.safetensors")
    assert m.config["data"]["task"] == "reverse" and m.config["model"]["d_model"] == 64
    assert m.vocab == list("0123456789|")
    assert m.vocabulary.tokens == m.vocab and m.vocabulary.layout == "joined" and m.vocabulary.encode("12|") == [1, 2, 10]
    assert tf.Vocabulary.from_str(m.vocabulary.to_str()) == m.vocabulary == tf.Vocabulary(list("0123456789|"))
    assert m.step == 40
    assert [n for n, _ in m.named_parameters()][0] == "transformer.wte.weight"
    assert m(np.array([[1, 2, 3]])).shape == (1, 3, 11)


def test_a_prompt_cropped_to_the_context_warns_at_the_callers_line(run):
    m = tf.load(run["dir"] / "checkpoint.safetensors")
    long = "0123456789" * 20
    for call in (lambda: m.sample(long, tokens=1, temperature=0), lambda: m.encode_prompt(long)):
        with pytest.warns(UserWarning, match="keeping the last") as w:
            call()
        assert [x.filename for x in w] == [__file__] * len(w)


@pytest.mark.skipif(not APP, reason="needs the tinyformer app (TINYFORMER_APP)")
def test_sample_and_attention_agree_with_the_cli_bit_for_bit(run, tmp_path):
    ckpt = str(run["dir"] / "checkpoint.safetensors")
    m = tf.load(ckpt)
    for prompt, args in [("1234|", ["--tokens", "4", "--temperature", "0"]), ("12", ["--tokens", "10", "--seed", "3"])]:
        cli = subprocess.run([APP, "sample", ckpt, "--prompt", prompt] + args, check=True, capture_output=True,
                             text=True).stdout.strip()
        tokens = int(args[1])
        temperature = 0.0 if "--temperature" in args else 1.0
        seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 1337
        assert m.sample(prompt, tokens=tokens, temperature=temperature, seed=seed) == cli
    subprocess.run([APP, "attention", ckpt, "--prompt", "1234|4", "--out", str(tmp_path / "maps")], check=True,
                   capture_output=True)
    weights, labels = m.attention("1234|4")
    np.testing.assert_array_equal(weights, np.load(tmp_path / "maps" / "attention.npy"))
    assert labels == json.load(open(tmp_path / "maps" / "attention.json"))["tokens"]


def test_run_with_cache_has_transformerlens_names_and_shapes_and_matches_the_model(run):
    m = tf.load(run["dir"] / "checkpoint.safetensors")
    prompt = "31415926|6295"
    logits, cache = m.run_with_cache(prompt)
    T, L, H, D = len(prompt), 2, 4, 16
    assert cache["blocks.0.attn.hook_pattern"].shape == (1, H, T, T)
    assert cache["blocks.1.attn.hook_q"].shape == (1, T, H, D)
    assert cache["blocks.1.attn.hook_z"].shape == (1, T, H, D)
    for name in ["hook_resid_pre", "hook_resid_post", "hook_mlp_out", "hook_attn_out"]:
        assert cache[f"blocks.{L - 1}.{name}"].shape == (1, T, 64)
    np.testing.assert_allclose(logits, m(np.array([m.encode(prompt)])).numpy(), rtol=1e-4, atol=1e-4)
    weights, _ = m.attention(prompt)
    for layer in range(L):  # the cache takes the composed attention, the model the fused kernel: rounding apart
        np.testing.assert_allclose(cache[f"blocks.{layer}.attn.hook_pattern"][0], weights[layer], atol=1e-6)
    np.testing.assert_array_equal(cache["blocks.0.hook_resid_post"], cache["blocks.1.hook_resid_pre"])
    assert list(cache) == m.hook_names()  # every hook point, in the forward's order
    assert m.hook_names()[:3] == ["hook_embed", "hook_pos_embed", "blocks.0.hook_resid_pre"]


def test_the_cache_of_a_composed_attention_model_is_its_attention_and_forward_bit_for_bit(tmp_path):
    cfg = {"model": {"d_model": 16, "n_head": 2, "n_layer": 2, "attention": "composed"},
           "data": {"task": "reverse", "length": 4}, "training": {"steps": 3, "batch_size": 8},
           "schedule": {"warmup_steps": 1}}
    tf.train(cfg, out=str(tmp_path / "composed"))
    m = tf.load(tmp_path / "composed" / "checkpoint.safetensors")
    prompt = "3141|14"
    logits, cache = m.run_with_cache(prompt)
    weights, _ = m.attention(prompt)
    np.testing.assert_array_equal(cache["blocks.0.attn.hook_pattern"][0], weights[0])
    np.testing.assert_array_equal(cache["blocks.1.attn.hook_pattern"][0], weights[1])
    np.testing.assert_array_equal(logits, m(np.array([m.encode(prompt)])).numpy())


def test_hooks_read_and_replace_activations(run):
    m = tf.load(run["dir"] / "checkpoint.safetensors")
    prompt = "31415926|6295"
    logits, cache = m.run_with_cache(prompt)
    seen = []
    # hooks on z in every layer take the composed attention everywhere, as the cache does: the same logits
    z_names = ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]
    same = m.run_with_hooks(prompt, fwd_hooks=[(n, lambda z, hook: seen.append(hook.name)) for n in z_names])
    np.testing.assert_array_equal(same, logits)
    assert seen == z_names

    def zero_head(z, hook):
        z[:, :, 1, :] = 0
        return z

    patched = m.run_with_hooks(prompt, fwd_hooks=[("blocks.1.attn.hook_z", zero_head)])
    assert np.abs(patched - logits).max() > 1e-3
    # patching in the clean run's own activation restores the clean logits, to rounding: the cached run took the
    # composed attention in every layer, this one the fused kernel in layer 1 (they agree to about 1e-6 a value,
    # docs/api.md; logits up to about 8, whose float spacing is 1e-6)
    restored = m.run_with_hooks(prompt, fwd_hooks=[("blocks.1.hook_resid_pre",
                                                     lambda x, h: cache["blocks.1.hook_resid_pre"])])
    np.testing.assert_allclose(restored, logits, rtol=1e-5, atol=1e-5)
    # hooks outside attention keep the fused kernel: the logits are the plain forward's, bit for bit
    outside = [(n, lambda x, h: x) for n in m.hook_names() if ".attn." not in n]
    plain = m(np.array([m.encode(prompt)])).numpy()
    np.testing.assert_array_equal(m.run_with_hooks(prompt, fwd_hooks=outside), plain)
    with pytest.raises(ValueError, match="unknown hook name 'blocks.9.hook_z'"):
        m.run_with_hooks(prompt, fwd_hooks=[("blocks.9.hook_z", zero_head)])
    with pytest.raises(ValueError, match="hook blocks.0.hook_mlp_out returned .*2.*64.*, the activation is"):
        m.run_with_hooks(prompt, fwd_hooks=[("blocks.0.hook_mlp_out", lambda x, h: x[:, :2])])
    with pytest.raises(ZeroDivisionError):  # an error in a hook reaches the caller as itself
        m.run_with_hooks(prompt, fwd_hooks=[("blocks.0.hook_mlp_out", lambda x, h: 1 / 0)])
    np.testing.assert_array_equal(m.run_with_hooks(prompt), plain)


def test_heads_and_ablation_tables(run):
    m = tf.load(run["dir"] / "checkpoint.safetensors")
    heads = m.heads(batches=1, batch_size=16)
    assert heads["entropy"].shape == (2, 4)
    assert heads["patterns"]["expected"]["score"].shape == (2, 4)
    ab = m.ablate(batches=1, batch_size=16)
    assert ab["loss"].shape == (2, 4) and ab["accuracy"].shape == (2, 4)
    assert len(ab["heads"]) == 8 and ab["intact"]["loss"] > 0
    both = tf.heads(run["dir"] / "checkpoint.safetensors", ablate=True, batches=1, batch_size=16)
    np.testing.assert_array_equal(both["entropy"], heads["entropy"])
    np.testing.assert_array_equal(both["ablation"]["loss"], ab["loss"])


def test_load_errors_are_the_clis_lines_as_the_fitting_exception(run, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.safetensors: no such file"):
        tf.load(tmp_path / "nothing.safetensors")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        tf.load(tmp_path)
    (tmp_path / "junk.safetensors").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(RuntimeError) as e:  # a damaged file: the library's std::runtime_error
        tf.load(tmp_path / "junk.safetensors")
    assert "junk.safetensors" in str(e.value)
    m = tf.load(run["dir"] / "checkpoint.safetensors")
    with pytest.raises(ValueError, match="x"):
        m.sample("12x|")
    with pytest.raises(ValueError, match="context"):
        m.attention("1" * 40)


def test_ctrl_c_during_train_saves_then_raises_keyboard_interrupt(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, sys, tinyformer as tf
        def cb(step, m):
            if step == 10:
                os.kill(os.getpid(), signal.SIGINT)
        try:
            tf.train({REVERSE!r},
                     overrides={{"training.steps": 400, "training.batch_size": 8, "logging.log_interval": 5}},
                     out={str(tmp_path / "run")!r}, callback=cb)
        except KeyboardInterrupt as e:
            print("interrupted:", e)
            sys.exit(130)
        """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert p.returncode == 130, p.stderr
    assert "checkpoint written" in p.stdout
    m = tf.load(tmp_path / "run" / "checkpoint.safetensors")
    assert 10 <= m.step < 400
