#!/usr/bin/env bash
# The GPU checks, in one run on the GPU machine (after tools/pack.sh here):
#   1. generation parity on the GPU: every fixture, both exports where there
#      are two, f32 plans, greedy / beam / beam + repetition penalty against
#      the Hugging Face golden outputs (tests/tools/check_generate.py with
#      GENRUN_DEVICE=cuda);
#   2. every generated fused kernel against the CPU (gpucheck), f32 and f16,
#      and the 16-bit attention kernels against the attend kernel
#      (tests/gpu/attn_check.sh, DTYPE=f16, a subset: in --rest);
#   3. with --sanitize: compute-sanitizer's memcheck (device leaks too) and
#      racecheck over genrun on the GPU (greedy and beam, decoder-only and
#      encoder-decoder, CUDA graphs on) and gpucheck; any report fails it.
# Prints a table last; exit status 1 if anything is off. Each row also goes
# to $OUT/0-rows.txt (default: a fresh folder) as it is made, so a run cut off
# by a time limit still leaves the rows it finished; the logs go beside it.
#
#   bash tests/gpu/gpu_test.sh [--sanitize]        # there, from the repo root
#   bash tests/gpu/gpu_test.sh --sanitize-only     # the smoke run and 3. alone
#   bash tests/gpu/gpu_test.sh --quick             # llama, processors, t5, stop strings, tokens, GEMV fusion
#   bash tests/gpu/gpu_test.sh --rest              # the rest of the full run (--quick, then --rest: two runs
#                                              # of a few minutes each where the whole takes 4-10)
#   bash tests/gpu/gpu_test.sh --tokens            # greedy with processors and sampling on the GPU alone
#   bash tests/gpu/gpu_test.sh --fusion            # what the one-row GEMVs run themselves (the GEMV fusion
#                                              # rows) and the llama, t5, bart goldens: a decode-path A/B's checks
#   GPU_TEST_JOBS=1 bash tests/gpu/gpu_test.sh     # one check at a time (default 8 side by side)
#   bash tests/gpu/gpu_test.sh --nbits             # 4/8-bit weights alone: int4 / int8 plans against the
#                                              # CPU, gpucheck on their kernels
#   bash tests/gpu/gpu_test.sh --mma               # the tensor-core GEMVs of 2-64 rows alone (batches and
#                                              # beams of 16-bit plans against cuBLASLt and the CPU)
#   bash tests/gpu/gpu_test.sh --prefill-graphs    # @prefill runs replayed from CUDA graphs
#                                              # (GENC_CUDA_PREFILL_GRAPHS=1) against kernel by kernel
#   bash tests/gpu/gpu_test.sh --beams             # beam search alone: the fixtures' beam goldens (llama,
#                                              # processors, t5, bart), shared prompts and the beam rows
#                                              # of --tokens
set -uo pipefail
cd "$(dirname "$0")/../.."
SANITIZE=0
PARITY=1
QUICK=0
REST=0
TOKENS_ONLY=0
BEAMS_ONLY=0
FUSION_ONLY=0
NBITS_ONLY=0
MMA_ONLY=0
PGRAPH_ONLY=0
case "${1-}" in
--sanitize) SANITIZE=1 ;;
--sanitize-only) SANITIZE=1; PARITY=0 ;;
--quick) QUICK=1 ;;
--rest) REST=1 ;;
--tokens) TOKENS_ONLY=1 ;;
--beams) BEAMS_ONLY=1 ;;
--fusion) FUSION_ONLY=1 ;;
--nbits) NBITS_ONLY=1 ;;
--mma) MMA_ONLY=1 ;;
--prefill-graphs) PGRAPH_ONLY=1 ;;
"") ;;
*) echo "usage: tests/gpu/gpu_test.sh [--sanitize | --sanitize-only | --quick | --rest | --tokens | --beams | --fusion | --nbits | --mma | --prefill-graphs]" >&2; exit 2 ;;
esac
. tools/packed.sh
W=$(mktemp -d)
OUT=${OUT:-$W}
export GENRUN_DEVICE=cuda
nvidia-smi -L || true
# row "CHECK|RESULT|DETAIL": one row of the table, kept as it comes (one
# short append, whole, from whichever check makes it).
: > "$OUT/0-rows.txt"
row() { printf '%s\n' "$1" >> "$OUT/0-rows.txt"; }
# Checks run side by side, GPU_TEST_JOBS at once (default 8; the machine has
# 16 cores and one GPU, which the small fixtures' runs share well): each
# writes its own scratch files and its own rows, and a failure is a file, so
# that one in a background check counts.
JOBS=${GPU_TEST_JOBS:-8}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || JOBS=1
failed() { : > "$W/failed"; }
# A check that dies before its row (an error under set -u, a kill) still
# fails the run. Checks stopped with the script do not outlive it.
job() {
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  { ("$@") || {
    local rc=$?
    failed
    row "$*|FAIL|the check ended early (status $rc)"
  }; } &
}
trap 'kill $(jobs -p) 2> /dev/null; exit 130' INT TERM
# with_env NAME=VALUE... command: a function call with variables set for it.
with_env() {
  while [[ $1 == *=* ]]; do export "${1?}"; shift; done
  "$@"
}
check() { # name fixture model
  local name=$1 fx=$2 model=$3
  local log="$OUT/gen-$name.log"
  # The modes the fixture's golden.json records.
  local modes
  modes=$(python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print(' '.join(m for m in ('greedy','beam','beam_reppen','greedy_processors','beam_processors','greedy_encoder_processors','beam_encoder_processors','beam_renormalize','beam_renormalize_processors') if m in g))" "tests/fixtures/$fx/golden.json")
  # shellcheck disable=SC2086
  if python3 tests/tools/check_generate.py "$BIN/genc" "$BIN/genrun" "tests/fixtures/$fx" "$model" "$W/$name" \
       $modes > "$log" 2>&1; then
    row "$name|ok|$(tr '\n' ';' < "$log" | cut -c1-150)"
  else
    row "$name|FAIL|$(tail -c 400 "$log" | tr '\n' ' ')"
    failed
  fi
}
# Smoke: one plan end to end; a crash gets a backtrace (cuda-gdb is there).
"$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$W/smoke.plan" > /dev/null 2>&1
printf '{"input_ids": [5, 6, 7]}\n' > "$W/smoke.jsonl"
if ! timeout 60 "$BIN/genrun" "$W/smoke.plan" --device cuda --input "$W/smoke.jsonl" --max-new-tokens 4 --stats; then
  echo "== smoke failed; backtrace:"
  timeout 60 cuda-gdb -batch -ex run -ex bt --args "$BIN/genrun" "$W/smoke.plan" --device cuda --input "$W/smoke.jsonl" \
    --max-new-tokens 4 2>&1 | tail -30
  GENC_CUDA_SYNC=1 GENC_CUDA_GRAPHS=0 timeout 60 "$BIN/genrun" "$W/smoke.plan" --device cuda --input "$W/smoke.jsonl" --max-new-tokens 4
  timeout 60 "$BIN/gpucheck" "$W/smoke.plan" 2>&1 | tail -5 ||
    timeout 60 cuda-gdb -batch -ex run -ex bt --args "$BIN/gpucheck" "$W/smoke.plan" 2>&1 | tail -20
  exit 1
fi
"$BIN/genrun" "$W/smoke.plan" --device cpu --input "$W/smoke.jsonl" --max-new-tokens 4

# stop_strings: the GPU's own greedy choice (no logits on the host) and the
# CPU must cut the same rows at the same tokens.
stop_check() {
  "$BIN/genc" compile models/tiny-gpt2/model.onnx -o "$W/tg.plan" --max-length 64 > /dev/null 2>&1
  for dev in cuda cpu; do
    for s in '"cations"' '["zzz", " IN"]'; do
      "$BIN/genrun" "$W/tg.plan" --device $dev --prompt "The licensor grants you" --max-new-tokens 16 \
        --stop-strings "$s" 2>&1 | sed 's/"score":[^}]*//'
      "$BIN/genrun" "$W/tg.plan" --device $dev --prompt "The licensor grants you" --max-new-tokens 16 \
        --num-beams 2 --stop-strings "$s" 2>&1 | sed 's/"score":[^}]*//'
    done > "$W/stop-$dev.out"
  done
  if cmp -s "$W/stop-cuda.out" "$W/stop-cpu.out" && grep -q ications "$W/stop-cuda.out"; then s=ok; else s=FAIL; failed; fi
  row "stop strings: cuda == cpu|$s|$(wc -l < "$W/stop-cuda.out") runs, greedy and beam"
}

# Greedy with processors and sampling, chosen on the GPU (genc_token_pass):
# per configuration, the GPU twice (identical output, scores included), the
# CPU executor once (its host processors and warpers, the same counter-based
# draws: the same tokens, from logits equal up to float rounding), and
# GENC_CUDA_TOKENS_CHECK=1 on the first GPU run: every device choice against
# the host reference (runtime/choice/Sampling.h) on the GPU's own logits (same
# token, inside the reference's top-k / top-p / min-p support). Two plans: the
# llama fixture (vocab 1000: one part a row) and a tiny llama with a vocab of
# 151936 (149 parts: the multi-block selects and the ordered draw over parts).
# The token and beam checks' prompts and plans (into `plans`).
token_plans() {
  printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 10]}\n{"input_ids": [11, 12, 13, 14]}\n{"input_ids": [20]}\n{"input_ids": [30, 31]}\n{"input_ids": [40, 41, 42]}\n' > "$W/tok.jsonl"
  "$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$W/tok-v1k.plan" --max-batch 8 --max-beams 3 > /dev/null 2>&1
  plans=("v1k|$W/tok-v1k.plan")
  if python3 tools/export.py --arch llama --tiny --set vocab_size=151936 --scale 2 --seed 4 --out "$W/llama-v152k" \
       > "$OUT/tok-export.log" 2>&1 &&
     "$BIN/genc" compile "$W/llama-v152k/model.onnx" -o "$W/tok-v152k.plan" --max-batch 8 --max-beams 3 \
       > "$OUT/tok-compile.log" 2>&1; then
    plans+=("v152k|$W/tok-v152k.plan")
  else
    row "tokens v152k export|FAIL|$(tail -c 300 "$OUT/tok-export.log" "$OUT/tok-compile.log" 2>/dev/null | tr '\n' ' ')"
    failed
  fi
}
# One configuration of token_checks on one plan: prompts pname plan "name|args".
token_check() {
  local prompts=$1 pname=$2 plan=$3 cname args run dev s
  set -f
  IFS='|' read -r cname args <<< "$4"
  local base="$W/tok-$pname-${cname// /_}"
  for run in cuda1 cuda2 cpu; do
    dev=${run%[12]}
    # shellcheck disable=SC2086
    GENC_CUDA_TOKENS_CHECK=$([ $run = cuda1 ] && echo 1 || echo 0) "$BIN/genrun" "$plan" --device $dev \
      --input "$prompts" --max-new-tokens 24 $args > "$base.$run.out" 2> "$base.$run.err"
  done
  local check same cpu
  check=$(grep -h "token check:" "$base.cuda1.err" | tail -1)
  if cmp -s "$base.cuda1.out" "$base.cuda2.out"; then same=yes; else same=NO; fi
  cpu=$(python3 -c "import json,sys
ids=lambda f:[[s['output_ids'] for s in json.loads(l)['sequences']] for l in open(f)]
a,b=ids(sys.argv[1]),ids(sys.argv[2]); print('same' if a==b and len(a)==6 else 'DIFFER')" "$base.cuda1.out" "$base.cpu.out" 2>&1)
  # The CPU's tokens are reported, not required: its f32 logits differ
  # from the GPU's in the last bits, and a draw or a top-p boundary can
  # fall between them (seen once in 16 configurations, 1 of 276 rows);
  # what must hold is that the GPU repeats itself and that every choice
  # it makes is the host rule's on its own logits.
  if [ $same = yes ] && grep -qE "check: [1-9][0-9]* rows, 0 tokens differ.*, 0 outside" <<< "$check"; then
    s=ok
  else
    s=FAIL
    failed
  fi
  row "tokens $pname $cname|$s|cuda x2 identical: $same; cpu tokens: $cpu; ${check#genrun: token check: }"
}
token_checks() {
  local prompts="$W/tok.jsonl" plans
  token_plans
  local cfgs=(
    "greedy+proc|--repetition-penalty 1.3 --no-repeat-ngram-size 2 --min-new-tokens 5 --suppress-tokens [3,4]"
    "k50 p.9 t.8|--do-sample --top-k 50 --top-p 0.9 --temperature 0.8 --seed 5"
    "p.7|--do-sample --top-k 0 --top-p 0.7 --seed 6 --num-return-sequences 2"
    "minp.1 t1.3|--do-sample --top-k 0 --min-p 0.1 --temperature 1.3 --seed 7"
    "k5 x3|--do-sample --top-k 5 --seed 8 --num-return-sequences 3"
    "k20 p.95 minp rep|--do-sample --top-k 20 --top-p 0.95 --min-p 0.02 --repetition-penalty 1.3 --no-repeat-ngram-size 2 --seed 9 --num-return-sequences 2"
    "p.98 t.5|--do-sample --top-k 0 --top-p 0.98 --temperature 0.5 --seed 10 --num-return-sequences 2"
    "plain|--do-sample --top-k 0 --seed 11 --num-return-sequences 3"
    "greedy bias+bad+decay|--sequence-bias [[[5],-2.0],[[6,7],1.5],[[7,8],3.0]] --bad-words-ids [[9],[12,13]] --encoder-repetition-penalty 1.5 --exponential-decay-length-penalty [4,1.2]"
    "k20 bias+bad|--do-sample --top-k 20 --sequence-bias [[[5],-2.0],[[6,7],1.5]] --bad-words-ids [[9],[12,13]] --seed 12"
    "greedy renorm+rep|--renormalize-logits --repetition-penalty 1.3"
    "k20 p.9 renorm|--do-sample --top-k 20 --top-p 0.9 --renormalize-logits --seed 13 --num-return-sequences 2"
  )
  local pl c pname plan
  set -f # the JSON lists are no globs
  for pl in "${plans[@]}"; do
    IFS='|' read -r pname plan <<< "$pl"
    for c in "${cfgs[@]}"; do job token_check "$prompts" "$pname" "$plan" "$c"; done
  done
  set +f
  beam_checks "${plans[@]}"
}

# Beam search with every processor ranked on the GPU (genc_beam_topk:
# sequence bias, bad words, the encoder and repetition penalties, the
# length decay, n-gram bans; genc_beam_norm: renormalize_logits), the
# prompt's step included: the GPU's sequences and scores against the CPU
# executor's (scores within 1e-4), and no run copying its logits to the
# host (genrun --stats).
# One configuration of beam_checks on one plan: prompts "pname|plan" "name|args".
beam_check() {
  local prompts=$1 pname plan cname args dev base s hostHere
  set -f
  IFS='|' read -r pname plan <<< "$2"
  IFS='|' read -r cname args <<< "$3"
  base="$W/beam-$pname-${cname// /_}"
  for dev in cuda cpu; do
    # shellcheck disable=SC2086
    "$BIN/genrun" "$plan" --device $dev --input "$prompts" --max-new-tokens 16 --stats $args \
      > "$base.$dev.out" 2> "$base.$dev.err"
  done
  hostHere=$(sed -n 's/.* \([0-9]*\) copied their logits to the host.*/\1/p' "$base.cuda.err")
  local cmp
  cmp=$(python3 -c "import json,sys
seqs=lambda f:[json.loads(l)['sequences'] for l in open(f)]
a,b=seqs(sys.argv[1]),seqs(sys.argv[2])
ids=[[s['output_ids'] for s in r] for r in a]==[[s['output_ids'] for s in r] for r in b]
d=max(abs(x['score']-y['score']) for r,q in zip(a,b) for x,y in zip(r,q))
print(('same' if ids and len(a)==6 else 'DIFFER'), 'max |score diff| %.2e' % d, 'ok' if ids and len(a)==6 and d<=1e-4 else 'bad')" \
    "$base.cuda.out" "$base.cpu.out" 2>&1)
  if [[ "$cmp" == *" ok" ]] && [ "$hostHere" = 0 ]; then s=ok; else s=FAIL; failed; fi
  row "beams $pname $cname|$s|cuda vs cpu: $cmp; logits to the host: ${hostHere:-?} runs"
}
beam_checks() {
  local pl c
  local cfgs=(
    "beam|--num-beams 3"
    "beam renorm+rep|--num-beams 3 --num-return-sequences 2 --renormalize-logits --repetition-penalty 1.3 --no-repeat-ngram-size 2"
    "beam bias+bad|--num-beams 3 --sequence-bias [[[5],-2.0],[[6,7],1.5],[[7,8],3.0]] --bad-words-ids [[9],[12,13]]"
    "beam enc+decay+rep|--num-beams 3 --num-return-sequences 2 --encoder-repetition-penalty 1.5 --exponential-decay-length-penalty [4,1.2] --repetition-penalty 1.2 --no-repeat-ngram-size 2"
  )
  set -f
  for pl in "$@"; do
    for c in "${cfgs[@]}"; do job beam_check "$W/tok.jsonl" "$pl" "$c"; done
  done
  set +f
}

# A one-row GEMV runs the fused add + norm kernel before it and the SwiGLU
# after it itself (gemv_N_after_<body>_<r> / _then_<body>;
# GENC_CUDA_GEMV_FUSION=0 turns them off): plans of one sequence a batch so
# decode steps have one row; the outputs with and without must be byte for
# byte the same (the body's row runs with its own thread count inside the
# GEMV, the GLU rounds through the product's storage as its kernel would),
# f32 plans' tokens the CPU's, and the profile must show the GEMVs that did
# it: a norm before (all) and a GLU after (the SwiGLU models).
# The plans keep one kernel per op (--step-blocks 0): the fused GEMVs are
# that path's.
# The GEMV fusion checks of one fixture in one dtype: fx dt [int4|int8] (the
# last: 4/8-bit weights, whose one-row GEMVs run the same neighbours).
fusion_check() {
  local prompts="$W/pro.jsonl" fx=$1 dt=$2 wq=${3:-} plan models cfg cname args base s nb nt same cpu name
  models=model.onnx
  [ -f "tests/fixtures/$fx/encoder.onnx" ] && models="encoder.onnx decoder.onnx"
  set -f
  name="$fx $dt${wq:+ $wq}"
  plan="$W/pro-$fx-$dt$wq.plan"
  # shellcheck disable=SC2086
  if ! "$BIN/genc" compile $(for m in $models; do echo "tests/fixtures/$fx/$m"; done) --dtype $dt --max-batch 1 \
         --step-blocks 0 ${wq:+--weights $wq} -o "$plan" > "$OUT/pro-compile-$fx-$dt$wq.log" 2>&1; then
    row "gemv fusion $name|FAIL|$(tail -c 300 "$OUT/pro-compile-$fx-$dt$wq.log" | tr '\n' ' ')"
    failed
    return
  fi
  for cfg in "greedy|" "k20|--do-sample --top-k 20 --seed 3"; do
    IFS='|' read -r cname args <<< "$cfg"
    base="$W/pro-$fx-$dt$wq-$cname"
    # shellcheck disable=SC2086
    "$BIN/genrun" "$plan" --device cuda --input "$prompts" --max-new-tokens 12 $args > "$base.on" 2> "$base.on.err"
    # shellcheck disable=SC2086
    GENC_CUDA_GEMV_FUSION=0 "$BIN/genrun" "$plan" --device cuda --input "$prompts" --max-new-tokens 12 $args \
      > "$base.off" 2> "$base.off.err"
    # shellcheck disable=SC2086
    GENC_CUDA_PROFILE=1 "$BIN/genrun" "$plan" --device cuda --input "$prompts" --max-new-tokens 12 $args \
      > /dev/null 2> "$base.prof"
    # shellcheck disable=SC2086
    "$BIN/genrun" "$plan" --device cpu --input "$prompts" --max-new-tokens 12 $args > "$base.cpu" 2>/dev/null
    steps() {
      local v
      v=$(grep "profile: decode gemm \(nbits \)\?$1 fused" "$base.prof" | sed 's/.* over *\([0-9]*\) steps.*/\1/')
      echo "$((0 ${v:+$(printf ' + %s' $v)}))"
    }
    nb=$(($(steps after) + $(steps between)))
    nt=$(($(steps then) + $(steps between)))
    if [ -s "$base.on" ] && cmp -s "$base.on" "$base.off"; then same=yes; else same=NO; fi
    cpu=$(python3 -c "import json,sys
ids=lambda f:[[s['output_ids'] for s in json.loads(l)['sequences']] for l in open(f)]
a,b=ids(sys.argv[1]),ids(sys.argv[2]); print('same' if a==b and len(a)==4 else 'DIFFER')" "$base.on" "$base.cpu" 2>&1)
    s=ok
    [ $same = yes ] && [ "$nb" -gt 0 ] && { [ $dt = f16 ] || [ "$cpu" = same ]; } || s=FAIL
    case $fx in llama | mistral | qwen3) [ "$nt" -gt 0 ] || s=FAIL ;; esac
    [ $s = ok ] || failed
    row "gemv fusion $name $cname|$s|on == off: $same; cpu tokens: $cpu; decode GEMVs with the norm: $nb, with the GLU: $nt"
  done
}
fusion_checks() {
  local fx dt
  printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 10]}\n{"input_ids": [11, 12, 13, 14]}\n{"input_ids": [20]}\n' > "$W/pro.jsonl"
  for fx in llama gpt2 mistral qwen3 t5 bart; do
    for dt in f32 f16; do job fusion_check $fx $dt; done
  done
  job fusion_check llama f16 int4
  job fusion_check llama f32 int8
}

