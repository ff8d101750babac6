"""torch.nn habits on tinyformer's modules, each against PyTorch: containers (Sequential, ModuleList, ModuleDict),
Embedding, the activation modules, print(m) as torch prints it, named_modules over the library's GPT tree,
@tf.no_grad() as a decorator, tf.nn.functional's values and gradients, and optimizer.param_groups driving the
library's AdamW through nanoGPT's schedule loop and torch's schedulers step for step. About 3 s."""
import math

import numpy as np
import pytest
import torch

import tinyformer as tf
import tinyformer.nn.functional as F
from tinyformer.optim.lr_scheduler import LambdaLR, StepLR, TrainerSchedule


def _copy_to_torch(tf_module, torch_module):
    """The tinyformer module's parameters into the torch module's, by name."""
    ours = dict(tf_module.named_parameters())
    with torch.no_grad():
        for name, p in torch_module.named_parameters():
            p.copy_(torch.from_numpy(np.array(ours[name].numpy())))


def test_modules_print_as_torch_prints_them():
    pairs = [
        (tf.nn.Linear(4, 8), torch.nn.Linear(4, 8)),
        (tf.nn.Linear(4, 8, bias=False), torch.nn.Linear(4, 8, bias=False)),
        (tf.nn.LayerNorm(64), torch.nn.LayerNorm(64)),
        (tf.nn.LayerNorm((16,)), torch.nn.LayerNorm((16,))),
        (tf.nn.Embedding(10, 4), torch.nn.Embedding(10, 4)),
        (tf.nn.ReLU(), torch.nn.ReLU()),
        (tf.nn.GELU(approximate="tanh"), torch.nn.GELU(approximate="tanh")),
        (tf.nn.Dropout(0.1), torch.nn.Dropout(0.1)),
        (tf.nn.Softmax(dim=-1), torch.nn.Softmax(dim=-1)),
        (tf.nn.Sequential(tf.nn.Linear(4, 8), tf.nn.ReLU(), tf.nn.Linear(8, 2)),
         torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))),
        (tf.nn.ModuleList([tf.nn.Linear(2, 2), tf.nn.Tanh()]),
         torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Tanh()])),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
    assert repr(tf.nn.RMSNorm(8)) == "RMSNorm((8,), eps=1e-05, elementwise_affine=True)"


