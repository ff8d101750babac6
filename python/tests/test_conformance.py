"""Conformance with PyTorch: a table of expressions as PyTorch users write them, each run through torch and through
tinyformer with the same inputs, in float64 and in float32. The two must agree on the result's shape and dtype, on its
values and, where the result is a float tensor, on the gradient of every float input (backward from the same seed).

Tolerances: float64 rtol 1e-10, atol 1e-12; float32 rtol 1e-5, atol 1e-6 (both libraries round differently in float32:
other summation orders and other exp/log implementations). Integer and bool results must be equal.

Every name on the left of the table is torch's; `L` is the library (torch or tinyformer), `F` its functional module
(torch.nn.functional, or tinyformer itself). The whole file runs in a few seconds (CTest: "python: test_conformance").
"""
import numpy as np
import pytest
import torch

import tinyformer as tf

# name -> (shape or array maker, kind): "normal" values, "positive" ones, int64 ids, a bool mask
INPUTS = {
    "x": ((3, 4), "normal"),
    "y": ((3, 4), "normal"),
    "p": ((3, 4), "positive"),
    "v": ((4,), "normal"),
    "u": ((3,), "normal"),
    "w": ((4, 2), "normal"),
    "b3": ((2, 3, 4), "normal"),
    "z": ((1, 4, 2), "normal"),
    "z2": ((2, 4, 2), "normal"),
    "ids": (np.array([2, 0, 2, 1]), "int"),
    "m": (np.array([[1, 0, 0, 1], [0, 0, 1, 0], [1, 1, 0, 0]], bool), "mask"),
    "mrow": (np.array([0, 1, 1, 0], bool), "mask"),
    "gi": (np.array([[3, 0, 3], [1, 1, 2], [2, 0, 0]]), "int"),
    "gi0": (np.array([[2, 0, 1, 0], [1, 2, 0, 2]]), "int"),
    "gi3": (np.array([[[3, 0], [1, 1], [2, 0]], [[0, 0], [3, 2], [1, 3]]]), "int"),
}

