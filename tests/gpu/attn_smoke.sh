#!/usr/bin/env bash
# One attention shape end to end on the GPU with every guard on, for when a
# kernel hangs or faults (after tools/pack.sh here): a 2-layer random Llama
# of the given export settings, its DTYPE plan, one short greedy run each
# way — plain, synchronous per step without graphs, without programmatic
# dependent launch, without the decode kernel — each under a timeout, then
# compute-sanitizer memcheck on the synchronous run. Prints what each said.
#
#   DTYPE=f16 bash tests/gpu/attn_smoke.sh [export --set arguments...]   # there
set -uo pipefail
cd "$(dirname "$0")/../.."
DTYPE=${DTYPE:-f16}
. tools/packed.sh
W=$(mktemp -d)
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(--set head_dim=64 --set num_attention_heads=8 --set num_key_value_heads=2 --set hidden_size=512)
python3 tools/export.py --arch llama "${sets[@]}" --set num_hidden_layers=2 --set intermediate_size=512 \
  --set vocab_size=512 --set max_position_embeddings=4200 --seed 5 --no-check --out "$W/m" > "$W/export.log" 2>&1 ||
  { tail -5 "$W/export.log"; exit 1; }
"$BIN/genc" compile "$W/m/model.onnx" -o "$W/m.plan" --dtype "$DTYPE" --max-batch 2 --max-beams 1 --max-length 1100 --quiet
python3 -c "import json; print(json.dumps({'input_ids': list(range(3, 10))})); print(json.dumps({'input_ids': [3 + i % 500 for i in range(1000)]}))" > "$W/p.jsonl"
for v in "" "GENC_CUDA_SYNC=1 GENC_CUDA_GRAPHS=0" "GENC_CUDA_DECODE=0"; do
  echo "== ${v:-plain}"
  env $v timeout 30 "$BIN/genrun" "$W/m.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 4 --stats 2>&1 | tail -4
  echo "rc=${PIPESTATUS[0]}"
done
echo "== memcheck (synchronous, no graphs)"
GENC_CUDA_SYNC=1 GENC_CUDA_GRAPHS=0 timeout 90 compute-sanitizer --tool memcheck "$BIN/genrun" "$W/m.plan" --device cuda \
  --input "$W/p.jsonl" --max-new-tokens 4 2>&1 | tail -25
