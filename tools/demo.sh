#!/usr/bin/env bash
# The main job on the bundled model: compile it, then run it on a prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
BUILD=${BUILD_DIR:-build}
MODEL=models/tiny-gpt2/model.onnx
OUT="$BUILD/demo"
mkdir -p "$OUT"
echo "== genc compile $MODEL"
"$BUILD/tools/genc" compile "$MODEL" --emit=ir -o "$OUT/model.gir"
echo "   $(grep -c ' = ' "$OUT/model.gir") ops after the pipeline; IR in $OUT/model.gir"
echo "== genc eval on prompt ids [464, 2068, 7586] (reference interpreter, CPU)"
python3 tools/npy_ids.py "$OUT" 464 2068 7586
"$BUILD/tools/genc" eval "$MODEL" --input input_ids="$OUT/input_ids.npy" \
  --input attention_mask="$OUT/attention_mask.npy" --output-dir "$OUT"
python3 - "$OUT/logits.npy" <<'PY'
import sys, numpy as np
logits = np.load(sys.argv[1])
print("   logits", logits.shape, "next-token argmax per position:", logits[0].argmax(-1).tolist())
PY
