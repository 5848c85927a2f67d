"""Generator: a compiled plan, loaded on a device, generating with Hugging
Face `generate()` semantics. The work runs in C++ on the generator's own
device thread, without the GIL; Ctrl-C stops it."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence as Seq, Tuple, Union

from . import _chat, _config, _genc

Prompt = Union[str, bytes, Seq[int]]


@dataclass(frozen=True)
class Sequence:
    """One generated sequence: the new tokens only (HF: output[prompt_len:])."""
    ids: List[int]
    text: Optional[str]  # tokenizer.decode(ids, skip_special_tokens=True); None without a tokenizer
    score: float  # beam search: HF's sequences_scores; else the sum of the chosen tokens' log-probs


@dataclass(frozen=True)
class Result:
    """What one prompt produced: num_return_sequences sequences, best first for beam search."""
    prompt_ids: List[int]
    sequences: List[Sequence]

    @property
    def text(self) -> Optional[str]:
        """The first sequence's text."""
        return self.sequences[0].text

    @property
    def ids(self) -> List[int]:
        """The first sequence's ids."""
        return self.sequences[0].ids


@dataclass(frozen=True)
class Scores:
    """One prompt's log-probabilities (Generator.score): each token after the
    first as the tokens before it predict it — the model's log-softmax, before
    any processor (HF: log_softmax(model(ids).logits[t - 1])[ids[t]]).

    logprobs[t], ranks[t] and top[t] belong to ids[t]: None at t = 0, which
    nothing predicts; rank 1 is the likeliest token at its position; top[t]
    the likeliest top_logprobs there, (token id, logprob), best first."""
    ids: List[int]
    logprobs: List[Optional[float]]
    ranks: List[Optional[int]]
    top: List[Optional[List[Tuple[int, float]]]]

    @property
    def nll(self) -> float:
        """The mean negative log-likelihood of ids[1:], in nats (0.0 for one token)."""
        lps = self.logprobs[1:]
        return -sum(lps) / len(lps) if lps else 0.0  # type: ignore[arg-type]


@dataclass(frozen=True)
class StreamEvent:
    """One event of Generator.stream(), as soon as what it reports is final.

    kind "token" (greedy and sampling, every step): token_id and text, the
      piece of text that became final with it ("" while a character is
      incomplete); a sequence's pieces concatenate to its text.
    kind "sequence": a returned sequence is complete (beam search: its
      hypothesis can no longer change): ids, text (the whole text), score.
    kind "done": every sequence of the prompt is complete: result.
    """
    kind: str
    prompt: int
    sequence: int = -1
    token_id: int = -1
    text: Optional[str] = None
    ids: List[int] = field(default_factory=list)
    score: float = 0.0
    result: Optional[Result] = None


def _sequences(raw: List[Tuple[List[int], Optional[str], float]]) -> List[Sequence]:
    return [Sequence(list(ids), text, score) for ids, text, score in raw]