CASES = [
    # ---- indexing: basic (integers, negative ones, slices, steps, Ellipsis, None), advanced (integer arrays, masks)
    "x[0]", "x[-1]", "x[1, 2]", "x[-1, -2]", "x[:, 1:3]", "x[..., -1]", "x[::2]", "x[:, ::3]", "x[1:, :-1]",
    "x[np.array([0, 2])]", "x[np.arange(3), np.array([1, 0, 3])]", "b3[np.arange(2), -1, np.array([3, 0])]",
    "x[np.array([2, 0]), 1:]", "x[np.int64(1)]",
    "x[-2:]", "x[:, -3:-1]", "x[None]", "x[:, None, :]",
    "x.repeat_interleave(2, dim=1)", "x.repeat_interleave(3)", "L.repeat_interleave(b3, 2, dim=0)", "L.log2(p)",
    "p.log10()", "x.nelement()", "L.equal(x, x.clone())", "L.equal(x, y)", "L.equal(x, x[:2])",
    "L.unique(ids, return_counts=True)", "L.unique(ids, return_inverse=True)", "L.bincount(ids)",
    "L.bincount(ids, minlength=5)", "L.histc(x, bins=5, min=-1, max=1)", "L.histc(x, bins=4)", "L.histc(x[0, 0], bins=3)",
    "L.histc(x * 0 + 2, bins=4)", "L.histc(L.arange(10.0) / 10, bins=10, min=0, max=1)",
    "L.bincount(ids, weights=v.detach())", "L.bincount(ids, weights=v.detach(), minlength=6)", "L.unique(gi0, return_counts=True)", "x.round()", "L.round(x * 3, decimals=1)", "L.round(x * 100, decimals=-1)", "L.floor(x)", "x.ceil()", "L.trunc(x * 2)", "x.sign()", "L.frac(x * 2)", "gi.floor()", "L.unique((x * 2).detach().round())", "(x * 2).round() * x",
    "L.sin(x) * y", "x.cos()", "L.tan(x * 0.5)", "L.log1p(p)", "(x * 1e-3).log1p()", "L.expm1(x)", "L.erf(x) * y",
    "L.unique(gi, return_inverse=True, return_counts=True)", "L.nonzero(gi3)", "(b3 > 0).nonzero()", "L.empty_like(x).shape",
    "L.empty(2, 3).shape",
    "x.scatter_add(1, L.tensor([[3, 0], [1, 1], [2, 0]]), y[:, :2])", "L.scatter_add(x, 0, L.tensor([[2, 0, 2, 1]]), p[:1])",
    "L.zeros(5, dtype=x.dtype).scatter_add(0, ids, v)", "x[..., None]", "x[0, ..., 1]", "x[0][1]", "b3[0, :, 1]",
    "b3[..., 1:3]", "b3[1, ::2, ::2]", "x[None, ..., None]", "x[[0, 2]]", "x[[2, 0, 2]]", "x[:, [1, 1, 0]]",
    "x[[0, 1], [2, 0]]", "x[ids[:3]]", "x[:, ids]", "x[m]", "x[x > 0.5]", "x[:, mrow]", "b3[:, [0, 2], 1:]",
    "b3[[1, 0], :, [3, 1]]", "b3[..., [0, 0]]", "b3[1, [0, 2]]", "x.T[0]",
    "L.stack([r * (i + 1) for i, r in enumerate(x)])", "sum(r.sum() for r in x)",
    # ---- arithmetic and elementwise
    "x ** 3", "p ** 0.5", "p ** -1.5", "x ** 2", "2 ** x", "p ** x", "x.pow(3)", "L.pow(x, 2)", "L.sqrt(p)",
    "p.sqrt()", "L.sigmoid(x)", "x.sigmoid()", "L.abs(x)", "x.abs()", "abs(x)", "-x", "x + y", "x - 2", "3 - x",
    "x * y", "x / p", "1 / p", "x * (x > 0)", "x * (x > 0).float()", "L.where(x > 0, x, y)", "L.where(x > 0, x, 0.0)",
    "x.masked_fill(x < 0, 0.0)", "x.masked_fill(mrow, -1e9)", "L.tril(x)", "x.triu(1)", "x.tril(-1)", "L.triu(b3, diagonal=-1)",
    "L.softmax(x.masked_fill(L.tril(L.ones(3, 4)) == 0, float('-inf')), -1)", "L.maximum(x, y)", "L.minimum(x, y)", "L.exp(x)",
    "x.exp()", "p.log()", "x.tanh()", "x.relu()", "L.relu(x)", "x.softmax(-1)", "x.softmax(dim=0)",
    "L.log_softmax(x, dim=1)", "x + v", "u[:, None] * x", "x.clone() * 2",
    # ---- comparisons (bool tensors; == is elementwise)
    "x > 0", "x >= y", "x < 0.5", "x <= y", "x == x[0]", "x != y", "(x > 0) & (y > 0)", "(x > 0) | (y < 0)",
    "~(x > 0)", "(x > 0).sum()", "(x > 0).float().mean()", "L.isnan(x)", "(x == x.max()).sum()", "(x > 0).any()", "(x > 0).all()",
    "(x > 0).any(dim=1)", "(x > -5).all(0)", "L.any(m, 1, keepdim=True)", "x.all()",
    # ---- reductions and shapes
    "x.max()", "x.min()", "x.max(dim=1).values", "x.max(1).indices", "x.max(0, keepdim=True).values",
    "x.min(-1).values", "L.max(x, y)", "x.argmax()", "x.argmax(dim=1)", "x.argmin(0)", "x.var()", "x.var(dim=1)",
    "x.var(1, unbiased=False)", "x.var(0, keepdim=True)", "x.std()", "x.std(dim=-1)", "x.sum(dim=(0, 1))",
    "b3.sum(dim=(0, 2), keepdim=True)", "b3.mean(dim=(1, 2))", "b3.mean((0,))", "x.sum()", "x.mean()", "x.sum(0)",
    "x.mean(-1, keepdim=True)", "L.sum(x, dim=1)", "x.unsqueeze(0)", "x.unsqueeze(-1)", "x.unsqueeze(1).squeeze(1)",
    "b3.flatten()", "b3.flatten(1)", "x.t()", "x.T", "v.t()", "x.reshape(-1)", "x.reshape((2, 6))", "b3.view(2, -1)",
    "b3.permute(2, 0, 1)", "b3.transpose(0, 2)", "x.split(2)", "x.split([1, 2])", "x.split(3, dim=1)",
    "x.chunk(2, dim=1)", "L.stack([x, y])", "L.stack([x, y], dim=1)", "L.cat([x, y], dim=1)", "x.unbind(1)",
    "x.expand(2, 3, 4)", "x[:, :1].expand(3, 4)", "L.broadcast_to(v, (3, 4))", "x.tolist()", "float(x[0, 0])",
    "int(ids[0])", "(x * 3).long()", "x.bool()", "x.shape", "x.size(1)", "x.dim()", "x.numel()", "len(b3)", "(x.sum() * 2).item()",
    # ---- products
    "v @ v", "x @ v", "v @ w", "x @ w", "b3 @ w", "b3 @ z", "x @ z2", "b3 @ v", "L.matmul(x, w)", "x.matmul(w)",
    # ---- constructors
    "L.zeros((3, 4))", "L.zeros(3, 4)", "L.ones([2, 3])", "L.full((2, 2), 7.0)", "L.full((2,), 3)", "L.arange(5)",
    "L.arange(1, 4)", "L.arange(0, 1, 0.25)", "L.zeros_like(x)", "L.ones_like(x)", "L.full_like(x, 2.0)",
    "L.tensor(3.0)", "L.tensor(3.0).shape", "L.tensor([[1, 2], [3, 4]])", "L.tensor([True, False])",
    # ---- gathers, ranks and bounds (as nanoGPT's generate and hand-written losses use them)
    "x.gather(1, gi)", "L.gather(x, 0, gi0)", "b3.gather(2, gi3)", "x.topk(2).values",
    "x.topk(2, dim=0)", "L.topk(x, 3, largest=False)", "x.topk(1, -1).indices", "x.flip(-1)", "L.flip(b3, (0, 2))",
    "x.flip([0])", "x.repeat(2, 1)", "v.repeat(2, 3)", "b3.repeat(1, 2, 1, 1)", "b3.mT", "x.mT @ x", "x.clamp(-0.5, 0.5)",
    "x.clamp(min=0)", "L.clamp(x, max=0.2)", "x.clip(-1, 1)", "(x * 3).long().clamp(-1, 1)", "p.rsqrt()", "L.rsqrt(p)",
    "L.isclose(x, y)", "L.isclose(x, x + 1e-9)", "x.isclose(y, rtol=10.0)", "L.allclose(x, x)", "L.allclose(x, y)",
    "x % 0.7", "x % p", "-x % p", "L.remainder(x, 1.5)", "ids % 2", "(x * 5).long() % 3", "7 % (ids + 1)",
    "ids // 2", "(x * 5).long() // -2",
    "L.einsum('ij,kj->ik', x, y)", "L.einsum('bij,jk->bik', b3, w)", "L.einsum('ij->j', x)", "L.einsum('ij->ji', x)",
    "L.einsum('i,i->', v, v)", "L.einsum('i,j->ij', u, v)", "L.einsum('bik,bjk->bij', b3, b3)", "L.einsum('ij,jk', x, w)",
    "L.einsum('bij,bkj,jl->bil', b3, b3, x.T)", "L.einsum('ij,ij->i', [x, y])",
    "L.einsum('...ij,...jk->...ik', b3, z)", "L.einsum('...ij,jk', b3, w)", "L.einsum('b...->...', b3)",
    "L.einsum('...j,...j->...', x, y)", "L.einsum('bi...,bj...->bij', b3, b3)",
    "L.from_numpy(np.arange(6.0).reshape(2, 3))", "L.from_numpy(np.ones(3, np.float32))", "L.from_numpy(np.arange(4))",
    "F.cross_entropy(x, L.tensor([1, 0, 3]))", "F.cross_entropy(x @ w, (ids[:3] > 1).long())", "F.embedding(ids, x) * 2",
    # ---- sorts, running sums, norms and the like (makemore's, minGPT's and ARENA's habits)
    "x.sort(dim=1).values", "L.sort(x, 0, descending=True)", "x.argsort(dim=-1)", "L.argsort(x, dim=0, descending=True)",
    "x.cumsum(1)", "L.cumsum(b3, dim=0)", "(x > 0).cumsum(0)", "ids.cumsum(0)", "L.logsumexp(x, 1)",
    "x.logsumexp(dim=(0, 1))", "L.logsumexp(b3, 2, keepdim=True)", "x.norm()", "L.norm(x, dim=1)",
    "b3.norm(dim=(1, 2), keepdim=True)", "x.norm(p='fro')", "x.norm(p=1, dim=-1)", "L.norm(x, p=float('inf'))",
    "x.norm(p=-float('inf'), dim=0)", "x.norm(p=3, dim=1, keepdim=True)", "p.norm(p=0.5)", "x.norm(p=0)",
    "L.linalg.norm(x, dim=-1)", "L.linalg.norm(x)", "L.linalg.vector_norm(x, ord=1, dim=0)",
    "L.linalg.vector_norm(b3, ord=float('inf'), dim=(1, 2), keepdim=True)", "L.linalg.norm(x, ord=3, dim=1)", "x.amax(1)", "L.amax(b3, dim=(0, 2))", "x.amin(dim=0, keepdim=True)",
    "x.amax()", "L.bmm(b3, b3.transpose(1, 2))", "L.outer(u, v)", "x.index_select(1, ids[:2])",
    "L.index_select(b3, 0, ids[1:2])", "(x > 0).nonzero()", "x.type_as(ids)", "ids.type_as(x)", "x.new_zeros(2, 3)",
    "x.new_ones((2,))", "x.new_full((2,), 3.0)", "x.new_tensor([1.0, 2.0])", "L.linspace(0, 1, 5)", "L.linspace(-2, 2, 4)", "L.linspace(3, 9, 1)", "L.linspace(0.1, 0.7, 7)",
    "L.nn.functional.pad(x, (1, 2))", "L.nn.functional.pad(b3, (1, 0, 0, 2), value=-1.0)",
    "L.nn.functional.one_hot(ids, 4)", "L.nn.functional.one_hot(ids)", "L.nn.functional.normalize(x, dim=1)",
    "L.nn.functional.normalize(b3, dim=-1)", "L.nn.functional.cross_entropy(x, L.tensor([1, 0, 3]), reduction='none')",
    "L.nn.CrossEntropyLoss()(x, L.tensor([1, 0, 3]))", "L.nn.MSELoss(reduction='sum')(x, y)",
    # ---- in place on an op's result: recorded, as torch records it
    "x.clone().masked_fill_(m, 0.0)", "x.clone().add_(y, alpha=2)", "x.clone().mul_(2).sub_(y)",
    "x.clone().clamp_(-0.5, 0.5)", "x.clone().zero_()", "x.clone().fill_(2.5)", "x.clone().copy_(y)",
    "x.clone().div_(p)", "x.clone().__iadd__(y)", "x.clone().__imul__(p)", "x.clone().__itruediv__(p)",
    "x.clone().__isub__(1.5)", "x.detach().clone().add_(1.0)", "ids.clone().add_(1)",
]

