"""Nsight Compute's warp-stall samples of one kernel, by stall reason and by
line of genc's CUDA source (a plan compiled with GENC_NVRTC_LINEINFO=1).

  python3 bench/ncu_lines.py REPORT.csv [SOURCE.cu]

REPORT.csv: `ncu --import R.ncu-rep --page source --print-source cuda,sass
--csv` (or `sass`). SOURCE.cu: `genc compile --emit=cuda` of the same plan;
its banner lines (`// ==== kernel X ====`, absent from what NVRTC compiled)
are taken out, so a line number names the compiled source's line. Prints
the columns ncu gave, the samples by reason, and the lines (or SASS
instructions) with the most samples, each with its two main reasons.
"""
import collections
import csv
import re
import sys


def num(x):
    try:
        return float(x.replace(",", ""))
    except (ValueError, AttributeError):
        return 0.0


def main():
    rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 3]
    if not rows:
        sys.exit(print("no rows in", sys.argv[1]))
    head, body = rows[0], rows[1:]
    print("columns:", " | ".join(h for h in head)[:1500])
    key = next((i for i, h in enumerate(head) if "Sampling" in h and "All" in h), None)
    if key is None:
        key = next((i for i, h in enumerate(head) if "Sampling" in h), None)
    if key is None:
        sys.exit(print("no sampling column"))
    # per-reason columns: ncu names them stall_* or "Warp Stall Sampling (...)"
    reasons = [i for i, h in enumerate(head) if re.search(r"stall", h, re.I) and i != key and "Sampling" not in h]
    src = []
    if len(sys.argv) > 2:
        src = [l for l in open(sys.argv[2]).read().split("\n") if not re.match(r"// ==== kernel .* ====$", l)]
    line_col = next((i for i, h in enumerate(head) if h.strip() in ("Line", "# Line", "Source Line")), None)
    text_col = next((i for i, h in enumerate(head) if h.strip() == "Source"), 1)
    total = sum(num(r[key]) for r in body) or 1.0
    print(f"samples: {total:.0f}")
    if reasons:
        by = collections.Counter()
        for r in body:
            for i in reasons:
                by[head[i]] += num(r[i])
        for name, v in by.most_common(14):
            print(f"  {v / total * 100:5.1f}%  {name}")
    # by source line where the report has one, else by instruction
    agg = collections.defaultdict(lambda: [0.0, collections.Counter(), ""])
    for r in body:
        k = r[line_col] if line_col is not None else r[0]
        a = agg[k]
        a[0] += num(r[key])
        for i in reasons:
            a[1][head[i]] += num(r[i])
        a[2] = a[2] or r[text_col]
    print("most sampled:" + (" (by source line)" if line_col is not None else " (by instruction)"))
    for k, (v, rs, text) in sorted(agg.items(), key=lambda kv: -kv[1][0])[:40]:
        ln = int(num(k)) if line_col is not None else 0
        shown = src[ln - 1].strip()[:100] if 0 < ln <= len(src) else text[:100]
        why = ", ".join(f"{n.replace('stall_', '')[:22]} {c / max(v, 1) * 100:.0f}%" for n, c in rs.most_common(2) if c > 0)
        print(f"{v / total * 100:5.1f}%  {k:>7} {shown}   [{why}]")


if __name__ == "__main__":
    main()
