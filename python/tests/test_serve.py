"""genc.serve (genrun serve) through the official openai client and raw HTTP:
completions, chat, streaming, n > 1, stop strings, seeds, logprobs; 16
concurrent greedy requests against genrun's batch mode; every bad request a
4xx with OpenAI's error body while the server keeps serving; a client that
leaves mid-stream frees its slot; SIGTERM drains; a prompt of megabytes is
tokenized off the event loop; --max-connections and --shutdown-timeout."""
import concurrent.futures
import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time

import httpx
import openai
import pytest

import genc
from conftest import TINY, reference_logprobs
from serve_util import ServerProcess, model_with_template

STAGE = os.environ.get("PYTHONPATH", "")


@pytest.fixture(scope="module")
def chat_plan(workdir):
    src = model_with_template(TINY, os.path.join(workdir, "tiny-chat"))
    # 16 slots; prompts come in pieces of at most 24 tokens a step.
    return genc.compile(src, os.path.join(workdir, "chat.plan"), max_batch=16, max_beams=4, max_length=256,
                        progress=False)


@pytest.fixture(scope="module")
def server(chat_plan):
    s = ServerProcess(chat_plan, "--served-model-name", "tiny", "--step-tokens", "24", "--max-queue", "64",
                      env_path=STAGE)
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def keyed(plan):
    """The package's plan (no chat template) behind an API key."""
    s = ServerProcess(plan, "--api-key", "sesame", "--max-body-bytes", "4096", env_path=STAGE)
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def local(chat_plan):
    g = genc.Generator(chat_plan, device="cpu")
    yield g
    g.close()


PROMPT = "Permission is hereby granted, free of charge"


def test_completion_is_generate_greedy(client, local):
    r = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=12, temperature=0)
    want = local.generate(PROMPT, max_new_tokens=12)[0]
    assert r.choices[0].text == want.text
    assert r.usage.prompt_tokens == len(local.encode(PROMPT))
    assert r.usage.completion_tokens == len(want.ids) == 12
    assert r.choices[0].finish_reason == "length"
    assert [m.id for m in client.models.list().data] == ["tiny"]


def test_chat_renders_the_template_and_generates(client, local, chat_plan):
    from transformers import AutoTokenizer
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who is granted permission?"}]
    tok = AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(chat_plan), "tiny-chat"))
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    r = client.chat.completions.create(model="tiny", messages=messages, max_tokens=10, temperature=0)
    assert r.usage.prompt_tokens == len(ids)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == local.generate([list(ids)], max_new_tokens=10)[0].text
    # The template's raise_exception: a 400 with its message.
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="tiny", messages=[{"role": "tool", "content": "x"}], max_tokens=2)
    assert "roles must be system, user or assistant" in str(e.value)


def test_streaming_gives_the_same_text(client):
    whole = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=20, temperature=0)
    chunks = list(client.completions.create(model="tiny", prompt=PROMPT, max_tokens=20, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == whole.choices[0].text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 20
    chat = list(client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                               max_tokens=8, temperature=0, stream=True))
    assert chat[0].choices[0].delta.role == "assistant"
    assert chat[-1].choices[0].finish_reason in ("length", "stop")


def test_n_and_seed(client):
    a = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=16, temperature=1.0, n=3, seed=7)
    b = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=16, temperature=1.0, n=3, seed=7)
    c = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=16, temperature=1.0, n=3, seed=8)
    texts = lambda r: [ch.text for ch in sorted(r.choices, key=lambda ch: ch.index)]
    assert [ch.index for ch in sorted(a.choices, key=lambda ch: ch.index)] == [0, 1, 2]
    assert texts(a) == texts(b)
    assert texts(a) != texts(c)
    assert len(set(texts(a))) > 1  # three draws, not one copied
    beams = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=8, n=2,
                                      extra_body={"use_beam_search": True, "best_of": 4})
    assert len(beams.choices) == 2


def test_stop_strings_cut_the_text(client):
    full = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=24, temperature=0).choices[0].text
    stop = full[8:11]
    assert stop and stop in full
    r = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=24, temperature=0, stop=[stop])
    assert r.choices[0].text == full[:full.index(stop)]
    assert r.choices[0].finish_reason == "stop"
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=24, temperature=0, stop=stop, stream=True) if c.choices)
    assert streamed == r.choices[0].text


