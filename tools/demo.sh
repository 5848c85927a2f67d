#!/usr/bin/env bash
# The main job on the bundled model: compile it into a generation plan, then
# generate with genrun (CPU here; the CUDA executor is not built yet).
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
cat > "$OUT/prompts.jsonl" <<'JSON'
{"input_ids": [464, 257, 68, 11]}
{"input_ids": [40, 588]}
JSON
echo "== genrun greedy, 16 new tokens"
"$BUILD/tools/genrun" "$OUT/model.plan" --input "$OUT/prompts.jsonl" --device cpu \
  --max-new-tokens 16 --stats
echo "== genrun beam search: 4 beams, no_repeat_ngram_size 3, 2 returned"
"$BUILD/tools/genrun" "$OUT/model.plan" --input "$OUT/prompts.jsonl" --device cpu \
  --max-new-tokens 16 --num-beams 4 --no-repeat-ngram-size 3 --num-return-sequences 2
