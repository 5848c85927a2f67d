#!/usr/bin/env bash
# Per-kernel device times of a decode step with Nsight Compute, on the GPU
# machine (after tools/pack.sh here), on bench/profile_model.sh's Llama: every
# kernel of the last few launches with its grid, registers and duration; or,
# with NCU_DETAIL=REGEX (NCU_SKIP=N launches of it skipped first), one kernel's
# speed of light, warp stalls and hottest source lines.
#
#   bash bench/ncu_step.sh                               # there, from the repo root
#   NCU_DETAIL=attn_0_attend NCU_SKIP=13 bash bench/ncu_step.sh
#   NCU_BATCH=32 bash bench/ncu_step.sh                  # 32 prompts of 128 tokens (default 1)
set -u
cd "$(dirname "$0")/.."
. bench/profile_model.sh
if [ "${NCU_BATCH:-1}" != 1 ]; then
  python3 -c "
import json,random; random.seed(1)
for i in range(${NCU_BATCH}): print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(128)]}))" > "$W/p.jsonl"
fi
if [ -z "${NCU_DETAIL-}" ]; then
ncu --cache-control none --clock-control none --print-units base --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__bytes.sum --csv \
  $BIN/genrun $W/m.plan --device cuda --input $W/p.jsonl --max-new-tokens 4 --output /dev/null > $W/ncu.csv 2> $W/ncu.err
tail -3 $W/ncu.err
python3 - $W/ncu.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')))
k = {}
for r in rows:
    k.setdefault(r["ID"], {})["name"] = r["Kernel Name"][:60]
    k[r["ID"]][r["Metric Name"]] = r["Metric Value"]
ks = [k[i] for i in sorted(k, key=int)]
print(len(ks), "kernels")
# the last decode step: the last quarter of what came after the prefill
n = len(ks)
for x in ks[-40:]:
    us = float(x['gpu__time_duration.sum'].replace(',', '')) / 1e3
    mb = float(x.get('dram__bytes.sum', '0').replace(',', '') or 0) / 1e6
    print(f"{x['name']:60} grid {x.get('launch__grid_size','?'):>6} regs {x.get('launch__registers_per_thread','?'):>4} {us:8.2f} us {mb:8.2f} MB {mb / us if us else 0:6.2f} TB/s")
PY
fi
# One kernel in detail (NCU_DETAIL=regex): speed of light, warp stalls, the
# hottest source lines. With NCU_OUT=DIR the whole report goes there too, with
# its details page (every stall reason) and its SASS page (samples per
# instruction) as text, and the samples by line of genc's source
# (bench/ncu_lines.py; GENC_NVRTC_LINEINFO=1 when the plan is compiled).
if [ -n "${NCU_DETAIL-}" ]; then
  rep=${NCU_OUT:-$W}/detail
  ncu --cache-control none --clock-control none -k "regex:$NCU_DETAIL" --launch-skip "${NCU_SKIP:-12}" --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section SourceCounters \
    --section MemoryWorkloadAnalysis --import-source yes -f -o "$rep" \
    $BIN/genrun $W/m.plan --device cuda --input $W/p.jsonl --max-new-tokens 4 --output /dev/null > "$W/ncu.log" 2>&1
  ncu --import "$rep.ncu-rep" --page details --print-details all > "$rep.details.txt" 2>&1
  ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep.sass.csv" 2>&1
  # With NCU_OUT: the samples by stall reason and by line of genc's source
  # (compile with GENC_NVRTC_LINEINFO=1 for the lines), bench/ncu_lines.py
  if [ -n "${NCU_OUT-}" ]; then
    "$BIN/genc" compile "$W/m/model.onnx" --emit=cuda -o "$NCU_OUT/step.cu" "${GENC_FLAGS[@]}" > /dev/null 2>&1
    ncu --import "$rep.ncu-rep" --page source --print-source cuda,sass --csv > "$rep.lines.csv" 2>&1
    python3 bench/ncu_lines.py "$rep.lines.csv" "$NCU_OUT/step.cu" > "$NCU_OUT/lines.txt" 2>&1
    python3 bench/ncu_lines.py "$rep.sass.csv" > "$NCU_OUT/sass.txt" 2>&1
  fi
  grep -v "^==PROF==" "$rep.details.txt" | sed -n '/Section/,$p' | grep -v "^ *-\+ *-\+" | cut -c1-150 | head -120
  # the 25 SASS lines with the most stall samples
  python3 - "$rep.sass.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 3]
if not rows:
    sys.exit(print("no SASS page"))
head, body = rows[0], rows[1:]
key = next((i for i, h in enumerate(head) if "Sampling" in h and "All" in h), None)
if key is None:
    sys.exit(print("columns:", head))
def num(x):
    try: return float(x.replace(",", ""))
    except ValueError: return 0.0
tot = sum(num(r[key]) for r in body) or 1
src = next((i for i, h in enumerate(head) if h == "Source"), 1)
for r in sorted(body, key=lambda r: -num(r[key]))[:25]:
    print(f"{num(r[key]) / tot * 100:5.1f}%  {r[0]:>6} {r[src][:110]}")
PY
fi
