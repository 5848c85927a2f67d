#!/usr/bin/env python3
"""Checks a `genrun --stream` output against the same run without --stream:
  check_stream.py STREAM.jsonl PLAIN.jsonl [--beam] [--text] [--early]

- each prompt's "done" line carries exactly the plain output's line, and is
  its prompt's last event;
- greedy / sampling: the "token" events of each sequence are its output_ids,
  the last one before the sequence's "sequence" event; with --text their
  pieces concatenate to the sequence's text;
- beam (--beam): no token events (they are not final); one "sequence" event
  per returned hypothesis, in rank order, equal to the final one;
- --early: some prompt is done before another prompt's tokens or
  sequences are (the stream does not wait for the batch).
Prints one summary line; exits non-zero naming the first difference."""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("stream")
ap.add_argument("plain")
ap.add_argument("--beam", action="store_true")
ap.add_argument("--text", action="store_true")
ap.add_argument("--early", action="store_true")
args = ap.parse_args()


def fail(msg):
    sys.exit("check_stream: " + msg)


# Reading as strict UTF-8 also proves no piece split a character.
events = [json.loads(l) for l in open(args.stream, encoding="utf-8") if l.strip()]
plain = [json.loads(l) for l in open(args.plain, encoding="utf-8") if l.strip()]

done = {}
tokens = {}  # (prompt, seq) -> [ids], [pieces]
seq_events = {}
for n, ev in enumerate(events):
    kind, p = ev["event"], ev["prompt"]
    if p in done:
        fail("event %d (%s) for prompt %d after its done line" % (n, kind, p))
    if kind == "token":
        key = (p, ev["sequence"])
        if key in seq_events:
            fail("token after sequence %s ended" % (key,))
        if args.text != ("text" in ev):
            fail("token event %d: text %s expected" % (n, "is" if args.text else "not"))
        ids, pieces = tokens.setdefault(key, ([], []))
        ids.append(ev["token_id"])
        pieces.append(ev.get("text", ""))
    elif kind == "sequence":
        key = (p, ev["sequence"])
        if key in seq_events:
            fail("sequence %s reported twice" % (key,))
        seq_events[key] = {k: v for k, v in ev.items() if k not in ("event", "prompt", "sequence")}
    elif kind == "done":
        if set(ev) != {"event", "prompt", "sequences"}:
            fail("done line members: %s" % sorted(ev))
        done[p] = n
    else:
        fail("unknown event %r" % kind)

if sorted(done) != list(range(len(plain))):
    fail("done lines for prompts %s, expected 0..%d" % (sorted(done), len(plain) - 1))
for p, line in enumerate(plain):
    got = {"sequences": events[done[p]]["sequences"]}
    if got != line:
        fail("prompt %d: done line %s differs from the plain output %s" % (p, got, line))
    for s, seq in enumerate(line["sequences"]):
        if seq_events.get((p, s)) != seq:
            fail("prompt %d sequence %d: event %s, final %s" % (p, s, seq_events.get((p, s)), seq))
        if args.beam:
            continue
        ids, pieces = tokens.get((p, s), ([], []))
        if ids != seq["output_ids"]:
            fail("prompt %d sequence %d: streamed ids %s, final %s" % (p, s, ids, seq["output_ids"]))
        if args.text and "".join(pieces) != seq["text"]:
            fail("prompt %d sequence %d: pieces %r join to %r, final text %r" % (p, s, pieces, "".join(pieces), seq["text"]))
if args.beam and tokens:
    fail("beam search streamed token events")
if len(seq_events) != sum(len(l["sequences"]) for l in plain):
    fail("%d sequence events for %d sequences" % (len(seq_events), sum(len(l["sequences"]) for l in plain)))
if args.early and not any(ev["event"] != "done" for p in done for ev in events[done[p] + 1:]):
    fail("every prompt was done only at the end: nothing streamed early")
print("%d prompts, %d token events, %d sequence events: the stream is the output"
      % (len(plain), sum(len(v[0]) for v in tokens.values()), len(seq_events)))
