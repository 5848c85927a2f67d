"""The server soak behind tests/soak/serve_soak.sh: many requests through one
`genrun serve` process, every answer checked, its resident memory watched, and
its slots and queue empty at the end.

  serve_soak.py GENRUN PLAN [--requests 10000] [--clients 16] [--device cpu] [--seed 0]

The requests (seeded), CLIENTS at a time over keep-alive connections:
- 60% streamed completions of random ids (greedy or sampled with a seed,
  1-24 tokens, some sampled ones n = 2): each stream ends in
  `data: [DONE]` with the tokens asked for (eos ignored) and, when asked,
  the usage chunk;
- 25% plain completions, text or ids: 200, the choices asked for (some of
  the id prompts with echo, logprobs and prompt_logprobs: the prompt's
  log-probabilities cover each of its tokens);
- 5% streams the client leaves after the first chunk (the server must free
  the slot: the cancelled count grows);
- 10% bad requests (malformed JSON, a prompt past the plan, max_tokens 0, an
  unknown model): each a 4xx with an OpenAI-style error body.
Every 1,000 requests done it reads the server's VmRSS (/proc; `genrun serve`
execs Python, so its PID is the server's); after the first 1,000 the value
must stay within 5% of the value there. At the end /metrics must say: no
request waiting or running, no slot in use, no failed request, and as many
finished + cancelled as the good requests sent. Prints the figures
docs/serving.md quotes; exit status 1 on any failure. The server is always
stopped.
"""
import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from serve_bench import free_port, scrape  # noqa: E402  (the load benchmark's: a free port, /metrics read)


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for pid %d" % pid)


def make_request(rng, vocab, max_length, text=True, n2=True):
    """(kind, body or raw bytes, what the answer must hold). A plan without a
    tokenizer gets no text prompts (text=False), one of a row a prompt no
    n = 2 (n2=False)."""
    r = rng.random()
    tokens = rng.randint(1, 24)
    prompt = [rng.randrange(3, vocab) for _ in range(rng.randint(1, 40))]
    if r < 0.10:  # bad requests, each its 4xx
        bad = rng.choice(["json", "long", "zero", "model"])
        if bad == "json":
            return "bad", b'{"model": "soak", "prompt": [1, 2', 400
        if bad == "long":
            return "bad", {"model": "soak", "prompt": [5] * (max_length + 8), "max_tokens": 4}, 400
        if bad == "zero":
            return "bad", {"model": "soak", "prompt": prompt, "max_tokens": -1}, 400
        return "bad", {"model": "nope", "prompt": prompt, "max_tokens": 4}, 404
    body = {"model": "soak", "prompt": prompt, "max_tokens": tokens, "ignore_eos": True}
    if rng.random() < 0.5:
        body.update(temperature=0.8, top_k=20, seed=rng.randrange(1 << 30))
    else:
        body["temperature"] = 0
    if r < 0.15:  # the client leaves after its first chunk
        body.update(stream=True, max_tokens=24)
        return "leave", body, None
    if r < 0.40:
        if rng.random() < 0.3 and text:
            body["prompt"] = "Permission is hereby granted, free of charge, to any person"
        if body["temperature"] > 0 and rng.random() < 0.4 and n2:  # n > 1 samples (greedy n > 1 is a 400)
            body["n"] = 2
        if rng.random() < 0.15 and isinstance(body["prompt"], list):  # the prompt's log-probabilities too
            body.update(echo=True, logprobs=2, prompt_logprobs=1)
        return "plain", body, None
    body["stream"] = True
    if rng.random() < 0.3:
        body["stream_options"] = {"include_usage": True}
    if body["temperature"] > 0 and rng.random() < 0.4 and n2:
        body["n"] = 2
    return "stream", body, None


