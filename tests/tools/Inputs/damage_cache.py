"""Damages one entry of a kernel cache folder: damage_cache.py DIR flip|truncate.

flip: one byte in the middle of the code inverted (the size unchanged);
truncate: the entry cut to half its length. The entry chosen is the one of
sm_90 code when there is one (any, else), found by its cubin's arch name."""
import os
import sys

folder, how = sys.argv[1], sys.argv[2]
entries = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".kc"))
target = next((e for e in entries if b"sm_90" in open(e, "rb").read()), entries[0])
data = bytearray(open(target, "rb").read())
if how == "flip":
    data[len(data) // 2] ^= 0xFF
else:
    data = data[: len(data) // 2]
open(target, "wb").write(bytes(data))
