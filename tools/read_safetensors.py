#!/usr/bin/env python3
"""Reads a safetensors file (F32/F64/I32/I64) with numpy only: read_safetensors(path) -> (arrays, metadata);
write_safetensors(path, arrays, metadata) writes one as tinyformer does (metadata first, tensors in the given
order, the data section 8-byte aligned).
Run as a script to list the tensors: python3 tools/read_safetensors.py model.safetensors"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}
DTYPE_NAMES = {(np.dtype(v).kind, np.dtype(v).itemsize): k for k, v in DTYPES.items()}


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


def write_safetensors(path, arrays, metadata=None):
    """arrays: name -> numpy array of float32/float64/int32/int64 (written little-endian, C order, in the dict's
    order); metadata: str -> str. Writes to path + ".tmp" and renames, so a reader never sees half a file."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in arrays.items():
        a = np.asarray(a)
        kind = DTYPE_NAMES.get((a.dtype.kind, a.dtype.itemsize))
        if kind is None:
            raise ValueError(f"{name}: dtype {a.dtype} cannot be written (F32, F64, I32, I64)")
        blob = np.ascontiguousarray(a, dtype=DTYPES[kind]).tobytes()
        header[name] = {"dtype": kind, "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    arrays, metadata = read_safetensors(sys.argv[1])
    print("metadata:", metadata)
    for name, a in arrays.items():
        print(f"{name}: {a.dtype} {list(a.shape)}")
