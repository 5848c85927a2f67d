"""bench.py --step-table: genrun's decode step against its peers, one table from one run.

Rows (--rows, MODEL:BATCH or MODEL:BATCH@CONTEXT): the 1.1B (llama1b) at
batch 1, 8, 32 and at batch 1 after a 65,536-token context; GPT-2 124M at 1
and 32; the SmolLM2-135M shape (llama135m) at 1 and 8. Prompt --prompt
(128), --new (128) new tokens, greedy, f16, random weights (tools/export.py's,
seeded: the peers draw the same ones). Columns:
  genrun step: decode ms/token (genrun --stats) with GENC_CUDA_STEP=1 (the
    persistent step kernel, one launch a step);
  genrun per-op: the same plan with GENC_CUDA_STEP=0 (a kernel per operation);
  torch peer: bench/torch_peer.py, gpt-fast-style models on the same weights,
    the decode step under torch.compile(mode="reduce-overhead", fullgraph=True);
  HF compile: HF generate() with a static cache and torch.compile (bench.py
    --compile-peer's measurement), batch-1 rows of --hf-compile-models, while
    the run is inside --budget;
  floor: (the plan's decode_weights_bytes + the KV bytes a step reads at the
    mean context) / the copy bandwidth measured in the same run;
  floor / genrun step, peer / genrun step, per-op / step;
  step = per-op: how many of the new tokens the two genrun runs agree on
    (each row's common prefix, summed).
The peer's first 32 tokens on each model's first prompt-length row are
checked against HF generate()'s (greedy, same weights and prompts; the line
under the table). A CONTEXT row gives genrun a prompt of CONTEXT tokens (its prefill is not in
the decode figure) on a plan of max length CONTEXT + --new; the torch peer
holds random K/V at the positions before its last --prompt tokens instead of
prefilling them (the step reads them all the same).

Time: the exports (the 1.1B's takes about two minutes) and genc's compiles
run in the background while the peers compile and run (the 1.1B's first: its
steps are long enough that a busy host does not show; the others' timed
passes wait for the background to end). genrun runs between the peers once
the background is done, so that nothing else loads the host while it is
timed. Past --budget seconds the remaining peers are skipped, past
--budget - 90 the remaining HF static+compile rows, so that the table is
printed inside the device's 10-minute limit. Progress lines as the
measurements finish; the table last, and in OUT/step_table.md.
"""
import copy
import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench  # noqa: E402
import torch_peer  # noqa: E402

CHECK_TOKENS = 32  # the peer's tokens checked against HF generate()'s, per model, on its first row
ROWS = "llama1b:1,llama1b:8,llama1b:32,llama1b:1@65536,gpt2:1,gpt2:32,llama135m:1,llama135m:8"
log = bench.log


def parse_rows(spec, prompt):
    """'MODEL:BATCH[@CONTEXT],...' -> [(model, batch, context)], context >= prompt."""
    rows = []
    for item in spec.split(","):
        m = re.fullmatch(r"([a-z0-9]+):([0-9]+)(?:@([0-9]+))?", item.strip())
        if not m or m.group(1) not in bench.MODELS or int(m.group(2)) < 1:
            sys.exit(f"bench.py: error: --rows: '{item}' is not MODEL:BATCH[@CONTEXT] with MODEL one of "
                     f"{', '.join(sorted(bench.MODELS))}")
        ctx = int(m.group(3) or prompt)
        if ctx < prompt:
            sys.exit(f"bench.py: error: --rows: '{item}': the context is shorter than the prompt ({prompt})")
        rows.append((m.group(1), int(m.group(2)), ctx))
    return rows


def plans_for(rows, prompt, new):
    """One plan per model for its prompt-length rows (the largest batch), one
    per long-context (batch, context): {(model, max_batch, max_length)}."""
    plans = {}
    for model, b, ctx in rows:
        key = (model, "short") if ctx == prompt else (model, b, ctx)
        mb, ml = plans.get(key, (0, ctx + new))
        plans[key] = (max(mb, b), ml)
    return {(k[0], mb, ml) for k, (mb, ml) in plans.items()}


def plan_of(plans, model, b, ctx, new):
    return min((p for p in plans if p[0] == model and p[1] >= b and p[2] >= ctx + new), key=lambda p: (p[2], p[1]))


