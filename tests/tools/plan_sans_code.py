"""Prints a digest of a plan without the bytes NVRTC wrote: plan_sans_code.py PLAN.

genc writes a plan deterministically, but NVRTC's cubins and PTX are not
byte-stable from one process to the next: about one compile in ten of t5's
module numbers PTX registers differently (the same source in one process is
stable; with ASLR off it is stable too, so NVRTC orders something by address).
Plans compare equal through this digest when everything genc decides is the
same: the metadata (kernel entries, launch shapes, archs, profile) and every
blob byte outside the code ranges."""
import hashlib
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
json_off, json_size, blob_off, blob_size = struct.unpack("<4Q", data[16:48])
meta = json.loads(data[json_off:json_off + json_size])
blob = data[blob_off:blob_off + blob_size]
code = []
for section in ("cubins", "ptx"):
    for entry in meta.get("kernels", {}).get(section, []):
        code.append((entry["offset"], entry["bytes"]))
        entry["offset"] = entry["bytes"] = "code"
code.sort()
kept, at = [], 0
for off, n in code:
    kept.append(blob[at:off])
    at = off + n
kept.append(blob[at:])
# What follows the code (the tokenizer) moves with the code's length.
if isinstance(meta.get("tokenizer"), dict) and "offset" in meta["tokenizer"]:
    meta["tokenizer"]["offset"] -= sum(n for off, n in code if off < meta["tokenizer"]["offset"])
h = hashlib.sha256()
h.update(data[:16])
h.update(json.dumps(meta, sort_keys=True).encode())
for part in kept:
    h.update(part)
print("plan %s, %d code ranges left out" % (h.hexdigest(), len(code)))
