"""--stats-json figures must equal what genrun allocates for the same plan.

usage: check_stats.py STATS_JSON GENRUN_STDERR_FILE
"""
import json
import re
import sys

stats = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
m = re.search(r"memory (\d+) bytes", text)
if not m:
    sys.exit("check_stats: genrun printed no memory figure")
cross = stats.get("cross_kv_cache_bytes", 0)
planned = stats["weights_bytes"] + stats["kv_cache_bytes"] + cross + stats["arena_bytes"]
print(f"planned {planned} = weights {stats['weights_bytes']} + kv cache {stats['kv_cache_bytes']} "
      f"+ cross kv cache {cross} + arena {stats['arena_bytes']}; genrun holds {m.group(1)}")
sys.exit(0 if planned == int(m.group(1)) else 1)
