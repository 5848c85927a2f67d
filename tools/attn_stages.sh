#!/usr/bin/env bash
# The attention chain stage by stage, per variant, on the device machine
# (after tools/pack.sh here): tools/profile_model.sh's Llama (LAYERS layers,
# default 22) compiled with GENC_ATTN_TRACE=1, so its decode and merge kernels
# stamp their stages (block (0, 0), the last layer, the 8th step; docs/cuda.md),
# and each variant's 8th step replayed REPLAYS times back to back (the step's
# ms without the host's turn). A variant is env_ab.sh's: VAR=VALUE words, and
# genc=PATH for a plan another genc compiled (a branch's codegen). Where the
# decode kernel's time is instruction fetch, GENC_CUDA_DECODE_WARMUP=1 shows it:
# the stamped launch then finds its code already fetched.
#
#   bash tools/attn_stages.sh 22 "" "GENC_CUDA_DECODE_WARMUP=1" "genc=dist/genc.small.gz" > "$OUT/stages.log" 2>&1
set -u
cd "$(dirname "$0")/.."
LAYERS=${1:-22}
shift
[ $# -gt 0 ] || set -- ""
export GENC_ATTN_TRACE=1 # every plan below, the variants' genc included
. tools/profile_model.sh
for v in "$@"; do
  # shellcheck disable=SC2086 # a variant is several words
  plan=$(variant_plan $v) || { echo "== ${v:-(default)}: genc FAILED"; continue; }
  # shellcheck disable=SC2046,SC2086
  out=$(env $(variant_env $v) GENC_CUDA_ATTN_TRACE=1 GENC_CUDA_REPLAY_TIMING="${REPLAYS:-20}" timeout 120 \
    "$BIN/genrun" "$plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 12 --output /dev/null 2>&1)
  echo "== ${v:-(default)}: $(echo "$out" | grep -o '[0-9.]* ms each' || echo 'no replay')"
  echo "$out" | grep "attention trace" | sed 's/^genrun: attention trace //' || echo "$out" | tail -3
done
