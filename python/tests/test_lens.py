"""TransformerLens' names on tinyformer's GPT (tinyformer.lens), checked against the model itself: each weight in
TransformerLens' shape recomputes its hook's activation from the cached input (q, k, v, scores, attn_out, mlp_out,
logits), the cache's stacks add up to the residual stream, gradients reach the parameters through W_Q, and a loaded
checkpoint encodes prompts as the CLI does (a SentencePiece vocabulary: <s> first). Float64 models, so the
comparisons are tight. About 10 s."""
import json
import os
import subprocess

import numpy as np
import pytest

import tinyformer as tf
from tinyformer.lens import get_act_name

SRC = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
APP = os.environ.get("TINYFORMER_APP")

BASE = {"vocab_size": 13, "context": 12, "d_model": 24, "n_head": 4, "n_layer": 2}
VARIANTS = {
    "gpt2": {},
    "llama": {"norm": "rmsnorm", "mlp": "swiglu", "position": "rope", "bias": False, "n_kv_head": 2},
    "gqa_learned": {"n_kv_head": 1, "attention": "composed"},
}


def _model(variant, seed=5):
    return tf.nn.GPT({**BASE, **VARIANTS[variant]}, seed=seed, dtype=tf.float64)


def _ids(rng, batch=2, T=9):
    return rng.integers(0, BASE["vocab_size"], size=(batch, T))


