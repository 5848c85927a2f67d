"""Mutates a small GGUF file many times (random bytes of its header and
metadata changed, the file cut short at random places) and converts each with
tools/gguf_to_onnx.py in this process: every one must convert or fail with
the converter's one-line error (ConvertError); any other exception is a bug,
printed with its traceback.

  gguf_fuzz.py GOOD.gguf TMPDIR RUNS [SEED]
"""
import os
import random
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gguf_to_onnx  # noqa: E402
from gguf_weights import ConvertError  # noqa: E402


def main():
    good, tmp, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 48)
    data = open(good, "rb").read()
    header = min(len(data), 8192)  # the header, the metadata and the tensor infos
    outcomes = {"converted": 0, "refused": 0}
    bugs = 0
    for run in range(runs):
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
            gguf_to_onnx.convert(path, os.path.join(tmp, "out"))
            outcomes["converted"] += 1
        except ConvertError:
            outcomes["refused"] += 1
        except Exception:
            bugs += 1
            print(f"run {run}: not a one-line error:\n{traceback.format_exc()}")
        os.remove(path)
    print(f"{runs} mutated files: {outcomes['converted']} converted, {outcomes['refused']} refused with one line, "
          f"{bugs} other errors: " + ("ok" if bugs == 0 else "FAIL"))
    return 0 if bugs == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
