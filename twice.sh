#!/usr/bin/env bash
# One-off (session 15): is the decode kernel's time instruction fetch? Its stage stamps when it runs a second time back to back (warm code).
set -u
cd "$(dirname "$0")"
(
LAYERS=22 . tools/profile_model.sh
gunzip -c dist/genrun_twice.gz > "$BIN/genrun2"; chmod +x "$BIN/genrun2"
GENC_ATTN_TRACE=1 "$BIN/genc" compile "$W/m/model.onnx" -o "$W/mt.plan" --dtype f16 --max-batch 32 --max-beams 1 --max-length 256 > /dev/null
for v in "0 32" "1 32" "0 0" "1 0" "3 0"; do set -- $v; echo "== launches before the traced one: $1, prefetch $2 MiB"
  GENC_CUDA_DECODE_TWICE=$1 GENC_CUDA_L2_PREFETCH_MB=$2 GENC_CUDA_ATTN_TRACE=1 "$BIN/genrun2" "$W/mt.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 12 --output /dev/null 2>&1 | grep "attention trace" | grep -v "split 3"; done
for v in "0 32" "1 32" "0 0" "1 0"; do set -- $v; echo "replay twice=$1 pf$2: $(GENC_CUDA_DECODE_TWICE=$1 GENC_CUDA_L2_PREFETCH_MB=$2 GENC_CUDA_REPLAY_TIMING=20 "$BIN/genrun2" "$W/m.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens 12 --output /dev/null 2>&1 | grep -o '[0-9.]* ms each')"; done
)
echo "== gpu_test --quick"
env -u BIN bash tools/gpu_test.sh --quick 2>&1 | tail -45