async def soak(a, base, facts, pid):
    import httpx
    rng = random.Random(a.seed)
    reqs = [make_request(rng, facts["vocab"], facts["max_length"], facts["text"], facts["n2"]) for _ in range(a.requests)]
    queue = asyncio.Queue()
    for i in range(len(reqs)):
        queue.put_nowait(i)
    errors, counts, rss = [], {"bad": 0, "leave": 0, "plain": 0, "stream": 0}, []
    done = [0]

    async def one(http, i):
        kind, body, status = reqs[i]
        url = base + "/v1/completions"
        if kind == "bad":
            if isinstance(body, bytes):
                r = await http.post(url, content=body, headers={"content-type": "application/json"})
            else:
                r = await http.post(url, json=body)
            if r.status_code != status or "error" not in r.json() or "message" not in r.json()["error"]:
                errors.append("request %d (%s): %d %s" % (i, kind, r.status_code, r.text[:200]))
            return
        n = body.get("n", 1)
        if kind == "plain":
            r = await http.post(url, json=body)
            if r.status_code != 200:
                errors.append("request %d: %d %s" % (i, r.status_code, r.text[:200]))
                return
            choices = r.json()["choices"]
            if len(choices) != n or r.json()["usage"]["completion_tokens"] != n * body["max_tokens"]:
                errors.append("request %d: %d choices, usage %s" % (i, len(choices), r.json()["usage"]))
            P = len(body["prompt"])
            for c in choices if body.get("echo") else ():
                lp, pl = c["logprobs"], c["prompt_logprobs"]
                if len(lp["token_logprobs"]) != P + body["max_tokens"] or lp["token_logprobs"][0] is not None or \
                        len(pl) != P or any(d is None or str(t) not in d for t, d in zip(body["prompt"][1:], pl[1:])):
                    errors.append("request %d: the prompt's log-probabilities do not cover its %d tokens" % (i, P))
            return
        async with http.stream("POST", url, json=body) as r:
            if r.status_code != 200:
                errors.append("request %d: %d %s" % (i, r.status_code, (await r.aread())[:200]))
                return
            chunks, usage, finished = 0, None, False
            async for line in r.aiter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    finished = True
                    break
                ev = json.loads(line[6:])
                if "error" in ev:
                    errors.append("request %d: %s" % (i, ev["error"]))
                    return
                if ev.get("usage"):
                    usage = ev["usage"]
                if ev.get("choices"):
                    chunks += 1
                    if kind == "leave":
                        return  # leaving the stream closes the connection's response
        if not finished:
            errors.append("request %d: the stream ended without [DONE]" % i)
        elif body.get("stream_options") and (usage is None or usage["completion_tokens"] != n * body["max_tokens"]):
            errors.append("request %d: usage %s, asked %d x %d" % (i, usage, n, body["max_tokens"]))

    async def client(http):
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                await one(http, i)
            except Exception as e:  # a transport error is a failure, and the soak goes on
                errors.append("request %d: %r" % (i, e))
            counts[reqs[i][0]] += 1
            done[0] += 1
            if done[0] % 1000 == 0:
                rss.append((done[0], vm_rss_kib(pid)))

    limits = httpx.Limits(max_connections=a.clients, max_keepalive_connections=a.clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(http) for _ in range(a.clients)))
    return errors, counts, rss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("genrun")
    p.add_argument("plan")
    p.add_argument("--requests", type=int, default=10000)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(a.genrun)), "..", "python"))
    import genc
    g = genc.Generator(a.plan, device="cpu")
    facts = {"vocab": g.vocab_size, "max_length": g.max_length, "text": g.has_tokenizer, "n2": g.max_beams >= 2}
    g.close()
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    cmd = [a.genrun, "serve", a.plan, "--port", str(port), "--device", a.device, "--max-queue", str(a.requests),
           "--served-model-name", "soak"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    failures = []
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                raise SystemExit("serve_soak: the server exited: " + proc.stderr.read())
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.time() > deadline:
                    raise SystemExit("serve_soak: the server did not come up in 120 s")
                time.sleep(0.2)
        t0 = time.time()
        errors, counts, rss = asyncio.run(soak(a, base, facts, proc.pid))
        wall = time.time() - t0
        time.sleep(1.0)  # a cancelled stream's slot is freed at the scheduler's next step
        m = scrape(base)
        failures += errors[:20]
        if len(errors) > 20:
            failures.append("... and %d more errors" % (len(errors) - 20))
        good = counts["leave"] + counts["plain"] + counts["stream"]
        ended = m.get('genc_requests_total{outcome="finished"}', -1) + m.get('genc_requests_total{outcome="cancelled"}', -1)
        for key in ("genc_requests_waiting", "genc_requests_running", "genc_slots_in_use",
                    'genc_requests_total{outcome="failed"}'):
            if m.get(key, -1) != 0:
                failures.append("metrics: %s = %s at the end, not 0" % (key, m.get(key)))
        if ended != good:
            failures.append("metrics: finished + cancelled = %d, the good requests sent %d" % (ended, good))
        if len(rss) >= 2:
            first = rss[0][1]
            worst = max(v for _, v in rss[1:])
            growth = (worst - first) / first
            if growth > 0.05:
                failures.append("VmRSS grew %.1f%% after the first 1,000 requests: %s" % (100 * growth, rss))
        print("serve_soak: %d requests (%s) through one server, %d clients, %.1f s (%.0f requests/s)" %
              (a.requests, ", ".join("%s %d" % kv for kv in sorted(counts.items())), a.clients, wall,
               a.requests / wall))
        print("serve_soak: metrics at the end: finished %d, cancelled %d, failed %d, rejected %d; waiting %d, running"
              " %d, slots in use %d of %d" %
              tuple(int(m.get(k, -1)) for k in ('genc_requests_total{outcome="finished"}',
                                                'genc_requests_total{outcome="cancelled"}',
                                                'genc_requests_total{outcome="failed"}',
                                                'genc_requests_total{outcome="rejected"}', "genc_requests_waiting",
                                                "genc_requests_running", "genc_slots_in_use", "genc_slots")))
        if rss:
            print("serve_soak: VmRSS KiB every 1,000 requests: " + " ".join(str(v) for _, v in rss) +
                  (" (%+.2f%% at most after the first)" % (100 * (max(v for _, v in rss[1:]) - rss[0][1]) / rss[0][1])
                   if len(rss) > 1 else ""))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append("the server did not stop within 60 s of SIGTERM")
    if proc.returncode not in (0, None):
        failures.append("the server exited with status %s: %s" % (proc.returncode, proc.stderr.read()[-500:]))
    for f in failures:
        print("serve_soak: FAIL: " + f)
    print("serve_soak: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
