"""Hugging Face names for generate()'s options: unknown names, wrong types,
values HF rejects, and what genc does not implement."""
import os
import pytest

import genc


def test_unknown_name_lists_the_valid_ones(gen):
    with pytest.raises(TypeError) as e:
        gen.generate("x", max_new_token=5)
    msg = str(e.value)
    assert "'max_new_token'" in msg
    for name in ("max_new_tokens", "num_beams", "do_sample", "top_p", "repetition_penalty"):
        assert name in msg
    assert genc.generate_options() == sorted(genc.generate_options())


@pytest.mark.parametrize("kwargs,error,text", [
    (dict(num_beams=0), ValueError, "num_beams must be at least 1, got 0"),
    (dict(max_new_tokens=0), ValueError, "max_new_tokens must be at least 1, got 0"),
    (dict(top_p=1.5, do_sample=True), ValueError, "top_p must be in (0, 1], got 1.5"),
    (dict(top_p=0.0, do_sample=True), ValueError, "top_p must be in (0, 1], got 0"),
    (dict(batch_size=0), ValueError, "batch_size must be at least 1, got 0"),
    (dict(temperature=0.0, do_sample=True), ValueError, "temperature must be a positive number"),
    (dict(num_return_sequences=2), ValueError, "greedy search returns one sequence: num_return_sequences 2 needs num_beams >= it or do_sample"),
    (dict(num_beams=2, do_sample=True, num_beam_groups=2), ValueError, "Group Beam Search requires"),
    (dict(max_new_tokens="5"), TypeError, "max_new_tokens must be an int, got '5'"),
    (dict(do_sample=1), TypeError, "do_sample must be True or False"),
    (dict(early_stopping="sometimes"), TypeError, 'early_stopping must be True, False or "never"'),
    (dict(eos_token_id=[1, "2"]), TypeError, "eos_token_id must be an int, a list of ints or None"),
    (dict(eos_token_id=5000), ValueError, "eos_token_id 5000 is outside the vocabulary (size 1000)"),
    (dict(guidance_scale=1.5), ValueError, "genc does not support guidance_scale (given 1.5)"),
    (dict(encoder_repetition_penalty=0.0), ValueError, "encoder_repetition_penalty must be a positive number, got 0"),
    (dict(encoder_no_repeat_ngram_size=-1), ValueError, "encoder_no_repeat_ngram_size must not be negative"),
    (dict(typical_p=0.0, do_sample=True), ValueError, "typical_p must be in (0, 1], got 0"),
    (dict(num_beams=4, num_beam_groups=2, diversity_penalty=0.5), ValueError,
     "Group Beam Search requires `trust_remote_code=True` in your `generate` call, since it loads "
     "https://hf.co/transformers-community/group-beam-search"),
    (dict(penalty_alpha=0.6, top_k=4), ValueError, "Contrastive Search requires `trust_remote_code=True`"),
    (dict(dola_layers="high"), ValueError, "Dola Generation requires `trust_remote_code=True`"),
    (dict(max_new_tokens=100), ValueError, "plus max_new_tokens 100 exceeds the plan's maximum length 64"),
    (dict(max_length=3), ValueError, "max_length 3 leaves no room for new tokens"),
    (dict(batch_size=9), ValueError, "batch_size 9 needs more than the plan allows"),
    (dict(seed=-1), ValueError, "seed must not be negative"),
    (dict(suppress_tokens=["a"]), TypeError, "suppress_tokens must be an int, a list of ints or None"),
    (dict(forced_bos_token_id=5000), ValueError, "forced_bos_token_id 5000 is outside the vocabulary"),
    (dict(exponential_decay_length_penalty=(2,)), TypeError,
     "exponential_decay_length_penalty must be a pair (start index, decay factor) or None"),
    (dict(exponential_decay_length_penalty=(2, 0.0)), ValueError, "the decay factor must be a positive number"),
])
def test_bad_values_raise_with_hf_names(gen, kwargs, error, text):
    with pytest.raises(error) as e:
        gen.generate("Permission is hereby granted", **kwargs)
    assert text in str(e.value)


def test_min_new_tokens_above_max_warns_and_runs(gen):
    # HF warns and stops at max_new_tokens; genrun prints the same line.
    with pytest.warns(UserWarning, match=r"min_new_tokens \(9\) is larger than max_new_tokens \(3\)"):
        out = gen.generate("Copyright", max_new_tokens=3, min_new_tokens=9)
    assert len(out[0].sequences[0].ids) == 3