# Statements as PyTorch users write them (x[...] = v, +=, in-place updates under no_grad): `out` is compared as a
# CASES expression is, values and gradients.
STATEMENTS = [
    "y = x.clone(); y[0] = 0; out = y",
    "y = x.clone(); y[m] = -1.0; out = y * 2",
    "y = x * 1; y[:, 1:3] = 0.5; y[[0, 2], 0] = L.tensor([7.0, 8.0], dtype=x.dtype); out = y.exp()",
    "y = x.clone(); y += p; y *= 2; y -= x; out = y",
    "z = x.detach().clone(); z[z < 0] = 0; out = z + x",
    "with L.no_grad():\n    c = x.detach().clone(); c -= 0.5 * c; c[0, 0] = 3.0\nout = c * x",
    "logits = x.detach().clone()\nwith L.no_grad():\n    v, _ = L.topk(logits, 2)\n    logits[logits < v[:, [-1]]] = -float('inf')\nout = L.softmax(logits, dim=-1)",
    "y = x.clone(); z = y; y.mul_(3); out = z",
    "d = x.detach(); out = x * d + d.exp()",
    "e = L.zeros(3, 4, dtype=x.dtype); e.mul_(0.9).add_(x.data, alpha=0.1); out = e * y + (0.5 * p.data) * x",
    "d = y.detach(); d[0, 0] = 5.0; out = y * x",
    "h = L.tanh(x); out = h.detach() * h",
    "y = p.detach().clone(); y.log_(); y.sqrt_(); y.neg_(); y.abs_(); y.exp_(); out = y * x",
    "y = x.clone(); y.tanh_(); out = y * 2", "y = x * 1; y.relu_(); out = y.exp()", "y = x * 1; y.sigmoid_(); out = y",
    "y = p * 1; y.rsqrt_(); out = y",
    "y = x.detach().clone(); y.scatter_add_(1, L.tensor([[0, 0], [3, 1], [2, 2]]), p[:, 1:3]); out = y * x",
    "c = y.detach().clone(); c.add_(x, alpha=0.5); c.mul_(2); out = c", "c = L.zeros(3, 4, dtype=x.dtype); c.copy_(x); out = c * c",
]


