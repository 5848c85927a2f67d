#include "runtime/cpu/CrossCache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace genrt::cpu {
namespace {

// softmax(scale * q·k + bias) · v over n keys at k[j * stride], v[j * stride].
void attendRow(const float *q, const float *k, const float *v, int64_t n, int64_t stride,
               int64_t D, float scale, const float *bias, std::vector<float> &p, float *o) {
  p.resize(n);
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    float s = 0.f;
    for (int64_t e = 0; e < D; ++e)
      s += q[e] * k[j * stride + e];
    p[j] = s * scale + (bias ? bias[j] : 0.f);
    mx = std::max(mx, p[j]);
  }
  float sum = 0.f;
  for (float &x : p) {
    x = std::exp(x - mx);
    sum += x;
  }
  std::fill(o, o + D, 0.f);
  for (int64_t j = 0; j < n; ++j) {
    float w = p[j] / sum;
    for (int64_t e = 0; e < D; ++e)
      o[e] += w * v[j * stride + e];
  }
}

bool isF32(const Tensor &t) { return t.dtype() == DType::F32; }

} // namespace

CrossCache::CrossCache(const Plan &plan)
    : entries_(plan.model.maxBatch), capacity_(plan.model.maxLength) {
  for (const CrossLayer &l : plan.crossLayers) {
    size_t n = static_cast<size_t>(entries_ * capacity_ * l.kvHeads * l.headDim);
    layers_.push_back({l.kvHeads, l.headDim, std::vector<float>(n, 0.f), std::vector<float>(n, 0.f)});
  }
  lengths_.assign(static_cast<size_t>(entries_), 0);
}

Status CrossCache::store(int64_t entry, const std::vector<Tensor> &kv, int64_t start, int64_t len) {
  if (entry < 0 || entry >= entries_ || len < 0 || len > capacity_)
    return Status::error("cross cache: entry or source length out of range");
  if (kv.size() != 2 * layers_.size())
    return Status::error("cross cache: @encode returned " + std::to_string(kv.size()) +
                         " values, expected " + std::to_string(2 * layers_.size()));
  for (size_t l = 0; l < layers_.size(); ++l) {
    Layer &L = layers_[l];
    for (int i = 0; i < 2; ++i) {
      const Tensor &t = kv[2 * l + i];
      if (t.rank() != 4 || !isF32(t) || t.shape()[0] != 1 || t.shape()[1] != L.kvHeads ||
          t.shape()[3] != L.headDim || start < 0 || start + len > t.shape()[2])
        return Status::error("cross cache: @encode's K/V of layer " + std::to_string(l) +
                             " do not match the cache layout");
      int64_t T = t.shape()[2], D = L.headDim;
      float *dst = (i ? L.v : L.k).data() + entry * capacity_ * L.kvHeads * D;
      const float *src = t.data<float>();
      for (int64_t p = 0; p < len; ++p)
        for (int64_t h = 0; h < L.kvHeads; ++h)
          std::memcpy(dst + (p * L.kvHeads + h) * D, src + (h * T + start + p) * D, D * sizeof(float));
    }
  }
  lengths_[entry] = len;
  return Status::ok();
}

Status CrossCache::attend(const AttrMap &attrs, const std::vector<Tensor> &ins,
                          std::vector<Tensor> &outs, const std::vector<int64_t> &entryOfToken) {
  int64_t li = attrInt(attrs, "layer", -1);
  if (li < 0 || li >= static_cast<int64_t>(layers_.size()) || ins.size() != 1 || outs.size() != 1)
    return Status::error("cross_attention: bad layer or operands");
  Layer &L = layers_[li];
  const Tensor &q = ins[0];
  int64_t T = static_cast<int64_t>(entryOfToken.size());
  if (q.rank() != 4 || !isF32(q) || q.shape()[0] != 1 || q.shape()[2] != T ||
      q.shape()[3] != L.headDim || q.shape()[1] % L.kvHeads || outs[0].shape() != q.shape() ||
      !isF32(outs[0]))
    return Status::error("cross_attention: q does not match the cross cache layout");
  int64_t H = q.shape()[1], D = L.headDim, group = H / L.kvHeads;
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  std::vector<float> p;
  for (int64_t t = 0; t < T; ++t) {
    int64_t e = entryOfToken[t];
    if (e < 0 || e >= entries_ || lengths_[e] == 0)
      return Status::error("cross_attention: a token's sequence has no encoded source");
    int64_t base = e * capacity_ * L.kvHeads * D;
    for (int64_t h = 0; h < H; ++h) {
      int64_t kh = h / group;
      attendRow(q.data<float>() + (h * T + t) * D, L.k.data() + base + kh * D,
                L.v.data() + base + kh * D, lengths_[e], L.kvHeads * D, D, scale, nullptr, p,
                outs[0].data<float>() + (h * T + t) * D);
    }
  }
  return Status::ok();
}

Status packedAttention(const AttrMap &attrs, const std::vector<Tensor> &ins,
                       std::vector<Tensor> &outs, const std::vector<Segment> &segments) {
  if (ins.size() < 3 || outs.size() != 1)
    return Status::error("packed_attention: bad operands");
  const Tensor &q = ins[0], &k = ins[1], &v = ins[2];
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || !isF32(q) || !isF32(k) || !isF32(v) ||
      q.shape()[0] != 1 || k.shape()[0] != 1 || v.shape() != k.shape() ||
      k.shape()[2] != q.shape()[2] || k.shape()[3] != q.shape()[3] || k.shape()[1] == 0 ||
      q.shape()[1] % k.shape()[1] || outs[0].shape() != q.shape() || !isF32(outs[0]))
    return Status::error("packed_attention: q, k, v do not fit together");
  int64_t H = q.shape()[1], T = q.shape()[2], D = q.shape()[3], KVH = k.shape()[1];
  RelativeBias bias;
  if (Status s = RelativeBias::from(attrs, ins, 3, H, bias); !s)
    return Status::error("packed_attention: " + s.message());
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  std::vector<float> p, b;
  for (const Segment &sg : segments) {
    if (sg.start < 0 || sg.len <= 0 || sg.start + sg.len > T)
      return Status::error("packed_attention: a source lies outside the packed tokens");
    if (bias.table && !bias.covers(sg.len - 1))
      return Status::error("packed_attention: a source is longer than the relative bias covers");
    for (int64_t h = 0; h < H; ++h) {
      int64_t kh = h / (H / KVH);
      for (int64_t i = 0; i < sg.len; ++i) {
        if (bias.table) {
          b.resize(sg.len);
          for (int64_t j = 0; j < sg.len; ++j)
            b[j] = bias.at(h, j - i);
        }
        // k, v [1, KVH, T, D]: key j of head kh at (kh * T + start + j) * D.
        attendRow(q.data<float>() + (h * T + sg.start + i) * D,
                  k.data<float>() + (kh * T + sg.start) * D, v.data<float>() + (kh * T + sg.start) * D,
                  sg.len, D, D, scale, bias.table ? b.data() : nullptr, p,
                  outs[0].data<float>() + (h * T + sg.start + i) * D);
      }
    }
  }
  return Status::ok();
}

} // namespace genrt::cpu
