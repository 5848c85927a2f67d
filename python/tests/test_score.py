"""Generator.score: a prompt's log-probabilities token by token, from one
prefill whose every row goes through the LM head, against the reference
interpreter's forward pass of the ONNX file (genc eval, log-softmax in
numpy); several prompts at once as each alone; generate() unchanged after;
bad prompts refused."""
import pytest

import genc
from conftest import reference_logprobs

TEXT = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
        "associated documentation files, to deal in the Software without restriction")


def test_score_is_the_forward_pass(gen, workdir):
    ids = gen.encode(TEXT)
    ref = reference_logprobs(ids, workdir)
    s = gen.score(TEXT, top_logprobs=3)[0]
    assert isinstance(s, genc.Scores) and s.ids == ids
    assert s.logprobs[0] is None and s.ranks[0] is None and s.top[0] is None
    for t in range(1, len(ids)):  # ids[t] as ids[:t] predict it
        row = ref[t - 1]
        assert abs(s.logprobs[t] - row[ids[t]]) < 1e-4, t
        assert s.ranks[t] == 1 + int((row > row[ids[t]] + 1e-6).sum()), t
        best = sorted(range(len(row)), key=lambda v: -row[v])[:3]
        assert [a for a, _ in s.top[t]] == best and all(abs(b - row[a]) < 1e-4 for a, b in s.top[t]), t
    assert abs(s.nll + sum(row[i] for row, i in zip(ref[:-1], ids[1:])) / (len(ids) - 1)) < 1e-4


def test_prompts_together_as_alone_and_generate_after(gen):
    before = gen.generate("Permission is", max_new_tokens=8)[0].ids
    both = gen.score([TEXT, [5, 6, 7, 8, 9]])
    assert both[0] == gen.score(TEXT)[0] and both[1] == gen.score([5, 6, 7, 8, 9])[0]
    assert both[1].top == [None, [], [], [], []]
    assert gen.score([11]) == [genc.Scores([11], [None], [None], [None])] and gen.score([11])[0].nll == 0.0
    assert gen.generate("Permission is", max_new_tokens=8)[0].ids == before


def test_bad_prompts(gen):
    with pytest.raises(ValueError, match="empty"):
        gen.score([[]])
    with pytest.raises(ValueError, match="max length"):
        gen.score([list(range(3, 3 + gen.max_length + 1))])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        gen.score([[5, 10**9]])
    with pytest.raises(ValueError, match="top_logprobs"):
        gen.score("x", top_logprobs=-1)
    with pytest.raises(TypeError):
        gen.score("x", top_logprobs=1.5)