def make_inputs(lib, dtype, seed=20261127):
    rng = np.random.default_rng(seed)
    out = {}
    for name, (spec, kind) in INPUTS.items():
        if kind == "normal":
            arr = rng.standard_normal(spec)
        elif kind == "positive":
            arr = rng.uniform(0.5, 2.0, spec)
        else:
            arr = spec
        grad = kind in ("normal", "positive")
        if grad:
            arr = arr.astype(dtype)
        if lib == "torch":
            out[name] = torch.tensor(arr, requires_grad=grad)
        else:
            out[name] = tf.tensor(arr, requires_grad=grad)
    return out


def run(expr, lib, dtype):
    inputs = make_inputs(lib, dtype)
    scope = dict(inputs, np=np)
    scope["L"] = torch if lib == "torch" else tf
    scope["F"] = torch.nn.functional if lib == "torch" else tf
    return eval(expr, scope), inputs  # noqa: S307 (the table above)


def tensors_of(result):
    """The tensors a result holds, in order: a tensor, a named tuple (values, indices) or a sequence of tensors."""
    if isinstance(result, (torch.Tensor, tf.Tensor)):
        return [result]
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], (torch.Tensor, tf.Tensor)):
        return list(result)
    return None


def dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def values(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("expr", CASES)
def test_expression_matches_torch(expr, dtype):
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (1e-5, 1e-6)
    theirs, torch_inputs = run(expr, "torch", dtype)
    ours, tf_inputs = run(expr, "tf", dtype)
    their_tensors, our_tensors = tensors_of(theirs), tensors_of(ours)
    if their_tensors is None:  # a Python value: a number, a list, a shape
        assert our_tensors is None, f"{expr}: torch gave {type(theirs).__name__}, tinyformer a tensor"
        assert type(ours) is type(theirs) or isinstance(theirs, torch.Size), f"{expr}: {type(ours)} vs {type(theirs)}"
        np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float), rtol=rtol, atol=atol)
        return
    assert our_tensors is not None and len(our_tensors) == len(their_tensors), expr
    for o, t in zip(our_tensors, their_tensors):
        assert tuple(o.shape) == tuple(t.shape), f"{expr}: shape {o.shape} vs torch's {tuple(t.shape)}"
        assert dtype_name(o) == dtype_name(t), f"{expr}: dtype {o.dtype} vs torch's {t.dtype}"
        np.testing.assert_allclose(values(o), values(t), rtol=rtol, atol=atol, err_msg=expr)
    # gradients: the same seed into every float result that requires a gradient, then each float input's gradient
    rng = np.random.default_rng(7)
    pairs = [(o, t) for o, t in zip(our_tensors, their_tensors) if t.requires_grad]
    if not pairs:
        return
    seeds = [rng.standard_normal(tuple(t.shape)).astype(dtype) for _, t in pairs]
    torch.autograd.backward([t for _, t in pairs], [torch.tensor(s) for s in seeds])
    total = None
    for (o, _), s in zip(pairs, seeds):
        term = (o * tf.tensor(s)).sum()
        total = term if total is None else total + term
    total.backward()
    for name, t_in in torch_inputs.items():
        if not t_in.requires_grad:
            continue
        o_grad = tf_inputs[name].grad
        if t_in.grad is None:
            assert o_grad is None or not np.any(o_grad), f"{expr}: {name} got a gradient in tinyformer only"
            continue
        assert o_grad is not None, f"{expr}: {name} got no gradient in tinyformer"
        np.testing.assert_allclose(o_grad, t_in.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"{expr}: d/d{name}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("code", STATEMENTS)
def test_statement_matches_torch(code, dtype):
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (1e-5, 1e-6)
    results = []
    for lib in ("torch", "tf"):
        inputs = make_inputs(lib, dtype)
        scope = dict(inputs, np=np, L=torch if lib == "torch" else tf)
        exec(code, scope)  # noqa: S102 (the table above)
        out = scope["out"]
        seed = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(dtype)
        if out.requires_grad:
            (out * (torch.tensor(seed) if lib == "torch" else tf.tensor(seed))).sum().backward()
        grads = {n: (t.grad.numpy() if lib == "torch" else t.grad) if t.grad is not None else None
                 for n, t in inputs.items() if t.requires_grad}
        results.append((values(out), dtype_name(out), grads))
    (theirs, their_dtype, their_grads), (ours, our_dtype, our_grads) = results
    assert our_dtype == their_dtype and ours.shape == theirs.shape, code
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=code)
    for name, g in their_grads.items():
        if g is None:
            assert our_grads[name] is None or not np.any(our_grads[name]), f"{code}: d/d{name} only in tinyformer"
        else:
            np.testing.assert_allclose(our_grads[name], g, rtol=rtol, atol=atol, err_msg=f"{code}: d/d{name}")