def test_sequential_and_module_list_register_and_compute_as_torch(rng):
    net = tf.nn.Sequential(tf.nn.Linear(4, 8, seed=1, dtype=tf.float64), tf.nn.GELU(),
                           tf.nn.Linear(8, 3, seed=2, dtype=tf.float64))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(8, 3)).double()
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in ref.named_parameters()]
    _copy_to_torch(net, ref)
    x = rng.standard_normal((5, 4))
    ours = net(tf.tensor(x, requires_grad=True))
    theirs = ref(torch.from_numpy(x))
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    for (name, p), (_, q) in zip(net.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-10, err_msg=name)
    assert len(net) == 3 and isinstance(net[1], tf.nn.GELU) and len(net[:2]) == 2
    with pytest.raises(IndexError, match="index 3"):
        net[3]

    class Stack(tf.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = tf.nn.ModuleList([tf.nn.Linear(4, 4, seed=i) for i in range(3)])
            self.heads = tf.nn.ModuleDict({"a": tf.nn.Linear(4, 2), "b": tf.nn.Linear(4, 1)})

        def forward(self, x):
            for layer in self.layers:
                x = tf.relu(layer(x))
            return self.heads["a"](x)

    s = Stack()
    names = [n for n, _ in s.named_parameters()]
    assert names[:2] == ["layers.0.weight", "layers.0.bias"] and names[-2:] == ["heads.b.weight", "heads.b.bias"]
    assert [n for n, _ in s.named_modules()] == ["", "layers", "layers.0", "layers.1", "layers.2", "heads",
                                                 "heads.a", "heads.b"]
    assert s(tf.tensor(np.ones((2, 4), np.float32))).shape == (2, 2) and "a" in s.heads and len(s.layers) == 3


def test_named_modules_walks_the_librarys_gpt_tree():
    model = tf.nn.GPT({"vocab_size": 11, "context": 8, "d_model": 16, "n_head": 2, "n_layer": 2})
    modules = dict(model.named_modules())
    assert list(modules)[:6] == ["", "transformer", "transformer.wte", "transformer.wpe", "transformer.h",
                                 "transformer.h.0"]
    assert isinstance(modules["transformer.h.1.attn.c_attn"], tf.nn.Linear)
    assert isinstance(modules["transformer.ln_f"], tf.nn.LayerNorm) and isinstance(modules["lm_head"], tf.nn.Linear)
    assert modules["transformer.h.1"] is model.blocks[1] and model.blocks[1].attn is modules["transformer.h.1.attn"]
    # every parameter belongs to exactly one module, under its module's name
    owned = [f"{prefix}.{n}" if prefix else n for prefix, m in modules.items()
             for n, _ in m.named_parameters(recurse=False)]
    assert owned == [n for n, _ in model.named_parameters()]
    # a sub-module computes with the model's own weights
    x = tf.tensor(np.random.default_rng(1).standard_normal((1, 3, 16)))
    lin = modules["transformer.h.0.mlp.c_fc"]
    np.testing.assert_allclose(lin(x.float()).numpy(), F.linear(x.float(), lin.weight, lin.bias).numpy())
    assert "ModuleList" in repr(model) and "(c_attn): Linear(in_features=16, out_features=48, bias=True)" in repr(model)
    with pytest.raises(AttributeError, match="cannot be replaced"):
        model.blocks[0].attn = tf.nn.Linear(2, 2)


def test_no_grad_works_as_a_decorator_and_as_a_context():
    x = tf.tensor(np.ones(3), requires_grad=True)

    @tf.no_grad()
    def double(t):
        assert not tf.is_grad_enabled()
        return t * 2

    y = double(x)
    assert not y.requires_grad and tf.is_grad_enabled() and double.__name__ == "double"

    @tf.no_grad()
    def fails(t):
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fails(x)
    assert tf.is_grad_enabled()  # restored after the exception
    with tf.no_grad():
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_embedding_module_and_functional_match_torch(rng):
    emb = tf.nn.Embedding(7, 3, dtype=tf.float64)
    ref = torch.nn.Embedding(7, 3).double()
    _copy_to_torch(emb, ref)
    ids = np.array([[1, 2, 2], [6, 0, 2]])
    out = emb(ids)
    theirs = ref(torch.from_numpy(ids))
    np.testing.assert_array_equal(out.numpy(), theirs.detach().numpy())
    w = rng.standard_normal((out.shape)).copy()
    (out * tf.tensor(w)).sum().backward()
    (theirs * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(emb.weight.grad, ref.weight.grad.numpy(), rtol=1e-12)  # repeated id 2 adds up
    std = np.array(tf.nn.Embedding(1000, 16).weight.numpy()).std()
    assert 0.018 < std < 0.022  # the library's N(0, 0.02^2), documented against torch's N(0, 1)


def _both(fn_tf, fn_torch, *arrays):
    """Values and gradients of fn on float64 inputs, tinyformer against torch."""
    ours_in = [tf.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, theirs = fn_tf(*ours_in), fn_torch(*theirs_in)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = np.random.default_rng(3).standard_normal(theirs.shape)
    (ours * tf.tensor(weights)).sum().backward() if ours.ndim else ours.backward()
    (theirs * torch.tensor(weights)).sum().backward() if theirs.ndim else theirs.backward()
    for a, b in zip(ours_in, theirs_in):
        np.testing.assert_allclose(a.grad, b.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_functional_matches_torch_in_value_and_gradient(rng):
    TF = torch.nn.functional
    x = rng.standard_normal((2, 5, 6))
    w, b = rng.standard_normal((4, 6)), rng.standard_normal(4)
    _both(lambda a: F.gelu(a), lambda a: TF.gelu(a, approximate="tanh"), x)
    _both(F.relu, TF.relu, x)
    _both(F.silu, TF.silu, x)
    _both(lambda a: F.softmax(a, dim=1), lambda a: TF.softmax(a, dim=1), x)
    _both(lambda a: F.log_softmax(a, dim=-1), lambda a: TF.log_softmax(a, dim=-1), x)
    _both(F.linear, TF.linear, x, w, b)
    _both(lambda a, ww: F.linear(a, ww), lambda a, ww: TF.linear(a, ww), x, w)
    _both(lambda a: F.layer_norm(a, (6,)), lambda a: TF.layer_norm(a, (6,)), x)
    _both(lambda a, g, s: F.layer_norm(a, 6, g, s), lambda a, g, s: TF.layer_norm(a, (6,), g, s), x,
          rng.standard_normal(6), rng.standard_normal(6))
    _both(lambda a: F.rms_norm(a, 6), lambda a: a * torch.rsqrt((a * a).mean(-1, keepdim=True) + 1e-5), x)
    _both(lambda a, c: F.mse_loss(a, c), TF.mse_loss, x, rng.standard_normal(x.shape))
    q, k, v = (rng.standard_normal((2, 3, 5, 4)) for _ in range(3))
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))

    def sdpa_torch(q_, k_, v_):  # torch 1.13 has no F.scaled_dot_product_attention: its definition
        s = (q_ @ k_.transpose(-1, -2)) / math.sqrt(4)
        return torch.softmax(s.masked_fill(~causal, float("-inf")), -1) @ v_

    _both(lambda a, c, d: F.scaled_dot_product_attention(a, c, d, is_causal=True), sdpa_torch, q, k, v)


def test_functional_cross_entropy_takes_torchs_layouts_and_ignore_index(rng):
    TF = torch.nn.functional
    logits = rng.standard_normal((6, 5))
    target = np.array([0, 4, -100, 2, 2, 1])
    _both(lambda a: F.cross_entropy(a, target), lambda a: TF.cross_entropy(a, torch.from_numpy(target)), logits)
    _both(lambda a: F.cross_entropy(a, target, reduction="sum"),
          lambda a: TF.cross_entropy(a, torch.from_numpy(target), reduction="sum"), logits)
    spatial = rng.standard_normal((2, 5, 3))  # [N, C, d]: classes on axis 1, as torch
    t2 = np.array([[1, 0, 4], [3, 3, 7]])
    _both(lambda a: F.cross_entropy(a, t2, ignore_index=7),
          lambda a: TF.cross_entropy(a, torch.from_numpy(t2), ignore_index=7), spatial)
    _both(lambda a: F.cross_entropy(a, target, reduction="none"),
          lambda a: TF.cross_entropy(a, torch.from_numpy(target), reduction="none"), logits)
    _both(lambda a: F.cross_entropy(a, t2, ignore_index=7, reduction="none"),
          lambda a: TF.cross_entropy(a, torch.from_numpy(t2), ignore_index=7, reduction="none"), spatial)
    with pytest.raises(ValueError, match="reduction='max'"):
        F.cross_entropy(tf.tensor(logits), target, reduction="max")
    with pytest.raises(ValueError, match="integer class ids"):
        F.cross_entropy(tf.tensor(logits), target.astype(np.float64))
    with pytest.raises(ValueError, match="approximate='tanh'"):
        F.gelu(tf.tensor(logits), approximate="none")
    with pytest.raises(ValueError, match="generator"):
        F.dropout(tf.tensor(logits), 0.5)
    with pytest.raises(ValueError, match="eps=1e-06"):
        tf.nn.LayerNorm(8, eps=1e-6)
    with pytest.raises(TypeError, match="register_parameter"):
        tf.nn.Module().register_parameter("w", np.ones(3))


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_param_groups_drive_the_librarys_adamw_as_torchs_through_a_schedule(rng):
    ours = tf.nn.Sequential()
    ours.fc1, ours.fc2 = tf.nn.Linear(4, 8, seed=1), tf.nn.Linear(8, 3, seed=2)
    ours.forward = lambda x: ours.fc2(tf.relu(ours.fc1(x)))
    ref = _Net()
    _copy_to_torch(ours, ref)

    def groups(named):  # nanoGPT's configure_optimizers: matrices decay, biases do not
        named = list(named)
        return [{"params": [p for n, p in named if n.endswith("weight")], "weight_decay": 0.1},
                {"params": [p for n, p in named if n.endswith("bias")], "weight_decay": 0.0}]

    opt = tf.optim.AdamW(groups(ours.named_parameters()), lr=1e-2, betas=(0.9, 0.95))
    topt = torch.optim.AdamW(groups(ref.named_parameters()), lr=1e-2, betas=(0.9, 0.95))
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    assert [len(g["params"]) for g in opt.param_groups] == [2, 2]

    def get_lr(it):  # nanoGPT's warmup + cosine
        return 1e-2 * (it + 1) / 3 if it < 3 else 1e-3 + 0.5 * (1 + math.cos(math.pi * (it - 3) / 5)) * 9e-3

    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=16)
    for it in range(8):
        for group in opt.param_groups:
            group["lr"] = get_lr(it)
        for group in topt.param_groups:
            group["lr"] = get_lr(it)
        assert opt.lr == pytest.approx(get_lr(it))
        opt.zero_grad()
        F.cross_entropy(ours(tf.tensor(x)), y).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        topt.step()
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=2e-5, atol=2e-6, err_msg=name)
    with pytest.raises(ValueError, match="'betas'"):
        tf.optim.Adam([{"params": [ours.fc1.weight], "betas": (0.8, 0.9)}, {"params": [ours.fc1.bias]}])
    with pytest.raises(ValueError, match="only 'lr' can change"):
        opt.param_groups[0]["weight_decay"] = 0.5