# The tensor-core GEMV entries (GemvAbi.h, _mma16 and _mmaw16/32/64) take a
# 16-bit plan's products of 2 to 64 rows: a batch of 4 prompts (decode 4
# rows; the prefill 10) and 4 beams of them (16 rows). Against cuBLASLt on
# the same plan (GENC_CUDA_GEMV_MMA=0) and the CPU's f32 tokens: the
# sequences equal to the CPU's must be at least as many as cuBLASLt's (f16
# near-ties part both from f32 alike), so must the entries' with K split over
# 3 blocks in every product (GENC_CUDA_GEMV_MMA_SPLIT=3, the GLU entries too;
# the fixtures' shapes get no split of their own), and the _mmaw entries'
# (the plan compiled with GENC_GEMV_MMA_WIDE=1) at every row count
# (GENC_CUDA_GEMV_MMA_WIDE=2, alone and with K split over 3 blocks), and the profile must show the entries ran (with
# the SwiGLU after them on the SwiGLU models). gpucheck checks each entry element by
# element (GemvMmaCheck.cpp).
mma_check() {
  local fx=$1 dt=$2 plan base cfg cname args on off cpu n s
  plan="$W/mma-$fx-$dt.plan"
  if ! GENC_GEMV_MMA_WIDE=1 "$BIN/genc" compile "tests/fixtures/$fx/model.onnx" --dtype "$dt" --max-batch 4 --max-beams 4 \
         --step-blocks 0 -o "$plan" > "$OUT/mma-compile-$fx-$dt.log" 2>&1; then
    row "gemv mma $fx $dt|FAIL|$(tail -c 300 "$OUT/mma-compile-$fx-$dt.log" | tr '\n' ' ')"
    failed
    return
  fi
  for cfg in "batch 4|" "4 beams|--num-beams 4"; do
    IFS='|' read -r cname args <<< "$cfg"
    base="$W/mma-$fx-$dt-${cname// /}"
    # shellcheck disable=SC2086
    "$BIN/genrun" "$plan" --device cuda --input "$W/mma.jsonl" --max-new-tokens 12 $args > "$base.on" 2> "$base.on.err"
    # shellcheck disable=SC2086
    GENC_CUDA_GEMV_MMA=0 "$BIN/genrun" "$plan" --device cuda --input "$W/mma.jsonl" --max-new-tokens 12 $args \
      > "$base.off" 2> "$base.off.err"
    # shellcheck disable=SC2086 # 3 blocks splitting K (the GLU entries too)
    GENC_CUDA_GEMV_MMA_SPLIT=3 "$BIN/genrun" "$plan" --device cuda --input "$W/mma.jsonl" --max-new-tokens 12 $args \
      > "$base.cl" 2> "$base.cl.err"
    # shellcheck disable=SC2086 # 64 weight rows a block at every row count
    GENC_CUDA_GEMV_MMA_WIDE=2 "$BIN/genrun" "$plan" --device cuda --input "$W/mma.jsonl" --max-new-tokens 12 $args \
      > "$base.w" 2> "$base.w.err"
    # shellcheck disable=SC2086
    GENC_CUDA_GEMV_MMA_WIDE=2 GENC_CUDA_GEMV_MMA_SPLIT=3 "$BIN/genrun" "$plan" --device cuda --input "$W/mma.jsonl" \
      --max-new-tokens 12 $args > "$base.wcl" 2> "$base.wcl.err"
    # shellcheck disable=SC2086
    GENC_CUDA_PROFILE=1 "$BIN/genrun" "$plan" --device cuda --input "$W/mma.jsonl" --max-new-tokens 12 $args \
      > /dev/null 2> "$base.prof"
    # shellcheck disable=SC2086
    "$BIN/genrun" "$plan" --device cpu --input "$W/mma.jsonl" --max-new-tokens 12 $args > "$base.cpu" 2>/dev/null
    read -r on off cl w wcl <<< "$(python3 -c "import json,sys
def ids(f):
    try: return [s['output_ids'] for l in open(f) for s in json.loads(l)['sequences']]
    except (OSError, ValueError, KeyError): return []
c=ids(sys.argv[3]); g=lambda f: sum(x==y for x,y in zip(ids(f),c)) if len(ids(f))==len(c)==4 else -1
print(g(sys.argv[1]), g(sys.argv[2]), g(sys.argv[4]), g(sys.argv[5]), g(sys.argv[6]))" "$base.on" "$base.off" "$base.cpu" \
      "$base.cl" "$base.w" "$base.wcl" 2>/dev/null)"
    n=$(grep -c "profile: decode gemm mma" "$base.prof")
    s=ok
    [ "${on:--1}" -ge 0 ] && [ "$on" -ge "${off:-0}" ] && [ "${cl:--1}" -ge "${off:-0}" ] && [ "${w:--1}" -ge "${off:-0}" ] &&
      [ "${wcl:--1}" -ge "${off:-0}" ] && [ "$n" -gt 0 ] || s=FAIL
    case $fx in llama | qwen3) grep -q "profile: decode gemm mma then fused" "$base.prof" || s=FAIL ;; esac
    [ $s = ok ] || failed
    row "gemv mma $fx $dt $cname|$s|sequences equal to the CPU's: tensor cores ${on:-none}/4, K split over 3 blocks ${cl:-none}/4, _mmaw ${w:-none}/4 (split over 3 ${wcl:-none}/4), cuBLASLt ${off:-none}/4; decode kinds on the entries: $n"
  done
  # Every entry of the plan, _mmaw32 and _mmaw64 too, element by element (GemvMmaCheck.cpp).
  local g
  if g=$("$BIN/gpucheck" "$plan" 2>&1) && grep -q '_mmaw64 M=50.* ok$' <<< "$g"; then s=ok; else s=FAIL; failed; fi
  row "gemv mma $fx $dt gpucheck|$s|$(echo "$g" | grep -c '_mmaw[0-9]* .* ok$') _mmaw rows ok, $(echo "$g" | grep -c 'rows alone.* ok$') rows alone ok; $(echo "$g" | tail -1)"
}
mma_checks() {
  printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 10]}\n{"input_ids": [11, 12, 13, 14]}\n{"input_ids": [20]}\n' > "$W/mma.jsonl"
  job mma_check llama f16
  job mma_check llama bf16
  job mma_check gpt2 f16
  job mma_check qwen3 f16
}

