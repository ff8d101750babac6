"""Drawn programs of ops and in-place changes (Hypothesis): a gradient is never one of values changed in place.

Each program makes temporaries from a leaf x [3, 4], a leaf w [4, 4] and two constants, changes constants and
temporaries in place (x.mul_(k), t += k, t[0, 1] = k, t.tanh_(), ..., some under no_grad), and ends in one loss. It
runs in tinyformer as written and in torch rewritten without in-place changes (t = t.mul(k), ...: each op then reads
the values it was given). tinyformer must either refuse the backward with its RuntimeError, the leaves' gradients
untouched, or give torch's loss and gradients (float64, rtol 1e-10). A gradient of changed values, which the
version check exists to stop, fails it (seen failing with the check switched off: lib/tinyformer/autograd).
"""
import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyformer as tf

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)

# A new temporary from operands {a}, {b} of shape [3, 4] (and the leaf w).
OPS = ["{a} * {b}", "{a} + {b}", "{a} - {b}", "{a} / ({b}.abs() + 1)", "L.tanh({a})", "L.exp({a}.clamp(max=3))",
       "L.sigmoid({a})", "L.matmul({a}, w)", "{a}.relu() * {b}", "({a} * {b}).sum(-1, keepdim=True) * {a}"]
# A change of target {t} in place, and the same change written without one.
CHANGES = [("{t}.mul_({k})", "{t} = {t}.mul({k})"), ("{t}.add_({k})", "{t} = {t}.add({k})"),
           ("{t} += {k}", "{t} = {t} + {k}"), ("{t}[0, 1] = {k}", "{t} = {t}.masked_fill(M01, {k})"),
           ("{t}.clamp_(min=-1.0, max=1.0)", "{t} = {t}.clamp(min=-1.0, max=1.0)"),
           ("{t}.tanh_()", "{t} = L.tanh({t})"), ("{t}.zero_()", "{t} = {t} * 0")]

step = st.one_of(
    st.tuples(st.just("op"), st.integers(0, len(OPS) - 1), st.integers(0, 99), st.integers(0, 99)),
    st.tuples(st.just("change"), st.integers(0, len(CHANGES) - 1), st.integers(0, 99), st.booleans()))


def programs(steps):
    """(in place, rewritten): the program's two texts, the temporaries named t0, t1, ..."""
    names, temps = ["x", "c", "d"], []
    inplace, rewritten = [], []
    for kind, which, i, j in steps:
        if kind == "op":
            name = f"t{len(temps)}"
            line = f"{name} = " + OPS[which].format(a=names[i % len(names)], b=names[j % len(names)])
            inplace.append(line)
            rewritten.append(line)
            temps.append(name)
            names.append(name)
            continue
        targets = ["c", "d", *temps]  # constants and temporaries, not the leaves
        target, k = targets[i % len(targets)], [2.0, -0.5, 0.25][i % 3]
        change, plain = (form.format(t=target, k=k) for form in CHANGES[which])
        if j:  # under no_grad: on a temporary, a change the graph does not record
            change, plain = (f"with L.no_grad():\n    {c}" for c in (change, plain))
        inplace.append(change)
        rewritten.append(plain)
    total = " + ".join(f"{t}.sum()" for t in temps) or "0"
    end = f"out = {total} + (x * x).sum()"
    return "\n".join([*inplace, end]), "\n".join([*rewritten, end])


def run(lib, code):
    rng = np.random.default_rng(5)
    x, w, c, d = (rng.standard_normal(s) for s in [(3, 4), (4, 4), (3, 4), (3, 4)])
    mask = np.zeros((3, 4), bool)
    mask[0, 1] = True
    scope = {"L": lib, "x": lib.tensor(x, requires_grad=True), "w": lib.tensor(w, requires_grad=True),
             "c": lib.tensor(c), "d": lib.tensor(d), "M01": lib.tensor(mask)}
    leaves = scope["x"], scope["w"]
    exec(code, scope)  # noqa: S102 (the tables above)
    return scope["out"], leaves


def grads(leaves):
    return [None if p.grad is None else np.asarray(p.grad) for p in leaves]


@SETTINGS
@given(st.lists(step, min_size=1, max_size=8))
def test_a_gradient_is_refused_or_that_of_the_values_each_op_read(steps):
    inplace, rewritten = programs(steps)
    out, leaves = run(torch, rewritten)
    out.backward()
    expected, expected_grads = out.item(), grads(leaves)
    ours, our_leaves = run(tf, inplace)
    np.testing.assert_allclose(ours.item(), expected, rtol=1e-10, err_msg=inplace)
    try:
        ours.backward()
    except RuntimeError as e:
        assert "was changed in place after" in str(e), inplace
        assert grads(our_leaves) == [None, None], inplace
        return
    for got, want in zip(grads(our_leaves), expected_grads):
        if want is None:
            assert got is None or not got.any(), inplace
        else:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=inplace)


def test_programs_without_a_change_after_a_read_are_not_refused():
    """The check refuses only what it must: changes before any op reads the value, or changes of a temporary by
    rebinding in grad mode, run."""
    for code in ["c.mul_(2.0)\nt0 = x * c\nout = t0.sum()", "t0 = x * c\nt0 += 1\nt1 = t0.tanh()\nout = t1.sum()",
                 "t0 = L.tanh(x)\nt0.mul_(2.0)\nout = (t0 * c).sum()", "t0 = x * 1\nt0[0, 1] = 3.0\nout = t0.sum()"]:
        out, leaves = run(tf, code)
        out.backward()
        assert leaves[0].grad is not None, code
