"""Writes .npy files that `genc eval` must reject (or, for v2, accept) to PREFIX.*.npy:
magic, truncated, fortran, bigendian, complex, header (garbage dict), trailing,
f32_4x2, i64_4x2, f32_8, ... (valid, for dtype, rank and shape errors), v2 (valid v2 format)."""
import sys

import numpy as np

prefix = sys.argv[1]
good = np.arange(8, dtype=np.float32).reshape(4, 2)
np.save(f"{prefix}.f32_4x2.npy", good)
np.save(f"{prefix}.i64_4x2.npy", good.astype(np.int64))
np.save(f"{prefix}.f32_8.npy", good.reshape(8))
np.save(f"{prefix}.f32_5x3.npy", np.zeros((5, 3), np.float32))
np.save(f"{prefix}.f32_3x4.npy", np.ones((3, 4), np.float32))
np.save(f"{prefix}.f32_5.npy", np.ones((5,), np.float32))
np.save(f"{prefix}.i64_4x7.npy", np.zeros((4, 7), np.int64))
np.save(f"{prefix}.i64_3x7.npy", np.zeros((3, 7), np.int64))
np.save(f"{prefix}.i64_3.npy", np.array([5, 7, -9], np.int64))
with open(f"{prefix}.magic.npy", "wb") as f:
    f.write(b"PK\x03\x04 this is a zip, not an npy")
raw = open(f"{prefix}.f32_4x2.npy", "rb").read()
with open(f"{prefix}.truncated.npy", "wb") as f:
    f.write(raw[:-5])
with open(f"{prefix}.trailing.npy", "wb") as f:
    f.write(raw + b"\0\0\0\0")
np.save(f"{prefix}.fortran.npy", np.asfortranarray(good))
np.save(f"{prefix}.bigendian.npy", good.astype(">f4"))
np.save(f"{prefix}.complex.npy", good.astype(np.complex64))
header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (4, two), }"
header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
with open(f"{prefix}.header.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + good.tobytes())
with open(f"{prefix}.v2.npy", "wb") as f:
    np.lib.format.write_array(f, good, version=(2, 0))
