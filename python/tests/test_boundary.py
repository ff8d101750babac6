"""Issue 49's Python classes, each kept as a fixed case: the Python module goes through the library's runs layer and
its error boundary, as the CLI does. A raising callback ends training after the step with its checkpoint written and
its lock released; every check the CLI makes runs (a vocabulary that disagrees with its model, a config nested too
deeply); sampling encodes and stops as `tinyformer sample` does; counts and products of sizes are bounded; errors are
one line naming the argument, of a fitting class, with Python remedies; a refused call changes nothing."""
import json
import os
import pathlib
import struct
import subprocess
import sys
import threading

import numpy as np
import pytest

import tinyformer as tf

SRC = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
APP = os.environ.get("TINYFORMER_APP")
SMALL = {"model": {"d_model": 16, "n_head": 2, "n_layer": 1}, "data": {"task": "reverse", "length": 4},
         "training": {"steps": 4, "batch_size": 8}, "schedule": {"warmup_steps": 0},
         "logging": {"attention_interval": 0}}


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    work = tmp_path_factory.mktemp("boundary")
    tf.train(SMALL, out=str(work / "run"))
    return work / "run" / "checkpoint.safetensors"


def _one_line(e):
    text = str(e.value)
    assert "\n" not in text and len(text.encode()) <= 1024, text
    for internal in ("::", "std::", "[json.exception", "filesystem error", "Vocabulary::", "incompatible function",
                     "error_already_set", "\x1b", "\x07"):
        assert internal not in text, text
    return text


def _edit_metadata(path, key, value):
    """Rewrites one metadata entry of a safetensors file."""
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header["__metadata__"][key] = value
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n:])


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_raising_callback_ends_training_after_the_step_with_the_checkpoint_written(tmp_path):
    threads = threading.active_count()

    def callback(step, metrics):
        raise ValueError(f"boom at step {step}")

    cfg = dict(SMALL, training={"steps": 2000, "batch_size": 8}, logging={"log_interval": 5, "attention_interval": 0})
    with pytest.raises(ValueError, match="boom at step 5"):
        tf.train(cfg, out=str(tmp_path / "run"), callback=callback)
    run = tmp_path / "run"
    assert (run / "checkpoint.safetensors").stat().st_size > 0
    assert (run / "tinyformer.lock").read_bytes() == b""  # released: a clean end empties it
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["step"] for r in rows] == [5]  # nothing trains on behind the caller's back
    assert threading.active_count() == threads
    assert tf.load(run / "checkpoint.safetensors").step == 5
    r = tf.train(cfg, out=str(run), resume=True, overrides={"training.steps": 7})  # and it resumes
    assert r["steps_done"] == 7


def test_a_stop_request_ends_training_after_the_step_and_returns(tmp_path):
    stop = tf.Stop()
    seen = []

    def callback(step, metrics):
        seen.append(step)
        stop.set()

    cfg = dict(SMALL, training={"steps": 1000, "batch_size": 8}, logging={"log_interval": 3, "attention_interval": 0})
    r = tf.train(cfg, out=str(tmp_path / "run"), callback=callback, stop=stop)
    assert r["interrupted"] and r["steps_done"] == 3 and seen == [3]
    assert (tmp_path / "run" / "checkpoint.safetensors").exists()


