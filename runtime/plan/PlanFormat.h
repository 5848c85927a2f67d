// The .plan file layout, shared by the compiler's writer and the runtime's
// loader (the compiler includes this header, never the other way round).
//
//   [0, 8)    magic "GENCPLAN"
//   [8, 12)   u32 format version (kPlanFormatVersion)
//   [12, 16)  u32 reserved (0)
//   [16, 24)  u64 offset of the JSON metadata     [24, 32) u64 its size
//   [32, 40)  u64 offset of the binary blob        [40, 48) u64 its size
//   JSON: model facts and generation defaults, activation_dtype (storage of
//         float activations on the GPU: f32, f16 or bf16; absent = f32),
//         KV cache layout, weights
//         (name, dtype, shape, blob offset, bytes), programs (values, ops,
//         attributes; tensor attributes point into the blob; an arena value's
//         `stored` dtype says how its buffer holds it, absent = its dtype),
//         functions
//         (bodies of `fused` ops: values, ops; no arena); encoder-decoder
//         plans add cross_cache (per-layer kv_heads, head_dim) and @encode;
//         kernels (launch metadata of each fused body's CUDA kernel with the
//         storage dtype of each pointer parameter, input_dtypes /
//         output_dtypes; and the blob offset/size of one cubin per sm_XX and
//         PTX per compute_XX); profile (optional string: the compile
//         profile genc resolved, as YAML, so the plan can be rebuilt);
//         tokenizer (optional: {"format": "tokenizer.json", "offset",
//         "bytes", "source": the file it came from, "special_tokens":
//         tokenizer_config.json's bos/eos/unk/sep/pad/cls/mask token strings,
//         optional "chat_template": the model's chat template, a string, or
//         an object of named ones}; the blob holds the tokenizer.json text).
//   blob: every weight, tensor attribute, cubin and PTX, each kPlanAlignment-aligned.
//   Weights and arena buffers start at multiples of kPlanBufferAlignment:
//   the kernels' vector loads and stores rely on it.
// Little-endian throughout.
#pragma once
#include <cstdint>

namespace genrt {

constexpr char kPlanMagic[8] = {'G', 'E', 'N', 'C', 'P', 'L', 'A', 'N'};
// 2: `functions` (bodies of fused ops, values with storage "local"), and
// encoder-decoder plans (@encode, cross_cache, cross/packed attention,
// relative bias operands); both landed before any version-2 plan shipped.
// 3: `kernels` (generated CUDA kernels: launch metadata, cubins, PTX).
//    `activation_dtype` and the kernels' input/output dtypes were added
//    within version 3, optional: a plan without them stores activations as
//    f32 and weights as their dtype says, which is what such plans did.
//    `profile` was added within version 3 too, optional: the loader and
//    genc inspect take plans without it. So was `tokenizer`: a plan without
//    one takes token ids only, and a genrun that predates it ignores it.
//    So was the op kind `matmul_nbits` (4/8-bit weights stored as u8 codes
//    and f16/f32 scales, runtime/plan/NBitsLayout.h): plain weights of the
//    existing dtypes; a genrun that predates it refuses such a plan naming
//    the op kind ("no such op kind"), and reads every other plan as before.
constexpr uint32_t kPlanFormatVersion = 3;
constexpr uint64_t kPlanHeaderBytes = 48;
constexpr uint64_t kPlanAlignment = 64;
constexpr uint64_t kPlanBufferAlignment = 16;

} // namespace genrt