def test_hf_defaults_of_unsupported_options_pass(gen):
    base = gen.generate("Copyright", max_new_tokens=4)
    assert gen.generate("Copyright", max_new_tokens=4, typical_p=1.0, num_beam_groups=1, use_cache=True,
                        output_scores=False, pad_token_id=0, bos_token_id=None, top_k=50, top_p=None) == base
    assert gen.generate("Copyright", max_new_tokens=4, early_stopping="never", num_beams=2) == \
        gen.generate("Copyright", max_new_tokens=4, early_stopping="never", num_beams=2)


class DuckConfig:
    def __init__(self, **kw):
        self.kw = kw

    def to_diff_dict(self):
        return dict(self.kw, transformers_version="x")


def test_beam_sampling_runs_and_repeats_itself(gen):
    kw = dict(max_new_tokens=5, num_beams=3, num_return_sequences=2, do_sample=True, seed=3)
    first = gen.generate("Copyright", **kw)
    assert first == gen.generate("Copyright", **kw)
    assert first != gen.generate("Copyright", **dict(kw, do_sample=False))


def test_generation_config_object(gen):
    want = gen.generate("Copyright", max_new_tokens=6, num_beams=2, length_penalty=0.5)
    cfg = DuckConfig(max_new_tokens=6, num_beams=2, length_penalty=0.5)
    assert gen.generate("Copyright", generation_config=cfg) == want
    # kwargs override the config, as in HF
    assert gen.generate("Copyright", generation_config=DuckConfig(max_new_tokens=2, num_beams=2,
                                                                   length_penalty=0.5), max_new_tokens=6) == want
    with pytest.raises(TypeError):
        gen.generate("Copyright", generation_config=42)


def test_transformers_generation_config(gen):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GenerationConfig(max_new_tokens=6, num_beams=3, no_repeat_ngram_size=2, eos_token_id=2,
                                        pad_token_id=0)
    assert gen.generate("Copyright", generation_config=cfg) == \
        gen.generate("Copyright", max_new_tokens=6, num_beams=3, no_repeat_ngram_size=2, eos_token_id=2)
    # HF 5.x's refusal of a mode it moved to the Hub, in its words
    with pytest.raises(ValueError, match="Contrastive Search requires `trust_remote_code=True`"):
        gen.generate("Copyright", generation_config=transformers.GenerationConfig(penalty_alpha=0.6, top_k=4))
    with pytest.raises(ValueError, match="genc does not support guidance_scale"):
        gen.generate("Copyright", generation_config=transformers.GenerationConfig(guidance_scale=1.5))


def test_logits_processors_from_hf_names(gen):
    # suppress_tokens: none of greedy's own choices comes back; a
    # GenerationConfig's None (HF's "off") changes nothing.
    plain = gen.generate("Copyright", max_new_tokens=6)[0].sequences[0].ids
    again = gen.generate("Copyright", max_new_tokens=6, suppress_tokens=None, forced_bos_token_id=None,
                         exponential_decay_length_penalty=None)[0].sequences[0].ids
    assert again == plain
    banned = sorted(set(plain))
    out = gen.generate("Copyright", max_new_tokens=6, suppress_tokens=banned)[0].sequences[0].ids
    assert len(out) == 6 and not set(out) & set(banned)
    # begin_suppress_tokens: only the first token changes for sure.
    first = gen.generate("Copyright", max_new_tokens=6, begin_suppress_tokens=[plain[0]])[0].sequences[0].ids
    assert first[0] != plain[0]
    # bad_words_ids / sequence_bias (HF's dict form too): one-token bans.
    bad = gen.generate("Copyright", max_new_tokens=6, bad_words_ids=[[t] for t in banned])[0].sequences[0].ids
    assert bad == out
    biased = gen.generate("Copyright", max_new_tokens=6,
                          sequence_bias={(t,): -1e30 for t in banned})[0].sequences[0].ids
    assert biased == out
    # The sampling warpers run (typical_p 1.0 / None is HF's off).
    assert gen.generate("Copyright", max_new_tokens=6, typical_p=None, epsilon_cutoff=None)[0].sequences[0].ids == plain
    s = gen.generate("Copyright", max_new_tokens=6, do_sample=True, typical_p=0.5, eta_cutoff=0.01, seed=3)
    assert 1 <= len(s[0].sequences[0].ids) <= 6


