"""The README's "Python" block runs as written (from a directory that has the repository's configs)."""
import os
import re

SRC = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def test_the_readme_python_block_trains_loads_samples_and_plots(tmp_path, capsys):
    readme = open(os.path.join(SRC, "README.md")).read()
    section = readme.split("\n## Python\n", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    os.symlink(os.path.join(SRC, "configs"), tmp_path / "configs")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "31415926|62951413" in out  # learned in 300 steps, as the comment says
    assert "(1, 4, 13, 13)" in out
    assert (tmp_path / "attention.png").stat().st_size > 0
    assert (tmp_path / "runs" / "py_reverse" / "report.html").exists()
