#!/usr/bin/env bash
# Where a decode step's time goes, per kernel, on the device machine (after
# tools/pack.sh here): a 4-layer Llama at real width (d 2048, 32 heads,
# 4 KV heads, FFN 5632, vocab 32000; random weights, f16), batch 1, prompt
# 128, 64 new tokens: the decode step with every step kind, then with
# each step kind left out in turn (GENC_CUDA_SKIP) to see its share.
#
#   bash tools/profile_gpu.sh [LAYERS]      # there, from the repo root
set -uo pipefail
cd "$(dirname "$0")/.."
LAYERS=${1:-4}
BIN=$(mktemp -d)
tar -xzf dist/genc-linux-x86_64.tar.gz -C "$BIN"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH-}
W=$(mktemp -d)

python3 tools/export.py --arch llama --set hidden_size=2048 --set intermediate_size=5632 \
  --set num_hidden_layers="$LAYERS" --set num_attention_heads=32 --set num_key_value_heads=4 --set head_dim=64 \
  --set vocab_size=32000 --set max_position_embeddings=2048 --seed 3 --no-check --out "$W/m" > "$W/export.log" 2>&1
"$BIN/genc" compile "$W/m/model.onnx" -o "$W/m.plan" --dtype f16 --max-batch 32 --max-beams 1 --max-length 256 \
  --stats-json "$W/stats.json" > /dev/null
echo "stats: $(cat "$W/stats.json")"
python3 -c "import json,random; random.seed(1); print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(128)]}))" > "$W/p.jsonl"
# Each kind's cost inside the replayed graph: the step without it (tokens
# garbage, timing real) against the whole step.
printf '%-34s %s\n' "decode step (graphs on)" "ms/token"
for v in "" "GENC_CUDA_GEMV=1" "GENC_CUDA_SKIP=gemm" "GENC_CUDA_SKIP=attention" "GENC_CUDA_SKIP=fused" \
         "GENC_CUDA_SKIP=gemm,attention,fused,copy"; do
  ms=$(env $v timeout 60 "$BIN/genrun" "$W/m.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 64 --stats \
    --output /dev/null 2>&1 | sed -n 's/.*decode \([0-9.]*\) ms\/token.*/\1/p')
  printf '%-34s %s\n' "${v:-all steps}" "$ms"
done
# Per kernel: Nsight Systems over the same run, graph nodes traced one by one
# (NSYS=0 leaves it out).
NSYS_BIN=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1 || true)
if [ "${NSYS-1}" = 1 ] && [ -n "$NSYS_BIN" ]; then
  "$NSYS_BIN" profile --cuda-graph-trace=node -t cuda -o "$W/prof" --force-overwrite true \
    "$BIN/genrun" "$W/m.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 64 --output /dev/null > "$W/nsys.log" 2>&1 ||
    tail -5 "$W/nsys.log"
  "$NSYS_BIN" stats --report cuda_gpu_kern_sum --format csv "$W/prof.nsys-rep" 2>/dev/null |
    python3 -c "
import csv, sys
rows = [r for r in csv.reader(l for l in sys.stdin if l.count(',') > 4)]
head, body = rows[0], rows[1:]
i = {k: head.index(k) for k in ('Time (%)', 'Instances', 'Avg (ns)', 'Med (ns)', 'Name')}
print(f\"{'kernel':58} {'calls':>6} {'avg us':>8} {'med us':>8} {'time %':>7}\")
for r in body[:${NSYS_TOP:-25}]:
    print(f\"{r[i['Name']][:58]:58} {r[i['Instances']]:>6} {float(r[i['Avg (ns)']])/1e3:8.2f} {float(r[i['Med (ns)']])/1e3:8.2f} {r[i['Time (%)']]:>7}\")
"
else
  echo "(no nsys here)"
fi
