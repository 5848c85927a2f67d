#!/usr/bin/env python3
"""Compares the tokenizer tools/gguf_to_onnx.py writes for a GGUF file with
the one Hugging Face transformers builds from the same file
(AutoTokenizer.from_pretrained(dir, gguf_file=...); needs transformers and
torch, so it runs where they are, not in CI):

  gguf_tokenizer_check.py MODEL.gguf [TEXT_FILE ...]

Both encode every line of the text files (default: the licence texts under
/usr/share/common-licenses) and a set of strings with special tokens,
unicode, spaces and the chat template's markers; both decode what they
encoded. Prints how many strings agree, the first that does not, and
whether the two tokenizer.json files are equal as JSON.
"""
import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))


def main():
    import gguf
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    import gguf_tokenizer
    import gguf_to_onnx

    path = os.path.abspath(sys.argv[1])
    files = sys.argv[2:] or sorted(glob.glob("/usr/share/common-licenses/*"))
    meta = gguf_to_onnx.metadata(gguf.GGUFReader(path))
    ours = gguf_tokenizer.tokenizer_json(meta, meta["general.architecture"])
    hf = AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    with tempfile.TemporaryDirectory() as d:
        hf.save_pretrained(d)
        hf_json = json.load(open(os.path.join(d, "tokenizer.json")))
        with open(os.path.join(d, "ours.json"), "w") as f:
            json.dump(ours, f)
        tok = Tokenizer.from_file(os.path.join(d, "ours.json"))
    texts = ["The capital of France is", " leading space", "double  space\n\nnew lines\t tab", "café naïve 日本語 🙂",
             "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "<s> </s> <unk>", "", " ", "123 4567 89.5%"]
    for name in files:
        with open(name, encoding="utf-8", errors="replace") as f:
            texts += [line.rstrip("\n") for line in f]
    same = 0
    first = None
    for t in texts:
        a, b = tok.encode(t).ids, hf(t)["input_ids"]
        da, db = tok.decode(a, skip_special_tokens=True), hf.decode(b, skip_special_tokens=True)
        if a == b and da == db:
            same += 1
        elif first is None:
            first = (t, a[:12], b[:12], da[:40], db[:40])
    print(f"{os.path.basename(path)}: {same} of {len(texts)} strings encode and decode as transformers' tokenizer; "
          f"tokenizer.json {'equal' if ours == hf_json else 'differs'} as JSON")
    if first:
        print(f"  first difference: {first!r}")
    return 0 if same == len(texts) else 1


if __name__ == "__main__":
    sys.exit(main())