def test_lr_schedulers_set_the_same_rates_as_torchs():
    model = tf.nn.Linear(2, 2)
    tmodel = torch.nn.Linear(2, 2)
    for ours_make, theirs_make in [(lambda o: LambdaLR(o, lambda s: 0.5 ** s),
                                    lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda s: 0.5 ** s)),
                                   (lambda o: StepLR(o, step_size=3, gamma=0.5),
                                    lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5))]:
        opt = tf.optim.SGD(model.parameters(), lr=0.1)
        topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
        ours, theirs = ours_make(opt), theirs_make(topt)
        for _ in range(7):
            assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
            assert opt.lr == pytest.approx(topt.param_groups[0]["lr"], rel=1e-12)
            opt.step(), topt.step(), ours.step(), theirs.step()
    opt = tf.optim.AdamW(model.parameters(), lr=1e-3)
    sched = TrainerSchedule(opt, "cosine", warmup_steps=2, decay_steps=6, min_lr=1e-4)
    seen = [sched.get_last_lr()[0]]
    for _ in range(7):
        sched.step()
        seen.append(opt.lr)
    assert seen[:3] == pytest.approx([1e-3 / 3, 2e-3 / 3, 1e-3]) and seen[-1] == pytest.approx(1e-4)


# ---- training written by hand, as makemore and micrograd write it, and torch's utilities