class Generator:
    """A compiled plan (genc.compile) loaded on `device`: "auto" (the GPU
    when one is visible, else the CPU), "cuda" or "cpu"."""

    def __init__(self, plan: Union[str, os.PathLike], device: str = "auto") -> None:
        self._g = _genc._Generator(os.fspath(plan), device)

    # -- the model ---------------------------------------------------------
    @property
    def device(self) -> str:
        return self._g.device

    @property
    def has_tokenizer(self) -> bool:
        return self._g.has_tokenizer

    @property
    def vocab_size(self) -> int:
        return self._g.vocab_size

    @property
    def eos_token_id(self) -> List[int]:
        return list(self._g.eos_token_id)

    @property
    def generation_defaults(self) -> Dict[str, Any]:
        """The model's generation config as the plan records it (HF names):
        what generate() uses for every option its keywords leave out."""
        return dict(self._g.generation_defaults)

    @property
    def max_batch(self) -> int:
        return self._g.max_batch

    @property
    def max_beams(self) -> int:
        """Rows a prompt may take: beams, or samples of one prompt (n)."""
        return self._g.max_beams

    @property
    def max_length(self) -> int:
        """Prompt + new tokens a sequence holds (an encoder-decoder's: the decoder's, as HF counts)."""
        return self._g.max_length

    @property
    def max_source_length(self) -> Optional[int]:
        """An encoder-decoder's longest source (genc compile --max-source-length); None for a decoder-only plan."""
        return self._g.max_source_length or None

    @property
    def max_new_tokens(self) -> Optional[int]:
        """The plan's genc compile --max-new-tokens (None: not set). With several beams a prompt,
        they share its K/V and each generates at most this many tokens."""
        return self._g.max_new_tokens or None

    @property
    def chat_templates(self) -> Dict[str, str]:
        """The model's chat templates as the plan carries them (tokenizer_config.json's
        chat_template or chat_template.jinja, packed by genc compile): one unnamed
        template under "", or templates by name; {} when the model has none."""
        return dict(self._g.chat_templates)

    @property
    def chat_template(self) -> Optional[str]:
        """The template apply_chat_template uses (transformers' choice: the one
        template, or "default"); None when the model has none."""
        try:
            return _chat.select_template(self.chat_templates)
        except ValueError:
            return None

    def apply_chat_template(self, messages: List[Dict[str, Any]], add_generation_prompt: bool = True,
                            **kwargs: Any) -> str:
        """The prompt text of HF's tokenizer.apply_chat_template(messages, tokenize=False,
        add_generation_prompt=...), rendered as transformers renders it (genc._chat);
        encode it with add_special_tokens=False for its ids."""
        template = _chat.select_template(self.chat_templates)
        return _chat.render(template, messages, dict(self._g.special_tokens),
                            add_generation_prompt=add_generation_prompt, **kwargs)

    def encode(self, text: Union[str, bytes], add_special_tokens: bool = True) -> List[int]:
        """HF: tokenizer(text).input_ids, with the tokenizer the plan carries."""
        return list(self._g.encode(_utf8(text), add_special_tokens))

    def decode(self, ids: Seq[int], skip_special_tokens: bool = True) -> str:
        """HF: tokenizer.decode(ids, skip_special_tokens=...)."""
        return self._g.decode(list(ids), skip_special_tokens)

    # -- generation --------------------------------------------------------
    def generate(self, prompts: Union[Prompt, Seq[Prompt]], **kwargs: Any) -> List[Result]:
        """HF: model.generate(**tokenizer(prompts), **kwargs) and decode. One
        Result per prompt, in order (a single prompt gives a list of one)."""
        ids, native, masks = self._request(prompts, kwargs)
        raw = self._g.generate(ids, masks, native)
        return [Result(p, _sequences(r)) for p, r in zip(ids, raw)]

    def stream(self, prompts: Union[Prompt, Seq[Prompt]], **kwargs: Any) -> Iterator[StreamEvent]:
        """Like generate(), yielding StreamEvents as tokens become final. Bad
        arguments raise here; generation starts now. Stop iterating (break,
        or close()) to stop generating."""
        ids, native, masks = self._request(prompts, kwargs)
        return _events(ids, self._g.stream(ids, masks, native))

    def score(self, prompts: Union[Prompt, Seq[Prompt]], top_logprobs: int = 0) -> List[Scores]:
        """Each prompt's log-probabilities, token by token (Scores), from one
        prefill whose every row goes through the LM head. Text is encoded as
        generate() encodes it (with the tokenizer's special tokens). For
        decoder-only plans; a prompt of at most the plan's max_length."""
        ids = [self._prompt_ids(p, n) for n, p in enumerate(_prompt_list(prompts))]
        if not isinstance(top_logprobs, int) or isinstance(top_logprobs, bool):
            raise TypeError("top_logprobs must be an int, got %r" % (top_logprobs,))
        out = []
        for p, rows in zip(ids, self._g.score(ids, top_logprobs)):
            out.append(Scores(list(p), [None] + [r[1] for r in rows], [None] + [r[2] for r in rows],
                              [None] + [[(int(a), float(b)) for a, b in r[3]] for r in rows]))
        return out

    def close(self) -> None:
        """Frees the plan's memory now (a closed generator cannot generate)."""
        self._g.close()

    def __enter__(self) -> "Generator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _request(self, prompts: Any, kwargs: Any) -> Tuple[List[List[int]], Any, List[List[int]]]:
        options = _config.gather(kwargs, self._g.generation_defaults)
        ids = [self._prompt_ids(p, n) for n, p in enumerate(_prompt_list(prompts))]
        masks = _config.masks_for(options, len(ids))
        native = _config.to_native(options, [len(p) for p in ids], self._g.is_encoder_decoder,
                                   self._g.decoder_start_token_id)
        # What genrun prints as "warning:" lines (the runtime's list, shared).
        for w in native.warnings():
            warnings.warn(w, UserWarning, stacklevel=3)
        return ids, native, masks

    def _prompt_ids(self, prompt: Prompt, n: int) -> List[int]:
        if isinstance(prompt, (str, bytes)):
            try:
                return list(self._g.encode(_utf8(prompt), True))
            except ValueError as e:
                raise ValueError("prompt %d: %s" % (n, e)) from None
        return list(prompt)


def _events(ids: List[List[int]], native_stream: Any) -> Iterator[StreamEvent]:
    try:
        for kind, prompt, seq, token, text, out_ids, score, raw in native_stream:
            result = Result(ids[prompt], _sequences(raw)) if kind == "done" else None
            yield StreamEvent(kind, prompt, seq, token, text, list(out_ids), score, result)
    finally:
        native_stream.close()  # a consumer that stops early stops the generation


def _prompt_list(prompts: Any) -> List[Prompt]:
    """One prompt (text, or ids) or a list of them."""
    if isinstance(prompts, (str, bytes)):
        return [prompts]
    prompts = list(prompts)
    if not prompts:
        raise ValueError("no prompts given")
    if all(isinstance(p, int) and not isinstance(p, bool) for p in prompts):
        return [prompts]
    for n, p in enumerate(prompts):
        if not isinstance(p, (str, bytes)) and not (
                isinstance(p, (list, tuple)) and all(isinstance(t, int) and not isinstance(t, bool) for t in p)):
            raise TypeError("prompt %d must be a str or a list of token ids, got %r" % (n, p))
    return prompts


def _utf8(text: Union[str, bytes]) -> bytes:
    """Text as the UTF-8 the runtime takes; text that is not is a ValueError."""
    if isinstance(text, bytes):
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError("the text is not valid UTF-8 (byte %d)" % e.start) from None
        return text
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("the text is not valid UTF-8 (a lone surrogate at character %d)" % e.start) from None