def test_logprobs(client):
    r = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 6
    for chosen, top in zip(lp.token_logprobs, lp.top_logprobs):
        assert len(top) <= 3 and chosen <= 0
        assert abs(max(top.values()) - chosen) < 1e-6  # greedy takes the likeliest
    assert "".join(lp.tokens) == r.choices[0].text
    c = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=4,
                                       temperature=0, logprobs=True, top_logprobs=2)
    content = c.choices[0].logprobs.content
    assert len(content) == 4 and all(len(t.top_logprobs) == 2 for t in content)
    assert all(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob for t in content)


def test_logprob_bytes_are_the_tokens_own(client):
    """A token that is part of a UTF-8 character: its text alone is U+FFFD,
    its bytes are its own (not U+FFFD's), so a client can join them."""
    c = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=8,
                                       temperature=0, logprobs=True, top_logprobs=20)
    entries = [e for t in c.choices[0].logprobs.content for e in [t] + list(t.top_logprobs)]
    partial = [e for e in entries if e.token == "\ufffd"]
    assert partial, "no byte token among %d entries" % len(entries)
    for e in entries:
        assert bytes(e.bytes).decode("utf-8", "replace") == e.token
    assert all(bytes(e.bytes) != "\ufffd".encode() for e in partial)


# Longer than a step's 24 tokens and than the plan's 16 rows a run: its
# log-probabilities come in pieces over several runs and steps.
LONG = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
        "associated documentation files, to deal in the Software without restriction")


def test_echo_with_logprobs_scores_the_prompt(client, local, workdir):
    ids = local.encode(LONG)
    assert len(ids) > 24
    ref = reference_logprobs(ids, workdir)
    r = client.completions.create(model="tiny", prompt=LONG, max_tokens=5, temperature=0, logprobs=3, echo=True)
    lp = r.choices[0].logprobs
    plain = client.completions.create(model="tiny", prompt=LONG, max_tokens=5, temperature=0, logprobs=3)
    T = len(ids)
    # The prompt's tokens, then the completion's, as without echo.
    assert r.choices[0].text == LONG + plain.choices[0].text
    assert len(lp.tokens) == T + 5 and "".join(lp.tokens[:T]) == LONG
    assert lp.tokens[T:] == plain.choices[0].logprobs.tokens
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert lp.text_offset[0] == 0 and lp.text_offset[T] == sum(len(t) for t in lp.tokens[:T])
    for t in range(1, T):  # token t as tokens 0..t-1 predict it
        assert abs(lp.token_logprobs[t] - ref[t - 1, ids[t]]) < 1e-4, t
        want = sorted(ref[t - 1])[::-1][:3]
        got = sorted(lp.top_logprobs[t].values(), reverse=True)
        assert len(got) <= 3 and all(abs(a - b) < 1e-4 for a, b in zip(got, want)), t
    for a, b in zip(lp.token_logprobs[T:], plain.choices[0].logprobs.token_logprobs):
        assert abs(a - b) < 1e-5

    # Streamed: the prompt's chunk carries its logprobs, then the tokens'.
    toks, lps, text = [], [], ""
    for ch in client.completions.create(model="tiny", prompt=LONG, max_tokens=5, temperature=0, logprobs=3,
                                        echo=True, stream=True):
        c = ch.choices[0]
        text += c.text
        if c.logprobs is not None:
            toks += c.logprobs.tokens
            lps += c.logprobs.token_logprobs
    assert text == r.choices[0].text and toks == lp.tokens
    assert lps[0] is None and all(abs(a - b) < 1e-6 for a, b in zip(lps[1:], lp.token_logprobs[1:]))

    # max_tokens 0 with echo: the prompt alone and its scores (GPT-3's way to score a text).
    z = client.completions.create(model="tiny", prompt=LONG, max_tokens=0, logprobs=3, echo=True)
    assert z.choices[0].text == LONG and z.choices[0].finish_reason == "length"
    assert z.choices[0].logprobs.tokens == lp.tokens[:T] and z.usage.completion_tokens == 0
    assert z.choices[0].logprobs.token_logprobs[1:] == lp.token_logprobs[1:T]
    text, toks, reasons = "", [], []
    for ch in client.completions.create(model="tiny", prompt=LONG, max_tokens=0, logprobs=3, echo=True,
                                        stream=True, stream_options={"include_usage": True}):
        if ch.choices:
            text += ch.choices[0].text
            toks += ch.choices[0].logprobs.tokens if ch.choices[0].logprobs else []
            reasons.append(ch.choices[0].finish_reason)
        else:
            assert ch.usage.completion_tokens == 0
    assert text == LONG and toks == lp.tokens[:T] and reasons[-1] == "length"
    for bad in ({"prompt": "x", "max_tokens": 0}, {"prompt": "x", "max_tokens": 0, "echo": True, "use_beam_search": True,
                                                   "n": 2}):
        assert httpx.post(str(client.base_url) + "completions", json=bad, timeout=30).status_code == 400

    # Two prompts, two samples each: every choice starts with its own prompt's scores.
    m = client.completions.create(model="tiny", prompt=[LONG, PROMPT], max_tokens=3, temperature=1, seed=3, n=2,
                                  logprobs=1, echo=True)
    short = len(local.encode(PROMPT))
    assert [c.index for c in m.choices] == [0, 1, 2, 3]
    for c in m.choices:
        P = T if c.index < 2 else short
        assert len(c.logprobs.tokens) == P + 3 and c.text.startswith(LONG if c.index < 2 else PROMPT)
        if c.index < 2:
            assert all(abs(a - b) < 1e-6 for a, b in zip(c.logprobs.token_logprobs[1:T], lp.token_logprobs[1:T]))


