#!/usr/bin/env bash
# Decode ms/token of tools/profile_model.sh's Llama (LAYERS layers, default
# 22: the 1.1B) at batches 1-16, with the products of few rows on the GEMV
# kernels (GENC_CUDA_GEMV_ROWS=8) and on cuBLASLt (GENC_CUDA_GEMV=0) beside
# the default (GEMV for one row only): where the GEMV stops paying. On the
# device machine after tools/pack.sh here.
#
#   bash tools/gemv_rows.sh [LAYERS]      # there, from the repo root
set -u
cd "$(dirname "$0")/.."
LAYERS=${1:-22}
. tools/profile_model.sh
printf '%-6s %-14s %-14s %-14s\n' batch default "GEMV <= 8" cuBLASLt
for b in 1 2 4 8 16; do
  prompts "$W/p$b.jsonl" "$b" 128
  cells=()
  for v in "" "GENC_CUDA_GEMV_ROWS=8" "GENC_CUDA_GEMV=0"; do
    # shellcheck disable=SC2086 # a variant is several words
    cells+=("$(decode_ms "$W/p$b.jsonl" $v)")
  done
  printf '%-6s %-14s %-14s %-14s\n' "$b" "${cells[@]}"
done
