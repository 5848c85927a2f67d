"""Mutates a small GGUF file many times (random bytes of its header and
metadata changed, the file cut short at random places) and converts each with
tools/gguf_to_onnx.py in this process: every one must convert or fail with
the converter's one-line error (ConvertError); any other exception is a bug,
printed with its traceback. So is an input that takes more than 30 s or
more memory than the 4 GiB of address space the run allows itself: it is
kept like any other, where an unbounded allocation would otherwise have
the whole run killed with no input and no seed to show for it.

  gguf_fuzz.py GOOD.gguf TMPDIR RUNS [SEED]
  gguf_fuzz.py GOOD.gguf TMPDIR --seconds S [--crashes DIR] [SEED]
      (tools/fuzz.sh gguf: mutations until S seconds have passed, the seed from
      the clock unless given; each input that fails is kept in DIR)
"""
import os
import random
import resource
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gguf_to_onnx  # noqa: E402
from gguf_weights import ConvertError  # noqa: E402

INPUT_SECONDS = 30
ADDRESS_SPACE = 4 << 30


class TookTooLong(Exception):
    pass


def too_long(signum, frame):
    raise TookTooLong(f"more than {INPUT_SECONDS} s on one input")


def main():
    args = sys.argv[1:]
    seconds, crashes = None, None
    if "--crashes" in args:
        i = args.index("--crashes")
        crashes = args[i + 1]
        del args[i:i + 2]
    if "--seconds" in args:
        i = args.index("--seconds")
        seconds = float(args[i + 1])
        del args[i:i + 2]
        good, tmp = args[0], args[1]
        seed = int(args[2]) if len(args) > 2 else time.time_ns() % (1 << 31)
        runs = None
        print(f"gguf_fuzz: seed {seed}, {seconds:g} s", flush=True)
    else:
        good, tmp, runs = args[0], args[1], int(args[2])
        seed = int(args[3]) if len(args) > 3 else 48
    rng = random.Random(seed)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > ADDRESS_SPACE:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, hard))
    signal.signal(signal.SIGALRM, too_long)
    deadline = time.monotonic() + seconds if seconds is not None else None
    data = open(good, "rb").read()
    header = min(len(data), 8192)  # the header, the metadata and the tensor infos
    outcomes = {"converted": 0, "refused": 0}
    bugs = 0
    run = 0
    while (run < runs) if runs is not None else (time.monotonic() < deadline):
        d = bytearray(data)
        if rng.random() < 0.25:
            d = d[:rng.randrange(4, len(d))]
        else:
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(4, header)
                d[i] = rng.choice([0, 1, 0x7f, 0x80, 0xff, rng.randrange(256)])
        path = os.path.join(tmp, f"fuzz{run}.gguf")
        open(path, "wb").write(d)
        try:
            signal.alarm(INPUT_SECONDS)
            gguf_to_onnx.convert(path, os.path.join(tmp, "out"))
            outcomes["converted"] += 1
        except ConvertError:
            outcomes["refused"] += 1
        except Exception:
            bugs += 1
            print(f"run {run}: not a one-line error:\n{traceback.format_exc()}", flush=True)
            if crashes:
                os.makedirs(crashes, exist_ok=True)
                kept = os.path.join(crashes, f"seed{seed}-run{run}.gguf")
                open(kept, "wb").write(d)
                print(f"run {run}: the input is {kept}", flush=True)
        finally:
            signal.alarm(0)
        os.remove(path)
        run += 1
    runs = run
    print(f"{runs} mutated files: {outcomes['converted']} converted, {outcomes['refused']} refused with one line, "
          f"{bugs} other errors: " + ("ok" if bugs == 0 else "FAIL"))
    return 0 if bugs == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