def test_a_hand_written_sgd_loop_trains_as_torchs(rng):
    ours, theirs = tf.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    _copy_to_torch(ours, theirs)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    for step in range(4):
        for model, lib in ((ours, tf), (theirs, torch)):
            loss = (model(lib.tensor(x)) ** 2).mean()
            for p in model.parameters():
                p.grad = None
            loss.backward()
            if step % 2 == 0:
                with lib.no_grad():  # p -= ...: in place, so the module's own parameter changes
                    for p in model.parameters():
                        p -= 0.1 * (lib.tensor(p.grad) if lib is tf else p.grad)
            else:
                for p in model.parameters():  # makemore's p.data += -lr * p.grad
                    p.data += -0.1 * (lib.tensor(p.grad) if lib is tf else p.grad)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].numpy(), p.detach().numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=name)
    assert np.abs(ours.weight.numpy() - tf.nn.Linear(4, 3).weight.numpy()).max() > 1e-3  # it moved


def test_clip_grad_norm_and_cosine_annealing_are_torchs(rng):
    ours, theirs = tf.nn.Linear(5, 4), torch.nn.Linear(5, 4)
    _copy_to_torch(ours, theirs)
    x = rng.standard_normal((6, 5)).astype(np.float32) * 10
    (ours(tf.tensor(x)) ** 2).sum().backward()
    (theirs(torch.tensor(x)) ** 2).sum().backward()
    total = tf.nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
    their_total = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
    np.testing.assert_allclose(float(total), float(their_total), rtol=1e-5)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad, p.grad.numpy(), rtol=1e-5, atol=1e-7)
    opt, topt = tf.optim.AdamW(ours.parameters(), lr=0.1), torch.optim.AdamW(theirs.parameters(), lr=0.1)
    sched = tf.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8, eta_min=0.01)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=8, eta_min=0.01)
    for _ in range(12):
        opt.step(), topt.step(), sched.step(), tsched.step()
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)


