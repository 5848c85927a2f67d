#include "runtime/cpu/KvCache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace genrt::cpu {

Status RelativeBias::from(const AttrMap &attrs, const std::vector<Tensor> &ins, size_t index,
                          int64_t heads, RelativeBias &out) {
  out = RelativeBias();
  int64_t M = attrInt(attrs, "bias_max_distance", 0);
  if (M <= 0)
    return ins.size() > index ? Status::error("an operand too many (no bias_max_distance)")
                              : Status::ok();
  if (ins.size() != index + 1)
    return Status::error("bias_max_distance is set but the bias operand is missing");
  const Tensor &t = ins[index];
  if (t.dtype() != DType::F32 || t.shape() != std::vector<int64_t>{heads, 2 * M - 1})
    return Status::error("the relative bias must be f32 [" + std::to_string(heads) + ", " +
                         std::to_string(2 * M - 1) + "]");
  out.table = t.data<float>();
  out.maxDistance = M;
  return Status::ok();
}

KvCache::KvCache(const Plan &plan) {
  int64_t slots = plan.model.maxBatch * plan.model.maxBeams;
  for (const KvLayer &l : plan.kvLayers) {
    Layer layer{plan.kvCapacity(l), l.kvHeads, l.headDim, l.window, {}, {}};
    size_t n = static_cast<size_t>(slots * layer.capacity * l.kvHeads * l.headDim);
    layer.k.assign(n, 0.f);
    layer.v.assign(n, 0.f);
    layers_.push_back(std::move(layer));
  }
}

Status KvCache::attend(KernelContext &ctx, const AttrMap &attrs, const std::vector<Tensor> &ins,
                       std::vector<Tensor> &outs, const std::vector<TokenInfo> &tokens) {
  int64_t li = attrInt(attrs, "layer", -1);
  if (li < 0 || li >= static_cast<int64_t>(layers_.size()) || ins.size() < 3 || ins.size() > 4)
    return Status::error("kv_attention: bad layer or operands");
  Layer &L = layers_[li];
  const Tensor &q = ins[0], &k = ins[1], &v = ins[2];
  int64_t T = static_cast<int64_t>(tokens.size());
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || q.shape()[0] != 1 || q.shape()[2] != T ||
      k.shape() != std::vector<int64_t>{1, L.kvHeads, T, L.headDim} || v.shape() != k.shape() ||
      q.shape()[3] != L.headDim || q.shape()[1] % L.kvHeads || q.dtype() != DType::F32 ||
      k.dtype() != DType::F32 || v.dtype() != DType::F32)
    return Status::error("kv_attention: operand shapes do not match the cache layout");
  int64_t H = q.shape()[1], D = L.headDim, KVH = L.kvHeads, group = H / KVH;
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  int64_t window = attrInt(attrs, "window", 0);
  if (outs.size() != 1 || outs[0].shape() != q.shape() || outs[0].dtype() != DType::F32)
    return Status::error("kv_attention: the output buffer does not match q");
  RelativeBias bias;
  if (Status s = RelativeBias::from(attrs, ins, 3, H, bias); !s)
    return Status::error("kv_attention: " + s.message());
  const float *qd = q.data<float>(), *kd = k.data<float>(), *vd = v.data<float>();
  float *od = outs[0].data<float>();
  std::vector<float> p;
  for (int64_t t = 0; t < T; ++t) {
    const TokenInfo &tok = tokens[t];
    int64_t lo = window > 0 ? std::max<int64_t>(0, tok.position - window + 1) : 0;
    if (tok.chunkStart - lo > L.capacity)
      return Status::error("kv_attention: the cache cannot hold the attended positions");
    if (bias.table && !bias.covers(lo - tok.position))
      return Status::error("kv_attention: a key is further away than the relative bias covers");
    p.resize(tok.position - lo + 1);
    for (int64_t h = 0; h < H; ++h) {
      int64_t kh = h / group;
      const float *qv = qd + (h * T + t) * D;
      // k/v of position j: from the cache before this forward, else from the operands.
      auto keyOf = [&](std::vector<float> &cache, const float *fresh, int64_t j) -> const float * {
        if (j < tok.chunkStart)
          return L.at(cache, tok.slot, j) + kh * D;
        return fresh + (kh * T + (t - (tok.position - j))) * D;
      };
      float mx = -INFINITY;
      for (int64_t j = lo; j <= tok.position; ++j) {
        const float *kv = keyOf(L.k, kd, j);
        float s = 0.f;
        for (int64_t e = 0; e < D; ++e)
          s += qv[e] * kv[e];
        p[j - lo] = s * scale;
        if (bias.table)
          p[j - lo] += bias.at(h, j - tok.position);
        mx = std::max(mx, p[j - lo]);
      }
      float sum = 0.f;
      for (float &x : p) {
        x = std::exp(x - mx);
        sum += x;
      }
      float *o = od + (h * T + t) * D;
      std::fill(o, o + D, 0.f);
      for (int64_t j = lo; j <= tok.position; ++j) {
        const float *vv = keyOf(L.v, vd, j);
        float w = p[j - lo] / sum;
        for (int64_t e = 0; e < D; ++e)
          o[e] += w * vv[e];
      }
    }
  }
  // Append after attending, so a rolling buffer never loses a key that an
  // earlier token of the same forward still needed.
  for (int64_t t = 0; t < T; ++t)
    for (int64_t kh = 0; kh < KVH; ++kh) {
      std::memcpy(L.at(L.k, tokens[t].slot, tokens[t].position) + kh * D, kd + (kh * T + t) * D,
                  D * sizeof(float));
      std::memcpy(L.at(L.v, tokens[t].slot, tokens[t].position) + kh * D, vd + (kh * T + t) * D,
                  D * sizeof(float));
    }
  return Status::ok();
}

void KvCache::reorder(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                      const std::vector<int64_t> &lengths) {
  for (Layer &L : layers_) {
    size_t slotFloats = static_cast<size_t>(L.capacity * L.kvHeads * L.headDim);
    // Snapshot the sources first: a slot may be both a source and a destination.
    std::vector<std::vector<float>> ks, vs;
    for (int32_t s : src) {
      size_t n = static_cast<size_t>(std::min(lengths[s], L.capacity) * L.kvHeads * L.headDim);
      ks.emplace_back(L.k.begin() + s * slotFloats, L.k.begin() + s * slotFloats + n);
      vs.emplace_back(L.v.begin() + s * slotFloats, L.v.begin() + s * slotFloats + n);
    }
    for (size_t i = 0; i < dst.size(); ++i) {
      std::copy(ks[i].begin(), ks[i].end(), L.k.begin() + dst[i] * slotFloats);
      std::copy(vs[i].begin(), vs[i].end(), L.v.begin() + dst[i] * slotFloats);
    }
  }
}

} // namespace genrt::cpu
