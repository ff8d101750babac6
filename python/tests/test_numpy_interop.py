"""NumPy never drops a gradient silently. Generated calls of every NumPy ufunc (one and two operands, tensors next to
arrays, NumPy scalars and Python numbers), every arithmetic and comparison operator with NumPy values on either
side, and a list of NumPy functions: where a tensor that requires a gradient goes in, the result is a tinyformer
tensor or the call raises TypeError naming what to do instead; never an ndarray."""
import os

import numpy as np
import pytest

import tinyformer as tf

UFUNCS = sorted(name for name, f in vars(np).items() if isinstance(f, np.ufunc))


def grad_tensor():
    return tf.tensor(np.array([[0.5, 1.5, 2.0], [1.0, 0.25, 3.0]]), requires_grad=True)


def operands(t):
    a = np.array([[1.0, 2.0, 0.5], [2.0, 1.0, 4.0]])
    return [t, a, np.float64(2.0), np.float32(2.0), np.int64(2), 2.0, 3, a[0]]


def check_result(what, call):
    """The call returns a tensor, or raises one TypeError naming the NumPy name (or a ValueError on shapes); never an
    ndarray."""
    try:
        out = call()
    except TypeError as e:
        assert "numpy." in str(e) or "tensor" in str(e), f"{what}: an unclear TypeError: {e}"
        return "refused"
    except ValueError as e:  # operands the op takes but whose shapes or values it refuses (np.matmul of [2,3] and [2,3])
        assert "shape" in str(e) or "dimension" in str(e) or "must be" in str(e), f"{what}: {e}"
        return "invalid"
    results = out if isinstance(out, tuple) else (out,)
    for r in results:
        assert not isinstance(r, (np.ndarray, np.generic)), f"{what} returned a NumPy {type(r).__name__}"
        assert isinstance(r, tf.Tensor), f"{what} returned {type(r).__name__}"
    return "tensor"


def test_every_ufunc_on_a_tensor_that_requires_grad_gives_a_tensor_or_a_type_error():
    outcomes = {"tensor": 0, "refused": 0, "invalid": 0}
    for name in UFUNCS:
        ufunc = getattr(np, name)
        t = grad_tensor()
        calls = []
        if ufunc.nin == 1:
            calls.append((f"np.{name}(t)", lambda: ufunc(t)))
        elif ufunc.nin == 2:
            for other in operands(t):
                calls.append((f"np.{name}(t, {type(other).__name__})", lambda o=other: ufunc(t, o)))
                calls.append((f"np.{name}({type(other).__name__}, t)", lambda o=other: ufunc(o, t)))
        outs = tuple(np.empty((2, 3)) for _ in range(ufunc.nout))
        calls.append((f"np.{name}(t, out=...)", lambda: ufunc(*([t] * ufunc.nin), out=outs)))
        for what, call in calls:
            outcomes[check_result(what, call)] += 1
    assert outcomes["tensor"] > 100 and outcomes["refused"] > 50, outcomes  # both kinds were generated


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "<", "<=", ">", ">=", "==", "!="])
def test_operators_with_numpy_values_on_either_side_keep_the_graph(op):
    for other in operands(grad_tensor())[1:]:
        t = grad_tensor()
        for expr in (f"other {op} t", f"t {op} other"):
            out = eval(expr)  # noqa: S307
            assert isinstance(out, tf.Tensor), f"{expr} with {type(other).__name__} gave {type(out).__name__}"
            if op in "+-*/**":
                assert out.requires_grad and out.dtype == "float64", expr


def test_matmul_with_an_ndarray_keeps_the_graph():
    t = grad_tensor()
    out = np.ones((4, 2)) @ t
    assert isinstance(out, tf.Tensor) and out.shape == (4, 3) and out.requires_grad
    assert isinstance(t @ np.ones(3), tf.Tensor)


def test_the_ufuncs_with_ops_give_the_ops_values_and_gradients():
    t = grad_tensor()
    (np.sqrt(t) * np.float64(2) + np.exp(t) - t * np.ones(3)).sum().backward()
    x = t.numpy()
    np.testing.assert_allclose(t.grad, 1 / np.sqrt(x) + np.exp(x) - 1, rtol=1e-12)
    with pytest.raises(TypeError, match="numpy.arctan on a tinyformer tensor has no tinyformer op"):
        np.arctan(t)


FUNCTIONS = [
    ("np.sum(t)", True), ("np.sum(t, axis=1, keepdims=True)", True), ("np.mean(t, axis=(0, 1))", True),
    ("np.max(t)", True), ("np.max(t, axis=0)", True), ("np.min(t, 1)", True), ("np.amax(t)", True),
    ("np.argmax(t)", True), ("np.argmin(t, axis=1)", True), ("np.var(t)", True), ("np.std(t, ddof=1)", True),
    ("np.transpose(t)", True), ("np.transpose(t, (1, 0))", True), ("np.reshape(t, -1)", True),
    ("np.reshape(t, (3, 2))", True), ("np.squeeze(t[None])", True), ("np.expand_dims(t, 0)", True),
    ("np.concatenate([t, t])", True), ("np.concatenate([t, np.ones((1, 3))], axis=0)", True),
    ("np.stack([t, t], axis=1)", True), ("np.where(t > 1, t, 0.0)", True), ("np.dot(t, np.ones(3))", True),
    ("np.sort(t)", False), ("np.cumsum(t)", False), ("np.clip(t, 0, 1)", False), ("np.linalg.norm(t)", False),
    ("np.atleast_1d(t)", False), ("np.tile(t, 2)", False), ("np.round(t)", False), ("np.diff(t)", False),
    ("np.outer(t, t)", False), ("np.einsum('ij->j', t)", False), ("np.median(t)", False), ("np.flip(t)", False),
    ("np.roll(t, 1)", False), ("np.pad(t, 1)", False), ("np.tril(t)", False), ("np.sum(t, out=np.empty(()))", False),
    ("np.mean(t, dtype=np.float32)", False), ("np.prod(t)", False), ("np.average(t)", False), ("np.ravel(t)", False),
]


@pytest.mark.parametrize("expr,mapped", FUNCTIONS)
def test_numpy_functions_run_tinyformer_ops_or_refuse_when_a_gradient_would_be_lost(expr, mapped):
    t = grad_tensor()
    outcome = check_result(expr, lambda: eval(expr, {"np": np, "t": t}))  # noqa: S307
    assert outcome == ("tensor" if mapped else "refused"), expr
    if mapped:  # the same values as NumPy gives on the tensor's values
        ref = eval(expr, {"np": np, "t": t.detach().numpy()})  # noqa: S307
        np.testing.assert_allclose(np.asarray(eval(expr, {"np": np, "t": t})), ref, rtol=1e-12)  # noqa: S307


def test_numpy_functions_without_an_op_run_on_the_values_of_a_constant_tensor():
    t = tf.tensor(np.array([[3.0, 1.0], [2.0, 0.0]]))
    np.testing.assert_array_equal(np.sort(t), [[1.0, 3.0], [0.0, 2.0]])
    assert np.linalg.norm(t) == pytest.approx(np.sqrt(14))
    assert np.asarray(grad_tensor(), dtype=np.float32).dtype == np.float32  # no gradient, like t.detach().numpy()


def test_plotting_and_gradcheck_take_tensors():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    (line,) = plt.plot(tf.arange(4) * 1.5)
    np.testing.assert_array_equal(line.get_ydata(), [0, 1.5, 3, 4.5])
    plt.close("all")
    assert tf.gradcheck(lambda x: (x ** 3).sum(), [tf.tensor(np.array([0.5, -1.0]))])
