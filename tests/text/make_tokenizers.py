#!/usr/bin/env python3
"""Trains a small tokenizer of one family with Hugging Face `tokenizers` (or
`sentencepiece`, for the T5-style Unigram) on text that ships with Debian and
Python, and writes what HF makes of a generated corpus, for
genc_tokenizer_check to compare with the runtime's tokenizer:

  OUT/tokenizer.json
  OUT/cases.jsonl   {"text": s, "ids": [...], "ids_plain": [...], "decoded": d, "decoded_skip": d}
                    {"decode_ids": [...], "decoded": d, "decoded_skip": d}

  make_tokenizers.py --kind KIND --out DIR [--count N]

KIND: gpt2, llama3, llama2, mistral, t5; qwen2 (NFC first) and nfkc (NFKC
in a Sequence), their strings rich in what normalization changes
(normalization_text.py); form-nfc, form-nfd, form-nfkc, form-nfkd: one
normal form before a byte-level BPE without merges, whose ids are the bytes
of the normalized text, on every character with normalization data too.

Everything is seeded: the same machine gives the same files.
"""
import argparse
import glob
import json
import os
import random
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

import normalization_text

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = LLAMA3_SPLIT.replace(r"\p{N}{1,3}", r"\p{N}")
FORMS = {"form-nfc": normalizers.NFC, "form-nfd": normalizers.NFD, "form-nfkc": normalizers.NFKC,
         "form-nfkd": normalizers.NFKD}


def training_text():
    """License texts (Debian's base-files) and a few Python stdlib modules."""
    files = sorted(glob.glob("/usr/share/common-licenses/*"))
    stdlib = os.path.dirname(os.__file__)
    files += [os.path.join(stdlib, m) for m in ("textwrap.py", "string.py", "argparse.py", "difflib.py")]
    lines = []
    for f in files:
        if os.path.isfile(f):
            with open(f, encoding="utf-8", errors="replace") as fh:
                lines += [l.rstrip("\n") for l in fh if l.strip()]
    if len(lines) < 1000:
        sys.exit("make_tokenizers: too little training text found")
    return lines


# Pools of characters the generated strings draw from.
POOLS = {
    "ascii": [chr(c) for c in range(0x20, 0x7F)],
    "latin": [chr(c) for c in range(0xA0, 0x250)],
    "combining": [chr(c) for c in range(0x300, 0x370)],
    "greek_cyrillic": [chr(c) for c in range(0x391, 0x3CA)] + [chr(c) for c in range(0x410, 0x450)],
    "cjk": [chr(c) for c in range(0x4E00, 0x4F00)] + [chr(c) for c in range(0x3040, 0x30A0)] + [chr(c) for c in range(0xAC00, 0xAC40)],
    "jamo": [chr(c) for c in range(0x1100, 0x1113)] + [chr(c) for c in range(0x1161, 0x1176)] + [chr(c) for c in range(0x11A8, 0x11C3)],
    "arabic_indic": [chr(c) for c in range(0x621, 0x64B)] + [chr(c) for c in range(0x905, 0x94E)] + ["\u094d", "\u0930"],
    "fullwidth": [chr(c) for c in range(0xFF01, 0xFF5F)] + ["\u2460", "\u00bd", "\ufb01", "\u2126", "\u212b", "\u017f", "\u212a"],
    "emoji": ["\U0001F600", "\U0001F44D", "\U0001F3FD", "\u200d", "\u2764", "\ufe0f", "\U0001F468", "\U0001F469",
              "\U0001F467", "\U0001F1FA", "\U0001F1F8", "\U0001F1EB", "\U0001F1F7", "\u263A", "\U0001F926", "\u2640"],
    "space": [" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2003", "\u2028", "\u0085", "\x0b", "\x0c"],
    "digits": [str(d) for d in range(10)] + ["\u0661", "\u0967", "\uff11", "\u00b2", "\u2155"],
    "punct": list("'\"!?.,;:-_()[]{}<>/\\|@#$%^&*+=~`") + ["'s", "'S", "'ll", "'RE", "'\u017f", "\u2019s"],
    "control": ["\x00", "\x01", "\x1b", "\x7f", "\u200b", "\ufeff", "\u00ad", "\ufffd"],
}


