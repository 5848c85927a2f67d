#!/usr/bin/env python3
"""Hugging Face transformers' numbers for a GGUF model, the reference of
genc's perplexity and greedy-token figures (docs/quantization.md): transformers
loads the GGUF file and dequantizes it (f32), then

  perplexity_hf.py MODEL.gguf ppl TEXT_FILE --window W [--max-tokens N] [--ids-out IDS.json]
      the perplexity of the text cut into windows of W tokens, each window
      its own forward pass (token t + 1 predicted from tokens 0..t of its
      window): what tools/genppl computes for a plan;
  perplexity_hf.py MODEL.gguf greedy PROMPTS.json N OUT.json
      greedy generate() of N new tokens for each prompt (text, tokenized as
      the model's tokenizer does), one at a time; OUT holds the prompts' ids
      and the generated ids.

Needs torch and transformers (5.17 measured the committed figures); not run in CI.
"""
import json
import math
import os
import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def load(path):
    d, f = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    model.eval()
    return tok, model


def main():
    path, mode = sys.argv[1], sys.argv[2]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    tok, model = load(path)
    if mode == "ppl":
        text = open(sys.argv[3], encoding="utf-8").read()
        window = int(sys.argv[sys.argv.index("--window") + 1])
        ids = tok(text)["input_ids"]
        if "--max-tokens" in sys.argv:
            ids = ids[:int(sys.argv[sys.argv.index("--max-tokens") + 1])]
        if "--ids-out" in sys.argv:
            json.dump(ids, open(sys.argv[sys.argv.index("--ids-out") + 1], "w"))
        nll, scored, t0 = 0.0, 0, time.time()
        with torch.no_grad():
            for s in range(0, len(ids) - 1, window):
                w = torch.tensor([ids[s:s + window]])
                logits = model(input_ids=w).logits[0].double()
                lp = torch.log_softmax(logits[:-1], dim=-1)
                nll -= lp.gather(1, w[0, 1:, None]).sum().item()
                scored += w.shape[1] - 1
        n_windows = (len(ids) - 2) // window + 1
        print(f"{len(ids)} tokens in {n_windows} windows of {window}, {scored} predictions: nll {nll / scored:.6f} "
              f"nats/token, perplexity {math.exp(nll / scored):.4f} (transformers, {time.time() - t0:.1f} s)")
        return 0
    prompts = json.load(open(sys.argv[3]))
    n = int(sys.argv[4])
    out = []
    with torch.no_grad():
        for p in prompts:
            ids = tok(p)["input_ids"]
            gen = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 max_new_tokens=n, do_sample=False, num_beams=1, pad_token_id=tok.pad_token_id)
            out.append({"prompt": p, "input_ids": ids, "output_ids": gen[0, len(ids):].tolist()})
    json.dump(out, open(sys.argv[5], "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