# @prefill runs from CUDA graphs (GENC_CUDA_PREFILL_GRAPHS=1): gpucheck's
# server-like schedule (decode rows beside a prompt's pieces, one shape at
# new positions) bit for bit against kernel by kernel; and genrun's batches
# of equal prompts (a batch's prefill the shape of the one before), greedy
# and seeded sampling, the same bytes out with the graphs on and off; and the
# mixed steps' decode rows on the decode kernel against the prefill kernel.
pgraph_check() { # fixture dtype
  local fx=$1 dt=$2 plan="$W/pg-$1-$2.plan" g a b n
  "$BIN/genc" compile "tests/fixtures/$fx/model.onnx" --dtype "$dt" -o "$plan" --max-batch 4 --max-beams 1 \
    --max-length 128 > "$OUT/pg-compile-$fx-$dt.log" 2>&1 || { row "prefill graphs $fx $dt|FAIL|genc compile"; failed; return; }
  if g=$("$BIN/gpucheck" --prefill-graphs "$plan" 2>&1); then a=ok; else a=FAIL; failed; fi
  row "prefill graphs $fx $dt, mixed steps|$a|$(echo "$g" | tail -1 | sed "s|$W/||")"
  # The lone tokens' merge by rows (GENC_CUDA_MERGE_ROWS=1 asks for it; AttentionSteps.cpp, loneTokens).
  if g=$(GENC_CUDA_MERGE_ROWS=1 "$BIN/gpucheck" --prefill-graphs "$plan" 2>&1); then a=ok; else a=FAIL; failed; fi
  row "prefill graphs $fx $dt, mixed steps, merge by rows|$a|$(echo "$g" | tail -1 | sed "s|$W/||")"
  python3 -c "
import random; random.seed(5)
for i in range(12): print('{\"input_ids\": %s}' % [random.randrange(3, 900) for _ in range(21)])" > "$W/pg-$fx-$dt.jsonl"
  for mode in greedy sample; do
    local args=(--max-new-tokens 12)
    [ $mode = sample ] && args+=(--do-sample --temperature 0.9 --top-k 40 --seed 7)
    a=$(GENC_CUDA_PREFILL_GRAPHS=0 "$BIN/genrun" "$plan" --device cuda --input "$W/pg-$fx-$dt.jsonl" "${args[@]}" 2>/dev/null | md5sum)
    b=$(GENC_CUDA_PREFILL_GRAPHS=1 "$BIN/genrun" "$plan" --device cuda --input "$W/pg-$fx-$dt.jsonl" "${args[@]}" 2>/dev/null | md5sum)
    n=$(GENC_CUDA_PREFILL_GRAPHS=1 "$BIN/genrun" "$plan" --device cuda --input "$W/pg-$fx-$dt.jsonl" "${args[@]}" --stats 2>&1 \
      >/dev/null | sed -n 's/.*@prefill graphs: \([0-9]* captured, [0-9]* replayed\).*/\1/p' | head -1)
    if [ "$a" = "$b" ] && [[ "$n" == "1 captured, 1 replayed" ]]; then
      row "prefill graphs $fx $dt, batches $mode|ok|3 batches of 4 equal prompts: the same bytes on and off ($n)"
    else
      row "prefill graphs $fx $dt, batches $mode|FAIL|on ${b:0:8} off ${a:0:8} (${n:-no report})"; failed
    fi
  done
}
pgraph_checks() {
  job pgraph_check llama f16
  job pgraph_check llama f32
  job pgraph_check qwen3 bf16
  job pgraph_check gpt2 f16
  job pgraph_check mistral f16
}

