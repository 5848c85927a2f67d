"""Generator.stream: events as tokens become final; the pieces of each
sequence join to its final text, and "done" carries what generate() returns."""
import pytest

import genc

PROMPTS = ["The licensor grants you", "Copyright"]


def collect(events):
    pieces, tokens, sequences, done = {}, {}, {}, {}
    for ev in events:
        assert isinstance(ev, genc.StreamEvent)
        key = (ev.prompt, ev.sequence)
        assert ev.prompt not in done, "event after its prompt's done"
        if ev.kind == "token":
            pieces.setdefault(key, []).append(ev.text)
            tokens.setdefault(key, []).append(ev.token_id)
        elif ev.kind == "sequence":
            sequences[key] = genc.Sequence(ev.ids, ev.text, ev.score)
        else:
            assert ev.kind == "done" and ev.text is None
            done[ev.prompt] = ev.result
    return pieces, tokens, sequences, done


@pytest.mark.parametrize("kwargs", [dict(max_new_tokens=24),
                                    dict(max_new_tokens=16, do_sample=True, seed=3, num_return_sequences=3)])
def test_pieces_join_to_the_final_text(gen, kwargs):
    want = gen.generate(PROMPTS, **kwargs)
    pieces, tokens, sequences, done = collect(gen.stream(PROMPTS, **kwargs))
    assert [done[p] for p in range(len(PROMPTS))] == want
    for p, r in enumerate(want):
        for s, seq in enumerate(r.sequences):
            assert "".join(pieces[(p, s)]) == seq.text
            assert tokens[(p, s)] == seq.ids
            assert sequences[(p, s)] == seq


def test_beam_search_streams_final_hypotheses(gen):
    kwargs = dict(max_new_tokens=10, num_beams=3, num_return_sequences=2)
    want = gen.generate(PROMPTS, **kwargs)
    events = list(gen.stream(PROMPTS, **kwargs))
    assert not [e for e in events if e.kind == "token"], "running beams are not final"
    for p, r in enumerate(want):
        mine = [e for e in events if e.prompt == p]
        assert [e.kind for e in mine] == ["sequence", "sequence", "done"]
        assert [genc.Sequence(e.ids, e.text, e.score) for e in mine[:2]] == r.sequences
        assert mine[2].result == r


def test_stopping_early_stops_generating(gen):
    for ev in gen.stream(PROMPTS * 2, max_new_tokens=50, eos_token_id=[]):
        break  # the generator's finally closes the native stream
    full = gen.generate(PROMPTS * 2, max_new_tokens=50, eos_token_id=[])
    assert len(full) == 4  # the generator is usable right after


def test_stream_without_tokenizer_has_ids_only(ids_plan):
    g = genc.Generator(ids_plan, device="cpu")
    events = list(g.stream([5, 6, 7], max_new_tokens=3))
    assert [e.kind for e in events] == ["token"] * 3 + ["sequence", "done"]
    assert all(e.text is None for e in events)
    assert events[-1].result.sequences[0].ids == [e.token_id for e in events[:3]]


def test_bad_arguments_raise_at_the_call(gen):
    with pytest.raises(TypeError):
        gen.stream(PROMPTS, max_new_token=5)
