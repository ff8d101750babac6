"""OpenBLAS's core type from Python (tensor/blas_core.hpp): `import tinyformer` chooses the best core type this CPU
allows for the process's one OpenBLAS, and NumPy, which loaded and used that OpenBLAS first, runs it from then on;
OPENBLAS_CORETYPE set by the user is kept. Each case in a fresh interpreter (the choice is made once, at import)."""
import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import ctypes, json
    import numpy as np
    a = np.ones((64, 64))
    a @ a  # NumPy's BLAS, before tinyformer is imported
    openblas = ctypes.CDLL("libopenblas.so.0")
    openblas.openblas_get_corename.restype = ctypes.c_char_p
    before = openblas.openblas_get_corename().decode()
    import tinyformer
    choice = tinyformer._core.blas_core()
    after = openblas.openblas_get_corename().decode()
    a @ a
    print(json.dumps({"before": before, "after": after, **choice}))
""")


def run(coretype=None):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype is not None:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_after_numpy_gives_numpy_the_chosen_core_type():
    r = run()
    assert r["before"] == r["own"]  # NumPy's OpenBLAS had made its own choice
    assert r["after"] == r["running"]  # and runs tinyformer's from the import on
    if r["decided_by"] == "tinyformer":
        assert r["running"] != r["own"]
    else:
        assert r["running"] == r["own"]


def test_a_core_type_the_user_sets_is_kept():
    own = run()["own"]
    r = run(own)
    assert r["decided_by"] == "OPENBLAS_CORETYPE"
    assert r["running"] == r["after"] == own


THREADS = textwrap.dedent("""
    import ctypes, json
    import numpy as np
    import tinyformer as tf
    openblas = ctypes.CDLL("libopenblas.so.0")
    before = openblas.openblas_get_num_threads()
    tf.set_num_threads(2)
    print(json.dumps({"before": before, "after": openblas.openblas_get_num_threads(), "tf": tf.get_num_threads()}))
""")


def test_set_num_threads_leaves_numpys_openblas_on_one_thread():
    # tinyformer splits its products over its own threads and calls OpenBLAS on one; NumPy shares that OpenBLAS
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", THREADS], env=env, capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    assert r["before"] >= 1  # OpenBLAS's default, every core (up to its build's limit), for NumPy until then
    assert r["after"] == 1 and r["tf"] == 2
