#!/usr/bin/env bash
# Decode speed against the query heads per attend block (GENC_ATTN_GROUP at
# compile time), on the device machine (after tools/pack.sh here): the
# tools/profile_model.sh Llama (8 query heads per KV head) compiled once per
# group size, batch 1 and 8, a 128-token and a 1900-token prompt, 64 new
# tokens; genrun --stats' decode ms/token. Prints a table.
#
#   bash tools/attn_sweep.sh [GROUPS...]     # there, from the repo root
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/profile_model.sh
GROUPS_=${*:-8 4 2 1}
mk() { python3 -c "import json,random,sys; random.seed(1); n=int(sys.argv[1])
for _ in range(int(sys.argv[2])): print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(n)]}))" "$@"; }
mk 128 1 > "$W/p128.jsonl"; mk 1900 1 > "$W/p1900.jsonl"; mk 128 8 > "$W/p128x8.jsonl"; mk 1900 8 > "$W/p1900x8.jsonl"
printf '%-7s %-12s %-12s %-12s %-12s\n' group "b1 p128" "b1 p1900" "b8 p128" "b8 p1900"
for g in $GROUPS_; do
  GENC_ATTN_GROUP=$g "$BIN/genc" compile "$W/m/model.onnx" -o "$W/g$g.plan" --dtype f16 --max-batch 8 --max-beams 1 \
    --max-length 2048 > /dev/null 2>&1 || { echo "group $g: compile failed"; continue; }
  row=()
  for in in p128 p1900 p128x8 p1900x8; do
    row+=("$(timeout 60 "$BIN/genrun" "$W/g$g.plan" --device cuda --input "$W/$in.jsonl" --max-new-tokens 64 --stats \
      --output /dev/null 2>&1 | sed -n 's/.*decode \([0-9.]*\) ms\/token.*/\1/p')")
  done
  printf '%-7s %-12s %-12s %-12s %-12s\n' "$g" "${row[@]}"
done
