"""The soak test behind tests/soak/soak.sh: many prompts of random lengths and
options through genrun, every output checked, resident memory watched.

  soak.py GENRUN PLAN WORKDIR [--prompts N] [--batch N] [--seed N]

1. Options: the prompts in batches, each batch one genrun run with random
   options (greedy, beam search, sampling; penalties, n-gram blocking, min
   and max new tokens, several returned sequences, batch sizes, eos ids),
   run twice: plainly and with --stream. Every input has its output line,
   valid, with the sequences the options ask for; and the plain line n is
   the stream's "done" event for prompt n (the events name their prompt, so
   this proves the plain output in order), one done event per prompt.
2. Memory: all prompts through one genrun --stream process per search kind
   (beam search, sampling), its VmRSS read each 1,000 prompts done; after
   the first 1,000 it must stay within 5% of its value there.
Prints the figures docs/reliability.md quotes; exit status 1 on any failure.
"""
import argparse
import json
import random
import subprocess
import sys
import time

# One CPU thread: the soak checks output and memory, not speed, and the
# thread pool's hand-offs cost more than the tiny model's work on a busy
# machine.
THREADS = "1"
WORDS = ["Permission", "is", "hereby", "granted", "free", "of", "charge", "to", "any", "person", "the", "Software",
         "é", "日本語", "🙂", "\t", "123", "--", "\"quoted\""]


