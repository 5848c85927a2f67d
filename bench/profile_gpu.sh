#!/usr/bin/env bash
# Where a decode step's time goes, by step kind, on the GPU machine (after
# tools/pack.sh here), on bench/profile_model.sh's Llama: prompt 128, 64 new
# tokens, at each batch of BATCHES (default "1"; B prompts of 128 random
# tokens): the decode step with every step kind, then with each step kind
# left out in turn (GENC_CUDA_SKIP) to see its share, and with the GEMM
# choice switched (GENC_CUDA_GEMV). Per kernel: bench/ncu_step.sh.
#
#   bash bench/profile_gpu.sh [LAYERS] [BATCHES]   # there, from the repo root
#   bash bench/profile_gpu.sh 22 "1 8 32"          # the 1.1B config at three batches
set -uo pipefail
cd "$(dirname "$0")/.."
LAYERS=${1:-4}
BATCHES=${2:-1}
. bench/profile_model.sh
echo "stats: $(cat "$W/stats.json")"
for B in $BATCHES; do
  python3 -c "
import json, random; random.seed(1)
for i in range($B): print(json.dumps({'input_ids': [random.randrange(3, 32000) for _ in range(128)]}))" > "$W/p$B.jsonl"
  # Each kind's cost inside the replayed graph: the step without it (tokens
  # garbage, timing real) against the whole step. The GEMM choice too: the
  # GEMV kernels off (GENC_CUDA_GEMV=0; on by default on sm_90 for one-row
  # products).
  printf '%-34s %s\n' "batch $B, decode step (graphs on)" "ms/token"
  for v in "" "GENC_CUDA_GEMV=0" "GENC_CUDA_SKIP=gemm" \
           "GENC_CUDA_SKIP=attention" "GENC_CUDA_SKIP=fused" "GENC_CUDA_SKIP=attention,fused,copy" \
           "GENC_CUDA_GEMV=0 GENC_CUDA_SKIP=attention,fused,copy" "GENC_CUDA_SKIP=gemm,attention,fused,copy"; do
    # shellcheck disable=SC2086 # a variant is several words
    ms=$(decode_ms "$W/p$B.jsonl" $v)
    printf '%-34s %s\n' "${v:-all steps}" "$ms"
  done
done
