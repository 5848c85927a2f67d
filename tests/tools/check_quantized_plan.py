"""Checks the 4/8-bit weights of a plan compiled with `genc compile --weights`
against the float weights of the ONNX model it came from:

  check_quantized_plan.py PLAN MODEL.onnx BITS GROUP [--zero-point] [--lm-head NAME]

Reads the plan's metadata and blob (runtime/plan/PlanFormat.h), dequantizes
every matmul_nbits' codes, scales and zero points with numpy from the
layout's definition (runtime/plan/NBitsLayout.h: W[k, n] = (q - z) * s, 4-bit
codes low nibble first), maps each merged weight ("a.q4+b.q4") back to the
model's initializers (stacked along n) and requires round to nearest: every
weight within half a step |s| of its float value, codes at either end of
the range (clamped) within one step (and the f16 rounding of the scale). Prints one line per check:

  N weights quantized (bits, group): max err / step = x (clamped y), rms err / rms w = z: ok
"""
import json
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DTYPES = {"f32": np.float32, "f16": np.float16, "u8": np.uint8}


def plan_weights(path):
    d = open(path, "rb").read()
    jo, js, bo, _ = struct.unpack("<4Q", d[16:48])
    meta = json.loads(d[jo:jo + js])
    out = {}
    for w in meta["weights"]:
        a = np.frombuffer(d, DTYPES[w["dtype"]], int(np.prod(w["shape"])), bo + w["offset"])
        out[w["name"]] = a.reshape(w["shape"])
    ops = []
    for p in meta["programs"]:
        for op in p["ops"]:
            if op["kind"] == "matmul_nbits":
                ops.append(([p["values"][v] for v in op["operands"]], {k: v["int"] for k, v in op["attrs"].items()}))
    return meta, out, ops


def dequantize(codes, scales, zp, bits, block, K):
    N, blocks, _ = codes.shape
    q = np.stack([codes & 15, codes >> 4], -1).reshape(N, blocks, block) if bits == 4 else codes
    if zp is None:
        z = np.full((N, blocks), 2.0 ** (bits - 1), np.float32)
    elif zp.dtype == np.uint8:
        z = (np.stack([zp & 15, zp >> 4], -1).reshape(N, -1)[:, :blocks] if bits == 4 else zp).astype(np.float32)
    else:
        z = zp.astype(np.float32)
    s = scales.astype(np.float32)
    w = (q.astype(np.float32) - z[:, :, None]) * s[:, :, None]
    return w.reshape(N, -1)[:, :K], np.repeat(np.abs(s), block, axis=1)[:, :K], q.reshape(N, -1)[:, :K]


def main():
    plan, model, bits, group = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    zero_point = "--zero-point" in sys.argv
    lm_head = sys.argv[sys.argv.index("--lm-head") + 1] if "--lm-head" in sys.argv else None
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    meta, weights, ops = plan_weights(plan)
    seen, worst, worst_clamped, err2, w2 = set(), 0.0, 0.0, 0.0, 0.0
    ok = True
    suffix = ".q4" if bits == 4 else ".q8"
    for operands, attrs in ops:
        names = [weights_name(meta, v) for v in operands[1:]]
        if names[0] in seen:
            continue
        seen.add(names[0])
        if attrs["bits"] != bits or attrs["block_size"] != group or (len(names) == 3) != zero_point:
            print(f"{names[0]}: FAIL: bits {attrs['bits']}, block {attrs['block_size']}, {len(names)} weights")
            ok = False
            continue
        parts = [n[: -len(suffix)] for n in names[0].split("+")]
        # The float weights stacked along n ([K, N] initializers, or [N, K] ones read transposed).
        K = operands[0]["shape"][-1]
        # MatMul weights are [K, N]; a tied embedding read transposed is [N, K].
        want = np.concatenate([inits[p].T if inits[p].shape[0] == K else inits[p] for p in parts], axis=0)
        want = want.astype(np.float32)
        got, step, q = dequantize(weights[names[0]], weights[names[1]], weights[names[2]] if zero_point else None,
                                  bits, group, K)
        if got.shape != want.shape:
            print(f"{names[0]}: FAIL: {got.shape} against the model's {want.shape}")
            ok = False
            continue
        err = np.abs(got - want) / np.maximum(step, 1e-30)
        top = 15 if bits == 4 else 255
        clamped = (q == 0) | (q == top) | ((q == 1) & (bits == 8) & (not zero_point))
        worst = max(worst, float(np.where(clamped, 0, err).max()))
        worst_clamped = max(worst_clamped, float(np.where(clamped, err, 0).max()))
        err2 += float(((got - want) ** 2).sum())
        w2 += float((want ** 2).sum())
    if lm_head is not None:
        quantized = any(lm_head == n[: -len(suffix)] for name in seen for n in name.split("+"))
        print(f"lm head {lm_head}: {'quantized' if quantized else 'kept'}")
    # Clamped codes: one step, and the f16 rounding of the scale the extreme
    # element was measured against (8 x 2^-11 of a step).
    ok &= worst <= 0.5 + 1e-4 and worst_clamped <= 1.0 + 8 / 2048 + 1e-4 and len(seen) > 0
    print(f"{len(seen)} weights quantized ({bits}-bit, group {group}{', zero points' if zero_point else ''}): "
          f"max err / step = {worst:.4f} (clamped {worst_clamped:.4f}), rms err / rms w = {np.sqrt(err2 / w2):.4f}: "
          + ("ok" if ok else "FAIL"))
    return 0 if ok else 1


def weights_name(meta, value):
    return meta["weights"][value["index"]]["name"]


if __name__ == "__main__":
    sys.exit(main())
