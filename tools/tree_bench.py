#!/usr/bin/env python3
"""Tree attention's benchmark (issues #11 and #14): decode ms/token at long contexts on one GPU and
on several, the attention part alone, the combine's cost per layer, and the longest context each
GPU count holds.

usage (on a machine with two GPUs or more, after tools/pack.sh here):
  python3 tools/tree_bench.py [--gpus 1,2] [--contexts 32768,131072,262144,524288] [--new 8]
                              [--work DIR] [--phase prepare|run|all]

The model: the 1.1B Llama config (TinyLlama's: d 2048, 22 layers, 32 heads, 4 KV heads, head dim
64, FFN 5632, vocabulary 32000), random weights, f16 plans, batch 1, greedy. (The issue's
Llama-3-8B-like config would take tens of minutes of the device's time to export and compile
with random weights; the 1.1B's KV cache, 22.5 KB a position, still fills a GPU at ~6M
positions.)

Only decode is timed: the prompt's prefill runs with every kernel skipped (GENC_CUDA_SKIP), so a
context of millions of positions costs seconds to set up; the cache holds zeros (the executor
clears it at load), which costs the attention kernels the same time as real keys. Per context
and GPU count, genrun's `decode ms/token` (--stats) is read for:
  full    every decode kernel;
  attn    attention (and on several GPUs its combine) alone;
  nocomb  attention alone, the combine skipped too (several GPUs: attn - nocomb is the combine);
  empty   nothing but the graph's launch and the token choice.
Attention per layer = (attn - empty) / layers. The longest context: a plan whose max length fills
the GPUs' free memory (nvidia-smi before any run) less the weights, tables and workspaces, run at
that length. Bytes sent per layer per step: the two all-reduces' messages, lse [T, H] and
[w·o | w] [T, H, D + 1], in f32 (NCCL's ring moves 2 (N - 1) / N of each per GPU).

--phase prepare exports and compiles into --work (and may run in the background while another
check holds the GPUs); run measures from what prepare left there; all does both.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import time

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 22, 2048, 32, 4, 64, 5632, 32000
KV_BYTES = LAYERS * 2 * KV_HEADS * HEAD_DIM * 2  # f16 K and V of one position, every layer
PREFILL_SKIP = "prefill:gemm,prefill:fused,prefill:attention,prefill:copy,prefill:combine"
VARIANTS = {
    "full": PREFILL_SKIP,
    "attn": PREFILL_SKIP + ",gemm,fused,copy",
    "nocomb": PREFILL_SKIP + ",gemm,fused,copy,combine",
    "empty": PREFILL_SKIP + ",gemm,fused,copy,attention,combine",
}


def log(*a):
    print(*a, flush=True)


def free_bytes():
    """Free memory of each GPU, read without opening a context of our own."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) * (1 << 20) for x in out.split()]


def longest(free, gpus):
    """Positions a plan may hold on `gpus` GPUs: each keeps the weights (2.2 GB), the position
    tables (at most 512 B a position, every GPU), the workspaces (~3 GB with --max-tokens 8192) and
    its 1/gpus of the cache."""
    fixed = 2.3e9 + 3.5e9
    n = int((min(free) - fixed) / (KV_BYTES / gpus + 512))
    return n // 65536 * 65536


def bindir(root, work):
    d = os.path.join(work, "bin")
    if not os.path.exists(os.path.join(d, "genrun")):
        os.makedirs(d, exist_ok=True)
        with tarfile.open(os.path.join(root, "dist", "genc-linux-x86_64.tar.gz")) as t:
            t.extractall(d)
    return d


def prepare(root, work, lengths):
    bins = bindir(root, work)
    model = os.path.join(work, "model")
    t = time.time()
    if not os.path.exists(os.path.join(model, "model.onnx")):
        r = subprocess.run([sys.executable, os.path.join(root, "tools", "export.py"), "--arch", "llama",
                            "--set", f"hidden_size={HIDDEN}", "--set", f"intermediate_size={FFN}",
                            "--set", f"num_hidden_layers={LAYERS}", "--set", f"num_attention_heads={HEADS}",
                            "--set", f"num_key_value_heads={KV_HEADS}", "--set", f"head_dim={HEAD_DIM}",
                            "--set", f"vocab_size={VOCAB}", "--set", f"max_position_embeddings={max(lengths)}",
                            "--seed", "11", "--no-check", "--out", model], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"export failed\n{r.stderr[-3000:]}")
        log(f"export: {time.time() - t:.0f} s")
    for n in lengths:
        plan = os.path.join(work, f"L{n}.plan")
        if os.path.exists(plan):
            continue
        t = time.time()
        r = subprocess.run([os.path.join(bins, "genc"), "compile", os.path.join(model, "model.onnx"), "-o",
                            plan + ".tmp", "--dtype", "f16", "--max-batch", "1", "--max-beams", "1",
                            "--max-length", str(n), "--max-tokens", "8192", "--quiet"], capture_output=True,
                           text=True)
        if r.returncode:
            sys.exit(f"genc (max length {n}) failed\n{r.stderr[-3000:]}")
        os.rename(plan + ".tmp", plan)
        log(f"compile max-length {n}: {time.time() - t:.0f} s, {os.path.getsize(plan) / 1e9:.2f} GB")


def prompt(work, n):
    path = os.path.join(work, f"p{n}.jsonl")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write('{"input_ids": [' + ",".join(["5"] * n) + "]}\n")
    return path


