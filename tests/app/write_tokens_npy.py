"""Writes a tokens .npy for the MPI tests: the bytes of a text file cut into rows of T+1 ids (int32, no numpy)."""
import struct
import sys

text, out, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(text, "rb").read()
rows = len(data) // width
header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, width)
header += " " * (63 - (10 + len(header)) % 64) + "\n"  # the data starts at a multiple of 64 bytes
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
    f.write(struct.pack("<%di" % (rows * width), *data[: rows * width]))
