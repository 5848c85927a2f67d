#!/usr/bin/env python3
"""The load benchmark of genrun serve: N concurrent streaming clients on
loopback, a seeded mix of prompt lengths (32-512 tokens) and output lengths
(16-256), bounded in requests and in time; prints throughput (generated
tokens/s), time to first token p50 / p99 and inter-token latency p50 / p99,
and the same requests through genrun's batch mode as the baseline, sorted
into batches of equal length (its best case), with their ratio.

    python3 bench/serve_bench.py PLAN [--clients 64] [--requests 512] [--device cuda]

Every request ignores eos, so each generates exactly its output length in
both setups. Inter-token latency: the gaps between a stream's chunks, each
gap shared evenly by the tokens its chunk carries (a chunk holds several
only when the client fell behind). The server starts on 127.0.0.1 at a free
port and is always stopped.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(xs: List[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def make_requests(n: int, seed: int, vocab: int, max_length: int, pmin: int, pmax: int, omin: int,
                  omax: int) -> List[Tuple[List[int], int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p = rng.randint(pmin, pmax)
        o = rng.randint(omin, omax)
        if p + o > max_length:  # the plan's room: keep the output, shorten the prompt
            p = max(1, max_length - o)
            o = min(o, max_length - p)
        out.append(([rng.randrange(3, vocab) for _ in range(p)], o))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(a: argparse.Namespace, port: int) -> subprocess.Popen:
    cmd = [a.genrun, "serve", a.plan, "--port", str(port), "--device", a.device, "--max-queue",
           str(max(a.requests, 1)), "--step-tokens", str(a.step_tokens), "--served-model-name", "bench"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("serve_bench: the server exited: " + proc.stderr.read())
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("serve_bench: the server did not come up in 300 s")


async def run_clients(base: str, reqs: List[Tuple[List[int], int]], clients: int, max_seconds: float):
    import httpx
    queue: "asyncio.Queue[int]" = asyncio.Queue()
    for i in range(len(reqs)):
        queue.put_nowait(i)
    ttft: List[float] = []
    itl: List[float] = []
    tokens = [0]
    errors: List[str] = []
    t0 = time.perf_counter()
    stop_at = t0 + max_seconds

    async def client(http: "httpx.AsyncClient") -> None:
        while time.perf_counter() < stop_at:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            ids, out = reqs[i]
            body = {"model": "bench", "prompt": ids, "max_tokens": out, "temperature": 0, "ignore_eos": True,
                    "stream": True, "return_token_ids": True}
            start = time.perf_counter()
            last = None
            got = 0
            async with http.stream("POST", base + "/v1/completions", json=body) as r:
                if r.status_code != 200:
                    errors.append("%d %s" % (r.status_code, (await r.aread())[:200]))
                    continue
                async for line in r.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    now = time.perf_counter()
                    ev = json.loads(line[6:])
                    if "error" in ev:
                        errors.append(str(ev["error"]))
                        break
                    n = sum(len(c.get("token_ids") or []) for c in ev.get("choices", []))
                    if n == 0:
                        continue
                    if last is None:
                        ttft.append(now - start)
                    else:
                        itl.extend([(now - last) / n] * n)
                    last = now
                    got += n
            if got != out:
                errors.append("request %d: %d tokens, asked %d" % (i, got, out))
            tokens[0] += got

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=None, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))
    wall = time.perf_counter() - t0
    done = len(reqs) - queue.qsize()
    return done, tokens[0], wall, ttft, itl, errors


def scrape(base: str) -> Dict[str, float]:
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[re.sub(r'model="[^"]*",?', "", k).replace("{}", "")] = float(v)
    return out


def baseline(a: argparse.Namespace, reqs: List[Tuple[List[int], int]], batch: int) -> Tuple[int, float]:
    """genrun's batch mode over the same requests, sorted by output then prompt
    length into batches of `batch` (every row of a batch generates its
    batch's longest output; only the requested tokens count)."""
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i][1], len(reqs[i][0])))
    total_s, useful = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for b in range(0, len(order), batch):
            part = order[b:b + batch]
            path = os.path.join(tmp, "batch.jsonl")
            with open(path, "w") as f:
                for i in part:
                    f.write(json.dumps({"input_ids": reqs[i][0]}) + "\n")
            new = max(reqs[i][1] for i in part)
            r = subprocess.run([a.genrun, a.plan, "--device", a.device, "--input", path, "--max-new-tokens", str(new),
                                "--ignore-eos", "--stats"], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit("serve_bench: genrun failed: " + r.stderr)
            m = re.search(r"total ([0-9.]+) s", r.stderr)
            total_s += float(m.group(1))
            useful += sum(reqs[i][1] for i in part)
    return useful, total_s


def plan_facts(a: argparse.Namespace) -> Dict[str, int]:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(a.genrun)), "..", "python"))
    import genc
    g = genc.Generator(a.plan, device="cpu" if a.device == "cpu" else a.device)
    facts = {"vocab": g.vocab_size, "max_length": g.max_length, "max_batch": g.max_batch}
    g.close()
    return facts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("plan")
    p.add_argument("--genrun", default=os.path.join(ROOT, "build", "tools", "genrun"))
    p.add_argument("--device", default="auto")
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--requests", type=int, default=512)
    p.add_argument("--max-seconds", type=float, default=300.0, help="stop issuing requests after this long")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prompt-tokens", default="32-512")
    p.add_argument("--output-tokens", default="16-256")
    p.add_argument("--step-tokens", type=int, default=256)
    p.add_argument("--no-baseline", action="store_true")
    a = p.parse_args()
    pmin, pmax = map(int, a.prompt_tokens.split("-"))
    omin, omax = map(int, a.output_tokens.split("-"))
    facts = plan_facts(a)
    reqs = make_requests(a.requests, a.seed, facts["vocab"], facts["max_length"], pmin, pmax, omin, omax)

    port = free_port()
    base = "http://127.0.0.1:%d" % port
    proc = start_server(a, port)
    try:
        asyncio.run(run_clients(base, reqs[: min(len(reqs), a.clients)], a.clients, 60.0))  # warm-up
        before = scrape(base)
        done, tokens, wall, ttft, itl, errors = asyncio.run(run_clients(base, reqs, a.clients, a.max_seconds))
        after = scrape(base)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    steps = after.get("genc_steps_total", 0) - before.get("genc_steps_total", 0)
    rows = [("genrun serve", done, a.clients, tokens, wall, tokens / wall, percentile(ttft, 50) * 1e3,
             percentile(ttft, 99) * 1e3, percentile(itl, 50) * 1e3, percentile(itl, 99) * 1e3)]
    batch = min(a.clients, facts["max_batch"])
    if not a.no_baseline:
        useful, secs = baseline(a, reqs[:done], batch)
        rows.append(("genrun batch mode (sorted, batch %d)" % batch, done, "-", useful, secs, useful / secs,
                     float("nan"), float("nan"), float("nan"), float("nan")))
    print("| setup | requests | clients | generated tokens | wall s | tokens/s | TTFT p50 ms | TTFT p99 ms "
          "| ITL p50 ms | ITL p99 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = ["-" if isinstance(v, float) and v != v else ("%.3f" % v if k >= 8 else "%.2f" % v)
                 if isinstance(v, float) else str(v) for k, v in enumerate(r)]
        cells[5] = "%.1f" % r[5]
        print("| " + " | ".join(cells) + " |")
    if len(rows) > 1:
        print("\nthroughput serve / batch mode: %.3f" % (rows[0][5] / rows[1][5]))
    print("scheduler steps: %d (%.3f ms a step on average); ITL p99 / p50: %.2f" % (
        steps, wall / steps * 1e3 if steps else float("nan"), percentile(itl, 99) / percentile(itl, 50)))
    if errors:
        print("errors (%d): %s" % (len(errors), errors[:5]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
