"""Checks runtime/Env.h's table against the sources: check_env_variables.py SRC_DIR HELP_ENV_OUTPUT.

Every GENC_* variable the C++ sources name in quotes (the names they read)
is in the table `genrun --help-env` printed; every name in the table is read
somewhere; the table is in name order; nothing but bench/kernel_trace.cpp
(a CUPTI library built on its own, without the runtime) calls getenv on a
GENC_* name itself. Prints what is off and exits 1, else prints a count."""
import os
import re
import sys

src, help_file = sys.argv[1], sys.argv[2]
table = [l.split()[0] for l in open(help_file) if l.startswith("GENC_")]
read, problems = set(), []
for top in ("compiler", "passes", "codegen", "driver", "runtime", "tools", "bench", "tests/gpu", "python/src"):
    for dirpath, _, files in os.walk(os.path.join(src, top)):
        for f in files:
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)
            text = open(path, encoding="utf-8", errors="replace").read()
            if rel == os.path.join("runtime", "Env.cpp"):
                continue
            read.update(re.findall(r'"(GENC_[A-Z0-9_]+)"', text))
            if re.search(r'getenv\(\s*"GENC_', text) and rel != os.path.join("bench", "kernel_trace.cpp"):
                problems.append(f"{rel}: reads a GENC_* variable with getenv, not genrt::env::get")
for name in sorted(read - set(table)):
    problems.append(f"{name} is read but not in runtime/Env.cpp's table")
for name in sorted(set(table) - read):
    problems.append(f"{name} is in runtime/Env.cpp's table but nothing reads it")
if table != sorted(table):
    problems.append("runtime/Env.cpp's table is not in name order")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{len(table)} variables, each read and listed")
