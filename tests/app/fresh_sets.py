#!/usr/bin/python3
"""Issue 22's two fresh sets of bad inputs, kept so that they re-run: 50 tried as a new user would and 50 as an
attacker would (crafted checkpoints, safetensors headers and npy files, links planted in run dirs, closed standard
streams, escapes and bytes that are not UTF-8 in names and values, huge counts, subnormals, 2^64-1, deep nesting,
FIFOs and devices as file arguments, conflicting flags).

usage: fresh_sets.py BIN SRC WORK [--only user|attacker] [--case NAME] [--jobs J]

Every case is checked against the invariants of generative.py (exit code in {0, 1, 2, 130} within 10 s; on a
non-zero exit one "tinyformer: error:" line of at most 1 KB without control bytes or internals, naming the culprit;
nothing outside the command's outputs changed, device nodes and links included) and, where the case says so, must
be refused (`refuse`) or must succeed (`succeed`). docs/robustness.md gives the figures before and after the fixes.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generative  # noqa: E402  (the invariants and the scratch-tree snapshot)

CK = "run/checkpoint.safetensors"
SMALL = generative.SMALL


class Fresh:
    """One case: a name, a setup on the scratch dir, a command line, and what it may change."""

    def __init__(self, name, argv, setup=None, outputs=(), culprits=(), expect=None, must=None, streams=False,
                 warn=None):
        self.describe = name
        self.argv = argv
        self.setup = setup
        self.outputs = list(outputs)
        self.culprits = list(culprits)
        self.expect_file = expect
        self.must = must  # None, "refuse" or "succeed"
        self.close_streams = streams
        self.warn = warn  # on exit 0, a "tinyformer: warning:" line must name this


# ---- helpers that build the scratch dir -------------------------------------------------------------------------

def w(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8", "surrogateescape"))


def r(path):
    with open(path, "rb") as f:
        return f.read()


def read_st(path):
    data = r(path)
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, header, body, raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    w(path, struct.pack("<Q", len(text)) + text + body)


def edit_header(fn):
    """A setup that rewrites run/checkpoint.safetensors's header with fn(header, body) -> (header, body)."""
    def setup(s):
        p = os.path.join(s, CK)
        header, body = read_st(p)
        result = fn(header, body)
        header, body = result if result is not None else (header, body)
        write_st(p, header, body)
    return setup


def raw_checkpoint(raw):
    def setup(s):
        w(os.path.join(s, CK), raw)
    return setup


def set_meta(key, value):
    def fn(h, b):
        h["__metadata__"][key] = value
    return edit_header(fn)


def set_tensor(name, field, value):
    def fn(h, b):
        h[name][field] = value
    return edit_header(fn)


def fill_tensor(name, value):
    def fn(h, b):
        start, end = h[name]["data_offsets"]
        n = (end - start) // 4
        b = b[:start] + struct.pack(f"<{n}f", *([value] * n)) + b[end:]
        return h, b
    return edit_header(fn)


def replace_in(path, old, new):
    def setup(s):
        p = os.path.join(s, path)
        data = r(p)
        assert old in data, (path, old)
        w(p, data.replace(old, new, 1))
    return setup


def yaml_key(section, key, value):
    """Sets `key` of `section` in cfg.yaml to the raw YAML text `value`."""
    def setup(s):
        p = os.path.join(s, "cfg.yaml")
        text = r(p)
        head = section.encode() + b":\n"
        assert head in text
        w(p, text.replace(head, head + b"  " + key.encode() + b": " + value + b"\n", 1))
    return setup


def kind(path, what):
    def setup(s):
        generative.apply_kind(os.path.join(s, path), what, s)
    return setup


def link(path, target):
    def setup(s):
        p = os.path.join(s, path)
        if os.path.lexists(p):
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
        os.symlink(target, p)
    return setup


def content(path, data):
    def setup(s):
        w(os.path.join(s, path), data)
    return setup


