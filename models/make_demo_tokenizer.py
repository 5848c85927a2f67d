#!/usr/bin/env python3
"""Makes the bundled demo model's tokenizer: models/tiny-gpt2/tokenizer.json
and tokenizer_config.json.

A GPT-2-style byte-level BPE trained with Hugging Face `tokenizers` on the
license texts Debian ships (/usr/share/common-licenses), so nothing is
downloaded. Its vocabulary is exactly the model's (config.json vocab_size,
1000) and its special tokens sit at the model's pad / bos / eos ids (0, 1, 2).
The model's weights are random, so its text is gibberish, but real text goes
in and comes out. Run again only to remake the checked-in files:

  python3 models/make_demo_tokenizer.py
"""
import glob
import json
import os
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny-gpt2")


def main():
    config = json.load(open(os.path.join(MODEL, "config.json")))
    specials = {config["pad_token_id"]: "<pad>", config["bos_token_id"]: "<s>", config["eos_token_id"]: "</s>"}
    if sorted(specials) != list(range(len(specials))):
        sys.exit("make_demo_tokenizer: the special ids must come first (the trainer puts them there)")
    lines = []
    for path in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(path):
            lines += [l.strip() for l in open(path, encoding="utf-8", errors="replace") if l.strip()]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=config["vocab_size"], special_tokens=[specials[i] for i in sorted(specials)],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    if tok.get_vocab_size(with_added_tokens=True) != config["vocab_size"]:
        sys.exit("make_demo_tokenizer: trained %d tokens, the model has %d"
                 % (tok.get_vocab_size(with_added_tokens=True), config["vocab_size"]))
    tok.save(os.path.join(MODEL, "tokenizer.json"))
    with open(os.path.join(MODEL, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                   "pad_token": "<pad>", "model_max_length": config["n_positions"]}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
