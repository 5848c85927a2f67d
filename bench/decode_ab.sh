#!/usr/bin/env bash
# An A/B of genrun's decode on the GPU machine (after tools/pack.sh here), on
# bench/profile_model.sh's Llama (LAYERS, default 4; 22 is the 1.1B config):
# at each batch of AB_BATCHES (default "1 8 32"; B prompts of 128 random
# tokens, 64 new), every variant (VAR=VALUE, several in one argument with
# spaces; "" for none) in turn, the whole round twice, then whether the
# variants' tokens are identical (the first round's outputs compared).
#
#   LAYERS=22 bash bench/decode_ab.sh GENC_CUDA_MERGE_ROWS=0 "" GENC_CUDA_MERGE_ROWS=1
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/decode_ab.sh VARIANT..." >&2; exit 2; }
. bench/profile_model.sh
for B in ${AB_BATCHES:-1 8 32}; do
  python3 -c "
import json, random; random.seed(1)
for i in range($B): print(json.dumps({'input_ids': [random.randrange(3, 32000) for _ in range(128)]}))" > "$W/p$B.jsonl"
  line="batch $B:"
  for rep in 1 2; do
    i=0
    for v in "$@"; do
      # shellcheck disable=SC2086 # a variant is several words
      t=$(DECODE_OUT="$W/o$B-$i.jsonl" decode_ms "$W/p$B.jsonl" $v)
      line="$line [${v:-default}] $t"
      i=$((i + 1))
    done
  done
  same="tokens identical"
  for ((i = 1; i < $#; ++i)); do cmp -s "$W/o$B-0.jsonl" "$W/o$B-$i.jsonl" || same="TOKENS DIFFER (variant $((i + 1)))"; done
  echo "$line ($same)"
done
