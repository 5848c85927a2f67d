"""Hugging Face `generate()` / `GenerationConfig` names onto genc's options.

Every name genc implements keeps HF's meaning and default. HF names genc
does not implement are accepted only at HF's default value (so a
`GenerationConfig` saved by a model passes), and refused otherwise: genc
never silently generates something other than what HF would. Names HF does
not know raise TypeError listing the valid ones, as a Python call would.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from . import _genc

# name -> kind; checked here so that a wrong type fails with HF's name.
SUPPORTED = {
    "max_new_tokens": "int",
    "min_new_tokens": "int",
    "max_length": "int",  # HF: prompt + new tokens; genc turns it into max_new_tokens
    "min_length": "int",  # HF's MinLengthLogitsProcessor: counts each row's prompt
    "num_beams": "int",
    "length_penalty": "float",
    "early_stopping": "early_stopping",
    "num_return_sequences": "int",
    "no_repeat_ngram_size": "int",
    "repetition_penalty": "float",
    "encoder_no_repeat_ngram_size": "int",  # over the source (a decoder-only model's prompt)
    "encoder_repetition_penalty": "float",
    "stop_strings": "strings",  # read with the plan's tokenizer
    "do_sample": "bool",
    "temperature": "float",
    "top_k": "optional_int",
    "top_p": "optional_float",
    "min_p": "optional_float",
    "eos_token_id": "ids",
    "forced_bos_token_id": "optional_int",
    "forced_eos_token_id": "ids",
    "suppress_tokens": "ids",
    "begin_suppress_tokens": "ids",
    "exponential_decay_length_penalty": "decay",
    "bad_words_ids": "sequences",
    "sequence_bias": "sequence_bias",
    "renormalize_logits": "bool",
    "typical_p": "optional_float",
    "epsilon_cutoff": "optional_float",
    "eta_cutoff": "optional_float",
    # The modes Hugging Face 5.x moved to Hub repos: refused with its message
    # (the runtime's GenerationConfig::hubMode), plain values accepted.
    "num_beam_groups": "int",
    "diversity_penalty": "float",
    "penalty_alpha": "optional_float",
    "force_words_ids": "any",
    "constraints": "any",
    "dola_layers": "any",
    "attention_mask": "masks",  # per prompt, for prompts given as ids (HF's left padding)
    "seed": "int",  # genc's: HF draws from torch's global generator instead
    "batch_size": "int",  # genc's: prompts per batch (default: what the plan allows)
}

# HF names that change nothing in genc (it never pads its output, and is
# given prompts with their special tokens already).
NO_EFFECT = {"pad_token_id", "bos_token_id", "use_cache", "return_dict_in_generate", "output_scores",
             "output_logits", "output_attentions", "output_hidden_states", "streamer", "synced_gpus",
             "cache_implementation", "cache_config", "return_legacy_cache", "compile_config",
             "disable_compile", "use_model_defaults", "transformers_version", "_from_model_config",
             "generation_kwargs", "is_assistant", "num_assistant_tokens", "num_assistant_tokens_schedule",
             "assistant_confidence_threshold", "prompt_lookup_num_tokens", "max_matching_ngram_size",
             "assistant_early_exit", "assistant_lookbehind", "target_lookbehind", "prefill_chunk_size",
             "trust_remote_code", "custom_generate", "cache_dir", "logits_processor", "stopping_criteria"}

# HF names genc does not implement, with the value that means "off" (HF's default).
UNSUPPORTED_DEFAULTS: Dict[str, Any] = {
    "remove_invalid_values": False, "forced_decoder_ids": None,
    "token_healing": False, "guidance_scale": None, "low_memory": None,
    "watermarking_config": None, "max_time": None, "prefix_allowed_tokens_fn": None,
    "assistant_model": None, "negative_prompt_ids": None, "negative_prompt_attention_mask": None,
    "decoder_start_token_id": None,  # checked against the plan's below
}


def valid_names() -> List[str]:
    return sorted(SUPPORTED)


def _check_type(name: str, kind: str, value: Any) -> Any:
    def bad(expected: str) -> TypeError:
        return TypeError("%s must be %s, got %r" % (name, expected, value))

    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == "int":
        if not is_int:
            raise bad("an int")
    elif kind == "optional_int":
        if value is not None and not is_int:
            raise bad("an int or None")
    elif kind in ("float", "optional_float"):
        if value is None and kind == "optional_float":
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        value = float(value)
    elif kind == "bool":
        if not isinstance(value, bool):
            raise bad("True or False")
    elif kind == "early_stopping":
        if not (isinstance(value, bool) or value == "never"):
            raise bad('True, False or "never"')
    elif kind == "ids":
        if is_int:
            value = [value]
        if value is not None and not (isinstance(value, (list, tuple)) and
                                      all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise bad("an int, a list of ints or None")
    elif kind == "sequences":
        def is_ids(s):
            return isinstance(s, (list, tuple)) and len(s) > 0 and \
                all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in s)
        if value is not None and not (isinstance(value, (list, tuple)) and all(is_ids(s) for s in value)):
            raise bad("a list of token id lists or None")
    elif kind == "sequence_bias":
        if isinstance(value, dict):  # HF's dict form {(ids...): bias}
            value = [[list(k), v] for k, v in value.items()]
        ok = value is None or (isinstance(value, (list, tuple)) and all(
            isinstance(e, (list, tuple)) and len(e) == 2 and isinstance(e[0], (list, tuple)) and len(e[0]) > 0 and
            all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in e[0]) and
            isinstance(e[1], (int, float)) and not isinstance(e[1], bool) for e in value))
        if not ok:
            raise bad("a list of [token ids, bias] pairs, a dict of them or None")
    elif kind == "strings":
        if isinstance(value, str):
            value = [value]
        if value is not None and not (isinstance(value, (list, tuple)) and
                                      all(isinstance(s, str) and s for s in value)):
            raise bad("a string, a list of non-empty strings or None")
    elif kind == "any":
        return value
    elif kind == "decay":
        ok = value is None or (isinstance(value, (list, tuple)) and len(value) == 2 and
                               isinstance(value[0], int) and not isinstance(value[0], bool) and
                               isinstance(value[1], (int, float)) and not isinstance(value[1], bool))
        if not ok:
            raise bad("a pair (start index, decay factor) or None")
    return value


def from_generation_config(config: Any) -> Dict[str, Any]:
    """The non-default fields of a transformers.GenerationConfig (or any
    object with to_diff_dict() / to_dict())."""
    for method in ("to_diff_dict", "to_dict"):
        if hasattr(config, method):
            return dict(getattr(config, method)())
    raise TypeError("generation_config must be a transformers.GenerationConfig, got %s" % type(config).__name__)


def gather(kwargs: Dict[str, Any], defaults: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """generate()'s keyword arguments, a generation_config among them,
    checked by name and type: the options genc acts on. `defaults`: the
    model's generation config as the plan records it, under both (as HF
    generate() starts from the model's)."""
    kwargs = dict(kwargs)
    merged: Dict[str, Any] = dict(defaults or {})
    config = kwargs.pop("generation_config", None)
    user = dict(from_generation_config(config)) if config is not None else {}
    user.update(kwargs)  # explicit kwargs override the config, as in HF
    if "max_length" in user and "max_new_tokens" not in user:
        merged.pop("max_new_tokens", None)  # the user's max_length beats the model's max_new_tokens
    merged.update(user)
    out: Dict[str, Any] = {}
    for name, value in merged.items():
        if name in SUPPORTED:
            out[name] = _check_type(name, SUPPORTED[name], value)
        elif name in NO_EFFECT:
            continue
        elif name in UNSUPPORTED_DEFAULTS:
            if name == "decoder_start_token_id" and value is not None:
                out[name] = value
            elif value != UNSUPPORTED_DEFAULTS[name] and value not in (None, [], {}):
                raise ValueError("genc does not support %s (given %r); it supports: %s"
                                 % (name, value, ", ".join(valid_names())))
        else:
            raise TypeError("generate() got an unexpected keyword argument %r; valid names: %s"
                            % (name, ", ".join(valid_names())))
    return out


