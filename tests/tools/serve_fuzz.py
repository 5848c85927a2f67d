"""Mutates valid OpenAI request bodies and sends each to a running genc
server (python3 -m genc.serve): every answer must be a 2xx whose body is
whole (a stream ends in [DONE] with no error event) or a 4xx with OpenAI's
error body; never a 5xx, a dropped connection or a hung request, and the
server keeps answering /health. At the end /metrics must count no failed
generation. Each failing body is kept (JSON, one a file) in --crashes.

  serve_fuzz.py PLAN (--requests N | --seconds S) [--seed S] [--crashes DIR]

PLAN is a plan with a tokenizer and a chat template (small: the bundled
model); the server runs on the CPU at a free port and is always stopped.
"""
import argparse
import copy
import json
import os
import random
import sys
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "tests"))
from serve_util import ServerProcess  # noqa: E402

COMPLETIONS = [
    {"prompt": "Permission is hereby granted", "max_tokens": 4},
    {"prompt": [5, 6, 7, 8], "max_tokens": 3, "temperature": 0.8, "top_p": 0.9, "top_k": 20, "seed": 3, "n": 2},
    {"prompt": ["a b", [9, 10]], "max_tokens": 2, "logprobs": 2, "echo": True},
    {"prompt": "x y z", "max_tokens": 3, "stream": True, "stream_options": {"include_usage": True}},
    {"prompt": [11, 12, 13], "max_tokens": 3, "use_beam_search": True, "n": 2, "best_of": 3, "prompt_logprobs": 1},
    {"prompt": "The", "max_tokens": 5, "stop": ["ing", " the"], "presence_penalty": 0.5, "frequency_penalty": 0.5,
     "repetition_penalty": 1.2, "no_repeat_ngram_size": 2, "min_tokens": 1, "logit_bias": {"5": 3}},
    {"prompt": "Some text", "max_tokens": 3, "echo": True, "logprobs": 1, "stream": True},
]
CHATS = [
    {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4},
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], "max_tokens": 3,
     "logprobs": True, "top_logprobs": 2, "stream": True},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "Hey"}]}], "max_completion_tokens": 2,
     "temperature": 1, "n": 2, "seed": 5, "prompt_logprobs": 0},
]
ODD = [None, True, False, 0, -1, 1, 2, 7, 2**31, 2**63, 2**70, -2**70, 0.5, -0.5, 1e308, -1e308, 1e-320,
       float("nan"), float("inf"), float("-inf"), "", "x", "\u00e9\ud7ff", "a" * 300, [], [1], [[]], ["x"], [None],
       {}, {"a": 1}, [1.5], [-5], [2**40], ["\u0000"], {"type": "text"}]
FIELDS = ["prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p", "n", "best_of", "stop", "seed", "stream",
          "stream_options", "logprobs", "top_logprobs", "echo", "prompt_logprobs", "presence_penalty",
          "frequency_penalty", "repetition_penalty", "logit_bias", "use_beam_search", "length_penalty",
          "early_stopping", "min_tokens", "ignore_eos", "no_repeat_ngram_size", "stop_token_ids", "messages",
          "max_completion_tokens", "model", "user", "return_token_ids", "include_stop_str_in_output",
          "chat_template_kwargs", "add_generation_prompt", "response_format", "suffix"]


def mutate(rng, body):
    b = copy.deepcopy(body)
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.45 or not b:
            b[rng.choice(FIELDS)] = copy.deepcopy(rng.choice(ODD))
        elif r < 0.6:
            b.pop(rng.choice(list(b)), None)
        elif r < 0.75 and "messages" in b and isinstance(b["messages"], list) and b["messages"]:
            m = b["messages"][rng.randrange(len(b["messages"]))]
            if isinstance(m, dict):
                m[rng.choice(["role", "content", "name", "tool_calls"])] = copy.deepcopy(rng.choice(ODD))
        elif r < 0.85 and isinstance(b.get("prompt"), list) and b["prompt"]:
            p = b["prompt"]
            p[rng.randrange(len(p))] = copy.deepcopy(rng.choice(ODD))
        else:  # a number field pushed to an edge
            k = rng.choice(["max_tokens", "n", "best_of", "logprobs", "top_logprobs", "prompt_logprobs", "top_k",
                            "seed", "min_tokens"])
            b[k] = rng.choice([0, -1, 1, 20, 21, 64, 255, 256, 257, 10**6])
    return b


