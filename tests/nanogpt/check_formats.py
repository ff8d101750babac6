#!/usr/bin/env python3
"""docs/formats.md, checked: the validation loss tinyformer reports (metrics.jsonl's val_loss) is recomputed in
PyTorch (tools/torch_gpt.py with the checkpoint's weights) from the rules the document states, for
  - `text`: configs/text.yaml as it is, the same text with another context, batch size and evaluation cap, and a
    text full of characters that the vocabulary escapes or that other line splitters would cut;
  - `tokens`: a .npy of random ids, with a partial last batch;
  - the synthetic tasks: the held-out set regenerated from the seed (std::mt19937_64, Rng::below, the task's
    layout), with the loss over the answer positions and the exact-match accuracy;
and the vocabulary text of each checkpoint is the one the document's grammar gives for the tokens it says the data
has (tf.Vocabulary, the library's reader and writer bound in Python, is tested in python/tests/test_vocabulary.py).
A rule changed on purpose (token-weighted mean instead of the mean of batch means, windows cut every T+1
characters, another seed) gives a different loss, so the comparison can tell.

    check_formats.py --app TINYFORMER --logits-tool LOGITS_DUMP --work-dir DIR
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn.functional as F

from common import SOURCE_DIR, check, torch_gpt_from_checkpoint, train, run  # noqa: F401

RTOL = 1e-5
MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64 (its sequence is fixed by the C++ standard), seeded as std::mt19937_64(seed)."""

    def __init__(self, seed):
        self.mt = [seed & MASK64]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.index = 312

    def __call__(self):
        if self.index >= 312:
            for i in range(312):
                y = (self.mt[i] & 0xFFFFFFFF80000000) | (self.mt[(i + 1) % 312] & 0x7FFFFFFF)
                x = self.mt[(i + 156) % 312] ^ (y >> 1)
                if y & 1:
                    x ^= 0xB5026F5AA96619E9
                self.mt[i] = x
            self.index = 0
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64

    def below(self, n):
        """tf::Rng::below: rejection of the top UINT64_MAX % n values, then x % n."""
        limit = MASK64 - MASK64 % n
        while True:
            x = self()
            if x < limit:
                return x % n


def batched_loss(model, rows, T, B, max_batches, scored_from=0):
    """tinyformer's evaluate(): rows [N, T+1] cut into batches of B (the last may be smaller), at most max_batches
    of them; each batch's loss is the mean cross-entropy over its scored positions (query q >= scored_from); the
    reported loss is the mean of those batch losses. Also the rule changed: every scored position weighted alike."""
    losses, total, count, exact = [], 0.0, 0, []
    for first in range(0, len(rows), B)[:max_batches]:
        batch = torch.from_numpy(np.asarray(rows[first:first + B], dtype=np.int64))
        x, y = batch[:, :T], batch[:, 1:].clone()
        y[:, :scored_from] = -1
        with torch.no_grad():
            logits = model(x)[0]
        ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=-1, reduction="none")
        ce = ce[y.reshape(-1) >= 0].double()
        losses.append(ce.mean().item())
        total, count = total + ce.sum().item(), count + ce.numel()
        pred = logits.argmax(-1)
        exact += [bool(((pred[b] == y[b]) | (y[b] < 0)).all()) for b in range(len(y))]
    return float(np.mean(losses)), total / count, float(np.mean(exact))


def last_val_loss(out_dir):
    rows = [json.loads(line) for line in open(os.path.join(out_dir, "metrics.jsonl"))]
    row = [r for r in rows if "val_loss" in r][-1]
    return row["val_loss"], row.get("accuracy")


def rel(a, b):
    return abs(a - b) / abs(b)