class Prep(threading.Thread):
    """Exports every model (in parallel) and compiles its plans, in the background."""

    def __init__(self, root, bindir, exports, work, plans, env):
        super().__init__(daemon=True)
        self.root, self.bindir, self.exports, self.work, self.plans, self.env = root, bindir, exports, work, plans, env
        self.done = {}  # plan -> (path, stats) or None (failed)
        self.error = []

    def plan_path(self, p):
        return os.path.join(self.work, f"{p[0]}-b{p[1]}-L{p[2]}.plan")

    def run(self):
        models = sorted({p[0] for p in self.plans}, key=lambda m: m == "llama1b")  # the slow export last
        procs = {}
        for m in models:
            d = os.path.join(self.exports, m)
            if not os.path.exists(os.path.join(d, "model.onnx")):
                procs[m] = (time.time(), subprocess.Popen(
                    [sys.executable, os.path.join(self.root, "tools", "export.py"), *torch_peer.export_args(m),
                     "--no-check", "--out", d], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    env=dict(os.environ, OMP_NUM_THREADS="4")))
        for m in models:
            if m in procs:
                t, pr = procs[m]
                out = pr.communicate()[0]
                if pr.returncode:
                    self.error.append(f"{m}: export failed\n{out[-2000:]}")
                    log(self.error[-1])
                    for p in self.plans:
                        if p[0] == m:
                            self.done[p] = None
                    continue
                log(f"{m}: exported in {time.time() - t:.0f} s")
            for p in sorted(x for x in self.plans if x[0] == m):
                path, stats = self.plan_path(p), self.plan_path(p) + ".stats.json"
                t = time.time()
                r = subprocess.run([os.path.join(self.bindir, "genc"), "compile",
                                    os.path.join(self.exports, m, "model.onnx"), "-o", path, "--dtype", "f16",
                                    "--max-batch", str(p[1]), "--max-beams", "1", "--max-length", str(p[2]),
                                    "--stats-json", stats, "--quiet"], capture_output=True, text=True, env=self.env)
                if r.returncode:
                    self.error.append(f"{m}: genc (max batch {p[1]}, max length {p[2]}) failed\n{r.stderr[-2000:]}")
                    log(self.error[-1])
                    self.done[p] = None
                    continue
                st = json.load(open(stats))
                log(f"{m}: genc compile, max batch {p[1]}, max length {p[2]}: {time.time() - t:.1f} s; a step reads "
                    f"{st['decode_weights_bytes']} weight bytes; launches/step {st.get('decode_step_launches')}")
                self.done[p] = (path, st)


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def agreement(rows_a, rows_b):
    """(tokens in the rows' common prefixes, tokens) of two lists of token lists."""
    if rows_a is None or rows_b is None or len(rows_a) != len(rows_b):
        return None
    return sum(common_prefix(a, b) for a, b in zip(rows_a, rows_b)), sum(len(a) for a in rows_a)


def genrun(bindir, plan, prompts_path, new, env, step, out_path):
    """decode ms/token, TTFT ms and the new tokens of each row, or None."""
    try:
        r = subprocess.run([os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts_path,
                            "--max-new-tokens", str(new), "--stats", "--output", out_path],
                           capture_output=True, text=True, env=dict(env, GENC_CUDA_STEP=str(step)), timeout=300)
    except subprocess.TimeoutExpired:
        log(f"  genrun GENC_CUDA_STEP={step} ran past 300 s: stopped")
        return None
    m = re.search(r"time to first token ([0-9.]+) ms, decode ([0-9.]+) ms/token", r.stderr)
    if r.returncode or not m:
        log(f"  genrun GENC_CUDA_STEP={step} failed (exit {r.returncode})\n{r.stderr[-1500:]}")
        return None
    toks = [json.loads(line)["sequences"][0]["output_ids"] for line in open(out_path)]
    return dict(ttft=float(m.group(1)), ms=float(m.group(2)), tokens=toks)


def fmt(x, f="{:.3f}"):
    return f.format(x) if x is not None else "-"


def ratio(a, b, f="{:.2f}x"):
    return f.format(a / b) if a is not None and b else "-"


