"""Writes a copy of a plan with values of its JSON metadata replaced, for the
plan verifier's tests:
edit_plan.py IN OUT PATH=VALUE ...
  PATH: dotted keys and [indexes] into the metadata, e.g.
        programs[0].ops[8].operands[0] or model.max_length
  VALUE: JSON (26, "f16", [1, 2], {"int": 3}); the key is added if absent.
  PATH= with no value deletes the key (or list item).
The blob is copied unchanged; the JSON is rewritten and the header updated."""
import json
import re
import struct
import sys

src, dst = sys.argv[1:3]
d = open(src, "rb").read()
json_off, json_size, blob_off, blob_size = struct.unpack("<4Q", d[16:48])
meta = json.loads(d[json_off:json_off + json_size])
for edit in sys.argv[3:]:
    path, _, value = edit.partition("=")
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    node = meta
    for k in keys[:-1]:
        node = node[k]
    if value == "":
        del node[keys[-1]]
    else:
        node[keys[-1]] = json.loads(value)
text = json.dumps(meta).encode()
new_blob_off = (48 + len(text) + 63) // 64 * 64
header = d[:16] + struct.pack("<4Q", 48, len(text), new_blob_off, blob_size)
out = header + text + b"\0" * (new_blob_off - 48 - len(text)) + d[blob_off:blob_off + blob_size]
open(dst, "wb").write(out)
