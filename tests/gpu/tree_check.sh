#!/usr/bin/env bash
# Tree attention's parity (issue #11), on a machine with two GPUs or more,
# after tools/pack.sh here:
#   1. every fixture (f32 plans) through tests/tools/check_generate.py with
#      --gpus 2 (the self-attention cache sharded over two GPUs, the outputs
#      combined through NCCL), and with --gpus 1 through the same tree path
#      (GENC_TREE_FORCE=1: a one-GPU NCCL group, the combine kernels run):
#      token-exact against the Hugging Face goldens, greedy and beam;
#   2. a real-width Llama (d 2048, 32 heads, 4 KV heads, 2 layers, random
#      weights) at an 8k-token context, greedy, f32 and f16 plans: the plain
#      executor, the tree path on one GPU and on two give the same tokens;
#   3. bad input: more GPUs than the machine has; a sliding-window plan.
# On a machine of one GPU, "x2" runs are the tree path's one-GPU group.
# Prints a table last; exit status 1 if anything is off.
#   bash tests/gpu/tree_check.sh [--quick]   # --quick: llama, t5 and the 8k Llama f32
set -uo pipefail
cd "$(dirname "$0")/../.."
QUICK=0
[ "${1-}" = --quick ] && QUICK=1
. tools/packed.sh
# NCCL: the one PyTorch brings, where none is on the library path.
if [ -z "${GENC_NCCL_LIB-}" ] && ! ldconfig -p | grep -q libnccl.so.2; then
  GENC_NCCL_LIB=$(python3 -c "import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
  export GENC_NCCL_LIB
fi
export NCCL_NVLS_ENABLE=0 # no NVLink multicast on shared hosts
W=$(mktemp -d)
OUT=${OUT:-$W}
export GENRUN_DEVICE=cuda
GPUS=$(nvidia-smi -L | wc -l)
echo "GPUs: $GPUS; NCCL: ${GENC_NCCL_LIB-system}"
declare -a rows
fail=0
check() { # name fixture model gpus [force]
  local name=$1 fx=$2 model=$3 gpus=$4 force=${5-0}
  local log="$W/tree-${name// /-}.log" modes
  modes=$(python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print(' '.join(m for m in ('greedy','beam','beam_reppen','greedy_processors','beam_processors') if m in g))" "tests/fixtures/$fx/golden.json")
  # shellcheck disable=SC2086
  if GENC_TREE_FORCE=$force GENRUN_GPUS=$gpus python3 tests/tools/check_generate.py "$BIN/genc" "$BIN/genrun" \
       "tests/fixtures/$fx" "$model" "$W/$name" $modes > "$log" 2>&1; then
    rows+=("$name|ok|$(tr '\n' ';' < "$log" | cut -c1-120)")
  else
    rows+=("$name|FAIL|$(tail -c 400 "$log" | tr '\n' ' ')")
    fail=1
  fi
}
if [ $QUICK = 1 ]; then
  fixtures=("llama model.onnx" "t5 encoder.onnx,decoder.onnx")
else
  fixtures=("llama model.onnx" "gpt2 model.onnx" "qwen3 model.onnx" "falcon model.onnx" "olmo2 model.onnx"
            "processors model.onnx" "t5 encoder.onnx,decoder.onnx" "bart encoder.onnx,decoder.onnx")
fi
# On one GPU only the tree path's one-GPU group runs (both combines).
N=2
[ "$GPUS" -lt 2 ] && N=1
for f in "${fixtures[@]}"; do
  set -- $f
  [ $N = 2 ] && check "$1 x2" "$1" "$2" 2
  [ $QUICK = 0 ] || [ "$1" = llama ] && check "$1 x1 tree" "$1" "$2" 1 1
done
# The one-collective combine (GENC_TREE_COMBINE=gather).
for f in "llama model.onnx" "t5 encoder.onnx,decoder.onnx"; do
  set -- $f
  GENC_TREE_COMBINE=gather check "$1 x$N gather" "$1" "$2" $N 1
done

# A real-width Llama at an 8k context: plain == tree x1 == tree x2.
m="$W/llama8k"
if python3 tools/export.py --arch llama --set hidden_size=2048 --set intermediate_size=5632 \
     --set num_hidden_layers=2 --set num_attention_heads=32 --set num_key_value_heads=4 --set head_dim=64 \
     --set vocab_size=32000 --set max_position_embeddings=8448 --scale 2 --seed 5 --no-check --out "$m" \
     > "$W/export8k.log" 2>&1; then
  python3 -c "
import json, random
r = random.Random(1)
with open('$W/p8k.jsonl', 'w') as f:
    for n in (8000, 5003):
        f.write(json.dumps({'input_ids': [r.randrange(3, 32000) for _ in range(n)]}) + '\n')"
  dts="f32 f16"
  [ $QUICK = 1 ] && dts=f32
  for dt in $dts; do
    "$BIN/genc" compile "$m/model.onnx" --dtype $dt --max-batch 2 --max-length 8192 -o "$W/l8k.$dt.plan" --quiet
    for v in "plain 1 0 allreduce" "tree-x1 1 1 allreduce" "tree-x2 $N 1 allreduce" "tree-x2g $N 1 gather"; do
      set -- $v
      GENC_TREE_COMBINE=$4 GENC_TREE_FORCE=$3 "$BIN/genrun" "$W/l8k.$dt.plan" --device cuda --gpus $2 --input "$W/p8k.jsonl" \
        --max-new-tokens 32 --stats 2> "$W/l8k-$dt-$1.err" > "$W/l8k-$dt-$1.jsonl"
      python3 -c "import json,sys; [print(json.loads(l)['sequences'][0]['output_ids']) for l in open(sys.argv[1])]" \
        "$W/l8k-$dt-$1.jsonl" > "$W/l8k-$dt-$1.out"
    done
    if [ -s "$W/l8k-$dt-plain.out" ] && cmp -s "$W/l8k-$dt-plain.out" "$W/l8k-$dt-tree-x1.out" &&
       cmp -s "$W/l8k-$dt-plain.out" "$W/l8k-$dt-tree-x2.out" && cmp -s "$W/l8k-$dt-plain.out" "$W/l8k-$dt-tree-x2g.out"; then r=ok; else r=FAIL; [ $dt = f32 ] && fail=1; fi
    same=$(python3 -c "
import ast, sys
a, b = ([ast.literal_eval(l) for l in open(p)] for p in sys.argv[1:3])
print(sum(x == y for u, v in zip(a, b) for x, y in zip(u, v)), 'of', sum(len(u) for u in a), 'tokens equal x2 vs plain')" \
      "$W/l8k-$dt-plain.out" "$W/l8k-$dt-tree-x2.out" 2>&1)
    rows+=("llama d2048 8k context $dt: plain, tree x1, x2, x2 gather|$r|$same; plain / x1 / x2 / x2 gather $(for v in plain tree-x1 tree-x2 tree-x2g; do grep -o 'decode [0-9.]* ms/token' "$W/l8k-$dt-$v.err"; done | tr '\n' ' ')")
  done
else
  rows+=("llama 8k export|FAIL|$(tail -c 300 "$W/export8k.log" | tr '\n' ' ')")
  fail=1
fi

# Bad input: one clear line, exit 1.
bad() { # name expect-regex cmd...
  local name=$1 re=$2
  shift 2
  local out
  out=$(timeout 120 "$@" 2>&1 >/dev/null)
  local rc=$?
  if [ $rc = 1 ] && echo "$out" | grep -Eq "$re"; then r=ok; else r=FAIL; fail=1; fi
  rows+=("bad input: $name|$r|rc $rc: $(echo "$out" | tail -c 200 | tr '\n' ' ')")
}
"$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$W/bad.plan" > /dev/null 2>&1
printf '{"input_ids": [5, 6, 7]}\n' > "$W/bad.jsonl"
bad "--gpus $((GPUS + 1))" "this machine shows $GPUS GPU" "$BIN/genrun" "$W/bad.plan" --device cuda --gpus $((GPUS + 1)) --input "$W/bad.jsonl"
"$BIN/genc" compile tests/fixtures/mistral/model.onnx -o "$W/sw.plan" --max-length 256 > /dev/null 2>&1
# (One GPU's shard is the whole cache, rolling windows too: refused on two or more.)
[ $N = 2 ] && bad "sliding window" "sliding window" "$BIN/genrun" "$W/sw.plan" --device cuda --gpus $N --input "$W/bad.jsonl"
bad "no NCCL" "NCCL" env GENC_TREE_FORCE=1 GENC_NCCL_LIB=/nonexistent/libnccl.so.2 "$BIN/genrun" "$W/bad.plan" --device cuda --gpus $N --input "$W/bad.jsonl"

echo
echo "| check | result | detail |"
echo "|---|---|---|"
for r in "${rows[@]}"; do echo "| ${r//|/ | } |"; done
exit $fail
