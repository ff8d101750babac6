#!/usr/bin/python3
"""One call of the Python module, described by a JSON spec: the Python front end of the generative tester
(generative.py --front python). Each call runs in a process of its own, so that a crash or a hang is seen.

usage: front_python.py SPEC.json     one call
       front_python.py --serve       many: imports the module once, then reads a JSON line [spec, cwd, stderr file]
                                     at a time from stdin, forks a child that runs that call there, writes the child's
                                     pid and then its exit status as JSON lines (a negative one for a signal)

Starting the interpreter and importing NumPy and the module cost about 0.4 CPU s a call (more than the call), and
under qemu-aarch64 about 10 times that: the tester's Python cases go through one server a thread.

Values JSON cannot hold are encoded: {"$float": "nan"}, {"$int": "100000000000000000000"}, {"$bytes": "<hex>"},
{"$complex": [re, im]}, {"$ndarray": [...], "dtype": "float64"}, {"$deep": n} (a list n deep). Each warning the call gives is printed to stderr as one JSON line
{"warning": message}; an exception as {"error": class name, "message": str(e), "mro": [class names]} and exit 1
(130 for KeyboardInterrupt). Exit 0 when the call returned.
"""
import json
import sys
import warnings

import numpy as np


def decode(value):
    if isinstance(value, dict):
        if "$float" in value:
            return float(value["$float"])
        if "$int" in value:
            return int(value["$int"])
        if "$bytes" in value:
            return bytes.fromhex(value["$bytes"])
        if "$ndarray" in value:
            return np.array(decode(value["$ndarray"]), dtype=value.get("dtype"))
        if "$complex" in value:
            return complex(*value["$complex"])
        if "$slice" in value:
            return slice(*decode(value["$slice"]))
        if "$ellipsis" in value:
            return Ellipsis
        if "$tuple" in value:
            return tuple(decode(value["$tuple"]))
        if "$deep" in value:  # a list nested n deep, built without recursion
            deep = 0
            for _ in range(value["$deep"]):
                deep = [deep]
            return deep
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def callback_of(kind):
    if kind == "raise":
        def callback(step, metrics):
            raise ValueError(f"boom from the callback at step {step}")
        return callback, None
    if kind == "stop":
        import tinyformer as tf
        stop = tf.Stop()

        def callback(step, metrics):
            stop.set()
        return callback, stop
    return None, None


def run(spec):
    import tinyformer as tf
    op = spec["op"]
    a = decode(spec.get("args", {}))
    if op == "train":  # (callback and stop given only when set: the tester also measures versions without them)
        callback, stop = callback_of(a.pop("callback", None))
        extra = {k: v for k, v in (("callback", callback), ("stop", stop)) if v is not None}
        return tf.train(a.pop("config"), **extra, **a)
    if op == "config":
        return tf.config_yaml(a.pop("config"), **a)
    if op == "load":
        return tf.load(a["checkpoint"])
    if op in ("sample", "attention", "heads", "ablate", "run_with_cache", "load_state_dict"):
        model = tf.load(a.pop("checkpoint"))
        if op == "sample":
            return model.sample(**a)
        if op == "attention":
            return model.attention(**a)
        if op == "heads":
            return model.heads(**a)
        if op == "ablate":
            return model.ablate(**a)
        if op == "run_with_cache":
            return model.run_with_cache(a["prompt"])
        state = model.state_dict()
        if a.get("value") != "keep":  # "keep" (fronts.py's "same"): the state dict as it was read
            state[a.get("name") or next(iter(state))] = a["value"]
        return model.load_state_dict(state)
    if op == "reshape":
        return tf.tensor(a["data"]).reshape(a["shape"])
    if op == "split":
        return tf.split(tf.tensor(a["data"]), a["sizes"], a.get("dim", 0))
    if op == "set_num_threads":
        return tf.set_num_threads(a["n"])
    if op == "tensor":
        return tf.tensor(a["data"], dtype=a.get("dtype"))
    if op == "register_parameter":
        module = tf.nn.Module()
        return module.register_parameter(a["name"], a["value"])
    if op == "vocabulary":
        return tf.Vocabulary(a["tokens"], a["layout"]) if a["text"] is None else tf.Vocabulary.from_str(a["text"])
    if op == "function":
        return getattr(tf, a["name"])(*a.get("args", []), **a.get("kwargs", {}))
    if op == "einsum":
        return einsum(tf, a)
    if op == "index":
        return index(tf, a)
    if op == "inplace":
        return in_place(tf, a)
    if op == "hook":
        return hook(tf, a)
    raise SystemExit(f"front_python: unknown op {op!r}")