def test_vllm_prompt_logprobs(server, local, workdir):
    ids = local.encode(LONG)
    ref = reference_logprobs(ids, workdir)
    r = httpx.post(server.base + "/v1/completions", timeout=60,
                   json={"prompt": ids, "max_tokens": 2, "temperature": 0, "prompt_logprobs": 2}).json()
    pl = r["choices"][0]["prompt_logprobs"]
    assert len(pl) == len(ids) and pl[0] is None
    for t in range(1, len(ids)):
        mine = pl[t][str(ids[t])]
        assert abs(mine["logprob"] - ref[t - 1, ids[t]]) < 1e-4
        assert mine["rank"] == 1 + int((ref[t - 1] > ref[t - 1, ids[t]] + 1e-6).sum()), t
        ranked = sorted((v["rank"], v["logprob"]) for k, v in pl[t].items() if k != str(ids[t]) or v["rank"] <= 2)
        assert [k for k, _ in ranked][:2] == [1, 2]
        assert abs(ranked[0][1] - ref[t - 1].max()) < 1e-4
    # Beam search scores its prompt alike, and its hypotheses are those without.
    beam = {"prompt": ids, "max_tokens": 4, "use_beam_search": True, "n": 2, "best_of": 3}
    b = httpx.post(server.base + "/v1/completions", timeout=60, json=dict(beam, prompt_logprobs=2)).json()
    plain = httpx.post(server.base + "/v1/completions", timeout=60, json=beam).json()
    assert [c["text"] for c in b["choices"]] == [c["text"] for c in plain["choices"]]
    assert all(c["prompt_logprobs"] == pl for c in b["choices"])
    # A chat's: the rendered prompt's, at the top of the response (vLLM's place).
    c = httpx.post(server.base + "/v1/chat/completions", timeout=60,
                   json={"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 2,
                         "prompt_logprobs": 0}).json()
    assert c["prompt_logprobs"][0] is None and len(c["prompt_logprobs"]) == c["usage"]["prompt_tokens"]
    assert all(len(d) == 1 for d in c["prompt_logprobs"][1:])


def test_sixteen_concurrent_greedy_requests_are_batch_mode_tokens(server, chat_plan, genrun, workdir):
    g = genc.Generator(chat_plan, device="cpu")
    prompts = [g.encode(PROMPT * (1 + k % 3))[: 5 + 3 * k] for k in range(16)]  # 5 .. 50 tokens
    g.close()
    path = os.path.join(workdir, "sixteen.jsonl")
    with open(path, "w") as f:
        for p in prompts:
            f.write(json.dumps({"input_ids": p}) + "\n")
    out = subprocess.run([genrun, chat_plan, "--device", "cpu", "--input", path, "--max-new-tokens", "24"],
                         check=True, capture_output=True, text=True).stdout
    want = [json.loads(line)["sequences"][0]["output_ids"] for line in out.splitlines()]

    def ask(p):
        r = httpx.post(server.base + "/v1/completions", timeout=60,
                       json={"prompt": p, "max_tokens": 24, "temperature": 0, "return_token_ids": True})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["token_ids"]

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        got = list(pool.map(ask, prompts))
    assert got == want


