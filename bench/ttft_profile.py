#!/usr/bin/env python3
"""Where the time to the first token goes, on the GPU machine (after
tools/pack.sh here): one of beam_bench.py's workloads (random weights, f16
plan, its batch and source length, beam 4, no-repeat 3), one new token, with
GENC_CUDA_PROFILE=1 (device time per program and step kind, events around
each step) and without it (the wall-clock time to the first token), with the
tensor-core prefill kernel and without it (GENC_CUDA_PREFILL=0).

usage (there):
  python3 bench/ttft_profile.py [--models bart,t5,gpt2] [--work DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import beam_bench  # noqa: E402  (its workloads and export)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="bart,t5")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bindir = beam_bench.bench.unpack_tools(root)
    env = beam_bench.bench.cuda_env()
    work = args.work or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    for name in args.models.split(","):
        w = beam_bench.WORKLOADS[name]
        d = os.path.join(work, name)
        if not beam_bench.export(root, d, w["export"]):
            continue
        plan = os.path.join(work, name + ".plan")
        if not os.path.exists(plan) and not beam_bench.compile_plan(bindir, env, d, w, w["batch"], plan,
                                                                     f"genc {name}"):
            continue
        cfg = json.load(open(os.path.join(d, "config.json")))
        prompts = os.path.join(work, name + ".jsonl")
        with open(prompts, "w") as f:
            for b in range(w["batch"]):
                f.write(json.dumps({"input_ids": [3 + (b * 7919 + i * 104729) % (cfg["vocab_size"] - 3)
                                                  for i in range(w["source"])]}) + "\n")
        for label, extra in (("prefill kernel", {}), ("attend kernel", {"GENC_CUDA_PREFILL": "0"})):
            for prof in ("0", "1"):
                r = subprocess.run([os.path.join(bindir, "genrun"), plan, "--device", "cuda", "--input", prompts,
                                    "--num-beams", str(beam_bench.BEAMS), "--no-repeat-ngram-size",
                                    str(beam_bench.NGRAM), "--max-new-tokens", "2", "--stats", "--output",
                                    os.devnull], capture_output=True, text=True,
                                   env=dict(env, GENC_CUDA_PROFILE=prof, **extra))
                if r.returncode:
                    print(f"{name} {label}: genrun failed: {r.stderr[-600:]}")
                    continue
                m = re.search(r"time to first token ([0-9.]+) ms", r.stderr)
                if prof == "0":
                    print(f"{name} b{w['batch']} x {w['source']} {label}: time to first token "
                          f"{m.group(1) if m else '?'} ms (wall, no profiling)")
                else:
                    for line in r.stderr.splitlines():
                        if "profile:" in line and ("encode" in line or "prefill" in line):
                            print(f"  {label}: {line.split('profile:')[1].strip()}")


if __name__ == "__main__":
    main()
