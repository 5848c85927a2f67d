#!/usr/bin/env python3
"""A small Llama-2-style tokenizer (BPE with byte fallback, "▁" for spaces,
<0xXX> byte pieces) for tests, trained on this repository's Markdown with
the `tokenizers` library (e.g. /work/venv-bench/bin/python):

  python tools/make_bytefallback_tokenizer.py tests/fixtures/tokenizers/byte-fallback/tokenizer.json

Characters the training text lacks (emoji, most accents) come out as byte
pieces, which is the case StopStringCriteria treats specially.
"""
import glob
import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, normalizers, trainers

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
texts = []
for path in sorted(glob.glob(os.path.join(SRC, "docs", "*.md"))):
    texts += [line.strip() for line in open(path, encoding="utf-8") if line.strip().isascii() and line.strip()]
tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                 decoders.Strip(" ", 1, 0)])
special = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(256)]
tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=700, special_tokens=special, show_progress=False))
out = sys.argv[1]
os.makedirs(os.path.dirname(out), exist_ok=True)
tok.save(out)
# As in Llama's tokenizer.json, the byte pieces are plain vocabulary entries:
# only <unk>, <s>, </s> stay added (special) tokens.
spec = json.load(open(out, encoding="utf-8"))
spec["added_tokens"] = [t for t in spec["added_tokens"] if not t["content"].startswith("<0x")]
json.dump(spec, open(out, "w", encoding="utf-8"), ensure_ascii=False, indent=1)
print(f"wrote {out}: {tok.get_vocab_size()} tokens")
