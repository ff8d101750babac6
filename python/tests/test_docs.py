"""docs/python.md's python blocks run as written, in order, from the repository's root, and print what their
comments say. About 15 s (one 300-step reverse run)."""
import os
import re

SRC = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def test_the_python_reference_blocks_run_and_print_what_they_claim(capsys):
    text = open(os.path.join(SRC, "docs", "python.md"), encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 8
    namespace = {}
    cwd = os.getcwd()
    os.chdir(SRC)
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    import tinyformer as tf
    for claim in [tf.__version__, "(4, 8)", "ok", "['layers.0.weight', 'layers.0.bias', 'layers.1.weight']",
                  "LayerNorm((8,), eps=1e-05, elementwise_affine=True)",
                  "['', 'transformer', 'transformer.wte', 'transformer.wpe', 'transformer.h']", "0.001",
                  "31415926|62951413", "joined 11 [6, 2, 10]", "[0, 1, 2] sat the", "(1, 4, 11, 11)", "['0_pre', '1_pre', 'final_post']", "(2, 4, 64, 16) 16", "(2, 11)", "(64, 64) 16",
                  "300", "int64 bool Tensor", "() () (2, 3, 2)", "(3, 4) [0, 1, 2, 3, 4] -0.5",
                  "TypeError: numpy.arctan on a tinyformer tensor has no"]:
        assert claim in out, claim
    assert len(namespace["gpt"].sample([1, 2, 3], tokens=4, temperature=0)) == 7
