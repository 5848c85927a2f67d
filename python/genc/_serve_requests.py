"""OpenAI request bodies onto genc's generation options, checked field by
field: a wrong type or value is an OpenAIError (HTTP 400, OpenAI's error
body) naming the field. The Hugging Face options travel under the names
vLLM accepts (top_k, min_p, repetition_penalty, min_tokens, ignore_eos,
no_repeat_ngram_size, use_beam_search, best_of, length_penalty,
early_stopping, stop_token_ids); what a request leaves out comes from the
plan's generation config, as genrun's defaults do.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from . import _config


class OpenAIError(Exception):
    """An error answered in OpenAI's shape: {"error": {message, type, param, code}}."""

    def __init__(self, status: int, message: str, param: Optional[str] = None,
                 type_: str = "invalid_request_error", code: Optional[str] = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.type, self.code = status, message, param, type_, code

    def body(self) -> Dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(message: str, param: Optional[str] = None) -> OpenAIError:
    return OpenAIError(400, message, param)


@dataclass
class Sampling:
    """One request's generation, resolved: what the engine gets per prompt."""
    hf: Dict[str, Any]              # HF generate() names (genc._config.gather's input)
    n: int = 1                      # choices returned per prompt
    rows: int = 1                   # sequences generated per prompt (best_of)
    beams: bool = False
    top_logprobs: int = -1          # -1: no logprobs
    stop: List[str] = field(default_factory=list)
    include_stop: bool = False
    presence: float = 0.0
    frequency: float = 0.0
    ignore_eos: bool = False
    max_tokens_given: bool = False
    stream: bool = False
    include_usage: bool = False
    prompt_only: bool = False       # max_tokens 0 with echo: the prompt (and its scores) alone


# Fields each endpoint accepts; anything else is a 400 naming it (a typo
# must not pass silently for a default).
COMMON = {"model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "seed",
          "presence_penalty", "frequency_penalty", "logit_bias", "user", "best_of", "use_beam_search", "top_k",
          "min_p", "repetition_penalty", "min_tokens", "ignore_eos", "no_repeat_ngram_size", "length_penalty",
          "early_stopping", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens",
          "spaces_between_special_tokens", "service_tier", "metadata", "store", "prompt_logprobs"}
COMPLETION = COMMON | {"prompt", "logprobs", "echo", "suffix", "return_token_ids"}
CHAT = COMMON | {"messages", "max_completion_tokens", "logprobs", "top_logprobs", "response_format", "tools",
                 "tool_choice", "parallel_tool_calls", "functions", "function_call", "add_generation_prompt",
                 "chat_template_kwargs", "reasoning_effort", "modalities", "prediction", "audio", "return_token_ids"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def get(body: Dict[str, Any], name: str, kind: str, default: Any = None) -> Any:
    """body[name] checked as `kind` (int, number, bool, str, list, dict);
    absent or null gives `default`."""
    v = body.get(name)
    if v is None:
        return default
    ok = {"int": _is_int, "number": _is_num, "bool": lambda x: isinstance(x, bool),
          "str": lambda x: isinstance(x, str), "list": lambda x: isinstance(x, list),
          "dict": lambda x: isinstance(x, dict)}[kind](v)
    if not ok:
        names = {"int": "an integer", "number": "a number", "bool": "a boolean", "str": "a string",
                 "list": "an array", "dict": "an object"}
        raise bad("'%s' must be %s, got %s" % (name, names[kind], _json_type(v)), name)
    return v


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "null"


def check_fields(body: Dict[str, Any], allowed: set) -> None:
    for k in body:
        if k not in allowed:
            raise bad("unknown field '%s'" % k, k)


def _ids(v: Any, name: str) -> List[int]:
    if not isinstance(v, list) or not all(_is_int(t) and t >= 0 for t in v):
        raise bad("'%s' must be an array of non-negative token ids" % name, name)
    return list(v)


MAX_STOP_STRINGS, MAX_STOP_CHARS = 16, 256


def sampling(body: Dict[str, Any], chat: bool, defaults: Optional[Dict[str, Any]] = None) -> Sampling:
    """The generation options of a completions or chat request; `defaults`:
    the plan's generation config (whether it samples when the request gives
    no temperature)."""
    hf: Dict[str, Any] = {}
    s = Sampling(hf)
    max_tokens = get(body, "max_tokens", "int")
    if chat:
        max_tokens = get(body, "max_completion_tokens", "int", max_tokens)
    if max_tokens is not None:
        # 0 with echo: the prompt scored, nothing generated (the old way to
        # score a text with OpenAI's completions); one token is generated
        # and dropped, so the prompt runs as any other.
        if max_tokens == 0 and not chat and body.get("echo") is True:
            s.prompt_only = True
            max_tokens = 1
        if max_tokens < 1:
            raise bad("'max_tokens' must be at least 1 (0 only with echo: the prompt alone), got %d" % max_tokens,
                      "max_tokens")
        hf["max_new_tokens"] = max_tokens
        s.max_tokens_given = True

    temperature = get(body, "temperature", "number")
    if temperature is not None:
        if not 0 <= temperature <= 2:
            raise bad("'temperature' must be in [0, 2], got %s" % temperature, "temperature")
        if temperature == 0:
            hf["do_sample"] = False
        else:
            hf["do_sample"] = True
            hf["temperature"] = float(temperature)
    top_p = get(body, "top_p", "number")
    if top_p is not None:
        if not 0 < top_p <= 1:
            raise bad("'top_p' must be in (0, 1], got %s" % top_p, "top_p")
        hf["top_p"] = float(top_p)
    top_k = get(body, "top_k", "int")
    if top_k is not None:
        if top_k < -1:
            raise bad("'top_k' must be -1 (off) or at least 0, got %d" % top_k, "top_k")
        hf["top_k"] = max(top_k, 0)
    for name, hfname in (("min_p", "min_p"), ("repetition_penalty", "repetition_penalty"),
                         ("length_penalty", "length_penalty")):
        v = get(body, name, "number")
        if v is not None:
            hf[hfname] = float(v)
    for name, hfname in (("min_tokens", "min_new_tokens"), ("no_repeat_ngram_size", "no_repeat_ngram_size")):
        v = get(body, name, "int")
        if v is not None:
            hf[hfname] = v
    early = body.get("early_stopping")
    if early is not None:
        if not (isinstance(early, bool) or early == "never"):
            raise bad("'early_stopping' must be true, false or \"never\"", "early_stopping")
        hf["early_stopping"] = early
    seed = get(body, "seed", "int")
    hf["seed"] = seed if seed is not None and seed >= 0 else secrets.randbits(63)
    if seed is not None and seed < 0:
        raise bad("'seed' must not be negative, got %d" % seed, "seed")

    s.n = get(body, "n", "int", 1)
    if s.n < 1:
        raise bad("'n' must be at least 1, got %d" % s.n, "n")
    best_of = get(body, "best_of", "int")
    s.beams = get(body, "use_beam_search", "bool", False)
    if best_of is not None and best_of < s.n:
        raise bad("'best_of' (%d) must be at least 'n' (%d)" % (best_of, s.n), "best_of")
    s.rows = best_of if best_of is not None else s.n
    samples = hf.get("do_sample", bool((defaults or {}).get("do_sample", False)))
    if s.beams:
        if hf.get("do_sample"):  # asked for by a temperature
            raise bad("use_beam_search takes temperature 0 (or none)", "temperature")
        hf["num_beams"] = s.rows
        hf["num_return_sequences"] = s.n
        hf["do_sample"] = False  # a plan that samples by default still searches beams
        if s.rows < 2:
            raise bad("beam search needs 'best_of' or 'n' of at least 2", "best_of")
    elif s.rows > 1:
        if not samples:
            raise bad("'n' or 'best_of' above 1 needs sampling (a temperature above 0) or use_beam_search",
                      "n" if best_of is None else "best_of")
        hf["num_return_sequences"] = s.rows

    stop = body.get("stop")
    if stop is not None:
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(x, str) and x for x in stops):
            raise bad("'stop' must be a non-empty string or an array of them", "stop")
        # Each stop string is checked against the vocabulary and looked for
        # at every token: bounded, as a request's other work is.
        if len(stops) > MAX_STOP_STRINGS or any(len(x) > MAX_STOP_CHARS for x in stops):
            raise bad("'stop' takes at most %d strings of at most %d characters" % (MAX_STOP_STRINGS, MAX_STOP_CHARS),
                      "stop")
        s.stop = list(stops)
        if s.stop:
            hf["stop_strings"] = s.stop
    s.include_stop = get(body, "include_stop_str_in_output", "bool", False)
    if not get(body, "skip_special_tokens", "bool", True):
        raise bad("skip_special_tokens false is not supported (the text skips special tokens)",
                  "skip_special_tokens")
    stop_ids = body.get("stop_token_ids")
    s.ignore_eos = get(body, "ignore_eos", "bool", False)
    if stop_ids is not None:
        hf["eos_token_id"] = _ids(stop_ids, "stop_token_ids")
    for name in ("presence_penalty", "frequency_penalty"):
        v = get(body, name, "number", 0.0)
        if not -2 <= v <= 2:
            raise bad("'%s' must be in [-2, 2], got %s" % (name, v), name)
        setattr(s, name.split("_")[0], float(v))
    bias = get(body, "logit_bias", "dict")
    if bias:
        pairs = []
        for k, v in bias.items():
            if not (isinstance(k, str) and k.isdigit()) or not _is_num(v) or not -100 <= v <= 100:
                raise bad("'logit_bias' maps token ids (strings of digits) to numbers in [-100, 100]", "logit_bias")
            pairs.append([[int(k)], float(v)])
        hf["sequence_bias"] = pairs

    s.stream = get(body, "stream", "bool", False)
    opts = get(body, "stream_options", "dict")
    if opts is not None:
        if not s.stream:
            raise bad("'stream_options' is only allowed with stream true", "stream_options")
        s.include_usage = bool(get(opts, "include_usage", "bool", False))
    if s.stream and s.rows > s.n:
        raise bad("'best_of' above 'n' cannot stream", "best_of")
    get(body, "user", "str")
    return s


def default_new_tokens(defaults: Dict[str, Any], prompt_len: int, room: int) -> int:
    """A request without max_tokens: the plan's generation config's limit
    (max_new_tokens, or max_length less the prompt), never past the room the
    plan leaves after the prompt; with neither, that room (as vLLM does). A
    model's max_length of 2048 in a plan compiled for 1024 positions, or a
    max_length the prompt already fills, gives the room, not a 400."""
    want = room
    if defaults.get("max_new_tokens") is not None:
        want = int(defaults["max_new_tokens"])
    elif defaults.get("max_length") is not None and int(defaults["max_length"]) - prompt_len >= 1:
        want = int(defaults["max_length"]) - prompt_len
    return max(1, min(want, room))


def native_config(s: Sampling, engine: Any, prompt_len: int, room: int) -> Any:
    """The runtime's config for one prompt: the plan's generation config
    under the request's options (default_new_tokens without max_tokens)."""
    hf = dict(s.hf)
    if "max_new_tokens" not in hf:
        if engine.is_encoder_decoder:  # the decoder's positions: its start token, then the new ones
            prompt_len, room = 1, engine.max_length - 1
        hf["max_new_tokens"] = default_new_tokens(engine.generation_defaults or {}, prompt_len, room)
    try:
        options = _config.gather(hf, engine.generation_defaults)
        cfg = _config.to_native(options, [prompt_len], engine.is_encoder_decoder, engine.decoder_start_token_id)
    except (TypeError, ValueError) as e:
        raise bad(str(e)) from None
    cfg.presence_penalty = s.presence
    cfg.frequency_penalty = s.frequency
    if s.ignore_eos:
        cfg.ignore_model_eos = True
    return cfg
