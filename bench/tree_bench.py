#!/usr/bin/env python3
"""Tree attention's benchmark (issues #11 and #14): decode ms/token at long contexts on one GPU and
on several, the attention part alone, the combine's cost per layer, and the longest context each
GPU count holds.

usage (on a machine with two GPUs or more, after tools/pack.sh here):
  python3 bench/tree_bench.py [--gpus 1,2] [--contexts 32768,131072,262144,524288] [--new 8]
                              [--work DIR] [--phase prepare|run|all]

The models (--models): llama1b, the 1.1B Llama config (TinyLlama's: d 2048, 22 layers, 32 heads,
4 KV heads, head dim 64, FFN 5632, vocabulary 32000) for whole decode steps and the longest
context; attn8b, Llama-3-8B's attention (d 4096, 32 heads, 8 KV heads, head dim 128) in 4 layers
with a tiny FFN and vocabulary, for the attention part alone. Random weights, f16 plans, batch 1,
greedy. (The whole Llama-3-8B-like config would take tens of minutes to export and compile with
random weights; the 1.1B's KV cache, 22.5 KB a position, still fills a
GPU at ~6M positions.)

Only decode is timed: the prompt's prefill runs with every kernel skipped (GENC_CUDA_SKIP), so a
context of millions of positions costs seconds to set up; the cache holds zeros (the executor
clears it at load), which costs the attention kernels the same time as real keys. Per context
and GPU count, genrun's `decode ms/token` (--stats) is read for:
  full    every decode kernel;
  attn    attention (and on several GPUs its combine) alone;
  gather  as attn with the one-collective combine (GENC_TREE_COMBINE=gather);
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
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (unpack_tools)

# The whole-step model (the 1.1B Llama config) and the attention-alone one (Llama-3-8B's
# attention: 32 heads, 8 KV heads, head dim 128; tiny FFN and vocabulary, 4 layers).
MODELS = {
    "llama1b": dict(layers=22, hidden=2048, heads=32, kv_heads=4, head_dim=64, ffn=5632, vocab=32000),
    "attn8b": dict(layers=4, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=256, vocab=512),
}


def kv_bytes(m):
    """f16 K and V of one position, every layer."""
    return m["layers"] * 2 * m["kv_heads"] * m["head_dim"] * 2


PREFILL_SKIP = "prefill:gemm,prefill:fused,prefill:attention,prefill:copy,prefill:combine"
VARIANTS = {  # name: (kinds skipped, the combine)
    "full": (PREFILL_SKIP, "allreduce"),
    "attn": (PREFILL_SKIP + ",gemm,fused,copy", "allreduce"),
    "gather": (PREFILL_SKIP + ",gemm,fused,copy", "gather"),
    "nocomb": (PREFILL_SKIP + ",gemm,fused,copy,combine", "allreduce"),
    "empty": (PREFILL_SKIP + ",gemm,fused,copy,attention,combine", "allreduce"),
}


def log(*a):
    print(*a, flush=True)


def free_bytes():
    """Free memory of each GPU, read without opening a context of our own."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) * (1 << 20) for x in out.split()]


def longest(free, gpus, m):
    """Positions a plan of model m may hold on `gpus` GPUs: each keeps the weights (2.2 GB), the
    position tables (at most 512 B a position, every GPU), the workspaces (~3 GB with --max-tokens
    8192) and its 1/gpus of the cache."""
    fixed = 2.3e9 + 3.5e9
    n = int((min(free) - fixed) / (kv_bytes(m) / gpus + 512))
    return n // 65536 * 65536


def bindir(root, work):
    d = os.path.join(work, "bin")
    if not os.path.exists(os.path.join(d, "genrun")):
        bench.unpack_tools(root, d)
    return d


def prepare(root, work, name, lengths):
    m = MODELS[name]
    bins = bindir(root, work)
    model = os.path.join(work, name)
    t = time.time()
    if not os.path.exists(os.path.join(model, "model.onnx")):
        r = subprocess.run([sys.executable, os.path.join(root, "tools", "export.py"), "--arch", "llama",
                            "--set", f"hidden_size={m['hidden']}", "--set", f"intermediate_size={m['ffn']}",
                            "--set", f"num_hidden_layers={m['layers']}", "--set", f"num_attention_heads={m['heads']}",
                            "--set", f"num_key_value_heads={m['kv_heads']}", "--set", f"head_dim={m['head_dim']}",
                            "--set", f"vocab_size={m['vocab']}", "--set", f"max_position_embeddings={max(lengths)}",
                            "--seed", "11", "--no-check", "--out", model], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"export failed\n{r.stderr[-3000:]}")
        log(f"export {name}: {time.time() - t:.0f} s")
    for n in lengths:
        plan = os.path.join(work, f"{name}-L{n}.plan")
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
    skip, combine = VARIANTS[variant]
    env = dict(os.environ, GENC_CUDA_SKIP=skip, GENC_TREE_COMBINE=combine, NCCL_NVLS_ENABLE="0")
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


