"""Generation parity with Hugging Face: genc compile + genrun vs a fixture's golden.json.

usage: check_generate.py GENC GENRUN FIXTURE_DIR MODEL_FILE WORKDIR MODE...
MODE: greedy | beam | beam_reppen | greedy_processors | beam_processors |
greedy_encoder_processors | beam_encoder_processors | beam_renormalize (the
golden.json sections; a greedy_* section is compared as greedy).
MODEL_FILE: model.onnx, or ENCODER,DECODER (e.g. encoder.onnx,decoder.onnx) for an
encoder-decoder fixture, or "." for the fixture folder itself.

Encoder-decoder: the golden inputs are the right-padded sources with their
attention_mask (genrun drops the masked positions); golden sequences start with
decoder_start_token_id, which genrun does not return.

Prompts go in exactly as HF's batch had them: the padded input_ids with their
attention_mask (pad tokens then count in repetition-penalty/n-gram history, as
in HF), in one batch of the same size. Tokens must be identical, except in
greedy where the recorded top-2 margin at a step is under 1e-4 (a float32
runtime may then legitimately pick the other token, and the rest of that row
is not compared). Beam scores must agree within 1e-4 (GENC_SCORE_TOL: plans
that round on purpose, e.g. an i8 cross cache, pass their bound).
"""
import json
import os
import subprocess
import sys

genc, genrun, fixture, model, work = sys.argv[1:6]
modes = sys.argv[6:]
# Greedy rows are compared up to the first step whose recorded top-2 margin is
# below this (float32 rounding by default; reduced-precision plans pass the
# margin their dtype's rounding can flip, GENC_GREEDY_MARGIN).
greedy_margin = float(os.environ.get("GENC_GREEDY_MARGIN", "1e-4"))
score_tol = float(os.environ.get("GENC_SCORE_TOL", "1e-4"))
golden = json.load(open(os.path.join(fixture, "golden.json")))
os.makedirs(work, exist_ok=True)
plan = os.path.join(work, "model.plan")
batch = len(golden["input_ids"])
models = [os.path.join(fixture, m) for m in model.split(",")]
# GENC_COMPILE_ARGS: more genc compile arguments (e.g. --passes=... to bisect).
subprocess.run([genc, "compile", *models, "-o", plan,
                "--max-batch", str(batch), "--max-beams", "4", "--max-length", "64",
                *os.environ.get("GENC_COMPILE_ARGS", "").split()], check=True)

prompts = os.path.join(work, "prompts.jsonl")
with open(prompts, "w") as f:
    for ids, mask in zip(golden["input_ids"], golden["attention_mask"]):
        f.write(json.dumps({"input_ids": ids, "attention_mask": mask}) + "\n")
# Decoder-only rows repeat the padded prompt; encoder-decoder rows start with
# the decoder start token.
prompt_len = 1 if golden.get("kind") == "encoder-decoder" else len(golden["input_ids"][0])
pad = golden["pad_token_id"]
eos = golden["eos_token_id"]


def generated(row):
    out = row[prompt_len:]
    if eos in out:
        out = out[: out.index(eos) + 1]
    return out


failures = 0
for mode in modes:
    sec = golden[mode]
    args = sec["args"]
    # GENRUN_DEVICE: the executor to check (tests/gpu/gpu_test.sh sets cuda).
    # The eos id HF's generate() was given (golden.json's eos_token_id), not
    # only the plan's default from config.json: a random-weight export whose
    # config has no eos (Qwen2's, Qwen3's) gets a plan without one, and then
    # the processors that ban eos (min_length, min_new_tokens) edit HF's rows
    # only, which renormalize_logits turns into different beam scores.
    cmd = [genrun, plan, "--input", prompts, "--device", os.environ.get("GENRUN_DEVICE", "cpu"),
           "--batch-size", str(batch), "--eos-token-id", str(eos)]
    # GENRUN_GPUS: tree attention over that many GPUs (tests/gpu/tree_check.sh).
    if os.environ.get("GENRUN_GPUS"):
        cmd += ["--gpus", os.environ["GENRUN_GPUS"]]
    flag = {"max_new_tokens": "--max-new-tokens", "num_beams": "--num-beams",
            "no_repeat_ngram_size": "--no-repeat-ngram-size", "length_penalty": "--length-penalty",
            "early_stopping": "--early-stopping", "num_return_sequences": "--num-return-sequences",
            "repetition_penalty": "--repetition-penalty", "min_new_tokens": "--min-new-tokens",
            "min_length": "--min-length", "forced_bos_token_id": "--forced-bos-token-id",
            "forced_eos_token_id": "--forced-eos-token-id", "suppress_tokens": "--suppress-tokens",
            "begin_suppress_tokens": "--begin-suppress-tokens",
            "exponential_decay_length_penalty": "--exponential-decay-length-penalty",
            "encoder_repetition_penalty": "--encoder-repetition-penalty",
            "encoder_no_repeat_ngram_size": "--encoder-no-repeat-ngram-size",
            "renormalize_logits": "--renormalize-logits"}
    for k, v in args.items():
        if k not in flag:
            sys.exit(f"check_generate: unknown golden argument {k}")
        if isinstance(v, bool):  # --early-stopping=true, --renormalize-logits=false: one word
            cmd.append(f"{flag[k]}={str(v).lower()}")
        else:
            cmd += [flag[k], json.dumps(v) if isinstance(v, (list, tuple)) else str(v)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"{mode}: genrun failed:\n{res.stderr}")
        failures += 1
        continue
    lines = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    nret = args.get("num_return_sequences", 1)
    want_rows = [generated(r) for r in sec["sequences"]]
    got_rows = [s["output_ids"] for line in lines for s in line["sequences"][:nret]]
    got_scores = [s["score"] for line in lines for s in line["sequences"][:nret]]
    if len(got_rows) != len(want_rows):
        print(f"{mode}: {len(got_rows)} sequences, expected {len(want_rows)}")
        failures += 1
        continue
    mismatched, max_score_diff = 0, 0.0
    for i, (got, want) in enumerate(zip(got_rows, want_rows)):
        if mode.startswith("greedy"):
            margins = [step[i] for step in sec["top2_margin"]]
            n = next((s for s, m in enumerate(margins) if m < greedy_margin), len(margins))
            ok = got[:n] == want[:n]
            if not ok:
                at = next(s for s in range(n) if got[s] != want[s])
                print(f"greedy row {i}: first differs at step {at}, where HF's top-2 margin is {margins[at]:.3g}")
        else:
            ok = got == want
        if not ok:
            mismatched += 1
            print(f"{mode} row {i}: got {got}\n{' ' * len(mode)}  want {want}")
    if "sequences_scores" in sec:
        for g, w in zip(got_scores, sec["sequences_scores"]):
            max_score_diff = max(max_score_diff, abs(g - w))
    status = "ok" if mismatched == 0 and max_score_diff <= score_tol else "FAILED"
    print(f"{mode}: {len(want_rows)} sequences, {mismatched} differ, "
          f"max |score diff| {max_score_diff:.2e}: {status}")
    failures += status != "ok"
sys.exit(1 if failures else 0)
