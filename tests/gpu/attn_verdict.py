"""attn_check.sh's verdict on one row: the checked run's greedy outputs against
the reference run's, from the same plan and prompts.

  attn_verdict.py CHECKED.out REFERENCE.out PROMPTS.jsonl PLAN TOL TIE -- REFERENCE_COMMAND...

A row passes when each prompt's tokens are the same and the scores agree
within TOL. Where the tokens part at step d, the row still passes if that step
was a near tie of the reference's: fed the prompt and the checked run's first
d tokens, the reference's choice is its own token d with log-probability lr,
and with that token suppressed its choice is the checked run's token d with
(renormalised) log-probability l2; the two logits then differ by
lr - (l2 + log(1 - exp(lr))), which must be at most TIE. (A 16-bit kernel may
legitimately take the other side of a tie that an f32-math reference takes;
the rest of that row is not compared.) REFERENCE_COMMAND runs the reference
genrun up to its arguments (PLAN --input FILE ... follow).

Prints "ok ..." or "FAIL ..." on one line.
"""
import json
import math
import os
import subprocess
import sys
import tempfile


def greedy_one(cmd, plan, ids, suppress=None):
    """The reference's next token and its score after `ids` (None on failure)."""
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "p.jsonl"), os.path.join(d, "o.jsonl")
        with open(inp, "w") as f:
            f.write(json.dumps({"input_ids": ids}) + "\n")
        extra = ["--suppress-tokens", json.dumps([suppress])] if suppress is not None else []
        r = subprocess.run([*cmd, plan, "--input", inp, "--output", out, "--max-new-tokens", "1", "--ignore-eos",
                            *extra], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        seq = json.loads(open(out).readline())["sequences"][0]
        return seq["output_ids"][0], seq["score"]


def near_tie(cmd, plan, prompt, checked, ref, d, tie):
    """'' if step d is a near tie the checked token may take, else why not."""
    first = greedy_one(cmd, plan, prompt + checked[:d])
    if first is None:
        return "the reference's rerun failed"
    r, lr = first
    if r != ref[d]:
        return f"the reference's rerun chose {r}, not its own {ref[d]}"
    second = greedy_one(cmd, plan, prompt + checked[:d], suppress=r)
    if second is None:
        return "the reference's rerun without its token failed"
    t2, l2 = second
    if t2 != checked[d]:
        return f"token {checked[d]} is not the reference's second choice ({t2})"
    gap = lr - (l2 + math.log1p(-math.exp(lr))) if lr < 0 else float("inf")
    if gap > tie:
        return f"the reference's top two differ by {gap:.2e} > {tie:.0e}"
    return ""


def main():
    sep = sys.argv.index("--")
    checked_out, ref_out, prompts, plan, tol, tie = sys.argv[1:sep]
    cmd = sys.argv[sep + 1:]
    tol, tie = float(tol), float(tie)
    try:
        a = [json.loads(l) for l in open(checked_out)]
        b = [json.loads(l) for l in open(ref_out)]
    except ValueError:
        print("FAIL " + open(checked_out).read()[:150].replace("\n", " "))
        return
    p = [json.loads(l)["input_ids"] for l in open(prompts)]
    if len(a) != len(b) or len(a) != len(p):
        print(f"FAIL {len(a)} and {len(b)} outputs for {len(p)} prompts")
        return
    notes, diff = [], 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        xs, ys = x["sequences"][0], y["sequences"][0]
        if xs["output_ids"] == ys["output_ids"]:
            diff = max(diff, abs(xs["score"] - ys["score"]))
            continue
        d = next((k for k, (u, v) in enumerate(zip(xs["output_ids"], ys["output_ids"])) if u != v),
                 min(len(xs["output_ids"]), len(ys["output_ids"])))
        if d >= min(len(xs["output_ids"]), len(ys["output_ids"])):
            print(f"FAIL prompt {i}: {len(xs['output_ids'])} and {len(ys['output_ids'])} tokens")
            return
        why = near_tie(cmd, plan, p[i], xs["output_ids"], ys["output_ids"], d, tie)
        if why:
            print(f"FAIL tokens differ: prompt {i} at step {d}: {why}")
            return
        notes.append(f"prompt {i} parts at a near tie at step {d}")
    verdict = "ok" if diff <= tol else "FAIL"
    same = "tokens same" if not notes else "; ".join(notes)
    print(f"{verdict} {same}, max |score diff| {diff:.1e}")


if __name__ == "__main__":
    main()
