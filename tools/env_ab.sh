#!/usr/bin/env bash
# Decode ms/token of tools/profile_model.sh's Llama (LAYERS layers, default
# 22: the 1.1B; batch BATCH (1), prompt PROMPT tokens (128; a plan of
# MAXLEN positions, default 256), 64 new) under each environment variant
# given, REPS runs each, interleaved (variant order rotates per round, so
# clock drift falls on all alike): an A/B of an executor switch in one call.
# On the device machine after tools/pack.sh here.
#
#   bash tools/env_ab.sh [LAYERS] "" "GENC_CUDA_GEMV_FUSION=0" ...   # there
#   REPS=5 BATCH=4 bash tools/env_ab.sh 22 "" "GENC_CUDA_GEMV=0"
#   PROMPT=1000 MAXLEN=1088 bash tools/env_ab.sh 22 "" "GENC_CUDA_SPLITS=1"
#
# A variant's word genc=PATH runs a plan compiled by that genc instead (a
# build of a branch's codegen, carried as PATH or PATH.gz; compiled once):
#   bash tools/env_ab.sh 22 "" "genc=dist/genc.small.gz" "genc=dist/genc.small.gz GENC_CUDA_L2_PREFETCH_MB=16"
# and a word genc:VAR=VALUE a plan compiled with VAR set (a codegen switch):
#   bash tools/env_ab.sh 22 "" "genc:GENC_DECODE_REGISTERS=0"
set -u
cd "$(dirname "$0")/.."
LAYERS=${1:-22}
shift
[ $# -gt 0 ] || set -- ""
. tools/profile_model.sh
REPS=${REPS:-3}
BATCH=${BATCH:-1}
prompts "$W/pb.jsonl" "$BATCH" "${PROMPT:-128}"
declare -A runs
for ((r = 0; r < REPS; r++)); do
  for ((i = 0; i < $#; i++)); do
    idx=$(((i + r) % $#))
    v=${*:idx+1:1}
    # shellcheck disable=SC2086,SC2046 # a variant is several words
    t=$(PLAN=$(variant_plan $v) && decode_ms "$W/pb.jsonl" $(variant_env $v) || echo '?')
    runs[$idx]="${runs[$idx]-} $t"
  done
done
printf 'layers %s, batch %s, prompt %s, decode ms/token, %s runs each\n' "$LAYERS" "$BATCH" "${PROMPT:-128}" "$REPS"
for ((i = 0; i < $#; i++)); do
  v=${*:i+1:1}
  printf '%-40s %s\n' "${v:-(default)}" "${runs[$i]}"
done
