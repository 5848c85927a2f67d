#include "runtime/cpu/AttentionIo.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include <cstring>

namespace genrt::cpu {

// The same arithmetic as the rms_norm kernel and Hugging Face's
// x·cos + rotate(x)·sin, in the same order.
void unpackHeads(const Tensor &x, const HeadReading &h, Tensor &out,
                 ThreadPool *pool) {
  int64_t off = h.offset, n = h.heads, D = h.headDim, R = h.rotaryDim;
  const std::string &rope = h.rope;
  const Tensor *pos = h.positions, *cos = h.cos, *sin = h.sin, *norm = h.norm;
  float eps = h.eps;
  int64_t T = x.shape()[x.rank() - 2], W = x.shape().back(), half = R / 2;
  const float *xd = x.data<float>();
  float *od = out.data<float>();
  std::vector<float> normed;
  if (norm) {
    int64_t width = norm->numElements();
    normed.resize(T * n * D);
    for (int64_t t = 0; t < T; ++t)
      rmsNormRows(xd + t * W + off, norm->data<float>(),
                  normed.data() + t * n * D, n * D / width, width, eps);
    xd = normed.data(), W = n * D, off = 0;
  }
  // The form decided once, not per element (a string compare per element
  // was a tenth of a 135M Llama's prefill).
  const bool halfForm = rope == "half";
  const int64_t *positions = rope.empty() ? nullptr : pos->data<int64_t>();
  auto heads = [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t t = 0; t < T; ++t) {
        const float *row = xd + t * W + off + j * D;
        float *o = od + (j * T + t) * D;
        if (rope.empty()) {
          std::memcpy(o, row, D * sizeof(float));
          continue;
        }
        const int64_t p = positions[t];
        const float *c = cos->data<float>() + p * R,
                    *s = sin->data<float>() + p * R;
        if (halfForm) {
          for (int64_t d = 0; d < half; ++d)
            o[d] = row[d] * c[d] + (-row[d + half]) * s[d];
          for (int64_t d = half; d < R; ++d)
            o[d] = row[d] * c[d] + row[d - half] * s[d];
        } else {
          for (int64_t d = 0; d < R; d += 2) {
            o[d] = row[d] * c[d] + (-row[d + 1]) * s[d];
            o[d + 1] = row[d + 1] * c[d + 1] + row[d] * s[d + 1];
          }
        }
        std::memcpy(o + R, row + R, (D - R) * sizeof(float));
      }
  };
  if (pool && pool->size() > 1 && T * n * D >= 65536)
    pool->parallelFor(n, 1, heads);
  else
    heads(0, n);
}

Status unpackAttention(const AttrMap &attrs, const std::vector<Tensor> &ins,
                       size_t headOperands, AttentionIo &io, ThreadPool *pool) {
  io = AttentionIo();
  io.mergeHeads = attrInt(attrs, "merge_heads", 0) != 0;
  io.heads = attrInt(attrs, "num_heads", 0);
  io.headDim = attrInt(attrs, "head_dim", 0);
  int64_t kvHeads = attrInt(attrs, "num_kv_heads", io.heads), D = io.headDim;
  std::vector<int64_t> offsets = attrInts(attrs, "qkv_offsets");
  if (offsets.empty()) {
    if (ins.size() < headOperands)
      return Status::error("too few operands");
    io.operands = ins;
    if (io.mergeHeads && (io.heads <= 0 || D <= 0))
      return Status::error("merge_heads needs num_heads and head_dim");
    return Status::ok();
  }
  if (offsets.size() != headOperands || io.heads <= 0 || kvHeads <= 0 ||
      D <= 0 || ins.empty())
    return Status::error("qkv_offsets needs " + std::to_string(headOperands) +
                         " offsets, num_heads, num_kv_heads and head_dim");
  const Tensor &x = ins[0];
  if (x.dtype() != DType::F32 || x.rank() < 2 || x.rank() > 3 ||
      (x.rank() == 3 && x.shape()[0] != 1))
    return Status::error("the packed projection must be f32 [1, tokens, width] "
                         "or [tokens, width]");
  int64_t T = x.shape()[x.rank() - 2], W = x.shape().back();
  std::string rope = attrStr(attrs, "rope", "");
  int64_t R = attrInt(attrs, "rotary_dim", 0);
  size_t next = 1;
  const Tensor *pos = nullptr, *cos = nullptr, *sin = nullptr;
  if (!rope.empty()) {
    if (rope != "half" && rope != "interleaved")
      return Status::error("unknown rope \"" + rope + "\"");
    if (ins.size() < 4)
      return Status::error("rope needs positions, cos and sin operands");
    pos = &ins[1], cos = &ins[2], sin = &ins[3];
    next = 4;
    if (R <= 0 || R > D || R % 2 || pos->numElements() != T ||
        pos->dtype() != DType::I64 || cos->dtype() != DType::F32 ||
        sin->dtype() != DType::F32 || cos->rank() != 2 ||
        cos->shape()[1] != R || sin->shape() != cos->shape())
      return Status::error("rope operands do not match rotary_dim " +
                           std::to_string(R));
    for (int64_t t = 0; t < T; ++t)
      if (pos->getInt(t) < 0 || pos->getInt(t) >= cos->shape()[0])
        return Status::error("a position lies outside the rotary tables");
  }
  const Tensor *norms[2] = {nullptr, nullptr};
  float eps = static_cast<float>(attrFloat(attrs, "qk_norm_epsilon", 0.0));
  if (attrs.count("qk_norm_epsilon")) {
    if (headOperands != 3 || ins.size() < next + 2)
      return Status::error("qk_norm_epsilon needs q_norm and k_norm operands");
    norms[0] = &ins[next], norms[1] = &ins[next + 1];
    next += 2;
    for (int i = 0; i < 2; ++i) {
      int64_t n = i == 0 ? io.heads : kvHeads, w = norms[i]->numElements();
      if (norms[i]->dtype() != DType::F32 || norms[i]->rank() != 1 ||
          (w != D && w != n * D))
        return Status::error(
            "a q/k norm weight must be f32 [head_dim] or [heads * head_dim]");
    }
  }
  for (size_t i = 0; i < headOperands; ++i) {
    int64_t n = i == 0 ? io.heads : kvHeads;
    if (offsets[i] < 0 || offsets[i] + n * D > W)
      return Status::error("qkv_offsets reach past the projection's width " +
                           std::to_string(W));
    Tensor h(DType::F32, {1, n, T, D});
    bool qk = i < 2;
    unpackHeads(x,
                {offsets[i], n, D, qk ? rope : "", R, pos, cos, sin,
                 qk ? norms[i] : nullptr, eps},
                h, pool);
    io.operands.push_back(std::move(h));
  }
  io.operands.insert(io.operands.end(), ins.begin() + next, ins.end());
  return Status::ok();
}

void mergeHeads(const Tensor &o, Tensor &out) {
  int64_t H = o.shape()[1], T = o.shape()[2], D = o.shape()[3];
  const float *src = o.data<float>();
  float *dst = out.data<float>();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(dst + (t * H + h) * D, src + (h * T + t) * D,
                  D * sizeof(float));
}

} // namespace genrt::cpu
