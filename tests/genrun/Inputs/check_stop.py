"""Each stopped row (stop-strings.test) must be the plain row cut after the
first token whose text completes the stop string: the string is in the
row's text and not in the text of the row one token shorter (decoded with
Hugging Face `tokenizers`).

  check_stop.py TOKENIZER.json PLAIN.jsonl (STOPPED.jsonl STRING)...
"""
import json
import sys

from tokenizers import Tokenizer

tok = Tokenizer.from_file(sys.argv[1])
plain = json.loads(open(sys.argv[2]).readline())["sequences"][0]["output_ids"]
args = sys.argv[3:]
for path, s in zip(args[0::2], args[1::2]):
    ids = json.loads(open(path).readline())["sequences"][0]["output_ids"]
    n = len(ids)
    ok = ids == plain[:n] and s in tok.decode(ids) and s not in tok.decode(ids[:-1])
    print("%r: cut after token %d of %d: %s" % (s, n, len(plain), "ok" if ok else "FAIL"))
