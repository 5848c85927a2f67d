"""Writes the graph of tests/onnx/matmul-nbits.onnxtxt: MatMulNBits nodes
(com.microsoft) over random codes, scales and zero points, one per form the
importer takes, as ONNX text (protoc --encode reads it). Run once; the test
file keeps its output (`python3 tests/tools/make_nbits_onnx.py > body`).

Each initializer sits on one line: npy_test.py's `initializer(NAME)` reads
them back for the numpy reference.
"""
import numpy as np

rng = np.random.default_rng(48)

ONNX_TYPE = {np.float32: 1, np.uint8: 2, np.float16: 10}


def raw(a):
    return "".join("\\%03o" % b for b in np.ascontiguousarray(a).tobytes())


def initializer(name, a):
    dims = " ".join(f"dims: {d}" for d in a.shape)
    return f'  initializer {{ name: "{name}" {dims} data_type: {ONNX_TYPE[a.dtype.type]} raw_data: "{raw(a)}" }}'


def node(name, inputs, output, K, N, bits, block):
    ins = " ".join(f'input: "{i}"' for i in inputs)
    attrs = "".join(f' attribute {{ name: "{k}" i: {v} type: INT }}'
                    for k, v in (("K", K), ("N", N), ("bits", bits), ("block_size", block), ("accuracy_level", 4)))
    return f'  node {{ {ins} output: "{output}" name: "{name}" op_type: "MatMulNBits" domain: "com.microsoft"{attrs} }}'


# (name, K, N, bits, block, zero points, scale dtype, scales 2-D, A's shape, bias)
CASES = [
    ("q4_default", 80, 6, 4, 32, None, np.float32, False, [3, 80], False),
    ("q4_packed_b16", 80, 5, 4, 16, "packed", np.float16, True, [2, 80], False),
    ("q8_float", 128, 7, 8, 64, "float", np.float32, False, [12, 128], True),
    ("q8_packed", 96, 9, 8, 32, "packed", np.float32, False, [1, 4, 96], False),
    ("q4_float_rows", 64, 40, 4, 32, "float", np.float16, False, [20, 64], False),
]

nodes, inits, inputs, outputs = [], [], [], []
for name, K, N, bits, block, zp, sdt, s2d, ashape, bias in CASES:
    blocks = -(-K // block)
    blob = block * bits // 8
    b = rng.integers(0, 256, size=(N, blocks, blob), dtype=np.uint8)
    s = (rng.standard_normal((N, blocks)) * 0.05).astype(sdt)
    inits.append(initializer(f"{name}.B", b))
    inits.append(initializer(f"{name}.scales", s if s2d else s.reshape(-1)))
    ins = [f"a_{name}", f"{name}.B", f"{name}.scales"]
    if zp == "packed":
        z = rng.integers(0, 256, size=(N * ((blocks * bits + 7) // 8),), dtype=np.uint8)
        inits.append(initializer(f"{name}.zp", z))
        ins.append(f"{name}.zp")
    elif zp == "float":
        z = (rng.standard_normal((N * blocks,)) * 3 + 2 ** (bits - 1)).astype(sdt)
        inits.append(initializer(f"{name}.zp", z))
        ins.append(f"{name}.zp")
    if bias:
        while len(ins) < 5:
            ins.append("")
        inits.append(initializer(f"{name}.bias", rng.standard_normal((N,)).astype(np.float32)))
        ins.append(f"{name}.bias")
    nodes.append(node(name, ins, f"y_{name}", K, N, bits, block))
    dims = " ".join(f"dim {{ dim_value: {d} }}" for d in ashape)
    inputs.append(f'  input {{ name: "a_{name}" type {{ tensor_type {{ elem_type: 1 shape {{ {dims} }} }} }} }}')
    outputs.append(f'  output {{ name: "y_{name}" type {{ tensor_type {{ elem_type: 1 }} }} }}')

print('ir_version: 8')
print('opset_import { domain: "" version: 17 }')
print('opset_import { domain: "com.microsoft" version: 1 }')
print('graph {')
print('  name: "nbits"')
for line in nodes + inits + inputs + outputs:
    print(line)
print('}')
