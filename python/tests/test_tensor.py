"""Tensors and autodiff from Python: values against NumPy, gradients against PyTorch (float64) and finite
differences, grad mode, errors."""
import numpy as np
import pytest
import torch

import tinyformer as tf


def test_tensor_keeps_float64_and_makes_float32_from_other_floats_as_torch(rng):
    a = rng.standard_normal((2, 3))
    assert tf.tensor(a).dtype == "float64"
    assert tf.tensor(a.astype(np.float32)).dtype == "float32"
    assert tf.tensor([[1.5, 2], [3, 4]]).dtype == "float32"  # Python floats: torch's default dtype
    assert tf.tensor([[1, 2], [3, 4]]).dtype == "int64"
    assert tf.tensor(a, dtype=np.float32).dtype == "float32"
    assert tf.tensor(a).shape == (2, 3)
    np.testing.assert_array_equal(tf.tensor(a).numpy(), a)
    with pytest.raises(ValueError, match="complex128.* is not one of tinyformer's"):
        tf.tensor(a, dtype=np.complex128)


def test_numpy_is_a_read_only_view_that_shares_the_tensors_memory(rng):
    t = tf.tensor(rng.standard_normal((3, 4)))
    v1, v2 = t.numpy(), t.numpy()
    assert v1.ctypes.data == v2.ctypes.data  # the same buffer, no copy
    assert not v1.flags.writeable
    del t  # the view keeps the tensor's memory alive
    assert np.isfinite(v1).all()


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_operators_broadcast_like_numpy_on_generated_shapes(rng, op):
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op]
    agree = refused = 0
    for _ in range(60):
        nd_a, nd_b = rng.integers(0, 4, size=2)
        sa = tuple(int(d) for d in rng.choice([1, 2, 3], size=nd_a))
        sb = tuple(int(d) for d in rng.choice([1, 2, 3], size=nd_b))
        a, b = rng.standard_normal(sa) + 3, rng.standard_normal(sb) + 3
        ta, tb = tf.tensor(np.asarray(a)), tf.tensor(np.asarray(b))
        try:
            expected = f(a, b)
        except ValueError:
            with pytest.raises(ValueError, match="broadcast|shape"):
                eval(f"ta {op} tb")
            refused += 1
            continue
        np.testing.assert_allclose(eval(f"ta {op} tb").numpy(), expected, rtol=1e-12)
        agree += 1
    assert agree > 10 and refused > 3  # both kinds of case were generated