def decode_ms(bins, plan, gpus, context, new, variant, logf):
    env = dict(os.environ, GENC_CUDA_SKIP=VARIANTS[variant], NCCL_NVLS_ENABLE="0")
    t = time.time()
    r = subprocess.run([os.path.join(bins, "genrun"), plan, "--device", "cuda", "--gpus", str(gpus), "--input",
                        prompt(os.path.dirname(plan), context), "--max-new-tokens", str(new), "--stats",
                        "--output", os.devnull], capture_output=True, text=True, env=env, timeout=400)
    m = re.search(r"decode ([0-9.]+) ms/token", r.stderr)
    logf.write(f"== {os.path.basename(plan)} gpus {gpus} context {context} {variant}: rc {r.returncode}, "
               f"{time.time() - t:.1f} s\n{r.stderr[-1500:]}\n")
    logf.flush()
    if r.returncode or not m:
        log(f"  {variant} x{gpus} at {context}: failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
        return None
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", default="1,2")
    ap.add_argument("--contexts", default="32768,131072,262144,524288")
    ap.add_argument("--new", type=int, default=8)
    ap.add_argument("--work", default="/tmp/tree_bench")
    ap.add_argument("--phase", default="all", choices=["prepare", "run", "all"])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/tree_bench"))
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    gpus = [int(g) for g in args.gpus.split(",")]
    contexts = [int(c) for c in args.contexts.split(",")]
    lf = os.path.join(args.work, "lengths.json")
    if os.path.exists(lf):
        lengths = {int(k): v for k, v in json.load(open(lf)).items()}
    else:
        free = free_bytes()
        log(f"free per GPU: {[f'{b / 2**30:.1f} GiB' for b in free]}")
        lengths = {g: longest(free[:g], g) for g in gpus}
        json.dump(lengths, open(lf, "w"))
    # One plan holds the listed contexts (for every GPU count: the same plan, the same timings but
    # for the sharding); one per GPU count at its longest.
    common = max(contexts) + args.new
    need = sorted({common, *lengths.values()})
    log(f"plans: max length {need}; longest per GPU count {lengths}")
    if args.phase in ("prepare", "all"):
        prepare(root, args.work, need)
    if args.phase == "prepare":
        return
    bins = bindir(root, args.work)
    logf = open(os.path.join(args.out, "tree_bench.log"), "a")
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.split("\n")[0]
    rows, results = [], {}
    for g in gpus:
        for c in contexts + ["longest"]:
            plan_len = lengths[g] if c == "longest" else common
            ctx = plan_len - args.new if c == "longest" else c
            plan = os.path.join(args.work, f"L{plan_len}.plan")
            variants = ["full"] if c == "longest" else ["full", "attn", "empty"] + (["nocomb"] if g > 1 else [])
            ms = {v: decode_ms(bins, plan, g, ctx, args.new, v, logf) for v in variants}
            results[(g, c)] = (ctx, ms)
            attn = (ms["attn"] - ms["empty"]) / LAYERS * 1e3 if ms.get("attn") and ms.get("empty") else None
            comb = (ms["attn"] - ms["nocomb"]) / LAYERS * 1e3 if ms.get("attn") and ms.get("nocomb") else None
            one = results.get((1, c), (0, {}))[1]
            one_attn = (one["attn"] - one["empty"]) / LAYERS * 1e3 if one.get("attn") and one.get("empty") else None
            fmt = lambda x, f="{:.3f}": f.format(x) if x is not None else "-"  # noqa: E731
            speed = (fmt(one["full"] / ms["full"], "{:.2f}x") if g > 1 and c != "longest" and one.get("full")
                     and ms.get("full") else "")
            aspeed = fmt(one_attn / attn, "{:.2f}x") if g > 1 and one_attn and attn else ""
            kv_gb = ctx * KV_BYTES / 1e9
            row = (f"| {g} | {ctx} | {kv_gb:.1f} | {fmt(ms.get('full'))} | {speed} | {fmt(attn, '{:.1f}')} | {aspeed} "
                   f"| {fmt(comb, '{:.1f}')} |")
            log(row)
            rows.append(row)
    msg = [f"| {t} | {t * HEADS * 4} B | {t * HEADS * (HEAD_DIM + 1) * 4} B |" for t in (1,)]
    table = [f"device: {dev} x{max(gpus)}; Llama 1.1B config (22 layers, 32 heads, 4 KV heads, head dim 64), "
             f"f16, batch 1, greedy, {args.new} decode steps after a skipped prefill",
             "", "| GPUs | context | KV GB | decode ms/token | vs 1 GPU | attention µs/layer | vs 1 GPU "
             "| combine µs/layer |", "|---|---|---|---|---|---|---|---|", *rows, "",
             f"longest context held: " + ", ".join(f"{g} GPU{'s' if g > 1 else ''}: {lengths[g] - args.new}"
                                                   for g in gpus) +
             (f" ({(lengths[max(gpus)]) / lengths[1]:.2f}x)" if 1 in lengths and max(gpus) > 1 else ""),
             "", "bytes sent per layer per step (the two all-reduce messages, f32):", "",
             "| tokens | max of lse | sum of [w·o, w] |", "|---|---|---|", *msg]
    open(os.path.join(args.out, "tree_bench.md"), "w").write("\n".join(table) + "\n")
    log("\n".join(table))


if __name__ == "__main__":
    main()