def check_vocabulary(meta, expected_tokens, layout, what):
    """The checkpoint's "tinyformer.vocab" is the text docs/formats.md gives: the header line, then token i on line
    i + 2 with backslash, newline and carriage return escaped, every line ending in LF."""
    text = meta["tinyformer.vocab"]
    lines = [t.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r") for t in expected_tokens]
    expected = f"tinyformer-vocabulary 1 {layout} {len(lines)}\n" + "".join(line + "\n" for line in lines)
    return check(text == expected, f"{what}: the vocabulary text is the documented one: {layout}, {len(lines)} tokens "
                                   f"in the documented order, escaped as documented ({len(text.encode())} bytes)")


def text_case(a, name, data_path, overrides, config="text.yaml"):
    """Trains `text` briefly, then recomputes the last val_loss from the documented split."""
    out = os.path.join(a.work_dir, name)
    ck = train(a.app, out, config, "training.steps=4", "schedule.warmup_steps=0", "training.eval_interval=4",
               "logging.attention_interval=0", f"data.path={data_path}", *overrides)
    model, meta = torch_gpt_from_checkpoint(ck)
    resolved = {}
    for line in open(os.path.join(out, "config.yaml")):
        if line.startswith("  ") and ":" in line:
            k, v = line.strip().split(":", 1)
            resolved[k] = v.strip()
    T, B = int(resolved["context"]), int(resolved["batch_size"])
    val_fraction, eval_size, eval_batches = float(resolved["val_fraction"]), int(resolved["eval_size"]), \
        int(resolved["eval_batches"])

    chars = list(open(data_path, "rb").read().decode("utf-8"))  # bytes decoded: no newline translation
    N = len(chars)
    vocab = sorted(set(chars))
    ok = check_vocabulary(meta, vocab, "joined", name)
    stoi = {c: i for i, c in enumerate(vocab)}
    ids = [stoi[c] for c in chars]
    n_val = int(N * val_fraction)
    n_train = N - n_val
    starts = []
    start = n_train
    while start + T + 1 <= N and len(starts) < eval_size:
        starts.append(start)
        start += T
    rows = [ids[s:s + T + 1] for s in starts]
    ours, _ = last_val_loss(out)
    loss, token_mean, _ = batched_loss(model, rows, T, B, eval_batches)
    ok &= check(rel(loss, ours) <= RTOL,
                f"{name}: N = {N} characters, V = {len(vocab)}, n_val = {n_val}, {len(rows)} windows of T+1 = {T + 1} "
                f"from {n_train} every {T}, batches of {B}, at most {eval_batches}: val loss {loss:.6f}, tinyformer "
                f"{ours:.6f} (rel diff {rel(loss, ours):.1e}, bound {RTOL:g})")
    wrong_starts = list(range(n_train, N - T, T + 1))[:eval_size]
    wrong, _, _ = batched_loss(model, [ids[s:s + T + 1] for s in wrong_starts], T, B, eval_batches)
    n_batches = min(eval_batches, -(-len(rows) // B))
    print(f"   rules changed: token-weighted mean {token_mean:.6f} (rel {rel(token_mean, ours):.1e}; "
          f"{n_batches} batch(es), {'the last partial' if len(rows[:n_batches * B]) % B else 'all full'}), windows "
          f"every T+1 {wrong:.6f} (rel {rel(wrong, ours):.1e})")
    return ok, rel(wrong, ours) > 10 * RTOL, rel(token_mean, ours) > 10 * RTOL


def tokens_case(a):
    d = os.path.join(a.work_dir, "tokens")
    os.makedirs(d)
    rows = np.random.default_rng(5).integers(0, 7, size=(50, 9)).astype(np.int32)
    np.save(os.path.join(d, "rows.npy"), rows)
    with open(os.path.join(d, "tokens.yaml"), "w") as f:
        f.write("model: {d_model: 16, n_head: 2, n_layer: 1}\n"
                "data: {task: tokens, path: rows.npy, val_fraction: 0.2, eval_size: 6}\n"
                "schedule: {warmup_steps: 0}\ntraining: {batch_size: 4, steps: 4, eval_interval: 4}\n"
                "logging: {attention_interval: 0}\n")
    out = os.path.join(d, "run")
    run([a.app, "train", os.path.join(d, "tokens.yaml"), "--out", out])
    model, meta = torch_gpt_from_checkpoint(os.path.join(out, "checkpoint.safetensors"))
    V = int(rows.max()) + 1
    ok = check_vocabulary(meta, [str(i) for i in range(V)], "spaced", "tokens")
    n_val = min(max(int(50 * 0.2), 1), 49)
    held = rows[50 - n_val:][:6]
    ours, _ = last_val_loss(out)
    loss, token_mean, _ = batched_loss(model, held, 8, 4, 8)
    ok &= check(rel(loss, ours) <= RTOL, f"tokens: 50 rows, the last {n_val} held out, their first 6 in batches of "
                                         f"4 and 2: val loss {loss:.6f}, tinyformer {ours:.6f} (rel "
                                         f"{rel(loss, ours):.1e}); token-weighted mean {token_mean:.6f}")
    return ok, rel(token_mean, ours) > 10 * RTOL


def reverse_rows(seed, eval_size, n=8, alphabet=10):
    """The held-out set of `reverse` (lib/tinyformer/data/tasks.cpp): Rng(seed ^ kEvalStream), each row n symbols
    (below(alphabet)), the separator, the symbols reversed; a repeated source is drawn again."""
    rng = MT19937_64(seed ^ 0x5EEDE7A1C0FFEE01)
    rows, seen = [], set()
    disjoint = alphabet ** n >= 2 * eval_size
    while len(rows) < eval_size:
        src = tuple(rng.below(alphabet) for _ in range(n))
        if disjoint and src in seen:
            continue
        seen.add(src)
        rows.append(list(src) + [alphabet] + list(reversed(src)))
    return rows


def task_case(a):
    out = os.path.join(a.work_dir, "reverse")
    ck = train(a.app, out, "reverse.yaml", "training.steps=30", "schedule.warmup_steps=5", "training.eval_interval=30",
               "logging.attention_interval=0", "data.eval_size=100", "training.batch_size=24",
               "training.eval_batches=4")
    model, meta = torch_gpt_from_checkpoint(ck)
    ok = check_vocabulary(meta, list("0123456789|"), "joined", "reverse")
    ours, ours_acc = last_val_loss(out)
    rows = reverse_rows(1337, 100)
    loss, _, acc = batched_loss(model, rows, 16, 24, 4, scored_from=8)
    ok &= check(rel(loss, ours) <= RTOL and abs(acc - ours_acc) < 1e-12,
                f"reverse: 100 held-out rows regenerated from seed 1337, 4 batches of 24 scored on the 8 answer "
                f"positions: val loss {loss:.6f}, tinyformer {ours:.6f} (rel {rel(loss, ours):.1e}); exact match "
                f"{acc:.4f}, tinyformer {ours_acc:.4f}")
    other, _, _ = batched_loss(model, reverse_rows(1338, 100), 16, 24, 4, scored_from=8)
    return ok, rel(other, ours) > 10 * RTOL


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", required=True)
    ap.add_argument("--logits-tool")
    ap.add_argument("--work-dir", required=True)
    a = ap.parse_args()
    a.app = os.path.abspath(a.app)
    a.logits_tool = a.logits_tool and os.path.abspath(a.logits_tool)
    a.work_dir = os.path.join(os.path.abspath(a.work_dir), "formats")
    shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    torch.set_num_threads(1)

    notes = os.path.join(SOURCE_DIR, "configs", "data", "tinyformer_notes.txt")
    # every character that the vocabulary escapes, or that str.splitlines would take for a line end
    odd = os.path.join(a.work_dir, "odd.txt")
    rng = np.random.default_rng(1)
    alphabet = list("abc de\\\n\r\t") + ["\u2028", "\x85", "\x0b", "\x0c", "\x1c", "é", "€", "😀"]
    with open(odd, "wb") as f:
        f.write("".join(rng.choice(alphabet, size=700)).encode("utf-8"))
    mt = MT19937_64(5489)
    for _ in range(9999):
        mt()
    ok = check(mt() == 9981545732273789042, "the generator is std::mt19937_64 (its 10000th value from the default "
                                            "seed 5489 is the one the C++ standard gives)")
    by_rule = {"windows every T+1": [], "token-weighted mean": [], "another seed": []}
    for name, path, overrides in (
            ("text", notes, ["logging.probe="]),  # configs/text.yaml on another text: T = 64, B = 32, 8 batches
            ("text_T16_B8_1batch", notes, ["model.context=16", "training.batch_size=8", "training.eval_batches=1",
                                           "logging.probe="]),
            ("text_odd", odd, ["model.context=8", "training.batch_size=4", "data.val_fraction=0.25",
                               "data.eval_size=10", "model.d_model=32", "logging.probe="])):
        case_ok, windows, token_mean = text_case(a, name, path, overrides)
        ok &= case_ok
        by_rule["windows every T+1"].append(windows)
        by_rule["token-weighted mean"].append(token_mean)
    case_ok, token_mean = tokens_case(a)
    ok &= case_ok
    by_rule["token-weighted mean"].append(token_mean)
    case_ok, other_seed = task_case(a)
    ok &= case_ok
    by_rule["another seed"].append(other_seed)
    # windows and seeds change the data in every case; a token-weighted mean differs only with a partial batch
    for rule, moved in by_rule.items():
        need = any(moved) if rule == "token-weighted mean" else all(moved)
        ok &= check(need, f"the rule changed to '{rule}' moves the loss beyond 10x the bound in {sum(moved)} of "
                          f"{len(moved)} cases")
    print("formats: PASSED" if ok else "formats: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