# ---- Python-only calls whose result has a NumPy oracle: a wrong value raises AssertionError, which the tester counts
# as a failure (fronts.NEVER); a refusal is re-raised for the tester's oracle of messages.

def mismatch(what, got, want):
    raise AssertionError(f"{what}: gave {np.asarray(got).tolist()!r}, NumPy gives {np.asarray(want).tolist()!r}")


def einsum(tf, a):
    """tf.einsum against np.einsum on the same float64 operands."""
    operands = [np.arange(1.0, 1.0 + np.prod(s, dtype=int)).reshape(s) / 4 for s in a["shapes"]]
    try:
        want, refused = np.einsum(a["equation"].replace(" ", ""), *operands), None
    except Exception as e:  # noqa: B902 (NumPy's refusal is compared, not reported)
        want, refused = None, e
    got = tf.einsum(a["equation"], *[tf.tensor(o) for o in operands])
    if refused is not None:
        raise AssertionError(f"einsum {a['equation']!r} ran where NumPy refuses ({refused})")
    if got.shape != tuple(np.shape(want)) or not np.allclose(got.numpy(), want, rtol=1e-12, atol=0):
        mismatch(f"einsum {a['equation']!r}", got.numpy(), want)


def index(tf, a):
    """x[key] (and x[key] = value) against NumPy's on arange(24.) as 2x3x4; a refused assignment changes nothing."""
    x = np.arange(24.0).reshape(2, 3, 4)
    t = tf.tensor(x)
    key = a["key"]
    try:
        if "value" in a:
            want = x.copy()
            want[key] = a["value"]
        else:
            want = x[key]
        refused = None
    except Exception as e:  # noqa: B902
        refused = e
    try:
        if "value" in a:
            t[key] = a["value"]
            got = t
        else:
            got = t[key]
    except Exception:
        if not np.array_equal(t.numpy(), x):
            raise AssertionError(f"a refused x[{key!r}] = ... changed x") from None
        raise
    if refused is not None:
        raise AssertionError(f"x[{key!r}] ran where NumPy refuses ({refused})")
    if tuple(got.shape) != np.shape(want) or not np.array_equal(got.numpy(), want):
        mismatch(f"x[{key!r}]", got.numpy(), want)


IN_PLACE = {"add_": np.add, "mul_": np.multiply, "div_": np.divide, "sub_": np.subtract,
            "copy_": lambda x, o: np.broadcast_to(o, x.shape), "fill_": lambda x, o: np.full(x.shape, o),
            "clamp_": lambda x, o: np.maximum(x, o), "pow_": np.power}


def in_place(tf, a):
    """An in-place method on a leaf that requires a gradient, a constant, an op's result or an int64 tensor: a refusal
    leaves the target's values as they were, a change gives NumPy's values (integral for an int64 target); with
    "backward" a backward after the change then gives w.grad as torch would, or is refused with w.grad untouched."""
    x = np.arange(-2.0, 4.0).reshape(2, 3)
    w = tf.tensor(x, requires_grad=True)
    target = {"leaf": lambda: w, "constant": lambda: tf.tensor(x), "result": lambda: w * 2,
              "int": lambda: tf.tensor(x.astype(np.int64))}[a["target"]]()
    operand = a["operand"]
    if isinstance(operand, dict) and operand.get("tensor"):
        operand = tf.tensor(np.asarray(operand["tensor"], dtype=operand["dtype"]))
    before = target.detach().numpy().copy()
    method = a["method"]
    try:
        out = target.zero_() if method == "zero_" else getattr(target, method)(operand)
    except Exception:
        if not np.array_equal(target.detach().numpy(), before):
            raise AssertionError(f"a refused {method} changed its tensor") from None
        raise
    if out is not target:
        raise AssertionError(f"{method} did not return its tensor")
    o = operand.numpy() if isinstance(operand, tf.Tensor) else operand
    with np.errstate(all="ignore"):
        want = np.zeros_like(before) if method == "zero_" else IN_PLACE[method](before, o)
    got = target.detach().numpy()
    if a["target"] == "int" and not np.array_equal(want, np.trunc(want)):
        raise AssertionError(f"{method} wrote {want.tolist()} into an int64 tensor (torch refuses)")
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=0, equal_nan=True):
        mismatch(method, got, want)
    if a.get("backward") and target.requires_grad:
        loss = (target * target).sum()
        try:
            loss.backward()
        except Exception:
            if w.grad is not None:
                raise AssertionError("a refused backward left a gradient in w") from None
            raise


