# Sourced by bench/profile_gpu.sh, bench/ncu_step.sh and bench/trace_step.sh:
# unpacks the tools (BIN) and makes, in a fresh folder W, the model they
# profile — a Llama at real width (d 2048, 32 heads, 4 KV heads, FFN 5632,
# vocab 32000; random weights), LAYERS layers (default 4; 22 is the 1.1B
# config), its f16 plan W/m.plan (stats in W/stats.json; --max-length MAXLEN,
# default 256; --max-batch MAXBATCH, default 32) and a 128-token prompt W/p.jsonl.
. tools/packed.sh
W=$(mktemp -d)
python3 tools/export.py --arch llama --set hidden_size=2048 --set intermediate_size=5632 \
  --set num_hidden_layers="${LAYERS:-4}" --set num_attention_heads=32 --set num_key_value_heads=4 --set head_dim=64 \
  --set vocab_size=32000 --set max_position_embeddings=2048 --seed 3 --no-check --out "$W/m" > "$W/export.log" 2>&1
# PLAN_FLAGS: more genc flags (e.g. "--weights int4")
# shellcheck disable=SC2206 # PLAN_FLAGS is several words
GENC_FLAGS=(--dtype f16 --max-batch "${MAXBATCH:-32}" --max-beams 1 --max-length "${MAXLEN:-256}" ${PLAN_FLAGS-})
"$BIN/genc" compile "$W/m/model.onnx" -o "$W/m.plan" "${GENC_FLAGS[@]}" \
  --stats-json "$W/stats.json" > /dev/null
python3 -c "import json,random; random.seed(1); print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(128)]}))" > "$W/p.jsonl"

# decode_ms INPUT [VAR=VALUE ...]: genrun's decode ms/token on PLAN (default
# W/m.plan) over INPUT, 64 new tokens, with the variables set ('?' where it
# failed); its output to DECODE_OUT (default /dev/null).
decode_ms() {
  local in=$1 t
  shift
  t=$(env "$@" timeout 60 "$BIN/genrun" "${PLAN:-$W/m.plan}" --device cuda --input "$in" --max-new-tokens 64 --stats \
    --output "${DECODE_OUT:-/dev/null}" 2>&1 | sed -n 's/.*decode \([0-9.]*\) ms\/token.*/\1/p')
  echo "${t:-?}"
}
