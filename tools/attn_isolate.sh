#!/usr/bin/env bash
# Which attention kernel makes a GPU run differ from the all-attend
# reference (GENC_CUDA_DECODE=0 GENC_CUDA_PREFILL=0: CUDA cores, f32 math), on
# the device machine (after tools/pack.sh here): one of attn_check.sh's
# configs at one length, REPS fresh random prompt pairs, each run four ways —
# both tensor-core kernels, the decode kernel alone, the prefill kernel
# alone, neither — and for each way the first step whose token differs from
# the reference and the score gap at the end. An f32 plan too (the decode
# kernel's CUDA-core form): a difference there is no 16-bit rounding.
#
#   CONFIG=hd64-g16 LEN=32768 REPS=2 bash tools/attn_isolate.sh   # there
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
. tools/packed.sh
W=$(mktemp -d)
CONFIG=${CONFIG:-hd64-g16}
LEN=${LEN:-32768}
REPS=${REPS:-2}
NEW=${NEW:-8}
exp=$(sed -n "s/^  \"$CONFIG|\(.*\)\"\$/\1/p" tools/attn_check.sh)
[ -n "$exp" ] || { echo "attn_isolate: no config $CONFIG in tools/attn_check.sh" >&2; exit 2; }
# shellcheck disable=SC2086
"$PY" tools/export.py $exp --set num_hidden_layers=2 --set intermediate_size=512 --set vocab_size=512 \
  --set max_position_embeddings=$((LEN + 104)) --seed 5 --no-check --out "$W/m" > "$W/export.log" 2>&1 ||
  { tail -5 "$W/export.log"; exit 1; }
printf '%-6s %-4s %-22s %s\n' dtype rep way "first differing step / end score gap"
for dt in ${DTYPES:-f32 f16}; do
  "$BIN/genc" compile "$W/m/model.onnx" -o "$W/$dt.plan" --dtype $dt --max-batch 2 --max-beams 1 \
    --max-length $((LEN + NEW)) --quiet > "$W/genc.log" 2>&1 || { tail -5 "$W/genc.log"; exit 1; }
  for rep in $(seq 1 "$REPS"); do
    "$PY" -c "import json,random,sys; n=int(sys.argv[1]); r=random.Random()
for m in (n, max(1, n // 2)): print(json.dumps({'input_ids': [r.randrange(3, 512) for _ in range(m)]}))" "$LEN" \
      > "$W/p.jsonl"
    for way in "ref|GENC_CUDA_DECODE=0 GENC_CUDA_PREFILL=0" "both|" "decode only|GENC_CUDA_PREFILL=0" \
               "prefill only|GENC_CUDA_DECODE=0"; do
      name=${way%%|*}
      # shellcheck disable=SC2086
      env ${way#*|} "$BIN/genrun" "$W/$dt.plan" --device cuda --input "$W/p.jsonl" --max-new-tokens $NEW \
        --output "$W/${name// /_}.out" 2> "$W/err" || { echo "genrun failed: $(tail -c 200 "$W/err")"; continue; }
      [ "$name" = ref ] && continue
      "$PY" - "$W/${name// /_}.out" "$W/ref.out" "$dt" "$rep" "$name" <<'PY'
import json, sys
a = [json.loads(l)["sequences"][0] for l in open(sys.argv[1])]
b = [json.loads(l)["sequences"][0] for l in open(sys.argv[2])]
cells = []
for x, y in zip(a, b):
    first = next((i for i, (p, q) in enumerate(zip(x["output_ids"], y["output_ids"])) if p != q), None)
    cells.append(f"{'same' if first is None else 'step %d' % first} / {abs(x['score'] - y['score']):.1e}")
print(f"{sys.argv[3]:6} {sys.argv[4]:4} {sys.argv[5]:22} " + "; ".join(cells))
PY
    done
  done
done