def measure(bins, work, name, gpus, contexts, lengths, common, new, logf):
    """Rows of the table for model `name`: per GPU count and context, decode ms/token (llama1b),
    attention µs/layer, its speed-up over one GPU, and the combine's cost (all-reduce; gather)."""
    m = MODELS[name]
    layers = m["layers"]
    whole = name == "llama1b"
    rows, res = [], {}
    per_layer = lambda a, b: (a - b) / layers * 1e3 if a is not None and b is not None else None  # noqa: E731
    fmt = lambda x, f="{:.1f}": f.format(x) if x is not None else "-"  # noqa: E731
    for g in gpus:
        points = list(contexts) + (["longest"] if whole else [])
        if whole and g > 1 and 1 in lengths:
            points.append("longest-1")
        for c in points:
            if c == "longest":
                plan_len, ctx = lengths[g], lengths[g] - new
            elif c == "longest-1":
                plan_len, ctx = lengths[1], lengths[1] - new
            else:
                plan_len, ctx = common, c
            plan = os.path.join(work, f"{name}-L{plan_len}.plan")
            variants = (["full"] if whole else []) + ([] if isinstance(c, str) else ["attn", "empty"])
            if g > 1 and not isinstance(c, str):
                variants += ["gather", "nocomb"]
            ms = {v: decode_ms(bins, plan, g, ctx, new, v, logf) for v in variants}
            res[(g, c)] = ms
            attn, gather = per_layer(ms.get("attn"), ms.get("empty")), per_layer(ms.get("gather"), ms.get("empty"))
            comb, gcomb = per_layer(ms.get("attn"), ms.get("nocomb")), per_layer(ms.get("gather"), ms.get("nocomb"))
            one = res.get((1, "longest"), {}) if c == "longest-1" else {} if c == "longest" else res.get((1, c), {})
            one_attn = per_layer(one.get("attn"), one.get("empty"))
            best = min(x for x in (attn, gather) if x is not None) if attn is not None or gather is not None else None
            speed = fmt(one["full"] / ms["full"], "{:.2f}x") if g > 1 and one.get("full") and ms.get("full") else ""
            aspeed = fmt(one_attn / best, "{:.2f}x") if g > 1 and one_attn and best else ""
            cells = [str(g), str(ctx), f"{ctx * kv_bytes(m) / 1e9:.1f}"]
            if whole:
                cells += [fmt(ms.get("full"), "{:.3f}"), speed]
            cells += [fmt(attn), fmt(gather) if g > 1 else "", aspeed, fmt(comb) if g > 1 else "",
                      fmt(gcomb) if g > 1 else ""]
            row = "| " + " | ".join(cells) + " |"
            log(row)
            rows.append(row)
    head = ["GPUs", "context", "KV GB"] + (["decode ms/token", "vs 1 GPU"] if whole else []) + [
        "attention µs/layer (all-reduce)", "(gather)", "best vs 1 GPU", "combine µs/layer (all-reduce)",
        "(gather)"]
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *rows]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", default="1,2")
    ap.add_argument("--contexts", default="32768,131072,262144,524288")
    ap.add_argument("--attn-contexts", default="32768,131072,262144,524288,1048576")
    ap.add_argument("--models", default="attn8b,llama1b")
    ap.add_argument("--new", type=int, default=8)
    ap.add_argument("--work", default="/tmp/tree_bench")
    ap.add_argument("--phase", default="all", choices=["prepare", "run", "all"])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/tree_bench"))
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    gpus = [int(g) for g in args.gpus.split(",")]
    lf = os.path.join(args.work, "lengths.json")
    if os.path.exists(lf):
        lengths = {int(k): v for k, v in json.load(open(lf)).items()}
    else:
        free = free_bytes()
        log(f"free per GPU: {[f'{b / 2**30:.1f} GiB' for b in free]}")
        lengths = {g: longest(free[:g], g, MODELS["llama1b"]) for g in gpus}
        json.dump(lengths, open(lf, "w"))
    plans = {}
    for name in args.models.split(","):
        contexts = [int(c) for c in (args.contexts if name == "llama1b" else args.attn_contexts).split(",")]
        common = max(contexts) + args.new
        plans[name] = (contexts, common, sorted({common, *lengths.values()}) if name == "llama1b" else [common])
        log(f"{name}: plans of max length {plans[name][2]}; longest per GPU count {lengths}")
        if args.phase in ("prepare", "all"):
            prepare(root, args.work, name, plans[name][2])
    if args.phase == "prepare":
        return
    bins = bindir(root, args.work)
    logf = open(os.path.join(args.out, "tree_bench.log"), "a")
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.split("\n")[0]
    table = [f"device: {dev} x{max(gpus)}; f16, batch 1, greedy, {args.new} decode steps after a skipped prefill", ""]
    for name, (contexts, common, _) in plans.items():
        m = MODELS[name]
        table += [f"{name}: {m['layers']} layers, {m['heads']} heads, {m['kv_heads']} KV heads, head dim "
                  f"{m['head_dim']}, hidden {m['hidden']}, FFN {m['ffn']}, vocabulary {m['vocab']}", ""]
        table += measure(bins, args.work, name, gpus, contexts, lengths, common, args.new, logf)
        t, H, D = 1, m["heads"], m["head_dim"]
        table += ["", f"bytes sent per layer per step at batch 1 (f32): all-reduce: max of lse {t * H * 4} B, "
                  f"sum of [w·o, w] {t * H * (D + 1) * 4} B; gather: [o, lse] {t * H * (D + 1) * 4} B a GPU", ""]
        if name == "llama1b":
            table += ["longest context held: " + ", ".join(f"{g} GPU{'s' if g > 1 else ''}: {lengths[g] - args.new}"
                                                        for g in gpus) +
                      (f" ({lengths[max(gpus)] / lengths[1]:.2f}x)" if 1 in lengths and max(gpus) > 1 else ""), ""]
    open(os.path.join(args.out, "tree_bench.md"), "w").write("\n".join(table) + "\n")
    log("\n".join(table))


if __name__ == "__main__":
    main()
