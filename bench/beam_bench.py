#!/usr/bin/env python3
"""Beam search on the GPU: genrun against Hugging Face generate() in one run,
and the device's beam candidates against the CPU's.

usage (there, after tools/pack.sh here):
  python3 bench/beam_bench.py [--models gpt2,t5,bart] [--check] [--largest] [--profile]
                              [--cross-kv-dtype i8] [--out DIR]

Workloads (issue 10's, random weights, fp16 plans and HF fp16, beam 4,
no_repeat_ngram_size 3, 64 new tokens, the models' own eos rules on both):
  gpt2  GPT-2 124M, prompt 128, batch 32: ms per decode step;
  t5    T5-base config, source 512, batch 16: samples/s;
  bart  BART-large config, source 1024, batch 32: samples/s.
genrun runs twice per workload: beam candidates ranked on the device
(genc_beam_topk, only k ids and scores a row cross) and, GENC_CUDA_BEAMS=0,
ranked on the host from copied logits. GPT-2 also runs a plan whose beams share
their prompt (genc --max-new-tokens 64): a row of its own.

--largest: row (d) too, for each seq2seq workload asked for: the largest batch
genrun runs (genrun --stats' estimate of what the device holds, then plans of
that batch and of 10% steps below it until one runs) and the largest HF
generate() runs without running out of memory (doubling from the workload's
batch, then halving the gap to within 1/16), each with its samples/s.

--check: a 2-layer GPT-2 at full width and vocabulary (50,257 logits a row:
the kernel's several-part path) as an f32 plan, beam searches with and
without every processor the device rule takes (penalties, n-gram bans,
min-new-tokens, forced EOS, suppressions, the exponential decay), on the GPU
and on the CPU: the same tokens, scores within 1e-4.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (its model shapes and helpers)

WORKLOADS = {
    "gpt2": dict(export=bench.MODELS["gpt2"], seq2seq=False, batch=32, source=128),
    "t5": dict(export=["--arch", "t5", "--set", "d_model=768", "--set", "d_ff=3072", "--set", "num_layers=12",
                       "--set", "num_decoder_layers=12", "--set", "num_heads=12", "--set", "d_kv=64",
                       "--set", "vocab_size=32128", "--set", "decoder_start_token_id=0", "--allow-new-keys"], seq2seq=True,
               batch=16, source=512),
    "bart": dict(export=["--arch", "bart", "--set", "d_model=1024", "--set", "encoder_layers=12",
                         "--set", "decoder_layers=12", "--set", "encoder_attention_heads=16",
                         "--set", "decoder_attention_heads=16", "--set", "encoder_ffn_dim=4096",
                         "--set", "decoder_ffn_dim=4096", "--set", "vocab_size=50265",
                         "--set", "max_position_embeddings=1024"], seq2seq=True, batch=32, source=1024),
}
BEAMS, NGRAM, NEW = 4, 3, 64


def run(cmd, env, what):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        bench.log(f"{what} failed\n{r.stderr[-2000:]}")
        return None
    return r


def export(root, d, args_):
    if os.path.exists(os.path.join(d, "config.json")):
        return True
    r = subprocess.run([sys.executable, os.path.join(root, "tools", "export.py"), *args_, "--seed", "3",
                        "--no-check", "--out", d], capture_output=True, text=True)
    if r.returncode:
        bench.log(f"export {d} failed\n{r.stderr[-2000:]}")
    return r.returncode == 0


def onnx_input(d):
    return d if os.path.exists(os.path.join(d, "encoder.onnx")) else os.path.join(d, "model.onnx")


# Extra genc flags for the encoder-decoder workloads (--cross-kv-dtype i8).
SEQ2SEQ_FLAGS = []


def compile_plan(bindir, env, d, w, batch, plan, what, extra=()):
    """The workload's f16 plan for `batch` items of BEAMS beams; the run or None.
    An encoder-decoder's sources bound the cross cache, the decoder's start
    token and NEW tokens the beams' own caches (HF's max_length)."""
    lengths = (["--max-source-length", str(w["source"]), "--max-length", str(NEW + 1)] if w["seq2seq"]
               else ["--max-length", str(w["source"] + NEW + 1)])
    if w["seq2seq"]:
        lengths += SEQ2SEQ_FLAGS
    return run([os.path.join(bindir, "genc"), "compile", onnx_input(d), "-o", plan, "--dtype", "f16",
                "--max-batch", str(batch), "--max-beams", str(BEAMS), *lengths, *extra], env, what)


def genrun_beams(bindir, plan, prompts, new=NEW):
    """genrun's command for the workload's beam search on the GPU, with --stats."""
    return [os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts, "--num-beams", str(BEAMS),
            "--no-repeat-ngram-size", str(NGRAM), "--max-new-tokens", str(new), "--stats", "--output", os.devnull]


def check(root, bindir, env, work):
    d = os.path.join(work, "gpt2-2l")
    if not export(root, d, ["--arch", "gpt2", "--set", "n_embd=768", "--set", "n_layer=2", "--set", "n_head=12",
                            "--set", "vocab_size=50257", "--set", "n_positions=1024"]):
        return False
    plan = os.path.join(work, "gpt2-2l.plan")
    if not run([os.path.join(bindir, "genc"), "compile", os.path.join(d, "model.onnx"), "-o", plan, "--max-batch",
                "4", "--max-beams", "4", "--max-length", "96"], env, "genc (check)"):
        return False
    rng = random.Random()  # fresh prompts each run
    prompts = os.path.join(work, "check.jsonl")
    with open(prompts, "w") as f:
        for n in (1, 7, 33, 60):
            f.write(json.dumps({"input_ids": [rng.randrange(3, 50257) for _ in range(n)]}) + "\n")
    ok = True
    for opts in (["--num-beams", "4"],
                 ["--num-beams", "4", "--no-repeat-ngram-size", "3", "--repetition-penalty", "1.3"],
                 ["--num-beams", "3", "--no-repeat-ngram-size", "2", "--min-new-tokens", "6",
                  "--num-return-sequences", "2", "--early-stopping", "true"],
                 ["--num-beams", "4", "--forced-eos-token-id", "[7, 50256]", "--suppress-tokens", "[11, 13]",
                  "--repetition-penalty", "0.8"],
                 ["--num-beams", "4", "--encoder-repetition-penalty", "1.4", "--encoder-no-repeat-ngram-size", "2",
                  "--exponential-decay-length-penalty", "[2, 1.3]", "--eos-token-id", "7", "--eos-token-id", "50256"]):
        outs = {}
        for dev in os.environ.get("BEAM_CHECK_DEVICES", "cpu,cuda").split(","):  # cpu,cpu: a dry run here
            r = run([os.path.join(bindir, "genrun"), plan, "--device", dev, "--input", prompts, "--max-new-tokens",
                     "16", *opts], env, f"genrun {dev} {' '.join(opts)}")
            if r is None:
                return False
            outs[dev] = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
        worst, differ = 0.0, 0
        a_, b_ = outs.values() if len(outs) == 2 else (outs["cpu"], outs["cpu"])
        for a, b in zip(a_, b_):
            for sa, sb in zip(a["sequences"], b["sequences"]):
                differ += sa["output_ids"] != sb["output_ids"]
                worst = max(worst, abs(sa["score"] - sb["score"]))
        good = differ == 0 and worst <= 1e-4 and len(a_) == len(b_) == 4
        ok &= good
        bench.log(f"check {' '.join(opts)}: {'ok' if good else 'FAIL'}: {differ} sequences differ, "
                  f"max |score diff| {worst:.2e}")
    return ok


def largest_ours(bindir, env, work, name, w, d, plan, prompts):
    """(batch, samples/s) of the largest batch genrun runs, or None."""
    r = run(genrun_beams(bindir, plan, prompts, new=1), env, f"genrun {name} (memory)")
    m = r and re.search(r"this device holds ([0-9]+) sequences", r.stderr)
    if not m:
        bench.log(f"{name}: genrun --stats gave no estimate of the largest batch")
        return None
    estimate = int(m.group(1))
    rows = [json.loads(line) for line in open(prompts)]
    for n in sorted({max(1, int(estimate * f)) for f in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)}, reverse=True):
        big = os.path.join(work, f"{name}-b{n}.plan")
        if not compile_plan(bindir, env, d, w, n, big, f"genc {name} b{n}"):
            continue
        many = os.path.join(work, f"{name}-b{n}.jsonl")
        with open(many, "w") as f:
            for i in range(n):
                f.write(json.dumps(rows[i % len(rows)]) + "\n")
        r = run(genrun_beams(bindir, big, many), env, f"genrun {name} b{n}")
        os.remove(big)
        m = r and re.search(r"total ([0-9.]+) s", r.stderr)
        if m:
            bench.log(f"{name}: genrun runs batch {n} (its estimate {estimate})")
            return n, n / float(m.group(1))
    return None


def largest_hf(torch, model, cfg, w, kw):
    """(batch, samples/s) of the largest batch HF generate() runs, or None."""
    def fits(b):
        try:
            x = torch.randint(3, cfg.vocab_size, (b, w["source"]), device="cuda")
            k = dict(kw, attention_mask=torch.ones_like(x))
            torch.cuda.synchronize()
            t = time.perf_counter()
            model.generate(x, max_new_tokens=NEW, **k)
            torch.cuda.synchronize()
            return b / (time.perf_counter() - t)
        except torch.cuda.OutOfMemoryError:
            return None
        finally:
            torch.cuda.empty_cache()
    ok, bad = None, None
    b = w["batch"]
    while bad is None:
        sps = fits(b)
        bench.log(f"HF batch {b}: {'%.1f samples/s' % sps if sps else 'out of memory'}")
        if sps:
            ok = (b, sps)
            b *= 2
        else:
            bad = b
    if ok is None:
        return None
    while bad - ok[0] > max(1, ok[0] // 16):
        b = (ok[0] + bad) // 2
        sps = fits(b)
        bench.log(f"HF batch {b}: {'%.1f samples/s' % sps if sps else 'out of memory'}")
        if sps:
            ok = (b, sps)
        else:
            bad = b
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt2,t5,bart")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--largest", action="store_true", help="row (d): the largest batch each runs")
    ap.add_argument("--cross-kv-dtype", choices=["i8"],
                    help="compile the encoder-decoder workloads' plans with this cross cache (genc --cross-kv-dtype)")
    ap.add_argument("--profile", action="store_true",
                    help="each genrun row once more with GENC_CUDA_PROFILE=1: device time per step kind, logged")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/beam_bench"))
    args = ap.parse_args()
    if args.cross_kv_dtype:
        SEQ2SEQ_FLAGS.extend(["--cross-kv-dtype", args.cross_kv_dtype])
        print(f"encoder-decoder plans: genc --cross-kv-dtype {args.cross_kv_dtype}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bindir = os.environ.get("BEAM_BIN") or bench.unpack_tools(root)
    env = bench.cuda_env()
    work = tempfile.mkdtemp()
    ok = True
    if args.check:
        ok = check(root, bindir, env, work)
    models = [m for m in args.models.split(",") if m]
    if not models:
        sys.exit(0 if ok else 1)
    import torch
    import transformers
    torch.set_grad_enabled(False)
    dev = torch.cuda.get_device_name()
    rows, largest_rows = [], []
    header = ("| workload | batch | genrun ms/step | genrun samples/s | genrun, host ranking ms/step "
              "| HF ms/step | HF samples/s | genrun / HF (samples/s) |")
    for name in models:
        w = WORKLOADS[name]
        d = os.path.join(work, name)
        if not export(root, d, w["export"]):
            continue
        plan = os.path.join(work, name + ".plan")
        t0 = time.time()
        if not compile_plan(bindir, env, d, w, w["batch"], plan, f"genc {name}"):
            continue
        bench.log(f"{name}: genc compile {time.time() - t0:.1f} s")
        cfg = transformers.AutoConfig.from_pretrained(d)
        cfg.use_cache = True
        g = torch.Generator().manual_seed(5)
        ids = torch.randint(3, cfg.vocab_size, (w["batch"], w["source"]), generator=g)
        prompts = os.path.join(work, name + ".jsonl")
        with open(prompts, "w") as f:
            for row in ids.tolist():
                f.write(json.dumps({"input_ids": row}) + "\n")

        def genrun(extra, plan=plan):
            res = None
            for _ in range(2):  # the second run is reported
                r = run(genrun_beams(bindir, plan, prompts), dict(env, **extra), f"genrun {name}")
                if r is None:
                    return None
                m = re.search(r"time to first token ([0-9.]+) ms, decode ([0-9.]+) ms/token, total ([0-9.]+) s",
                              r.stderr)
                res = (float(m.group(2)), float(m.group(3)), float(m.group(1)))
            return res
        def profile(extra, plan=plan, label=""):
            """Device time per step kind (graphs off) against the run's ms a step:
            what the host adds between steps."""
            r = run(genrun_beams(bindir, plan, prompts), dict(env, GENC_CUDA_PROFILE="1", **extra), f"genrun {name}")
            if r:
                for line in r.stderr.splitlines():
                    if "profile:" in line or "time to first token" in line:
                        bench.log(f"{name}{label}: {line}")

        ours = genrun({})
        host = genrun({"GENC_CUDA_BEAMS": "0"})
        # Decoder-only: the beams sharing their prompt (genc --max-new-tokens,
        # read by index on the GPU), a row of its own.
        shared = None
        if not w["seq2seq"] and compile_plan(bindir, env, d, w, w["batch"], plan + ".shared", f"genc {name} shared",
                                             ["--max-new-tokens", str(NEW)]):
            shared = genrun({}, plan + ".shared")
            if args.profile:
                profile({"GENC_CUDA_SHARED_PROMPTS": "0"}, plan + ".shared", ", shared plan, copies")
                profile({}, plan + ".shared", ", shared prompts")
        if args.profile:
            profile({})
        # The driver loads each kernel at its first launch by default: what
        # that costs a process's first batch.
        eager = genrun({"CUDA_MODULE_LOADING": "EAGER"})
        if eager:
            bench.log(f"{name}: time to first token {ours[2]:.1f} ms, total {ours[1]:.3f} s; with eager module "
                      f"loading {eager[2]:.1f} ms, {eager[1]:.3f} s")
        if ours is None:
            continue
        cls = transformers.AutoModelForSeq2SeqLM if w["seq2seq"] else transformers.AutoModelForCausalLM
        model = cls.from_config(cfg, dtype=torch.float16).cuda().eval()
        x = ids.cuda()
        kw = dict(num_beams=BEAMS, no_repeat_ngram_size=NGRAM, attention_mask=torch.ones_like(x), use_cache=True)
        if not w["seq2seq"]:
            kw["pad_token_id"] = 0

        def hf(n):
            torch.cuda.synchronize()
            t = time.perf_counter()
            out = model.generate(x, max_new_tokens=n, **kw)
            torch.cuda.synchronize()
            steps = out.shape[1] - (0 if w["seq2seq"] else x.shape[1])
            return time.perf_counter() - t, steps
        hf(2)
        t1, _ = hf(1)
        tn, steps = hf(NEW)
        hf_step = (tn - t1) / max(steps - 1, 1) * 1e3
        hf_sps = w["batch"] / tn
        our_sps = w["batch"] / ours[1]
        row = (f"| {name} | {w['batch']} | {ours[0]:.3f} | {our_sps:.1f} | {host[0] if host else float('nan'):.3f} "
               f"| {hf_step:.3f} | {hf_sps:.1f} | {our_sps / hf_sps:.2f}x |")
        bench.log(row)
        rows.append(row)
        if shared:
            rows.append(f"| {name}, shared prompts | {w['batch']} | {shared[0]:.3f} | {w['batch'] / shared[1]:.1f} | - "
                        f"| {hf_step:.3f} | {hf_sps:.1f} | {w['batch'] / shared[1] / hf_sps:.2f}x |")
            bench.log(rows[-1])
        if args.largest and w["seq2seq"]:
            big = largest_ours(bindir, env, work, name, w, d, plan, prompts)
            hf_big = largest_hf(torch, model, cfg, w, kw)
            if big and hf_big:
                largest_rows.append(f"| {name} | {big[0]} | {big[1]:.1f} | {hf_big[0]} | {hf_big[1]:.1f} "
                                    f"| {big[0] / hf_big[0]:.2f}x |")
                bench.log(largest_rows[-1])
        del model
        torch.cuda.empty_cache()
    table = (f"device: {dev}; beam {BEAMS}, no_repeat_ngram_size {NGRAM}, {NEW} new tokens, f16 plans "
             f"(HF: fp16), random weights\n\n{header}\n|{'---|' * 8}\n" + "\n".join(rows) + "\n")
    if largest_rows:
        table += ("\nThe largest batch each runs (source and beams as above):\n\n| workload | genrun batch "
                  "| genrun samples/s | HF batch | HF samples/s | genrun / HF (batch) |\n|---|---|---|---|---|---|\n"
                  + "\n".join(largest_rows) + "\n")
    print("\n" + table)
    with open(os.path.join(args.out, "beam_bench.md"), "w") as f:
        f.write(table)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