def make_prompts(rng, n, vocab):
    out = []
    for _ in range(n):
        if rng.random() < 0.25:
            out.append({"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))})
        else:
            length = rng.randint(1, 40)
            ids = [rng.randrange(vocab) for _ in range(length)]
            p = {"input_ids": ids}
            if rng.random() < 0.2 and length > 1:  # left padding, as HF batches it
                pad = rng.randint(1, length - 1)
                p["attention_mask"] = [0] * pad + [1] * (length - pad)
            out.append(p)
    return out


def random_options(rng):
    """genrun flags and what they promise: (args, sequences per prompt, max new tokens)."""
    max_new = rng.randint(1, 16)
    args = ["--max-new-tokens", str(max_new)]
    kind = rng.choice(["greedy", "beam", "sample"])
    n = 1
    if kind == "beam":
        beams = rng.randint(2, 4)
        n = rng.randint(1, beams)
        args += ["--num-beams", str(beams), "--num-return-sequences", str(n),
                 "--length-penalty", str(rng.choice([0.5, 1.0, 2.0])),
                 "--early-stopping", rng.choice(["true", "false", "never"])]
    elif kind == "sample":
        n = rng.randint(1, 2)
        args += ["--do-sample", "--num-return-sequences", str(n), "--seed", str(rng.randrange(1 << 30)),
                 "--temperature", str(rng.choice([0.5, 1.0, 1.5])), "--top-k", str(rng.choice([0, 5, 50])),
                 "--top-p", str(rng.choice([0.5, 0.9, 1.0])), "--min-p", str(rng.choice([0.0, 0.05]))]
    if rng.random() < 0.5:
        args += ["--repetition-penalty", str(rng.choice([0.8, 1.2, 1.5]))]
    if rng.random() < 0.4:
        args += ["--no-repeat-ngram-size", str(rng.randint(1, 3))]
    if rng.random() < 0.3:
        args += ["--min-new-tokens", str(rng.randint(0, max_new))]
    if rng.random() < 0.3:
        args += ["--eos-token-id", str(rng.randrange(1000))]
    if rng.random() < 0.3:
        args += ["--batch-size", "1"]
    return args, n, max_new, kind


def check_line(line, n, max_new, where):
    r = json.loads(line)
    seqs = r["sequences"]
    if len(seqs) != n:
        raise AssertionError("%s: %d sequences, expected %d" % (where, len(seqs), n))
    for s in seqs:
        if not (1 <= len(s["output_ids"]) <= max_new) or not isinstance(s["score"], float):
            raise AssertionError("%s: bad sequence %r" % (where, s))
        if "text" not in s:
            raise AssertionError("%s: no text (the plan carries a tokenizer)" % where)
    return seqs


def run(cmd, stdin_text):
    r = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("%s failed (exit %d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout


def options_phase(genrun, plan, prompts, batch, rng):
    runs = lines = 0
    kinds = {}
    for first in range(0, len(prompts), batch):
        chunk = prompts[first:first + batch]
        text = "".join(json.dumps(p) + "\n" for p in chunk)
        args, n, max_new, kind = random_options(rng)
        kinds[kind] = kinds.get(kind, 0) + 1
        base = [genrun, plan, "--device", "cpu", "--threads", THREADS] + args
        where = "batch at prompt %d (%s)" % (first, " ".join(args))
        # split("\n"), not splitlines(): JSON may hold U+2028 and friends raw.
        plain = run(base, text).split("\n")[:-1]
        stream = [json.loads(l) for l in run(base + ["--stream"], text).split("\n") if l]
        if len(plain) != len(chunk):
            raise AssertionError("%s: %d output lines for %d prompts" % (where, len(plain), len(chunk)))
        # A prompt's done event comes when it finishes (not in prompt order:
        # batches refill); each names its prompt, once.
        done = {}
        for e in stream:
            if e["event"] == "done":
                if e["prompt"] in done:
                    raise AssertionError("%s: two done events for prompt %d" % (where, e["prompt"]))
                done[e["prompt"]] = e
        if sorted(done) != list(range(len(chunk))):
            raise AssertionError("%s: done events for %d of %d prompts" % (where, len(done), len(chunk)))
        for i, line in enumerate(plain):
            seqs = check_line(line, n, max_new, "%s, line %d" % (where, i + 1))
            if seqs != done[i]["sequences"]:
                raise AssertionError("%s, line %d: differs from the stream's prompt %d" % (where, i + 1, i))
        runs += 2
        lines += len(plain)
    return runs, lines, kinds


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return 0


def memory_phase(genrun, plan, prompts, workdir, args, label):
    path = "%s/soak-%s.jsonl" % (workdir, label)
    with open(path, "w") as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")
    p = subprocess.Popen([genrun, plan, "--device", "cpu", "--threads", THREADS, "--input", path, "--stream"] + args,
                         stdout=subprocess.PIPE, text=True)
    samples = []  # (prompts done, VmRSS KiB)
    seen = set()
    done = 0
    for line in p.stdout:
        e = json.loads(line)
        if e["event"] == "done":
            if e["prompt"] in seen:
                raise AssertionError("%s: two done events for prompt %d" % (label, e["prompt"]))
            seen.add(e["prompt"])
            done += 1
            if done % 1000 == 0 and done < len(prompts):  # not at the end: teardown frees
                samples.append((done, rss_kib(p.pid)))
    if p.wait() != 0:
        raise AssertionError("%s: genrun failed (exit %d)" % (label, p.returncode))
    if done != len(prompts):
        raise AssertionError("%s: %d prompts done of %d" % (label, done, len(prompts)))
    base = samples[0][1]
    later = [r for _, r in samples[1:]]
    drift = (max(later) - base) / base * 100 if later else 0.0
    ok = all(abs(r - base) <= 0.05 * base for r in later)
    return samples, drift, ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("genrun")
    ap.add_argument("plan")
    ap.add_argument("workdir")
    ap.add_argument("--prompts", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    prompts = make_prompts(rng, a.prompts, 1000)
    t0 = time.time()
    try:
        runs, lines, kinds = options_phase(a.genrun, a.plan, prompts, a.batch, rng)
    except AssertionError as e:
        print("soak: FAIL: %s" % e)
        return 1
    print("soak: options: %d prompts, %d genrun runs (batches of %d, plain and --stream; %s), %d output lines "
          "checked, all present, valid and in order, %.1f s"
          % (len(prompts), runs, a.batch, ", ".join("%s %d" % kv for kv in sorted(kinds.items())), lines,
             time.time() - t0))
    failed = False
    for label, args in (("beam", ["--num-beams", "4", "--num-return-sequences", "2", "--no-repeat-ngram-size", "3",
                                  "--repetition-penalty", "1.2", "--max-new-tokens", "12"]),
                        ("sample", ["--do-sample", "--top-k", "20", "--top-p", "0.9", "--seed", "5",
                                    "--max-new-tokens", "12"])):
        t0 = time.time()
        try:
            samples, drift, ok = memory_phase(a.genrun, a.plan, prompts, a.workdir, args, label)
        except AssertionError as e:
            print("soak: FAIL: %s" % e)
            return 1
        rss = [r for _, r in samples]
        print("soak: memory (%s, one process, %d prompts, %.1f s): VmRSS at 1,000 prompts %d KiB; after it "
              "min %d, max %d KiB (%+.2f%%): %s"
              % (label, len(prompts), time.time() - t0, rss[0], min(rss[1:] or rss), max(rss[1:] or rss), drift,
                 "flat within 5%" if ok else "NOT flat"))
        print("soak:   VmRSS KiB every 1,000 prompts: %s" % " ".join(str(r) for r in rss))
        failed = failed or not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
