#!/usr/bin/env bash
# Builds one libFuzzer target of tests/fuzz (clang-14, ASan + UBSan, in
# build-fuzz/, the sanitizer build tools/test.sh --sanitize tests too) and
# runs it for SECONDS on its corpus:
#
#   tools/fuzz.sh TARGET SECONDS [libFuzzer flags...]
#   TARGET: plan | onnx | prompt_lines | genrun_options | gguf | serve | all (each in turn: CI's smoke run)
#
# gguf is the GGUF converter (tools/gguf_to_onnx.py, Python over the gguf
# package): tests/tools/gguf_fuzz.py mutates a small GGUF file the tests
# make until SECONDS have passed (a new seed each run, printed); any error
# but the converter's one line fails it, the input kept in
# build-fuzz/crashes/gguf/.
#
# serve is the HTTP server (python3 -m genc.serve, the regular build's
# package): tests/tools/serve_fuzz.py mutates valid completion and chat
# bodies (fields of every type and edge value, fields dropped and added,
# messages and prompt items changed) until SECONDS have passed, on the bundled
# model with a chat template; any 5xx, dropped connection, stream cut short,
# 4xx without OpenAI's error body or failed generation fails it, the bodies
# kept in build-fuzz/crashes/serve/.
#
# The corpus (build-fuzz/corpus/TARGET) grows across runs; it starts from
# seeds made from the fixtures (plans compiled by the regular build's genc,
# the fixtures' .onnx files, genrun's test inputs). The run's statistics go
# to build-fuzz/logs/TARGET.log. A crash, leak, timeout or out-of-memory
# leaves its input in build-fuzz/crashes/TARGET/ and fails the script: turn
# it into a regression test (tests/fuzz/regressions/TARGET/, which
# tests/fuzz/replay.test runs through the regular build).
# Long runs that go on past a crash: add -fork=1 -ignore_crashes=1.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: tools/fuzz.sh plan|onnx|prompt_lines|genrun_options|gguf|serve|all SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
TARGET=$1
SECS=$2
shift 2
if [ "$TARGET" = all ]; then
  rc=0
  for t in plan onnx prompt_lines genrun_options gguf serve; do
    bash tools/fuzz.sh "$t" "$SECS" "$@" || rc=1
  done
  exit $rc
fi
FUZZ=${FUZZ_DIR:-build-fuzz}
BUILD=${BUILD_DIR:-build}
if [ "$TARGET" = gguf ]; then
  PY=${PYTHON:-python3}
  mkdir -p "$FUZZ/gguf" "$FUZZ/logs" "$FUZZ/crashes/gguf"
  "$PY" tests/tools/make_tiny_gguf.py "$FUZZ/gguf/good.gguf" --types q4_0,q4_1,q8_0 >/dev/null
  LOG=$FUZZ/logs/gguf.log
  if "$PY" tests/tools/gguf_fuzz.py "$FUZZ/gguf/good.gguf" "$FUZZ/gguf" --seconds "$SECS" \
       --crashes "$FUZZ/crashes/gguf" >"$LOG" 2>&1; then
    sed -n '1p;$p' "$LOG" | sed "s/^/fuzz gguf: /"
    exit 0
  fi
  echo "fuzz gguf: FAILED; the inputs are in $FUZZ/crashes/gguf/, the report in $LOG:" >&2
  grep -E "not a one-line error|the input is|Error" "$LOG" | head -n 5 >&2
  exit 1
fi

if [ "$TARGET" = serve ]; then
  PY=${PYTHON:-python3}
  mkdir -p "$FUZZ/serve" "$FUZZ/logs" "$FUZZ/crashes/serve"
  [ -f "$BUILD/python/genc/.files" ] || BUILD_DIR=$BUILD bash tools/build.sh >/dev/null
  export PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" -c "import sys; sys.path.insert(0, 'python/tests'); import genc; from serve_util import model_with_template
genc.compile(model_with_template('models/tiny-gpt2', sys.argv[1] + '/tiny-chat'), sys.argv[1] + '/chat.plan',
             max_batch=4, max_beams=4, max_length=64, progress=False)" "$FUZZ/serve"
  LOG=$FUZZ/logs/serve.log
  if "$PY" tests/tools/serve_fuzz.py "$FUZZ/serve/chat.plan" --seconds "$SECS" --crashes "$FUZZ/crashes/serve" \
       >"$LOG" 2>&1; then
    sed -n '1p;$p' "$LOG" | sed "s/^/fuzz serve: /"
    exit 0
  fi
  echo "fuzz serve: FAILED; the bodies are in $FUZZ/crashes/serve/, the report in $LOG:" >&2
  grep -E "^request|serve_fuzz:" "$LOG" | head -n 5 >&2
  exit 1
fi

cmake -S . -B "$FUZZ" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DGENC_FUZZ=ON -DGENC_PYTHON=OFF >/dev/null
ninja -C "$FUZZ" "fuzz_$TARGET" >/dev/null

