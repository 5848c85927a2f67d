"""with_ids.py OUT.jsonl all|first FLAG GENRUN ARGS...: runs genrun with FLAG
set to a JSON list of the token ids of OUT.jsonl's first sequence (all of
them, or the first one); lit's shell has no command substitution."""
import json
import subprocess
import sys

out, which, flag = sys.argv[1:4]
ids = json.loads(open(out).readline())["sequences"][0]["output_ids"]
value = sorted(set(ids)) if which == "all" else ids[:1]
sys.exit(subprocess.call(sys.argv[4:] + [flag, json.dumps(value)]))