def test_operators_take_numbers_on_either_side():
    x = tf.tensor(np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose((2.0 - x).numpy(), [1, 0, -2])
    np.testing.assert_allclose((x / 2).numpy(), [0.5, 1, 2])
    np.testing.assert_allclose((1 / x).numpy(), [1, 0.5, 0.25])
    np.testing.assert_allclose((3 * x + 1).numpy(), [4, 7, 13])
    np.testing.assert_allclose((-x).numpy(), [-1, -2, -4])


def test_mixed_float_dtypes_promote_constants_and_refuse_to_drop_a_gradient():
    assert (tf.tensor(np.ones(2)) + tf.tensor(np.ones(2, np.float32))).dtype == "float64"  # as torch
    with pytest.raises(ValueError, match="float32 and float64, and the float32 one requires a gradient.*double"):
        tf.tensor(np.ones(2)) + tf.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(ValueError, match="not differentiable here"):
        tf.tensor(np.ones(2), requires_grad=True).float()
    # as int64 or bool a tensor that requires a gradient is a constant, as torch's x.long() and x.bool()
    as_long = tf.tensor([1.5, -2.5], requires_grad=True).long()
    assert as_long.dtype == "int64" and not as_long.requires_grad and as_long.tolist() == [1, -2]


def test_sum_and_mean_reduce_everything_or_one_dim(rng):
    a = rng.standard_normal((2, 3, 4))
    t = tf.tensor(a)
    np.testing.assert_allclose(t.sum().item(), a.sum())
    np.testing.assert_allclose(t.mean().numpy(), a.mean())
    np.testing.assert_allclose(t.sum(dim=1).numpy(), a.sum(1))
    np.testing.assert_allclose(t.mean(dim=-1, keepdim=True).numpy(), a.mean(-1, keepdims=True))
    with pytest.raises(IndexError, match="axis 3 is out of range"):
        t.sum(dim=3)


def _torch_gpt_like(x, w_qkv, ln_w, ln_b, targets, n_head, lib):
    """The same computation in either library: layer norm, qkv, causal attention, gelu, logits, cross-entropy."""
    if lib == "tf":
        h = tf.layer_norm(x, ln_w, ln_b)
        qkv = h @ w_qkv
        y = tf.causal_self_attention(qkv, n_head)
        y = tf.gelu(y)
        p = tf.softmax(y, dim=1)  # over time, not the last axis
        return tf.cross_entropy(y * p, targets)
    B, T, C = x.shape
    h = torch.nn.functional.layer_norm(x, (C,), ln_w, ln_b)
    q, k, v = (h @ w_qkv).split(C, dim=-1)
    D = C // n_head
    q, k, v = (t.view(B, T, n_head, D).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / D ** 0.5
    att = att.masked_fill(torch.ones(T, T).tril() == 0, float("-inf")).softmax(-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)
    y = torch.nn.functional.gelu(y, approximate="tanh")
    p = y.softmax(dim=1)
    return torch.nn.functional.cross_entropy((y * p).reshape(B * T, C), targets.reshape(-1))


def test_a_composed_loss_and_its_gradients_match_pytorch_in_float64(rng):
    B, T, C, H = 2, 5, 8, 2
    arrays = [rng.standard_normal((B, T, C)), rng.standard_normal((C, 3 * C)) * 0.5, 1 + 0.1 * rng.standard_normal(C),
              0.1 * rng.standard_normal(C)]
    targets = rng.integers(0, C, size=(B, T))
    ours = [tf.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss = _torch_gpt_like(*ours, targets, H, "tf")
    ref = _torch_gpt_like(*theirs, torch.tensor(targets), H, "torch")
    loss.backward()
    ref.backward()
    assert loss.dtype == "float64"
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-12)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_gradcheck_passes_on_the_ops_and_reports_each_input(rng):
    x = rng.standard_normal((2, 3, 6))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    result = tf.gradcheck(lambda x, w, b: tf.gelu(tf.layer_norm(x, w, b)).softmax(dim=1), [x, w, b],
                          names=["x", "w", "b"])
    assert result.ok and bool(result)
    report = result.report()
    assert all(name in report for name in ("x", "w", "b")), report
    assert tf.gradcheck(lambda a, b: (a @ b).mean(dim=0), [rng.standard_normal((3, 4)), rng.standard_normal((4, 2))])


def test_gradcheck_fails_on_a_function_whose_gradient_is_wrong(rng):
    # detach() hides one factor of x * x from backward: the analytic gradient is half the true one.
    wrong = lambda x: x.detach() * x  # noqa: E731
    result = tf.gradcheck(wrong, [rng.standard_normal(5) + 2], raise_exception=False)
    assert not result.ok
    assert "x0" in result.report()
    with pytest.raises(RuntimeError, match="gradcheck failed"):
        tf.gradcheck(wrong, [rng.standard_normal(5) + 2])


def test_no_grad_records_nothing_and_ends_with_the_block(rng):
    x = tf.tensor(rng.standard_normal(3), requires_grad=True)
    with tf.no_grad():
        assert not tf.is_grad_enabled()
        y = (x * x).sum()
    assert tf.is_grad_enabled()
    assert not y.requires_grad
    z = (x * x).sum()
    z.backward()
    np.testing.assert_allclose(x.grad, 2 * x.numpy())


def test_gradients_accumulate_until_zero_grad_and_a_released_graph_is_refused(rng):
    a = rng.standard_normal(4)
    x = tf.tensor(a, requires_grad=True)
    assert x.grad is None
    y = (x * 3.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, np.full(4, 6.0))
    with pytest.raises(RuntimeError, match="backward"):
        y.backward()
    x.zero_grad()
    assert x.grad is None


def test_backward_of_a_non_scalar_takes_a_gradient_of_its_shape(rng):
    x = tf.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    y = tf.exp(x)
    g = rng.standard_normal((2, 3))
    y.backward(g)
    np.testing.assert_allclose(x.grad, g * np.exp(x.numpy()))
    with pytest.raises(ValueError):
        tf.exp(x).backward()  # needs one element
    with pytest.raises(ValueError, match="shape"):
        tf.exp(x).backward(np.ones(3))


def test_shape_ops_match_numpy(rng):
    a = rng.standard_normal((2, 3, 4))
    t = tf.tensor(a)
    np.testing.assert_array_equal(t.reshape(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(t.view(-1).numpy(), a.reshape(-1))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.transpose(0, -1).numpy(), a.swapaxes(0, -1))
    parts = tf.split(t, [1, 3], dim=-1)
    np.testing.assert_array_equal(parts[1].numpy(), a[..., 1:])
    np.testing.assert_array_equal(tf.cat(parts, dim=-1).numpy(), a)
    with pytest.raises(ValueError):
        t.reshape(5, 5)


def test_embedding_and_cross_entropy_take_integer_arrays_and_refuse_others(rng):
    w = tf.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    ids = np.array([[0, 4, 4]])
    np.testing.assert_array_equal(tf.embedding(ids, w).numpy(), w.numpy()[ids])
    logits = tf.tensor(rng.standard_normal((3, 5)))
    ref = torch.nn.functional.cross_entropy(torch.tensor(logits.numpy()), torch.tensor([1, 2, 0]))
    np.testing.assert_allclose(tf.cross_entropy(logits, [1, 2, 0]).item(), ref.item(), rtol=1e-12)
    with pytest.raises(ValueError, match="integers"):
        tf.embedding(np.array([0.5]), w)
    with pytest.raises(ValueError):
        tf.embedding(np.array([7]), w)  # out of the vocabulary


@pytest.mark.parametrize("call, error, words", [
    (lambda: tf.bincount(tf.tensor([1, -1])), ValueError, "whole numbers >= 0, got -1"),
    (lambda: tf.bincount(tf.tensor([1.5])), TypeError, "must be int64, got float32"),
    (lambda: tf.histc(tf.tensor([1.0]), bins=0), ValueError, "bins must be >= 1"),
    (lambda: tf.histc(tf.tensor([1.0]), bins=2, min=3, max=1), ValueError, "min 3 and max 1 must be finite with min <= max"),
    (lambda: tf.histc(tf.tensor([1.0, float("nan")])), ValueError, "range [nan, nan] is not finite; give min and max"),
    (lambda: tf.unique(tf.tensor([1, 2]), dim=0), ValueError, "dim is not supported"),
    (lambda: tf.tensor([1.0]).repeat_interleave(-1), ValueError, "repeats must be >= 0"),
    (lambda: tf.tensor([1.0]).norm(p="nuc"), ValueError, "p='nuc' is not here"),
    (lambda: tf.linalg.norm(tf.ones(2, 2), ord=2), ValueError, "matrix norm ord=2"),
    (lambda: tf.einsum("a..b", tf.ones(2, 2)), ValueError, "'.' outside '...'"),
    (lambda: setattr(tf.nn.Linear(2, 3), "weight", None), TypeError, "Linear.weight: a library module's parameter"),
])
def test_the_counting_and_norm_functions_refuse_in_one_line_naming_the_argument(call, error, words):
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_gradient_hook_is_refused_where_no_gradient_comes_and_when_it_answers_wrongly():
    with pytest.raises(RuntimeError, match="requires no grad"):
        tf.tensor([1.0, 2.0]).register_hook(lambda g: g)
    a = tf.tensor(np.array([1.0, 2.0]), requires_grad=True)
    (a * 2).sum().backward()
    before = a.grad.numpy().copy()
    for answer, message in [(lambda g: "no", "expected numbers"), (lambda g: np.ones(3), "of shape \\[3\\]")]:
        handle = a.register_hook(answer)
        with pytest.raises(ValueError, match=r"register_hook's hook must return a gradient of shape \[2\], or None: .*"
                           + message):
            (a * a).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), before)  # nothing was added
        handle.remove()
    with a.register_hook(lambda g: g * 10):  # a handle as a context: removed at the end
        (a * 1).sum().backward()
    (a * 1).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), before + 10 + 1)
