"""genc's chat templates against transformers' own apply_chat_template: the
template and the special tokens packed into the plan by genc compile, read
back through the package, rendered by genc._chat, must give exactly the
text (and so the ids) transformers gives, for several real template styles
and conversations."""
import json
import os

import pytest

import genc
from genc import _chat
from conftest import TINY
from serve_util import CHAT_TEMPLATE, model_with_template

transformers = pytest.importorskip("transformers")

TEMPLATES = {
    "chatml": CHAT_TEMPLATE,
    # Llama-2's: system folded into the first user turn, raise_exception on roles.
    "llama2": (
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
        "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
        "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
        "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        "{% if loop.index0 == 0 and system_message != false %}"
        "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
        "{% else %}{% set content = message['content'] %}{% endif %}"
        "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
        "{% endfor %}"),
    # Zephyr-like, with loop controls, namespace, tojson and whitespace control.
    "zephyr": (
        "{% set ns = namespace(n=0) %}{% for message in messages %}{% if message.role == 'tool' %}{% continue %}"
        "{% endif %}{% set ns.n = ns.n + 1 %}\n"
        "    <|{{ message['role'] }}|>\n{{ message['content'] }}{{ eos_token }}\n"
        "{%- if message.get('meta') %} {{ message.meta | tojson }}{% endif %}\n"
        "{% endfor %}{% if add_generation_prompt %}<|assistant|>{{ ns.n }}\n{% endif %}"),
}

CONVERSATIONS = [
    [{"role": "user", "content": "Hello, wörld! <b>&</b>"}],
    [{"role": "system", "content": "  Be brief.  "}, {"role": "user", "content": "Who may copy it?"},
     {"role": "assistant", "content": "Anyone."}, {"role": "user", "content": "Really?\n\nYes."}],
    [{"role": "user", "content": "a", "meta": {"k": ["ü", 1, None]}}, {"role": "tool", "content": "x"},
     {"role": "assistant", "content": "b", "tool_calls": None}],
]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_renders_as_transformers(workdir, name):
    src = model_with_template(TINY, os.path.join(workdir, "tpl-" + name), TEMPLATES[name])
    plan = genc.compile(src, os.path.join(workdir, "tpl-%s.plan" % name), max_batch=1, max_beams=1, max_length=32,
                        progress=False)
    g = genc.Generator(plan, device="cpu")
    try:
        assert g.chat_template == TEMPLATES[name]  # packed and read back as it was
        tok = transformers.AutoTokenizer.from_pretrained(src)
        rendered = 0
        for conv in CONVERSATIONS:
            try:
                want = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)
            except Exception as e:  # the template refuses it: so must genc, with its message
                with pytest.raises(_chat.ChatTemplateError) as got:
                    g.apply_chat_template(conv)
                assert str(e) in str(got.value)
                continue
            assert g.apply_chat_template(conv) == want
            ids = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=True, return_dict=False)
            assert g.encode(want, add_special_tokens=False) == list(ids)
            rendered += 1
        assert rendered >= 2
    finally:
        g.close()


def test_named_templates_and_none(workdir, ids_plan):
    src = os.path.join(workdir, "tpl-named")
    model_with_template(TINY, src, TEMPLATES["chatml"])
    path = os.path.join(src, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["chat_template"] = [{"name": "default", "template": TEMPLATES["chatml"]},
                            {"name": "tool_use", "template": TEMPLATES["zephyr"]}]
    with open(path, "w") as f:
        json.dump(cfg, f)
    plan = genc.compile(src, os.path.join(workdir, "tpl-named.plan"), max_batch=1, max_beams=1, max_length=32,
                        progress=False)
    with genc.Generator(plan, device="cpu") as g:
        assert g.chat_templates == {"default": TEMPLATES["chatml"], "tool_use": TEMPLATES["zephyr"]}
        assert g.chat_template == TEMPLATES["chatml"]
    with genc.Generator(ids_plan, device="cpu") as g:
        assert g.chat_templates == {}
        with pytest.raises(ValueError, match="no chat template"):
            g.apply_chat_template([{"role": "user", "content": "x"}])