# Beams sharing their prompt (genc --max-new-tokens): the GPU reads the
# prompt through (region, index) pairs (GENC_CUDA_SHARED_PROMPTS=0: copies). The
# f32 fixtures against HF's goldens (the attend kernel too: GENC_CUDA_DECODE=0);
# f16 plans (the tensor-core prefill reads through the pairs as well) must
# give the very bytes the same plan gives with a copy a beam.
shared_same() { # name model.onnx
  local name=$1 model=$2 a b
  "$BIN/genc" compile "$model" -o "$W/$name.plan" --dtype f16 --max-batch 4 --max-beams 4 \
    --max-length 64 --max-new-tokens 24 > /dev/null 2>&1
  printf '{"input_ids": [5, 6, 7, 8, 9, 10, 11]}\n{"input_ids": [9, 10]}\n{"input_ids": [11, 12, 13, 14]}\n{"input_ids": [20]}\n' > "$W/$name.jsonl"
  a=$(GENC_CUDA_SHARED_PROMPTS=0 "$BIN/genrun" "$W/$name.plan" --device cuda --input "$W/$name.jsonl" --num-beams 4 --max-new-tokens 24 \
    --no-repeat-ngram-size 3 --num-return-sequences 2 2>&1 | md5sum)
  b=$("$BIN/genrun" "$W/$name.plan" --device cuda --input "$W/$name.jsonl" --num-beams 4 \
    --max-new-tokens 24 --no-repeat-ngram-size 3 --num-return-sequences 2 2>&1 | md5sum)
  if [ "$a" = "$b" ]; then row "$name|ok|pairs = copies (f16, 4 beams x 2 returned)"; else row "$name|FAIL|pairs $b, copies $a"; failed; fi
}
shared_checks() {
  local fx
  for fx in gpt2 mistral llama; do
    job with_env GENC_COMPILE_ARGS=--max-new-tokens=24 check "$fx-shared" "$fx" model.onnx
  done
  job with_env GENC_COMPILE_ARGS=--max-new-tokens=24 GENC_CUDA_DECODE=0 \
    check gpt2-shared-attend gpt2 model.onnx
  job with_env GENC_COMPILE_ARGS=--max-new-tokens=24 check bart-shared bart \
    encoder.onnx,decoder.onnx
  for fx in llama mistral; do job shared_same "$fx-shared-f16" "tests/fixtures/$fx/model.onnx"; done
}