def hook(tf, a):
    """model.run_with_hooks with one forward hook; a hook that returns None or its input leaves the logits alone. With
    dir "bwd" the hook is on the gradient there, and the parameters' gradients are checked instead (hook_backward)."""
    model = tf.load(a["checkpoint"])
    plain = model(a["prompt"]).numpy()
    kind = a["fn"]

    def fn(activation, hook):
        if kind == "raise":
            raise ValueError(f"boom from the hook at {hook.name}")
        return {"none": None, "same": activation, "twice": activation * 2, "numpy": np.asarray(activation),
                "string": "x", "wrong_shape": activation.reshape(-1)[:1], "int": activation.long(),
                "float64": activation.double()}[kind]

    if a.get("dir") == "bwd":
        return hook_backward(model, a, fn)
    logits = model.run_with_hooks(a["prompt"], fwd_hooks=[(a["name"], fn)])
    # a hook inside attention makes that layer take the composed ops, which round otherwise than the fused kernel
    # (docs/api.md): the same bits elsewhere, the same values to rounding there (seen on ARM64's kernels)
    same = (lambda x, y: np.allclose(x, y, rtol=1e-5, atol=1e-6)) if ".attn." in str(a["name"]) else np.array_equal
    if kind in ("none", "same", "numpy") and not same(logits.numpy(), plain):
        mismatch(f"a hook returning {kind} at {a['name']}", logits.numpy(), plain)


def hook_backward(model, a, fn):
    """A backward hook: one that answers None or its gradient leaves every parameter's gradient as the plain backward's
    (to rounding: a hook inside attention takes the composed ops); a refused backward leaves no gradient anywhere."""
    model(a["prompt"], return_type="loss").backward()
    want = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
    model.zero_grad()
    loss = model.run_with_hooks(a["prompt"], return_type="loss", bwd_hooks=[(a["name"], fn)])
    try:
        loss.backward()
    except Exception:
        if any(p.grad is not None for _, p in model.named_parameters()):
            raise AssertionError("a refused backward left a gradient in a parameter") from None
        raise
    if a["fn"] in ("none", "same", "numpy"):
        for n, p in model.named_parameters():
            if not np.allclose(p.grad.numpy(), want[n], rtol=1e-4, atol=1e-6):
                mismatch(f"{n}'s gradient with a backward hook returning {a['fn']} at {a['name']}", p.grad.numpy(),
                         want[n])


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    code = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run(spec)
        except KeyboardInterrupt as e:
            print(json.dumps({"error": type(e).__name__, "message": str(e), "mro": ["KeyboardInterrupt"]}),
                  file=sys.stderr)
            code = 130
        except Exception as e:  # noqa: B902 (every exception is reported for the oracle)
            print(json.dumps({"error": type(e).__name__, "message": str(e),
                              "mro": [k.__name__ for k in type(e).__mro__]}), file=sys.stderr)
            code = 1
    for w in caught:
        print(json.dumps({"warning": str(w.message)}), file=sys.stderr)
    sys.exit(code)  # through the interpreter's teardown: a crash at exit shows as a signal


def serve():
    import os
    import gc
    import tinyformer  # noqa: F401 (loaded once, before the forks)
    gc.freeze()  # the collector leaves what the server holds alone: fewer of its pages copied in each child
    for line in iter(sys.stdin.readline, ""):
        spec_path, cwd, err_path = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the call's own process: it leaves through main's sys.exit and the interpreter's teardown
            os.chdir(cwd)
            for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, os.devnull, os.O_WRONLY),
                                    (2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                opened = os.open(path, flags, 0o644)
                os.dup2(opened, fd)
                os.close(opened)
            sys.argv = [sys.argv[0], spec_path]
            main()
        print(json.dumps(pid), flush=True)
        print(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["--serve"] else main()
