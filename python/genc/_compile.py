"""genc.compile: runs the genc compiler binary shipped in the package.

A separate process rather than the compiler linked into the module: the
module stays the runtime alone (small, and what runs on a GPU machine), the
compiler's LLVM command-line state is per process (a second compile in one
process would see the first one's options), and a compiler failure cannot
take the Python process down. The cost, a process start, is nothing next to
a compile."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import List, Optional, Sequence, Union

from ._genc import Error

PathLike = Union[str, "os.PathLike[str]"]


def genc_binary() -> str:
    """The genc compiler: $GENC_BIN, else the one in this package, else genc on PATH."""
    env = os.environ.get("GENC_BIN")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "genc")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("genc")
    if found:
        return found
    raise Error("the genc compiler is not in this package (a runtime-only build?) nor on PATH; set GENC_BIN")


def compile(model: Union[PathLike, Sequence[PathLike]], plan: PathLike, *, max_batch: Optional[int] = None,
            max_beams: Optional[int] = None, max_length: Optional[int] = None, max_tokens: Optional[int] = None,
            max_source_length: Optional[int] = None, max_new_tokens: Optional[int] = None,
            dtype: Optional[str] = None, cross_kv_dtype: Optional[str] = None, weights: Optional[str] = None,
            group_size: Optional[int] = None, quantize_lm_head: bool = False, weights_zero_point: bool = False,
            gpu_arch: Optional[Union[str, Sequence[str]]] = None,
            profile: Optional[PathLike] = None, tokenizer: bool = True, stats_json: Optional[PathLike] = None,
            progress: Optional[bool] = None, extra_args: Sequence[str] = ()) -> str:
    """`genc compile MODEL -o PLAN [options]`; returns the plan's path.

    model: an .onnx file, an export folder (model.onnx, or encoder + decoder,
    with config.json and tokenizer.json beside), or [encoder, decoder].
    max_source_length: an encoder-decoder's tokens per source (max_length
    then counts the decoder's tokens, as in Hugging Face; default max_length).
    max_new_tokens: what each beam generates at most; the beams of a prompt
    then share its K/V (default: a whole copy a beam).
    dtype: "f32" (default), "f16" or "bf16". cross_kv_dtype: "i8" holds an
    encoder-decoder's cross-attention cache as 8-bit rows with a scale each
    (docs/genc.md). weights: "int8" or "int4" stores the linear layers'
    weights as 8/4-bit blocks (group_size codes a scale along K, default 32;
    quantize_lm_head: the vocabulary projection too; weights_zero_point: a
    zero point a group; docs/quantization.md). gpu_arch: "sm_80,sm_90" or a
    list ([] for a CPU-only plan). tokenizer=False leaves the tokenizer out.
    progress: show the compiler's progress on stderr (None: when stderr is
    a terminal). Errors raise genc.Error with the compiler's message."""
    models: List[str] = [os.fspath(model)] if isinstance(model, (str, os.PathLike)) else [os.fspath(m) for m in model]
    args = [genc_binary(), "compile", *models, "-o", os.fspath(plan)]
    for flag, value in (("--max-batch", max_batch), ("--max-beams", max_beams), ("--max-length", max_length),
                        ("--max-tokens", max_tokens), ("--max-source-length", max_source_length),
                        ("--max-new-tokens", max_new_tokens), ("--dtype", dtype),
                        ("--cross-kv-dtype", cross_kv_dtype), ("--weights", weights), ("--group-size", group_size),
                        ("--profile", profile), ("--stats-json", stats_json)):
        if value is not None:
            args.append("%s=%s" % (flag, os.fspath(value) if isinstance(value, os.PathLike) else value))
    if gpu_arch is not None:
        args.append("--gpu-arch=" + (gpu_arch if isinstance(gpu_arch, str) else ",".join(gpu_arch)))
    if quantize_lm_head:
        args.append("--quantize-lm-head")
    if weights_zero_point:
        args.append("--weights-zero-point")
    if not tokenizer:
        args.append("--no-tokenizer")
    if progress is None:
        progress = sys.stderr.isatty()
    args.append("--progress" if progress else "--quiet")
    args.extend(extra_args)
    _run(args)
    return os.fspath(plan)


def _run(args: List[str]) -> None:
    """Runs genc, passing its stderr through as it comes (progress, notes)
    and raising genc.Error with its error lines if it fails."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = []
    while True:
        chunk = proc.stderr.read1(4096) if hasattr(proc.stderr, "read1") else proc.stderr.read(4096)
        if not chunk:
            break
        text = chunk.decode("utf-8", "replace")
        seen.append(text)
        sys.stderr.write(text)
        sys.stderr.flush()
    code = proc.wait()
    if code != 0:
        lines = "".join(seen).splitlines()
        errors = [l[len("genc: error: "):] for l in lines if l.startswith("genc: error: ")]
        raise Error("genc compile failed: " + ("; ".join(errors) if errors else "exit code %d" % code))
