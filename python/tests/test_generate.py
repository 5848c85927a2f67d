"""Generator.generate: the same tokens, text and scores as genrun (the CLI
over the same runtime), prompts encoded and output decoded as Hugging Face
`tokenizers` does, and Hugging Face generate() results on a fixture."""
import json
import os
import subprocess
import threading
import time

import pytest

import genc
from conftest import SRC, TINY

PROMPTS = ["The licensor grants you a copyright license", "Permission is hereby granted"]


def genrun_lines(genrun, plan, prompts, *flags):
    args = [genrun, plan, "--device", "cpu", *flags]
    for p in prompts:
        args += ["--prompt", p]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def as_lines(results):
    return [{"sequences": [{"output_ids": s.ids, "text": s.text, "score": s.score} for s in r.sequences]}
            for r in results]


@pytest.mark.parametrize("kwargs,flags", [
    (dict(max_new_tokens=12), ["--max-new-tokens", "12"]),
    (dict(max_new_tokens=10, num_beams=4, num_return_sequences=2, no_repeat_ngram_size=3, length_penalty=0.8,
          early_stopping=True),
     ["--max-new-tokens", "10", "--num-beams", "4", "--num-return-sequences", "2", "--no-repeat-ngram-size", "3",
      "--length-penalty", "0.8", "--early-stopping", "true"]),
    (dict(max_new_tokens=10, do_sample=True, seed=7, top_k=20, top_p=0.9, temperature=0.7, num_return_sequences=2),
     ["--max-new-tokens", "10", "--do-sample", "--seed", "7", "--top-k", "20", "--top-p", "0.9", "--temperature",
      "0.7", "--num-return-sequences", "2"]),
    (dict(max_new_tokens=8, repetition_penalty=1.3, min_new_tokens=4, eos_token_id=[94, 163]),
     ["--max-new-tokens", "8", "--repetition-penalty", "1.3", "--min-new-tokens", "4", "--eos-token-id", "94",
      "--eos-token-id", "163"]),
    (dict(max_new_tokens=8, num_beams=2, encoder_repetition_penalty=1.6, encoder_no_repeat_ngram_size=2),
     ["--max-new-tokens", "8", "--num-beams", "2", "--encoder-repetition-penalty", "1.6",
      "--encoder-no-repeat-ngram-size", "2"]),
    # Both rows stop early: "notnot…ications" and "||||||||orresponding…".
    (dict(max_new_tokens=12, stop_strings=["cations", "ngorr"]),
     ["--max-new-tokens", "12", "--stop-strings", '["cations", "ngorr"]']),
])
def test_generate_equals_genrun(gen, plan, genrun, kwargs, flags):
    assert as_lines(gen.generate(PROMPTS, **kwargs)) == genrun_lines(genrun, plan, PROMPTS, *flags)


def test_text_is_hugging_face_tokenizers(gen):
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(os.path.join(TINY, "tokenizer.json"))
    results = gen.generate(PROMPTS, max_new_tokens=10)
    for prompt, r in zip(PROMPTS, results):
        assert r.prompt_ids == hf.encode(prompt).ids == gen.encode(prompt)
        assert r.text == hf.decode(r.ids, skip_special_tokens=True) == gen.decode(r.ids)


def test_prompt_forms(gen):
    ids = gen.encode(PROMPTS[1])
    one = gen.generate(PROMPTS[1], max_new_tokens=5)
    assert len(one) == 1
    assert gen.generate(ids, max_new_tokens=5) == one  # a list of ints is one prompt
    # In a batch of two: the same tokens; scores within float rounding (a
    # one-row decode GEMM is a GEMV, whose sums BLAS orders differently).
    two = gen.generate([ids, PROMPTS[1]], max_new_tokens=5)
    for r in two:
        assert (r.prompt_ids, r.ids, r.text) == (one[0].prompt_ids, one[0].ids, one[0].text)
        assert r.sequences[0].score == pytest.approx(one[0].sequences[0].score, rel=1e-6)
    assert gen.generate(PROMPTS[1].encode(), max_new_tokens=5) == one  # UTF-8 bytes


def test_max_length_counts_the_prompt_as_hf(gen):
    ids = gen.encode(PROMPTS[0])
    assert gen.generate(ids, max_length=len(ids) + 6) == gen.generate(ids, max_new_tokens=6)
    # A batch counts its longest prompt (HF pads the batch to it).
    short = gen.encode(PROMPTS[1])
    r = gen.generate([ids, short], max_length=len(ids) + 4, eos_token_id=[])
    assert [len(x.ids) for x in r] == [4, 4]


