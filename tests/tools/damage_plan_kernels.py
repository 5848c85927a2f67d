"""Writes a copy of a plan with its `kernels` metadata (or what the kernels
rely on, or its profile) damaged, for the loader's error tests:
damage_plan_kernels.py IN OUT WHAT
  WHAT = cubin-offset | kernel-name | arch | activation-dtype | weight-dtype |
         activation-as-bf16 | dtype-count | arena-align | weight-align |
         legacy (no storage dtypes, as plans written before they existed) |
         no-profile (as plans written before profiles) | profile-number |
         tokenizer-offset | tokenizer-bytes | tokenizer-format | tokenizer-json
         (the tokenizer section, which lies beside the kernels in the blob)"""
import json
import struct
import sys

src, dst, what = sys.argv[1:4]
d = open(src, "rb").read()
json_off, json_size, blob_off, blob_size = struct.unpack("<4Q", d[16:48])
meta = json.loads(d[json_off:json_off + json_size])
k = meta.get("kernels")
tok = meta.get("tokenizer")


def call_site(name):
    """The program and fused op that run kernel `name`."""
    for p in meta["programs"]:
        for op in p["ops"]:
            if op["kind"] == "fused" and op["attrs"]["body"]["str"] == name:
                return p, op
    sys.exit("no call site for " + name)


def operand(storage, dtype):
    """(kernel entry, operand index) of the first `dtype` operand stored as `storage`."""
    for e in k["entries"]:
        p, op = call_site(e["name"])
        for i, v in enumerate(op["operands"]):
            if p["values"][v]["storage"] == storage and p["values"][v]["dtype"] == dtype:
                return e, i
    sys.exit("no %s operand stored as %s" % (dtype, storage))


if what == "cubin-offset":
    k["cubins"][0]["offset"] = blob_size - 8
elif what == "kernel-name":
    k["entries"][0]["name"] = "fused_nowhere"
elif what == "arch":
    k["cubins"][0]["arch"] = "volta"
elif what == "activation-dtype":
    meta["activation_dtype"] = "i64"
elif what == "weight-dtype":  # an f16 weight read as f32
    e, i = operand("weight", "f16")
    e["input_dtypes"][i] = "f32"
elif what == "activation-as-bf16":  # in an f16 plan
    e, i = operand("arena", "f32")
    e["input_dtypes"][i] = "bf16"
elif what == "dtype-count":
    k["entries"][0]["output_dtypes"].append("f32")
elif what == "arena-align":
    p = meta["programs"][0]
    v = next(v for v in p["values"]
             if v["storage"] == "arena" and v["offset"] + v["max_bytes"] + 16 <= p["arena_bytes"])
    v["offset"] += 4
elif what == "legacy":
    del meta["activation_dtype"]
    for e in k["entries"]:
        del e["input_dtypes"], e["output_dtypes"]
    # Old plans sized every float activation as f32 and recorded no storage:
    # doubling the arena and every offset leaves room for that.
    for p in meta["programs"]:
        p["arena_bytes"] *= 2
        for v in p["values"]:
            if v["storage"] == "arena":
                v["offset"] *= 2
                if v.pop("stored", v["dtype"]) != v["dtype"]:
                    v["max_bytes"] *= 2
elif what == "weight-align":
    meta["weights"][0]["offset"] += 4
elif what == "no-profile":
    del meta["profile"]
elif what == "profile-number":
    meta["profile"] = 8
elif what == "tokenizer-offset":
    tok["offset"] = blob_size - 8
elif what == "tokenizer-bytes":
    tok["bytes"] = -1
elif what == "tokenizer-format":
    tok["format"] = "tokenizer.model"
elif what == "tokenizer-json":  # the section points at the weights instead
    tok["offset"] = meta["weights"][0]["offset"]
else:
    sys.exit("unknown damage " + what)
text = json.dumps(meta).encode()
new_blob_off = (48 + len(text) + 63) // 64 * 64
header = d[:16] + struct.pack("<4Q", 48, len(text), new_blob_off, blob_size)
out = header + text + b"\0" * (new_blob_off - 48 - len(text)) + d[blob_off:blob_off + blob_size]
open(dst, "wb").write(out)
