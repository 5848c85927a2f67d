"""Writes an ONNX model over 64 MB (protobuf's default parse limit) using only
the standard library: one f32 initializer `w` of N elements (raw_data) and
`y = Identity(w)`. Usage: make_big_model.py OUT.onnx N"""
import struct
import sys


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, payload):  # length-delimited
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def int_field(num, value):
    return varint(num << 3) + varint(value)


path, n = sys.argv[1], int(sys.argv[2])
tensor = int_field(1, n) + int_field(2, 1) + field(8, b"w") + field(9, bytes(4 * n))
node = field(1, b"w") + field(2, b"y") + field(3, b"id") + field(4, b"Identity")
graph = field(1, node) + field(2, b"g") + field(5, tensor) + field(12, field(1, b"y"))
model = int_field(1, 8) + field(7, graph) + field(8, int_field(2, 17))
with open(path, "wb") as f:
    f.write(model)