def random_scalar(rng):
    while True:
        c = rng.randrange(0x20, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def make_string(rng, lines, specials, pools=POOLS):
    kind = rng.random()
    if kind < 0.25:  # text like the training data, perhaps cut oddly
        s = rng.choice(lines)
        if rng.random() < 0.3:
            a = rng.randrange(len(s) + 1)
            s = s[a:a + rng.randrange(1, 80)]
        return s
    if kind < 0.30:  # a very long word
        return rng.choice(["", " "]) + "".join(rng.choice(POOLS[rng.choice(["ascii", "latin", "cjk"])])
                                               for _ in range(1)) * rng.randrange(200, 3000)
    parts = []
    for _ in range(rng.randrange(1, 25)):
        r = rng.random()
        if r < 0.06 and specials:
            parts.append(rng.choice(specials))
        elif r < 0.10:
            parts.append(random_scalar(rng))
        elif r < 0.30:
            parts.append(rng.choice(rng.choice(lines).split() or ["x"]))
        else:
            pool = pools[rng.choice(list(pools))]
            parts.append("".join(rng.choice(pool) for _ in range(rng.randrange(1, 8))))
        if rng.random() < 0.5:
            parts.append(rng.choice(POOLS["space"]))
    return "".join(parts)


def byte_level(trainer_vocab, specials, lines, split=None, template=None, normalizer=None):
    tok = Tokenizer(models.BPE(ignore_merges=split is not None))
    tok.normalizer = normalizer
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split is None)
    tok.pre_tokenizer = bl if split is None else pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False), bl])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=trainer_vocab, special_tokens=specials,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       show_progress=False))
    if template:
        tok.post_processor = processors.TemplateProcessing(
            single=template, special_tokens=[(s, tok.token_to_id(s)) for s in specials])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def spm_bpe(lines, metaspace_first):
    """Llama-2 (Prepend + Replace normalizer) or Mistral (Metaspace "first")
    style: a BPE with byte fallback whose vocabulary starts with <unk> <s>
    </s> and the 256 <0xXX> byte tokens, as SentencePiece's do."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=1500, special_tokens=["<unk>", "<s>", "</s>"],
                                                       limit_alphabet=150, show_progress=False))
    trained = json.loads(tok.to_str())
    base = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    vocab = {t: i for i, t in enumerate(base)}
    for t, _ in sorted(trained["model"]["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(t, len(vocab))
    trained["model"].update(vocab=vocab, byte_fallback=True, fuse_unk=True)
    trained["added_tokens"] = [dict(a, id=vocab[a["content"]]) for a in trained["added_tokens"]]
    tok = Tokenizer.from_str(json.dumps(trained))
    if metaspace_first:
        tok.normalizer = None
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1, right=0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return tok


def t5(lines, workdir):
    """A SentencePiece Unigram (nmt_nfkc normalization) converted as
    transformers' T5Converter does."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    text = os.path.join(workdir, "spm_train.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    prefix = os.path.join(workdir, "spiece")
    spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, model_type="unigram", vocab_size=1500,
                                   pad_id=0, eos_id=1, unk_id=2, bos_id=-1, character_coverage=0.9995,
                                   num_threads=1, minloglevel=2, seed_sentencepiece_size=50000)
    proto = pb.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tok = Tokenizer(models.Unigram(vocab, unk_id=proto.trainer_spec.unk_id, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
                                           normalizers.Strip(left=False, right=True),
                                           normalizers.Replace(Regex(" {2,}"), "\u2581")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tok.add_special_tokens([AddedToken("<pad>", special=True, normalized=False),
                            AddedToken("</s>", special=True, normalized=False),
                            AddedToken("<unk>", special=True, normalized=False)])
    return tok


def build(kind, lines, workdir):
    if kind == "gpt2":
        tok = byte_level(1200, ["<|endoftext|>"], lines)
        tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True, normalized=False)])
        tok.add_tokens([AddedToken(" plain added", normalized=False)])
        return tok
    if kind == "llama3":
        return byte_level(1200, ["<|begin_of_text|>", "<|end_of_text|>"], lines, split=LLAMA3_SPLIT,
                          template="<|begin_of_text|> $A")
    if kind in ("llama2", "mistral"):
        return spm_bpe(lines, kind == "mistral")
    if kind == "t5":
        return t5(lines, workdir)
    if kind == "qwen2":
        tok = byte_level(1200, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], lines, split=QWEN2_SPLIT,
                         normalizer=normalizers.NFC())
        tok.add_tokens([AddedToken("Cafe\u0301", normalized=True)])  # found as NFC's "Caf\u00e9"
        return tok
    if kind == "nfkc":
        tok = byte_level(1200, ["<s>", "</s>"], lines, split=LLAMA3_SPLIT, template="<s> $A",
                         normalizer=normalizers.Sequence([normalizers.NFKC()]))
        tok.add_tokens([AddedToken("\ufb01ne", normalized=True), AddedToken("\uff21\uff22", normalized=False)])
        return tok
    if kind in FORMS:
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(alphabet))}, merges=[]))
        tok.normalizer = FORMS[kind]()
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        tok.decoder = decoders.ByteLevel()
        return tok
    sys.exit("make_tokenizers: unknown kind " + kind)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=10000)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = training_text()
    tok = build(args.kind, lines, args.out)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    tok = Tokenizer.from_file(os.path.join(args.out, "tokenizer.json"))  # what the runtime reads
    specials = [t.content for t in tok.get_added_tokens_decoder().values()]
    rng = random.Random(12)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    texts = []
    pools = POOLS
    if args.kind in ("qwen2", "nfkc") or args.kind in FORMS:
        pools = dict(POOLS, **normalization_text.POOLS)
    if args.kind in FORMS:
        texts = normalization_text.every_character()
    with open(os.path.join(args.out, "cases.jsonl"), "w", encoding="utf-8") as out:
        for i in range(args.count + len(texts)):
            s = texts[i] if i < len(texts) else make_string(rng, lines, specials, pools)
            ids = tok.encode(s).ids
            out.write(json.dumps({"text": s, "ids": ids, "ids_plain": tok.encode(s, add_special_tokens=False).ids,
                                  "decoded": tok.decode(ids, skip_special_tokens=False),
                                  "decoded_skip": tok.decode(ids, skip_special_tokens=True)}) + "\n")
        # Random id sequences: byte tokens in any order, specials anywhere.
        for _ in range(args.count // 5):
            ids = [rng.randrange(vocab_size) for _ in range(rng.randrange(1, 40))]
            out.write(json.dumps({"decode_ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
                                  "decoded_skip": tok.decode(ids, skip_special_tokens=True)}) + "\n")


if __name__ == "__main__":
    main()
