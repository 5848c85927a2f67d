#!/usr/bin/env python3
"""Golden data for runtime/search/StopStrings: what transformers'
StopStringCriteria (5.23, torch) says about sequences of a real tokenizer's
ids, made with its own class (e.g. /work/venv-bench/bin/python):

  python tests/unit/runtime/make_stop_golden.py > tests/unit/runtime/StopStringsGolden.inc
  python tests/unit/runtime/make_stop_golden.py tests/fixtures/tokenizers/byte-fallback/tokenizer.json \
      > tests/unit/runtime/StopStringsGoldenByteFallback.inc
  python tests/unit/runtime/make_stop_golden.py tests/fixtures/tokenizers/unigram/tokenizer.json \
      > tests/unit/runtime/StopStringsGoldenUnigram.inc

The tokenizer is models/tiny-gpt2's (byte-level BPE, 1000 tokens) or the
one named (tests/fixtures/tokenizers/make_test_tokenizer.py makes a byte-fallback and a Unigram
one; sets HF refuses — a character no token produces — are left out). Stop
strings are cut from the text of random token windows (so they occur, with
every overhang: across tokens, inside one, partial UTF-8 bytes), plus a few
fixed ones; each case is a stop-string set, a sequence, and HF's verdict for
the sequence's last token. Strings are C++ literals with octal escapes.
"""
import os
import random
import sys

import torch
from transformers import PreTrainedTokenizerFast
from transformers.generation.stopping_criteria import StopStringCriteria

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKENIZER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "models", "tiny-gpt2", "tokenizer.json")
tok = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER)
rng = random.Random(5)
V = len(tok.get_vocab())


def lit(s):
    return '"' + "".join(c if 32 <= ord(c) < 127 and c not in '"\\?' else "\\%03o" % ord(c)
                         for c in s.encode("utf-8").decode("latin-1")) + '"'


text = "The licensor grants you a copyright license. Permission is hereby granted, free of charge — ünïcödé 😀!"
base = tok(text, add_special_tokens=False)["input_ids"]
sets = [["license"], ["granted", "you a"], [" copy"], ["ü"], ["😀"], ["!"], ["e."], ["zzz"]]
for _ in range(24):  # strings cut from the text of random windows of random ids
    ids = [rng.randrange(V) for _ in range(rng.randint(1, 4))]
    s = tok.decode(ids)
    if len(s) < 1:
        continue
    a = rng.randrange(len(s))
    b = rng.randint(a + 1, len(s))
    sets.append([s[a:b]])

cases = []
refused = []
for stops in sets:
    try:
        crit = StopStringCriteria(tok, stops)
    except ValueError:  # a string with characters no token can produce: HF refuses it
        refused.append(stops)
        continue
    seqs = [base[:n] for n in range(1, len(base) + 1)]
    for _ in range(30):
        seqs.append([rng.randrange(V) for _ in range(rng.randint(1, 8))])
    # Windows of the string's own tokens with random tokens around.
    own = tok(stops[0], add_special_tokens=False)["input_ids"]
    for _ in range(10):
        pre = [rng.randrange(V) for _ in range(rng.randint(0, 3))]
        post = [rng.randrange(V) for _ in range(rng.randint(0, 2))]
        seqs.append(pre + own + post)
    for seq in seqs:
        hit = bool(crit(torch.tensor([seq]), None)[0])
        cases.append((stops, seq, hit))

print("// Made by tests/unit/runtime/make_stop_golden.py from transformers' StopStringCriteria on "
      + os.path.relpath(os.path.abspath(TOKENIZER), SRC) + "; do not edit.")
for stops in refused:
    print("// refused by StopStringCriteria (no token produces a character of it): " + lit(stops[0])[1:-1])
print("// stop strings, ids, HF's verdict for the last token")
for stops, seq, hit in cases:
    print("{{%s}, {%s}, %s}," % (", ".join(lit(s) for s in stops), ", ".join(map(str, seq)), "true" if hit else "false"))