BAD = [
    ("malformed JSON", b'{"prompt": "x", ', 400),
    ("not an object", b'[1, 2]', 400),
    ("wrong type", json.dumps({"prompt": "x", "max_tokens": "ten"}).encode(), 400),
    ("unknown field", json.dumps({"prompt": "x", "max_tokenz": 3}).encode(), 400),
    ("unknown model", json.dumps({"model": "gpt-5", "prompt": "x"}).encode(), 404),
    ("prompt too long", json.dumps({"prompt": list(range(3, 300)), "max_tokens": 1}).encode(), 400),
    ("max_tokens past the plan", json.dumps({"prompt": "x", "max_tokens": 1000}).encode(), 400),
    ("n past the beams", json.dumps({"prompt": "x", "n": 9, "temperature": 1}).encode(), 400),
    ("best_of past the beams", json.dumps({"prompt": "x", "best_of": 9, "use_beam_search": True}).encode(), 400),
    ("invalid UTF-8", b'{"prompt": "\xff\xfe"}', 400),
    ("token id outside the vocabulary", json.dumps({"prompt": [5, 100000]}).encode(), 400),
    ("temperature out of range", json.dumps({"prompt": "x", "temperature": 7}).encode(), 400),
    ("nested too deeply", b"[" * 100000 + b"]" * 100000, 400),
    ("prompt_logprobs out of range", json.dumps({"prompt": "x", "prompt_logprobs": 21}).encode(), 400),
    ("prompt_logprobs streamed", json.dumps({"prompt": "x", "prompt_logprobs": 1, "stream": True}).encode(), 400),
    ("too many stop strings", json.dumps({"prompt": "x", "stop": ["s%d" % i for i in range(17)]}).encode(), 400),
    ("a stop string too long", json.dumps({"prompt": "x", "stop": "y" * 257}).encode(), 400),
]


