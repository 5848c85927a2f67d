#!/usr/bin/env bash
# Runs on the GPU machine (torch + transformers there): one tiny random model of
# each architecture below (tools/export.py --tiny), compiled by the packed
# genc and run by genrun (CPU) against Hugging Face greedy generate(). Prints a
# table: which architectures genc takes today, and where the others stop.
#
#   bash tools/pack.sh --no-nvrtc               # here
#   bash tests/gpu/zoo_check.sh [ARCH...]           # there (LD_LIBRARY_PATH=/usr/local/cuda/lib64)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/packed.sh
W=$(mktemp -d)
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(gpt2 llama mistral qwen2 qwen3 phi3 phi gpt_neox gptj opt falcon
  stablelm gemma gemma2 olmo2 granite mixtral bloom)
printf '%-10s %-8s %-8s %-10s %s\n' arch export compile greedy "decode launches / first error"
for a in "${archs[@]}"; do
  d=$W/$a
  if ! python3 tools/export.py --arch "$a" --tiny --scale 4 --seed 5 --golden 12 --out "$d" > "$d.export.log" 2>&1; then
    printf '%-10s %-8s %-8s %-10s %s\n' "$a" FAIL - - "$(grep -iE "error" "$d.export.log" | tail -1 | cut -c1-150)"
    [ -n "${VERBOSE-}" ] && grep -E "Error|error:" "$d.export.log" | tail -4 | cut -c1-400
    continue
  fi
  if ! "$BIN/genc" compile "$d/model.onnx" -o "$d.plan" --stats-json "$d.stats" > "$d.compile.log" 2>&1; then
    printf '%-10s %-8s %-8s %-10s %s\n' "$a" ok FAIL - "$(head -c 180 "$d.compile.log" | tr '\n' ' ')"
    continue
  fi
  launches=$(grep -o '"decode_step_launches": {[^}]*}' "$d.stats" | sed 's/"decode_step_launches": //')
  if python3 tests/tools/check_generate.py "$BIN/genc" "$BIN/genrun" "$d" model.onnx "$d.gen" greedy > "$d.gen.log" 2>&1; then
    printf '%-10s %-8s %-8s %-10s %s\n' "$a" ok ok ok "$launches"
  else
    printf '%-10s %-8s %-8s %-10s %s\n' "$a" ok ok FAIL "$(grep -m1 -E 'error|differ' "$d.gen.log" | cut -c1-150)"
    [ -n "${VERBOSE-}" ] && tail -6 "$d.gen.log" | cut -c1-300
  fi
done
