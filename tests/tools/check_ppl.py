"""Checks tools/genppl's output lines for tests/tools/smollm2-quality.test.

  check_ppl.py near FILE NLL TOL        FILE's nll within TOL nats of NLL (@PATH: the number in PATH)
  check_ppl.py ratio BASE FILE:MAX ...  each FILE's perplexity below MAX x BASE's

(A relative 0.5% in perplexity is about 0.005 nats of nll.)
"""
import re
import sys


def read(path, what):
    text = open(path).read()
    print(text.strip())
    return float(re.search(what + r" ([0-9.]+)", text).group(1))


mode = sys.argv[1]
if mode == "near":
    arg = sys.argv[3]
    nll, tol = read(sys.argv[2], "nll"), float(sys.argv[4])
    ref = float(open(arg[1:]).read()) if arg.startswith("@") else float(arg)
    ok = abs(nll - ref) < tol
    print(f"nll differs from the reference's {ref} by {abs(nll - ref):.6f} nats: " + ("ok" if ok else "FAIL"))
else:
    base = read(sys.argv[2], "perplexity")
    ok = True
    for spec in sys.argv[3:]:
        path, limit = spec.rsplit(":", 1)
        p = read(path, "perplexity")
        good = p < float(limit) * base
        ok &= good
        print(f"{path.rsplit('/', 1)[-1]}: perplexity x{p / base:.3f} the base's (limit x{limit}): "
              + ("ok" if good else "FAIL"))
sys.exit(0 if ok else 1)
