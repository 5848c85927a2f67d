# Sourced by tools/profile_gpu.sh and tools/ncu_step.sh: unpacks the tools
# (BIN) and makes, in a fresh folder W, the model both profile — a Llama at
# real width (d 2048, 32 heads, 4 KV heads, FFN 5632, vocab 32000; random
# weights), LAYERS layers (default 4), its f16 plan W/m.plan (stats in
# W/stats.json; --max-length MAXLEN, default 256) and a 128-token prompt W/p.jsonl.
. tools/packed.sh
W=$(mktemp -d)
python3 tools/export.py --arch llama --set hidden_size=2048 --set intermediate_size=5632 \
  --set num_hidden_layers="${LAYERS:-4}" --set num_attention_heads=32 --set num_key_value_heads=4 --set head_dim=64 \
  --set vocab_size=32000 --set max_position_embeddings=2048 --seed 3 --no-check --out "$W/m" > "$W/export.log" 2>&1
# compile_plan GENC PLAN [flags]: the model's f16 plan by that genc (another
# build's, for A/B runs of generated code: tools/env_ab.sh's genc=PATH).
compile_plan() {
  local genc=$1 plan=$2
  shift 2
  "$genc" compile "$W/m/model.onnx" -o "$plan" --dtype f16 --max-batch 32 --max-beams 1 --max-length "${MAXLEN:-256}" \
    "$@" > /dev/null
}
compile_plan "$BIN/genc" "$W/m.plan" --stats-json "$W/stats.json"
python3 -c "import json,random; random.seed(1); print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(128)]}))" > "$W/p.jsonl"

# prompts FILE N LEN: N random prompts of LEN tokens (seed 2) into FILE.
prompts() {
  python3 -c "import json,random,sys; random.seed(2)
for _ in range(int(sys.argv[1])): print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(int(sys.argv[2]))]}))" \
    "$2" "$3" > "$1"
}
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
# variant_plan WORDS...: the plan of a variant — W/m.plan, or where a word is
# genc=PATH (an executable, or one compressed as PATH.gz or PATH.xz) the plan
# that genc compiles, and where words are genc:VAR=VALUE the plan genc
# compiles with those variables set (a codegen switch); once each;
# variant_env WORDS...: its other words (VAR=VALUE, for genrun).
variant_plan() {
  local w g="" genv=()
  for w in "$@"; do
    [[ $w == genc=* ]] && g=${w#genc=}
    [[ $w == genc:* ]] && genv+=("${w#genc:}")
  done
  [ -n "$g" ] || [ ${#genv[@]} -gt 0 ] || { echo "$W/m.plan"; return; }
  local plan
  plan=$W/m.$(echo "$g ${genv[*]}" | md5sum | cut -c1-8).plan
  if [ ! -f "$plan" ]; then
    local exe=${g:-$BIN/genc}
    case $g in # xz: a third the size of gz, where the 64 MiB carry is tight
      *.gz) exe=$W/genc.$(basename "$g" .gz) && gunzip -c "$g" > "$exe" && chmod +x "$exe" ;;
      *.xz) exe=$W/genc.$(basename "$g" .xz) && python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$g" "$exe" && chmod +x "$exe" ;;
    esac
    # shellcheck disable=SC2163 # VAR=VALUE words
    (for e in "${genv[@]}"; do export "$e"; done; compile_plan "$exe" "$plan") >&2 || return 1
  fi
  echo "$plan"
}
variant_env() {
  local w
  for w in "$@"; do [[ $w == genc=* || $w == genc:* ]] || echo "$w"; done
}
