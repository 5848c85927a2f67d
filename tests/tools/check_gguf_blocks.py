"""The converter keeps GGUF's Q4_0 / Q4_1 / Q8_0 blocks as MatMulNBits
(tools/gguf_weights.py): dequantized by MatMulNBits' definition, (q - z) * s
in f32, they must give the gguf package's dequantizer's numbers.

  check_gguf_blocks.py TMPDIR

Quantizes random matrices (and blocks of one value, which Q4_1 stores with
d = 0) with the gguf package, writes and reads them back as a GGUF file,
converts each, and prints per type the largest difference in units of the
f32 spacing of the block's largest value: 0 for Q4_0 and Q8_0 (bit for
bit); Q4_1's -m / d is rounded once, so its values may differ in the last
bits (the check allows 4 ulps of the block's magnitude).
"""
import os
import sys

import gguf
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gguf_weights as gw  # noqa: E402

Q = gguf.GGMLQuantizationType


def main():
    path = os.path.join(sys.argv[1], "blocks.gguf")
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(path, "llama")
    for t in (Q.Q4_0, Q.Q4_1, Q.Q8_0):
        a = (rng.standard_normal((24, 256)) * rng.uniform(0.001, 2, (24, 1))).astype(np.float32)
        a[0, :32] = 0.375   # one value: Q4_1 keeps it as d = 0, m = 0.375
        a[1, 32:64] = -1.5
        a[2, :64] = 0
        a[3, :32] += 40.0   # far from zero: Q4_1's m / d is large
        w.add_tensor(f"w.{t.name}", gguf.quants.quantize(a, t), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    ok = True
    for t in gguf.GGUFReader(path).tensors:
        want = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(24, 256)
        got = gw.dequantized_nbits(gw.nbits(t), 256)
        blocks = np.abs(want).reshape(24, -1, 32).max(-1, keepdims=True)
        ulp = np.spacing(np.maximum(blocks, np.float32(1e-30)).astype(np.float32))
        err = float((np.abs(got - want).reshape(24, -1, 32) / ulp).max())
        zero_d = int((gw._half(gw.blocks_of(t)) == 0).sum()) if t.tensor_type == Q.Q4_1 else 0
        limit = 0.0 if t.tensor_type in (Q.Q4_0, Q.Q8_0) else 4.0
        good = err <= limit and np.isfinite(got).all()
        ok &= good
        print(f"{t.tensor_type.name}: max |MatMulNBits - gguf| = {err:g} ulp of the block's largest value"
              + (f" ({zero_d} blocks with d = 0)" if t.tensor_type == Q.Q4_1 else "") + (": ok" if good else ": FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