@pytest.mark.parametrize("code", ["x += 1", "x.mul_(2)", "x[0] = 0", "x.zero_()"])
def test_a_leaf_that_requires_grad_is_not_changed_in_place_while_recording(code):
    for lib in (torch, tf):
        inputs = make_inputs("torch" if lib is torch else "tf", np.float64)
        with pytest.raises(RuntimeError):
            exec(code, dict(inputs, L=lib))  # noqa: S102
    inputs = make_inputs("tf", np.float64)
    before = inputs["x"].numpy().copy()
    with tf.no_grad():  # an update by hand: in place, and every reference sees it
        exec(code, dict(inputs, L=tf))  # noqa: S102
    assert not np.array_equal(inputs["x"].numpy(), before) or code == "x.mul_(2)" and not before.any()


# An op reads c, then c changes in place, then backward: each reader against each way to change a value.
READERS = ["x * c", "c * x + x", "L.matmul(x, c.T)", "x / (c.abs() + 1)", "(x * c).sum(-1)", "L.where(m, x, c) * c",
           "L.tanh(c * x)", "c + x"]
CHANGES = ["c.mul_(2)", "c += 1", "c[0, 0] = 3.0", "c.zero_()", "c.copy_(y.detach())", "c.data.add_(1)",
           "c.detach().fill_(0)", "with L.no_grad():\n    c -= 0.5"]


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("reader", READERS)
def test_a_gradient_never_uses_values_changed_in_place_after_the_forward(reader, change):
    def forward(lib, dtype=np.float64):
        inputs = make_inputs("torch" if lib is torch else "tf", dtype)
        scope = dict(inputs, L=lib)
        scope["c"] = inputs["y"].detach().clone()
        out = eval(reader, scope)  # noqa: S307 (the tables above)
        return scope, inputs, out

    def seed(out):
        return np.random.default_rng(7).standard_normal(tuple(out.shape))

    _, reference_inputs, out = forward(tf)
    (out * tf.tensor(seed(out))).sum().backward()
    reference = reference_inputs["x"].grad
    scope, inputs, out = forward(tf)
    exec(change, scope)  # noqa: S102
    try:
        (out * tf.tensor(seed(out))).sum().backward()
    except RuntimeError as e:  # refused, and nothing reached the inputs
        assert "was changed in place after" in str(e)
        assert inputs["x"].grad is None
    else:  # or the gradient of the values the forward read, never of the changed ones
        np.testing.assert_allclose(inputs["x"].grad, reference, rtol=1e-12, err_msg=f"{reader}; {change}")


def test_the_table_holds_at_least_100_expressions():
    assert len(CASES) >= 100
    assert len(set(CASES)) == len(CASES)
