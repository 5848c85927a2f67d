"""What a choice's text becomes on the way out: OpenAI's stop strings are
not part of the returned text (unless include_stop_str_in_output), so a
stream holds back the tail that could still be the start of one, and the
end cuts at the first stop string; log-probabilities in OpenAI's shapes.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple


class ChoiceText:
    """One choice's text as it streams: feed() returns what may go out now."""

    def __init__(self, stops: List[str], include_stop: bool) -> None:
        self.stops = [] if include_stop else stops
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.text = ""      # everything received (kept only with stop strings)
        self.sent = 0       # characters of text already returned
        self.cut: Optional[int] = None  # where a stop string starts

    def feed(self, piece: str, last: bool) -> str:
        if not self.stops:  # nothing to hold back: a stream's common case, once a token
            return piece
        self.text += piece
        if self.cut is None:
            # Only the new tail can hold a stop string's first occurrence.
            start = max(0, self.sent - self.hold)
            hits = [i for i in (self.text.find(s, start) for s in self.stops) if i >= 0]
            if hits:
                self.cut = min(hits)
        end = len(self.text) if last else len(self.text) - self.hold
        if self.cut is not None:
            end = min(end, self.cut) if not last else self.cut
        end = max(end, self.sent)
        out = self.text[self.sent:end]
        self.sent = end
        return out

    def final(self, full: str) -> str:
        """A whole text (non-streamed), cut at its first stop string."""
        if not self.stops:
            return full
        hits = [i for i in (full.find(s) for s in self.stops) if i >= 0]
        return full[:min(hits)] if hits else full


def chat_logprobs(engine: Any, items: List[Tuple[int, float, List[Tuple[int, float]]]]) -> Dict[str, Any]:
    """chat.completion's logprobs: {"content": [{token, logprob, bytes, top_logprobs}]}."""
    ids = [t for t, _, _ in items] + [t for _, _, top in items for t, _ in top]
    texts = dict(zip(ids, engine.native.token_texts(ids))) if ids else {}
    raw = dict(zip(ids, engine.native.token_bytes(ids))) if ids else {}

    def entry(t: int, lp: float) -> Dict[str, Any]:
        return {"token": texts[t], "logprob": lp, "bytes": list(raw[t])}

    return {"content": [dict(entry(t, lp), top_logprobs=[entry(a, b) for a, b in top]) for t, lp, top in items]}


def completion_logprobs(engine: Any, items: List[Tuple[int, Optional[float], Optional[List[Tuple[int, float]]]]],
                        offset: int) -> Dict[str, Any]:
    """text_completion's logprobs: tokens, token_logprobs, top_logprobs,
    text_offset. An item's logprob and top are None for a prompt's first
    token (echo: nothing predicts it)."""
    ids = [t for t, _, _ in items] + [t for _, _, top in items for t, _ in top or ()]
    texts = dict(zip(ids, engine.native.token_texts(ids))) if ids else {}
    tokens, offsets = [], []
    for t, _, _ in items:
        offsets.append(offset)
        tokens.append(texts[t])
        offset += len(texts[t])
    return {"tokens": tokens, "token_logprobs": [lp for _, lp, _ in items],
            "top_logprobs": [None if top is None else {texts[a]: b for a, b in top} for _, _, top in items],
            "text_offset": offsets}


class PromptScores:
    """One prompt's log-probabilities as its PROMPT events bring them:
    position i's token, its logprob, rank and the likeliest there (position
    0, which nothing predicts, has none). Complete once every position came."""

    def __init__(self, ids: List[int]) -> None:
        self.ids = ids
        self.got: List[Tuple[float, int, List[Tuple[int, float]]]] = []

    def add(self, first: int, scored: List[Tuple[float, int, List[Tuple[int, float]]]]) -> None:
        if first != 1 + len(self.got):
            raise RuntimeError("prompt log-probabilities out of order (position %d after %d)" % (first, len(self.got)))
        self.got.extend(scored)

    @property
    def complete(self) -> bool:
        return 1 + len(self.got) >= len(self.ids)

    def echo_items(self, k: int) -> List[Tuple[int, Optional[float], Optional[List[Tuple[int, float]]]]]:
        """completion_logprobs' items for the prompt, with the k likeliest."""
        items: List[Tuple[int, Optional[float], Optional[List[Tuple[int, float]]]]] = [(self.ids[0], None, None)]
        items.extend((t, lp, list(top[:k])) for t, (lp, _, top) in zip(self.ids[1:], self.got))
        return items

    def vllm(self, engine: Any, k: int) -> List[Optional[Dict[str, Dict[str, Any]]]]:
        """vLLM's prompt_logprobs: None, then per position {id: {logprob,
        rank, decoded_token}} for the prompt's token and the k likeliest."""
        ids = list(self.ids) + [a for _, _, top in self.got for a, _ in top[:k]]
        texts = dict(zip(ids, engine.native.token_texts(ids))) if ids else {}
        out: List[Optional[Dict[str, Dict[str, Any]]]] = [None]
        for t, (lp, rank, top) in zip(self.ids[1:], self.got):
            d = {str(a): {"logprob": b, "rank": j + 1, "decoded_token": texts[a]} for j, (a, b) in enumerate(top[:k])}
            d[str(t)] = {"logprob": lp, "rank": rank, "decoded_token": texts[t]}
            out.append(d)
        return out