# An i8 cross cache (genc --cross-kv-dtype i8): @encode's rows quantized on the
# device (genc_cross_store_i8), read by the attend kernel; HF's goldens as
# tests/generate/cross-kv-i8.test holds the CPU to.
cross_i8_checks() {
  local fx
  for fx in bart t5; do
    job with_env GENC_COMPILE_ARGS="--cross-kv-dtype i8" GENC_GREEDY_MARGIN=0.05 GENC_SCORE_TOL=2e-3 \
      check "$fx-cross-i8" "$fx" encoder.onnx,decoder.onnx
  done
}

# An i8 cross cache in f16 and bf16 plans of head dim 64 (T5 with its
# relative bias, BART) and 128 (BART): the decode kernel's codes on the
# tensor cores against the attend kernel's f32 math over the same codes.
attn_i8_check() {
  local a=ok dt ok=0 all=0
  for dt in f16 bf16; do
    GENC_FLAGS="--cross-kv-dtype i8" DTYPE=$dt ONLY='t5-hd64|bart-hd64|bart-d128' LENGTHS="1 64 1000" \
      bash tests/gpu/attn_check.sh > "$OUT/attn-i8-$dt.log" 2>&1 || a=FAIL
    ok=$((ok + $(grep -cE 'len [0-9]+ +ok ' "$OUT/attn-i8-$dt.log")))
    all=$((all + $(grep -cE 'len [0-9]+ +[A-Za-z]' "$OUT/attn-i8-$dt.log")))
  done
  [ $a = ok ] || failed
  row "attention i8 cross kernels|$a|$ok rows ok of $all (f16, bf16; t5 and bart head dim 64, bart 128; 1, 64, 1000)"
}

