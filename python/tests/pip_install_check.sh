#!/usr/bin/env bash
# `pip install --no-build-isolation --no-index .` from the repository's root puts the package into a fresh venv made
# with --system-site-packages (Debian's setuptools, wheel, numpy, yaml): the module, its stub and py.typed land in
# the venv's site-packages, it imports from there with the project's version, and an op and a backward work. The
# CMake build is BUILD_DIR, configured already (setup.py then builds the target tinyformer_python, a no-op after the
# test build, and copies it); without BUILD_DIR, setup.py configures and builds its own (minutes: docs/python.md).
# Usage: pip_install_check.sh SOURCE_DIR WORK_DIR PYTHON [BUILD_DIR]
set -euo pipefail
src="$1"; work="$2"; python="$3"; build="${4:-}"
rm -rf "$work"; mkdir -p "$work"
start=$SECONDS
"$python" -m venv --system-site-packages "$work/venv"
cd "$src"
if ! TINYFORMER_BUILD_DIR="$build" "$work/venv/bin/pip" install --no-build-isolation --no-index . > "$work/pip.log" 2>&1; then
  tail -n 30 "$work/pip.log" >&2
  echo "FAIL: pip install did not succeed (the end of its log above)" >&2
  exit 1
fi
cd "$work"
version=$(sed -n 's/^project(tinyformer VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
"$work/venv/bin/python" - "$work" "$version" <<'PY'
import os, sys
import numpy as np
import tinyformer as tf

work, version = sys.argv[1], sys.argv[2]
here = os.path.dirname(tf.__file__)
assert here.startswith(os.path.join(work, "venv")), here
assert tf.__version__ == version, (tf.__version__, version)
for name in ("_core.pyi", "py.typed", "lens.py", "views.py", "functional.py"):
    assert os.path.exists(os.path.join(here, name)), name
x = tf.tensor(np.ones((2, 2)), requires_grad=True)
(x * x).sum().backward()
assert (x.grad == 2).all()
import tinyformer.nn.functional as F
assert F.relu(tf.tensor(np.array([-1.0, 2.0]))).numpy().tolist() == [0.0, 2.0]
print("installed", tf.__version__, "at", here)
PY
shown=$("$work/venv/bin/pip" show tinyformer)
grep -q "^Version: $version\$" <<< "$shown" || { echo "FAIL: pip show tinyformer: $shown" >&2; exit 1; }
echo "PASS: pip install into a fresh venv, $((SECONDS - start)) s"
