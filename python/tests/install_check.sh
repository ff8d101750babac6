#!/usr/bin/env bash
# cmake --install puts the Python package under <prefix>/<TINYFORMER_PYTHON_INSTALL_DIR>, and Debian's python3
# imports it from there (for the default prefix /usr/local that directory is on python3's own path).
# Usage: install_check.sh BUILD_DIR WORK_DIR PYTHON INSTALL_DIR
set -euo pipefail
build="$1"; work="$2"; python="$3"; dir="$4"
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cd "$work"
PYTHONPATH="$work/prefix/$dir" "$python" -c "
import os, numpy as np, tinyformer as tf
assert tf.__file__.startswith('$work/prefix/'), tf.__file__
x = tf.tensor(np.ones((2, 2)), requires_grad=True)
(x * x).sum().backward()
assert (x.grad == 2).all()
print('installed module at', os.path.dirname(tf.__file__))
"
"$python" -c "import sys; p = '/usr/local/$dir'; assert p in sys.path, (p, sys.path)"
echo "PASS: the installed module imports; /usr/local/$dir is on $python's path"
