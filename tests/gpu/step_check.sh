#!/usr/bin/env bash
# The decode-step kernel on the GPU machine (after tools/pack.sh here), one
# run, a table last; exit status 1 if a row is off:
#   1. every decoder-only fixture as an f16 plan (llama also bf16, and one
#      with a 300-token prompt: split-KV attention over many key ranges) at
#      batch 1: GENC_CUDA_STEP_CHECK=1 runs each decode step both ways on a
#      poisoned arena and compares the logits (max difference over the
#      largest logit, argmax agreement, non-finite values); then the tokens of
#      the step kernel against kernel by kernel (GENC_CUDA_STEP=0), greedy;
#   2. the plans the schedule refuses say so (genc inspect) and still run;
#      a stalled counter (GENC_CUDA_STEP_STALL=2: the first merge never
#      signals) ends genrun with an error naming the waiting item after the
#      wait's bound, exit 1, and no output file;
#   3. with --time: decode ms/token of the step kernel against kernel by
#      kernel at batch 1 (prompt 128, 128 new tokens, random weights) on the
#      135M Llama shape and the 1.1B one (bench/bench.py's shapes), with the
#      bandwidth floor of the weights read a step, and where the step
#      kernel's time went (GENC_CUDA_STEP_TRACE=2: by op kind in the table's
#      notes, op by op in OUT/trace-MODEL.txt).
#
#   1b. HF's greedy goldens of every decoder-only fixture through the step
#      kernel (f16 plans, a top-2 margin rule; STEP_GOLDENS=0 skips them);
#   4. with --sanitize: compute-sanitizer's memcheck and racecheck over
#      genrun on the step kernel (llama f16, one row and four, greedy);
#      any report fails the row.
#
#   bash tests/gpu/step_check.sh [--time | --sanitize]   # there, from the repo root
#   STEP_TIME="llama135m llama1b:4" bash tests/gpu/step_check.sh --time
#                                    # MODEL[:LAYERS]: fewer layers, a quicker export
#   STEP_FIXTURES=0 bash tests/gpu/step_check.sh --time      # the timing alone
#   STEP_FIXTURES="llama:f16:24 gpt2:f16:24:8" bash tests/gpu/step_check.sh
#                                    # MODEL:DTYPE:PROMPT[:BATCH[:BEAMS]]: those rows only
#   STEP_GENC="--step-blocks 264 --step-blocks-per-sm 2" bash tests/gpu/step_check.sh --time
#                                    # genc's flags for every plan (two blocks an SM)
#   STEP_VARIANTS="--step-warps 4|--step-blocks 264 --step-blocks-per-sm 2|GENC_STEP_GROUPS=1" bash tests/gpu/step_check.sh --time
#                                    # --time: more plans of each export, their step kernel timed
#                                    # (NAME=VALUE: genc's environment for that plan)
set -uo pipefail
cd "$(dirname "$0")/../.."
TIME=0
SANITIZE=0
case "${1-}" in
--time) TIME=1 ;;
--sanitize) SANITIZE=1 ;;
"") ;;
*) echo "usage: tests/gpu/step_check.sh [--time | --sanitize]" >&2; exit 2 ;;
esac
. tools/packed.sh
W=$(mktemp -d)
OUT=${OUT:-$W}
mkdir -p "$OUT"
nvidia-smi -L || true
: > "$OUT/0-rows.txt"
rc=0
row() { printf '%s\n' "$1" >> "$OUT/0-rows.txt"; [[ $1 == *"|FAIL|"* ]] && rc=1; return 0; }

# prompts FILE N LENGTH VOCAB SEED: N random prompts of LENGTH ids.
prompts() {
  python3 - "$@" <<'EOF'
import json, random, sys
path, n, length, vocab, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
with open(path, "w") as f:
    for i in range(n):
        f.write(json.dumps({"input_ids": [rng.randrange(3, vocab) for _ in range(length - 3 * i)]}) + "\n")
EOF
}

# same A B: the common prefix of each line's tokens, summed, "same/total".
same() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
same = total = 0
for x, y in zip(a, b):
    x, y = x["sequences"][0]["output_ids"], y["sequences"][0]["output_ids"]
    n = 0
    while n < min(len(x), len(y)) and x[n] == y[n]:
        n += 1
    same += n
    total += max(len(x), len(y))
print(f"{same}/{total}")
EOF
}

