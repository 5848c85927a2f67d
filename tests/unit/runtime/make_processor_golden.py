#!/usr/bin/env python3
"""Golden data for runtime/search's logits processors, made by Hugging Face's own
processor classes (transformers + torch, e.g. /work/venv-bench/bin/python):

  python tests/unit/runtime/make_processor_golden.py > tests/unit/runtime/ProcessorGolden.inc

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

def first():
    print("// Made by tests/unit/runtime/make_processor_golden.py from Hugging Face's processor classes; do not edit.")
    print("// name, args, cur_len, scores (f32 bits), HF's result (f32 bits)")
    for name, args, cur, s, o in cases:
        print(f'{{"{name}", {{{", ".join(str(a) for a in args)}}}, {cur}, {{{bits(s)}}}, {{{bits(o)}}}}},')


# Second table (ProcessorGolden2.inc): processors that read the history, take
# float arguments or are sampling warpers past min_p:
#   python tests/unit/runtime/make_processor_golden.py --second > tests/unit/runtime/ProcessorGolden2.inc
def second():
    out = []
    hist = [5, 9, 14, 5, 9]

    def case2(name, proc, history, ints, floats, scale=4.0):
        scores = torch.randn(1, V, generator=g) * scale
        scores[0, 3] = -float("inf")
        ids = torch.tensor([history], dtype=torch.long)
        res = proc(ids, scores.clone())
        out.append((name, history, ints, floats, scores[0], res[0]))

    # sequence_bias: one-token biases, a 2- and a 3-gram that match the
    # history's end, one that does not, one longer than the history.
    bias = [[[7], -2.5], [[11], 1.25], [[9, 20], 3.0], [[14, 5, 9, 21], -1.5], [[5, 22], 4.0],
            [[1, 2, 3, 4, 5, 6, 7], 2.0], [[21], 0.5]]
    flat = []
    for seq, b in bias:  # ints: len, ids... per entry; floats: biases
        flat += [len(seq)] + seq
    for h in (hist, hist[:1]):
        case2("sequence_bias", lp.SequenceBiasLogitsProcessor(sequence_bias=bias), h, flat, [b for _, b in bias])
    bad = [[7], [2], [9, 20], [5, 9, 33], [4, 4]]
    flat = []
    for seq in bad:
        flat += [len(seq)] + seq
    case2("bad_words", lp.NoBadWordsLogitsProcessor(bad, eos_token_id=[2]), hist, flat + [2], [])
    for mass in (0.2, 0.9):
        case2("typical", lp.TypicalLogitsWarper(mass), hist, [], [mass], scale=1.5)
    for eps in (3e-3, 2e-2):
        case2("epsilon", lp.EpsilonLogitsWarper(eps), hist, [], [eps], scale=1.5)
    for eta in (3e-3, 2e-2):
        case2("eta", lp.EtaLogitsWarper(eta, device="cpu"), hist, [], [eta], scale=1.5)
    case2("renormalize", lp.LogitNormalization(), hist, [], [])
    # Appended (earlier rows keep their random scores). encoder ids as ints:
    # repetition penalty above and below 1, repeated ids, one id -inf (3);
    # n-grams of 1, 2 and 3 tokens against a history ending 5, 9 (n = 2 bans
    # what follows each 9 of the source, n = 3 what follows each 5, 9), and a
    # history too short for n = 3.
    enc = [9, 21, 5, 9, 3, 9, 30, 5, 9, 12]
    for pen in (1.7, 0.6):
        case2("encoder_repetition", lp.EncoderRepetitionPenaltyLogitsProcessor(pen, torch.tensor([enc])),
              hist, enc, [pen])
    for n, h in ((1, hist), (2, hist), (3, hist), (3, hist[:1])):
        case2("encoder_no_repeat", lp.EncoderNoRepeatNGramLogitsProcessor(n, torch.tensor([enc])), h, [n] + enc, [])
    print("// Made by tests/unit/runtime/make_processor_golden.py --second from Hugging Face's processor classes; do not edit.")
    print("// name, history, int args, float args, scores (f32 bits), HF's result (f32 bits)")
    for name, h, ints, floats, s, o in out:
        print(f'{{"{name}", {{{", ".join(map(str, h))}}}, {{{", ".join(map(str, ints))}}}, '
              f'{{{", ".join(repr(float(f)) for f in floats)}}}, {{{bits(s)}}}, {{{bits(o)}}}}},')


if __name__ == "__main__":
    import sys
    second() if "--second" in sys.argv[1:] else first()
