#!/usr/bin/env python3
"""Copies the bundled tiny-gpt2 export into DIR with a tokenizer made for a
test beside it: model_with_tokenizer.py SRC_MODEL_DIR DIR KIND
  KIND = letters    a BPE over a-z only: no byte fallback, no unknown token
         lowercase  a tokenizer.json whose normalizer (Lowercase) the runtime lacks
         spm        only a SentencePiece model file (not packed yet)
         too-big    ids past the model's vocabulary (1000)"""
import os
import shutil
import sys

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

src, out, kind = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
for f in ("model.onnx", "config.json"):
    shutil.copy(os.path.join(src, f), os.path.join(out, f))
letters = {chr(ord("a") + i): i for i in range(26)}
if kind == "spm":
    open(os.path.join(out, "spiece.model"), "wb").write(b"\n\x05hello")
    sys.exit(0)
if kind == "too-big":
    letters["z"] = 1000
tok = Tokenizer(models.BPE(vocab=letters, merges=[]))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
if kind == "lowercase":
    tok.normalizer = normalizers.Lowercase()
tok.save(os.path.join(out, "tokenizer.json"))
