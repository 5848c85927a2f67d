#!/usr/bin/env bash
# compute-sanitizer's racecheck over the step kernel of the Llama fixture
# (f16, 4 rows), compiled with source lines (GENC_NVRTC_LINEINFO=1): each
# hazard's accesses with the line of genc's CUDA source they name. First
# the same tool over bench/racecheck_named_barrier.cu, the step kernel's
# barrier pattern without a race: what racecheck reports there is its own
# reading of a named barrier with a thread count.
# On the GPU machine, after tools/pack.sh: bash bench/racecheck_step.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.."
. tools/packed.sh
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
flags=(--dtype f16 --gpu-arch sm_90 --max-batch 4 --max-beams 1 --max-length 48)
GENC_NVRTC_LINEINFO=1 GENC_KERNEL_CACHE=off "$BIN/genc" compile tests/fixtures/llama/model.onnx -o "$OUT/race.plan" "${flags[@]}" > /dev/null || exit 1
"$BIN/genc" compile tests/fixtures/llama/model.onnx --emit=cuda -o "$OUT/race.cu" "${flags[@]}" || exit 1
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -arch=sm_90 -o "$OUT/named_barrier" bench/racecheck_named_barrier.cu &&
  "$cs" --tool racecheck "$OUT/named_barrier" > "$OUT/named_barrier.log" 2>&1
echo "racecheck over bench/racecheck_named_barrier.cu: exit $?, $(grep -m1 "named barriers:" "$OUT/named_barrier.log"); $(grep -m1 "RACECHECK SUMMARY" "$OUT/named_barrier.log")"
printf '{"input_ids": [5, 6, 7]}\n{"input_ids": [9, 4]}\n{"input_ids": [11]}\n{"input_ids": [12, 13, 14, 15]}\n' > "$OUT/race.jsonl"
GENC_CUDA_STEP=1 "$cs" --tool racecheck --error-exitcode 99 "$BIN/genrun" "$OUT/race.plan" --device cuda \
  --input "$OUT/race.jsonl" --max-new-tokens 4 > "$OUT/racecheck.log" 2>&1
echo "racecheck exit $?: $(grep -m1 "RACECHECK SUMMARY" "$OUT/racecheck.log")"
# the lines named, each with its count and source
python3 - "$OUT/racecheck.log" "$OUT/race.cu" <<'PY'
import collections, re, sys
log = open(sys.argv[1], errors="replace").read()
# genc --emit=cuda heads each kernel with a banner line that the source
# NVRTC compiled lacks: without them, the lines are the compiled source's
src = [l for l in open(sys.argv[2]).read().split("\n") if not re.match(r"// ==== kernel .* ====$", l)]
seen = collections.Counter()
for m in re.finditer(r"(Write|Read) access at (\S+)(?: in (.*?):(\d+))?(?: \[(\d+) hazards\])?\s*$", log, re.M):
    seen[(m.group(1), m.group(2) if not m.group(4) else "", int(m.group(4) or 0))] += int(m.group(5) or 1)
for (kind, at, line), n in seen.most_common(24):
    text = src[line - 1].strip()[:140] if 0 < line <= len(src) else at
    print(f"{n:5d} {kind:5s} {line:6d}: {text}")
PY
# The first hazards one by one, with the threads (block, thread) of both
# accesses: which warps race says which barrier they did not share.
GENC_CUDA_STEP=1 "$cs" --tool racecheck --racecheck-report hazard --print-limit 40 "$BIN/genrun" "$OUT/race.plan" \
  --device cuda --input "$OUT/race.jsonl" --max-new-tokens 4 > "$OUT/hazards.log" 2>&1
python3 - "$OUT/hazards.log" "$OUT/race.cu" <<'PY'
import re, sys
# genc --emit=cuda heads each kernel with a banner line that the source
# NVRTC compiled lacks: without them, the lines are the compiled source's
src = [l for l in open(sys.argv[2]).read().split("\n") if not re.match(r"// ==== kernel .* ====$", l)]
out = []
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"(Read|Write) Thread \((\d+), ?(\d+), ?(\d+)\) at .*?:(\d+)", line)
    if "hazard detected" in line:
        out.append(line.strip()[:120])
    elif m:
        t, ln = int(m.group(2)), int(m.group(5))
        text = src[ln - 1].strip()[:90] if 0 < ln <= len(src) else "?"
        out.append(f"   {m.group(1):5s} thread {t:3d} (warp {t // 32}) line {ln}: {text}")
print("\n".join(out[:45]) if out else "no hazard lines; log tail:\n" + "".join(open(sys.argv[1], errors="replace").readlines()[-15:]))
PY