def test_generation_config_of_the_model_is_the_default(tmp_path):
    # generation_config.json beside the model: the plan's defaults, which
    # kwargs override one by one, as in HF generate().
    import json
    import shutil
    from conftest import SRC
    fx = os.path.join(SRC, "tests", "fixtures", "processors")
    for f in ("model.onnx", "model.onnx.data", "config.json"):
        shutil.copy(os.path.join(fx, f), tmp_path / f)
    plain_plan = genc.compile(str(tmp_path / "model.onnx"), str(tmp_path / "plain.plan"), max_length=64,
                              progress=False)
    (tmp_path / "generation_config.json").write_text(json.dumps(
        {"suppress_tokens": [870, 916], "min_length": 6, "max_new_tokens": 5, "forced_eos_token_id": 2}))
    cfg_plan = genc.compile(str(tmp_path / "model.onnx"), str(tmp_path / "cfg.plan"), max_length=64,
                            progress=False)
    prompt = [[5, 6, 7]]
    with genc.Generator(cfg_plan, device="cpu") as g, genc.Generator(plain_plan, device="cpu") as p:
        assert g.generation_defaults["suppress_tokens"] == [870, 916]
        assert p.generation_defaults == {}
        by_default = g.generate(prompt)[0].sequences[0].ids
        as_kwargs = p.generate(prompt, suppress_tokens=[870, 916], min_length=6, max_new_tokens=5,
                               forced_eos_token_id=2)[0].sequences[0].ids
        assert by_default == as_kwargs and len(by_default) <= 5
        overridden = g.generate(prompt, suppress_tokens=None, min_length=0, max_new_tokens=20,
                                forced_eos_token_id=None)[0].sequences[0].ids
        assert overridden == p.generate(prompt)[0].sequences[0].ids


def test_max_length_and_max_new_tokens_precedence():
    from genc import _config
    # The model's max_new_tokens beats its max_length; a user's max_length
    # beats the model's max_new_tokens; a user's max_new_tokens beats all.
    assert _config.gather({}, {"max_new_tokens": 7, "max_length": 30}) == {"max_new_tokens": 7, "max_length": 30}
    assert _config.gather({"max_length": 12}, {"max_new_tokens": 7}) == {"max_length": 12}
    assert _config.gather({"max_new_tokens": 3}, {"max_length": 30}) == {"max_new_tokens": 3, "max_length": 30}


def test_cross_kv_dtype_i8_shrinks_the_cross_cache_and_keeps_the_beams(tmp_path):
    # An encoder-decoder plan with its cross cache as int8 rows: the bytes
    # genc reports, and the same beam as the f32 cache's on the BART fixture.
    import json
    from conftest import SRC
    fx = os.path.join(SRC, "tests", "fixtures", "bart")
    model = [os.path.join(fx, "encoder.onnx"), os.path.join(fx, "decoder.onnx")]
    stats = {}
    plans = {}
    for name, dt in (("f32", None), ("i8", "i8")):
        plans[name] = genc.compile(model, str(tmp_path / (name + ".plan")), max_batch=2, max_length=32,
                                   cross_kv_dtype=dt, gpu_arch=[], stats_json=str(tmp_path / (name + ".json")),
                                   progress=False)
        stats[name] = json.loads((tmp_path / (name + ".json")).read_text())
    # head_dim 16: 16 one-byte codes and a 4-byte scale against 16 f32 values
    assert stats["i8"]["cross_kv_cache_bytes"] * 64 == stats["f32"]["cross_kv_cache_bytes"] * 20
    src = [[0, 31, 42, 7, 2]]
    with genc.Generator(plans["f32"], device="cpu") as a, genc.Generator(plans["i8"], device="cpu") as b:
        x = a.generate(src, num_beams=2, max_new_tokens=8)[0].sequences[0]
        y = b.generate(src, num_beams=2, max_new_tokens=8)[0].sequences[0]
    assert x.ids == y.ids
    assert abs(x.score - y.score) < 2e-3
    with pytest.raises(genc.Error, match="cross-kv-dtype"):
        genc.compile(model, str(tmp_path / "bad.plan"), cross_kv_dtype="i4", gpu_arch=[], progress=False)


def test_weights_int4_packs_the_linear_layers_and_runs(tmp_path):
    # --weights through genc.compile: the stats count the packed matrices,
    # the plan generates, and a bad value is the compiler's one-line error.
    import json
    from conftest import SRC
    model = os.path.join(SRC, "tests", "fixtures", "llama", "model.onnx")
    plan = genc.compile(model, str(tmp_path / "q.plan"), max_batch=1, max_length=32, weights="int4", group_size=64,
                        weights_zero_point=True, gpu_arch=[], stats_json=str(tmp_path / "q.json"), progress=False)
    stats = json.loads((tmp_path / "q.json").read_text())
    assert len(stats["quantized_weights"]) == 8 and stats["quantized_weights_bytes"] > 0
    with genc.Generator(plan, device="cpu") as g:
        assert len(g.generate([[1, 5, 9]], max_new_tokens=4)[0].sequences[0].ids) == 4
    with pytest.raises(genc.Error, match="--weights must be int8 or int4"):
        genc.compile(model, str(tmp_path / "bad.plan"), weights="int2", gpu_arch=[], progress=False)
