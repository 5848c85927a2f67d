#!/usr/bin/env bash
# Runs on the GPU machine (torch + transformers there): exports models at real
# widths with random weights (tools/export.py), compiles them with the packed
# genc, compares genrun's greedy tokens (CPU) with Hugging Face generate(), and
# checks every generated kernel on the GPU (gpucheck). The fixtures are toys
# (d=64); this is the same path at Llama / GPT-2 sizes.
#
#   bash tools/pack.sh                          # here: dist/genc-linux-x86_64.tar.xz
#   bash tests/gpu/scale_check.sh [OUT_DIR]         # there
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-/tmp/scale_check}}
mkdir -p "$OUT"
. tools/packed.sh
W=$(mktemp -d)

# name | export arguments
models=(
  "llama-2048x4|--arch llama --set hidden_size=2048 --set intermediate_size=5632 --set num_hidden_layers=4 --set num_attention_heads=32 --set num_key_value_heads=8 --set head_dim=64 --set vocab_size=32000 --set max_position_embeddings=2048"
  "gpt2-768x4|--arch gpt2 --set n_embd=768 --set n_layer=4 --set n_head=12 --set vocab_size=50257 --set n_positions=1024"
)
for entry in "${models[@]}"; do
  name=${entry%%|*}
  exp=${entry#*|}
  echo "== $name"
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  python3 tools/export.py $exp --scale 2 --seed 3 --golden 16 --out "$W/$name" > "$W/$name.export.log" 2>&1 ||
    { cat "$W/$name.export.log"; exit 1; }
  grep "^export.py:" "$W/$name.export.log"
  t1=$(date +%s%N)
  "$BIN/genc" compile "$W/$name/model.onnx" -o "$W/$name.plan" --stats-json "$OUT/$name.stats.json"
  t2=$(date +%s%N)
  echo "$name: export $(( (t1 - t0) / 1000000 )) ms, genc compile $(( (t2 - t1) / 1000000 )) ms," \
    "plan $(stat -c %s "$W/$name.plan") bytes"
  cat "$OUT/$name.stats.json"; echo
  "$BIN/genc" inspect "$W/$name.plan" > "$W/$name.inspect"
  sed -n 1,6p "$W/$name.inspect"
  python3 tests/tools/check_generate.py "$BIN/genc" "$BIN/genrun" "$W/$name" model.onnx "$W/$name.gen" greedy
  "$BIN/gpucheck" "$W/$name.plan" | tail -2
  # The same kernels with f16 storage.
  "$BIN/genc" compile "$W/$name/model.onnx" --dtype f16 -o "$W/$name.f16.plan"
  "$BIN/gpucheck" "$W/$name.f16.plan" | tail -3
done