SEEDS=$FUZZ/seeds/$TARGET
CORPUS=$FUZZ/corpus/$TARGET
CRASHES=$FUZZ/crashes/$TARGET
mkdir -p "$SEEDS" "$CORPUS" "$CRASHES" "$FUZZ/logs"
# A tiny Llama GGUF converted to ONNX (Q4_0, Q4_1, Q8_0 blocks as
# MatMulNBits), where the gguf and onnx packages are installed.
gguf_seed() {
  [ -f "$FUZZ/gguf-seed/model.onnx" ] && return 0
  "${PYTHON:-python3}" tests/tools/make_tiny_gguf.py "$FUZZ/gguf-seed.gguf" --types q4_0,q4_1,q8_0 >/dev/null &&
    "${PYTHON:-python3}" tools/gguf_to_onnx.py "$FUZZ/gguf-seed.gguf" "$FUZZ/gguf-seed" >/dev/null 2>&1
}
if [ -z "$(ls -A "$SEEDS")" ]; then
  case $TARGET in
  plan)
    # Small plans of each family: decoder-only (RoPE, sliding window, q/k
    # norms, learned positions), encoder-decoder (relative bias, cross
    # attention), f16 and bf16 storage, one with kernels and a tokenizer,
    # one whose beams share their prompt.
    [ -x "$BUILD/tools/genc" ] || BUILD_DIR=$BUILD bash tools/build.sh >/dev/null
    G="$BUILD/tools/genc"
    S="--max-batch 2 --max-beams 2 --max-length 16 --max-tokens 16"
    # With kernels where this genc has NVRTC (CI's may not).
    "$G" compile tests/fixtures/llama/model.onnx -o "$SEEDS/llama.plan" $S --gpu-arch=sm_80 ||
      "$G" compile tests/fixtures/llama/model.onnx -o "$SEEDS/llama.plan" $S --gpu-arch=
    "$G" compile tests/fixtures/mistral/model.onnx -o "$SEEDS/mistral-f16.plan" $S --gpu-arch= --dtype f16
    "$G" compile tests/fixtures/qwen3/model.onnx -o "$SEEDS/qwen3-bf16.plan" $S --gpu-arch= --dtype bf16
    "$G" compile tests/fixtures/gpt2/model.dynamo.onnx -o "$SEEDS/gpt2-dynamo.plan" $S --gpu-arch=
    "$G" compile tests/fixtures/t5/encoder.onnx tests/fixtures/t5/decoder.onnx -o "$SEEDS/t5.plan" $S --gpu-arch=
    "$G" compile tests/fixtures/bart/encoder.onnx tests/fixtures/bart/decoder.onnx -o "$SEEDS/bart.plan" $S --gpu-arch=
    "$G" compile models/tiny-gpt2/model.onnx -o "$SEEDS/tiny-gpt2.plan" $S --gpu-arch=
    # Beams sharing their prompt (homes and branches; the window's rings).
    "$G" compile tests/fixtures/mistral/model.onnx -o "$SEEDS/mistral-shared.plan" $S --max-new-tokens 8 --gpu-arch=
    # 4/8-bit weights: --weights int4 (zero points), and a GGUF's blocks kept.
    "$G" compile tests/fixtures/llama/model.onnx -o "$SEEDS/llama-int4.plan" $S --gpu-arch= --weights int4 --group-size 32
    gguf_seed && "$G" compile "$FUZZ/gguf-seed/model.onnx" -o "$SEEDS/gguf-q4.plan" $S --gpu-arch=
    ;;
  onnx)
    for f in tests/fixtures/*/*.onnx models/tiny-gpt2/model.onnx; do
      cp "$f" "$SEEDS/$(echo "$f" | tr / _)"
    done
    # MatMulNBits nodes (4-bit with integer and float zero points, 8-bit)
    gguf_seed && cp "$FUZZ/gguf-seed/model.onnx" "$SEEDS/gguf-matmulnbits.onnx"
    ;;
  prompt_lines) cp tests/genrun/Inputs/*.jsonl "$SEEDS/" ;;
  genrun_options) cp tests/fuzz/seeds/genrun_options/* "$SEEDS/" ;;
  *) echo "fuzz.sh: unknown target '$TARGET'" >&2; exit 2 ;;
  esac 2> >(grep -v "^genc: note" >&2)
fi

# Limits: 2 GiB resident, 1 GiB per allocation (an allocation that size
# from a small input is a bug: the loader refuses plans beyond the machine
# before allocating), 30 s per input.
LOG=$FUZZ/logs/$TARGET.log
set +e
"$FUZZ/fuzz/fuzz_$TARGET" -max_total_time="$SECS" -artifact_prefix="$CRASHES/" -print_final_stats=1 \
  -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=30 "$@" "$CORPUS" "$SEEDS" >"$LOG" 2>&1
rc=$?
set -e
grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ +DONE" "$LOG" | sed "s/^/fuzz $TARGET: /" || true
if [ $rc -ne 0 ]; then
  echo "fuzz $TARGET: FAILED (exit $rc); the input is in $CRASHES/, the report in $LOG:" >&2
  grep -E "ERROR|SUMMARY|Test unit written" "$LOG" | head -n 5 >&2
  exit 1
fi
