#!/usr/bin/env python3
"""genrun against its peers on the GPU machine, in one run: one table.

usage (there, after tools/pack.sh here):
  python3 bench/bench.py [--models gpt2,llama1b] [--batches 1,32] [--prompt 128] [--new 128]
                         [--weights none,int4,int8] [--compile-peer] [--sampling] [--out DIR]
  python3 bench/bench.py --device cpu --models gpt2,llama135m --batches 1,8 --new 64   # here
  python3 bench/bench.py --step-table [--rows llama1b:1,llama1b:1@65536,...] [--budget 540]
      (the step-kernel table instead: bench/step_table.py says what it holds)

For each model (random weights, fp16, greedy, prompt --prompt tokens, --new new tokens):
  genrun --device cuda on an f16 plan: load time (not in the TTFT), time to first token,
  decode ms/token (its --stats);
  Hugging Face generate() eager; with --compile-peer also HF with a static cache and
  torch.compile (reduce-overhead), batch 1; with --sampling both genrun and HF eager
  again sampling (top-k 50, top-p 0.9, temperature 0.8): the token choice's cost;
  the floor: (weight bytes + KV bytes read per step at the mean context) / the
  device-to-device copy bandwidth measured here (bytes read + written); the
  weight bytes are the plan's decode_weights_bytes (genc --stats-json): a
  step reads a row of the embedding table a token, not the table (for the
  1.1B, 131 MB of its 2.2 GB; docs/performance.md defines the floor).
--weights int4,int8 adds plans of the same export compiled with `genc --weights`
(4/8-bit blocks of 32, symmetric; docs/quantization.md), each a row beside the
plain plan's, against the floor of its own decode_weights_bytes (HF's columns
are the same float model's). Also `genc compile` time per plan. Rows are
printed as they finish and the table goes to OUT/bench.md.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

EXPORT_SEED = 3  # tools/export.py's --seed for every model here (bench/torch_peer.py draws the same weights)
MODELS = {
    # name: tools/export.py's arguments
    "gpt2": ["--arch", "gpt2", "--set", "n_embd=768", "--set", "n_layer=12", "--set", "n_head=12",
             "--set", "vocab_size=50257", "--set", "n_positions=1024"],
    # A 135M Llama-style config (SmolLM-135M's shape): 30 layers, tied embeddings.
    "llama135m": ["--arch", "llama", "--set", "hidden_size=576", "--set", "intermediate_size=1536",
                  "--set", "num_hidden_layers=30", "--set", "num_attention_heads=9",
                  "--set", "num_key_value_heads=3", "--set", "head_dim=64", "--set", "vocab_size=49152",
                  "--set", "max_position_embeddings=2048", "--set", "tie_word_embeddings=true"],
    "llama1b": ["--arch", "llama", "--set", "hidden_size=2048", "--set", "intermediate_size=5632",
                "--set", "num_hidden_layers=22", "--set", "num_attention_heads=32",
                "--set", "num_key_value_heads=4", "--set", "head_dim=64", "--set", "vocab_size=32000",
                "--set", "max_position_embeddings=2048"],
}


def unpack_tools(root, into=None):
    """The packed genc / genrun / gpucheck (tools/pack.sh's dist tarball)
    unpacked into `into` (a fresh folder by default): that folder."""
    d = into or tempfile.mkdtemp()
    os.makedirs(d, exist_ok=True)
    with tarfile.open(os.path.join(root, "dist", "genc-linux-x86_64.tar.xz")) as t:
        t.extractall(d)
    return d


def cuda_env():
    """The environment the packed tools run in: CUDA's libraries found."""
    return dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/lib64:" + os.environ.get("LD_LIBRARY_PATH", ""))


def log(*a):
    print(*a, flush=True)


def copy_bandwidth(torch, device):
    """Bytes read + written per second by a large copy (1 GiB, 4x the last-level cache or more)."""
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    a.random_(0, 255)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(3):
        b.copy_(a)
    times = []
    for _ in range(10 if device == "cuda" else 5):
        sync()
        t = time.perf_counter()
        b.copy_(a)
        sync()
        times.append(time.perf_counter() - t)
    times.sort()
    return 2 * n / times[len(times) // 2]


SAMPLING = dict(top_k=50, top_p=0.9, temperature=0.8)
SAMPLING_FLAGS = ["--do-sample", "--top-k", "50", "--top-p", "0.9", "--temperature", "0.8", "--seed", "1"]


def greedy_kw(torch, ids, sampling=False):
    """generate()'s options for the benchmark: greedy (or SAMPLING), no EOS stop."""
    kw = dict(do_sample=sampling, eos_token_id=None, pad_token_id=0, attention_mask=torch.ones_like(ids),
              use_cache=True)
    return dict(kw, **SAMPLING) if sampling else kw


def hf_decode(torch, model, ids, new, sampling=False):
    """ms per decode step and ms to first token of HF generate()."""
    kw = greedy_kw(torch, ids, sampling)
    sync = torch.cuda.synchronize if ids.is_cuda else (lambda: None)
    def timed(n):
        sync()
        t = time.perf_counter()
        out = model.generate(ids, max_new_tokens=n, min_new_tokens=None, **kw)
        sync()
        return time.perf_counter() - t, out.shape[1] - ids.shape[1]
    timed(4)  # warm-up (and compilation)
    timed(4)
    t1, _ = timed(1)
    tn, steps = timed(new)
    return (tn - t1) / max(steps - 1, 1) * 1e3, t1 * 1e3


def hf_static_decode(torch, model, ids, new):
    """ms per decode step of generate() with a static cache, from one call's
    token times (a streamer synchronising at each token): the static cache's
    size follows max_new_tokens, so calls of different lengths would each
    compile again (the first version of this row timed a recompile: 398
    ms/token). Warm-up: two calls of the same length."""
    class Stamps:
        def __init__(self):
            self.t = []
        def put(self, value):
            torch.cuda.synchronize()
            self.t.append(time.perf_counter())
        def end(self):
            pass
    kw = dict(greedy_kw(torch, ids), cache_implementation="static", max_new_tokens=new, min_new_tokens=None)
    best = float("inf")
    for i in range(4):
        st = Stamps()
        model.generate(ids, streamer=st, **kw)
        if i >= 2 and len(st.t) > 3:  # t[0]: the prompt, t[1]: the first token
            best = min(best, (st.t[-1] - st.t[1]) / (len(st.t) - 2) * 1e3)
    return best


def hf_compiled(torch, transformers, cfg, ids, new, name, b, make=None):
    """ms per decode step of HF generate() with a static cache and torch.compile,
    or None. transformers 5.x compiles the decode forward itself when the cache
    is static (its CompileConfig: inductor, CUDA graphs); compiling
    model.forward by hand on top of that failed in 5.17 (a CUDA graph's output
    overwritten in StaticCache). So: generate's own compile first, then a
    hand-compiled forward without CUDA graphs. make(): a fresh fp16 model on
    the GPU (default: random weights from cfg)."""
    tries = [("generate's compile", None), ("torch.compile max-autotune-no-cudagraphs", "max-autotune-no-cudagraphs")]
    for what, mode in tries:
        try:
            cm = make() if make else transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float16).cuda().eval()
            if mode:
                cm.generation_config.disable_compile = True
                cm.forward = torch.compile(cm.forward, mode=mode, fullgraph=True)
            ms = hf_static_decode(torch, cm, ids, new)
            del cm
            log(f"{name} b{b}: HF static+compile ({what}): {ms:.3f} ms/token")
            return ms
        except Exception as e:  # report, do not stop the table
            log(f"{name} b{b}: HF static+compile ({what}) failed: {e!r:.300}")
    return None


def hf_loop(torch, model, ids, new):
    """ms per decode step of a plain forward loop over HF's KV cache (no
    generate()): the check that the generate() column measures the model."""
    sync = torch.cuda.synchronize if ids.is_cuda else (lambda: None)
    mask = torch.ones_like(ids)
    def go(n):
        out = model(ids, attention_mask=mask, use_cache=True)
        past, tok, m = out.past_key_values, out.logits[:, -1:].argmax(-1), mask
        sync()
        t = time.perf_counter()
        for _ in range(n):
            m = torch.cat([m, torch.ones_like(tok)], dim=1)
            out = model(tok, attention_mask=m, past_key_values=past, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        sync()
        return time.perf_counter() - t
    go(4)
    return go(new - 1) / (new - 1) * 1e3


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt2,llama1b")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--compile-peer", action="store_true")
    ap.add_argument("--sampling", action="store_true", help="genrun and HF eager sampling too")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--threads", type=int, default=0, help="cpu: threads for genrun and torch (default: cores)")
    ap.add_argument("--exports", help="reuse (or keep) the exported models in this folder")
    ap.add_argument("--dtype", help="the plans' dtype (default: f16 on the GPU, f32 on the CPU)")
    ap.add_argument("--weights", default="none",
                    help="plans per model: none (as exported), int4, int8 (genc --weights), comma-separated")
    ap.add_argument("--bin", help="genc/genrun folder (default: dist/ for cuda, build/tools for cpu)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/bench"))
    ap.add_argument("--step-table", action="store_true",
                    help="the step-kernel table instead (bench/step_table.py: --rows, --budget, --hf-compile-models)")
    ap.add_argument("--rows", default=None, help="--step-table: MODEL:BATCH[@CONTEXT],... (default: step_table.ROWS)")
    ap.add_argument("--budget", type=float, default=540,
                    help="--step-table: seconds; the HF static+compile rows are skipped past budget - 90")
    ap.add_argument("--hf-compile-models", default="llama1b,gpt2,llama135m",
                    help="--step-table: the models whose batch-1 row gets HF static+compile ('' for none)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.step_table:
        import step_table
        if args.device != "cuda":
            sys.exit("bench.py: error: --step-table runs on the GPU (--device cuda)")
        args.rows = args.rows or step_table.ROWS
        step_table.run(args, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return
    import torch
    import transformers
    torch.set_grad_enabled(False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cpu = args.device == "cpu"
    plan_dtype = args.dtype or ("f32" if cpu else "f16")
    if args.bin:
        bindir = args.bin
    elif cpu:
        bindir = os.path.join(root, "build", "tools")
    else:
        bindir = unpack_tools(root)
    env = cuda_env()
    work = tempfile.mkdtemp()
    threads = args.threads or len(os.sched_getaffinity(0))
    if cpu:
        torch.set_num_threads(threads)
        dev = f"CPU: {cpu_name()} ({threads} threads)"
    else:
        dev = torch.cuda.get_device_name()
    bw = copy_bandwidth(torch, args.device)
    rows = []
    header = ("| model | weights | batch | genrun load ms | genrun TTFT ms | genrun ms/token | genrun, cuBLASLt only (4/8-bit: tensor-core entry) | HF eager TTFT ms "
              "| HF eager ms/token | HF forward loop ms/token "
              "| HF static+compile ms/token | floor ms/token | floor / genrun | HF eager / genrun "
              "| HF compile / genrun | genrun sampling ms/token | HF eager sampling ms/token |")
    log(f"device: {dev}; copy bandwidth {bw / 1e9:.1f} GB/s (read + write)")
    batches = [int(b) for b in args.batches.split(",")]
    variants = args.weights.split(",")
    if any(w not in ("none", "int4", "int8") for w in variants):
        sys.exit("bench: --weights takes none, int4 and int8")
    for name in args.models.split(","):
        d = os.path.join(args.exports or work, name)
        t0 = time.time()
        r = subprocess.CompletedProcess([], 0)
        if not os.path.exists(os.path.join(d, "model.onnx")):
            r = subprocess.run([sys.executable, os.path.join(root, "tools", "export.py"), *MODELS[name],
                                "--seed", str(EXPORT_SEED), "--no-check", "--out", d], capture_output=True, text=True)
        if r.returncode:
            log(f"{name}: export failed\n{r.stderr[-2000:]}")
            continue
        export_s = time.time() - t0
        plans = {}  # weights variant -> (plan, its stats)
        for w in variants:
            plan = os.path.join(work, f"{name}-{w}.plan")
            stats = os.path.join(work, f"{name}-{w}.stats.json")
            t1 = time.time()
            r = subprocess.run([os.path.join(bindir, "genc"), "compile", os.path.join(d, "model.onnx"), "-o", plan,
                                "--dtype", plan_dtype, *(["--gpu-arch="] if cpu else []),
                                *([] if w == "none" else ["--weights", w]),
                                "--max-batch", str(max(batches)), "--max-beams", "1",
                                "--max-length", str(args.prompt + args.new), "--stats-json", stats],
                               capture_output=True, text=True, env=env)
            t2 = time.time()
            if r.returncode:
                log(f"{name} {w}: genc failed\n{r.stderr[-2000:]}")
                continue
            st = json.load(open(stats))
            log(f"{name} {w}: export {export_s:.0f} s; genc compile {t2 - t1:.1f} s; weights {st['weights_bytes']} B, read a step {st['decode_weights_bytes']} B; "
                f"launches/step {st['decode_step_launches']}, at one row {st.get('decode_step_launches_one_row')}")
            plans[w] = (plan, st)
        if not plans:
            continue
        cfg = transformers.AutoConfig.from_pretrained(d)
        # export.py saves the config with use_cache false (the export is the
        # plain forward); HF must generate with its KV cache, as genrun does.
        cfg.use_cache = True
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32 if cpu else torch.float16)
        model = model.eval() if cpu else model.cuda().eval()
        layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
        heads = getattr(cfg, "num_attention_heads", None) or cfg.n_head
        kvh = getattr(cfg, "num_key_value_heads", None) or heads
        hd = getattr(cfg, "head_dim", None) or (cfg.hidden_size // heads)
        for b in batches:
            g = torch.Generator().manual_seed(b)
            ids = torch.randint(3, cfg.vocab_size, (b, args.prompt), generator=g)
            prompts = os.path.join(work, f"{name}-{b}.jsonl")
            with open(prompts, "w") as f:
                for row in ids.tolist():
                    f.write(json.dumps({"input_ids": row}) + "\n")
            def genrun(plan, extra_env, extra_args=()):
                res = None
                for _ in range(2):  # the second run is the one reported (page cache warm)
                    r = subprocess.run([os.path.join(bindir, "genrun"), plan, "--device", args.device, "--input",
                                        prompts, *(["--threads", str(threads)] if cpu else []),
                                        "--max-new-tokens", str(args.new), "--stats", "--output", os.devnull,
                                        *extra_args],
                                       capture_output=True, text=True, env=dict(env, **extra_env))
                    if r.returncode:
                        log(f"{name} b{b}: genrun failed\n{r.stderr[-2000:]}")
                        return None
                    m = re.search(r"time to first token ([0-9.]+) ms, decode ([0-9.]+) ms/token", r.stderr)
                    load = re.search(r"stats: load ([0-9.]+) ms", r.stderr)
                    res = (float(m.group(1)), float(m.group(2)), float(load.group(1)) if load else None)
                return res
            hf = None  # the peer's figures, once a batch for every plan
            for w, (plan, st) in plans.items():
                gr = genrun(plan, {})
                if gr is None:
                    continue
                # The same plan with cuBLASLt for the products of <= 8 rows too (the GEMV kernels off);
                # a 4/8-bit plan's products of <= 8 rows on the tensor-core entry instead (no fusion).
                nogemv = (None if cpu else genrun(plan, {"GENC_CUDA_GEMV": "0"}) if w == "none"
                          else genrun(plan, {"GENC_CUDA_NBITS_GEMV_ROWS": "0", "GENC_CUDA_GEMV_FUSION": "0"})
                          if b <= 8 else None)
                samp = genrun(plan, {}, SAMPLING_FLAGS) if args.sampling else None
                if hf is None:
                    hf_ms, hf_ttft = hf_decode(torch, model, ids if cpu else ids.cuda(), args.new)
                    loop_ms = hf_loop(torch, model, ids if cpu else ids.cuda(), args.new)
                    hf_samp = hf_decode(torch, model, ids if cpu else ids.cuda(), args.new, True)[0] if args.sampling else None
                    comp_ms = None
                    if args.compile_peer and b == 1 and name == "llama1b" and not cpu:
                        comp_ms = hf_compiled(torch, transformers, cfg, ids.cuda(), args.new, name, b)
                    hf = (hf_ms, hf_ttft, loop_ms, hf_samp, comp_ms)
                hf_ms, hf_ttft, loop_ms, hf_samp, comp_ms = hf
                ctx = args.prompt + args.new / 2
                kv_read = b * layers * 2 * kvh * hd * (4 if plan_dtype == "f32" else 2) * ctx
                floor_ms = (st["decode_weights_bytes"] + kv_read) / bw * 1e3
                row = (f"| {name} | {w} | {b} | {'%.1f' % gr[2] if gr[2] is not None else '-'} | {gr[0]:.2f} | {gr[1]:.3f} | {'%.3f' % nogemv[1] if nogemv else '-'} | "
                       f"{hf_ttft:.2f} | {hf_ms:.3f} | {loop_ms:.3f} | "
                       f"{'%.3f' % comp_ms if comp_ms else '-'} | {floor_ms:.3f} | {floor_ms / gr[1]:.0%} | "
                       f"{hf_ms / gr[1]:.2f}x | {'%.2fx' % (comp_ms / gr[1]) if comp_ms else '-'} | "
                       f"{'%.3f' % samp[1] if samp else '-'} | {'%.3f' % hf_samp if hf_samp else '-'} |")
                rows.append(row)
                log(row)
        del model
        torch.cuda.empty_cache()
    table = [f"device: {dev}; copy bandwidth {bw / 1e9:.1f} GB/s; prompt {args.prompt}, {args.new} new tokens, "
             f"greedy, {plan_dtype} plans (HF: {'f32' if cpu else 'fp16'}), random weights", "", header, "|" + "---|" * (header.count("|") - 1), *rows]
    open(os.path.join(args.out, "bench.md"), "w").write("\n".join(table) + "\n")
    log("\n".join(table))


if __name__ == "__main__":
    main()