# fixture NAME DTYPE LENGTH [BATCH [BEAMS]]: one correctness row; BATCH
# prompts a step (decode steps of BATCH x BEAMS rows, up to the kernel's 8).
fixture() {
  local m=$1 dt=$2 len=$3 b=${4:-1} nb=${5:-1} p=$W/$1-$2-$3-$4-$5
  local vocab gen=(--ignore-eos)
  [ "$nb" -gt 1 ] && gen+=(--num-beams "$nb")
  local what="$m $dt prompt $len"
  [ "$b" -gt 1 ] && what+=" batch $b"
  [ "$nb" -gt 1 ] && what+=" beams $nb"
  vocab=$(python3 -c "import json; print(json.load(open('tests/fixtures/$m/config.json'))['vocab_size'])")
  if ! "$BIN/genc" compile "tests/fixtures/$m/model.onnx" -o "$p.plan" --dtype "$dt" --gpu-arch sm_90 ${STEP_GENC-} \
    --max-batch "$b" --max-beams "$nb" --max-length $((len + 64)) > "$p.genc.log" 2>&1; then
    row "$m $dt|FAIL|genc: $(tail -1 "$p.genc.log")"
    return
  fi
  local sched
  sched=$("$BIN/genc" inspect "$p.plan" | grep -m1 "step schedule")
  prompts "$p.jsonl" $((b > 3 ? b : 3)) "$len" "$vocab" 7
  if [[ $sched == *none* ]]; then
    GENC_CUDA_STEP=1 timeout 300 "$BIN/genrun" "$p.plan" --device cuda --input "$p.jsonl" --max-new-tokens 32 "${gen[@]}" \
      --output "$p.out" > "$p.log" 2>&1 && row "$what|ok|no schedule, runs kernel by kernel: ${sched#*: }" ||
      row "$what|FAIL|genrun: $(tail -1 "$p.log")"
    return
  fi
  if ! GENC_CUDA_STEP_CHECK=1 timeout 300 "$BIN/genrun" "$p.plan" --device cuda --input "$p.jsonl" --max-new-tokens 48 \
    "${gen[@]}" --output "$p.check" > "$p.check.log" 2>&1; then
    row "$what|FAIL|step check: $(grep -m1 -i error "$p.check.log" || tail -1 "$p.check.log")"
    return
  fi
  local chk
  chk=$(grep -m1 "step check:" "$p.check.log")
  for s in 0 1; do
    GENC_CUDA_STEP=$s timeout 300 "$BIN/genrun" "$p.plan" --device cuda --input "$p.jsonl" --max-new-tokens 48 "${gen[@]}" \
      --output "$p.out$s" > "$p.log$s" 2>&1 || { row "$what|FAIL|GENC_CUDA_STEP=$s: $(tail -1 "$p.log$s")"; return; }
  done
  local agree verdict
  agree=$(same "$p.out0" "$p.out1")
  verdict=$(python3 - "$chk" "$agree" "$dt" <<'EOF'
import re, sys
chk, agree, dt = sys.argv[1:]
m = re.search(r"(\d+) decode steps, (\d+) rows: .*ratio ([0-9.e+-]+)\), argmax equal (\d+) of (\d+), (\d+) non-finite", chk)
if not m:
    print("FAIL"); sys.exit()
steps, rows, ratio, eq, of, nonfinite = int(m[1]), int(m[2]), float(m[3]), int(m[4]), int(m[5]), int(m[6])
tol = 0.02 if dt == "f16" else 0.05  # one step's 16-bit rounding, summed in another order
a, b = map(int, agree.split("/"))
ok = steps > 0 and nonfinite == 0 and ratio <= tol and eq >= 0.9 * of and a >= 0.75 * b
print("ok" if ok else "FAIL")
EOF
)
  row "$what|$verdict|${chk#genrun: step check: }; tokens step = kernel by kernel $agree"
}

FIXTURES="llama:f16:24 llama:bf16:24 llama:f16:300 gpt2:f16:24 mistral:f16:24 mistral:f16:300 qwen3:f16:24
  qwen2:bf16:24 processors:f16:24 falcon:f16:24 olmo2:f16:24 llama:f16:24:4 gpt2:f16:24:8 qwen3:f16:300:3
  llama:f16:24:8 llama:f16:24:1:4 gpt2:f16:24:2:4"
case "${STEP_FIXTURES-1}" in 0) FIXTURES= ;; 1) ;; *) FIXTURES=$STEP_FIXTURES ;; esac
for spec in $FIXTURES; do
  IFS=: read -r m dt len b nb <<< "$spec"
  fixture "$m" "$dt" "$len" "$b" "$nb"
