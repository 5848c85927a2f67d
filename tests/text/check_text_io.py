#!/usr/bin/env python3
"""Checks genrun's text output against Hugging Face `tokenizers`:
  check_text_io.py TOKENIZER.json OUT.jsonl PROMPT... --ids-jsonl IDS.jsonl [--texts TEXTS.jsonl]
Every sequence's "text" must be HF's decode(output_ids, skip_special_tokens=True);
IDS.jsonl gets HF's encoding of each PROMPT (then of each {"text": ...} line
of TEXTS.jsonl) as {"input_ids": [...]} lines, for genrun to generate from
(its output must then equal OUT.jsonl)."""
import argparse
import json
import sys

from tokenizers import Tokenizer

ap = argparse.ArgumentParser()
ap.add_argument("tokenizer")
ap.add_argument("output")
ap.add_argument("prompts", nargs="*")
ap.add_argument("--ids-jsonl", required=True)
ap.add_argument("--texts")
args = ap.parse_args()
if args.texts:
    args.prompts += [json.loads(line)["text"] for line in open(args.texts, encoding="utf-8")]
tok = Tokenizer.from_file(args.tokenizer)
n = 0
for line in open(args.output, encoding="utf-8"):
    for seq in json.loads(line)["sequences"]:
        want = tok.decode(seq["output_ids"], skip_special_tokens=True)
        if seq["text"] != want:
            sys.exit("text %r, HF decodes %r" % (seq["text"], want))
        n += 1
with open(args.ids_jsonl, "w") as f:
    for p in args.prompts:
        f.write(json.dumps({"input_ids": tok.encode(p).ids}) + "\n")
print("%d sequences: text is HF's decoding" % n)
