"""GGUF tensors as the ONNX graph of tools/gguf_to_onnx.py takes them (numpy
and the gguf package only).

A matrix W[N, K] (GGUF's ne = [K, N]) becomes one of:
  - MatMulNBits blocks (Q4_0, Q4_1, Q8_0, kept as they are: each block of 32
    along K is one MatMulNBits block, runtime/plan/NBitsLayout.h):
      Q4_0  w = d * (q - 8)      codes: the nibbles, reordered to ONNX
                                 Runtime's pairs; scales d; zero point 8
      Q8_0  w = d * q            codes q + 128 (u8); scales d; zero point 128
      Q4_1  w = d * q + m        codes q; scales d; float zero points -m / d
                                 (a block with d = 0 is m everywhere: codes 1,
                                 scale m, zero point 0)
    with f32 scales (d is f16: exact in f32). Q4_0 and Q8_0 dequantize to the
    gguf package's numbers bit for bit; Q4_1 to within f32 rounding (its
    m / d is rounded once), tests/tools/gguf-blocks.test measures both.
  - a float matrix: F32 as f32, anything else (F16, BF16, other block types:
    dequantized by the gguf package) as f16.
"""
import gguf
import numpy as np

Q = gguf.GGMLQuantizationType
KEPT = (Q.Q4_0, Q.Q4_1, Q.Q8_0)


class ConvertError(Exception):
    """A one-line error about the GGUF file."""


def rows_of(tensor):
    """(N, K) of a 2-D GGUF tensor (its ne is [K, N])."""
    shape = [int(d) for d in tensor.shape]
    if len(shape) != 2:
        raise ConvertError(f"tensor {tensor.name} has {len(shape)} dims, expected a matrix")
    return shape[1], shape[0]


def blocks_of(tensor):
    """The raw blocks of a Q4_0 / Q4_1 / Q8_0 matrix: uint8 [N, K / 32, block bytes]."""
    N, K = rows_of(tensor)
    block, nbytes = gguf.GGML_QUANT_SIZES[tensor.tensor_type]
    if K % block:
        raise ConvertError(f"tensor {tensor.name}: K = {K} is not a multiple of {tensor.tensor_type.name}'s "
                           f"block of {block}")
    data = np.asarray(tensor.data, dtype=np.uint8)
    if data.size != N * (K // block) * nbytes:
        raise ConvertError(f"tensor {tensor.name}: {data.size} bytes of data, expected {N * (K // block) * nbytes}")
    return data.reshape(N, K // block, nbytes)


def _half(b):
    """The f16 at the start of each block, as f32."""
    return np.ascontiguousarray(b[..., :2]).view(np.float16)[..., 0].astype(np.float32)


def _pairs(codes):
    """Codes [..., 32] in element order -> ONNX Runtime's bytes [..., 16]:
    element 2i in the low nibble, 2i + 1 in the high one."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def _nibbles(qs):
    """GGUF's 4-bit qs [..., 16] -> codes [..., 32] in element order: the low
    nibbles are elements 0-15, the high ones 16-31."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def nbits(tensor):
    """MatMulNBits' inputs for a kept block type: dict(bits, B [N, blocks, blob]
    uint8, scales [N, blocks] f32, zero_points [N, blocks] f32 or None)."""
    b = blocks_of(tensor)
    t = tensor.tensor_type
    d = _half(b)
    if t == Q.Q8_0:
        q = b[..., 2:].view(np.int8).astype(np.int16) + 128
        return dict(bits=8, B=q.astype(np.uint8), scales=d, zero_points=None)
    if t == Q.Q4_0:
        return dict(bits=4, B=_pairs(_nibbles(b[..., 2:])), scales=d, zero_points=None)
    m = np.ascontiguousarray(b[..., 2:4]).view(np.float16)[..., 0].astype(np.float32)
    codes = _nibbles(b[..., 4:])
    zero = d == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(zero, np.float32(0), -m / np.where(zero, np.float32(1), d)).astype(np.float32)
    codes = np.where(zero[..., None], np.uint8(1), codes)
    return dict(bits=4, B=_pairs(codes), scales=np.where(zero, m, d).astype(np.float32), zero_points=z)


def dequantized_nbits(p, K):
    """W [N, K] f32 from nbits()'s dict, by MatMulNBits' definition."""
    B = p["B"]
    q = np.stack([B & 15, B >> 4], axis=-1).reshape(B.shape[0], B.shape[1], -1) if p["bits"] == 4 else B
    z = p["zero_points"] if p["zero_points"] is not None else np.full(p["scales"].shape, 2.0 ** (p["bits"] - 1),
                                                                        np.float32)
    w = (q.astype(np.float32) - z[..., None].astype(np.float32)) * p["scales"][..., None]
    return w.reshape(B.shape[0], -1)[:, :K]


def floats(tensor):
    """A tensor's values as numpy (numpy order: [N, K] for a matrix), f32 for
    F32 (and for BF16 that f16 would not hold exactly), f16 otherwise, and
    whether it was dequantized from blocks."""
    t = tensor.tensor_type
    shape = [int(d) for d in reversed(tensor.shape)]
    if t == Q.F32:
        return np.asarray(tensor.data, dtype=np.float32).reshape(shape), False
    if t == Q.F16:
        return np.asarray(tensor.data, dtype=np.float16).reshape(shape), False
    try:
        w = gguf.quants.dequantize(np.asarray(tensor.data), t)
    except (NotImplementedError, KeyError, ValueError) as e:
        raise ConvertError(f"tensor {tensor.name}: block type {t.name} cannot be read ({e or 'not implemented'})")
    w = w.reshape(shape)
    if t == Q.BF16:  # exact in f16 unless past its range or below its normals: then f32, never inf
        with np.errstate(over="ignore"):
            w16 = w.astype(np.float16)
        return (w16, False) if np.array_equal(w16.astype(np.float32), w, equal_nan=True) else (w.astype(np.float32), False)
    return w.astype(np.float16), True


def reverse_permute_rows(n_rows, n_head):
    """The row order that undoes llama.cpp's permutation of a Q or K
    projection (convert_hf_to_gguf: rows of each head interleaved for its
    RoPE): Hugging Face's _reverse_permute_weights as an index."""
    dim = n_rows // n_head // 2
    return np.arange(n_rows).reshape(n_head, dim, 2).swapaxes(2, 1).reshape(-1)
