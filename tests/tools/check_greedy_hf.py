"""genrun's greedy tokens against Hugging Face's recorded ones:

  check_greedy_hf.py HF.json GENRUN_OUT.jsonl

HF.json is tests/tools/perplexity_hf.py's greedy output (prompts' ids and the
generated ids); GENRUN_OUT has a line per prompt, genrun run on those ids.
Prints one line per prompt and a total; fails unless every sequence is
HF's, token for token.
"""
import json
import sys

hf = json.load(open(sys.argv[1]))
got = [json.loads(line)["sequences"][0]["output_ids"] for line in open(sys.argv[2])]
ok = len(hf) == len(got)
equal = 0
for h, g in zip(hf, got):
    n = next((i for i, (a, b) in enumerate(zip(h["output_ids"], g)) if a != b), min(len(h["output_ids"]), len(g)))
    same = h["output_ids"] == g
    equal += same
    print(f"{h['prompt']!r}: {len(g)} tokens, " + ("as HF's" if same else f"first difference at token {n}"))
print(f"{equal} of {len(hf)} sequences as Hugging Face's: " + ("ok" if ok and equal == len(hf) else "FAIL"))
sys.exit(0 if ok and equal == len(hf) else 1)
