set -u
BIN=$(mktemp -d); tar -xzf dist/genc-linux-x86_64.tar.gz -C $BIN; export LD_LIBRARY_PATH=/usr/local/cuda/lib64
W=$(mktemp -d)
python3 tools/export.py --arch llama --set hidden_size=2048 --set intermediate_size=5632 --set num_hidden_layers=4 --set num_attention_heads=32 --set num_key_value_heads=4 --set head_dim=64 --set vocab_size=32000 --set max_position_embeddings=2048 --seed 3 --no-check --out $W/m > /dev/null 2>&1
$BIN/genc compile $W/m/model.onnx -o $W/m.plan --dtype f16 --max-batch 32 --max-beams 1 --max-length 256 > /dev/null
python3 -c "import json,random; random.seed(1); print(json.dumps({'input_ids':[random.randrange(3,32000) for _ in range(128)]}))" > $W/p.jsonl
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
