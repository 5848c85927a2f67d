"""`not CMD`: succeeds when CMD exits with a non-zero code that is not a crash.

A crash (signal, abort) fails the test: bad input must give a clean error,
never a crash. `not --crash` is not offered on purpose.
"""
import subprocess
import sys

r = subprocess.run(sys.argv[1:])
if r.returncode < 0 or r.returncode >= 128:
    sys.stderr.write(f"not: command crashed (exit {r.returncode}): {' '.join(sys.argv[1:])}\n")
    sys.exit(2)
sys.exit(0 if r.returncode != 0 else 1)
