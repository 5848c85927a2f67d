"""Writes the data file of Inputs/external.onnxtxt: w_f32 = 0..19 (f32) at 0,
w_i64 = 100..119 at 80, one pad byte, w_odd = 0.5 * (0..16) (f32) at 241.
`--truncate N` keeps only the first N bytes."""
import struct
import sys

path = sys.argv[1]
data = struct.pack("<20f", *range(20)) + struct.pack("<20q", *range(100, 120))
data += b"\0" + struct.pack("<17f", *[0.5 * i for i in range(17)])
if len(sys.argv) > 3 and sys.argv[2] == "--truncate":
    data = data[: int(sys.argv[3])]
with open(path, "wb") as f:
    f.write(data)
