"""Numeric lit tests for `genc eval`: inputs and the numpy reference live in
the test file itself, as Python lines after `// GEN:` and `// REF:`.

  npy_test.py gen TEST PREFIX          run the GEN lines; write every array they
                                       define to PREFIX.NAME.npy
  npy_test.py check TEST PREFIX OUTDIR run GEN (again, same seed) then REF; every
                                       array REF defines must equal OUTDIR/NAME.npy

GEN/REF lines (after `//` or `#`) see `np` and `rng` (np.random.default_rng(0), fresh per run),
and `initializer(NAME)`: an initializer of the test's ONNX text written on
one line with raw_data, as a numpy array.
Floats pass when max|diff| <= tol (`// TOL: 1e-5`, default 1e-6) with NaNs in
the same places; integers and bools must match exactly. One line per output:
  NAME: float32 (2, 3) max|diff| = 1.19e-07
"""
import os
import re
import sys

import warnings

import numpy as np


def blocks(test, tag):
    lines = []
    with open(test) as f:
        for line in f:
            m = re.match(r"\s*(?://|#)\s*" + tag + r":\s?(.*)$", line)
            if m:
                lines.append(m.group(1).rstrip())
    return "\n".join(lines)


def arrays(ns, exclude=()):
    return {k: np.asarray(v) for k, v in ns.items()
            if not k.startswith("_") and k not in exclude and isinstance(v, (np.ndarray, np.generic))}


ONNX_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64}


def initializers(test):
    import codecs
    found = {}
    with open(test) as f:
        for line in f:
            if not line.lstrip().startswith("initializer {") or "raw_data:" not in line:
                continue
            name = re.search(r'name: "([^"]*)"', line).group(1)
            dims = [int(d) for d in re.findall(r"dims: (\d+)", line)]
            dtype = ONNX_DTYPES[int(re.search(r"data_type: (\d+)", line).group(1))]
            data = codecs.escape_decode(re.search(r'raw_data: "((?:[^"\\]|\\.)*)"', line).group(1))[0]
            found[name] = np.frombuffer(data, dtype=dtype).reshape(dims)
    return found


def run_gen(test):
    inits = initializers(test)
    ns = {"np": np, "rng": np.random.default_rng(0), "initializer": lambda name: inits[name].copy()}
    exec(compile(blocks(test, "GEN"), test + ":GEN", "exec"), ns)
    return ns


def kind(a):
    if a.dtype == np.bool_:
        return "bool"
    if np.issubdtype(a.dtype, np.floating):
        return "float"
    return "int"


def main():
    warnings.simplefilter("ignore")  # overflow in reference casts is often the point
    mode, test, prefix = sys.argv[1:4]
    ns = run_gen(test)
    inputs = arrays(ns)
    if mode == "gen":
        for name, a in inputs.items():
            np.save(f"{prefix}.{name}.npy", a)
        return 0
    outdir = sys.argv[4]
    tol_text = blocks(test, "TOL").strip()
    tol = float(tol_text) if tol_text else 1e-6
    exec(compile(blocks(test, "REF"), test + ":REF", "exec"), ns)
    refs = arrays(ns, exclude=set(inputs) | {"np", "rng", "initializer"})
    ok = True
    got_files = {f[:-4] for f in os.listdir(outdir) if f.endswith(".npy")}
    for name in sorted(got_files - set(refs)):
        print(f"{name}: FAIL: genc wrote it but REF defines no '{name}'")
        ok = False
    for name, ref in sorted(refs.items()):
        path = os.path.join(outdir, name + ".npy")
        if not os.path.exists(path):
            print(f"{name}: FAIL: genc wrote no {name}.npy")
            ok = False
            continue
        got = np.load(path)
        head = f"{name}: {got.dtype.name} {tuple(got.shape)}"
        if got.shape != ref.shape or kind(got) != kind(ref):
            print(f"{head} FAIL: expected {ref.dtype.name} {tuple(ref.shape)}")
            ok = False
            continue
        if kind(ref) != "float":
            bad = int(np.sum(got != ref))
            print(f"{head} mismatches = {bad}")
            ok &= bad == 0
            continue
        g, r = got.astype(np.float64), ref.astype(np.float64)
        if not np.array_equal(np.isnan(g), np.isnan(r)):
            print(f"{head} FAIL: NaNs differ")
            ok = False
            continue
        finite = ~np.isnan(r)
        same_inf = np.isinf(r) & (g == r)
        diff = np.where(same_inf | ~finite, 0.0, np.abs(g - r))
        mx = float(diff.max()) if diff.size else 0.0
        print(f"{head} max|diff| = {mx:.3g}" + ("" if mx <= tol else f" FAIL (tol {tol:g})"))
        ok &= mx <= tol
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