def test_buffers_are_kept_listed_and_saved_as_torchs():
    class Attention(tf.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = tf.nn.Linear(4, 4)
            self.register_buffer("bias", tf.tril(tf.ones(3, 3)).view(1, 1, 3, 3))
            self.register_buffer("scratch", tf.zeros(2), persistent=False)

    class TorchAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)
            self.register_buffer("bias", torch.tril(torch.ones(3, 3)).view(1, 1, 3, 3))
            self.register_buffer("scratch", torch.zeros(2), persistent=False)

    ours, theirs = Attention(), TorchAttention()
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()] == ["bias", "scratch"]
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "proj.weight", "proj.bias"]
    assert len(list(ours.parameters())) == 2 and ours.bias[:, :, :2, :2].shape == (1, 1, 2, 2)
    state = ours.state_dict()
    state["bias"] = np.zeros((1, 1, 3, 3), np.float32)
    ours.load_state_dict(state)
    assert ours.bias.sum().item() == 0
    with pytest.raises(ValueError, match="missing: bias"):
        ours.load_state_dict({k: v for k, v in state.items() if k != "bias"})
    with pytest.raises(TypeError, match="a buffer is a tensor"):
        ours.register_buffer("mask", np.ones(3))


def test_init_functions_draw_from_the_seeded_generator_in_place():
    lin = tf.nn.Linear(64, 32)
    weight = lin.weight
    tf.manual_seed(3)
    tf.nn.init.normal_(lin.weight, mean=0.0, std=0.02)
    tf.nn.init.zeros_(lin.bias)
    drawn = lin.weight.numpy().copy()
    assert np.array_equal(weight.numpy(), drawn) and weight.is_leaf and weight.requires_grad  # the same tensor
    assert abs(drawn.std() - 0.02) < 0.002 and lin.bias.numpy().sum() == 0
    tf.manual_seed(3)
    np.testing.assert_array_equal(tf.nn.init.normal_(tf.zeros(32, 64), std=0.02).numpy(), drawn)
    bound = math.sqrt(6.0 / (64 + 32))
    w = tf.nn.init.xavier_uniform_(tf.zeros(32, 64)).numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert tf.nn.init.calculate_gain("relu") == torch.nn.init.calculate_gain("relu")


def test_compile_gives_the_model_back_as_nanogpts_script_uses_it():
    model = tf.nn.Linear(2, 3)
    assert tf.compile(model) is model and tf.compile(model, mode="max-autotune") is model
    assert tf.compile()(len) is len  # the decorator form


def test_grad_mode_device_and_random_helpers_read_as_torchs():
    x = tf.randn(3, requires_grad=True)
    with tf.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad and tf.is_grad_enabled()
    with tf.inference_mode():
        assert not (x * 2).requires_grad
    assert x.device == "cpu" and x.device == tf.device("cpu") and str(x.device) == "cpu" and not tf.cuda.is_available()
    assert x.to("cpu") is not None and x.cpu().shape == (3,) and x.detach().to("cpu", tf.float64).dtype == tf.float64
    with pytest.raises(ValueError, match="device 'cuda' is not here"):
        x.to("cuda")
    with pytest.raises(ValueError, match="device 'mps' is not here"):
        x.to(tf.device("mps"))
    model = tf.nn.Linear(2, 2)
    assert model.to("cpu") is model and model.to(tf.device("cpu")) is model
    tf.manual_seed(5)
    first = tf.randperm(10).tolist()
    tf.manual_seed(5)
    assert tf.randperm(10).tolist() == first and sorted(first) == list(range(10)) and first != list(range(10))
    assert tf.get_default_dtype() == tf.float32