def _prompt_length_limit(name: str, total: int, longest: int) -> int:
    new = total - longest
    if new < 1 and name == "max_length":
        raise ValueError("max_length %d leaves no room for new tokens after the longest prompt (%d tokens); "
                         "use max_new_tokens" % (total, longest))
    return max(new, 0)


def to_native(options: Dict[str, Any], prompt_lengths: Sequence[int], encoder_decoder: bool,
              decoder_start: int) -> "_genc._Config":
    """The runtime's config: HF's defaults, then `options` (from gather).
    max_length counts the prompt as HF does: the longest one (HF pads a batch
    to it), or the decoder start token for encoder-decoders. The processors'
    lengths (min_length, forced_eos_token_id at the maximum length, ...)
    count each row's own prompt: HF's, for prompts of one length."""
    cfg = _genc._Config()
    longest = 1 if encoder_decoder else max(prompt_lengths, default=0)
    for total, new in (("max_length", "max_new_tokens"),):
        if total in options and new not in options:
            options = dict(options, **{new: _prompt_length_limit(total, options[total], longest)})
    start = options.get("decoder_start_token_id")
    if start is not None and start != decoder_start:
        raise ValueError("decoder_start_token_id %d differs from the plan's %d (genc compiles it in)"
                         % (start, decoder_start))
    for name, value in options.items():
        if name in ("max_length", "attention_mask", "decoder_start_token_id"):
            continue
        if name == "early_stopping":
            value = "never" if value == "never" else ("true" if value else "false")
        elif name in ("top_k", "top_p", "min_p") and value is None:
            value = {"top_k": 0, "top_p": 1.0, "min_p": 0.0}[name]  # HF's None: the warper is off
        elif name in ("eos_token_id", "forced_eos_token_id", "suppress_tokens", "begin_suppress_tokens",
                      "bad_words_ids", "sequence_bias", "stop_strings") and value is None:
            value = []  # off (eos: the plan's)
        elif name == "sequence_bias":
            value = [(list(ids), float(b)) for ids, b in value]
        elif name in ("typical_p",) and value is None:
            value = 1.0
        elif name in ("epsilon_cutoff", "eta_cutoff") and value is None:
            value = 0.0
        elif name == "forced_bos_token_id" and value is None:
            value = -1
        elif name == "penalty_alpha" and value is None:
            value = 0.0
        elif name in ("force_words_ids", "constraints"):
            cfg.force_words = cfg.force_words or value is not None
            continue
        elif name == "dola_layers":
            value = value is not None
        elif name == "exponential_decay_length_penalty":
            if value is None:
                continue
            if value[0] < 0:
                raise ValueError("exponential_decay_length_penalty: the start index must not be negative, got %d"
                                 % value[0])
            value = (int(value[0]), float(value[1]))
        elif name == "seed" and value < 0:
            raise ValueError("seed must not be negative, got %d" % value)
        setattr(cfg, name, value)
    return cfg


def masks_for(options: Dict[str, Any], count: int) -> List[List[int]]:
    masks: Optional[Sequence[Sequence[int]]] = options.get("attention_mask")
    if masks is None:
        return []
    if len(masks) != count:
        raise ValueError("attention_mask has %d rows for %d prompts" % (len(masks), count))
    return [list(m) for m in masks]