@pytest.mark.parametrize("max_new", [None, 24])
def test_hf_parity_on_a_fixture(workdir, max_new):
    """HF generate()'s golden beam outputs, through HF's own kwargs and its
    left-padded batch with attention_mask; the same with the beams sharing
    their prompt (max_new_tokens at compile time), in less cache."""
    fixture = os.path.join(SRC, "tests", "fixtures", "gpt2")
    golden = json.load(open(os.path.join(fixture, "golden.json")))
    stats = os.path.join(workdir, "gpt2-%s.json" % max_new)
    plan = genc.compile(os.path.join(fixture, "model.onnx"), os.path.join(workdir, "gpt2-%s.plan" % max_new),
                        max_batch=len(golden["input_ids"]), max_beams=4, max_length=64, max_new_tokens=max_new,
                        stats_json=stats, progress=False)
    sizes = json.load(open(stats))
    if max_new:
        assert sizes["kv_cache_bytes"] < sizes["kv_cache_bytes_unshared"]
    else:
        assert sizes["kv_cache_bytes"] == sizes["kv_cache_bytes_unshared"]
    g = genc.Generator(plan, device="cpu")
    assert g.max_new_tokens == max_new
    for mode in ("beam", "beam_reppen"):
        want = golden[mode]
        results = g.generate(golden["input_ids"], attention_mask=golden["attention_mask"], **want["args"])
        got = [s.ids for r in results for s in r.sequences]
        width, eos = len(golden["input_ids"][0]), golden["eos_token_id"]
        # HF's rows: the padded prompt, the new tokens, pads after eos.
        want_ids = [row[width:] for row in want["sequences"]]
        want_ids = [row[:row.index(eos) + 1] if eos in row else row for row in want_ids]
        assert got == want_ids, mode
        if "sequences_scores" in want:
            scores = [s.score for r in results for s in r.sequences]
            assert scores == pytest.approx(want["sequences_scores"], abs=1e-4)
    if max_new:
        with pytest.raises(ValueError, match="max_new_tokens 25 exceeds the plan's 24"):
            g.generate(golden["input_ids"][0], num_beams=4, max_new_tokens=25)
    g.close()


def test_gil_is_released_while_generating(gen):
    done = threading.Event()
    result = []

    def work():
        result.append(gen.generate(PROMPTS * 40, max_new_tokens=40, eos_token_id=[]))
        done.set()

    t = threading.Thread(target=work)
    spins = 0
    t.start()
    start = time.monotonic()
    while not done.is_set():
        spins += 1  # runs only while generate() has let go of the GIL
    elapsed = time.monotonic() - start
    t.join()
    assert len(result[0]) == 80
    assert elapsed > 0.05, "generation too short to tell"
    assert spins > 10000


def test_type_stubs_ship():
    pkg = os.path.dirname(genc.__file__)
    assert os.path.exists(os.path.join(pkg, "_genc.pyi"))
    assert os.path.exists(os.path.join(pkg, "py.typed"))


def test_ctrl_c_stops_generating(gen):
    import signal
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        gen.generate(PROMPTS * 2000, max_new_tokens=40, eos_token_id=[])  # tens of seconds if not stopped
    assert time.monotonic() - start < 5
    assert len(gen.generate("Copyright", max_new_tokens=2)[0].ids) == 2


def test_stop_strings_end_rows_early(gen):
    plain = gen.generate(PROMPTS, max_new_tokens=12)
    stopped = gen.generate(PROMPTS, max_new_tokens=12, stop_strings=["cations", "ngorr"])
    for p, s in zip(plain, stopped):
        assert len(s.ids) < len(p.ids) and p.ids[:len(s.ids)] == s.ids
        assert "cations" in s.text or "ngorr" in s.text
    assert gen.generate(PROMPTS, max_new_tokens=12, stop_strings="cations")[0].ids == stopped[0].ids


def test_source_length_apart_from_the_decoder(workdir, gen):
    """An encoder-decoder's sources bounded by max_source_length; max_length
    counts the decoder's tokens (HF's max_length), and generate() holds to
    each bound with its own error."""
    plan = genc.compile(os.path.join(SRC, "tests", "fixtures", "bart"), os.path.join(workdir, "bart-src.plan"),
                        max_batch=2, max_beams=2, max_length=8, max_source_length=40, progress=False)
    g = genc.Generator(plan, device="cpu")
    assert (g.max_source_length, g.max_length, gen.max_source_length) == (40, 8, None)
    r = g.generate([5] * 39 + [2], max_new_tokens=7, num_beams=2, eos_token_id=[])
    assert len(r[0].sequences[0].ids) == 7
    with pytest.raises(ValueError, match="the source has 41 tokens, more than the plan's maximum source length 40"):
        g.generate([5] * 40 + [2], max_new_tokens=2)
    with pytest.raises(ValueError, match="exceeds the plan's maximum length 8"):
        g.generate([5, 2], max_new_tokens=8)
    g.close()
