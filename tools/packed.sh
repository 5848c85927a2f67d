# Sourced by the device scripts, from the repo root: the packed genc / genrun
# / gpucheck (tools/pack.sh's dist tarball) in BIN — unpacked into a fresh
# folder unless BIN already holds them — and CUDA's libraries on the
# library path.
BIN=${BIN:-$(mktemp -d)}
[ -x "$BIN/genrun" ] || { mkdir -p "$BIN" && tar -xJf dist/genc-linux-x86_64.tar.xz -C "$BIN"; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH-}