done

# goldens: Hugging Face's greedy rows (and greedy with processors) of every
# decoder-only fixture through the step kernel, f16 plans; a row is compared
# up to the first step whose recorded top-2 margin is under 0.05, what f16
# rounding may flip (beam rows: the step kernel against kernel by kernel
# above). The plan check_generate.py made then runs once more with --stats,
# which must say the step kernel ran.
goldens() {
  local fx modes log ran
  for fx in llama gpt2 mistral qwen3 qwen2 processors falcon olmo2; do
    modes=$(python3 -c "import json,sys; g=json.load(open(sys.argv[1])); print(' '.join(m for m in g if m in ('greedy','greedy_processors')))" \
      "tests/fixtures/$fx/golden.json")
    log=$W/golden-$fx.log
    # shellcheck disable=SC2086 # modes: several words
    if ! GENRUN_DEVICE=cuda GENC_CUDA_STEP=1 GENC_COMPILE_ARGS="--dtype f16 --gpu-arch sm_90 ${STEP_GENC-}" \
         GENC_GREEDY_MARGIN=0.05 timeout 300 python3 tests/tools/check_generate.py "$BIN/genc" "$BIN/genrun" \
         "tests/fixtures/$fx" model.onnx "$W/golden-$fx" $modes > "$log" 2>&1; then
      row "goldens $fx f16|FAIL|$(tail -c 300 "$log" | tr '\n' ' ')"
      continue
    fi
    printf '{"input_ids": [5, 6, 7]}\n' > "$W/golden-$fx.jsonl"
    ran=$(GENC_CUDA_STEP=1 timeout 60 "$BIN/genrun" "$W/golden-$fx/model.plan" --device cuda --input "$W/golden-$fx.jsonl" \
      --max-new-tokens 4 --stats --output /dev/null 2>&1 | grep -m1 "step kernel")
    if [[ $ran == *"step kernel ran"* ]]; then
      row "goldens $fx f16|ok|$(tr '\n' ';' < "$log" | cut -c1-150) $ran"
    else
      row "goldens $fx f16|FAIL|the step kernel did not run: ${ran:-no --stats line}"
    fi
  done
}
[ "${STEP_GOLDENS-1}" = 0 ] || [ -z "$FIXTURES" ] || goldens

# stall: op 2 (layer 0's attention merge) never signals: an item waiting on
# it, or on what follows it, must fail the run, naming itself and op 2 (as
# what it waited for, or as where the stall began).
stall() {
  local p=$W/llama-f16-24--
  [ -s "$p.plan" ] || { row "stalled counter|FAIL|no llama f16 plan"; return; }
  local t0=$SECONDS
  GENC_CUDA_STEP_STALL=2 timeout 300 "$BIN/genrun" "$p.plan" --device cuda --input "$p.jsonl" --max-new-tokens 4 \
    --output "$p.stall.out" > "$p.stall.log" 2>&1
  local rc=$? line
  line=$(grep -m1 "genrun: error" "$p.stall.log")
  if [ $rc = 1 ] && [[ $line == *"waited past 2000 ms for step op 2 "* || $line == *"the stall began at step op 2 "* ]] && [ ! -e "$p.stall.out" ]; then
    row "stalled counter|ok|exit 1 after $((SECONDS - t0)) s, no output file: ${line#genrun: error: }"
  else
    row "stalled counter|FAIL|exit $rc; $(tail -1 "$p.stall.log"); output file: $([ -e "$p.stall.out" ] && echo present || echo none)"
  fi
}
[[ " $FIXTURES " == *" llama:f16:24 "* ]] && stall

# abi: a plan whose step kernel takes its parameters in another form (the
# schedule's digest edited) runs kernel by kernel, saying why in --stats.
abi() {
  local p=$W/llama-f16-24--
  [ -s "$p.plan" ] || { row "edited abi|FAIL|no llama f16 plan"; return; }
  python3 tests/tools/edit_plan.py "$p.plan" "$p.abi.plan" 'step.abi=1' > "$p.abi.log" 2>&1 ||
    { row "edited abi|FAIL|edit_plan: $(tail -1 "$p.abi.log")"; return; }
  local line
  line=$(GENC_CUDA_STEP=1 timeout 60 "$BIN/genrun" "$p.abi.plan" --device cuda --input "$p.jsonl" --max-new-tokens 4 --stats \
    --output /dev/null 2>&1 | grep -m1 "step kernel")
  if [[ $line == *"another form"* ]]; then row "edited abi|ok|${line#genrun: }"
  else row "edited abi|FAIL|${line:-no --stats line}"; fi
}
[[ " $FIXTURES " == *" llama:f16:24 "* ]] && abi

