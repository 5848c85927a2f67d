"""Writes a copy of a plan with its `kernels` metadata damaged, for the
loader's error tests: damage_plan_kernels.py IN OUT WHAT
  WHAT = cubin-offset | kernel-name | arch"""
import json
import struct
import sys

src, dst, what = sys.argv[1:4]
d = open(src, "rb").read()
json_off, json_size, blob_off, blob_size = struct.unpack("<4Q", d[16:48])
meta = json.loads(d[json_off:json_off + json_size])
k = meta["kernels"]
if what == "cubin-offset":
    k["cubins"][0]["offset"] = blob_size - 8
elif what == "kernel-name":
    k["entries"][0]["name"] = "fused_nowhere"
elif what == "arch":
    k["cubins"][0]["arch"] = "volta"
else:
    sys.exit("unknown damage " + what)
text = json.dumps(meta).encode()
new_blob_off = (48 + len(text) + 63) // 64 * 64
header = d[:16] + struct.pack("<4Q", 48, len(text), new_blob_off, blob_size)
out = header + text + b"\0" * (new_blob_off - 48 - len(text)) + d[blob_off:blob_off + blob_size]
open(dst, "wb").write(out)
