#!/usr/bin/env python3
"""Runs the code blocks of docs/interop.md's section "Moving weights to and from PyTorch" as they are written, so the
document and this test cannot drift apart:
  - the ```python block, from a directory laid out as the repository after scripts/quickstart.sh (tools/, and
    runs/reverse/ trained by `tinyformer train configs/reverse.yaml`, made by the setup test): its output must be
    `tinyformer sample --top-k 1`'s greedy continuation of the same prompt, and the right answer of the task;
  - the ```sh block (train tied, export to nanoGPT, import back, train from it, sample), with ./build/bin/tinyformer,
    build/python (the Python module), configs/ and tools/ linked into that directory and Debian's python3 first on PATH: every command must succeed
    and leave the files it names.

    check_interop_recipe.py --app TINYFORMER --logits-tool LOGITS_DUMP --work-dir DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

from common import PYTHON, SOURCE_DIR, check, run

SECTION = "## Moving weights to and from PyTorch"
PROMPT, ANSWER = "62597177|", "77179526"  # the prompt of the python block and the task's answer


def section_blocks():
    text = open(os.path.join(SOURCE_DIR, "docs", "interop.md"), encoding="utf-8").read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    body = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```(\w+)\n(.*?)```", body, flags=re.S)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", required=True)
    ap.add_argument("--logits-tool")
    ap.add_argument("--work-dir", required=True)
    a = ap.parse_args()
    a.app = os.path.abspath(a.app)
    a.logits_tool = a.logits_tool and os.path.abspath(a.logits_tool)
    root = os.path.join(os.path.abspath(a.work_dir), "readme")  # holds runs/reverse from the setup test
    if not os.path.exists(os.path.join(root, "runs", "reverse", "checkpoint.safetensors")):
        sys.exit(f"FAILED: {root}/runs/reverse was not trained (run the setup test first)")
    for sub in ("tools", "configs"):
        link = os.path.join(root, sub)
        if not os.path.islink(link):
            os.symlink(os.path.join(SOURCE_DIR, sub), link)
    os.makedirs(os.path.join(root, "build", "bin"), exist_ok=True)
    # the app and the Python module as the build tree has them: build/bin/tinyformer and build/python
    for link, target in ((os.path.join(root, "build", "bin", "tinyformer"), os.path.abspath(a.app)),
                         (os.path.join(root, "build", "python"),
                          os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.app))), "python"))):
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)

    blocks = section_blocks()
    python_blocks = [code for lang, code in blocks if lang == "python"]
    sh_blocks = [code for lang, code in blocks if lang == "sh"]
    ok = check(len(python_blocks) == 1 and len(sh_blocks) == 1,
               f"the section has one python and one sh block (found {[lang for lang, _ in blocks]})")
    if not ok:
        return 1

    # without the test's PYTHONPATH: the blocks find tinyformer's module at build/python as they say
    own_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    recipe = run([PYTHON, "-c", python_blocks[0]], cwd=root, env=own_env).stdout
    sample = run([a.app, "sample", "runs/reverse/checkpoint.safetensors", "--prompt", PROMPT, "--tokens",
                  str(len(ANSWER)), "--top-k", "1"], cwd=root).stdout
    ok &= check(PROMPT in python_blocks[0], f"the recipe continues {PROMPT!r}")
    ok &= check(recipe == sample, f"the recipe prints {recipe.strip()!r}; tinyformer sample --top-k 1 prints "
                                  f"{sample.strip()!r}")
    ok &= check(recipe.strip() == PROMPT + ANSWER, f"and that is the reversed source {PROMPT + ANSWER!r}")

    # the shell block: what it writes is removed first, so it runs as on a fresh checkout
    for made in ("runs/text_tied", "runs/text_again", "nanoGPT", "text.safetensors"):
        path = os.path.join(root, made)
        shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else (os.path.exists(path) and os.remove(path))
    env = dict(own_env, PATH=os.path.dirname(PYTHON) + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", sh_blocks[0]], cwd=root, env=env, capture_output=True,
                       text=True)
    ok &= check(p.returncode == 0, f"the sh block exits {p.returncode}" + (f"\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
                                                                           if p.returncode else ""))
    for made in ("runs/text_tied/checkpoint.safetensors", "nanoGPT/out-text/ckpt.pt",
                 "nanoGPT/data/simple_english/meta.pkl", "text.safetensors", "runs/text_again/checkpoint.safetensors"):
        ok &= check(os.path.exists(os.path.join(root, made)), f"the sh block wrote {made}")
    at = ("\n" + p.stdout).rfind("\nAttention ")
    ok &= check(at >= 0, f"its sample continues the prompt: {p.stdout[max(at, 0):][:80]!r}")
    print("docs/interop.md recipe: PASSED" if ok else "docs/interop.md recipe: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
