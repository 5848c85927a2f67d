"""Chat templates, rendered exactly as transformers' tokenizer.apply_chat_template(
messages, add_generation_prompt=True, tokenize=False) renders them
(transformers 5.x, utils/chat_template_utils.py): jinja2's
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the
loopcontrols extension, transformers' `tojson` filter (no HTML escaping),
`raise_exception`, `strftime_now`, its restricted `dict` and `namespace`, the
messages normalized as it normalizes them (keys whose value is None
dropped, reasoning fields aliased), and the tokenizer's special tokens
(bos_token, eos_token, ...) passed as template variables.

The plan carries the template and the special tokens (genc compile packs
them from tokenizer_config.json or chat_template.jinja). The rendered text
is tokenized without adding special tokens, as apply_chat_template(tokenize=True)
does. tests: python/tests/test_chat_template.py compares every render with
transformers' own.
"""
from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional

# The names a message's reasoning travels under; the first is what templates read.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
_GENERATION_TAG = "generation"


class ChatTemplateError(ValueError):
    """The template refused the conversation (raise_exception) or failed to render."""


def _jinja():
    try:
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as e:  # pragma: no cover - setup.sh installs it
        raise ImportError("chat templates need jinja2 (pip install jinja2)") from e
    return jinja2, ImmutableSandboxedEnvironment


@lru_cache(maxsize=16)
def compile_template(source: str):
    """The template compiled in transformers' environment (cached by text)."""
    jinja2, Sandbox = _jinja()
    from jinja2 import nodes
    from jinja2.ext import Extension

    class GenerationBlock(Extension):
        # `{% generation %}...{% endgeneration %}` marks assistant text for
        # transformers' assistant masks; rendering keeps the body as it is.
        tags = {_GENERATION_TAG}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    "Chat templates cannot store underscore-prefixed attributes on a namespace, but got %r." % name)

    env = Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env.from_string(source)


def _plain(value: Any) -> Any:
    """Plain JSON data only, as transformers rebuilds what a template sees."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return "<%s>" % type(value).__name__


def _normalize(messages: List[Any]) -> List[Dict[str, Any]]:
    out = []
    for message in messages:
        if not isinstance(message, dict):
            raise TypeError("Chat messages should be dicts, but got %r." % (message,))
        message = _plain({k: v for k, v in message.items() if v is not None})
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def select_template(templates: Mapping[str, str], tools: Optional[list] = None) -> str:
    """transformers' get_chat_template: the one template, or by name
    ("tool_use" with tools, else "default"). ValueError when there is none."""
    if not templates:
        raise ValueError("the model has no chat template (tokenizer_config.json's chat_template); "
                         "use the completions endpoint with a prompt")
    if "" in templates and len(templates) == 1:
        return templates[""]
    if tools is not None and "tool_use" in templates:
        return templates["tool_use"]
    if "default" in templates:
        return templates["default"]
    raise ValueError("the model has several chat templates and none is named 'default': %s"
                     % ", ".join(sorted(templates)))


def render(template: str, messages: List[Any], special_tokens: Mapping[str, str], *,
           add_generation_prompt: bool = True, tools: Optional[list] = None,
           documents: Optional[list] = None, **kwargs: Any) -> str:
    """The prompt text apply_chat_template(messages, tokenize=False,
    add_generation_prompt=...) gives; ChatTemplateError when the template
    raises or fails."""
    jinja2, _ = _jinja()
    if not messages:
        raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
    variables = _plain({**dict(special_tokens), **kwargs})
    try:
        compiled = compile_template(template)
        return compiled.render(messages=_normalize(list(messages)), tools=_plain(tools), documents=_plain(documents),
                               add_generation_prompt=add_generation_prompt, **variables)
    except jinja2.exceptions.TemplateError as e:
        raise ChatTemplateError(str(e)) from None