# 4/8-bit weights (genc --weights; tests/gpu/NBitsCheck.cpp): the llama
# fixture's int4 plan (blocks of 32, symmetric) and int8 plan (blocks of 64,
# packed zero points, the vocabulary projection too), f32 and f16, generated
# on the GPU (twice: the same bytes) and on the CPU. The prompts prefill 42
# tokens in one run (the tiles: on the tensor cores in f16 plans, whose
# families have them, else the CUDA cores), decode 5 rows (the GEMVs); beam 3
# decodes 15 rows (f16: the tensor-core entry; f32: the 8-row GEMV in two
# chunks); "tiles" is beam 3 with every 4/8-bit product on the tiles
# (GENC_CUDA_NBITS_ROWS=0). f32 plans: every sequence the CPU's and each
# score within 1e-3 of it; f16: at least 3 of 5 sequences the CPU's (the
# rest may part at a near-tie, both sides rounding the same values to f16 in
# their own sum order), the equal ones' scores within 2e-2. Then gpucheck on
# the plans: every GEMV entry and the tiles against the CPU's kernel.
nbits_check() { # weights dtype
  local w=$1 dt=$2 plan flags cfg cname args rows base s res run
  plan="$W/nbits-$w-$dt.plan"
  flags="--weights $w"
  [ "$w" = int8 ] && flags="$flags --group-size 64 --weights-zero-point --quantize-lm-head"
  # shellcheck disable=SC2086
  if ! "$BIN/genc" compile tests/fixtures/llama/model.onnx $flags --dtype "$dt" -o "$plan" \
       > "$OUT/nbits-compile-$w-$dt.log" 2>&1; then
    row "nbits $w $dt|FAIL|$(tail -c 300 "$OUT/nbits-compile-$w-$dt.log" | tr '\n' ' ')"
    failed
    return
  fi
  for cfg in "greedy|" "beam3|--num-beams 3" "tiles|--num-beams 3|0"; do
    IFS='|' read -r cname args rows <<< "$cfg"
    base="$W/nbits-$w-$dt-$cname"
    for run in cuda cuda2 cpu; do
      # shellcheck disable=SC2086
      GENC_CUDA_NBITS_ROWS=${rows:-32} "$BIN/genrun" "$plan" --device "${run%2}" --input "$W/nbits.jsonl" \
        --max-new-tokens 12 $args > "$base.$run" 2> "$base.$run.err"
    done
    res=$(python3 - "$base.cuda" "$base.cpu" "$dt" <<'PYTHON' 2>&1
import json, sys
def seqs(f):
    return [s for l in open(f) for s in json.loads(l)["sequences"]]
g, c = seqs(sys.argv[1]), seqs(sys.argv[2])
tol, need = (1e-3, len(c)) if sys.argv[3] == "f32" else (2e-2, 3)
same = [(a, b) for a, b in zip(g, c) if a["output_ids"] == b["output_ids"]]
worst = max((abs(a["score"] - b["score"]) / (1 + abs(b["score"])) for a, b in same), default=0.0)
ok = len(g) == len(c) == 5 and len(same) >= need and worst <= tol
print(f"{len(same)} of {len(c)} sequences the cpu's, score diff {worst:.2e} (tol {tol:g}): {'ok' if ok else 'FAIL'}")
PYTHON
)
    s=ok
    if ! [ -s "$base.cuda" ] || ! cmp -s "$base.cuda" "$base.cuda2"; then s=FAIL; res="gpu runs differ or empty ($(head -c 200 "$base.cuda.err")); $res"; fi
    [[ $res == *": ok" ]] || s=FAIL
    [ $s = ok ] || failed
    row "nbits $w $dt $cname|$s|$res"
  done
}
# GGUF blocks kept as they are (tools/gguf_to_onnx.py on a tiny GGUF the
# test writes: Q4_0, Q4_1 with its float zero points, Q8_0), an f16 plan: the
# GPU's greedy and beam 3 sequences against the CPU's as above. Needs
# Python's gguf and onnx packages; a row says when they are missing.
nbits_gguf_check() {
  local d="$W/nbits-gguf" plan cname args res s
  # tools/pack.sh carries the gguf wheel in dist/wheels for a machine without it
  if ! python3 -c "import gguf" > /dev/null 2>&1 && ls dist/wheels/gguf-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target "$W/py" dist/wheels/gguf-*.whl > /dev/null 2>&1 &&
      export PYTHONPATH="$W/py${PYTHONPATH:+:$PYTHONPATH}"
  fi
  if ! python3 -c "import gguf, onnx" > /dev/null 2>&1; then
    row "nbits gguf q4_0/q4_1/q8_0|skipped|no Python gguf / onnx packages here (pip install gguf onnx)"
    return
  fi
  mkdir -p "$d"
  plan="$d/model.plan"
  if ! { python3 tests/tools/make_tiny_gguf.py "$d/tiny.gguf" --types q4_0,q4_1,q8_0 &&
         python3 tools/gguf_to_onnx.py "$d/tiny.gguf" "$d/export" &&
         "$BIN/genc" compile "$d/export" --dtype f16 -o "$plan"; } > "$OUT/nbits-gguf.log" 2>&1; then
    row "nbits gguf q4_0/q4_1/q8_0|FAIL|$(tail -c 300 "$OUT/nbits-gguf.log" | tr '\n' ' ')"
    failed
    return
  fi
  for cfg in "greedy|" "beam3|--num-beams 3"; do
    IFS='|' read -r cname args <<< "$cfg"
    for run in cuda cpu; do
      # shellcheck disable=SC2086
      "$BIN/genrun" "$plan" --device "$run" --input "$W/nbits.jsonl" --max-new-tokens 12 $args \
        > "$d/$cname.$run" 2> "$d/$cname.$run.err"
    done
    res=$(python3 - "$d/$cname.cuda" "$d/$cname.cpu" <<'PYTHON' 2>&1
import json, sys
def seqs(f):
    return [s for l in open(f) for s in json.loads(l)["sequences"]]
g, c = seqs(sys.argv[1]), seqs(sys.argv[2])
same = [(a, b) for a, b in zip(g, c) if a["output_ids"] == b["output_ids"]]
worst = max((abs(a["score"] - b["score"]) / (1 + abs(b["score"])) for a, b in same), default=0.0)
ok = len(g) == len(c) == 5 and len(same) >= 3 and worst <= 2e-2
print(f"{len(same)} of {len(c)} sequences the cpu's, score diff {worst:.2e} (tol 0.02): {'ok' if ok else 'FAIL'}")
PYTHON
)
    s=ok
    [[ $res == *": ok" ]] || { s=FAIL; res="$res $(head -c 200 "$d/$cname.cuda.err")"; }
    [ $s = ok ] || failed
    row "nbits gguf q4_0/q4_1/q8_0 f16 $cname|$s|$res"
  done
}
nbits_checks() {
  local w dt g
  printf '{"input_ids": [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28]}\n{"input_ids": [9, 10]}\n{"input_ids": [11, 12, 13, 14, 15, 16, 17, 18, 19]}\n{"input_ids": [20]}\n{"input_ids": [30, 31, 32, 33, 34, 35]}\n' > "$W/nbits.jsonl"
  for w in int4 int8; do
    for dt in f32 f16; do nbits_check $w $dt; done
  done
  nbits_gguf_check
  local more=()
  [ -f "$W/nbits-gguf/model.plan" ] && more=("$W/nbits-gguf/model.plan")
  if "$BIN/gpucheck" "$W"/nbits-int*.plan "${more[@]}" > "$OUT/gpucheck-nbits.log" 2>&1; then g=ok; else g=FAIL; failed; fi
  row "gpucheck (4/8-bit kernels)|$g|$(grep -c ' ok$' "$OUT/gpucheck-nbits.log") rows ok; $(tail -1 "$OUT/gpucheck-nbits.log")"
}


