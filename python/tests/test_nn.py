"""Modules and optimizers from Python: the library's layers, a Python subclass of tf.nn.Module trained by the
library's optimizers step for step like the same model in PyTorch, state_dict round trips and refusals."""
import numpy as np
import pytest
import torch

import tinyformer as tf


class TwoLayer(tf.nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = tf.nn.Parameter(np.full(3, 1.5))
        self.fc1 = tf.nn.Linear(4, 16, seed=1)
        self.fc2 = tf.nn.Linear(16, 3, seed=2)
        self.not_a_parameter = tf.tensor(np.ones(2))  # no gradient: not registered

    def forward(self, x):
        return self.fc2(tf.gelu(self.fc1(x))) * self.gain


class TorchTwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = torch.nn.Parameter(torch.ones(3))
        self.fc1 = torch.nn.Linear(4, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x), approximate="tanh")) * self.gain


def _data(rng, n=64):
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return x, y


def test_linear_computes_x_w_transposed_plus_b(rng):
    lin = tf.nn.Linear(5, 3, seed=7)
    names = [n for n, _ in lin.named_parameters()]
    assert names == ["weight", "bias"]
    w, b = (np.array(p.numpy()) for p in lin.parameters())
    assert w.shape == (3, 5) and b.shape == (3,)
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(lin(tf.tensor(x)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(w, tf.nn.Linear(5, 3, seed=8).state_dict()["weight"])  # the seed drives the init
    np.testing.assert_array_equal(w, tf.nn.Linear(5, 3, seed=7).state_dict()["weight"])


def test_a_python_module_registers_its_attributes_in_pytorchs_order():
    m = TwoLayer()
    assert [n for n, _ in m.named_parameters()] == ["gain", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert m.num_parameters() == 3 + 16 * 4 + 16 + 3 * 16 + 3
    torch_names = [n for n, _ in TorchTwoLayer().named_parameters()]
    assert [n for n, _ in m.named_parameters()] == torch_names
    del m.fc2
    assert [n for n, _ in m.named_parameters()] == ["gain", "fc1.weight", "fc1.bias"]


@pytest.mark.parametrize("opt", ["AdamW", "SGD"])
def test_a_python_module_trained_by_the_librarys_optimizer_follows_pytorch_step_for_step(rng, opt):
    x, y = _data(rng)
    ours, theirs = TwoLayer(), TorchTwoLayer()
    theirs.load_state_dict({k: torch.tensor(v) for k, v in ours.state_dict().items()})
    if opt == "AdamW":
        o1 = tf.optim.AdamW(ours.named_parameters(), lr=1e-2, weight_decay=0.1)
        o2 = torch.optim.AdamW(theirs.parameters(), lr=1e-2, weight_decay=0.1)
    else:
        o1 = tf.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        o2 = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    losses, ref = [], []
    for step in range(30):
        batch = slice((step * 16) % 64, (step * 16) % 64 + 16)
        o1.zero_grad()
        loss = tf.cross_entropy(ours(tf.tensor(x[batch])), y[batch])
        loss.backward()
        o1.step()
        losses.append(loss.item())
        o2.zero_grad()
        l2 = torch.nn.functional.cross_entropy(theirs(torch.tensor(x[batch])), torch.tensor(y[batch]))
        l2.backward()
        o2.step()
        ref.append(l2.item())
    np.testing.assert_allclose(losses, ref, rtol=2e-4, atol=2e-5)
    assert losses[-1] < 0.7 * losses[0]  # it learned
    assert o1.step_count == 30
    for name, value in ours.state_dict().items():
        np.testing.assert_allclose(value, theirs.state_dict()[name].numpy(), rtol=1e-3, atol=1e-4, err_msg=name)


def test_state_dict_round_trips_and_a_mismatch_changes_nothing(rng):
    a, b = TwoLayer(), TwoLayer()
    for p in b.parameters():
        tf._core._copy_into(p, rng.standard_normal(p.shape).astype(np.float32))
    view = a.fc1.named_parameters().__next__()[1].numpy()  # a view of fc1.weight
    a.load_state_dict(b.state_dict())
    for (n1, p1), (n2, p2) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p1.numpy(), p2.numpy())
    np.testing.assert_array_equal(view, b.state_dict()["fc1.weight"])  # in place: the view follows
    before = a.state_dict()
    bad = b.state_dict()
    bad["fc2.weight"] = np.zeros((2, 2), np.float32)
    del bad["gain"]
    bad["extra"] = np.zeros(1)
    with pytest.raises(ValueError) as e:
        a.load_state_dict(bad)
    assert "missing: gain" in str(e.value) and "unexpected: extra" in str(e.value) and "fc2.weight" in str(e.value)
    for name, value in a.state_dict().items():
        np.testing.assert_array_equal(value, before[name])


def test_optimizers_refuse_float64_and_empty_parameter_lists():
    with pytest.raises(ValueError, match="float32"):
        tf.optim.SGD([tf.tensor(np.ones(2), requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="empty"):
        tf.optim.AdamW([], lr=0.1)
    with pytest.raises(ValueError):
        tf.optim.SGD([tf.nn.Parameter(np.ones(2))], lr=-1.0)


def test_layer_norm_module_matches_torch(rng):
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    ln = tf.nn.LayerNorm(8)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    ref = torch.nn.functional.layer_norm(torch.tensor(x), (8,))
    np.testing.assert_allclose(ln(tf.tensor(x)).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert [n for n, _ in tf.nn.LayerNorm(8, bias=False).named_parameters()] == ["weight"]


def test_causal_self_attention_module_matches_torchs_scaled_dot_product_attention(rng):
    B, T, C, H = 2, 6, 16, 4
    attn = tf.nn.CausalSelfAttention(C, H, seed=3)
    sd = attn.state_dict()
    assert list(sd) == ["c_attn.weight", "c_attn.bias", "c_proj.weight", "c_proj.bias"]
    x = rng.standard_normal((B, T, C)).astype(np.float32)
    qkv = torch.tensor(x) @ torch.tensor(sd["c_attn.weight"]).T + torch.tensor(sd["c_attn.bias"])
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=-1))
    att = ((q @ k.transpose(-2, -1)) / (C // H) ** 0.5).masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))
    att = att.softmax(-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C) @ torch.tensor(sd["c_proj.weight"]).T + torch.tensor(sd["c_proj.bias"])
    np.testing.assert_allclose(attn(tf.tensor(x)).numpy(), y.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(attn.attention_weights(tf.tensor(x)), att.numpy(), rtol=1e-4, atol=1e-6)


def test_gpt_from_a_config_dict_has_nanogpts_names_and_refuses_bad_keys():
    cfg = {"vocab_size": 11, "context": 8, "d_model": 16, "n_head": 2, "n_layer": 2}
    g = tf.nn.GPT(cfg, seed=1)
    names = [n for n, _ in g.named_parameters()]
    assert names[0] == "transformer.wte.weight" and "transformer.h.1.mlp.c_proj.bias" in names
    assert names[-1] == "lm_head.weight"
    assert g.config["d_model"] == 16 and g.config["mlp_ratio"] == 4
    ids = np.array([[1, 2, 3, 4]])
    assert g(ids).shape == (1, 4, 11)
    loss = g.loss(ids, np.array([[2, 3, 4, -1]]))
    loss.backward()
    assert all(p.grad is not None for p in g.parameters())
    np.testing.assert_array_equal(tf.nn.GPT(cfg, seed=1).state_dict()["lm_head.weight"], g.state_dict()["lm_head.weight"])
    for key, value, pattern in [("d_model", 15, "n_head"), ("n_head", 0, "n_head"), ("dropout", 1.5, "dropout"),
                                ("norm", "batchnorm", "norm"), ("unknown_key", 1, "unknown_key")]:
        with pytest.raises(ValueError, match=pattern):
            tf.nn.GPT({**cfg, key: value})
    with pytest.raises(ValueError, match="context"):
        g(np.zeros((1, 9), np.int64))


def _float64_modules():
    """(module, input shape) for each library module in float64."""
    return [
        (tf.nn.Linear(5, 3, seed=1, dtype=np.float64), (2, 4, 5)),
        (tf.nn.LayerNorm(6, dtype=tf.float64), (2, 3, 6)),
        (tf.nn.LayerNorm(6, norm="rmsnorm", dtype="float64"), (2, 3, 6)),
        (tf.nn.CausalSelfAttention(8, 2, seed=3, dtype=np.float64), (2, 5, 8)),
        (tf.nn.CausalSelfAttention(8, 2, seed=3, attention="composed", n_kv_head=1, dtype=np.float64), (2, 5, 8)),
    ]


def test_float64_modules_pass_gradcheck_for_their_input_and_every_parameter(rng):
    for m, shape in _float64_modules():
        assert m.dtype == "float64" and all(p.dtype == "float64" for p in m.parameters()), repr(m)
        x = rng.standard_normal(shape)
        assert tf.gradcheck(lambda v: m(v), [x]), repr(m)
        xt = tf.tensor(x)
        result = tf.gradcheck_params(lambda: m(xt), m.named_parameters())
        assert result and len(result.report().splitlines()) == len(list(m.parameters())), result.report()


def test_a_float64_gpt_passes_gradcheck_for_every_parameter_of_its_loss(rng):
    cfg = dict(vocab_size=7, context=5, d_model=8, n_head=2, n_layer=1)
    gpt = tf.nn.GPT(cfg, seed=2, dtype=tf.float64)
    ids, targets = rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))
    assert gpt.loss(ids, targets).dtype == "float64"
    assert tf.gradcheck_params(lambda: gpt.loss(ids, targets), gpt.named_parameters())
    # float64 draws the same initial weights as float32, before rounding
    w32 = tf.nn.GPT(cfg, seed=2).state_dict()["transformer.h.0.attn.c_attn.weight"]
    np.testing.assert_array_equal(w32, gpt.state_dict()["transformer.h.0.attn.c_attn.weight"].astype(np.float32))


def test_gradcheck_params_catches_a_parameter_read_without_its_gradient(rng):
    lin = tf.nn.Linear(4, 3, seed=1, dtype=np.float64)
    x = tf.tensor(rng.standard_normal((2, 4)))
    weight = dict(lin.named_parameters())["weight"]
    # the weight's value enters a second time as a constant: the perturbation moves the loss, backward() misses it
    leaky = lambda: lin(x).sum() + tf.tensor(np.array(weight.numpy())).sum()  # noqa: E731
    result = tf.gradcheck_params(leaky, lin.named_parameters(), raise_exception=False)
    assert not result and "weight" in result.report()
    with pytest.raises(RuntimeError, match="gradcheck failed"):
        tf.gradcheck_params(leaky, lin.named_parameters())


def test_modules_refuse_an_input_of_the_other_dtype_and_optimizers_float64(rng):
    with pytest.raises(ValueError, match="expected a float32 tensor"):
        tf.nn.Linear(3, 2)(tf.tensor(np.ones((1, 3)), dtype=tf.float64))
    with pytest.raises(ValueError, match="expected a float64 tensor"):
        tf.nn.Linear(3, 2, dtype=tf.float64)(tf.tensor(np.ones((1, 3), dtype=np.float32)))
    with pytest.raises(ValueError, match="dtype int64 is not supported"):
        tf.nn.Linear(3, 2, dtype=np.int64)
    with pytest.raises(ValueError, match="expected a float32 tensor"):
        tf.optim.AdamW(tf.nn.Linear(3, 2, dtype=tf.float64).parameters())


def test_a_module_used_before_its_init_ran_says_so():
    class Forgot(tf.nn.Module):
        def __init__(self):
            pass  # no super().__init__()

        def forward(self, x):
            return x

    m = Forgot()
    with pytest.raises(AttributeError, match=r"Forgot is used before it is built.*super\(\).__init__\(\)"):
        list(m.parameters())
    with pytest.raises(AttributeError, match="before it is built"):
        m.state_dict()
    unbuilt = tf.nn.Linear.__new__(tf.nn.Linear)
    with pytest.raises(AttributeError, match="Linear is used before it is built"):
        unbuilt(tf.tensor(np.ones((1, 3))))
    with pytest.raises(AttributeError, match="'TwoLayer' object has no attribute 'missing'"):
        TwoLayer().missing
