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
set -u
cd "$(dirname "$0")/.."
LAYERS=${1:-22}
shift
[ $# -gt 0 ] || set -- ""
. tools/profile_model.sh
REPS=${REPS:-3}
BATCH=${BATCH:-1}
python3 -c "import json,random,sys; random.seed(2)
for _ in range(int(sys.argv[1])): print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(int(sys.argv[2]))]}))" \
  "$BATCH" "${PROMPT:-128}" > "$W/pb.jsonl"
declare -A runs
for ((r = 0; r < REPS; r++)); do
  for ((i = 0; i < $#; i++)); do
    idx=$(((i + r) % $#))
    v=${*:idx+1:1}
    # shellcheck disable=SC2086
    t=$(env $v timeout 60 "$BIN/genrun" "$W/m.plan" --device cuda --input "$W/pb.jsonl" --max-new-tokens 64 \
      --stats --output /dev/null 2>&1 | sed -n 's/.*decode \([0-9.]*\) ms\/token.*/\1/p')
    runs[$idx]="${runs[$idx]-} ${t:-?}"
  done
done
printf 'layers %s, batch %s, prompt %s, decode ms/token, %s runs each\n' "$LAYERS" "$BATCH" "${PROMPT:-128}" "$REPS"
for ((i = 0; i < $#; i++)); do
  v=${*:i+1:1}
  printf '%-40s %s\n' "${v:-(default)}" "${runs[$i]}"
done
