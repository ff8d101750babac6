#!/usr/bin/env python3
"""Reads a safetensors file (F32/F64/I32/I64) with numpy only: read_safetensors(path) -> (arrays, metadata).
Run as a script to list the tensors: python3 scripts/read_safetensors.py model.safetensors"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = memoryview(blob)[8 + n:]
    arrays = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        arrays[name] = np.frombuffer(data[begin:end], dtype=DTYPES[e["dtype"]]).reshape(e["shape"]).copy()
    return arrays, metadata


if __name__ == "__main__":
    arrays, metadata = read_safetensors(sys.argv[1])
    print("metadata:", metadata)
    for name, a in arrays.items():
        print(f"{name}: {a.dtype} {list(a.shape)}")