def _np(t):
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _norm(block_norm, x):
    return _np(block_norm(tf.tensor(x, dtype=tf.float64)))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_weights_have_transformerlens_shapes_and_cfg_names(variant):
    m = _model(variant)
    c = m.cfg
    L, H, C, D, V, T = 2, 4, 24, 6, 13, 12
    assert (c.n_layers, c.n_heads, c.d_model, c.d_head, c.d_vocab, c.n_ctx) == (L, H, C, D, V, T)
    d_mlp = c.d_mlp
    shapes = {"W_E": (V, C), "W_U": (C, V), "b_U": (V,), "W_Q": (L, H, C, D), "W_K": (L, H, C, D),
              "W_V": (L, H, C, D), "W_O": (L, H, D, C), "b_Q": (L, H, D), "b_K": (L, H, D), "b_V": (L, H, D),
              "b_O": (L, C), "W_in": (L, C, d_mlp), "W_out": (L, d_mlp, C), "b_in": (L, d_mlp), "b_out": (L, C)}
    for name, shape in shapes.items():
        assert getattr(m, name).shape == shape, name
    assert len(m.blocks) == L and m.blocks[0].attn.W_Q.shape == (H, C, D) and m.blocks[1].mlp.W_out.shape == (d_mlp, C)
    if variant == "llama":
        assert (c.normalization_type, c.positional_embedding_type, c.act_fn, c.gated_mlp) == ("RMS", "rotary", "silu",
                                                                                               True)
        assert c.n_key_value_heads == 2 and m.W_gate.shape == (L, C, d_mlp)
        with pytest.raises(AttributeError, match="rope"):
            m.W_pos
    else:
        assert (c.normalization_type, c.positional_embedding_type, c.act_fn) == ("LN", "standard", "gelu_new")
        assert m.W_pos.shape == (T, C) and d_mlp == 4 * C


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_weight_recomputes_its_hook_from_the_cached_input(variant, rng):
    m = _model(variant)
    ids = _ids(rng)
    logits, cache = m.run_with_cache(ids)
    H, D = m.cfg.n_heads, m.cfg.d_head
    W_Q, W_K, W_V, W_O = (_np(getattr(m, n)) for n in ("W_Q", "W_K", "W_V", "W_O"))
    b_Q, b_K, b_V, b_O = (_np(getattr(m, n)) for n in ("b_Q", "b_K", "b_V", "b_O"))
    W_in, W_out, b_in, b_out = (_np(getattr(m, n)) for n in ("W_in", "W_out", "b_in", "b_out"))
    group = H // (m.cfg.n_key_value_heads or H)
    for l, block in enumerate(m.blocks):
        x = _norm(block.ln1, cache["resid_pre", l])
        np.testing.assert_allclose(x, cache["normalized", l, "ln1"], rtol=1e-10, atol=1e-12)
        stream = cache["resid_pre", l]
        centred = stream - stream.mean(-1, keepdim=True) if m.cfg.normalization_type == "LN" else stream
        np.testing.assert_allclose(np.sqrt((centred ** 2).mean(-1, keepdim=True) + 1e-5), cache["scale", l, "ln1"],
                                   rtol=1e-12)
        q = np.einsum("btc,hcd->bthd", x, W_Q[l]) + b_Q[l]
        k = np.einsum("btc,hcd->bthd", x, W_K[l]) + b_K[l]
        v = np.einsum("btc,hcd->bthd", x, W_V[l]) + b_V[l]
        np.testing.assert_allclose(q, cache["q", l], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(k[:, :, ::group], cache["k", l], rtol=1e-10, atol=1e-12)  # Hkv heads cached
        np.testing.assert_allclose(v[:, :, ::group], cache["v", l], rtol=1e-10, atol=1e-12)
        if m.cfg.positional_embedding_type == "standard":  # rope turns q and k after their hooks
            scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D)
            lower = np.tril(np.ones(scores.shape[-2:], bool))
            np.testing.assert_allclose(scores[..., lower], cache["attn_scores", l][..., lower], rtol=1e-10, atol=1e-12)
        attn_out = np.einsum("bthd,hdc->btc", cache["z", l], W_O[l]) + b_O[l]
        np.testing.assert_allclose(attn_out, cache["attn_out", l], rtol=1e-10, atol=1e-12)
        x2 = _norm(block.ln2, cache["resid_mid", l])
        if m.cfg.gated_mlp:
            gate = x2 @ _np(m.W_gate)[l]
            post = gate / (1 + np.exp(-gate)) * (x2 @ W_in[l] + b_in[l])
            np.testing.assert_allclose(gate, cache["pre", l], rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(x2 @ W_in[l] + b_in[l], cache["pre_linear", l], rtol=1e-10, atol=1e-12)
        else:
            post = _gelu(x2 @ W_in[l] + b_in[l])
            np.testing.assert_allclose(x2 @ W_in[l] + b_in[l], cache["pre", l], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(post, cache["post", l], rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(post @ W_out[l] + b_out[l], cache["mlp_out", l], rtol=1e-9, atol=1e-11)
    final = _norm(m.ln_final, cache["resid_post", -1])
    np.testing.assert_allclose(final @ _np(m.W_U) + _np(m.b_U), logits, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(final, cache["ln_final.hook_normalized"], rtol=1e-12, atol=1e-12)
    # the cache's forward composes the MLP (its pre and post hooks); the plain one runs the fused linear+GELU
    np.testing.assert_allclose(logits, _np(m(ids)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", ["gpt2", "llama"])
def test_cache_stacks_add_up_to_the_residual_stream_and_the_logit_lens_gives_the_logits(variant, rng):
    m = _model(variant)
    logits, cache = m.run_with_cache(_ids(rng))
    final = cache["resid_post", -1]
    parts, labels = cache.decompose_resid(return_labels=True)
    expected_labels = (["embed"] + (["pos_embed"] if variant == "gpt2" else [])
                       + [f"{l}_{k}" for l in range(2) for k in ("attn_out", "mlp_out")])
    assert labels == expected_labels
    np.testing.assert_allclose(parts.sum(0), final, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cache.decompose_resid(layer=1).sum(0), cache["resid_pre", 1], rtol=1e-10, atol=1e-12)
    attn_parts, attn_labels = cache.decompose_resid(mode="attn", incl_embeds=False, return_labels=True)
    assert attn_labels == ["0_attn_out", "1_attn_out"] and attn_parts.shape == (2, *final.shape)

    heads, head_labels = cache.stack_head_results(incl_remainder=True, return_labels=True)
    assert head_labels == [f"L{l}H{h}" for l in range(2) for h in range(4)] + ["remainder"]
    np.testing.assert_allclose(heads.sum(0), final, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(heads[:4].sum(0) + _np(m.b_O)[0], cache["attn_out", 0], rtol=1e-10, atol=1e-12)

    # apply_ln: the components' shares of the final norm add up to its output less its bias
    ln_out = _norm(m.ln_final, final)
    bias = dict(m.ln_final.named_parameters()).get("bias")
    shared = cache.decompose_resid(apply_ln=True).sum(0) + (0 if bias is None else _np(bias))
    np.testing.assert_allclose(shared, ln_out, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(cache.stack_head_results(incl_remainder=True, apply_ln=True).sum(0)
                               + (0 if bias is None else _np(bias)), ln_out, rtol=1e-9, atol=1e-10)

    accumulated, acc_labels = cache.accumulated_resid(apply_ln=True, return_labels=True)
    assert acc_labels == ["0_pre", "1_pre", "final_post"]
    np.testing.assert_allclose(accumulated[-1] @ _np(m.W_U), logits, rtol=1e-10, atol=1e-12)
    assert cache.accumulated_resid(layer=1, incl_mid=True, return_labels=True)[1] == ["0_pre", "0_mid", "1_pre"]
    one_position = cache.accumulated_resid(pos_slice=-1)
    assert one_position.shape == (3, 2, 24)
    np.testing.assert_array_equal(one_position[0], cache["resid_pre", 0][:, -1])


def test_cache_keys_follow_get_act_name(rng):
    m = _model("gpt2")
    _, cache = m.run_with_cache(_ids(rng))
    assert cache["pattern", 0] is cache["blocks.0.attn.hook_pattern"]
    assert cache["resid_post", -1] is cache["blocks.1.hook_resid_post"]
    assert cache["embed"] is cache["hook_embed"] and cache["attn", 1] is cache["blocks.1.attn.hook_pattern"]
    assert ("pattern", 1) in cache and ("pattern", 7) not in cache
    for short, full in [(("k", 6, "a"), "blocks.6.attn.hook_k"), (("pre", 2), "blocks.2.mlp.hook_pre"),
                        (("embed",), "hook_embed"), (("normalized", 27, "ln2"), "blocks.27.ln2.hook_normalized"),
                        (("k6",), "blocks.6.attn.hook_k"), (("scale4ln1",), "blocks.4.ln1.hook_scale"),
                        (("pre5",), "blocks.5.mlp.hook_pre"), (("resid_pre", 0), "blocks.0.hook_resid_pre"),
                        (("scale",), "ln_final.hook_scale")]:
        assert get_act_name(*short) == full, short
    assert len(cache) == len(m.hook_names()) and list(cache) == m.hook_names()
    with pytest.raises(KeyError, match="blocks.5.attn.hook_pattern"):
        cache["pattern", 5]


def test_names_filter_keeps_those_names_and_the_plain_forward(rng):
    m = tf.nn.GPT(BASE, seed=3)  # float32, the fused attention kernel
    ids = _ids(rng)
    plain = np.asarray(m(ids))
    logits, cache = m.run_with_cache(ids, names_filter=lambda n: "resid" in n)
    assert list(cache) == [n for n in m.hook_names() if "resid" in n]
    np.testing.assert_array_equal(logits, plain)  # hooks outside attention: the fused forward, bit for bit
    _, one = m.run_with_cache(ids, names_filter="blocks.1.attn.hook_pattern")
    assert list(one) == ["blocks.1.attn.hook_pattern"]
    _, listed = m.run_with_cache(ids, names_filter=["hook_embed", "blocks.0.hook_mlp_out"])
    assert list(listed) == ["hook_embed", "blocks.0.hook_mlp_out"]
    with pytest.raises(KeyError, match="left out by names_filter"):
        listed["resid_pre", 0]
    with pytest.raises(ValueError, match="'blocks.9.hook_resid_pre' is not a hook"):
        m.run_with_cache(ids, names_filter=["blocks.9.hook_resid_pre"])
    _, single = m.run_with_cache(ids[:1], remove_batch_dim=True)
    assert single["pattern", 0].shape == (4, 9, 9) and single["hook_pos_embed"].shape == (9, 24)
    np.testing.assert_allclose(single.decompose_resid().sum(0), single["resid_post", -1], rtol=1e-5, atol=1e-5)


def test_weights_carry_gradients_to_the_parameters(rng):
    m = _model("gqa_learned")
    R = rng.standard_normal(m.W_K.shape)
    (m.W_K * tf.tensor(R)).sum().backward()
    grad = dict(m.named_parameters())["transformer.h.1.attn.c_attn.weight"].grad  # [C + 2 Hkv D, C]
    C, D = 24, 6
    # W_K[l, h] = c_attn rows [C, C + D) transposed, for every query head h (one kv head): the gradient sums them
    np.testing.assert_allclose(grad[C:C + D], R[1].sum(0).T, rtol=1e-12)
    assert not grad[:C].any() and not grad[C + D:].any()


def test_forward_return_types_and_sampling_are_the_librarys(rng):
    m = tf.nn.GPT(BASE, seed=4)
    ids = _ids(rng, batch=1)
    np.testing.assert_array_equal(np.asarray(m(ids[0])), np.asarray(m(ids)))  # [T] is one row
    loss = m(ids, return_type="loss")
    assert loss.item() == pytest.approx(m.loss(ids[:, :-1], ids[:, 1:]).item(), rel=1e-7)
    logits, loss2 = m(ids, return_type="both")
    assert logits.shape == (1, 9, 13) and loss2.item() == pytest.approx(loss.item(), rel=1e-7)
    assert m(ids, return_type=None) is None
    with pytest.raises(ValueError, match="return_type"):
        m(ids, return_type="probs")
    greedy = m.sample([1, 2, 3], tokens=4, temperature=0)
    seq = [1, 2, 3]
    for _ in range(4):  # greedy: the argmax of the forward at the last position, each step
        seq.append(int(np.asarray(m(np.array([seq])))[0, -1].argmax()))
    assert greedy == seq
    assert m.sample([1, 2, 3], tokens=4, temperature=0, use_cache=False) == greedy
    assert m.generate(np.array([[1, 2, 3]]), 4, temperature=0).tolist() == [greedy]
    assert m.sample([5], tokens=6, seed=9) == m.sample([5], tokens=6, seed=9)
    with pytest.raises(TypeError, match="no vocabulary"):
        m.to_tokens("abc")
    with pytest.raises(TypeError, match="float32"):
        _model("gpt2").sample([1], tokens=1)


@pytest.fixture(scope="module")
def bpe_checkpoint(tmp_path_factory):
    """A tiny text run with a SentencePiece (bpe) vocabulary, which has <s>."""
    out = tmp_path_factory.mktemp("bpe") / "run"
    tf.train(os.path.join(SRC, "configs", "text.yaml"), out=str(out),
             overrides={"data.path": os.path.join(SRC, "configs", "data", "simple_english.txt"),
                        "data.tokenizer": "bpe", "data.vocab_size": 400, "model.context": 32, "model.d_model": 32,
                        "model.n_layer": 1, "training.batch_size": 4, "training.steps": 4,
                        "training.eval_interval": 4, "training.eval_batches": 1, "logging.attention_interval": 0,
                        "logging.probe": "", "schedule.warmup_steps": 1})
    return str(out / "checkpoint.safetensors")


def test_a_loaded_model_encodes_prompts_as_the_cli_does(bpe_checkpoint, tmp_path):
    m = tf.load(bpe_checkpoint)
    prompt = "The little fox"
    tokens = m.to_tokens(prompt)
    assert tokens.shape[0] == 1 and tokens[0, 0] == 1 and m.to_str_tokens(prompt)[0] == "<s>"  # <s> first
    assert m.to_tokens(prompt, prepend_bos=False).tolist() == [tokens[0, 1:].tolist()]
    assert m.cfg.default_prepend_bos and m.to_string(tokens[0, 1:]) == prompt
    np.testing.assert_array_equal(np.asarray(m(prompt)), np.asarray(m(tokens)))
    logits, cache = m.run_with_cache(prompt)
    np.testing.assert_allclose(logits, np.asarray(m(tokens)), rtol=1e-5, atol=1e-5)
    amap = m.attention(prompt)
    assert amap.weights.shape[-1] == tokens.shape[1] and amap.ids.tolist() == tokens[0].tolist()
    if APP:  # the CLI's attention of the same prompt: same tokens, same weights, bit for bit
        subprocess.run([APP, "attention", bpe_checkpoint, "--prompt", prompt, "--out", str(tmp_path / "maps")],
                       check=True, capture_output=True)
        side = json.loads((tmp_path / "maps" / "attention.json").read_text())
        assert side["tokens"] == amap.tokens
        np.testing.assert_array_equal(np.load(tmp_path / "maps" / "attention.npy"), amap.weights)
    view = cache.attention_map()
    assert view.tokens == m.to_str_tokens(prompt) and view.shape == amap.shape
    np.testing.assert_allclose(view.weights, amap.weights, atol=1e-6)
    with pytest.raises(ValueError, match="one length"):
        m.to_tokens(["The", "The little fox"])


# ---- hooks, losses, circuits and patching as TransformerLens notebooks write them


def test_a_hook_that_writes_in_place_ablates_as_one_that_returns_the_ablated_copy(rng):
    m = _model("gpt2")
    ids = _ids(rng)
    clean = m.run_with_hooks(ids)

    def zero_head_in_place(z, hook):
        z[:, :, 1] = 0  # TransformerLens' habit: no return value

    def zero_head_copy(z, hook):
        out = z.clone()
        out[:, :, 1] = 0
        return out

    in_place = m.run_with_hooks(ids, fwd_hooks=[("blocks.0.attn.hook_z", zero_head_in_place)])
    returned = m.run_with_hooks(ids, fwd_hooks=[("blocks.0.attn.hook_z", zero_head_copy)])
    np.testing.assert_array_equal(in_place, returned)
    assert np.abs(in_place - clean).max() > 1e-3
    # a hook that only reads keeps the activation itself: gradients pass through it
    m.zero_grad()
    m.run_with_hooks(ids, fwd_hooks=[(lambda name: True, lambda x, hook: None)])
    with m.hooks(fwd_hooks=[(lambda name: True, lambda x, hook: None)]):
        loss = m(ids, return_type="loss")
    loss.backward()
    hooked = _np(m.transformer.wte.weight.grad).copy()
    m.zero_grad()
    m(ids, return_type="loss").backward()  # the plain (fused) modules: the same gradient to rounding
    assert np.abs(hooked).max() > 1e-3
    np.testing.assert_allclose(hooked, _np(m.transformer.wte.weight.grad), rtol=1e-9, atol=1e-13)


def test_hook_names_may_be_functions_and_hook_points_know_their_layer_and_ctx(rng):
    m = _model("gpt2")
    seen = []

    def record(pattern, hook):
        seen.append((hook.name, hook.layer()))
        hook.ctx["calls"] = hook.ctx.get("calls", 0) + 1

    m.run_with_hooks(_ids(rng), fwd_hooks=[(lambda name: name.endswith("hook_pattern"), record)])
    assert seen == [("blocks.0.attn.hook_pattern", 0), ("blocks.1.attn.hook_pattern", 1)]
    m.run_with_hooks(_ids(rng), fwd_hooks=[("blocks.1.attn.hook_pattern", record)])
    assert m.hook_dict["blocks.1.attn.hook_pattern"].ctx == {"calls": 2}
    m.reset_hooks()
    assert m.hook_dict["blocks.1.attn.hook_pattern"].ctx == {}
    with pytest.raises(ValueError, match="not in a block"):
        m.hook_dict["hook_embed"].layer()
    with pytest.raises(TypeError, match=r"fwd_hooks\[0\]"):
        m.run_with_hooks(_ids(rng), fwd_hooks=[(3, record)])
    with pytest.raises(ValueError, match="unknown hook name 'blocks.9.hook_z'"):
        m.run_with_hooks(_ids(rng), fwd_hooks=[("blocks.9.hook_z", record)])


def test_added_hooks_apply_to_every_forward_until_reset(rng):
    m = _model("gpt2")
    ids = _ids(rng)
    clean = _np(m(ids))
    zero = ("blocks.1.hook_resid_post", lambda x, hook: np.zeros_like(x))
    m.add_hook(*zero)
    assert np.abs(_np(m(ids)) - clean).max() > 1e-3
    logits, cache = m.run_with_cache(ids)
    assert np.all(cache["resid_post", 1] == 0) and np.allclose(logits, _np(m(ids)))
    m.reset_hooks()
    np.testing.assert_array_equal(_np(m(ids)), clean)
    m.add_hook(*zero, is_permanent=True)
    m.reset_hooks()
    assert np.abs(_np(m(ids)) - clean).max() > 1e-3
    m.reset_hooks(including_permanent=True)
    with m.hooks(fwd_hooks=[zero]):
        inside = _np(m(ids))
    np.testing.assert_array_equal(inside, m.run_with_hooks(ids, fwd_hooks=[zero]))
    np.testing.assert_array_equal(_np(m(ids)), clean)


def test_losses_per_token_and_with_hooks_are_the_next_token_cross_entropy(rng):
    m = _model("llama")
    ids = _ids(rng)
    logits = _np(m(ids))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.take_along_axis(logp[:, :-1], ids[:, 1:, None], -1)[..., 0]  # [B, T-1]
    np.testing.assert_allclose(_np(m(ids, return_type="loss", loss_per_token=True)), expected, rtol=1e-10)
    np.testing.assert_allclose(m(ids, return_type="loss").item(), expected.mean(), rtol=1e-10)
    np.testing.assert_allclose(m(ids, return_type="loss").item(), m.loss(ids[:, :-1], ids[:, 1:]).item(), rtol=1e-12)
    np.testing.assert_allclose(_np(tf.lens.utils.lm_cross_entropy_loss(logits, ids, per_token=True)), expected,
                               rtol=1e-10)
    half = ("blocks.0.hook_resid_post", lambda x, hook: x / 2)
    hooked = m.run_with_hooks(ids, fwd_hooks=[half])
    loss = m.run_with_hooks(ids, fwd_hooks=[half], return_type="loss")
    np.testing.assert_allclose(loss.item(), m.loss_fn(hooked, ids).item(), rtol=1e-12)
    (both_logits, both_loss), _ = m.run_with_cache(ids, return_type="both")
    np.testing.assert_allclose(both_logits, logits, rtol=1e-12)
    np.testing.assert_allclose(both_loss.item(), expected.mean(), rtol=1e-10)
    # torch's reduction="none", an ignored target counting 0
    targets = ids[:, 1:].copy()
    targets[0, 2] = -100
    none = _np(tf.nn.functional.cross_entropy(tf.tensor(logits[:, :-1].reshape(-1, 13)), targets.reshape(-1),
                                              reduction="none"))
    assert none.reshape(targets.shape)[0, 2] == 0
    np.testing.assert_allclose(np.delete(none, 2), np.delete(expected.reshape(-1), 2), rtol=1e-10)


def test_factored_ov_and_qk_are_the_heads_products_and_their_svd_rebuilds_them(rng):
    m = _model("gpt2")
    W_Q, W_K, W_V, W_O, W_E, W_U = (_np(getattr(m, n)) for n in ("W_Q", "W_K", "W_V", "W_O", "W_E", "W_U"))
    OV, QK = m.OV, m.QK
    assert OV.shape == (2, 4, 24, 24) and OV.mdim == 6 and "hidden dim 6" in repr(OV)
    np.testing.assert_allclose(OV[1, 2].AB, W_V[1, 2] @ W_O[1, 2], rtol=1e-12)
    np.testing.assert_allclose(QK.AB, W_Q @ np.swapaxes(W_K, -1, -2), rtol=1e-12)
    circuit = m.W_E @ OV[0, 3] @ m.W_U  # a tensor on the left, an array on the right: still factored
    assert isinstance(circuit, tf.lens.FactoredMatrix) and circuit.shape == (13, 13)
    dense = W_E @ W_V[0, 3] @ W_O[0, 3] @ W_U
    np.testing.assert_allclose(circuit.AB, dense, rtol=1e-10, atol=1e-13)
    U, S, Vh = circuit.svd()
    np.testing.assert_allclose(U @ np.diag(S) @ Vh.T, dense, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(S, np.linalg.svd(dense, compute_uv=False)[:6], rtol=1e-8)
    np.testing.assert_allclose(circuit.norm(), np.linalg.norm(dense), rtol=1e-10)
    eig = np.sort_complex(circuit.eigenvalues)
    dense_eig = np.linalg.eigvals(dense)
    np.testing.assert_allclose(eig, np.sort_complex(dense_eig[np.argsort(-np.abs(dense_eig))[:6]]), rtol=1e-6)
    np.testing.assert_allclose((OV[0, 3] @ OV[1, 1]).AB, OV[0, 3].AB @ OV[1, 1].AB, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(circuit.T.AB, dense.T, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(circuit.get_corner(2), dense[:2, :2], rtol=1e-10)
    with pytest.raises(ValueError, match="do not multiply"):
        tf.lens.FactoredMatrix(np.ones((3, 2)), np.ones((3, 2)))


@pytest.mark.parametrize("variant", ["gpt2", "llama"])
def test_neurons_heads_and_biases_add_up_to_the_stream_and_logit_attrs_to_the_logit(variant, rng):
    m = _model(variant)
    ids = _ids(rng)
    logits, cache = m.run_with_cache(ids)
    neurons = cache.stack_neuron_results(layer=1)
    assert neurons.shape == (m.cfg.d_mlp, 2, 9, 24)
    np.testing.assert_allclose(neurons.sum(0) + _np(m.b_out)[0], cache["mlp_out", 0], rtol=1e-9, atol=1e-11)
    parts, labels = cache.get_full_resid_decomposition(return_labels=True)
    assert labels[:2] == ["L0H0", "L0H1"] and labels[8] == "L0N0" and labels[-1] == "bias"
    assert len(labels) == parts.shape[0] == 2 * 4 + 2 * m.cfg.d_mlp + (2 if variant == "gpt2" else 1) + 1
    np.testing.assert_allclose(parts.sum(0), cache["resid_post", -1], rtol=1e-9, atol=1e-10)
    coarse = cache.get_full_resid_decomposition(expand_neurons=False)
    np.testing.assert_allclose(coarse.sum(0), cache["resid_post", -1], rtol=1e-9, atol=1e-10)
    answer = ids[:, -1]
    attrs = cache.logit_attrs(parts[:, :, -1], tokens=answer, pos_slice=-1)  # [components, batch]
    ln_bias = dict(m.ln_final.named_parameters()).get("bias")
    bias = _np(ln_bias) @ _np(m.W_U)[:, answer] if ln_bias is not None else 0
    np.testing.assert_allclose(attrs.sum(0) + bias, logits[np.arange(2), -1, answer], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(_np(m.tokens_to_residual_directions(answer)), _np(m.W_U)[:, answer].T, rtol=1e-12)


def test_patching_puts_the_clean_activation_in_one_place_at_a_time(rng):
    m = _model("gpt2")
    clean, corrupted = _ids(rng, batch=1), _ids(rng, batch=1)
    _, clean_cache = m.run_with_cache(clean)
    metric = lambda logits: logits[0, -1, 3] - logits[0, -1, 5]  # noqa: E731
    resid = tf.lens.patching.get_act_patch_resid_pre(m, corrupted, clean_cache, metric)
    assert resid.shape == (2, 9)
    for layer, pos in [(0, 0), (1, 8), (1, 4)]:
        def swap(x, hook, pos=pos, layer=layer):
            out = x.clone()
            out[:, pos] = clean_cache["resid_pre", layer][:, pos]
            return out
        manual = metric(m.run_with_hooks(corrupted, fwd_hooks=[(f"blocks.{layer}.hook_resid_pre", swap)]))
        np.testing.assert_allclose(resid[layer, pos], manual, rtol=1e-12)
    same = tf.lens.patching.get_act_patch_resid_pre(m, clean, clean_cache, metric)  # the clean run, every time
    np.testing.assert_allclose(same, np.full((2, 9), metric(m.run_with_hooks(clean))), rtol=1e-12)
    heads = tf.lens.patching.get_act_patch_attn_head_out_all_pos(m, corrupted, clean_cache, metric)
    by_pos = tf.lens.patching.get_act_patch_attn_head_out_by_pos(m, corrupted, clean_cache, metric)
    assert heads.shape == (2, 4) and by_pos.shape == (2, 9, 4)
    def head(z, hook):
        z[:, :, 2] = clean_cache["z", 1][:, :, 2]
    np.testing.assert_allclose(heads[1, 2], metric(m.run_with_hooks(corrupted, fwd_hooks=[("blocks.1.attn.hook_z",
                                                                                             head)])), rtol=1e-12)
    every = tf.lens.patching.get_act_patch_block_every(m, corrupted, clean_cache, metric)
    np.testing.assert_array_equal(every[0], resid)
    with pytest.raises(ValueError, match="clean cache"):
        tf.lens.patching.get_act_patch_resid_pre(m, _ids(rng, batch=1, T=5), clean_cache, metric)


def test_generate_takes_transformerlens_arguments(rng):
    m = _model("gpt2")
    m32 = tf.nn.GPT({**BASE}, seed=5, dtype=tf.float32)
    ids = _ids(rng, batch=1, T=4)
    greedy = m32.generate(ids, max_new_tokens=3, do_sample=False, verbose=False)
    np.testing.assert_array_equal(greedy, m32.generate(ids, max_new_tokens=3, temperature=0))
    np.testing.assert_array_equal(greedy, m32.generate(ids, max_new_tokens=3, temperature=0, use_past_kv_cache=False))
    assert m.to("cpu") is m and m.cfg.to_dict()["n_layers"] == 2
    with pytest.raises(ValueError, match="CPU"):
        m.to("cuda")


def test_detect_head_scores_each_heads_share_of_attention_on_the_pattern(rng):
    hd = tf.lens.head_detector
    tokens = np.array([4, 7, 9, 4, 7, 9])
    np.testing.assert_array_equal(np.argwhere(hd.get_previous_token_head_detection_pattern(tokens)),
                                  [[1, 0], [2, 1], [3, 2], [4, 3], [5, 4]])
    np.testing.assert_array_equal(np.argwhere(hd.get_duplicate_token_head_detection_pattern(tokens)),
                                  [[3, 0], [4, 1], [5, 2]])
    np.testing.assert_array_equal(np.argwhere(hd.get_induction_head_detection_pattern(tokens)),
                                  [[3, 1], [4, 2], [5, 3]])
    m = _model("gpt2")
    _, cache = m.run_with_cache(tokens)
    scores = hd.detect_head(m, tokens, "induction_head")
    p = cache["pattern", 1][0, 3]  # layer 1, head 3: [q, k]
    np.testing.assert_allclose(scores[1, 3], (p[3, 1] + p[4, 2] + p[5, 3]) / p.sum(), rtol=1e-12)
    mine = np.tril(np.ones((6, 6))) / np.arange(1, 7)[:, None]  # uniform over the past
    abs_scores = hd.detect_head(m, tokens, mine, error_measure="abs", exclude_bos=True)
    diff = np.abs(cache["pattern", 0][0, 2] - mine)
    diff[:, 0] = 0
    assert abs_scores[0, 2] == 1 - round(float(diff.mean()) * 6, 3)
    some = hd.detect_head(m, tokens, "previous_token_head", heads=[(0, 1), (1, 2)], cache=cache)
    assert (some == -1).sum() == 6 and some[0, 1] == hd.detect_head(m, tokens, "previous_token_head")[0, 1]
    with pytest.raises(ValueError, match="lower-triangular"):
        hd.detect_head(m, tokens, np.ones((6, 6)))
    with pytest.raises(ValueError, match="valid are 2 to the context, 12"):
        hd.detect_head(m, np.arange(13) % 13, "induction_head")


def test_test_prompt_ranks_each_answer_token_among_the_logits_before_it(bpe_checkpoint, capsys):
    m = tf.load(bpe_checkpoint)
    prompt, answer = "The little fox", " ran away"
    ranks = tf.lens.utils.test_prompt(prompt, answer, m, top_k=3)
    ids = np.concatenate([m.to_tokens(prompt)[0], m.to_tokens(answer, prepend_bos=False)[0]])
    logits = np.asarray(m(ids[None]))[0]
    n = len(m.to_tokens(prompt)[0])
    expected = [(m.vocab[t], int((logits[n + i - 1] > logits[n + i - 1, t]).sum())) for i, t in enumerate(ids[n:])]
    assert ranks == expected and len(ranks) >= 2
    out = capsys.readouterr().out
    assert out.startswith("Tokenized prompt: ['<s>'") and out.count("Top 0th token") == len(ranks)
    assert f"Ranks of the answer tokens: {expected}" in out


@pytest.mark.parametrize("variant", ["gpt2", "llama"])
def test_a_replaced_norm_scale_divides_the_stream_and_a_read_one_changes_nothing(variant, rng):
    m = _model(variant)
    ids = _ids(rng)
    logits, cache = m.run_with_cache(ids)
    plain = _np(m(ids))
    read = m.run_with_hooks(ids, fwd_hooks=[(lambda n: n.endswith("hook_scale"), lambda s, hook: None)])
    np.testing.assert_array_equal(read, plain)
    doubled = m.run_with_hooks(ids, fwd_hooks=[("ln_final.hook_scale", lambda s, hook: 2 * s)])
    params = dict(m.ln_final.named_parameters())
    bias = _np(params["bias"]) if "bias" in params else 0
    final = (cache["ln_final.hook_normalized"] - bias) / 2 + bias
    np.testing.assert_allclose(doubled, final @ _np(m.W_U), rtol=1e-10, atol=1e-12)


def test_logits_cache_entries_and_hook_arguments_take_torchs_methods(rng):
    """What a TransformerLens notebook does with them: torch's methods (dim=, keepdim=, clone), each against NumPy on
    the same values; outside the graph; the cache gives the same object each time, and a change to it is the cache's."""
    m = _model("gpt2")
    ids = _ids(rng)
    logits, cache = m.run_with_cache(ids)
    assert isinstance(logits, tf.Tensor) and not logits.requires_grad
    arr = _np(logits)
    shifted = arr - arr.max(-1, keepdims=True)
    np.testing.assert_allclose(logits.log_softmax(dim=-1), shifted - np.log(np.exp(shifted).sum(-1, keepdims=True)),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(logits.argmax(dim=-1), arr.argmax(-1))
    values, indices = logits[0, -1].topk(3)
    np.testing.assert_array_equal(indices, np.argsort(-arr[0, -1], kind="stable")[:3])
    pattern = cache["pattern", 0]
    assert pattern is cache["blocks.0.attn.hook_pattern"] and not pattern.requires_grad
    np.testing.assert_allclose(pattern.mean(dim=0), _np(pattern).mean(0), rtol=1e-12)
    np.testing.assert_allclose(pattern.sum(dim=-1), np.ones((2, 4, 9)), rtol=1e-12)
    np.testing.assert_allclose(cache["z", 1].norm(dim=-1), np.linalg.norm(_np(cache["z", 1]), axis=-1), rtol=1e-12)
    stack, labels = cache.decompose_resid(return_labels=True)
    assert isinstance(stack, tf.Tensor)
    np.testing.assert_allclose(stack.sum(dim=0), cache["resid_post", -1], rtol=1e-9, atol=1e-11)
    # a mean ablation written with torch's methods, against the same ablation written in NumPy
    seen = []

    def mean_ablate(z, hook):
        seen.append((isinstance(z, tf.Tensor), z.requires_grad))
        return z.mean(dim=1, keepdim=True).expand(*z.shape).clone()

    def mean_ablate_numpy(z, hook):
        a = np.asarray(z)
        return np.broadcast_to(a.mean(1, keepdims=True), a.shape).copy()

    ablated = m.run_with_hooks(ids, fwd_hooks=[("blocks.0.attn.hook_z", mean_ablate)])
    numpy_ablated = m.run_with_hooks(ids, fwd_hooks=[("blocks.0.attn.hook_z", mean_ablate_numpy)])
    np.testing.assert_allclose(ablated, numpy_ablated, rtol=1e-12, atol=1e-13)  # two orders of the mean's sum
    assert seen == [(True, False)] and np.abs(_np(ablated) - arr).max() > 1e-6
    # the cache's helpers read what the cache holds, as TransformerLens' read its tensors
    cache["attn_out", 0][:] = 0
    np.testing.assert_array_equal(cache.decompose_resid(return_labels=True)[0][labels.index("0_attn_out")], 0)


def test_hook_points_are_module_attributes_with_add_hook_and_remove_hooks(rng):
    m = _model("llama")
    assert all(m.hook_dict[n] is p for n, p in [
        ("hook_embed", m.hook_embed), ("blocks.1.attn.hook_pattern", m.blocks[1].attn.hook_pattern),
        ("blocks.0.hook_resid_post", m.blocks[0].hook_resid_post),
        ("blocks.0.mlp.hook_post", m.blocks[0].mlp.hook_post), ("blocks.1.ln2.hook_scale", m.blocks[1].ln2.hook_scale),
        ("ln_final.hook_normalized", m.ln_final.hook_normalized)])
    with pytest.raises(AttributeError, match="hook_nope"):
        m.blocks[0].attn.hook_nope
    ids = _ids(rng)
    clean = m(ids)

    def zero_head_2(z, hook):
        z[:, :, 2] = 0

    by_name = m.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_z", zero_head_2)])
    m.blocks[1].attn.hook_z.add_hook(zero_head_2)
    np.testing.assert_array_equal(m(ids), by_name)
    assert np.abs(_np(by_name) - _np(clean)).max() > 1e-6
    m.blocks[1].attn.hook_z.remove_hooks()
    np.testing.assert_array_equal(m(ids), clean)


def _keep_points(name):
    return name.endswith(("hook_resid_post", "attn.hook_z", "attn.hook_pattern", "hook_embed"))


def test_backward_hooks_get_the_gradient_at_each_point_as_attribution_patching_reads_it(rng):
    """TransformerLens' attribution patching: a forward hook keeps each activation and a backward hook its gradient;
    each gradient is checked against central differences of the loss along a direction there (float64)."""
    m = _model("gpt2")
    ids = _ids(rng)
    acts, grads = {}, {}
    m.add_hook(_keep_points, lambda a, hook: acts.__setitem__(hook.name, np.asarray(a).copy()))
    m.add_hook(_keep_points, lambda g, hook: grads.__setitem__(hook.name, np.asarray(g).copy()), dir="bwd")
    m(ids, return_type="loss").backward()
    m.reset_hooks()
    assert sorted(grads) == sorted(n for n in m.hook_names() if _keep_points(n))
    for name, grad in grads.items():
        d = np.sin(0.7 * np.arange(grad.size) + 1.0).reshape(grad.shape)

        def loss_along(eps, name=name, d=d):
            shift = [(name, lambda a, hook: np.asarray(a) + eps * d)]
            return m.run_with_hooks(ids, return_type="loss", fwd_hooks=shift).item()

        differences = (loss_along(1e-6) - loss_along(-1e-6)) / 2e-6  # as tests/nn/test_hooks.cpp
        np.testing.assert_allclose(np.sum(grad * d), differences, rtol=1e-6, atol=1e-10, err_msg=name)
    # run_with_cache(incl_bwd=True): the same gradients, under name + "_grad", beside the activations
    loss, cache = m.run_with_cache(ids, names_filter=_keep_points, return_type="loss", incl_bwd=True)
    for name, grad in grads.items():
        np.testing.assert_allclose(np.asarray(cache[name + "_grad"]), grad, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(np.asarray(cache[name]), acts[name], rtol=1e-12, err_msg=name)


def test_what_a_backward_hook_returns_flows_on_until_its_direction_is_reset(rng):
    m = _model("gpt2")
    ids = _ids(rng)
    wte = dict(m.named_parameters())["transformer.wte.weight"]
    m.blocks[0].hook_resid_pre.add_hook(lambda g, hook: g * 0, dir="bwd")  # nothing else reaches the embeddings
    m.add_hook("blocks.1.hook_resid_post", lambda a, hook: None)
    for direction in ("fwd", "bwd"):
        m.zero_grad()
        m(ids, return_type="loss").backward()
        assert not np.any(wte.grad.numpy()), direction  # the backward hook is on until its direction is reset
        m.reset_hooks(direction=direction)
    m.zero_grad()
    m(ids, return_type="loss").backward()
    assert np.any(wte.grad.numpy())
    m.add_hook("hook_embed", lambda g, hook: g * 0, dir="bwd")
    m.hook_dict["hook_embed"].remove_hooks(dir="bwd")
    m.zero_grad()
    m(ids, return_type="loss").backward()
    assert np.any(wte.grad.numpy())


def test_backward_hooks_are_refused_where_transformerlens_would_fail_and_change_no_gradient(rng):
    m = _model("gpt2")
    ids = _ids(rng)
    with pytest.raises(ValueError, match="dir 'sideways': valid are 'fwd', 'bwd'"):
        m.add_hook("hook_embed", lambda g, hook: None, dir="sideways")
    with pytest.raises(ValueError, match="direction 'up': valid are 'fwd', 'bwd', 'both'"):
        m.reset_hooks(direction="up")
    with pytest.raises(ValueError, match=r"incl_bwd=True\) runs backward\(\) on the output: give return_type='loss'"):
        m.run_with_cache(ids, incl_bwd=True)
    with pytest.raises(TypeError, match=r"bwd_hooks\[0\]: expected \(name, fn\(grad, hook\)\)"):
        m.run_with_hooks(ids, bwd_hooks=[("hook_embed",)])
    with pytest.raises(ValueError, match="unknown hook name 'blocks.9.hook_z'"):
        m.run_with_hooks(ids, bwd_hooks=[("blocks.9.hook_z", lambda g, hook: None)])
    with pytest.raises(TypeError, match=r"bwd_hooks\[0\]"):
        with m.hooks(fwd_hooks=[("hook_embed", lambda a, hook: None)], bwd_hooks=[(3, lambda g, hook: None)]):
            pass
    assert m(ids).shape == (2, 9, 13)  # the refused hooks() added nothing
    m(ids, return_type="loss").backward()
    before = {n: p.grad.numpy().copy() for n, p in m.named_parameters()}
    for answer, message in [(lambda g, hook: np.ones(3), "it returned one of shape \\[3\\]"),
                            (lambda g, hook: {}, "expected numbers")]:
        loss = m.run_with_hooks(ids, return_type="loss", bwd_hooks=[("blocks.0.hook_resid_mid", answer)])
        with pytest.raises(ValueError, match=r"the backward hook at 'blocks.0.hook_resid_mid' must return a gradient "
                                             r"of shape \[2, 9, 24\], or None: " + message):
            loss.backward()
        for n, p in m.named_parameters():
            np.testing.assert_array_equal(p.grad.numpy(), before[n], err_msg=n)
