#!/usr/bin/python3
"""The generative robustness tester (issue 22): draws bad inputs by class and checks the rules on every one.

usage: generative.py BIN SRC WORK [--cases N] [--seed S] [--jobs J] [--replay CASE]

Each case copies a small fixture (a config, two finished runs, a text file) into its own scratch dir, applies one
mutation drawn from the catalogue below to one file argument, value or flag of one subcommand, runs the command and
checks the invariants:
  - the exit code is 0, 1, 2 or 130 (never a signal), within 10 s; a train still running then (a valid run of many
    steps) is sent Ctrl-C and must end with 130 and its checkpoint;
  - on a non-zero exit exactly one stderr line is "tinyformer: error: ...", every other line a "tinyformer:
    warning/note:" line; each is at most 1 KB and holds no control byte and no internals (messages.py's
    message_problems), and the error line names the culprit (the path, key or flag that was mutated) where the case
    knows one;
  - nothing outside the command's intended outputs changed: kind, bytes, link target and device number of every
    entry of the scratch tree (a refused command changes nothing at all, so a refused train leaves no new run dir);
  - on exit 0, the intended output is complete (a train leaves a checkpoint, compare its page).
Cases are drawn from a seeded generator: the seed and the case number replay one (--seed S --replay N). A case
that ever failed is kept in REGRESSIONS and runs every time.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import messages  # noqa: E402  (message_problems: the rules of a message, kept in one place)

SMALL = ["--set", "model.d_model=16", "--set", "model.n_head=2", "--set", "model.n_layer=1",
         "--set", "training.batch_size=8", "--set", "training.steps=2", "--set", "schedule.warmup_steps=0",
         "--set", "logging.attention_interval=0", "--set", "data.eval_size=16", "--set", "training.eval_batches=1"]


KINDS = ["missing", "empty", "directory", "fifo", "chardev", "loop", "dangling", "link_outside"]
CONTENTS = ["truncate", "flip", "random", "other_kind", "utf16", "crlf", "bom", "huge_header", "deep_json"]
WEIRD_VALUES = ["1e400", "-1e400", "nan", "inf", "-inf", "5e-324", "18446744073709551615", "-9223372036854775809",
                "9223372036854775807", "-1", "0", "", "\x1b[31mred", "a\nb", "\xff\xfe", "[1, [2, [3]]]",
                "{a: 1}", "99999999999", "1e18", "0x10", "true", "~", "'", "\"", "[" * 200]
KEYS = ["model.d_model", "model.n_head", "model.n_layer", "model.context", "model.vocab_size", "model.dropout",
        "model.mlp_ratio", "data.task", "data.length", "data.eval_size", "data.path", "optimizer.lr",
        "optimizer.betas", "optimizer.eps", "optimizer.weight_decay", "optimizer.name", "schedule.name",
        "schedule.warmup_steps", "schedule.min_lr", "training.batch_size", "training.steps", "training.seed",
        "training.grad_accum", "training.grad_clip", "training.threads", "logging.probe", "logging.out_dir",
        "logging.log_interval", "logging.attention_interval", "logging.checkpoint_interval"]
COUNT_FLAGS = {"sample": ["--tokens", "--top-k", "--seed", "--temperature"],
               "heads": ["--batches", "--batch-size"],
               "gradcheck": ["--checks", "--batch"],
               "bench": ["--steps", "--warmup", "--threads", "--new-tokens"]}
COUNT_VALUES = ["1000000000000", "18446744073709551615", "18446744073709551616", "-1", "nan", "inf", "1e9",
                "", "0x7fffffff", "5e-324", "2147483648", "9223372036854775807", " 3", "3 ", "+3"]
# Issue 27's keys, drawn in the cases of the commands it added (WAVE3_COMMANDS), with the values above.
WAVE3_KEYS = ["data.tokenizer", "data.vocab_size", "data.documents", "training.max_seconds", "model.n_kv_head"]
# Flags that conflict or that another flag makes meaningless: each must be a usage error naming one of them.
CONFLICTS = [
    (["train", "cfg.yaml", "--out", "run", "--resume", "--overwrite"], ["--resume", "--overwrite"]),
    (["train", "cfg.yaml", "--out", "run", "--resume", "--init-from", "run2/checkpoint.safetensors"],
     ["--resume", "--init-from"]),
    (["train", "cfg.yaml", "--out", "new", "--allow-changes"], ["--allow-changes"]),
    (["heads", "run/checkpoint.safetensors", "--prompt", "12|", "--data"], ["--prompt", "--data"]),
    (["heads", "run/checkpoint.safetensors", "--prompt", "12|", "--ablate"], ["--prompt", "--ablate"]),
    (["heads", "run/checkpoint.safetensors", "--ablate-mode", "mean"], ["--ablate-mode", "--ablate"]),
    (["export", "run/checkpoint.safetensors", "--format", "llama2c", "--format", "llama2c", "--out", "l2c"],
     ["--format"]),
    (["export", "lrun/checkpoint.safetensors", "--format", "gguf", "--out", "l2c"], ["--format"]),
    (["sample", "run/checkpoint.safetensors", "--prompt", "12|", "--prompt", "21|"], ["--prompt"]),
    (["bench", "--gemm", "--sample"], ["--gemm", "--sample"]),
    (["bench", "--gemm", "--shape", "tiny"], ["--gemm", "--shape"]),
    (["bench", "--shape", "tiny", "--new-tokens", "5"], ["--new-tokens", "--sample"]),
    (["bench", "--shape", "tiny", "--sample", "--steps", "1"], ["--sample", "--steps"]),
    (["bench", "--shape", "tiny", "--scaling"], ["--scaling", "--shape"]),
    (["compare", "run", "--out", "cmp.html"], ["run", "compare"]),
]
# (seed, case) pairs that once failed, replayed in every run (see docs/robustness.md): gradcheck with
# model.vocab_size 2^63-1 (a bare out of memory, no estimate), a newline in an --out name and in a --set value
# (a second stderr line).
REGRESSIONS = [("22", 228), ("20261127", 110), ("20261127", 128),
               ("20261129", 82),  # issue 49's strict oracle: compare --set names --set, the flag it does not take
               ("20261209", 190),  # text.yaml cut to "model:": the default config's 2000 steps ran past 10 s
               ("20261211", 145),  # weight_decay 1.8e19: the run diverges at step 2, a stop and not a refusal
               ("20261218", 189),  # resume_bpe with a data line over 65536 bytes: no line left to learn from
               ("20261234", 239),  # d_model: ' never closed: yaml-cpp read the rest of the file into it
               ("20261243", 108),  # grad_accum 99999999999: the step's whole batch, a bare out of memory
               ("20261247", 194),  # name: ' in two sections: one quote over the lines between, a later key named
               ("20261271", 42),  # a value of "a\nb": its "b" is a line of its own, named as an unknown section
               ("20261303", 45),  # bpe data.vocab_size 10^11: the memory refusal named model.vocab_size (default)
               ("20261317", 50)]  # training.steps 10^11, a valid run of days: Ctrl-C after 10 s, checkpoint kept


class Case:
    def __init__(self, number, rng):
        self.number = number
        self.rng = rng
        self.argv = []
        self.culprits = []     # one of these must appear in the error line
        self.outputs = []      # paths (relative to the scratch dir) the command may change on exit 0
        self.expect_file = None  # on exit 0 this must exist
        self.describe = ""
        self.close_streams = False
        self.interrupted = False  # a train still running after 10 s, stopped with Ctrl-C (see run_case)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def can_mount_read_only():
    """Whether this process may make a directory read-only in a mount namespace of its own (root in most containers)."""
    try:
        return subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind / / 2>/dev/null; true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# Every time limit is multiplied by this (--time-scale): the fronts under qemu take several times as long.
TIME_SCALE = 1.0

# "ro_parent": the file's directory read-only (a read-only bind mount in a private mount namespace), drawn where
# unshare may. (An unreadable file is not drawn: the suite runs as root, whom no permission bit stops.)
CAN_MOUNT = can_mount_read_only()


def read_only_parent(argv, directory):
    """argv run with `directory` read-only, seen by it alone."""
    return [b"unshare", b"-m", b"sh", b"-c", b'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"',
            os.fsencode(directory)] + argv


def apply_kind(path, kind, scratch):
    """Replaces what is at `path` by an entry of `kind` (ro_parent leaves it, and run_case mounts its directory)."""
    if kind == "ro_parent":
        return
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    if kind == "missing":
        return
    if kind == "empty":
        write(path, b"")
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "chardev":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a null device of the case's own
        except PermissionError:
            os.symlink("/dev/zero", path)  # read-only use is safe; a write would be refused as a link
    elif kind == "loop":
        os.symlink(path + ".loop", path)
        os.symlink(path, path + ".loop")
    elif kind == "dangling":
        os.symlink(os.path.join(scratch, "nowhere", "nothing"), path)
    elif kind == "link_outside":
        os.symlink(os.path.join(scratch, "outside.txt"), path)


def apply_content(path, how, rng):
    data = read(path) if os.path.isfile(path) else b""
    if how == "truncate":
        data = data[:rng.randrange(0, max(1, len(data)))]
    elif how == "flip":
        data = bytearray(data or b"x")
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        data = bytes(data)
    elif how == "random":
        data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
    elif how == "other_kind":
        data = rng.choice([b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" +
                           b" " * 40 + b"\n" + b"\0" * 12, b"model:\n  d_model: 8\n", b"{\"step\": 1}\n",
                           b"\x89PNG\r\n\x1a\n" + b"\0" * 64, b"<html></html>"])
    elif how == "utf16":
        data = data.decode("utf-8", "replace").encode("utf-16")
    elif how == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif how == "bom":
        data = b"\xef\xbb\xbf" + data
    elif how == "huge_header":  # a safetensors/npy-like header that declares many GiB
        data = (1 << 40).to_bytes(8, "little") + b"{" + data[9:64]
    elif how == "deep_json":
        data = (100000).to_bytes(8, "little") + b"[" * 100000 if rng.random() < 0.5 else b"[" * 100000
    write(path, data)


def draw(case, wave3=False):
    """Fills `case` with one command and one mutation. wave3: one of the commands issue 27 added (a bpe text run,
    sample of a bpe checkpoint, export --format llama2c, bench --check-gemm) or conflicting flags, with its keys."""
    rng = case.rng
    ck = "run/checkpoint.safetensors"
    lck = "lrun/checkpoint.safetensors"
    if wave3 and rng.random() < 0.15:
        argv, culprits = rng.choice(CONFLICTS)
        case.argv, case.outputs, case.expect_file, case.culprits = list(argv), [], None, culprits
        case.mutation, case.klass = ("none",), "flags: conflicting"
        case.describe = f"conflicting flags: {' '.join(argv)}"
        return case
    commands = [
        ("train", ["train", "cfg.yaml", "--out", "new"] + SMALL, ["cfg.yaml"], ["new"], "new/checkpoint.safetensors"),
        ("resume", ["train", "cfg.yaml", "--out", "run", "--resume"] +
         [a.replace("training.steps=2", "training.steps=3") for a in SMALL],
         [ck, "run/metrics.jsonl", "run/config.yaml", "run/report.html", "run/heads.json", "run/attention",
          "run/tinyformer.lock"], ["run"], None),
        ("init", ["train", "cfg.yaml", "--out", "new", "--init-from", ck] + SMALL, [ck], ["new"], None),
        ("sample", ["sample", ck, "--prompt", "12|", "--tokens", "3"], [ck], [], None),
        ("attention", ["attention", ck, "--prompt", "1234|", "--out", "maps"], [ck, "maps"], ["maps"],
         "maps/report.html"),
        ("heads", ["heads", ck, "--batches", "1", "--batch-size", "4"], [ck], [], None),
        ("compare", ["compare", "run", "run2", "--out", "cmp.html"],
         ["run/config.yaml", "run/metrics.jsonl", "run2/metrics.jsonl", "cmp.html"], ["cmp.html"], "cmp.html"),
        ("config", ["config", "cfg.yaml"], ["cfg.yaml"], [], None),
        ("gradcheck", ["gradcheck", "cfg.yaml", "--small", "--checks", "2", "--batch", "1"], ["cfg.yaml"], [], None),
        ("text", ["train", "text.yaml", "--out", "new", "--quiet", "--set", "training.steps=2", "--set",
                  "schedule.warmup_steps=0", "--set", "logging.attention_interval=0"],  # short whatever the file
         ["text.yaml", "t.txt"], ["new"], None),
    ]
    if wave3:
        commands = [
            ("bpe", ["train", "bpe.yaml", "--out", "new", "--quiet", "--set", "training.steps=2", "--set",
                     "schedule.warmup_steps=0", "--set", "logging.attention_interval=0"],  # short whatever the file
             ["bpe.yaml", "t.txt"], ["new"], None),
            ("resume_bpe", ["train", "bpe.yaml", "--out", "lrun", "--resume", "--quiet", "--set", "training.steps=3",
                            "--allow-changes"],  # data.path moved with the copy
             [lck, "lrun/metrics.jsonl", "lrun/config.yaml", "bpe.yaml", "t.txt"], ["lrun"], None),
            ("sample_bpe", ["sample", lck, "--prompt", "the \u2603 fox", "--tokens", "3"], [lck], [], None),
            ("export", ["export", lck, "--format", "llama2c", "--out", "l2c"], [lck, "l2c"], ["l2c"], "l2c/model.bin"),
            ("bench_gemm", ["bench", "--shape", "tiny", "--steps", "1", "--warmup", "0", "--check-gemm"], [], [], None),
        ]
    name, argv, files, outputs, expect = rng.choice(commands)
    case.argv, case.outputs, case.expect_file = list(argv), outputs, expect
    klass = rng.choice(["kind", "kind", "content", "content", "value", "path", "streams"] if wave3 else
                       ["kind", "kind", "content", "content", "value", "flag", "path", "streams"])
    case.klass = klass
    if klass == "kind":
        if not files:  # bench reads no file: a value instead
            return draw_value(case, rng, name, wave3)
        target, kind = rng.choice(files), rng.choice(KINDS + ["ro_parent"] * 3 if wave3 and CAN_MOUNT else KINDS)
        case.mutation = ("kind", target, kind)
        case.klass = f"kind: {kind}"
        case.culprits = [target] + ([os.path.dirname(target) + ":"] if "/" in target else [])  # or its run dir
        if kind == "ro_parent":  # what cannot be written is an output (or the run dir the file is in)
            case.culprits += outputs + ["Read-only file system"]
        case.describe = f"{name}: {target} is {kind}"
    elif klass == "content":
        if not files:
            return draw_value(case, rng, name, wave3)
        target = rng.choice([f for f in files if f not in ("maps", "run/attention", "cmp.html")] or files)
        how = rng.choice(CONTENTS)
        case.mutation = ("content", target, how)
        case.klass = f"content: {how}"
        case.culprits = [target, os.path.basename(target)]  # some contents are valid (exit 0): a CRLF config
        case.describe = f"{name}: {target} {how}"
    elif klass == "value":
        draw_value(case, rng, name, wave3)
    elif klass == "flag":
        command = rng.choice(sorted(COUNT_FLAGS))
        flag, value = rng.choice(COUNT_FLAGS[command]), rng.choice(COUNT_VALUES)
        base = {"sample": ["sample", ck, "--prompt", "12|"], "heads": ["heads", ck],
                "gradcheck": ["gradcheck", "cfg.yaml", "--small", "--set", "model.n_layer=1", "--set", "model.n_head=1"],
                "bench": ["bench", "--shape", "tiny", "--steps", "1", "--warmup", "0"]}[command]
        if command == "gradcheck" and flag == "--checks":
            # A huge count is valid (every element is checked): at one layer, one head and one sequence that ends in
            # 0.4 s under the sanitizers, where the --small model's two layers of 4 heads took 13.7 s, past the limit.
            base = base + ["--batch", "1"]
        if command == "bench" and flag == "--new-tokens":
            base = ["bench", "--shape", "tiny", "--sample"]  # --sample takes no --steps or --warmup
        case.argv, case.outputs, case.expect_file = base + [flag, value], [], None
        case.mutation = ("none",)
        case.culprits = [flag]
        case.describe = f"{command} {flag} {value!r}"
    elif klass == "path":
        trick = rng.choice(["newline", "esc", "latin1", "long", "dotdot", "empty_component"])
        bad = {"newline": "a\nb", "esc": "a\x1b[2Jb", "latin1": "caf\udce9", "long": "x" * 300,
               "dotdot": "../escape", "empty_component": "a//b"}[trick]
        slot = rng.choice(["config", "out"])
        case.mutation = ("path", slot, bad)
        case.klass = f"name: {trick}"
        case.expect_file = None
        case.describe = f"{name}: a {trick} name for {slot}"
        case.culprits = []
    else:
        case.mutation = ("none",)
        case.close_streams = True
        case.describe = f"{name}: stdin, stdout and stderr closed"
    return case


def draw_value(case, rng, name, wave3):
    """A weird value for a config key, in the YAML file or with --set (bench takes neither: one of its count flags)."""
    case.klass = "value"
    if case.argv[0] == "bench":
        flag, value = rng.choice(COUNT_FLAGS["bench"][:3]), rng.choice(COUNT_VALUES)
        case.argv += [flag, value]
        case.mutation, case.culprits, case.klass = ("none",), [flag], "flag"
        case.describe = f"{name} {flag} {value!r}"
        return case
    key, value = rng.choice(KEYS + WAVE3_KEYS if wave3 else KEYS), rng.choice(WEIRD_VALUES)
    config = "cfg.yaml" if "cfg.yaml" in case.argv else next((a for a in case.argv if a.endswith(".yaml") and wave3),
                                                               None)
    if rng.random() < 0.5 and config is not None:
        case.mutation = ("yaml", key, value, config)
        case.describe = f"{name}: {config} {key}: {value!r}"
    else:
        case.argv += ["--set", f"{key}={value}"]
        case.mutation = ("none",)
        case.describe = f"{name}: --set {key}={value!r}"
    # the key; a value that breaks the YAML file's syntax can only be placed by its line (build_scratch adds it); a
    # command without --set names that
    case.culprits = [key] + ([] if case.argv[0] in ("train", "config", "gradcheck") else ["--set"])
    return case


def build_scratch(case, scratch, fixture):
    shutil.copytree(fixture, scratch, symlinks=True)
    write(os.path.join(scratch, "outside.txt"), b"outside the run dirs\n")
    m = case.mutation
    if m[0] == "kind":
        apply_kind(os.path.join(scratch, m[1]), m[2], scratch)
    elif m[0] == "content":
        apply_content(os.path.join(scratch, m[1]), m[2], case.rng)
    elif m[0] == "yaml":
        section, key = m[1].split(".")
        config = m[3] if len(m) > 3 else "cfg.yaml"
        text = read(os.path.join(scratch, config)).decode()
        value = m[2].encode("utf-8", "surrogateescape").decode("utf-8", "replace") if m[2] else "''"
        text = re.sub(rf"(?m)^{section}:\n", f"{section}:\n  {key}: {value}\n", text, count=1) \
            if re.search(rf"(?m)^  {key}:", text) is None else re.sub(rf"(?m)^  {key}:.*$", f"  {key}: {value}", text)
        write(os.path.join(scratch, config), text.encode("utf-8", "surrogateescape"))
        line = text[:text.index(f"  {key}: ")].count("\n") + 1
        case.culprits.append((config, f"line {line}"))  # a value that breaks the file's syntax: its place
        if "\n" in value:  # "a\nb": its second part is a line of its own, and may be the first that breaks
            case.culprits.append((config, f"line {line + 1}"))
    elif m[0] == "path":
        slot, bad = m[1], m[2]
        for i, a in enumerate(case.argv):
            if slot == "config" and a in ("cfg.yaml", "text.yaml", "bpe.yaml"):
                target = os.path.join(scratch, os.fsencode(bad).decode("utf-8", "surrogateescape"))
                try:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    shutil.copy(os.path.join(scratch, a), target)
                except OSError:
                    pass
                case.argv[i] = bad
                break
            if slot == "out" and i > 0 and case.argv[i - 1] == "--out":
                case.argv[i] = bad
                case.outputs = [bad.split("/")[0]]
                break


def snapshot(root):
    """Every entry under root: kind, bytes' hash, link target, device number (names as bytes)."""
    state = {}
    broot = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(broot):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, broot)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    state[rel] = ("file", hashlib.sha256(f.read()).hexdigest())
            elif stat.S_ISLNK(st.st_mode):
                state[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                state[rel] = ("dir",)
            else:
                state[rel] = ("special", stat.S_IFMT(st.st_mode), st.st_rdev)
    return state


def allowed(rel, outputs):
    rel = os.fsdecode(rel)
    return any(rel == o or rel.startswith(o + "/") for o in outputs)


def shown(text):
    """`text` as a message shows it: control bytes and bytes that are not UTF-8 as \\xNN (tf::printable_message)."""
    out = []
    for ch in os.fsencode(text).decode("utf-8", "surrogateescape"):
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append(f"\\x{o - 0xDC00:02x}")
        elif o < 0x20 or o == 0x7f:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


def names_culprit(text, culprits):
    """Whether the message names one of the culprits (a tuple: all of its parts)."""
    return any(all(p in text or shown(p) in text for p in (c if isinstance(c, tuple) else (c,))) for c in culprits)


# A run that diverged (a learning rate of 1e18, say, as tests/app/cli_faults.sh uses on purpose) is not a refusal: the
# trainer stops on the first non-finite loss or gradient and its line names the setting that decides that.
NONFINITE_STOP = "training stopped (training.nonfinite: stop)"


def culprit_problems(case, text, code):
    """The strict oracle: a refusal (exit 1 or 2) names the culprit the case mutated."""
    if case.culprits and code in (1, 2) and NONFINITE_STOP not in text and not names_culprit(text, case.culprits):
        return [f"the error line names none of {case.culprits}: {text[:300]}"]
    return []


def check(case, scratch, code, err, before, after, elapsed):
    problems = []
    if code is None:
        return ["did not end within 10 s"]
    if getattr(case, "klass", "") == "flags: conflicting" and code != 2:
        problems.append(f"conflicting flags ended with exit code {code}, not a usage error (2)")
    if code not in (0, 1, 2, 130):
        problems.append(f"exit code {code} (a signal or an unexpected code)")
    interrupted = getattr(case, "interrupted", False)  # fresh_sets.py's cases have no such field
    if interrupted:  # a long valid run stopped with Ctrl-C: exit 130 after its step, its checkpoint written
        out = case.argv[case.argv.index("--out") + 1]
        saved = os.path.isfile(os.path.join(scratch, out, "checkpoint.safetensors"))
        if code != 130 or not saved:
            problems.append(f"still training after 10 s, and Ctrl-C then ended it with exit {code}, "
                            f"{'with' if saved else 'without'} a checkpoint in {out}")
    if not case.close_streams:  # with stderr closed there is nothing to read
        problems += messages.message_problems(err, 0 if interrupted else code)
    for l in err.split(b"\n"):
        if not l.startswith(b"tinyformer: error: "):
            continue
        problems += culprit_problems(case, l.decode("utf-8", "replace"), code)
    changed = sorted(set(before) | set(after))
    changed = [k for k in changed if before.get(k) != after.get(k)]
    finished = code == 0 or (interrupted and code == 130)
    outputs = case.outputs if finished else []
    bad = [os.fsdecode(k) for k in changed if not allowed(k, outputs)]
    # the lock file and *.tmp.<pid> of a run are not outputs; the lock's content goes back to empty
    bad = [k for k in bad if not (finished and k.endswith("tinyformer.lock"))]
    if bad:
        problems.append(f"changed outside the intended outputs: {bad[:6]}")
    if code == 0 and case.expect_file and not os.path.lexists(os.path.join(scratch, case.expect_file)):
        problems.append(f"exit 0 but {case.expect_file} was not written")
    return problems


def run_or_interrupt(case, argv, scratch):
    """(exit code, stderr) of the command, within 10 s. A train still running then is a valid run that takes long
    (training.steps 99999999999 is a count like any other): Ctrl-C must end it after its step, exit 130, with its
    checkpoint written (check() requires both); it gets 10 s more for that. Raises TimeoutExpired otherwise."""
    p = subprocess.Popen(argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        try:
            err = p.communicate(timeout=10 * TIME_SCALE)[1]
        except subprocess.TimeoutExpired:
            if case.argv[0] != "train":
                raise
            case.interrupted = True
            p.send_signal(signal.SIGINT)
            err = p.communicate(timeout=10 * TIME_SCALE)[1]
        return p.returncode, err
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise


def run_case(args, fixture, seed, number, regression=False):
    rng = random.Random(f"{seed}:{number}")
    # a quarter of the cases draw issue 27's commands; from a generator of their own, so that the other cases (and
    # the regressions, drawn before these commands existed) stay the cases they were
    wave3 = not regression and random.Random(f"{seed}:{number}:wave3").random() < 0.25
    case = draw(Case(number, rng), wave3)
    scratch = os.path.join(args.work, f"case_{number:04d}")
    shutil.rmtree(scratch, ignore_errors=True)
    build_scratch(case, scratch, fixture)
    before = snapshot(scratch)
    argv = [os.fsencode(args.bin)] + [os.fsencode(a) for a in case.argv]
    if case.mutation[0] == "kind" and case.mutation[2] == "ro_parent":
        argv = read_only_parent(argv, os.path.dirname(os.path.join(scratch, case.mutation[1])))
    start = time.monotonic()
    try:
        if case.close_streams:
            wrapped = [b"/bin/sh", b"-c", b'exec "$@" <&- >&- 2>&-', b"sh"] + argv
            p = subprocess.run(wrapped, cwd=scratch, timeout=10 * TIME_SCALE)
            code, err = p.returncode, b""
        else:
            code, err = run_or_interrupt(case, argv, scratch)
    except subprocess.TimeoutExpired:
        code, err = None, b""
    elapsed = time.monotonic() - start
    after = snapshot(scratch)
    problems = check(case, scratch, code, err, before, after, elapsed)
    if not problems:
        shutil.rmtree(scratch, ignore_errors=True)
    return case, code, err, problems


def make_fixture(args):
    fixture = os.path.join(args.work, "fixture")
    shutil.rmtree(fixture, ignore_errors=True)
    os.makedirs(fixture)
    shutil.copy(os.path.join(args.src, "configs", "reverse.yaml"), os.path.join(fixture, "cfg.yaml"))
    write(os.path.join(fixture, "t.txt"), b"the quick brown fox jumps over the lazy dog\n" * 20)
    write(os.path.join(fixture, "text.yaml"),
          b"model:\n  context: 16\n  d_model: 16\n  n_head: 2\n  n_layer: 1\ndata:\n  task: text\n  path: t.txt\n"
          b"schedule:\n  warmup_steps: 0\ntraining:\n  batch_size: 4\n  steps: 2\nlogging:\n  attention_interval: 0\n")
    # a Llama-shaped model on a bpe vocabulary, as export --format llama2c takes
    write(os.path.join(fixture, "bpe.yaml"),
          b"model:\n  context: 16\n  d_model: 16\n  n_head: 2\n  n_layer: 1\n  norm: rmsnorm\n  mlp: swiglu\n"
          b"  position: rope\n  bias: false\ndata:\n  task: text\n  path: t.txt\n  tokenizer: bpe\n"
          b"  vocab_size: 300\noptimizer:\n  lr: 1.0e-3\nschedule:\n  warmup_steps: 0\ntraining:\n  batch_size: 4\n"
          b"  steps: 2\nlogging:\n  attention_interval: 0\n  probe: ''\n")
    for run in ("run", "run2"):
        subprocess.run([args.bin, "train", "cfg.yaml", "--out", run, "--quiet"] + SMALL, cwd=fixture, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run([args.bin, "train", "bpe.yaml", "--out", "lrun", "--quiet"], cwd=fixture, check=True,
                   stdout=subprocess.DEVNULL)
    return fixture


# ---- the Python and C++ front ends (fronts.py draws their cases) --------------------------------------------------

def front_messages(front, err):
    """(the error line as the CLI would print it or None, its exception classes, warning lines, problems) of a front
    end's stderr."""
    lines, classes, problems, error = [], [], [], None
    for raw in err.split(b"\n"):
        if not raw:
            continue
        if front == "cpp":
            text = raw.decode("utf-8", "surrogateescape")
            if text.startswith("runs_probe: error: "):
                error = text.split(": ", 3)[3] if text.count(": ") >= 3 else text
            elif text.startswith("runs_probe: warning: "):  # the runs API's on_warning, as the CLI would print it
                lines.append(b"tinyformer: warning: " + raw[len(b"runs_probe: warning: "):])
            elif text.startswith("runs_probe: LEAK: "):
                problems.append(f"an exception other than runs::Error left the runs API: {text[18:300]}")
            elif not text.startswith("runs_probe: not passable"):
                problems.append(f"unexpected output on stderr: {text[:200]}")
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            problems.append(f"unexpected output on stderr (not the runner's): {raw[:200]!r}")
            continue
        if "warning" in item:
            lines.append(b"tinyformer: warning: " + item["warning"].encode("utf-8", "surrogateescape"))
        else:
            error, classes = item["message"], item["mro"]
    return error, classes, lines, problems


def check_front(call, scratch, code, err, before, after):
    import fronts
    problems = []
    if code is None:
        return ["did not end within 20 s"]
    if code not in (0, 1, 2, 130):
        return [f"exit code {code} (a signal or an unexpected code)"]
    error, classes, warnings, problems = front_messages(call.front, err)
    if code == 2 and call.front == "cpp":
        return problems  # the spec cannot be passed to the C++ API's types: nothing of the library's to check
    if code in (1, 130):
        if error is None:
            problems.append("a refusal without an error message")
        else:
            line = b"tinyformer: error: " + error.encode("utf-8", "surrogateescape")
            problems += messages.message_problems(b"\n".join(warnings + [line]) + b"\n", 1)
            problems += culprit_problems(call, error, 1)
        if call.front == "python" and classes:
            if set(classes) & fronts.NEVER:
                problems.append(f"raised {classes[0]}, which leaks an internal")
            elif error is not None and NONFINITE_STOP in error:  # a run that diverged: not a refusal
                if "RuntimeError" not in classes:
                    problems.append(f"a diverged run raised {classes[0]}, not RuntimeError")
            elif not set(classes) & fronts.FITTING[call.klass]:
                problems.append(f"raised {classes[0]}, not one of {sorted(fronts.FITTING[call.klass])} for a "
                                f"{call.klass} mutation")
    else:
        problems += messages.message_problems(b"\n".join(warnings) + b"\n", 0)
    changed = [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    outputs = call.outputs if code == 0 or call.klass == "callback" else []
    bad = [os.fsdecode(k) for k in changed if not allowed(k, outputs)]
    bad = [k for k in bad if not (code == 0 and k.endswith("tinyformer.lock"))]
    if bad:
        problems.append(f"changed outside the intended outputs: {bad[:6]}")
    if (code == 0 or call.klass == "callback") and call.expect_file and not os.path.lexists(
            os.path.join(scratch, call.expect_file)):
        problems.append(f"exit {code} but {call.expect_file} was not written")
    if call.klass == "callback":
        lock = os.path.join(scratch, "new", "tinyformer.lock")
        if os.path.exists(lock) and os.path.getsize(lock) > 0:
            problems.append("the run's lock file still names a holder after the callback ended the run")
        if call.args.get("callback") == "raise" and code != 1:
            problems.append(f"a raising callback ended with exit {code}, not its exception")
    return problems


class PythonFront:
    """The Python front end's interpreter for one tester thread: front_python.py --serve, which imports the module once
    and forks a process for each call."""
    local = threading.local()
    started = []

    @classmethod
    def of_this_thread(cls, args):
        if not hasattr(cls.local, "front"):
            env = dict(os.environ, PYTHONPATH=args.python_path, PYTHONDONTWRITEBYTECODE="1")
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "front_python.py")
            cls.local.front = cls()
            cls.local.front.p = subprocess.Popen([args.python, script, "--serve"], stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, env=env, cwd=args.work)
            cls.local.front.pending = b""
            cls.started.append(cls.local.front)
        return cls.local.front

    def line(self, timeout=None):
        """The server's next line, or None when `timeout` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b"\n" not in self.pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"the Python front's server ended with status {self.p.wait()}")
            self.pending += chunk
        text, self.pending = self.pending.split(b"\n", 1)
        return json.loads(text)

    def call(self, spec_path, scratch, timeout):
        """(exit code or None for a hang, stderr) of the call `spec_path` run in `scratch`."""
        err_path = scratch + ".err"
        self.p.stdin.write(json.dumps([spec_path, scratch, err_path]).encode() + b"\n")
        self.p.stdin.flush()
        pid = self.line()
        code = self.line(timeout)
        if code is None:
            os.kill(pid, signal.SIGKILL)
            self.line()
        err = read(err_path)
        os.remove(err_path)
        return code, err

    @classmethod
    def stop_all(cls):
        for front in cls.started:
            front.p.stdin.close()
            front.p.wait()


def run_front_case(args, fixture, front, seed, number, call):
    import fronts
    scratch = os.path.join(args.work, f"{front}_{seed}_{number:04d}")
    shutil.rmtree(scratch, ignore_errors=True)
    call.rng = random.Random(f"{front}:{seed}:{number}")  # the content mutations' bytes
    build_scratch(call, scratch, fixture)
    spec_path = scratch + ".json"
    write(spec_path, (fronts.python_spec(call) if front == "python" else fronts.cpp_spec(call)).encode())
    before = snapshot(scratch)
    if front == "python":
        code, err = PythonFront.of_this_thread(args).call(spec_path, scratch, 20 * TIME_SCALE)
    else:
        try:
            p = subprocess.run([args.probe, spec_path], cwd=scratch, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=20 * TIME_SCALE)
            code, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            code, err = None, b""
    after = snapshot(scratch)
    problems = check_front(call, scratch, code, err, before, after)
    if not problems:
        shutil.rmtree(scratch, ignore_errors=True)
        os.remove(spec_path)
    return call, code, err, problems


def front_plan(front, count, seed_arg):
    """[(seed, number, call)] of `front`: half of seed 22, half of today's, as for the CLI (or all of --seed)."""
    import fronts
    if count <= 0:
        return []
    today = time.strftime("%Y%m%d", time.gmtime())
    halves = [(seed_arg, count)] if seed_arg is not None else [("22", count // 2), (today, count - count // 2)]
    plan = []
    for seed_value, n in halves:
        calls = fronts.draw_calls(front, n, seed_value)
        plan += [(seed_value, i, c) for i, c in enumerate(calls)]
    plan += [("regression", i, c) for i, c in enumerate(fronts.regression_calls(front))]
    return plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("src")
    ap.add_argument("work")
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--seed", default=None, help="default: 22 and today's date (two halves of the cases)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--replay", type=int, default=None)
    ap.add_argument("--summary", action="store_true", help="also print how many cases each mutation had")
    ap.add_argument("--python-cases", type=int, default=0, help="cases of the Python front end (front_python.py)")
    ap.add_argument("--cpp-cases", type=int, default=0, help="cases of the C++ runs API (runs_probe)")
    ap.add_argument("--python-path", default=None, help="the directory that holds the tinyformer package")
    ap.add_argument("--probe", default=None, help="tests/tools' runs_probe")
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter of the Python front end")
    ap.add_argument("--time-scale", type=float, default=1.0,
                    help="multiplies every time limit: for fronts that run under an emulator (scripts/qemu_fronts.sh)")
    ap.add_argument("--front", default=None, choices=["cli", "python", "cpp"],
                    help="with --replay: the front end of the case to replay")
    args = ap.parse_args()
    global TIME_SCALE
    TIME_SCALE = args.time_scale
    args.bin = os.path.abspath(args.bin)
    args.python_path = args.python_path and os.path.abspath(args.python_path)
    args.probe = args.probe and os.path.abspath(args.probe)
    os.makedirs(args.work, exist_ok=True)
    fixture = make_fixture(args)
    if args.seed is not None:
        plan = [(args.seed, n) for n in range(args.cases)]
    else:
        today = time.strftime("%Y%m%d", time.gmtime())
        half = args.cases // 2
        plan = [("22", n) for n in range(half)] + [(today, n) for n in range(args.cases - half)]
        print(f"seeds: 22 (cases 0..{half - 1}) and {today} (cases 0..{args.cases - half - 1}); "
              f"replay one with --seed S --replay N")
    if args.python_cases and not glob.glob(os.path.join(args.python_path or "", "tinyformer", "_core*.so")):
        print(f"python front: skipped, no tinyformer module in {args.python_path} (built with the Python module on)")
        args.python_cases = 0
    fronts_plan = {f: front_plan(f, n, args.seed) for f, n in (("python", args.python_cases),
                                                                 ("cpp", args.cpp_cases))}
    if args.replay is not None:
        front = args.front or "cli"
        if front == "cli":
            plan = [(plan[0][0], args.replay)]
            fronts_plan = {}
        else:
            plan = []
            fronts_plan = {front: [c for c in fronts_plan[front] if c[1] == args.replay][:1]}
    else:
        plan += REGRESSIONS
    start = time.monotonic()
    failures = {"cli": 0, "python": 0, "cpp": 0}
    by_code, by_class = {}, {}
    counts = {"cli": len(plan), **{f: len(p) for f, p in fronts_plan.items()}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_case, args, fixture, s, n, (s, n) in REGRESSIONS): ("cli", s, n) for s, n in plan}
        for front, items in fronts_plan.items():
            for s_value, n, call in items:
                futures[pool.submit(run_front_case, args, fixture, front, s_value, n, call)] = (front, s_value, n)
        for f in concurrent.futures.as_completed(futures):
            front, seed, number = futures[f]
            case, code, err, problems = f.result()
            by_code[code] = by_code.get(code, 0) + 1
            by_class[f"{front} {case.klass}"] = by_class.get(f"{front} {case.klass}", 0) + 1
            if problems:
                failures[front] += 1
                what = f"tinyformer {case.argv!r}" if front == "cli" else f"{case.op} {case.args!r}"[:400]
                print(f"FAIL {front} seed {seed} case {number}: {case.describe!r}: {what}")
                for p in problems:
                    print(f"    {p}")
                print(f"    stderr: {err[:600]!r}")
    PythonFront.stop_all()
    seconds = time.monotonic() - start
    codes = ", ".join(f"exit {c}: {n}" for c, n in sorted(by_code.items(), key=lambda kv: str(kv[0])))
    if args.summary:
        print("cases by mutation: " + ", ".join(f"{k} {n}" for k, n in sorted(by_class.items())))
    children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    cpu = children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime
    per_front = ", ".join(f"{f} {counts[f]} ({failures[f]} failed)" for f in counts)
    print(f"{sum(counts.values())} cases in {seconds:.0f} s: {per_front} ({codes}); {sum(failures.values())} failed")
    print(f"cost: {seconds:.0f} s wall, {cpu:.0f} CPU s (user + sys, the tester and every process it ran), load "
          f"{os.getloadavg()[0]:.1f}")
    sys.exit(1 if any(failures.values()) else 0)


if __name__ == "__main__":
    main()
