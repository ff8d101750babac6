#!/usr/bin/python3
"""One call of the Python module, described by a JSON spec: the Python front end of the generative tester
(generative.py --front python). Run in a process of its own, so that a crash or a hang is seen.

usage: front_python.py SPEC.json

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
    raise SystemExit(f"front_python: unknown op {op!r}")


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


if __name__ == "__main__":
    main()
