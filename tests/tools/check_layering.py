"""Checks the layering of the sources: check_layering.py SRC_DIR.

Each top-level folder is a layer and may include only itself and the layers
below it (DESIGN.md's layering; driver/ is the compiler's top):

    runtime  <  compiler  <  passes  <  codegen  <  driver  <  tools

so nothing under compiler/ includes passes/, codegen/ or driver/, nothing
under passes/ includes codegen/ or driver/, codegen/ includes no driver/, and
runtime/ includes nothing of the compiler. Every `#include "LAYER/..."` of a
.h / .cpp / .cu / .inc file is read (includes that name no layer, such as
"llvm/..." or a generated "genc_onnx/...", are not layers). Prints each upward
include as FILE:LINE: ... and exits 1, else prints a count."""
import os
import re
import sys

# Bottom first: a layer may include those at or below its own position.
LAYERS = ["runtime", "compiler", "passes", "codegen", "driver", "tools"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/')

src = sys.argv[1]
problems, files = [], 0
for rank, layer in enumerate(LAYERS):
    for dirpath, _, names in os.walk(os.path.join(src, layer)):
        for name in sorted(names):
            if not name.endswith((".h", ".cpp", ".cu", ".inc")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            files += 1
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and m.group(1) in LAYERS and LAYERS.index(m.group(1)) > rank:
                        problems.append(f"{rel}:{n}: {layer}/ includes {m.group(1)}/, a layer above it: "
                                        f"{line.strip()}")
if files == 0:
    problems.append(f"no sources under {src}")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{files} files, no upward includes")
