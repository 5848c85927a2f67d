#!/usr/bin/env bash
# Per-kernel device times of a decode step with Nsight Compute, on the device
# machine (after tools/pack.sh here), on tools/profile_model.sh's Llama: every
# kernel of the last few launches with its grid, registers and duration; or,
# with NCU_DETAIL=REGEX (NCU_SKIP=N launches of it skipped first), one kernel's
# speed of light, warp stalls and hottest source lines.
#
#   bash tools/ncu_step.sh                               # there, from the repo root
#   NCU_DETAIL=attn_0_attend NCU_SKIP=13 bash tools/ncu_step.sh
set -u
cd "$(dirname "$0")/.."
. tools/profile_model.sh
if [ -z "${NCU_DETAIL-}" ]; then
ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread --csv \
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
    print(f"{x['name']:60} grid {x.get('launch__grid_size','?'):>6} regs {x.get('launch__registers_per_thread','?'):>4} {float(x['gpu__time_duration.sum'].replace(',',''))/1e3:8.2f} us")
PY
fi
# One kernel in detail (NCU_DETAIL=regex): speed of light, warp stalls, the
# hottest source lines.
if [ -n "${NCU_DETAIL-}" ]; then
  ncu --cache-control none --clock-control none -k "regex:$NCU_DETAIL" --launch-skip "${NCU_SKIP:-12}" --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section SourceCounters \
    $BIN/genrun $W/m.plan --device cuda --input $W/p.jsonl --max-new-tokens 4 --output /dev/null 2>&1 |
    grep -v "^==PROF==" | sed -n '/Section/,$p' | grep -v "^ *-\+ *-\+" | cut -c1-150
fi