def run(args, root):
    import torch
    import transformers
    torch.set_grad_enabled(False)
    t_start = time.time()
    elapsed = lambda: time.time() - t_start  # noqa: E731
    P, N = args.prompt, args.new
    rows = parse_rows(args.rows, P)
    plans = plans_for(rows, P, N)
    import tempfile
    work = tempfile.mkdtemp(prefix="step_table.")
    exports = args.exports or os.path.join(work, "exports")
    bindir = args.bin or bench.unpack_tools(root, os.path.join(work, "bin"))
    env = bench.cuda_env()
    prep = Prep(root, bindir, exports, work, plans, env)
    prep.start()
    dev = torch.cuda.get_device_name()
    bw = bench.copy_bandwidth(torch, "cuda")
    log(f"device: {dev}; copy bandwidth {bw / 1e9:.1f} GB/s (read + write); plans: "
        + ", ".join(f"{m} max batch {b} max length {L}" for m, b, L in sorted(plans)))
    res = {r: {} for r in rows}
    hfs, cfgs, checked = {}, {}, {}
    pending = list(rows)

    def run_genrun():
        """genrun on every row whose prompts are drawn (the peer's turn came) and whose plan is ready."""
        for r in [r for r in pending if "prompts" in res[r]] if not prep.is_alive() else []:
            pending.remove(r)
            m, b, ctx = r
            plan = prep.done.get(plan_of(plans, m, b, ctx, N))
            if not plan:
                continue
            path = os.path.join(work, f"{m}-b{b}-c{ctx}.jsonl")
            with open(path, "w") as f:
                for row in res[r]["prompts"].tolist():
                    f.write(json.dumps({"input_ids": row}) + "\n")
            for step in (1, 0):
                g = genrun(bindir, plan[0], path, N, env, step, path + f".step{step}.out")
                res[r][f"step{step}"] = g
                if g:
                    short = sum(len(t) < N for t in g["tokens"])
                    log(f"{m} b{b} ctx {ctx}: genrun GENC_CUDA_STEP={step}: {g['ms']:.3f} ms/token, TTFT "
                        f"{g['ttft']:.1f} ms" + (f"; {short} rows stopped early (EOS)" if short else "")
                        + f" ({elapsed():.0f} s into the run)")
            s1, s0, p = res[r].get("step1"), res[r].get("step0"), res[r].get("peer")
            res[r]["agree"] = agreement(s1 and s1["tokens"], s0 and s0["tokens"])
            pa = agreement(s0["tokens"], p["tokens"].tolist()) if ctx == P and s0 and p else None
            if pa:
                log(f"  tokens, genrun per-op vs torch peer: {pa[0]}/{pa[1]} in the rows' common prefixes (f16 "
                    "near-ties make them part)")

    models = sorted({r[0] for r in rows}, key=lambda m: m != "llama1b")  # its long steps hide a busy host
    for mi, m in enumerate(models):
        t = time.time()
        hf = torch_peer.load_hf(torch_peer.export_args(m), "cuda", torch.float16, torch, transformers)
        hfs[m], cfgs[m] = hf, hf.config
        c = hf.config
        heads = getattr(c, "num_attention_heads", None) or c.n_head
        shape = dict(layers=getattr(c, "num_hidden_layers", None) or c.n_layer,
                     kv_heads=getattr(c, "num_key_value_heads", None) or heads,
                     head_dim=getattr(c, "head_dim", None) or c.hidden_size // heads)
        log(f"{m}: weights drawn and loaded in {time.time() - t:.1f} s ({elapsed():.0f} s into the run)")
        for r in (r for r in rows if r[0] == m):
            _, b, ctx = r
            ids = torch_peer.prompts(hf.config.vocab_size, b, ctx, torch)
            res[r]["prompts"], res[r]["shape"] = ids, shape

            def quiet(m=m, b=b, first=mi == 0):  # short steps: timed on a quiet host
                if not first and prep.is_alive():
                    log(f"  waiting for the exports and genc before timing {m} b{b}")
                    prep.join()
            if elapsed() > args.budget:
                log(f"{m} b{b} ctx {ctx}: torch peer skipped: {elapsed():.0f} s into the run, --budget {args.budget} s")
                continue
            try:
                p = torch_peer.measure(hf, ids[:, -P:].cuda(), N, torch, context=ctx, before_timed=quiet)
            except Exception as e:  # report it, keep the table going
                log(f"{m} b{b} ctx {ctx}: torch peer failed: {e!r:.500}")
                p = None
            finally:
                torch._dynamo.reset()
                torch.cuda.empty_cache()
            res[r]["peer"] = p
            if p:
                log(f"{m} b{b} ctx {ctx}: torch peer {p['ms']:.3f} ms/token (mean {p['mean_ms']:.3f}); "
                    f"{p['attention']}; compile and capture {p['compile_s']:.0f} s; cudagraph skips "
                    f"{p['cudagraph_skips']}; the two passes agree on {p['repeat'][0]}/{p['repeat'][1]} tokens"
                    + "".join(f"; {a}: {ms * 1e3:.0f} us" for a, ms in p["choices"])
                    + f" ({elapsed():.0f} s into the run)")
            if p and ctx == P and m not in checked:  # the peer's first tokens against HF generate()'s
                checked[m] = torch_peer.check(hf, ids.cuda(), CHECK_TOKENS, torch, True, 0.05, got=p["tokens"])
                log("\n".join(f"  torch peer vs HF, {m} b{b}: {line}" for line in checked[m][1]))
            run_genrun()  # on a quiet host: between peers, once the exports and plans are done
    prep.join()
    log(f"exports and plans ready ({elapsed():.0f} s into the run)")
    run_genrun()
    # HF generate() with a static cache and torch.compile: the batch-1 prompt-length rows, inside the budget.
    hf_models = args.hf_compile_models.split(",") if args.hf_compile_models else []
    for r in rows:
        m, b, ctx = r
        if m not in hf_models or b != 1 or ctx != P:
            continue
        if elapsed() > args.budget - 90:
            log(f"{m} b{b}: HF static+compile skipped: {elapsed():.0f} s into the run, --budget {args.budget} s")
            continue
        torch._dynamo.reset()
        res[r]["hf"] = bench.hf_compiled(torch, transformers, cfgs[m], res[r]["prompts"].cuda(), N, m, b,
                                         make=lambda: copy.deepcopy(hfs[m]))
        torch.cuda.empty_cache()
    table = render(rows, res, prep, plans, bw, dev, P, N)
    table += ["", f"torch peer against HF generate() (greedy, the first {CHECK_TOKENS} tokens of each model's first "
              "row; f16 near-tie: HF's logits differ by <= 0.05 where they part): " + "; ".join(
                  f"{m}: {c[1][-1].replace('agreement: ', '')}" for m, c in checked.items())]
    open(os.path.join(args.out, "step_table.md"), "w").write("\n".join(table) + "\n")
    log(f"done in {elapsed():.0f} s")
    log("\n".join(table))


def render(rows, res, prep, plans, bw, dev, P, N):
    head = ["model", "batch", "context", "genrun step ms/token", "genrun per-op ms/token", "torch peer ms/token",
            "HF static+compile ms/token", "floor ms/token", "floor / genrun step", "peer / genrun step",
            "per-op / step", "step = per-op tokens"]
    out = [f"device: {dev}; copy bandwidth {bw / 1e9:.1f} GB/s; prompt {P}, {N} new tokens, greedy, f16, random "
           "weights (the same in genrun and the peers); genrun step: GENC_CUDA_STEP=1, per-op: GENC_CUDA_STEP=0", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m, b, ctx = r
        x = res[r]
        plan = prep.done.get(plan_of(plans, m, b, ctx, N))
        s1, s0, p = x.get("step1"), x.get("step0"), x.get("peer")
        floor = None
        if plan:
            c = x["shape"]
            kv = b * c["layers"] * 2 * c["kv_heads"] * c["head_dim"] * 2 * (ctx + N / 2)
            floor = (plan[1]["decode_weights_bytes"] + kv) / bw * 1e3
        g1, g0, pm = (s1 or {}).get("ms"), (s0 or {}).get("ms"), (p or {}).get("ms")
        a = x.get("agree")
        out.append("| " + " | ".join([
            m, str(b), f"{ctx:,}" + (" *" if ctx != P else ""), fmt(g1), fmt(g0), fmt(pm), fmt(x.get("hf")),
            fmt(floor), ratio(floor, g1, "{:.0%}"), ratio(pm, g1), ratio(g0, g1),
            f"{a[0]}/{a[1]}" if a else "-"]) + " |")
    if any(ctx != P for _, _, ctx in rows):
        out += ["", f"* genrun: a prompt of that many tokens, prefilled (not in the decode figure), on a plan of max "
                f"length context + {N}; torch peer: random K/V at the cache's positions before its last {P} tokens "
                "(prefilled), no prefill of the rest; both decode from the same position."]
    return out

