#!/usr/bin/env python3
"""Small tokenizers for tests, trained on this repository's Markdown with the
`tokenizers` library (e.g. /work/venv-bench/bin/python):

  python tools/make_test_tokenizer.py byte-fallback tests/fixtures/tokenizers/byte-fallback/tokenizer.json
  python tools/make_test_tokenizer.py unigram tests/fixtures/tokenizers/unigram/tokenizer.json

byte-fallback: Llama-2 style (BPE with byte fallback, "▁" for spaces,
<0xXX> byte pieces in the plain vocabulary): characters the training text
lacks (emoji, most accents) come out as byte pieces, the case
StopStringCriteria treats specially. unigram: T5 style (a Unigram model,
Metaspace, no byte fallback: such characters are <unk>), read by its text.
The vocabulary follows docs/ as it is: after docs change, remake a fixture
only together with its golden table (tools/make_stop_golden.py).
"""
import glob
import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
texts = []
for path in sorted(glob.glob(os.path.join(SRC, "docs", "*.md"))):
    texts += [line.strip() for line in open(path, encoding="utf-8") if line.strip().isascii() and line.strip()]
kind, out = sys.argv[1], sys.argv[2]
if kind == "byte-fallback":
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    special = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)]
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=700, special_tokens=special, show_progress=False))
elif kind == "unigram":
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, trainers.UnigramTrainer(vocab_size=500, special_tokens=["<pad>", "</s>", "<unk>"],
                                                           unk_token="<unk>", show_progress=False))
else:
    sys.exit("kind: byte-fallback or unigram")
os.makedirs(os.path.dirname(out), exist_ok=True)
tok.save(out)
# As in Llama's tokenizer.json, the byte pieces are plain vocabulary entries:
# only <unk>, <s>, </s> stay added (special) tokens.
spec = json.load(open(out, encoding="utf-8"))
spec["added_tokens"] = [t for t in spec["added_tokens"] if not t["content"].startswith("<0x")]
json.dump(spec, open(out, "w", encoding="utf-8"), ensure_ascii=False, indent=1)
print(f"wrote {out}: {tok.get_vocab_size()} tokens")
