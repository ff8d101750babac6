#!/usr/bin/python3
"""Reads llm.c's files with numpy alone, written from llm.c's own readers (train_gpt2.c's gpt2_build_from_checkpoint
and fill_in_parameter_sizes, llmc/dataloader.h) and docs/interop.md, not from tinyformer's writer:
read_model(path) -> (header dict, {name: array}) in llm.c's parameter order; read_tokens(path) -> uint16 ids;
forward(header, params, ids) -> the logits [T, V] of llm.c's GPT-2 forward (float64)."""
import numpy as np

MODEL_MAGIC, MODEL_VERSION, TOKENS_MAGIC, TOKENS_VERSION = 20240326, 3, 20240520, 1
HEADER = ["magic", "version", "maxT", "V", "L", "NH", "C", "Vp"]


def parameter_shapes(h):
    """fill_in_parameter_sizes' 16 tensors, in its order, with their shapes."""
    Vp, C, T, L = h["Vp"], h["C"], h["maxT"], h["L"]
    return [("wte", (Vp, C)), ("wpe", (T, C)), ("ln1w", (L, C)), ("ln1b", (L, C)), ("qkvw", (L, 3 * C, C)),
            ("qkvb", (L, 3 * C)), ("attprojw", (L, C, C)), ("attprojb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)),
            ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)),
            ("lnfw", (C,)), ("lnfb", (C,))]


def read_model(path):
    raw = np.fromfile(path, dtype="<i4", count=256)
    h = dict(zip(HEADER, (int(v) for v in raw[:8])))
    assert h["magic"] == MODEL_MAGIC and h["version"] == MODEL_VERSION, h
    assert not raw[8:].any(), "header ints 8..255 are not zero"
    data = np.fromfile(path, dtype="<f4", offset=256 * 4)
    params, at = {}, 0
    for name, shape in parameter_shapes(h):
        n = int(np.prod(shape))
        params[name] = data[at:at + n].reshape(shape)
        at += n
    assert at == data.size, f"{path}: {data.size} floats after the header, llm.c reads {at}"
    return h, params


def read_tokens(path):
    raw = np.fromfile(path, dtype="<i4", count=256)
    assert raw[0] == TOKENS_MAGIC and raw[1] == TOKENS_VERSION and not raw[3:].any(), raw[:4]
    ids = np.fromfile(path, dtype="<u2", offset=256 * 4)
    assert ids.size == raw[2], (ids.size, raw[2])
    return ids


def layernorm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def gelu(x):  # llm.c's gelu_forward: the tanh approximation
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(h, p, ids):
    """llm.c's gpt2_forward for one sequence: ids [T] -> logits [T, V] (the first V of its Vp)."""
    p = {k: v.astype(np.float64) for k, v in p.items()}
    T, C, NH = len(ids), h["C"], h["NH"]
    D = C // NH
    x = p["wte"][ids] + p["wpe"][:T]
    mask = np.tril(np.ones((T, T), dtype=bool))
    for l in range(h["L"]):
        qkv = layernorm(x, p["ln1w"][l], p["ln1b"][l]) @ p["qkvw"][l].T + p["qkvb"][l]  # [T, 3C]: q, k, v
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(T, NH, D).transpose(1, 0, 2) for i in range(3))
        att = np.where(mask, q @ k.transpose(0, 2, 1) / np.sqrt(D), -np.inf)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + y @ p["attprojw"][l].T + p["attprojb"][l]
        hid = gelu(layernorm(x, p["ln2w"][l], p["ln2b"][l]) @ p["fcw"][l].T + p["fcb"][l])
        x = x + hid @ p["fcprojw"][l].T + p["fcprojb"][l]
    x = layernorm(x, p["lnfw"], p["lnfb"])
    return (x @ p["wte"].T)[:, :h["V"]]
