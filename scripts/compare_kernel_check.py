#!/usr/bin/python3
"""Compares two outputs of the kernel check (tests/tools/kernel_isa_check.cpp): the same arrays, each within 1e-5
(float) or 1e-12 (double) of its largest value. scripts/qemu_portable.sh compares the x86-64 levels with x86-64-v2
this way, scripts/qemu_aarch64.sh the ARM64 kernels with x86-64's. Usage: compare_kernel_check.py BASE OTHER"""
import sys

TOLERANCE = {"float": 1e-5, "double": 1e-12}  # relative to the array's largest value


def arrays(path):
    """{name: values} of an output; its first line is the level ("level x86-64-v2", "level native")."""
    out = {}
    for line in list(open(path))[1:]:
        values, label = [], []
        for w in line.split():
            try:
                values.append(float.fromhex(w))
            except ValueError:
                label.append(w)
        out[" ".join(label)] = values
    return out


def main(base_path, other_path):
    base, other = arrays(base_path), arrays(other_path)
    base_level, level = (open(p).readline().split()[1] for p in (base_path, other_path))
    if base.keys() != other.keys():
        sys.exit(f"FAIL: the arrays differ: {sorted(base.keys() ^ other.keys())}")
    worst = {"float": 0.0, "double": 0.0}
    for name, a in base.items():
        b = other[name]
        kind = name.split()[0]
        scale = max(max(abs(v) for v in a), 1e-30)
        error = max(abs(x - y) for x, y in zip(a, b)) / scale
        if len(a) != len(b) or not error <= TOLERANCE[kind]:  # a NaN fails too
            sys.exit(f"FAIL: {name}: {level} differs from {base_level} by {error:.3g} of the largest value "
                     f"(tolerance {TOLERANCE[kind]})")
        worst[kind] = max(worst[kind], error)
    print(f"kernels at {level} agree with {base_level} on {len(base)} arrays (float within 1e-5, double within 1e-12; "
          f"largest differences {worst['float']:.2g} and {worst['double']:.2g})")


if __name__ == "__main__":
    main(*sys.argv[1:3])
