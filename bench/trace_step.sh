#!/usr/bin/env bash
# Where one replayed decode step's time goes, kernel by kernel, inside the CUDA
# graph (dependent-launch overlap included, unlike bench/ncu_step.sh's kernels
# alone), on the GPU machine (after tools/pack.sh here, which builds
# dist/trace/, bench/kernel_trace.cpp's CUPTI injection library), on
# bench/profile_model.sh's Llama at batch 1: each kernel is charged the time it
# moves the step's end (its end minus the latest end before it), summed per
# kernel kind over the layers; then one layer in order. The traced step's
# total is printed beside the untraced genrun's, to show what tracing costs.
#
#   LAYERS=22 bash bench/trace_step.sh          # there, from the repo root
set -u
cd "$(dirname "$0")/.."
LIB=$PWD/dist/trace/libgenc_trace.so
[ -f "$LIB" ] || { echo "trace_step: no $LIB (tools/pack.sh builds it where CUPTI is)"; exit 1; }
. bench/profile_model.sh
echo "untraced: $(decode_ms "$W/p.jsonl") ms/token"
CUDA_INJECTION64_PATH=$LIB GENC_TRACE_OUT=$W/k.csv "$BIN/genrun" "$W/m.plan" --device cuda --input "$W/p.jsonl" \
  --max-new-tokens 16 --output /dev/null > "$W/trace.log" 2>&1 || { tail -5 "$W/trace.log"; exit 1; }
python3 - "$W/k.csv" <<'PY'
import re, sys
rows = sorted((int(a), int(b), n) for a, b, n in (l.rstrip("\n").split(",", 2) for l in open(sys.argv[1]) if l.strip()))
greedy = [i for i, r in enumerate(rows) if "greedy" in r[2]]
if len(greedy) < 6:
    sys.exit(f"trace_step: {len(rows)} kernels, {len(greedy)} token choices: too few steps")
def kind(name):
    # one name for every layer's copy of a kernel: digits out
    return re.sub(r"\d+", "#", name)[:58]
# The last 4 whole steps (greedy to greedy), each charged per kernel kind.
steps = []
for a, b in zip(greedy[-5:-1], greedy[-4:]):
    per, first = {}, rows[a + 1][0]
    prev_end = rows[a][1]
    for r in rows[a + 1:b + 1]:
        per.setdefault(kind(r[2]), [0, 0.0, 0.0])
        e = per[kind(r[2])]
        e[0] += 1
        e[1] += (r[1] - r[0]) / 1e3          # its own duration, µs
        e[2] += (max(r[1], prev_end) - prev_end) / 1e3  # what it adds to the step
        prev_end = max(prev_end, r[1])
    steps.append((per, (rows[b][1] - rows[a][1]) / 1e3, (first - rows[a][1]) / 1e3))
per0 = steps[-1][0]
print(f"{'kernel kind (one step, summed over layers)':58} {'n':>4} {'own µs':>9} {'adds µs':>9}")
for k in sorted(per0, key=lambda k: -sum(s[0].get(k, [0, 0, 0])[2] for s in steps)):
    n = per0[k][0]
    own = sum(s[0].get(k, [0, 0, 0])[1] for s in steps) / len(steps)
    add = sum(s[0].get(k, [0, 0, 0])[2] for s in steps) / len(steps)
    print(f"{k:58} {n:4d} {own:9.1f} {add:9.1f}")
# One layer in order (the step's second one): start offset, own, adds.
a, b = greedy[-2], greedy[-1]
attn = [i for i in range(a + 1, b) if "decode" in rows[i][2]]
if len(attn) >= 3:
    lo, hi = attn[1] - 2, attn[2] - 2
    print("one layer in order: start (µs after the previous kernel's start), own µs, adds µs")
    end = max(r[1] for r in rows[a:lo])  # the latest end before the layer
    for i in range(lo, hi):
        print(f"  {rows[i][2][:50]:50} {(rows[i][0] - rows[i - 1][0]) / 1e3:7.2f} {(rows[i][1] - rows[i][0]) / 1e3:7.2f}"
              f" {(max(rows[i][1], end) - end) / 1e3:7.2f}")
        end = max(end, rows[i][1])
print(f"step (greedy end to greedy end), µs: {' '.join(f'{s[1]:.1f}' for s in steps)}")
print(f"gap before the step's first kernel, µs: {' '.join(f'{s[2]:.1f}' for s in steps)}")
PY
