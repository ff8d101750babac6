#!/usr/bin/python3
"""A reader of llama2.c's model.bin and tokenizer.bin, written from docs/formats.md ("llama2.c"), independent of
tinyformer's code: the header and weights, the forward pass run.c computes (float64 here), run.c's encoder (BOS, the
dummy-prefix " ", byte fallback, merge by score) and its decoder, and greedy generation as run.c prints it."""
import struct

import numpy as np

HEADER = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")


def read_model(path):
    """(config dict, weights dict of float32 arrays) of a model.bin; ValueError when the sizes do not add up."""
    data = open(path, "rb").read()
    if len(data) < 28:
        raise ValueError(f"{path}: {len(data)} bytes, shorter than the 28-byte header")
    cfg = dict(zip(HEADER, struct.unpack("<7i", data[:28])))
    cfg["shared_classifier"] = cfg["vocab_size"] > 0
    cfg["vocab_size"] = abs(cfg["vocab_size"])
    C, F, L, H, KV, V, T = (cfg[k] for k in HEADER)
    if min(C, F, L, H, KV, V, T) <= 0 or C % H or H % KV:
        raise ValueError(f"{path}: header {cfg} is not a model")
    D = C // H
    shapes = [("token_embedding_table", (V, C)), ("rms_att_weight", (L, C)), ("wq", (L, C, C)),
              ("wk", (L, KV * D, C)), ("wv", (L, KV * D, C)), ("wo", (L, C, C)), ("rms_ffn_weight", (L, C)),
              ("w1", (L, F, C)), ("w2", (L, C, F)), ("w3", (L, F, C)), ("rms_final_weight", (C,)),
              ("freq_cis_real", (T, D // 2)), ("freq_cis_imag", (T, D // 2))]
    if not cfg["shared_classifier"]:
        shapes.append(("wcls", (V, C)))
    floats = np.frombuffer(data, dtype="<f4", offset=28)
    need = sum(int(np.prod(s)) for _, s in shapes)
    if floats.size != need:
        raise ValueError(f"{path}: {floats.size} floats after the header, the header implies {need}")
    weights, at = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        weights[name] = floats[at:at + n].reshape(shape)
        at += n
    if cfg["shared_classifier"]:
        weights["wcls"] = weights["token_embedding_table"]
    return cfg, weights



Q80_MAGIC = 0x616B3432  # "ak42"


def read_model_q80(path):
    """(config dict, weights dict of float32 arrays, group size) of a version-2 model_q80.bin (runq.c's), each int8
    weight dequantised as q * its group's scale; ValueError when the header or the sizes do not add up."""
    data = open(path, "rb").read()
    if len(data) < 256:
        raise ValueError(f"{path}: {len(data)} bytes, shorter than the 256-byte header")
    magic, version = struct.unpack_from("<Ii", data, 0)
    if magic != Q80_MAGIC or version != 2:
        raise ValueError(f"{path}: magic {magic:#x} version {version}, expected {Q80_MAGIC:#x} version 2")
    cfg = dict(zip(HEADER, struct.unpack_from("<7i", data, 8)))
    (shared,), (gs,) = struct.unpack_from("<B", data, 36), struct.unpack_from("<i", data, 37)
    cfg["shared_classifier"] = bool(shared)
    C, F, L, H, KV, V, T = (cfg[k] for k in HEADER)
    if min(C, F, L, H, KV, V, T, gs) <= 0 or C % H or H % KV or C % gs or F % gs:
        raise ValueError(f"{path}: header {cfg}, group size {gs} is not a model runq.c computes")
    if any(data[41:256]):
        raise ValueError(f"{path}: the header's padding is not zeros")
    D = C // H
    at, weights = 256, {}
    for name, shape in [("rms_att_weight", (L, C)), ("rms_ffn_weight", (L, C)), ("rms_final_weight", (C,))]:
        n = int(np.prod(shape))
        weights[name] = np.frombuffer(data, dtype="<f4", count=n, offset=at).reshape(shape)
        at += 4 * n
    quantised = [("token_embedding_table", (V, C)), ("wq", (L, C, C)), ("wk", (L, KV * D, C)),
                 ("wv", (L, KV * D, C)), ("wo", (L, C, C)), ("w1", (L, F, C)), ("w2", (L, C, F)), ("w3", (L, F, C))]
    if not shared:
        quantised.append(("wcls", (V, C)))
    for name, shape in quantised:
        per = int(np.prod(shape[-2:]))  # one tensor per layer, each its int8 values then its scales
        layers = []
        for _ in range(int(np.prod(shape[:-2]))):
            if at + per + 4 * (per // gs) > len(data):
                raise ValueError(f"{path}: ends inside {name}")
            q = np.frombuffer(data, dtype=np.int8, count=per, offset=at).astype(np.float32)
            s = np.frombuffer(data, dtype="<f4", count=per // gs, offset=at + per)
            layers.append((q.reshape(-1, gs) * s[:, None]).reshape(shape[-2:]))
            at += per + 4 * (per // gs)
        weights[name] = np.stack(layers).reshape(shape)
    if at != len(data):
        raise ValueError(f"{path}: {len(data) - at} bytes after the weights")
    if shared:
        weights["wcls"] = weights["token_embedding_table"]
    return cfg, weights, gs

def rmsnorm(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w


def rope_pairs(x, H, D):
    """x [T, H*D]: each head's pairs (2i, 2i+1) at position p turned by p * 10000^(-2i/D), as run.c does."""
    T = x.shape[0]
    x = x.reshape(T, H, D // 2, 2).copy()
    angle = np.arange(T)[:, None] * 10000.0 ** (-np.arange(0, D, 2) / D)[None, :]  # [T, D/2]
    c, s = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    x0, x1 = x[..., 0].copy(), x[..., 1].copy()
    x[..., 0] = x0 * c - x1 * s
    x[..., 1] = x0 * s + x1 * c
    return x.reshape(T, H * D)


def forward(cfg, w, ids):
    """Logits [T, V] (float64) of the token ids, every position attending to itself and the ones before it."""
    C, L, H, KV = cfg["dim"], cfg["n_layers"], cfg["n_heads"], cfg["n_kv_heads"]
    D = C // H
    f = {k: v.astype(np.float64) for k, v in w.items()}
    x = f["token_embedding_table"][np.asarray(ids)]
    T = x.shape[0]
    mask = np.tril(np.ones((T, T), dtype=bool))
    for l in range(L):
        h = rmsnorm(x, f["rms_att_weight"][l])
        q = rope_pairs(h @ f["wq"][l].T, H, D)
        k = rope_pairs(h @ f["wk"][l].T, KV, D)
        v = h @ f["wv"][l].T
        out = np.zeros((T, C))
        for head in range(H):
            kv = head // (H // KV)
            qh, kh, vh = q[:, head * D:(head + 1) * D], k[:, kv * D:(kv + 1) * D], v[:, kv * D:(kv + 1) * D]
            s = np.where(mask, qh @ kh.T / np.sqrt(D), -np.inf)
            a = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, head * D:(head + 1) * D] = (a / a.sum(axis=1, keepdims=True)) @ vh
        x = x + out @ f["wo"][l].T
        h = rmsnorm(x, f["rms_ffn_weight"][l])
        g = h @ f["w1"][l].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ f["w3"][l].T)) @ f["w2"][l].T
    return rmsnorm(x, f["rms_final_weight"]) @ f["wcls"].T


def read_tokenizer(path, vocab_size):
    """(pieces as bytes, scores, max_token_length) of a tokenizer.bin with vocab_size entries."""
    data = open(path, "rb").read()
    (max_len,), at = struct.unpack_from("<i", data, 0), 4
    pieces, scores = [], []
    for i in range(vocab_size):
        if at + 8 > len(data):
            raise ValueError(f"{path}: ends at entry {i} of {vocab_size}")
        score, n = struct.unpack_from("<fi", data, at)
        at += 8
        if n < 0 or at + n > len(data):
            raise ValueError(f"{path}: entry {i} has length {n}, past the end")
        pieces.append(data[at:at + n])
        scores.append(score)
        at += n
    if at != len(data):
        raise ValueError(f"{path}: {len(data) - at} bytes after the {vocab_size} entries")
    return pieces, scores, max_len


def encode(tokenizer, text):
    """run.c's encode(text, bos=1, eos=0): <s>, the dummy prefix " ", each UTF-8 character as a piece or its bytes
    + 3, then merge the best-scoring adjacent pair (the leftmost on ties) while any pair is a piece."""
    pieces, scores, _ = tokenizer
    lookup = {}
    for i, p in enumerate(pieces):
        lookup.setdefault(p, i)  # run.c's bsearch finds one of equal strings; tinyformer's pieces are distinct
    ids = [1]
    raw = text.encode("utf-8")
    if raw:
        ids.append(lookup[b" "])
    for ch in text:
        b = ch.encode("utf-8")
        ids.extend([lookup[b]] if b in lookup else [byte + 3 for byte in b])
    while True:
        best, best_i = None, -1
        for i in range(len(ids) - 1):
            j = lookup.get(pieces[ids[i]] + pieces[ids[i + 1]], -1)
            if j != -1 and (best is None or scores[j] > scores[best]):
                best, best_i = j, i
        if best is None:
            return ids
        ids[best_i:best_i + 2] = [best]


def decode(tokenizer, prev, token):
    """The bytes run.c prints for `token` after `prev`: no leading space after <s>, <0xNN> as the byte."""
    piece = tokenizer[0][token]
    if prev == 1 and piece.startswith(b" "):
        piece = piece[1:]
    if len(piece) == 6 and piece.startswith(b"<0x") and piece.endswith(b">"):
        try:
            return bytes([int(piece[3:5], 16)])
        except ValueError:
            pass
    return piece


def generate_greedy(cfg, w, tokenizer, prompt, steps):
    """The token ids run.c's generate() goes through with -t 0 and -n steps (prompt included, stopping before
    <s>), and the bytes it prints."""
    ids = encode(tokenizer, prompt)
    n_prompt = len(ids)
    steps = min(steps, cfg["seq_len"])
    out, seq = b"", ids[:1]
    pos = 0
    while pos < steps:
        if pos < n_prompt - 1:
            nxt = ids[pos + 1]
        else:
            nxt = int(np.argmax(forward(cfg, w, seq)[-1]))
        pos += 1
        if nxt == 1:
            break
        out += decode(tokenizer, seq[-1], nxt)
        seq.append(nxt)
    return seq, out