def test_a_checkpoint_saved_and_loaded_resumes_training_bit_for_bit(tmp_path, rng):
    x = tf.tensor(rng.standard_normal((8, 4)).astype(np.float32))

    def train(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            opt.step()

    def fresh():
        tf.manual_seed(11)
        model = tf.nn.Sequential(tf.nn.Linear(4, 8), tf.nn.GELU(), tf.nn.Linear(8, 2))
        return model, tf.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)

    straight, straight_opt = fresh()
    train(straight, straight_opt, 6)
    first, first_opt = fresh()
    train(first, first_opt, 3)
    path = tmp_path / "ckpt.pt"
    tf.save({"model": first.state_dict(), "optimizer": first_opt.state_dict(), "iter_num": 3}, path)
    checkpoint = tf.load(path, map_location="cpu")
    resumed, resumed_opt = fresh()
    resumed.load_state_dict(checkpoint["model"])
    resumed_opt.load_state_dict(checkpoint["optimizer"])
    assert checkpoint["iter_num"] == 3 and resumed_opt.step_count == 3
    train(resumed, resumed_opt, 3)
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)
    # a pickle that would run code is not built by default; a failed save leaves the old file whole
    before = path.read_bytes()
    with pytest.raises(Exception):
        tf.save({"f": lambda: 0}, path)
    assert path.read_bytes() == before and len(list(tmp_path.iterdir())) == 1
    import pickle
    path.write_bytes(pickle.dumps({"run": print}))
    with pytest.raises(pickle.UnpicklingError, match="builtins.print.*weights_only=False"):
        tf.load(path)
    assert tf.load(path, weights_only=False)["run"] is print
    # a damaged file is a ValueError naming it, whichever way its pickle breaks
    for damaged in (before[: len(before) // 2], b"\x80\xae", before[:2] + b"\xff" * 8):
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=f"{path}: not a whole file of tf.save's"):
            tf.load(path)
    with pytest.raises(ValueError, match="map_location 'cuda'"):
        tf.load(path, map_location="cuda")


def test_tied_weights_as_nanogpt_ties_them_train_as_torchs(rng):
    """nanoGPT's `self.transformer.wte.weight = self.lm_head.weight` between two library modules: one tensor, listed
    once, saved under both names, and three AdamW steps that end at torch's weights."""
    def build(lib):
        class Tiny(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.wte = lib.nn.Embedding(7, 4)
                self.lm_head = lib.nn.Linear(4, 7, bias=False)
                self.wte.weight = self.lm_head.weight

            def forward(self, ids):
                return self.lm_head(self.wte(ids))
        return Tiny()

    ours, theirs = build(tf), build(torch)
    weight = rng.standard_normal((7, 4)).astype(np.float32)
    ours.load_state_dict({"wte.weight": weight, "lm_head.weight": weight})
    with torch.no_grad():
        theirs.lm_head.weight.copy_(torch.tensor(weight))
    assert ours.wte.weight is ours.lm_head.weight and ours.lm_head.weight is ours.lm_head.weight
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()] == ["wte.weight"]
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["wte.weight", "lm_head.weight"]
    assert sum(p.numel() for p in ours.parameters()) == 28
    ids = np.array([[1, 5, 2, 6], [0, 3, 3, 4]])
    opt, topt = tf.optim.AdamW(ours.parameters(), lr=0.05), torch.optim.AdamW(theirs.parameters(), lr=0.05)
    for _ in range(3):
        for model, optimizer, lib in ((ours, opt, tf), (theirs, topt, torch)):
            optimizer.zero_grad()
            logits = model(lib.tensor(ids))
            lib.nn.functional.cross_entropy(logits.reshape(-1, 7), lib.tensor(np.roll(ids, -1).reshape(-1))).backward()
            optimizer.step()
    np.testing.assert_allclose(ours.wte.weight.numpy(), theirs.wte.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(ours.wte.weight.numpy() - weight).max() > 1e-2  # it moved
    # a value that cannot be this parameter is refused, with nothing changed
    for bad in (tf.randn(7, 4), tf.nn.Parameter(np.zeros((4, 7))), tf.nn.Parameter(np.zeros((7, 4)), dtype="float64")):
        with pytest.raises(ValueError):
            ours.lm_head.weight = bad
        assert ours.lm_head.weight is ours.wte.weight


def test_a_gradient_changed_in_place_is_the_gradient_as_torchs(rng):
    """p.grad is a tensor whose changes in place are the gradient's: scaling, clipping and zeroing by hand, then an
    optimizer that reads the gradient, as with torch; and p.grad = g sets it."""
    ours, theirs = tf.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    _copy_to_torch(ours, theirs)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    opt, topt = tf.optim.AdamW(ours.parameters(), lr=0.1), torch.optim.AdamW(theirs.parameters(), lr=0.1)
    for model, optimizer, lib in ((ours, opt, tf), (theirs, topt, torch)):
        (model(lib.tensor(x)) ** 2).mean().backward()
        model.weight.grad.mul_(0.5)
        model.weight.grad[0] = 0
        g = model.bias.grad
        g += 1
        model.bias.grad.clamp_(max=1.2)
        optimizer.step()
    np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), rtol=1e-6)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].detach().numpy(), p.detach().numpy(),
                                   rtol=1e-6, atol=1e-7, err_msg=name)
    ours.weight.grad.zero_()
    assert not ours.weight.grad.numpy().any()
    ours.bias.grad = tf.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ours.bias.grad, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="shape"):
        ours.bias.grad = tf.ones(4)
