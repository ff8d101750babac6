"""Tensors as PyTorch users write them: dtypes and 0-d tensors, indexing errors, iteration, conversions to Python,
==, hashing, the random constructors' seed, torch's overloads of max, and the methods living in the bindings (not
patched on at import). The values and gradients of each expression are compared with torch in test_conformance.py."""
import ast
import os

import numpy as np
import pytest
import torch

import tinyformer as tf


def test_dtypes_follow_torch_and_integer_tensors_are_ids():
    assert tf.tensor(3.0).shape == () and tf.tensor(3.0).dtype == "float32"
    assert tf.tensor(np.float64(3)).dtype == "float64"
    assert tf.tensor(7).dtype == "int64" and tf.tensor([True]).dtype == "bool"
    assert tf.tensor([1, 2], dtype=tf.float64).dtype == "float64"
    assert tf.tensor([1.7, -1.7], dtype=tf.long).tolist() == [1, -1]  # toward zero, as torch
    ids = tf.tensor(np.array([[1, 2, 0]]))
    assert ids.dtype == "int64"
    logits = tf.tensor(np.random.default_rng(1).standard_normal((1, 3, 4)), requires_grad=True)
    ref = torch.nn.functional.cross_entropy(torch.tensor(logits.numpy()).reshape(3, 4), torch.tensor([1, 2, 0]))
    np.testing.assert_allclose(tf.cross_entropy(logits, ids).item(), ref.item(), rtol=1e-12)
    assert tf.embedding(ids, logits[0]).shape == (1, 3, 4)
    with pytest.raises(ValueError, match="token ids must be integers, got a float32 tensor"):
        tf.cross_entropy(logits, tf.tensor([[1.0, 2.0, 0.0]]))
    with pytest.raises(ValueError, match="only float tensors can require a gradient"):
        tf.tensor([1, 2], requires_grad=True)
    assert (tf.tensor(np.ones(2)) * tf.tensor([True, False]).float()).dtype == "float64"
    assert (tf.tensor([1, 2]) + 0.5).dtype == "float32" and (tf.tensor([1, 2]) * 2).dtype == "int64"
    assert (tf.tensor([1, 2]) / 2).dtype == "float32" and (tf.tensor([True]) + tf.tensor([True])).tolist() == [2]


def test_conversions_to_python_numbers_lists_and_numpy():
    x = tf.tensor(np.array([[1.5, -2.0]]), requires_grad=True)
    assert float(x[0, 0]) == 1.5 and int(x[0, 1]) == -2 and bool(x[0, 0]) is True
    assert x.tolist() == [[1.5, -2.0]] and tf.tensor(2.5).tolist() == 2.5
    assert (x > 0).tolist() == [[True, False]] and tf.arange(3).tolist() == [0, 1, 2]
    assert isinstance(tf.arange(3).tolist()[0], int) and isinstance(x.sum().item(), float)
    assert list(range(10))[tf.tensor(3)] == 3  # __index__ of an int64 tensor
    a = np.asarray(x, dtype=np.float32)
    assert a.dtype == np.float32 and a.flags.writeable and np.array_equal(a, [[1.5, -2.0]])
    assert np.asarray(tf.arange(3)).dtype == np.int64 and np.asarray(x > 0).dtype == bool
    for convert in (float, int, bool):
        with pytest.raises(ValueError, match="2 elements"):
            convert(x)
    with pytest.raises(TypeError, match="index"):
        list(range(3))[tf.tensor(1.0)]


def test_indexing_errors_name_what_is_wrong():
    x = tf.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    with pytest.raises(IndexError, match="out of range"):
        x[3]
    with pytest.raises(IndexError, match="out of range"):
        x[:, [0, 4]]
    with pytest.raises(IndexError, match="reads 3 axes"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="selects nothing"):
        x[2:1]
    with pytest.raises(ValueError, match="step 0"):
        x[::0]
    with pytest.raises(IndexError, match="int64 or bool, got float32"):
        x[tf.tensor([0.0])]
    with pytest.raises(IndexError, match="a bool"):
        x[True]
    with pytest.raises(RuntimeError, match="requires a gradient and ops are being recorded"):  # a leaf, as torch
        x[0] = 1.0
    with pytest.raises(IndexError, match="out of range"):
        x.detach()[3] = 1.0
    with pytest.raises(ValueError, match="does not broadcast"):
        x.detach()[0] = np.ones(3)
    with pytest.raises(ValueError, match="a float32 value does not go into this int64 tensor"):
        tf.arange(3)[0] = 0.5
    assert x[::-1, 0].tolist() == [8.0, 4.0, 0.0]  # negative steps, as NumPy (torch refuses them)


def test_iteration_len_and_equality_as_torch():
    x = tf.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    rows = list(x)
    assert len(rows) == 3 == len(x) and rows[2].tolist() == [4.0, 5.0]
    sum(r.sum() * (i + 1) for i, r in enumerate(x)).backward()
    np.testing.assert_array_equal(x.grad, [[1, 1], [2, 2], [3, 3]])
    with pytest.raises(TypeError, match="0-d"):
        iter(tf.tensor(1.0))
    assert (x == x).dtype == "bool" and (x == x).tolist() == [[True, True]] * 3
    assert x != None and not (x == "text")  # noqa: E711 (not a value: compared by identity, as torch)
    assert len({x, x, rows[0]}) == 2  # hashed by identity


