#!/usr/bin/env python3
"""Golden data for runtime/search's logits processors, made by Hugging Face's own
processor classes (transformers + torch, e.g. /work/venv-bench/bin/python):

  python tools/make_processor_golden.py > tests/unit/runtime/ProcessorGolden.inc

Each case: a processor with its arguments, a row of float32 scores (some -inf),
the row's length (HF's input_ids.shape[-1]) and the row HF returns, as C++
initialisers (floats as their bit patterns, so -inf and every rounding survive).
"""
import struct

import torch
from transformers.generation import logits_process as lp

V = 40
g = torch.Generator().manual_seed(7)


def bits(t):
    return ", ".join("0x%08xu" % struct.unpack("<I", struct.pack("<f", float(x)))[0] for x in t.tolist())


cases = []


def case(name, proc, cur_len, args):
    scores = torch.randn(1, V, generator=g) * 4
    scores[0, 3] = -float("inf")
    ids = torch.zeros(1, cur_len, dtype=torch.long)
    out = proc(ids, scores.clone())
    cases.append((name, args, cur_len, scores[0], out[0]))


eos = [2, 3, 7, 7]  # 3 is -inf in every row: the penalty skips it
for cur in (3, 5, 6):
    case("suppress", lp.SuppressTokensLogitsProcessor([1, 5, 39]), cur, [1, 5, 39])
    case("begin_suppress", lp.SuppressTokensAtBeginLogitsProcessor([4, 9], begin_index=5), cur, [4, 9, 5])
    case("forced_eos", lp.ForcedEOSTokenLogitsProcessor(max_length=7, eos_token_id=[2, 7]), cur, [2, 7, 7])
    case("min_length", lp.MinLengthLogitsProcessor(6, [2, 7]), cur, [2, 7, 6])
for cur in (1, 2):
    case("forced_bos", lp.ForcedBOSTokenLogitsProcessor(11), cur, [11])
for cur in (4, 5, 9):
    # start index 1 after a 3-token prompt: regulation starts at 4; factor 1.5
    case("exp_decay", lp.ExponentialDecayLengthPenalty((1, 1.5), eos, 3), cur, eos + [4, 15])

print("// Made by tools/make_processor_golden.py from Hugging Face's processor classes; do not edit.")
print("// name, args, cur_len, scores (f32 bits), HF's result (f32 bits)")
for name, args, cur, s, o in cases:
    print(f'{{"{name}", {{{", ".join(str(a) for a in args)}}}, {cur}, {{{bits(s)}}}, {{{bits(o)}}}}},')
