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
import threading
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
                    # Drained as it comes: a server that writes much to stderr must
                    # never block on a full pipe while the clients wait for it.
                    proc.err_lines = []
                    proc.err_reader = threading.Thread(target=lambda: proc.err_lines.extend(proc.stderr),
                                                       daemon=True)
                    proc.err_reader.start()
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("serve_bench: the server did not come up in 300 s")


class Connection:
    """One keep-alive HTTP/1.1 connection over asyncio streams: a request
    written whole, the answer's lines read as they come (chunked or sized).
    The benchmark's own client, so that it costs the loop a few microseconds
    a line: httpx's connection pool took 60-90% of the client's time at 64
    streams and became the bottleneck instead of the server."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def post(self, path: str, body: dict):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        data = json.dumps(body).encode()
        self.writer.write(b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % (path.encode(), self.host.encode(), self.port, len(data)) + data)
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        headers = {}
        while True:
            line = (await self.reader.readline()).strip()
            if not line:
                break
            k, v = line.split(b":", 1)
            headers[k.strip().lower()] = v.strip().lower()
        return status, headers

    async def lines(self, headers):
        """The answer body's lines (bytes, without their ends)."""
        pending = b""
        if headers.get(b"transfer-encoding") == b"chunked":
            while True:
                size = int((await self.reader.readline()).strip().split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                pending += await self.reader.readexactly(size)
                await self.reader.readexactly(2)
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    yield line.rstrip(b"\r")
        else:
            pending = await self.reader.readexactly(int(headers.get(b"content-length", b"0")))
        for line in pending.split(b"\n"):
            if line:
                yield line.rstrip(b"\r")

    def close(self):
        if self.writer is not None:
            self.writer.close()


async def run_clients(base: str, reqs: List[Tuple[List[int], int]], clients: int, max_seconds: float):
    host, port = base.split("//")[1].split(":")
    queue: "asyncio.Queue[int]" = asyncio.Queue()
    for i in range(len(reqs)):
        queue.put_nowait(i)
    ttft: List[float] = []
    later: List[float] = []  # TTFT of the requests after each client's first (the burst at t0)
    itl: List[float] = []
    tokens = [0]
    errors: List[str] = []
    t0 = time.perf_counter()
    stop_at = t0 + max_seconds

    async def client() -> None:
        conn = Connection(host, int(port))
        first = True
        try:
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
                status, headers = await conn.post("/v1/completions", body)
                if status != 200:
                    text = b"".join([line async for line in conn.lines(headers)])
                    errors.append("%d %s" % (status, text[:200]))
                    continue
                async for line in conn.lines(headers):
                    if not line.startswith(b"data: ") or line == b"data: [DONE]":
                        continue
                    now = time.perf_counter()
                    ev = json.loads(line[6:])
                    if "error" in ev:
                        errors.append(str(ev["error"]))
                        continue
                    n = sum(len(c.get("token_ids") or []) for c in ev.get("choices", []))
                    if n == 0:
                        continue
                    if last is None:
                        ttft.append(now - start)
                        if not first:
                            later.append(now - start)
                    else:
                        itl.extend([(now - last) / n] * n)
                    last = now
                    got += n
                first = False
                if got != out:
                    errors.append("request %d: %d tokens, asked %d" % (i, got, out))
                tokens[0] += got
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - t0
    done = len(reqs) - queue.qsize()
    return done, tokens[0], wall, ttft, later, itl, errors


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
        done, tokens, wall, ttft, later, itl, errors = asyncio.run(run_clients(base, reqs, a.clients, a.max_seconds))
        after = scrape(base)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.err_reader.join(timeout=5)
    # What the server's executor said at close (A/B switches' reports).
    for line in proc.err_lines:
        if line.startswith("genrun: "):
            print("server: " + line.rstrip("\n"))
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
    # Every client sends its first request at once: those prompts queue
    # behind each other (their prefill is ~clients x the mean prompt), so the
    # burst sets TTFT p99 over few requests; the rest arrive as others end.
    if later:
        print("TTFT after each client's first request (%d requests): p50 %.2f ms, p99 %.2f ms" % (
            len(later), percentile(later, 50) * 1e3, percentile(later, 99) * 1e3))
    print("scheduler steps: %d (%.3f ms a step on average); ITL p99 / p50: %.2f" % (
        steps, wall / steps * 1e3 if steps else float("nan"), percentile(itl, 99) / percentile(itl, 50)))
    # Where a step's time goes: decode rows only against steps with prompt
    # pieces (the server's per-kind step histogram), and the engine's host
    # work between forwards.
    def delta(key: str) -> float:
        return after.get(key, 0) - before.get(key, 0)
    parts = []
    for kind in ("decode", "prompt"):
        n = delta('genc_step_seconds_count{kind="%s"}' % kind)
        secs = delta('genc_step_seconds_sum{kind="%s"}' % kind)
        part = "%s %d steps, %.3f ms each" % (
            "decode rows only:" if kind == "decode" else "with prompt pieces:", n, secs / n * 1e3 if n else float("nan"))
        if kind == "prompt" and n:
            part += " (%.0f prompt tokens each)" % (delta("genc_step_prompt_tokens_total") / n)
        parts.append(part)
    print("steps by kind: %s; %s; host work after the forwards %.3f ms a step" % (
        parts[0], parts[1], delta("genc_step_host_seconds_total") / steps * 1e3 if steps else float("nan")))
    if errors:
        print("errors (%d): %s" % (len(errors), errors[:5]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