STATUS = {}


def check(http, base, path, body):
    """None when the answer is one the server may give; else why not."""
    raw = json.dumps(body, allow_nan=True)
    try:
        if body.get("stream") is True:
            with http.stream("POST", base + path, content=raw, headers={"content-type": "application/json"}) as r:
                text = r.read().decode("utf-8", "replace")
                status = r.status_code
        else:
            r = http.post(base + path, content=raw, headers={"content-type": "application/json"})
            text, status = r.text, r.status_code
    except httpx.HTTPError as e:
        return "no answer: %s: %s" % (type(e).__name__, e)
    STATUS[status] = STATUS.get(status, 0) + 1
    if status >= 500:
        return "status %d: %s" % (status, text[:300])
    if 400 <= status < 500:
        try:
            err = json.loads(text)["error"]
            assert isinstance(err["message"], str) and err["message"] and err["type"]
        except Exception:
            return "a %d without OpenAI's error body: %s" % (status, text[:300])
        return None
    if status != 200:
        return "status %d" % status
    if body.get("stream") is True:
        if not text.rstrip().endswith("data: [DONE]"):
            return "a stream that does not end in [DONE]: %s" % text[-300:]
        if '"error"' in text:
            return "an error inside the stream: %s" % text[:300]
        return None
    try:
        out = json.loads(text)
        assert out["choices"] and all("index" in c for c in out["choices"])
    except Exception:
        return "a 200 whose body is not a whole answer: %s" % text[:300]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--requests", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--crashes", default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else time.time_ns() % (1 << 31)
    print("serve_fuzz: seed %d" % seed, flush=True)
    rng = random.Random(seed)
    server = ServerProcess(a.plan, "--served-model-name", "fuzz", "--max-queue", "16")
    bad, sent = [], 0
    deadline = time.monotonic() + a.seconds if a.seconds else None
    try:
        with httpx.Client(timeout=60) as http:
            while (sent < a.requests) if a.requests else (time.monotonic() < deadline):
                chat = rng.random() < 0.35
                path = "/v1/chat/completions" if chat else "/v1/completions"
                body = mutate(rng, rng.choice(CHATS if chat else COMPLETIONS))
                why = check(http, server.base, path, body)
                sent += 1
                if why:
                    bad.append((path, body, why))
                    print("request %d to %s: %s\n  body: %s" % (sent, path, why, json.dumps(body)[:500]), flush=True)
                    if a.crashes:
                        os.makedirs(a.crashes, exist_ok=True)
                        with open(os.path.join(a.crashes, "seed%d-request%d.json" % (seed, sent)), "w") as f:
                            json.dump({"path": path, "body": body}, f)
                if sent % 50 == 0 and http.get(server.base + "/health").status_code != 200:
                    bad.append(("/health", None, "not 200"))
                    break
        failed = server.metrics().get('genc_requests_total{model="fuzz",outcome="failed"}', 0)
        if failed:
            bad.append(("/metrics", None, "%d failed generations" % failed))
            print("serve_fuzz: /metrics counts %d failed generations" % failed)
    finally:
        rc = server.stop()
    if rc != 0:
        bad.append(("exit", None, "the server exited %d on SIGTERM" % rc))
        print("serve_fuzz: the server exited %d: %s" % (rc, server.output()[-2000:] if hasattr(server, "log") else ""))
    print("serve_fuzz: %d mutated requests (%s), %d answered wrongly: %s" % (
        sent, ", ".join("%d: %d" % kv for kv in sorted(STATUS.items())), len(bad), "ok" if not bad else "FAIL"))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
