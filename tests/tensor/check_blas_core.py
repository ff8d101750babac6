#!/usr/bin/python3
"""OpenBLAS's core type as tinyformer chooses it when it loads (tensor/blas_core.hpp), through the test tool
blas_core in fresh processes: without OPENBLAS_CORETYPE the core type OpenBLAS runs is at least the class of its own
choice, and where its own choice was below the best this CPU allows, tinyformer's is one of this CPU's core types, of
a higher class; a core type the user sets is kept, a worse one too. And 600 starts of the app (`--version`, one after
another) all end well: choosing again once raced with OpenBLAS's starting worker threads and crashed one start in 130 to
one in 30 on the Emerald Rapids guest (SIGSEGV in gotoblas_dynamic_init); the small tool starts too fast to meet it.
A few seconds."""
import argparse
import json
import os
import subprocess
import sys

CLASSES = {"prescott": 1, "core2": 1, "penryn": 1, "dunnington": 1, "atom": 1, "nehalem": 2, "sandybridge": 3,
           "bulldozer": 3, "piledriver": 3, "steamroller": 3, "excavator": 3, "haswell": 4, "zen": 4, "skylakex": 5,
           "cooperlake": 6, "sapphirerapids": 7}


def core_class(name):
    return CLASSES.get(name.lower(), 0)


def choice(tool, coretype):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype is not None:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([tool], env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def starts(argv, n):
    """The exit codes of n fresh starts of argv, one after another, that are not 0 (a crash is -11)."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    codes = [subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
             for _ in range(n)]
    return [code for code in codes if code != 0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--app", required=True)
    args = ap.parse_args()
    free = choice(args.tool, None)
    print(f"without OPENBLAS_CORETYPE: {free}")
    assert core_class(free["running"]) >= core_class(free["own"]), free
    if free["candidates"]:
        assert free["cpu_best"] == free["candidates"][0], free
    if free["decided_by"] == "tinyformer":
        assert core_class(free["running"]) > core_class(free["own"]), free
        assert free["running"].lower() in [c.lower() for c in free["candidates"]], free
    else:
        assert free["running"] == free["own"], free
        assert free["decided_by"].startswith("openblas"), free
        if free["decided_by"] == "openblas":
            assert core_class(free["own"]) >= core_class(free["cpu_best"]), free
    kept = [free["own"]] + [c for c in free["candidates"] if core_class(c) <= core_class(free["running"])][-1:]
    for coretype in kept:  # a core type the user sets is kept, the worse one OpenBLAS chose itself too
        user = choice(args.tool, coretype)
        print(f"OPENBLAS_CORETYPE={coretype}: {user}")
        assert user["decided_by"] == "OPENBLAS_CORETYPE", user
        assert user["running"] == user["own"], user
        assert user["running"].lower() == coretype.lower(), user
    bad = starts([args.app, "--version"], 600)
    print(f"600 starts of the app without OPENBLAS_CORETYPE: {len(bad)} did not end well {bad[:10]}")
    assert not bad, bad
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