def test_max_and_min_take_torchs_overloads():
    x = tf.tensor(np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]]))
    values, indices = x.max(dim=1)
    assert values.tolist() == [5.0, 6.0] and indices.tolist() == [1, 2] and indices.dtype == "int64"
    assert type(x.max(1)).__name__ == "max" and x.max(1).values.tolist() == [5.0, 6.0]
    assert x.max().tolist() == 6.0 and x.min().tolist() == 1.0
    assert tf.max(x, x * 2).tolist() == (x * 2).tolist() and x.min(0, keepdim=True).values.shape == (1, 3)
    assert x.argmax().tolist() == 5 and x.argmin(dim=1).tolist() == [0, 1]


def test_random_constructors_follow_manual_seed_and_generators():
    tf.manual_seed(5)
    a = tf.randn(2, 3)
    tf.manual_seed(5)
    b = tf.randn((2, 3))
    assert a.tolist() == b.tolist() and a.shape == (2, 3) and a.dtype == "float32"
    g = tf.Generator().manual_seed(9)
    c = tf.rand(4, generator=g, dtype=tf.float64)
    assert c.dtype == "float64" and all(0 <= v < 1 for v in c.tolist())
    assert tf.rand(4, generator=tf.Generator(9), dtype=tf.float64).tolist() == c.tolist()
    r = tf.randint(0, 10, (50,))
    assert r.dtype == "int64" and 0 <= min(r.tolist()) and max(r.tolist()) < 10
    assert tf.randn_like(a).shape == a.shape and tf.zeros((3, 4)).shape == (3, 4) == tf.ones([3, 4]).shape


def test_requires_grad_underscore_returns_the_same_tensor_and_refuses_op_results():
    x = tf.zeros(3)
    assert x.requires_grad_() is x and x.requires_grad
    with pytest.raises(ValueError, match="leaf"):
        (x * 2).requires_grad_(False)
    with pytest.raises(ValueError, match="only float tensors"):
        tf.arange(3).requires_grad_()


def test_integer_powers_and_bitwise_operators_are_refused_where_torch_differs():
    with pytest.raises(ValueError, match="negative integer powers"):
        tf.tensor([2, 3]) ** -1
    with pytest.raises(TypeError, match="bool tensors"):
        tf.tensor([1, 2]) & tf.tensor([1, 0])


def test_tensor_methods_live_in_the_bindings_not_patched_on_in_python():
    init = os.path.join(os.path.dirname(tf.__file__), "__init__.py")
    tree = ast.parse(open(init, encoding="utf-8").read())
    patched = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assign)
               for target in node.targets if isinstance(target, ast.Attribute)
               and isinstance(target.value, ast.Name) and target.value.id == "Tensor"]
    assert not patched, f"tinyformer/__init__.py assigns Tensor attributes at lines {patched}"
    for name in ("reshape", "sum", "max", "softmax", "__getitem__", "__pow__", "__array_ufunc__", "T"):
        assert name in tf.Tensor.__dict__, name
        member = tf.Tensor.__dict__[name]
        # a binding, or a binding behind _arguments.py's wrapper (one-line TypeErrors), which keeps it as __wrapped__
        binding = getattr(member, "__wrapped__", member)
        assert type(binding).__name__ in ("instancemethod", "property", "builtin_function_or_method"), name


def _hooked_program(lib, hooks_on):
    """The same program in torch and tinyformer: hooks that record, scale and replace gradients on a leaf, an op result
    used twice, and a result whose hook is removed; two backwards. Gives the leaves' .grad and what the hooks saw."""
    x = lib.tensor(np.array([1.5, -2.0, 0.5]), requires_grad=True)
    w = lib.tensor(np.array([0.3, 0.7, -1.1]), requires_grad=True)
    seen = []
    h = x * w
    y = (h * 3 + h.tanh()).sum()
    hooks_on(h, lambda g: seen.append(("h", g.numpy().copy())) or g * 0.5)
    gone = (x * 2).exp()
    handle = gone.register_hook(lambda g: seen.append(("gone", g.numpy().copy())))
    handle.remove()
    hooks_on(x, lambda g: seen.append(("x", g.numpy().copy())))
    hooks_on(w, lambda g: -g)
    y.backward(retain_graph=True)
    (y + gone.sum()).backward()
    return x.grad.numpy(), w.grad.numpy(), seen


def test_register_hook_sees_and_replaces_gradients_as_torch_does():
    ours = _hooked_program(tf, lambda t, fn: t.register_hook(fn))
    ref = _hooked_program(torch, lambda t, fn: t.register_hook(fn))
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-12)
    assert [name for name, _ in ours[2]] == [name for name, _ in ref[2]]
    for (_, a), (_, b) in zip(ours[2], ref[2]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