# time NAME[:LAYERS]: decode ms/token, step kernel and kernel by kernel,
# batch 1; the step kernel's trace.
timing() {
  local name=${1%%:*} layers=${1#*:} d=$W/${1/:/-}
  [ "$layers" = "$1" ] && layers=
  python3 - "$name" "$d" "$layers" <<'EOF'
import subprocess, sys
sys.path.insert(0, "bench")
import bench
name, out, layers = sys.argv[1:]
extra = ["--set", f"num_hidden_layers={layers}"] if layers else []
r = subprocess.run([sys.executable, "tools/export.py", *bench.MODELS[name], *extra, "--seed", "3", "--no-check",
                    "--out", out], capture_output=True, text=True)
sys.exit(r.returncode and print(r.stderr[-2000:]) or 0)
EOF
  [ $? = 0 ] || { row "time $1|FAIL|export"; return; }
  "$BIN/genc" compile "$d/model.onnx" -o "$d.plan" --dtype f16 --gpu-arch sm_90 --max-batch 1 --max-length 256 ${STEP_GENC-} \
    --stats-json "$d.stats.json" > "$d.genc.log" 2>&1 || { row "time $1|FAIL|genc: $(tail -1 "$d.genc.log")"; return; }
  "$BIN/genc" inspect "$d.plan" | grep -m1 "step schedule" >> "$OUT/schedules.txt"
  local vocab
  vocab=$(python3 -c "import json; print(json.load(open('$d/config.json'))['vocab_size'])")
  prompts "$d.jsonl" 1 128 "$vocab" 11
  local ms=()
  for s in 1 0 1 0; do
    GENC_CUDA_STEP=$s timeout 300 "$BIN/genrun" "$d.plan" --device cuda --input "$d.jsonl" --max-new-tokens 128 --ignore-eos \
      --stats --output "$d.out$s" > "$d.log$s" 2>&1 || { row "time $1|FAIL|GENC_CUDA_STEP=$s: $(tail -1 "$d.log$s")"; return; }
    ms+=("$(grep -o 'decode [0-9.]* ms/token' "$d.log$s" | grep -o '[0-9.]*')")
  done
  GENC_CUDA_STEP_TRACE=2 timeout 300 "$BIN/genrun" "$d.plan" --device cuda --input "$d.jsonl" --max-new-tokens 16 --ignore-eos \
    --output /dev/null > "$OUT/trace-${1/:/-}.txt" 2>&1 # op by op: the whole table there
  grep "step trace" "$OUT/trace-${1/:/-}.txt" | grep -v "op by op\|step trace: *[0-9op]\|step trace: step:" |
    sed "s/^genrun/$1/" >> "$OUT/traces.txt"
  local bytes
  bytes=$(python3 -c "import json; print(json.load(open('$d.stats.json'))['decode_weights_bytes'])")
  row "time $1|ok|step kernel ${ms[2]} ms/token, kernel by kernel ${ms[3]} (first runs ${ms[0]} / ${ms[1]}); weights read a step $bytes B, floor at the copy bandwidth 4.12 TB/s $(python3 -c "print(f'{$bytes / 4.122e12 * 1e3:.3f}')") ms; tokens $(same "$d.out0" "$d.out1")"
  # STEP_VARIANTS: more plans of the same export, each with more genc flags
  # ("|" between them), the step kernel timed (the second of two runs) and traced
  local v=0 flags t variants
  IFS='|' read -ra variants <<< "${STEP_VARIANTS-}"
  for flags in "${variants[@]}"; do
    v=$((v + 1))
    # a variant's NAME=VALUE words are genc's environment (GENC_STEP_GROUPS=1), the rest its flags
    local envs=() gflags=() f
    for f in $flags; do if [[ $f == *=* ]]; then envs+=("$f"); else gflags+=("$f"); fi; done
    # shellcheck disable=SC2086 # STEP_GENC: several words
    env "${envs[@]}" "$BIN/genc" compile "$d/model.onnx" -o "$d.v$v.plan" --dtype f16 --gpu-arch sm_90 --max-batch 1 \
      --max-length 256 ${STEP_GENC-} "${gflags[@]}" > "$d.v$v.genc.log" 2>&1 ||
      { row "time $1 $flags|FAIL|genc: $(tail -1 "$d.v$v.genc.log")"; continue; }
    "$BIN/genc" inspect "$d.v$v.plan" | grep -m1 "step schedule" >> "$OUT/schedules.txt"
    for t in 1 2; do
      GENC_CUDA_STEP=1 timeout 300 "$BIN/genrun" "$d.v$v.plan" --device cuda --input "$d.jsonl" --max-new-tokens 128 \
        --ignore-eos --stats --output "$d.v$v.out" > "$d.v$v.log" 2>&1 || break
    done
    # kernel by kernel too: a variant of genc's kernels (GENC_DECODE_MIN_TILES) moves both
    GENC_CUDA_STEP=0 timeout 300 "$BIN/genrun" "$d.v$v.plan" --device cuda --input "$d.jsonl" --max-new-tokens 128 \
      --ignore-eos --stats --output "$d.v$v.out0" > "$d.v$v.log0" 2>&1
    if ! grep -q "step kernel ran" "$d.v$v.log"; then
      row "time $1 $flags|FAIL|$(grep -m1 "step kernel\|error" "$d.v$v.log")"
      continue
    fi
    GENC_CUDA_STEP_TRACE=2 timeout 300 "$BIN/genrun" "$d.v$v.plan" --device cuda --input "$d.jsonl" --max-new-tokens 16 \
      --ignore-eos --output /dev/null > "$OUT/trace-${1/:/-}-v$v.txt" 2>&1
    grep "step trace" "$OUT/trace-${1/:/-}-v$v.txt" | grep -v "op by op\|step trace: *[0-9op]\|step trace: step:" |
      sed "s/^genrun/$1 $flags/" >> "$OUT/traces.txt"
    row "time $1 $flags|ok|step kernel $(grep -o 'decode [0-9.]* ms/token' "$d.v$v.log" | grep -o '[0-9.]*') ms/token, kernel by kernel $(grep -o 'decode [0-9.]* ms/token' "$d.v$v.log0" | grep -o '[0-9.]*'); tokens against kernel by kernel $(same "$d.out0" "$d.v$v.out")"
  done
}
# sanitize: the step kernel under compute-sanitizer (slow: a few tokens).
sanitize() {
  local cs plan=$W/san-llama16.plan
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # source lines in the cubin: a report names the line of genc --emit=cuda's source
  GENC_NVRTC_LINEINFO=1 GENC_KERNEL_CACHE=off "$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$plan" --dtype f16 \
    --gpu-arch sm_90 --max-batch 4 --max-beams 1 --max-length 48 > /dev/null 2>&1 || { row "sanitize|FAIL|genc"; return; }
  printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 4]}\n{"input_ids": [11]}\n{"input_ids": [12, 13, 14, 15]}\n' \
    > "$W/san.jsonl"
  head -1 "$W/san.jsonl" > "$W/san1.jsonl"
  local tool extra input log r
  for tool in memcheck racecheck; do
    extra=()
    [ $tool = memcheck ] && extra=(--leak-check full)
    for input in san1 san; do
      log="$OUT/sanitize-$tool-$input.log"
      if GENC_CUDA_STEP=1 "$cs" --tool $tool "${extra[@]}" --error-exitcode 99 "$BIN/genrun" "$plan" --device cuda \
           --input "$W/$input.jsonl" --max-new-tokens 4 --stats > "$log" 2>&1 &&
         grep -q "the step kernel ran" "$log"; then r=ok; else r=FAIL; fi
      row "$tool step kernel, $([ $input = san1 ] && echo 1 row || echo 4 rows)|$r|$(grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|error|step kernel" "$log" | head -3 | tr '\n' ' ')$(grep -m2 -o "access at .* in [^ ]*:[0-9]*" "$log" | sed 's/^/; /' | tr -d '\n')"
    done
  done
}
if [ $SANITIZE = 1 ]; then
  sanitize
fi

if [ $TIME = 1 ]; then
  for m in ${STEP_TIME:-llama135m llama1b}; do timing "$m"; done
fi

echo
echo "| check | result | detail |"
echo "|---|---|---|"
awk -F'|' '{ d = $3; for (i = 4; i <= NF; ++i) d = d "|" $i; printf "| %s | %s | %s |\n", $1, $2, d }' "$OUT/0-rows.txt"
[ -s "$OUT/schedules.txt" ] && cat "$OUT/schedules.txt"
[ -s "$OUT/traces.txt" ] && cat "$OUT/traces.txt"
echo "logs: $W"
exit $rc
