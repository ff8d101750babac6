#!/usr/bin/python3
"""The message test (issue 22): what tinyformer says on stderr is for a user, in one line.

usage: messages.py BIN SRC WORK [--jobs J]         run the fuzzers' corpora through the app and check every message
       messages.py --files FILE...                 check stderr captured elsewhere (the CLI tests call this)

A message fails when it holds a C++ qualified name (Foo::bar), an exception class or a class of lib/ (std::,
bad_alloc, FileError, LrSchedule, ...), a library's own message format (libstdc++'s "filesystem error", nlohmann's
"[json.exception", yaml-cpp's "yaml-cpp:" or "bad conversion", CLI11's "ParseError"), a control byte, or more than
1 KB; or when a failing command's stderr holds more than one "tinyformer: error:" line or a line that is neither
that nor a "tinyformer: warning:" / "tinyformer: note:" line. generative.py and fresh_sets.py check their cases with
the same function, message_problems.

The corpora (tests/fuzz/corpus/* and tests/fuzz/regressions/*) go through the commands that read them: config files
through `config`, safetensors through `sample`, npy and tokens files as data.path of a tokens task and text files as
data.path of a text task (through `gradcheck --small`, which loads the data), argument lists through the parser
(every subcommand but bench, which would time a model instead of reading an argument).
"""
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import time

_SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a run that has not ended by then is a hang: the slowest valid input (a tokens file of 4M ids) takes 17 s alone and
# was seen past 60 s with two jobs on a machine loaded by other builds
HANG_S = 240


def _class_names():
    """CamelCase class and struct names declared in lib/ (FileError, LrSchedule, DataSource, ...)."""
    names = set()
    for path in glob.glob(os.path.join(_SRC, "lib", "tinyformer", "**", "*.hpp"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as f:
            for m in re.finditer(r"\b(?:class|struct)\s+([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)\b", f.read()):
                names.add(m.group(1))
    return sorted(names - {"AdamW"})  # AdamW is also the optimizer's name, which messages name


INTERNALS = re.compile(
    r"\b[A-Za-z_]\w*::~?[A-Za-z_]\w*|\bstd::|bad_alloc|bad_array_new_length|basic_string|what\(\)|terminate called|"
    r"out_of_range|invalid_argument|logic_error|runtime_error|length_error|system_error|domain_error|type_error|"
    r"parse_error|json\.exception|filesystem error|yaml-cpp|bad conversion|ParseError|Assertion|Segmentation|"
    r"core dumped|\b[A-Za-z]+\.load_state\b|\b(?:" + "|".join(_class_names()) + r")\b")
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
MAX_LINE = 1024


def message_problems(err, code):
    """What is wrong with a command's stderr `err` (bytes) given its exit code: a list of sentences."""
    problems = []
    lines = err.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    errors = [line for line in lines if line.startswith(b"tinyformer: error: ")]
    if code not in (0, None) and len(errors) != 1:
        problems.append(f"{len(errors)} error lines (expected exactly one)")
    for line in lines:
        if not line.startswith((b"tinyformer: error: ", b"tinyformer: warning: ", b"tinyformer: note: ")):
            if code not in (0, None):
                problems.append(f"a stderr line that is not an error, a warning or a note: {line[:200]!r}")
                break
            continue
        if len(line) > MAX_LINE:
            problems.append(f"a line of {len(line)} bytes (at most {MAX_LINE})")
        if CONTROL.search(line):
            problems.append(f"a control byte: {line[:300]!r}")
        m = INTERNALS.search(line.decode("utf-8", "replace"))
        if m:
            problems.append(f"internals ({m.group(0)!r}): {line.decode('utf-8', 'replace')[:300]}")
    return problems


def corpus_commands(src, scratch):
    """(label, argv, cwd) for every file of the fuzzers' corpora."""
    fuzz = os.path.join(src, "tests", "fuzz")
    small = ["--small", "--checks", "1", "--batch", "1"]
    out = []
    for kind in ("corpus", "regressions"):
        for path in sorted(glob.glob(os.path.join(fuzz, kind, "*", "*"))):
            corpus = os.path.basename(os.path.dirname(path))
            if corpus == "config":
                out.append((path, ["config", path], scratch))
            elif corpus == "safetensors":
                out.append((path, ["sample", path, "--prompt", "1", "--tokens", "1"], scratch))
            elif corpus in ("npy", "tokens"):
                out.append((path, ["gradcheck", "reverse.yaml", "--set", "data.task=tokens", "--set",
                                   f"data.path={path}", "--set", "model.context=auto"] + small, scratch))
            elif corpus == "text":
                out.append((path, ["gradcheck", "text.yaml", "--set", f"data.path={path}"] + small, scratch))
            elif corpus == "cli":
                with open(path, "rb") as f:
                    data = f.read()
                args = data.split(b"\0")
                if len(args) > 64 or any(b"bench" in a for a in args[:1]):
                    continue
                out.append((path, [a.decode("utf-8", "surrogateescape") for a in args], scratch))
    return out


def run(bin_path, label, argv, cwd):
    try:
        p = subprocess.run([os.fsencode(bin_path)] + [os.fsencode(a) for a in argv], cwd=cwd,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=HANG_S)
        code, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return label, None, b"", [f"did not end within {HANG_S} s (a hang: a valid tokens file of 4M ids takes "
                                  "17 s alone, 60-80 s on a loaded machine)"]
    # gradcheck's own verdict (a gradient beyond tolerance, on a vocabulary of 4M ids) is exit 1 with its table on
    # stdout and nothing on stderr: only the lines that are there are checked then
    verdict = argv[:1] == ["gradcheck"] and code == 1 and not err
    problems = message_problems(err, None if verdict else code)
    if code not in (0, 1, 2, 130):
        problems.append(f"exit code {code}")
    return label, code, err, problems


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--files":
        bad = 0
        for path in sys.argv[2:]:
            m = re.search(r"\.exit(\d+)\.txt$", path)  # support.sh keeps the exit code in the name
            with open(path, "rb") as f:
                for p in message_problems(f.read(), int(m.group(1)) if m else 1):
                    print(f"{path}: {p}")
                    bad += 1
        sys.exit(1 if bad else 0)
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("src")
    ap.add_argument("work")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    scratch = os.path.join(args.work, "messages")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    shutil.copy(os.path.join(args.src, "configs", "reverse.yaml"), scratch)
    with open(os.path.join(scratch, "text.yaml"), "w") as f:
        f.write("model:\n  context: 16\ndata:\n  task: text\n  path: t.txt\n")
    start = time.monotonic()
    commands = corpus_commands(args.src, scratch)
    failed, messages = 0, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for label, code, err, problems in pool.map(lambda c: run(args.bin, *c), commands):
            messages += err.count(b"tinyformer: error: ")
            if problems:
                failed += 1
                print(f"FAIL {os.path.relpath(label, args.src)} (exit {code}):")
                for p in problems:
                    print(f"    {p}")
    print(f"{len(commands)} corpus files, {messages} error messages, in {time.monotonic() - start:.0f} s; "
          f"{failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
