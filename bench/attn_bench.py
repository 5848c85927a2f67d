#!/usr/bin/env python3
"""Decode attention alone, genrun's kernels against torch SDPA, in TB/s (#9's workload c).

usage (on the GPU machine, after tools/pack.sh here):
  python3 bench/attn_bench.py [--batches 1,2,4,...,256] [--tokens 65536] [--out DIR]
  python3 bench/attn_bench.py --batches 1,16 --ncu-compare   # Nsight Compute: ours against SDPA's kernels

The shape: 16 query heads, 2 KV heads, head dim 128, f16 cache, batch x context =
--tokens cached tokens, so every row reads the same 64 MiB of K/V per layer.

genrun: a random-weight Llama of that attention shape (--layers layers, tiny FFN
and vocabulary) compiled per batch with max-length = context + --new; decode
steps run with every kind but attention left out (GENC_CUDA_SKIP, graphs on),
and once with attention left out too; the difference per layer is one decode
attention op as the executor runs it (prologue + attend + merge), timed inside
the replayed graph. The prefill's attention is skipped as well (only decode is
measured; the cache rows hold whatever they hold, the timing does not care).

SDPA: torch.nn.functional.scaled_dot_product_attention on q [B, 16, 1, 128],
k, v [B, 2, L, 128] (enable_gqa), f16, one CUDA graph of --reps calls replayed.

Bytes = B x context x 2 (K, V) x 2 KV heads x 128 x 2 bytes, at the decode
steps' mean context for genrun. The copy bandwidth (bytes read + written by
a 1 GiB copy) is measured in the same run; the issue's target is >= 85% of it
at >= 16k tokens per sequence and >= 2x SDPA on every row.
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
from bench import copy_bandwidth, cuda_env, log, unpack_tools  # noqa: E402

HEADS, KV_HEADS, HEAD_DIM = 16, 2, 128


def sdpa_seconds(torch, b, length, reps):
    """Seconds per SDPA call, from one graph of `reps` calls."""
    F = torch.nn.functional
    q = torch.randn(b, HEADS, 1, HEAD_DIM, dtype=torch.float16, device="cuda")
    k = torch.randn(b, KV_HEADS, length, HEAD_DIM, dtype=torch.float16, device="cuda")
    v = torch.randn_like(k)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    g.replay()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    del g, q, k, v
    torch.cuda.empty_cache()
    return best / reps


# What the decode kernels and SDPA's are compared on (--ncu-compare).
NCU_METRICS = [
    "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_read.sum", "launch__grid_size", "launch__block_size",
    "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static",
    "launch__occupancy_limit_registers", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", "smsp__inst_executed.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "smsp__inst_executed_op_ldgsts.sum", "sm__cycles_active.avg",
]
SDPA_SCRIPT = """
import sys, torch
F = torch.nn.functional
b, length, heads, kv, d = map(int, sys.argv[1:6])
q = torch.randn(b, heads, 1, d, dtype=torch.float16, device="cuda")
k = torch.randn(b, kv, length, d, dtype=torch.float16, device="cuda")
v = torch.randn_like(k)
for _ in range(8):
    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