def test_a_vocabulary_that_disagrees_with_its_model_is_refused_as_the_cli_refuses_it(ckpt, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(ckpt.read_bytes())
    _edit_metadata(bad, "tinyformer.vocab", "tinyformer-vocabulary 1 joined 3\na\nb\nc\n")
    with pytest.raises(RuntimeError) as e:
        tf.load(bad)
    assert "vocabulary has 3 tokens" in _one_line(e) and "bad.safetensors" in str(e.value)
    if APP:
        cli = subprocess.run([APP, "sample", str(bad), "--prompt", "1"], capture_output=True, text=True)
        assert cli.returncode == 1 and str(e.value) in cli.stderr


def test_a_config_nested_too_deeply_is_a_value_error_not_a_recursion_error(tmp_path):
    deep = 0
    for _ in range(100000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests more than 32 levels") as e:
        tf.train({"model": {"d_model": deep}}, out=str(tmp_path / "x"))
    _one_line(e)
    assert not (tmp_path / "x").exists()


def test_a_bad_variable_of_tinyformers_own_fails_the_import_as_it_fails_the_cli():
    # A native build's module ignored TINYFORMER_KERNEL_ISA, which `tinyformer` refuses at start; both now check the
    # variables before any work, through one function of the library (runs::check_environment).
    for name, value, expected in [("TINYFORMER_GEMM", "fast", "TINYFORMER_GEMM='fast': expected auto, measure, "
                                   "openblas or libxsmm"),
                                  ("TINYFORMER_KERNEL_ISA", "avx2", "TINYFORMER_KERNEL_ISA"),
                                  ("TINYFORMER_GEMM", "a\x1b[2Jb", "TINYFORMER_GEMM='a\\x1b[2Jb'")]:
        env = dict(os.environ, **{name: value})
        done = subprocess.run([sys.executable, "-c", "import tinyformer"], env=env, capture_output=True, text=True)
        assert done.returncode != 0
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: ") and expected in last and "\x1b" not in last, last
        if APP:
            cli = subprocess.run([APP, "config", os.path.join(SRC, "configs", "reverse.yaml")], env=env,
                                 capture_output=True, text=True)
            assert cli.returncode == 1 and cli.stderr == "tinyformer: error: " + last[len("ImportError: "):] + "\n"


def test_a_removed_working_directory_gives_the_runs_own_error(tmp_path):
    # The warnings' attribution called os.path.abspath, which needs the working directory: with it removed, a
    # FileNotFoundError of posixpath's hid the run's own error about its out dir.
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (f"import os, tinyformer as tf\nos.chdir({str(gone)!r})\nos.rmdir({str(gone)!r})\n"
              f"try:\n    tf.train({SMALL!r}, out='run')\n"
              "except Exception as e:\n    print(type(e).__name__, e)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and "cannot create the out dir run" in done.stdout, done.stdout + done.stderr


def test_a_bad_value_in_a_config_dict_is_named_by_its_key_path_not_a_json_line(tmp_path):
    # A dict goes to the library as JSON text, one key a line: its refusals said "training.steps at line 3", a line
    # of a text the user never saw. The key path alone says where; a YAML file's refusal keeps its line.
    cases = [({"training": {"steps": 1000.5}}, "<config dict>: training.steps: expected an integer, got '1000.5'"),
             ({"training": {"stepz": 1}}, "<config dict>: training.stepz: unknown key 'stepz' in section training"),
             ({"model": {"d_model": 30, "n_head": 4}}, "<config dict>: model.d_model: 30 is not divisible by model."),
             ({"trainin": {"steps": 1}}, "<config dict>: ")]
    for config, expected in cases:
        with pytest.raises(ValueError) as e:
            tf.train(config, out=str(tmp_path / "x"))
        _one_line(e)
        assert str(e.value).startswith(expected) and " line " not in str(e.value), str(e.value)
    (tmp_path / "c.yaml").write_text("training:\n  steps: 1000.5\n")
    with pytest.raises(ValueError, match="training.steps at line 2: expected an integer"):
        tf.train(str(tmp_path / "c.yaml"), out=str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()


def test_a_string_override_is_its_text_as_in_a_config_dict_and_a_path_its_text():
    # Overrides went to the library as YAML text: "#x" was a comment (the key silently at its default), "a: b.txt" a
    # mapping. A str is now the text itself, as the same str in a config dict always was; other values as before.
    given = {"data.task": "text", "data.path": "a: b #1.txt", "model.context": 8, "logging.probe": "#x",
             "optimizer.name": "sgd", "optimizer.betas": [0.8, 0.9], "schedule.decay_steps": None}
    as_dict = json.loads(json.dumps(SMALL))
    for path, value in given.items():
        section, key = path.split(".")
        as_dict.setdefault(section, {})[key] = value
    written = tf.config_yaml(SMALL, overrides=given)
    assert written == tf.config_yaml(as_dict)
    assert 'probe: "#x"' in written and "a: b #1.txt" in written and "betas: [0.8, 0.9]" in written
    # a path key given a pathlib.Path, as tf.train's own path arguments take one: its text
    text = {"data.task": "text", "model.context": 8}
    as_text = tf.config_yaml(SMALL, overrides=dict(text, **{"data.path": "d/t.txt"}))
    assert tf.config_yaml(SMALL, overrides=dict(text, **{"data.path": pathlib.Path("d/t.txt")})) == as_text
    assert tf.config_yaml(SMALL, overrides=dict(text, **{"data.path": pathlib.PurePosixPath("d/t.txt")})) == as_text
    in_dict = [dict(SMALL, model=dict(SMALL["model"], context=8), data={"task": "text", "path": p})
               for p in ("d/t.txt", pathlib.Path("d/t.txt"))]
    assert tf.config_yaml(in_dict[1]) == tf.config_yaml(in_dict[0])


@pytest.mark.skipif(not APP, reason="needs the tinyformer app (TINYFORMER_APP)")
def test_sample_of_a_sentencepiece_checkpoint_is_tinyformer_samples_text(tmp_path):
    (tmp_path / "t.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 40)
    cfg = {"model": {"context": 16, "d_model": 16, "n_head": 2, "n_layer": 1}, "data": {
        "task": "text", "path": str(tmp_path / "t.txt"), "tokenizer": "bpe", "vocab_size": 300},
        "training": {"steps": 30, "batch_size": 8}, "schedule": {"warmup_steps": 0},
        "logging": {"attention_interval": 0, "probe": ""}}
    tf.train(cfg, out=str(tmp_path / "bpe"))
    path = str(tmp_path / "bpe" / "checkpoint.safetensors")
    m = tf.load(path)
    assert m.encode_prompt("the")[0] == 1  # <s> first, as the CLI's prompt starts
    for args in [["--tokens", "12", "--temperature", "0"], ["--tokens", "40", "--seed", "5"]]:
        cli = subprocess.run([APP, "sample", path, "--prompt", "the"] + args, check=True, capture_output=True,
                             text=True).stdout[:-1]
        temperature = 0.0 if "--temperature" in args else 1.0
        seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 1337
        pieces = []
        text = m.sample("the", tokens=int(args[1]), temperature=temperature, seed=seed, stream=pieces.append)
        assert text == cli and "".join(pieces) == text


def test_counts_and_products_of_sizes_are_bounded(ckpt):
    m = tf.load(ckpt)
    with pytest.raises(ValueError, match=r"tokens: must be at most 1000000") as e:
        m.sample("12|", tokens=10**12)
    _one_line(e)
    with pytest.raises(ValueError, match=r"set_num_threads: n = 100000 threads; valid: 1 to"):
        tf.set_num_threads(100000)
    x = tf.tensor(np.arange(4.0))
    with pytest.raises(ValueError, match="overflows 64 bits") as e:
        x.reshape(2**62 + 1, 4)
    _one_line(e)
    with pytest.raises(ValueError, match="add up to more than 64 bits hold"):
        tf.split(x, [2**63, 2**63 + 4], 0)
    with pytest.raises(ValueError, match="batch_size"):
        m.heads(batches=1, batch_size=10**9)
    with pytest.raises(ValueError, match="temperature: must be 0 \\(greedy\\) or a number from 1e-06"):
        m.sample("12|", tokens=2, temperature=5e-324)


def test_errors_are_one_line_naming_the_argument(ckpt):
    with pytest.raises(TypeError, match=r"^reshape\(\): argument 'input' must be a tinyformer Tensor") as e:
        tf.reshape("abc", 3)
    _one_line(e)
    with pytest.raises(TypeError, match=r"argument 'tokens'") as e:
        tf.load(ckpt).sample("12|", tokens="many")
    _one_line(e)
    with pytest.raises(TypeError, match=r"argument 'seed' must be a whole number >= 0, got -1"):
        tf.load(ckpt).sample("12|", tokens=2, seed=-1)
    m = tf.load(ckpt)
    with pytest.raises(ValueError, match=r"expected numbers .* got a str") as e:  # not pybind11's "Internal error"
        m.run_with_hooks("12|", fwd_hooks=[("blocks.0.hook_mlp_out", lambda x, h: "abc")])
    _one_line(e)
    with pytest.raises(ValueError) as e:  # ESC and BEL in a prompt: shown as \x1b and \x07
        m.sample("\x1b[31m\x07", tokens=1)
    assert "\\x1b" in _one_line(e) and "\\x07" in str(e.value) and "prompt" in str(e.value)


def test_library_prefixes_and_cpp_remedies_do_not_reach_python(ckpt, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(ckpt.read_bytes())
    _edit_metadata(bad, "tinyformer.vocab", "tinyformer-vocabulary 2 joined 3\n")
    with pytest.raises(RuntimeError, match="corrupt 'tinyformer.vocab' metadata: line 1") as e:
        tf.load(bad)
    _one_line(e)
    bad.write_bytes(ckpt.read_bytes())
    _edit_metadata(bad, "tinyformer.data", json.dumps({"vocabulary": {"size": "eleven"}}))
    with pytest.raises(RuntimeError, match="corrupt 'tinyformer.data' metadata") as e:
        tf.load(bad).heads(batches=1, batch_size=4)
    _one_line(e)
    x = tf.tensor(np.ones(2), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=r"pass retain_graph=True to the first backward\(\)") as e:
        y.backward()
    _one_line(e)
    with pytest.raises(ValueError, match=r"resume with allow_changes=True") as e:
        run = tmp_path / "run"
        tf.train(SMALL, out=str(run))
        tf.train(SMALL, out=str(run), resume=True, overrides={"training.batch_size": 16, "training.steps": 8})
    assert "--" not in _one_line(e)


def test_refused_calls_change_nothing(ckpt, tmp_path):
    m = tf.load(ckpt)
    before = m.state_dict()
    bad = dict(before)
    bad[next(iter(bad))] = before[next(iter(bad))] + 1  # a good value first ...
    bad["lm_head.weight"] = np.full(before["lm_head.weight"].shape, np.nan)  # ... then a bad one
    with pytest.raises(ValueError, match="lm_head.weight: holds values that are not finite"):
        m.load_state_dict(bad)
    for name, value in m.state_dict().items():
        np.testing.assert_array_equal(value, before[name])
    bad["lm_head.weight"] = np.array([["x"] * before["lm_head.weight"].shape[1]] * before["lm_head.weight"].shape[0])
    with pytest.raises(ValueError, match="not an array of numbers"):
        m.load_state_dict(bad)
    np.testing.assert_array_equal(m.state_dict()["transformer.wte.weight"], before["transformer.wte.weight"])
    os.chdir(tmp_path)
    with pytest.raises(ValueError, match="training.steps"):
        tf.train(dict(SMALL, training={"steps": "x"}), out="refused")
    with pytest.raises(ValueError, match="optimizer.lr"):
        tf.train(SMALL, out="refused", overrides={"optimizer.lr": 5e-324})
    assert _tree(tmp_path) == []  # no run dir, no .tinyformer-*.yaml


def test_values_that_would_be_ignored_are_refused_or_kept_as_given():
    class M(tf.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_parameter("w", np.ones(3))

    with pytest.raises(TypeError, match=r"register_parameter\('w'\): a parameter is a leaf tensor"):
        M()
    assert tf.tensor(np.float64(3)).shape == ()
    assert tf.tensor(2.5).shape == ()