@pytest.mark.parametrize("what,body,status", BAD, ids=[b[0] for b in BAD])
def test_bad_requests_get_openai_errors(server, what, body, status):
    r = httpx.post(server.base + "/v1/completions", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["message"] and err["type"]
    ok = httpx.post(server.base + "/v1/completions", json={"prompt": "x", "max_tokens": 2})
    assert ok.status_code == 200


def test_body_limit_api_key_and_missing_template(keyed):
    url = keyed.base + "/v1/completions"
    assert httpx.post(url, json={"prompt": "x", "max_tokens": 2}).status_code == 401
    r = httpx.post(url, json={"prompt": "x", "max_tokens": 2}, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    auth = {"Authorization": "Bearer sesame"}
    big = httpx.post(url, json={"prompt": "x" * 5000}, headers=auth)
    assert big.status_code == 413 and "limit" in big.json()["error"]["message"]
    chat = httpx.post(keyed.base + "/v1/chat/completions", headers=auth,
                      json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert chat.status_code == 400 and "no chat template" in chat.json()["error"]["message"]
    c = openai.OpenAI(base_url=keyed.base + "/v1", api_key="sesame", max_retries=0)
    assert c.completions.create(model="tiny", prompt="x", max_tokens=3).usage.completion_tokens == 3


def test_client_leaving_mid_stream_frees_its_slot(server):
    before = server.metrics()
    key = 'genc_requests_total{model="tiny",outcome="cancelled"}'
    body = {"prompt": PROMPT, "max_tokens": 240, "temperature": 0, "ignore_eos": True}
    # Eight requests that read to the end keep the steps busy meanwhile.
    busy = [threading.Thread(target=lambda: httpx.post(server.base + "/v1/completions", json=body, timeout=60))
            for _ in range(8)]
    for t in busy:
        t.start()
    with httpx.stream("POST", server.base + "/v1/completions", timeout=30, json=dict(body, stream=True)) as r:
        assert r.status_code == 200
        next(r.iter_lines())  # one event, then hang up
    for t in busy:
        t.join(60)
    deadline = time.time() + 10
    while True:
        m = server.metrics()
        if m['genc_slots_in_use{model="tiny"}'] == 0 and m[key] >= before[key] + 1:
            break
        assert time.time() < deadline, m
        time.sleep(0.05)


def test_step_metrics_by_kind(server):
    """A greedy request of a 60-token prompt at 24 tokens a step: its prompt
    in three steps with prompt pieces (24 + 24 + 12 tokens), then its 5 new
    tokens' 4 decode steps (the first comes with the prompt's last piece);
    the kinds add up to genc_steps_total."""
    ids = list(range(100, 160))
    m0 = server.metrics()
    r = httpx.post(server.base + "/v1/completions", timeout=60,
                   json={"prompt": ids, "max_tokens": 5, "temperature": 0, "ignore_eos": True})
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 5
    m1 = server.metrics()

    def d(key):
        return m1.get(key, 0) - m0.get(key, 0)
    kind = 'genc_step_seconds_count{model="tiny",kind="%s"}'
    assert d(kind % "prompt") == 3 and d(kind % "decode") == 4, (d(kind % "prompt"), d(kind % "decode"))
    assert d('genc_step_prompt_tokens_total{model="tiny"}') == 60
    assert d('genc_steps_total{model="tiny"}') == 7
    assert d('genc_step_seconds_sum{model="tiny",kind="prompt"}') > 0
    assert d('genc_step_host_seconds_total{model="tiny"}') >= 0
    assert m1['genc_step_seconds_bucket{model="tiny",kind="decode",le="+Inf"}'] == m1[kind % "decode"]


def test_sigterm_drains(chat_plan):
    s = ServerProcess(chat_plan, "--step-tokens", "8", "--served-model-name", "tiny", env_path=STAGE)
    try:
        results = []

        def ask():
            r = httpx.post(s.base + "/v1/completions", timeout=60,
                           json={"prompt": PROMPT * 2, "max_tokens": 200, "temperature": 0, "ignore_eos": True})
            results.append((r.status_code, r.json()["usage"]["completion_tokens"] if r.status_code == 200 else 0))

        threads = [threading.Thread(target=ask) for _ in range(24)]
        for t in threads:
            t.start()
        deadline = time.time() + 20
        while True:  # every request accepted (queued, running or done) before the signal
            m = s.metrics()
            if sum(m['genc_requests_%s{model="tiny"}' % k] for k in ("running", "waiting")) + \
                    m['genc_requests_total{model="tiny",outcome="finished"}'] == 24:
                break
            assert time.time() < deadline, m
            time.sleep(0.005)
        s.proc.send_signal(15)
        time.sleep(0.2)
        refused = False
        try:
            refused = httpx.post(s.base + "/v1/completions", json={"prompt": "x"}, timeout=5).status_code == 503
        except httpx.TransportError:
            refused = True
        assert refused
        for t in threads:
            t.join(60)
        assert s.proc.wait(60) == 0
        assert results == [(200, 200)] * 24
    finally:
        s.stop()


def test_http_details(server, client):
    """GET on a generation endpoint: 405 naming the method it takes; a
    model's card by name (client.models.retrieve); an unknown name 404."""
    r = httpx.get(server.base + "/v1/completions")
    assert r.status_code == 405 and r.headers["allow"] == "POST" and r.json()["error"]["message"]
    assert client.models.retrieve("tiny").id == "tiny"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-5")


@pytest.fixture(scope="module")
def sampling_plan(workdir):
    """A model whose generation config samples by default and allows 2048
    tokens, compiled for 128 positions and 4 slots."""
    src = model_with_template(TINY, os.path.join(workdir, "tiny-sampling"))
    with open(os.path.join(src, "generation_config.json"), "w") as f:
        json.dump({"do_sample": True, "max_length": 2048, "top_k": 0}, f)
    return genc.compile(src, os.path.join(workdir, "sampling.plan"), max_batch=2, max_beams=2, max_length=128,
                        progress=False)


def test_plan_defaults_length_sampling_and_the_queue(sampling_plan):
    s = ServerProcess(sampling_plan, "--served-model-name", "tiny", "--max-queue", "1", env_path=STAGE)
    try:
        url = s.base + "/v1/completions"
        # No max_tokens: the config's max_length (2048) is past the plan's
        # 128 positions, so the room the plan leaves, not a 400.
        r = httpx.post(url, json={"prompt": [5, 6, 7, 8], "ignore_eos": True}, timeout=60)
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] == 128 - 4
        # n > 1 without a temperature samples: the plan's config does.
        r = httpx.post(url, json={"prompt": "x", "n": 2, "max_tokens": 3}, timeout=60)
        assert r.status_code == 200, r.text
        assert len(r.json()["choices"]) == 2
        # More prompts than the queue holds: a 400 (no retry could help).
        r = httpx.post(url, json={"prompt": ["a", "b"], "max_tokens": 2}, timeout=60)
        assert r.status_code == 400 and "--max-queue" in r.json()["error"]["message"]

        # Twelve at once against 4 slots and a queue of one: those that come
        # while every slot is busy and one request waits get 429 with
        # OpenAI's rate-limit body; the rest finish, and the server goes on.
        long = {"prompt": [5, 6, 7, 8], "ignore_eos": True, "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            got = list(pool.map(lambda _: httpx.post(url, json=long, timeout=120), range(12)))
        codes = sorted(r.status_code for r in got)
        refused = codes.count(429)
        assert refused >= 1 and codes == [200] * (12 - refused) + [429] * refused, codes
        assert all(r.json()["error"]["type"] == "rate_limit_error" for r in got if r.status_code == 429)
        assert httpx.post(url, json={"prompt": "x", "max_tokens": 2}, timeout=60).status_code == 200
        m = s.metrics()
        assert m['genc_http_responses_total{model="tiny",endpoint="completions",status="429"}'] == refused
        assert m['genc_requests_total{model="tiny",outcome="rejected"}'] == refused
    finally:
        assert s.stop() == 0


def test_default_new_tokens():
    from genc._serve_requests import default_new_tokens
    assert default_new_tokens({}, 10, 50) == 50
    assert default_new_tokens({"max_new_tokens": 8}, 10, 50) == 8
    assert default_new_tokens({"max_new_tokens": 80}, 10, 50) == 50
    assert default_new_tokens({"max_length": 20}, 10, 50) == 10
    assert default_new_tokens({"max_length": 20}, 30, 50) == 50  # the prompt fills max_length: the room
    assert default_new_tokens({"max_length": 2048}, 10, 50) == 50


def test_a_huge_prompt_does_not_stall_the_other_streams(chat_plan):
    """A prompt of 10 MB (refused: it is far past the plan's 256 positions)
    is rendered and tokenized on a prompt worker, the tokenizer without the
    GIL: another client's stream keeps getting its chunks meanwhile. On the
    event loop, these two requests held every stream up for 1.8 s and 3.2 s
    here (2 cores)."""
    s = ServerProcess(chat_plan, "--served-model-name", "tiny", "--max-body-bytes", str(16 << 20), env_path=STAGE)
    stamps, stop = [], threading.Event()

    def read():  # streams one after another, a stamp a chunk
        with httpx.Client(timeout=60) as c:
            while not stop.is_set():
                with c.stream("POST", s.base + "/v1/completions", json={
                        "prompt": PROMPT, "max_tokens": 200, "ignore_eos": True, "stream": True}) as r:
                    assert r.status_code == 200
                    for line in r.iter_lines():
                        if line:
                            stamps.append(time.monotonic())

    reader = threading.Thread(target=read)
    try:
        reader.start()
        deadline = time.monotonic() + 30
        while len(stamps) < 100:
            assert time.monotonic() < deadline and reader.is_alive()
            time.sleep(0.01)
        text = (PROMPT + ", to any person obtaining a copy. ") * ((10 << 20) // (len(PROMPT) + 33))
        for path, body in (("/v1/completions", {"prompt": text, "max_tokens": 1}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": text}]})):
            raw = json.dumps(body).encode()
            t0 = time.monotonic()
            r = httpx.post(s.base + path, content=raw, headers={"Content-Type": "application/json"}, timeout=120)
            t1 = time.monotonic()
            assert r.status_code == 400, r.text[:300]
            assert "the plan's maximum length 256" in r.json()["error"]["message"]
            while stamps[-1] <= t1:  # the chunk that ends the window
                assert time.monotonic() < t1 + 10 and reader.is_alive()
                time.sleep(0.01)
            got = list(stamps)
            gaps = [b - a for a, b in zip(got, got[1:]) if b > t0 and a < t1]
            # A stalled loop's gap is nearly the whole request: none may be half of it, nor 1 s.
            assert max(gaps) < min(1.0, max(0.25, (t1 - t0) / 2)), (
                "%s: a gap of %.2f s between chunks in the %.2f s the request took" % (path, max(gaps), t1 - t0))
    finally:
        stop.set()
        reader.join(60)
        assert s.stop() == 0


def test_max_connections_answers_503_past_the_limit(chat_plan):
    """--max-connections 2: two open connections (streams held open) are
    served, a request on a third gets a 503 with OpenAI's error body (in
    place of uvicorn's plain text) and Retry-After, counted in /metrics;
    once they close, requests are served again."""
    s = ServerProcess(chat_plan, "--served-model-name", "tiny", "--max-connections", "2", env_path=STAGE)
    url = s.base + "/v1/completions"
    body = {"prompt": PROMPT, "max_tokens": 100, "stream": True}
    try:
        time.sleep(0.5)  # the start-up /health polls' connections closed
        with contextlib.ExitStack() as held:
            lines = []  # each stream's line iterator: dropping one would close its connection
            for _ in range(2):
                c = held.enter_context(httpx.Client(timeout=30))
                r = held.enter_context(c.stream("POST", url, json=body))
                assert r.status_code == 200
                lines.append(r.iter_lines())
                next(lines[-1])
            extra = httpx.post(url, json={"prompt": "x", "max_tokens": 2}, timeout=30)
            assert extra.status_code == 503, extra.text
            assert extra.headers["retry-after"] == "1" and extra.headers["connection"] == "close"
            err = extra.json()["error"]
            assert err["type"] == "server_error" and err["code"] == "overloaded"
            assert "2 open connections (--max-connections)" in err["message"]
            client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0, timeout=30)
            with pytest.raises(openai.InternalServerError) as e:
                client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}],
                                               max_tokens=2)
            assert e.value.status_code == 503 and e.value.code == "overloaded"
        deadline = time.time() + 10  # both closed: served again
        while httpx.post(url, json={"prompt": "x", "max_tokens": 2}, timeout=30).status_code != 200:
            assert time.time() < deadline
            time.sleep(0.05)
        m = s.metrics()
        assert m['genc_http_responses_total{model="tiny",endpoint="completions",status="503"}'] >= 1
        assert m['genc_http_responses_total{model="tiny",endpoint="chat",status="503"}'] == 1
    finally:
        assert s.stop() == 0


def test_sigterm_cuts_a_stalled_reader_after_the_shutdown_timeout(chat_plan):
    """A client that sends 16 pipelined streaming requests and reads nothing:
    once the socket buffers are full the server cannot finish its response.
    SIGTERM then drains for --shutdown-timeout (1 s) and exits 0; before,
    the drain waited for that connection for ever."""
    s = ServerProcess(chat_plan, "--served-model-name", "tiny", "--shutdown-timeout", "1", env_path=STAGE)
    body = json.dumps({"prompt": PROMPT, "max_tokens": 240, "ignore_eos": True, "stream": True,
                       "temperature": 1, "n": 4, "logprobs": 20}).encode()  # ~0.7 MB of events each
    request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", s.port))
        sock.sendall(request * 16)
        key = 'genc_requests_total{model="tiny",outcome="finished"}'
        finished, since = -1.0, time.monotonic()
        deadline = since + 60
        while True:  # stalled: no request finished for a second and none running
            m = s.metrics()
            if m[key] != finished:
                finished, since = m[key], time.monotonic()
            elif time.monotonic() - since > 1.0 and m['genc_requests_running{model="tiny"}'] == 0:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert 1 <= finished < 16, finished  # the reader is stalled: not every request had its turn
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(10) == 0
        took = time.monotonic() - t0
        assert 0.9 < took < 6, took
        log = s.output()
        assert "timeout graceful shutdown exceeded" in log and "Traceback" not in log, log
    finally:
        sock.close()
        s.stop()


def test_serve_option_checks(capsys):
    from genc.serve import parse_args
    a = parse_args(["x.plan"])
    assert a.max_connections is None and a.shutdown_timeout == 30
    a = parse_args(["x.plan", "--max-connections", "8", "--shutdown-timeout", "0"])
    assert a.max_connections == 8 and a.shutdown_timeout == 0
    for bad, why in ((["--max-connections", "0"], "--max-connections must be at least 1"),
                     (["--max-connections", "two"], "invalid int value"),
                     (["--shutdown-timeout", "-1"], "--shutdown-timeout must be a number of seconds"),
                     (["--shutdown-timeout", "nan"], "--shutdown-timeout must be a number of seconds"),
                     (["--max-conections", "2"], "unrecognized arguments")):
        with pytest.raises(SystemExit) as e:
            parse_args(["x.plan"] + bad)
        assert e.value.code == 2
        assert why in capsys.readouterr().err