"""


def ncu_metrics(cmd, kernels, skip, count, env):
    """{kernel name: {metric: value}} of the launches ncu profiles (the last of each name)."""
    import csv
    import io
    r = subprocess.run(["ncu", "--cache-control", "none", "--clock-control", "none", "-k", "regex:" + kernels,
                        "--launch-skip", str(skip), "--launch-count", str(count), "--csv",
                        "--metrics", ",".join(NCU_METRICS), *cmd], capture_output=True, text=True, env=env, timeout=300)
    out = {}
    lines = [l for l in r.stdout.splitlines() if l.startswith('"')]
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row.get("Kernel Name", "?").split("(")[0][:40]
        out.setdefault(name, {})[row.get("Metric Name")] = f"{row.get('Metric Value')} {row.get('Metric Unit') or ''}".strip()
    if not out:
        log(f"ncu gave nothing for {kernels}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--tokens", type=int, default=65536, help="batch x context")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/attn_bench"))
    ap.add_argument("--ncu", help="instead of the table: Nsight Compute's detail of the decode kernel, "
                    "this regex's kernels, for each batch")
    ap.add_argument("--trace", action="store_true",
                    help="plans compiled with genc --attention-trace; each row also prints the last layer's decode and "
                         "merge stage stamps (block (0, 0), splits 0-7; docs/cuda.md)")
    ap.add_argument("--ncu-compare", action="store_true",
                    help="instead of the table: one table of Nsight Compute metrics (NCU_METRICS) for each batch, "
                    "our decode and merge kernels against the kernels of one SDPA call, side by side")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    torch.set_grad_enabled(False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bindir = unpack_tools(root)
    env = cuda_env()
    work = tempfile.mkdtemp()
    bw = copy_bandwidth(torch, "cuda")
    dev = torch.cuda.get_device_name()
    log(f"device: {dev}; copy bandwidth {bw / 1e12:.3f} TB/s (read + write)")
    model = os.path.join(work, "m")
    longest = args.tokens + args.new
    r = subprocess.run([sys.executable, os.path.join(root, "tools", "export.py"), "--arch", "llama",
                        "--set", f"hidden_size={HEADS * HEAD_DIM}", "--set", f"num_attention_heads={HEADS}",
                        "--set", f"num_key_value_heads={KV_HEADS}", "--set", f"head_dim={HEAD_DIM}",
                        "--set", f"num_hidden_layers={args.layers}", "--set", "intermediate_size=256",
                        "--set", "vocab_size=512", "--set", f"max_position_embeddings={longest}",
                        "--seed", "3", "--no-check", "--out", model], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"export failed\n{r.stderr[-2000:]}")
    rows = []
    header = ("| batch | context | genrun µs/layer | genrun TB/s | genrun / copy bw | SDPA µs | SDPA TB/s "
              "| genrun / SDPA |")
    for b in (int(x) for x in args.batches.split(",")):
        length = args.tokens // b
        plan = os.path.join(work, f"b{b}.plan")
        r = subprocess.run([os.path.join(bindir, "genc"), "compile", os.path.join(model, "model.onnx"), "-o", plan,
                            "--dtype", "f16", "--max-batch", str(b), "--max-beams", "1",
                            "--max-length", str(length + args.new), "--quiet"]
                           + (["--attention-trace"] if args.trace else []), capture_output=True, text=True, env=env)
        if r.returncode:
            log(f"b{b}: genc failed\n{r.stderr[-2000:]}")
            continue
        prompts = os.path.join(work, f"b{b}.jsonl")
        rnd = random.Random(b)
        with open(prompts, "w") as f:
            for _ in range(b):
                f.write(json.dumps({"input_ids": [rnd.randrange(3, 512) for _ in range(length)]}) + "\n")

        def step_ms(skip):
            r = subprocess.run([os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts,
                                "--max-new-tokens", str(args.new), "--stats", "--output", os.devnull],
                               capture_output=True, text=True, env=dict(env, GENC_CUDA_SKIP=skip), timeout=300)
            m = re.search(r"decode ([0-9.]+) ms/token", r.stderr)
            if r.returncode or not m:
                log(f"b{b}: genrun failed\n{r.stderr[-2000:]}")
                return None
            return float(m.group(1))
        if args.ncu_compare:  # a decode step's attention kernels (after the prefill's) and one SDPA call's
            ours = ncu_metrics([os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts,
                                "--max-new-tokens", "4", "--output", os.devnull], r"attn_.*_(decode|merge)",
                               2 * args.layers, 2, dict(env, GENC_CUDA_SKIP="gemm,fused,copy,prefill:attention",
                                                         GENC_CUDA_GRAPHS="0"))
            script = os.path.join(work, "sdpa.py")
            open(script, "w").write(SDPA_SCRIPT)
            theirs = ncu_metrics([sys.executable, script, str(b), str(length), str(HEADS), str(KV_HEADS),
                                  str(HEAD_DIM)], r"flash|fmha|attention|sdpa|softmax|combine", 4, 4, env)
            cols = list(ours.items()) + [("sdpa " + k, v) for k, v in theirs.items()]
            log(f"== ncu b{b} context {length}: useful K/V bytes a call {b * length * 2 * KV_HEADS * HEAD_DIM * 2}")
            log("| metric | " + " | ".join(k for k, _ in cols) + " |")
            log("|---|" + "---|" * len(cols))
            for m in NCU_METRICS:
                log(f"| {m} | " + " | ".join(v.get(m, "") for _, v in cols) + " |")
            continue
        if args.ncu:  # one decode step's attention kernels in detail, after the prefill's
            r = subprocess.run(["ncu", "--cache-control", "none", "--clock-control", "none", "-k", "regex:" + args.ncu,
                                "--launch-skip", str(args.layers), "--launch-count", "2", "--section",
                                "SpeedOfLight", "--section", "LaunchStats", "--section", "Occupancy", "--section",
                                "WarpStateStats", "--section", "MemoryWorkloadAnalysis", "--section",
                                "SourceCounters", "--print-details", "all",
                                os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts,
                                "--max-new-tokens", "4", "--output", os.devnull],
                               capture_output=True, text=True, env=dict(env, GENC_CUDA_SKIP="gemm,fused,copy,prefill:attention",
                                                                        GENC_CUDA_GRAPHS="0"), timeout=300)
            log(f"== ncu b{b} context {length}")
            keep = re.compile(os.environ.get("NCU_KEEP", r"."))  # NCU_KEEP=REGEX: those lines (and the kernels') only
            log("\n".join(l[:140] for l in r.stdout.splitlines() if l.strip() and not l.startswith("==PROF==")
                          and not set(l.strip()) <= set("- ") and (keep.search(l) or "attn_" in l))[-20000:])
            continue
        attn = step_ms("gemm,fused,copy,prefill:attention")
        none = step_ms("gemm,fused,copy,attention")
        if args.trace:
            r = subprocess.run([os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts,
                                "--max-new-tokens", str(args.new), "--output", os.devnull], capture_output=True,
                               text=True, timeout=300, env=dict(env, GENC_CUDA_SKIP="gemm,fused,copy,prefill:attention",
                                                                GENC_CUDA_ATTN_TRACE="1"))
            log(f"b{b} stages:\n" + "\n".join(l for l in r.stderr.splitlines() if "attention trace" in l))
        if attn is None or none is None:
            continue
        ours_s = max(attn - none, 1e-6) / args.layers * 1e-3
        ctx = length + args.new / 2
        ours_bytes = b * ctx * 2 * KV_HEADS * HEAD_DIM * 2
        sdpa_s = sdpa_seconds(torch, b, length, args.reps)
        sdpa_bytes = b * length * 2 * KV_HEADS * HEAD_DIM * 2
        ours_tb, sdpa_tb = ours_bytes / ours_s / 1e12, sdpa_bytes / sdpa_s / 1e12
        row = (f"| {b} | {length} | {ours_s * 1e6:.1f} | {ours_tb:.2f} | {ours_tb * 1e12 / bw:.0%} | "
               f"{sdpa_s * 1e6:.1f} | {sdpa_tb:.2f} | {ours_tb / sdpa_tb:.2f}x |")
        log(row + f"  (step {attn:.3f} ms, empty step {none:.3f} ms)")
        rows.append(row)
    table = [f"device: {dev}; copy bandwidth {bw / 1e12:.3f} TB/s (read + write); decode attention, "
             f"{HEADS} query / {KV_HEADS} KV heads, head dim {HEAD_DIM}, f16, batch x context = {args.tokens}",
             "", header, "|" + "---|" * 8, *rows]
    open(os.path.join(args.out, "attn_bench.md"), "w").write("\n".join(table) + "\n")
    log("\n".join(table))


if __name__ == "__main__":
    main()
