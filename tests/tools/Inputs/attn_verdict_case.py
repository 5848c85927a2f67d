"""Builds attn-verdict.test's checked outputs from a reference run on the CPU.

  attn_verdict_case.py GENRUN PLAN PROMPTS REF.out OUT_DIR

OUT_DIR/second.out: the reference's outputs with prompt 0's token at step 2
replaced by the reference's second choice there (what genrun picks with its
own token suppressed), the steps after it by what the reference then
generates; OUT_DIR/other.out: token 2 replaced by a token that is neither.
"""
import json
import os
import subprocess
import sys

genrun, plan, prompts, ref_out, out = sys.argv[1:6]
prompt = json.loads(open(prompts).readline())["input_ids"]
ref = [json.loads(l) for l in open(ref_out)]
ids = ref[0]["sequences"][0]["output_ids"]


def run(ids_in, n, extra=()):
    path = os.path.join(out, "case.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps({"input_ids": ids_in}) + "\n")
    r = subprocess.run([genrun, plan, "--device", "cpu", "--input", path, "--max-new-tokens", str(n), "--ignore-eos",
                        *extra], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["sequences"][0]


second = run(prompt + ids[:2], 1, ["--suppress-tokens", json.dumps([ids[2]])])["output_ids"][0]
for name, tok in (("second", second), ("other", next(t for t in range(3, 1000) if t not in (ids[2], second)))):
    rest = run(prompt + ids[:2] + [tok], len(ids) - 3)["output_ids"]
    rows = json.loads(json.dumps(ref))
    rows[0]["sequences"][0]["output_ids"] = ids[:2] + [tok] + rest
    with open(os.path.join(out, name + ".out"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