# A prompt's every token's logits (genrun serve's prompt log-probabilities,
# genppl): prefill runs of the plan's 4 rows, each row through the LM head,
# on the GPU against the CPU (300 ids in windows of 64; f32 and f16 plans),
# and the f32 plan's on the fixture's unpadded row against the nll of
# transformers' golden logits.
ppl_check() {
  local dt tol nll ref res s
  python3 -c "import json, numpy as np; z = np.load('tests/fixtures/llama/logits.npz'); ids = z['input_ids'][2]; x = z['logits'][2].astype(np.float64); m = x.max(-1); print('%.6f' % (np.log(np.exp(x - m[:, None]).sum(-1))[:-1] + m[:-1] - x[np.arange(11), ids[1:]]).mean()); json.dump([int(i) for i in ids], open('$W/ppl-row.json', 'w')); json.dump([int(5 + (i * 37) % 990) for i in range(300)], open('$W/ppl-ids.json', 'w'))" > "$W/ppl-ref.txt"
  ref=$(cat "$W/ppl-ref.txt")
  for dt in f32 f16; do
    tol=0.0002; [ $dt = f16 ] && tol=0.01
    "$BIN/genc" compile tests/fixtures/llama/model.onnx --dtype $dt -o "$W/ppl-$dt.plan" --max-batch 2 --max-beams 2 \
      --max-length 64 > /dev/null 2>&1
    for dev in cuda cpu; do
      "$BIN/genppl" "$W/ppl-$dt.plan" --ids "$W/ppl-ids.json" --window 64 --device $dev > "$W/ppl-$dt.$dev" 2>&1
    done
    res=$(python3 - "$W/ppl-$dt.cuda" "$W/ppl-$dt.cpu" "$tol" <<'PYTHON' 2>&1
import re, sys
g, c = (float(re.search(r"nll ([0-9.]+)", open(f).read()).group(1)) for f in sys.argv[1:3])
ok = abs(g - c) <= float(sys.argv[3])
print(f"nll {g:.6f} on the GPU, {c:.6f} on the CPU (tol {sys.argv[3]}): {'ok' if ok else 'FAIL'}")
PYTHON
)
    s=ok; [[ $res == *": ok" ]] || { s=FAIL; failed; res="$res $(tail -c 200 "$W/ppl-$dt.cuda")"; }
    row "prompt logits (genppl) $dt, cuda vs cpu|$s|$res"
  done
  nll=$("$BIN/genppl" "$W/ppl-f32.plan" --ids "$W/ppl-row.json" --window 12 --device cuda 2>&1 | sed -n 's/.*nll \([0-9.]*\).*/\1/p')
  if python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) <= 1e-3 else 1)" "${nll:-nan}" "$ref"; then
    s=ok
  else
    s=FAIL; failed
  fi
  row "prompt logits (genppl) f32 cuda vs HF golden|$s|nll ${nll:-none} against transformers' $ref (tol 1e-3)"
}

# The quick set (--quick alone; the full run starts with it, --rest leaves it
# out), then the rest of the parity checks.
quick_set() {
  job check llama llama model.onnx
  job check processors processors model.onnx
  job check t5 t5 encoder.onnx,decoder.onnx
  job stop_check
  job ppl_check
  token_checks
  fusion_checks
  mma_checks
  pgraph_checks
}
if [ $QUICK = 1 ]; then
  quick_set
  PARITY=0
fi
if [ $TOKENS_ONLY = 1 ]; then
  token_checks
  PARITY=0
fi
if [ $FUSION_ONLY = 1 ]; then
  fusion_checks
  mma_checks
  job check llama llama model.onnx
  job check t5 t5 encoder.onnx,decoder.onnx
  job check bart bart encoder.onnx,decoder.onnx
  PARITY=0
fi
if [ $MMA_ONLY = 1 ]; then
  mma_checks
  PARITY=0
fi
if [ $PGRAPH_ONLY = 1 ]; then
  pgraph_checks
  PARITY=0
fi
if [ $NBITS_ONLY = 1 ]; then
  job nbits_checks
  PARITY=0
fi
if [ $BEAMS_ONLY = 1 ]; then
  job check llama llama model.onnx
  job check processors processors model.onnx
  job check t5 t5 encoder.onnx,decoder.onnx
  job check bart bart encoder.onnx,decoder.onnx
  shared_checks
  cross_i8_checks
  job attn_i8_check
  token_plans
  # Prompts prefilled two tokens a run: each run ranks the prompts it ends.
  "$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$W/tok-v1k-t2.plan" --max-batch 8 --max-beams 3 \
    --max-tokens 2 > /dev/null 2>&1
  beam_checks "${plans[@]}" "v1k-t2|$W/tok-v1k-t2.plan"
  PARITY=0
fi

if [ $PARITY = 1 ]; then
[ $REST = 1 ] || quick_set
for fx in mistral gpt2; do job check "$fx" "$fx" model.onnx; done
for fx in llama mistral gpt2; do job check "$fx-dynamo" "$fx" model.dynamo.onnx; done
for fx in falcon olmo2 qwen3 qwen2; do job check "$fx" "$fx" model.onnx; done
# cuBLASLt for every product (GENC_CUDA_GEMV=0; the GEMV kernels take those of
# one row by default on sm_90) on the GQA and rolling-window fixtures.
for fx in llama mistral gpt2; do job with_env GENC_CUDA_GEMV=0 check "$fx-cublaslt" "$fx" model.onnx; done
# The GEMV kernels of 2-8 rows (beam rows, batches; by default those go to
# cuBLASLt, GENC_CUDA_GEMV_ROWS=8 gives them to the GEMVs).
for fx in llama gpt2; do job with_env GENC_CUDA_GEMV_ROWS=8 check "$fx-gemv8" "$fx" model.onnx; done
job check t5-dynamo t5 encoder.dynamo.onnx,decoder.dynamo.onnx
job check bart bart encoder.onnx,decoder.onnx
job check bart-dynamo bart encoder.dynamo.onnx,decoder.dynamo.onnx
# Sources bounded apart from the decoder (the cross cache 96 rows a head, the
# beams' caches 64): the cross pitch is not the self cache's.
for fx in t5 bart; do
  job with_env GENC_COMPILE_ARGS="--max-source-length 96" check "$fx-source96" "$fx" encoder.onnx,decoder.onnx
done
shared_checks
cross_i8_checks

