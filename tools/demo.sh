#!/usr/bin/env bash
# The main job on the bundled model: compile it into a generation plan (its
# tokenizer.json travels inside), then generate from text with genrun (on the
# GPU when one is visible, else the CPU), streamed with genrun --stream, and
# through the Python package genc that tools/build.sh installs. The model's weights are random: the text it
# writes is gibberish made of real tokens.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
BUILD=${BUILD_DIR:-build}
MODEL=models/tiny-gpt2/model.onnx
OUT="$BUILD/demo"
mkdir -p "$OUT"
echo "== genc compile $MODEL -o $OUT/model.plan"
"$BUILD/tools/genc" compile "$MODEL" -o "$OUT/model.plan" --max-batch 4 --max-beams 4 \
  --max-length 64 --stats-json "$OUT/stats.json"
echo "   $(cat "$OUT/stats.json")"
echo "== genrun greedy, 16 new tokens, from text"
echo '   prompts: "The licensor grants you a copyright license", "Permission is hereby granted"'
"$BUILD/tools/genrun" "$OUT/model.plan" --max-new-tokens 16 --stats \
  --prompt "The licensor grants you a copyright license" --prompt "Permission is hereby granted"
cat > "$OUT/prompts.jsonl" <<'JSON'
{"text": "This program is free software; you can redistribute it"}
{"input_ids": [604, 314, 896, 264, 668, 85]}
JSON
echo "== genrun beam search: 4 beams, no_repeat_ngram_size 3, 2 returned (JSON lines: text or ids)"
sed 's/^/   /' "$OUT/prompts.jsonl"
"$BUILD/tools/genrun" "$OUT/model.plan" --input "$OUT/prompts.jsonl" \
  --max-new-tokens 16 --num-beams 4 --no-repeat-ngram-size 3 --num-return-sequences 2
echo "== genrun --stream: a JSON line per token as it is final, then the prompt's result"
"$BUILD/tools/genrun" "$OUT/model.plan" --max-new-tokens 6 --stream \
  --prompt "Permission is hereby granted"
# The Python package genc (tools/build.sh installed it for python3): the same
# plan, text in and text out, whole and streamed.
PY=${PYTHON:-python3}
echo "== python3: genc.Generator(plan).generate(text) and .stream(text)"
"$PY" - "$OUT/model.plan" <<'PYTHON'
import sys
import genc

g = genc.Generator(sys.argv[1], device="auto")
for r in g.generate(["The licensor grants you a copyright license", "Permission is hereby granted"],
                    max_new_tokens=16):
    print("   generate:", repr(r.text))
print("   stream:   ", end="")
for event in g.stream("Permission is hereby granted", max_new_tokens=16, do_sample=True, seed=1):
    if event.kind == "token":
        print(event.text, end="", flush=True)
print()
PYTHON