def both(*setups):
    def setup(s):
        for f in setups:
            f(s)
    return setup


def npy(shape_text, body=b""):
    head = b"{'descr': '<i4', 'fortran_order': False, 'shape': " + shape_text + b", }"
    head += b" " * (63 - (10 + len(head)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head + body


def train(*extra, out="new", config="cfg.yaml"):
    return ["train", config, "--out", out] + SMALL + list(extra)


def resume(*extra):
    return ["train", "cfg.yaml", "--out", "run", "--resume"] + \
        [a.replace("training.steps=2", "training.steps=3") for a in SMALL] + list(extra)


RUN_FILES = ["run"]  # a resume may change its own run dir
TEXT = ["train", "text.yaml", "--out", "new", "--quiet"]


def user_cases():
    c = []
    add = c.append
    add(Fresh("train with the configs directory as its config", ["train", "configs", "--out", "new"],
              setup=lambda s: os.makedirs(os.path.join(s, "configs")), culprits=["configs"], must="refuse"))
    add(Fresh("train with a checkpoint given as the config", train(config=CK), culprits=[CK], must="refuse"))
    add(Fresh("train with a config saved as UTF-16", train(),
              setup=lambda s: w(os.path.join(s, "cfg.yaml"), r(os.path.join(s, "cfg.yaml")).decode().encode("utf-16")),
              culprits=["cfg.yaml"], must="refuse"))
    add(Fresh("train with a config that starts with a UTF-8 BOM", train(), outputs=["new"],
              setup=lambda s: w(os.path.join(s, "cfg.yaml"), b"\xef\xbb\xbf" + r(os.path.join(s, "cfg.yaml"))),
              culprits=["cfg.yaml"], expect="new/checkpoint.safetensors"))
    add(Fresh("train with a config saved with CRLF line ends", train(), outputs=["new"],
              setup=lambda s: w(os.path.join(s, "cfg.yaml"), r(os.path.join(s, "cfg.yaml")).replace(b"\n", b"\r\n")),
              expect="new/checkpoint.safetensors", must="succeed"))
    add(Fresh("train with a config of two YAML documents", train(),
              setup=lambda s: w(os.path.join(s, "cfg.yaml"), r(os.path.join(s, "cfg.yaml")) + b"---\nmodel:\n  d_model: 8\n"),
              culprits=["cfg.yaml"], must="refuse"))
    add(Fresh("train with an empty config file", train(), setup=content("cfg.yaml", b""), culprits=["cfg.yaml"],
              must="refuse"))
    add(Fresh("train with a config of comments only", train(), setup=content("cfg.yaml", b"# nothing here\n"),
              culprits=["cfg.yaml"], must="refuse"))
    add(Fresh("train --set with spaces around =", train("--set", "training.steps = 3"), outputs=["new"],
              expect="new/checkpoint.safetensors", must="succeed"))
    add(Fresh("train --set model.d_model=16.0", train("--set", "model.d_model=16.0"), culprits=["model.d_model"],
              must="refuse"))
    add(Fresh("train --out naming a regular file", train(out="t.txt"), culprits=["t.txt"], must="refuse"))
    add(Fresh("train --out naming a file of the run", train(out=CK), culprits=[CK], must="refuse"))
    add(Fresh("train --out an earlier run without --resume", train(out="run"), culprits=["run"], must="refuse"))
    add(Fresh("train --resume into an empty directory", ["train", "cfg.yaml", "--out", "empty", "--resume"] + SMALL,
              setup=lambda s: os.makedirs(os.path.join(s, "empty")), culprits=["empty"], must="refuse"))
    add(Fresh("train --resume with --init-from", resume("--init-from", CK), culprits=["--init-from"], must="refuse"))
    add(Fresh("train --allow-changes without --resume", train("--allow-changes"), culprits=["--allow-changes"],
              must="refuse"))
    add(Fresh("train a text task whose file is missing", TEXT, setup=kind("t.txt", "missing"), culprits=["t.txt"],
              must="refuse"))
    add(Fresh("train a text task whose file is a directory", TEXT, setup=kind("t.txt", "directory"),
              culprits=["t.txt"], must="refuse"))
    add(Fresh("train a text task on a UTF-16 file", TEXT,
              setup=lambda s: w(os.path.join(s, "t.txt"), r(os.path.join(s, "t.txt")).decode().encode("utf-16")),
              culprits=["t.txt"], must="refuse"))
    add(Fresh("train a text task on an empty file", TEXT, setup=content("t.txt", b""), culprits=["t.txt"],
              must="refuse"))
    add(Fresh("train a text task on a file of one character", TEXT, setup=content("t.txt", b"a" * 2000),
              outputs=["new"]))
    add(Fresh("train a text task on a PNG file", TEXT, setup=content("t.txt", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8),
              culprits=["t.txt"], must="refuse"))
    add(Fresh("train a probe longer than the context", train("--set", "logging.probe=" + "1234|" * 8),
              outputs=["new"], expect="new/checkpoint.safetensors", warn="logging.probe"))
    add(Fresh("sample with the run dir as the checkpoint", ["sample", "run", "--prompt", "12|"], culprits=["run"],
              must="refuse"))
    add(Fresh("sample with config.yaml as the checkpoint", ["sample", "run/config.yaml", "--prompt", "12|"],
              culprits=["run/config.yaml"], must="refuse"))
    add(Fresh("sample with an empty prompt", ["sample", CK, "--prompt", ""], culprits=["--prompt"], must="refuse"))
    add(Fresh("sample without --prompt", ["sample", CK], culprits=["--prompt"], must="refuse"))
    add(Fresh("sample --tokens abc", ["sample", CK, "--prompt", "1", "--tokens", "abc"], culprits=["--tokens"],
              must="refuse"))
    add(Fresh("sample --temperature 1e999", ["sample", CK, "--prompt", "1", "--temperature", "1e999"],
              culprits=["--temperature"], must="refuse"))
    add(Fresh("sample --top-k -1", ["sample", CK, "--prompt", "1", "--top-k", "-1"], culprits=["--top-k"],
              must="refuse"))
    add(Fresh("sample --tokens two million", ["sample", CK, "--prompt", "1", "--tokens", "2000000"],
              culprits=["--tokens"], must="refuse"))
    add(Fresh("attention --out naming a regular file", ["attention", CK, "--prompt", "12|", "--out", "t.txt"],
              culprits=["t.txt"], must="refuse"))
    add(Fresh("attention with a prompt outside the vocabulary", ["attention", CK, "--prompt", "hello", "--out", "m"],
              culprits=["--prompt"], must="refuse"))
    add(Fresh("heads --prompt with --data", ["heads", CK, "--prompt", "12", "--data"], culprits=["--data"],
              must="refuse"))
    add(Fresh("heads --ablate-mode without --ablate", ["heads", CK, "--ablate-mode", "mean"],
              culprits=["--ablate"], must="refuse"))
    add(Fresh("compare with one run", ["compare", "run", "--out", "c.html"], culprits=["run"], must="refuse"))
    add(Fresh("compare a run with itself", ["compare", "run", "run", "--out", "c.html"], outputs=["c.html"]))
    add(Fresh("compare --out naming an input's metrics", ["compare", "run", "run2", "--out", "run/metrics.jsonl"],
              culprits=["run/metrics.jsonl"], must="refuse"))
    add(Fresh("compare a run without metrics.jsonl", ["compare", "run", "run2", "--out", "c.html"],
              setup=kind("run2/metrics.jsonl", "missing"), culprits=["run2"], must="refuse"))
    add(Fresh("compare a run that does not exist", ["compare", "run", "nope", "--out", "c.html"], culprits=["nope"],
              must="refuse"))
    add(Fresh("config --docs with a file", ["config", "cfg.yaml", "--docs"], culprits=["--docs"], must="refuse"))
    add(Fresh("config of a missing file", ["config", "nope.yaml"], culprits=["nope.yaml"], must="refuse"))
    add(Fresh("gradcheck --batch 0", ["gradcheck", "cfg.yaml", "--small", "--batch", "0"], culprits=["--batch"],
              must="refuse"))
    add(Fresh("gradcheck of a text config whose file is missing", ["gradcheck", "text.yaml", "--small"],
              setup=kind("t.txt", "missing"), culprits=["t.txt"], must="refuse"))
    add(Fresh("bench --shape huge", ["bench", "--shape", "huge"], culprits=["huge"], must="refuse"))
    add(Fresh("bench --threads 0", ["bench", "--threads", "0"], culprits=["--threads"], must="refuse"))
    add(Fresh("export --format gguf", ["export", CK, "--format", "gguf", "--out", "x"], culprits=["--format"],
              must="refuse"))
    add(Fresh("export --out naming a regular file", ["export", CK, "--format", "llama2c", "--out", "t.txt"],
              culprits=["t.txt"], must="refuse"))
    add(Fresh("no subcommand", [], must="refuse"))
    add(Fresh("a misspelt subcommand", ["trian", "cfg.yaml"], culprits=["trian"], must="refuse"))
    return c


def attacker_cases():
    c = []
    add = c.append
    ck = [CK]
    sample = ["sample", CK, "--prompt", "12|", "--tokens", "3"]
    add(Fresh("checkpoint header length 2^64-1", sample, setup=lambda s: w(os.path.join(s, CK),
              struct.pack("<Q", 2**64 - 1) + r(os.path.join(s, CK))[8:]), culprits=ck, must="refuse"))
    add(Fresh("checkpoint header length 0", sample, setup=lambda s: w(os.path.join(s, CK),
              struct.pack("<Q", 0) + r(os.path.join(s, CK))[8:]), culprits=ck, must="refuse"))
    add(Fresh("checkpoint tensor ending past the file", sample,
              setup=set_tensor("lm_head.weight", "data_offsets", [14976, 10**9]), culprits=ck, must="refuse"))
    add(Fresh("checkpoint tensors that overlap", sample,
              setup=set_tensor("transformer.ln_f.bias", "data_offsets", [14848, 14912]), culprits=ck, must="refuse"))
    add(Fresh("checkpoint shape whose product wraps 2^64", sample,
              setup=set_tensor("lm_head.weight", "shape", [2**32, 2**32 + 1, 11]), culprits=ck, must="refuse"))
    add(Fresh("checkpoint shape with a negative dimension", sample,
              setup=set_tensor("lm_head.weight", "shape", [-11, -16]), culprits=ck, must="refuse"))
    add(Fresh("checkpoint dtype holding an escape sequence", sample,
              setup=set_tensor("lm_head.weight", "dtype", "\x1b[31mF32"), culprits=ck, must="refuse"))
    add(Fresh("checkpoint tensor name with ESC and BEL", sample, setup=edit_header(
        lambda h, b: h.__setitem__("\x1b]0;owned\x07", h.pop("lm_head.weight"))), culprits=ck, must="refuse"))
    add(Fresh("checkpoint header nested 100,000 deep", sample,
              setup=raw_checkpoint(struct.pack("<Q", 200000) + b"[" * 100000 + b"]" * 100000), culprits=ck,
              must="refuse"))
    add(Fresh("checkpoint config metadata nested 100,000 deep", sample,
              setup=set_meta("tinyformer.config", "model: " + "[" * 100000), culprits=ck, must="refuse"))
    add(Fresh("checkpoint vocabulary declaring 2^64-1 symbols", sample,
              setup=set_meta("tinyformer.vocab", "tinyformer-vocabulary 1 joined 18446744073709551615\n0\n"),
              culprits=ck, must="refuse"))
    add(Fresh("checkpoint step 2^64-1", ["train", "cfg.yaml", "--out", "run", "--resume"] + SMALL,
              setup=set_meta("tinyformer.step", "18446744073709551615"), culprits=ck, must="refuse"))
    add(Fresh("checkpoint step -1", sample, setup=set_meta("tinyformer.step", "-1"), culprits=ck, must="refuse"))
    add(Fresh("checkpoint model metadata with vocab_size 0", sample, setup=edit_header(
        lambda h, b: h["__metadata__"].__setitem__(
            "tinyformer.model", h["__metadata__"]["tinyformer.model"].replace('"vocab_size":11', '"vocab_size":0'))),
        culprits=ck, must="refuse"))
    add(Fresh("checkpoint weights all NaN", sample, setup=fill_tensor("lm_head.weight", float("nan")), culprits=ck,
              must="refuse"))
    add(Fresh("checkpoint weights of 3e38 (logits overflow)", sample,
              setup=fill_tensor("transformer.ln_f.weight", 3e38), culprits=ck, must="refuse"))
    add(Fresh("checkpoint weights subnormal", sample, setup=fill_tensor("lm_head.weight", 1e-40), culprits=ck,
              must="succeed"))
    add(Fresh("checkpoint optimizer second moment negative", resume(),
              setup=fill_tensor("optimizer.exp_avg_sq.lm_head.weight", -1.0), culprits=ck, must="refuse"))
    add(Fresh("checkpoint vocabulary disagreeing with its model", sample,
              setup=set_meta("tinyformer.vocab", "tinyformer-vocabulary 1 joined 5\n0\n1\n2\n3\n|\n"), culprits=ck,
              must="refuse"))
    add(Fresh("checkpoint metadata value a number", sample, setup=edit_header(
        lambda h, b: h["__metadata__"].__setitem__("tinyformer.step", 2)), culprits=ck, must="refuse"))
    add(Fresh("checkpoint __metadata__ a list", sample, setup=edit_header(
        lambda h, b: h.__setitem__("__metadata__", [1, 2])), culprits=ck, must="refuse"))
    add(Fresh("checkpoint header with a key twice", sample, setup=lambda s: write_st(
        os.path.join(s, CK), None, read_st(os.path.join(s, CK))[1],
        raw_header=json.dumps(read_st(os.path.join(s, CK))[0])[:-1].encode() +
        b', "lm_head.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'), culprits=ck,
        must="refuse"))
    add(Fresh("checkpoint header not JSON", sample, setup=lambda s: write_st(
        os.path.join(s, CK), None, b"\0" * 64, raw_header=b"{not json at all"), culprits=ck, must="refuse"))
    add(Fresh("checkpoint header with bytes that are not UTF-8", sample, setup=lambda s: write_st(
        os.path.join(s, CK), None, b"\0" * 64, raw_header=b'{"a\xff\xfe": {"dtype": "F32", "shape": [1], '
        b'"data_offsets": [0, 4]}}'), culprits=ck, must="refuse"))
    add(Fresh("checkpoint tensor name with a NUL", sample, setup=edit_header(
        lambda h, b: h.__setitem__("lm_head.weight\0evil", h.pop("lm_head.weight"))), culprits=ck, must="refuse"))
    add(Fresh("resume with run/metrics.jsonl a link outside the run dir", resume(),
              setup=link("run/metrics.jsonl", "../outside.txt"), culprits=["run/metrics.jsonl"], must="refuse"))
    add(Fresh("resume with run/report.html a link outside the run dir", resume(),
              setup=link("run/report.html", "../outside.txt"), culprits=["run/report.html"], must="refuse"))
    add(Fresh("resume with run/config.yaml a link outside the run dir", resume(),
              setup=link("run/config.yaml", "../outside.txt"), culprits=["run/config.yaml"], must="refuse"))
    add(Fresh("resume with run/heads.json a link outside the run dir", resume(),
              setup=link("run/heads.json", "../outside.txt"), culprits=["run/heads.json"], must="refuse"))
    add(Fresh("resume with run/attention a link to a directory outside", resume(),
              setup=both(lambda s: os.makedirs(os.path.join(s, "elsewhere")), link("run/attention", "../elsewhere")),
              culprits=["run/attention"], must="refuse"))
    add(Fresh("resume with run/tinyformer.lock a link outside", resume(),
              setup=link("run/tinyformer.lock", "../outside.txt"), culprits=["run/tinyformer.lock"], must="refuse"))
    add(Fresh("train with fds 0, 1 and 2 closed", train(), outputs=["new"], expect="new/checkpoint.safetensors",
              streams=True))
    add(Fresh("compare with fds 0, 1 and 2 closed", ["compare", "run", "run2", "--out", "c.html"],
              outputs=["c.html"], expect="c.html", streams=True))
    add(Fresh("sample with an escape sequence in the prompt", ["sample", CK, "--prompt", "1\x1b[2J\x07"],
              culprits=["--prompt"], must="refuse"))
    add(Fresh("compare --out with bytes that are not UTF-8", ["compare", "run", "run2", "--out", "c\udcff\udcfe.html"],
              outputs=["c\udcff\udcfe.html"]))
    add(Fresh("config value with an escape sequence", ["config", "cfg.yaml"],
              setup=replace_in("cfg.yaml", b"task: reverse", b'task: "\\e[2J\\a"'), culprits=["data.task"],
              must="refuse"))
    add(Fresh("config path with a NUL in a YAML string", TEXT,
              setup=replace_in("text.yaml", b"path: t.txt", b'path: "t.txt\\0../../etc/passwd"'),
              culprits=["NUL byte"], must="refuse"))
    add(Fresh("config path with bytes that are not UTF-8", ["train", "text.yaml", "--out", "new", "--quiet",
                                                              "--set", "data.path=t\udcff.txt"],
              culprits=["data.path"], must="refuse"))
    add(Fresh("--set training.steps=2^64-1", train("--set", "training.steps=18446744073709551615"),
              culprits=["training.steps"], must="refuse"))
    add(Fresh("--set model.context=2^63", train("--set", "model.context=9223372036854775808"),
              culprits=["model.context"], must="refuse"))
    add(Fresh("--set a subnormal learning rate", train("--set", "optimizer.lr=5e-324", "--set", "schedule.min_lr=0"),
              culprits=["optimizer.lr"], must="refuse"))  # issue 49: finite but impossible (0 in float32)
    add(Fresh("gradcheck with a FIFO as its config", ["gradcheck", "cfg.yaml", "--small"], setup=kind("cfg.yaml", "fifo"),
              culprits=["cfg.yaml"], must="refuse"))
    add(Fresh("export with a FIFO as the checkpoint", ["export", CK, "--format", "llama2c", "--out", "x"],
              setup=kind(CK, "fifo"), culprits=ck, must="refuse"))
    add(Fresh("--init-from a character device", ["train", "cfg.yaml", "--out", "new", "--init-from", "dev"] + SMALL,
              setup=kind("dev", "chardev"), culprits=["dev"], must="refuse"))
    add(Fresh("compare --out a FIFO", ["compare", "run", "run2", "--out", "f.html"], setup=kind("f.html", "fifo"),
              culprits=["f.html"], must="refuse"))
    add(Fresh("attention --out a character device", ["attention", CK, "--prompt", "12|", "--out", "dev"],
              setup=kind("dev", "chardev"), culprits=["dev"], must="refuse"))
    add(Fresh("compare a metrics line nested 100,000 deep", ["compare", "run", "run2", "--out", "c.html"],
              setup=content("run2/metrics.jsonl", b"[" * 100000 + b"\n"), culprits=["run2/metrics.jsonl"],
              must="refuse"))
    add(Fresh("compare a metrics loss of 1e400", ["compare", "run", "run2", "--out", "c.html"],
              setup=replace_in("run2/metrics.jsonl", b'"val_loss":', b'"val_loss":1e400,"x":'),
              culprits=["run2/metrics.jsonl"], must="refuse"))
    add(Fresh("export --out under a dangling link", ["export", CK, "--format", "llama2c", "--out", "dl/x"],
              setup=link("dl", "nowhere/at/all"), culprits=["dl"], must="refuse"))
    add(Fresh("tokens npy whose shape overflows", ["train", "cfg.yaml", "--out", "new", "--set", "data.task=tokens",
                                                   "--set", "data.path=tok.npy", "--set", "model.vocab_size=16"] + SMALL,
              setup=content("tok.npy", npy(b"(4294967296, 4294967297)", b"\0" * 64)), culprits=["tok.npy"],
              must="refuse"))
    return c


def run_one(args, fixture, case):
    slug = "".join(ch if ch.isalnum() else "_" for ch in case.describe)[:60]
    scratch = os.path.join(args.work, slug)
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(fixture, scratch, symlinks=True)
    w(os.path.join(scratch, "outside.txt"), b"outside the run dirs\n")
    if case.setup:
        case.setup(scratch)
    before = generative.snapshot(scratch)
    argv = [os.fsencode(args.bin)] + [os.fsencode(a) for a in case.argv]
    try:
        if case.close_streams:
            p = subprocess.run([b"/bin/sh", b"-c", b'exec "$@" <&- >&- 2>&-', b"sh"] + argv, cwd=scratch, timeout=10)
            code, err = p.returncode, b""
        else:
            p = subprocess.run(argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=10)
            code, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        code, err = None, b""
    after = generative.snapshot(scratch)
    problems = generative.check(case, scratch, code, err, before, after, 0)
    if code is not None and case.must == "refuse" and code == 0:
        problems.append("exit 0, but this input must be refused")
    if code == 2 and case.culprits and not any(c.encode() in err for c in case.culprits):
        problems.append(f"the usage error names none of {case.culprits}")
    if code == 0 and case.warn and not any(l.startswith(b"tinyformer: warning:") and case.warn.encode() in l
                                           for l in err.split(b"\n")):
        problems.append(f"no warning line names {case.warn}")
    if code is not None and case.must == "succeed" and code != 0:
        problems.append(f"exit {code}, but this input is valid")
    if not problems:
        shutil.rmtree(scratch, ignore_errors=True)
    return case, code, err, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("src")
    ap.add_argument("work")
    ap.add_argument("--only", choices=["user", "attacker"])
    ap.add_argument("--case", help="run the cases whose name holds this text")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print every case's stderr")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    os.makedirs(args.work, exist_ok=True)
    fixture = generative.make_fixture(args)
    sets = {"user": user_cases(), "attacker": attacker_cases()}
    start = time.monotonic()
    failed = {}
    for name, cases in sets.items():
        if args.only and name != args.only:
            continue
        cases = [c for c in cases if not args.case or args.case in c.describe]
        failed[name] = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for case, code, err, problems in pool.map(lambda c: run_one(args, fixture, c), cases):
                if args.verbose:
                    print(f"{name}: {case.describe}: exit {code}: {err.decode('utf-8', 'replace').strip()[:400]}")
                if problems:
                    failed[name] += 1
                    print(f"FAIL {name}: {case.describe}: tinyformer {case.argv!r}"[:400])
                    for p in problems:
                        print(f"    {p}")
                    print(f"    stderr: {err[:600]!r}")
        print(f"{name}: {len(cases)} cases, {failed[name]} failed")
    print(f"{time.monotonic() - start:.0f} s")
    sys.exit(1 if any(failed.values()) else 0)


if __name__ == "__main__":
    main()
