"""Runs lit: the pip package when installed, else the copy llvm-14-tools ships."""
import sys

try:
    import lit.main
except ImportError:
    sys.path.insert(0, "/usr/lib/llvm-14/build/utils/lit")
    import lit.main

sys.argv[0] = "lit"
lit.main.main()
