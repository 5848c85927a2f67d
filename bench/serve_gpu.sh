#!/usr/bin/env bash
# genrun serve's load benchmark on the GPU machine (Python 3.12, torch,
# httpx, jinja2, uvloop, pybind11, cmake, ninja; no network, no starlette or
# uvicorn), in two halves:
#
#   here (network):  bash bench/serve_gpu.sh --fetch-wheels
#       downloads the server's wheels for Python 3.12 into dist/serve-wheels
#       (starlette, uvicorn and their small dependencies, pure Python; and
#       httptools' cp312 manylinux wheel); carry dist/serve-wheels, and
#       dist/genc-linux-x86_64.tar.xz from tools/pack.sh for genc itself.
#   here, optional:  PYTHON=python3.12 bash bench/serve_gpu.sh --prebuild
#       builds the genc package for that Python into build-serve/ (4-5 minutes
#       on 2 cores, saved there) and packs it as dist/genc-python.tar.gz, which
#       the GPU machine unpacks instead of building (carry dist/).
#   there:           bash bench/serve_gpu.sh [--clients 64] [--requests 1024] [serve_bench.py options]
#                    bash bench/serve_gpu.sh --soak [--requests 10000 --clients 64]
#       installs the carried wheels (no index), builds genrun and the genc
#       package's extension for that machine's python3 from this source
#       (cmake -DGENC_RUNTIME_ONLY=ON -DGENC_PYTHON=ON into build-serve/),
#       exports the 1.1B Llama with random weights (tools/export.py, as
#       bench.py does), compiles it f16 with the packed genc, and runs
#       bench/serve_bench.py, which prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=dist/serve-wheels
PY=${PYTHON:-python3}

if [ "${1:-}" = "--fetch-wheels" ]; then
  mkdir -p "$WHEELS"
  "$PY" -m pip download -q --no-deps -d "$WHEELS" starlette uvicorn click h11 anyio sniffio idna typing_extensions
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$WHEELS" httptools
  ls "$WHEELS"
  exit 0
fi

# 1. The server's packages, from the carried wheels only.
if ! "$PY" -c "import starlette, uvicorn" 2>/dev/null; then
  [ -d "$WHEELS" ] || { echo "serve_gpu: no $WHEELS: run 'bash bench/serve_gpu.sh --fetch-wheels' where there is a network and carry it"; exit 1; }
  "$PY" -m pip install -q --no-index --find-links "$WHEELS" starlette uvicorn httptools \
    || "$PY" -m pip install -q --no-index --find-links "$WHEELS" --break-system-packages starlette uvicorn httptools
fi

# 2. genrun and the genc package for this python, from this source (unless
#    a carried build-serve/python/genc imports here; genrun then comes from
#    the packed tarball).
export PYTHONPATH="$PWD/build-serve/python${PYTHONPATH:+:$PYTHONPATH}"
[ "${1:-}" != "--prebuild" ] && [ -f dist/genc-python.tar.gz ] && [ ! -d build-serve/python/genc ] &&
  mkdir -p build-serve/python && tar -xzf dist/genc-python.tar.gz -C build-serve/python
WORK=${SERVE_BENCH_DIR:-/tmp/serve-bench}
mkdir -p "$WORK"
GENRUN=build-serve/tools/genrun
if [ "${1:-}" != "--prebuild" ] && "$PY" -c "import genc._genc" 2>/dev/null && [ ! -x "$GENRUN" ]; then
  [ -x "$WORK/genrun" ] || tar -xJf dist/genc-linux-x86_64.tar.xz -C "$WORK"
  GENRUN=$WORK/genrun
else
  cmake -S . -B build-serve -G Ninja -DCMAKE_BUILD_TYPE=Release -DGENC_RUNTIME_ONLY=ON -DGENC_PYTHON=ON \
        -DPython3_EXECUTABLE="$(command -v "$PY")" >/dev/null
  ninja -C build-serve genrun genc_python >/dev/null
  strip --strip-unneeded build-serve/python/genc/_genc*.so
fi
if [ "${1:-}" = "--prebuild" ]; then
  tar -czf dist/genc-python.tar.gz -C build-serve/python genc
  ls -l dist/genc-python.tar.gz
  exit 0
fi

# 3. The 1.1B f16 plan (random weights), once.
PLAN=$WORK/llama1b-f16.plan
if [ ! -f "$PLAN" ]; then
  GENC=${GENC:-}
  if [ -z "$GENC" ]; then
    tar -xJf dist/genc-linux-x86_64.tar.xz -C "$WORK"
    GENC=$WORK/genc
  fi
  EXPORT=tools/export.py
  [ -f "$WORK/llama1b/model.onnx" ] || "$PY" "$EXPORT" --arch llama --set hidden_size=2048 --set intermediate_size=5632 \
      --set num_hidden_layers=22 --set num_attention_heads=32 --set num_key_value_heads=4 --set head_dim=64 \
      --set vocab_size=32000 --set max_position_embeddings=2048 --seed 3 --no-check --out "$WORK/llama1b"
  LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    "$GENC" compile "$WORK/llama1b/model.onnx" -o "$PLAN" --dtype f16 --max-batch 64 --max-beams 1 --max-length 768 --quiet
fi

# 4. The benchmark: 64 streaming clients against genrun's sorted batch mode;
#    with --soak instead, tests/soak/serve_soak.py's 10,000 requests through
#    one server on this plan (memory flat, no slot left).
if [ "${1:-}" = "--soak" ]; then
  shift
  exec "$PY" tests/soak/serve_soak.py "$GENRUN" "$PLAN" --device cuda "$@"
fi
exec "$PY" bench/serve_bench.py "$PLAN" --genrun "$GENRUN" --device cuda --clients 64 \
     --requests 1024 "$@"
