#!/usr/bin/env bash
# Decode ms/token of tools/profile_model.sh's Llama (LAYERS layers, default
# 22: the 1.1B; batch BATCH (1), prompt PROMPT tokens (128; a plan of
# MAXLEN positions, default 256), 64 new) under each environment variant
# given, REPS runs each, interleaved (variant order rotates per round, so
# clock drift falls on all alike): an A/B of an executor switch in one call.
# Each variant after the first also says whether its tokens are the first's.
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
    t=$(PLAN=$(variant_plan $v) && DECODE_OUT=$([ "$r" = 0 ] && echo "$W/out.$idx.jsonl" || echo /dev/null) \
      decode_ms "$W/pb.jsonl" $(variant_env $v) || echo '?')
    runs[$idx]="${runs[$idx]-} $t"
  done
done
printf 'layers %s, batch %s, prompt %s, decode ms/token, %s runs each\n' "$LAYERS" "$BATCH" "${PROMPT:-128}" "$REPS"
# Each variant's tokens (its first run's) against the first variant's: a
# switch that only moves work must not move a token.
tokens() {
  python3 -c 'import json, sys
ids = lambda f: [s["output_ids"] for l in open(f) if l.strip() for s in json.loads(l)["sequences"]]
try:
    print("tokens same" if ids(sys.argv[1]) == ids(sys.argv[2]) else "tokens DIFFER")
except (OSError, ValueError, KeyError):
    print("tokens ?")' "$W/out.0.jsonl" "$W/out.$1.jsonl"
}
for ((i = 0; i < $#; i++)); do
  v=${*:i+1:1}
  printf '%-40s %s%s\n' "${v:-(default)}" "${runs[$i]}" "$([ "$i" -gt 0 ] && echo "   $(tokens "$i")")"
done
