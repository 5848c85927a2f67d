"""Counts a plan's attention ops and those carrying an attribute, per
program: reads the plan's JSON header (after the magic and the section
table, whose binary offsets may hold a '{' byte: the header opens '{"')."""
import json
import sys

with open(sys.argv[1], "rb") as f:
    data = f.read()
start = data.index(b'{"')
header, _ = json.JSONDecoder().raw_decode(data[start:].decode("utf-8", errors="replace"))
for prog in header.get("programs", []):
    ops = [op for op in prog["ops"] if op["kind"].endswith("attention")]
    have = sum(1 for op in ops if sys.argv[2] in op.get("attrs", {}))
    print(f"{prog['name']}: {len(ops)} attention ops, {have} with {sys.argv[2]}")