# Every fused kernel of four fixtures' f32 and f16 plans against the CPU.
gpucheck_all() {
  local fx dt g plans=()
  for fx in llama mistral gpt2 qwen3; do
    for dt in f32 f16; do
      "$BIN/genc" compile "tests/fixtures/$fx/model.onnx" --dtype $dt -o "$W/$fx.$dt.plan" >/dev/null 2>&1 && plans+=("$W/$fx.$dt.plan")
    done
  done
  if "$BIN/gpucheck" "${plans[@]}" > "$OUT/gpucheck.log" 2>&1; then g=ok; else g=FAIL; failed; fi
  row "gpucheck (fused kernels)|$g|$(tail -4 "$OUT/gpucheck.log" | tr '\n' ' ')"
}

# Real widths: a Llama (d=2048, 32 heads, 8 KV heads, 4 layers) with random
# weights, f32 and f16 plans, greedy on the GPU against HF generate.
scale_check() {
  local m dt log r
  m="$W/llama2048"
  if python3 tools/export.py --arch llama --set hidden_size=2048 --set intermediate_size=5632 \
       --set num_hidden_layers=4 --set num_attention_heads=32 --set num_key_value_heads=8 --set head_dim=64 \
       --set vocab_size=32000 --set max_position_embeddings=2048 --scale 2 --seed 3 --golden 16 --out "$m" \
       > "$OUT/export.log" 2>&1; then
    for dt in f32 f16; do
      log="$OUT/scale-$dt.log"
      if GENC_COMPILE_ARGS="--dtype $dt" python3 tests/tools/check_generate.py "$BIN/genc" "$BIN/genrun" "$m" \
           model.onnx "$W/scale-$dt" greedy > "$log" 2>&1; then r=ok; else r=FAIL; [ $dt = f32 ] && failed; fi
      row "llama-2048x4 $dt greedy|$r|$(tail -c 300 "$log" | tr '\n' ' ')"
    done
    # Head dim 64 in f16: the decode kernel streams K/V into registers,
    # reading the pairs a tile ahead (the fixtures' head dim 16 takes tiles).
    shared_same "llama-2048x4-shared-f16" "$m/model.onnx"
  else
    row "llama-2048x4 export|FAIL|$(tail -c 300 "$OUT/export.log" | tr '\n' ' ')"
    failed
  fi
}

# The 16-bit decode and prefill kernels against the attend kernel (f32 math)
# on the shapes they specialise on: head dim 128 (the register decode), GQA
# 4, a sliding window; the same tokens, scores within attn_check's tolerance.
# Its plans hold 4,104 positions, so their decode steps take the TMA kernel
# (attn_N_stream) where it was compiled (hd128, hd64-g4); the second row
# takes the register and tile kernels there (GENC_CUDA_STREAM=0), and the
# TMA kernel on the 16-query-head group, T5 and BART (GENC_CUDA_STREAM=1).
attn_f16_check() {
  local a
  if DTYPE=f16 ONLY='hd128|hd64-g4$|window' LENGTHS="1 64 1000" bash tests/gpu/attn_check.sh \
       > "$OUT/attn-f16.log" 2>&1; then a=ok; else a=FAIL; failed; fi
  row "attention f16 kernels|$a|$(grep -cE 'len [0-9]+ +ok ' "$OUT/attn-f16.log") rows ok of $(grep -cE 'len [0-9]+ +[A-Za-z]' "$OUT/attn-f16.log") (hd128, hd64-g4, window; 1, 64, 1000)"
  if GENC_CUDA_STREAM=0 DTYPE=f16 ONLY='hd128|hd64-g4$' LENGTHS="64 1000" bash tests/gpu/attn_check.sh \
       > "$OUT/attn-f16-nostream.log" 2>&1 &&
     GENC_CUDA_STREAM=1 DTYPE=f16 ONLY='g16|t5|bart-hd64' LENGTHS="1 1000" bash tests/gpu/attn_check.sh \
       > "$OUT/attn-f16-stream.log" 2>&1; then a=ok; else a=FAIL; failed; fi
  row "attention f16, TMA kernel off / forced|$a|$(cat "$OUT/attn-f16-nostream.log" "$OUT/attn-f16-stream.log" | grep -cE 'len [0-9]+ +ok ') rows ok of $(cat "$OUT/attn-f16-nostream.log" "$OUT/attn-f16-stream.log" | grep -cE 'len [0-9]+ +[A-Za-z]') (off: hd128, hd64-g4; forced: hd64-g16, t5, bart-hd64)"
}

job gpucheck_all
job nbits_checks
[ "${GPU_TEST_SCALE-1}" = 1 ] && job scale_check
job attn_f16_check
job attn_i8_check
fi # PARITY
wait

# compute-sanitizer: every report is an error (exit 99). Small runs: the
# tools slow kernels down 10-100x.
if [ $SANITIZE = 1 ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  S="--max-batch 2 --max-beams 2 --max-length 32"
  # shellcheck disable=SC2086
  "$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$W/san-llama.plan" $S >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$BIN/genc" compile tests/fixtures/t5/encoder.onnx tests/fixtures/t5/decoder.onnx -o "$W/san-t5.plan" $S \
    >/dev/null 2>&1
  # f16 plans: the tensor-core prefill and decode kernels, the token passes.
  # shellcheck disable=SC2086
  "$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$W/san-llama16.plan" $S --dtype f16 >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$BIN/genc" compile tests/fixtures/t5/encoder.onnx tests/fixtures/t5/decoder.onnx -o "$W/san-t516.plan" $S \
    --dtype f16 >/dev/null 2>&1
  printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 4]}\n' > "$W/san.jsonl"
  for tool in memcheck racecheck; do
    extra=()
    [ $tool = memcheck ] && extra=(--leak-check full)
    for run in "llama greedy|san-llama.plan|" "llama beam|san-llama.plan|--num-beams 2" \
               "t5 beam|san-t5.plan|--num-beams 2" \
               "llama f16 sample|san-llama16.plan|--do-sample --seed 3 --top-k 5 --top-p 0.9 --temperature 0.7" \
               "llama f16 greedy processors|san-llama16.plan|--repetition-penalty 1.3 --no-repeat-ngram-size 2" \
               "t5 f16 beam|san-t516.plan|--num-beams 2"; do
      IFS='|' read -r name plan args <<< "$run"
      log="$OUT/sanitize-$tool-${name// /-}.log"
      # shellcheck disable=SC2086
      if "$CS" --tool $tool "${extra[@]}" --error-exitcode 99 "$BIN/genrun" "$W/$plan" --device cuda \
           --input "$W/san.jsonl" --max-new-tokens 6 $args > "$log" 2>&1; then r=ok; else r=FAIL; failed; fi
      row "$tool genrun $name|$r|$(grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|error" "$log" | head -3 | tr '\n' ' ')"
    done
    log="$OUT/sanitize-$tool-gpucheck.log"
    if "$CS" --tool $tool "${extra[@]}" --error-exitcode 99 "$BIN/gpucheck" "$W/san-llama.plan" > "$log" 2>&1; then
      r=ok
    else
      r=FAIL
      failed
    fi
    row "$tool gpucheck llama|$r|$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | head -2 | tr '\n' ' ')"
  done
fi

fail=0
[ -e "$W/failed" ] && fail=1
echo
echo "== gpu_test: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
printf '%-28s %-5s %s\n' check result detail
while IFS='|' read -r a b c; do
  printf '%-28s %-5s %s\n' "$a" "$b" "$c"
done < "$OUT/0-rows.txt"
exit $fail
