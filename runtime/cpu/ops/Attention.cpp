// The `attention` op in the interpreter (full-sequence form; semantics in
// docs/ir-ops.md). Plain fp32 loops: it is the reference, not the fast path.
#include "runtime/cpu/ops/OpKernels.h"

#include <cmath>

namespace genrt::cpu {

// q[b,h,sq,d] k[b,kvh,sk,d] v[b,kvh,sk,d] key_mask[b,sk]? -> out[b,h,sq,d]
static Error attentionKernel(KernelContext &, const AttrMap &attrs,
                                   const std::vector<Tensor> &ins, std::vector<Tensor> &outs) {
  const Tensor &q = ins[0], &k = ins[1], &v = ins[2];
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return kernelError("q, k and v must be rank 4");
  int64_t B = q.shape()[0], H = q.shape()[1], Sq = q.shape()[2], D = q.shape()[3];
  int64_t KVH = k.shape()[1], Sk = k.shape()[2];
  if (k.shape()[0] != B || v.shape() != k.shape() || k.shape()[3] != D || KVH == 0 || H % KVH)
    return kernelError("q " + dimsStr(q.shape()) + ", k " + dimsStr(k.shape()) + ", v " +
                       dimsStr(v.shape()) + " do not fit together");
  // bias[h, j - pos + M - 1] is added to the allowed scores (T5's relative bias).
  int64_t M = attrInt(attrs, "bias_max_distance", 0);
  const Tensor *bias = M > 0 ? &ins.back() : nullptr;
  if (bias && (ins.size() < 4 || bias->rank() != 2 || bias->shape()[0] != H ||
               bias->shape()[1] != 2 * M - 1 || bias->dtype() != DType::F32))
    return kernelError("the relative bias must be f32 [" + std::to_string(H) + ", " +
                       std::to_string(2 * M - 1) + "]");
  const Tensor *mask = ins.size() > 3 + (bias ? 1u : 0u) ? &ins[3] : nullptr;
  if (mask && (mask->rank() != 2 || mask->shape()[0] != B || mask->shape()[1] != Sk))
    return kernelError("key_mask " + dimsStr(mask->shape()) + " must be [" + std::to_string(B) +
                       ", " + std::to_string(Sk) + "]");
  if (q.dtype() != DType::F32 || k.dtype() != DType::F32 || v.dtype() != DType::F32)
    return kernelError("q, k, v must be f32");
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  bool causal = attrInt(attrs, "causal", 0) != 0;
  int64_t window = attrInt(attrs, "window", 0);
  auto out = newTensor(DType::F32, {B, H, Sq, D});
  if (!out)
    return out.takeError();
  const float *qd = q.data<float>(), *kd = k.data<float>(), *vd = v.data<float>();
  float *od = out->data<float>();
  std::vector<float> p(Sk);
  std::vector<char> allowed(Sk);
  int64_t group = H / KVH, offset = Sk - Sq;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      int64_t kh = h / group;
      const float *kb = kd + ((b * KVH + kh) * Sk) * D, *vb = vd + ((b * KVH + kh) * Sk) * D;
      for (int64_t i = 0; i < Sq; ++i) {
        const float *qi = qd + ((b * H + h) * Sq + i) * D;
        float *oi = od + ((b * H + h) * Sq + i) * D;
        int64_t pos = i + offset;
        float mx = -INFINITY;
        bool any = false;
        for (int64_t j = 0; j < Sk; ++j) {
          allowed[j] = (!causal || j <= pos) && (window <= 0 || pos - j < window) &&
                       (!mask || mask->getInt(b * Sk + j) != 0);
          if (!allowed[j])
            continue;
          float s = 0.f;
          for (int64_t e = 0; e < D; ++e)
            s += qi[e] * kb[j * D + e];
          p[j] = s * scale;
          if (bias) {
            if (j - pos <= -M || j - pos >= M)
              return kernelError("a key is further from its query than the relative bias covers (" +
                                 std::to_string(M) + ")");
            p[j] += bias->data<float>()[h * (2 * M - 1) + j - pos + M - 1];
          }
          mx = std::fmax(mx, p[j]);
          any = true;
        }
        float sum = 0.f;
        for (int64_t j = 0; j < Sk; ++j) {
          if (!any) {
            p[j] = 1.f; // no allowed key: uniform, as HF's min-filled masks give
          } else {
            p[j] = allowed[j] ? std::exp(p[j] - mx) : 0.f;
          }
          sum += p[j];
        }
        for (int64_t e = 0; e < D; ++e)
          oi[e] = 0.f;
        for (int64_t j = 0; j < Sk; ++j) {
          if (p[j] == 0.f)
            continue;
          float w = p[j] / sum;
          for (int64_t e = 0; e < D; ++e)
            oi[e] += w * vb[j * D + e];
        }
      }
    }
  outs[0] = std::move(*out);
  return Error::success();
}

void addAttentionKernels(KernelTable &t) { t["attention"] = attentionKernel; }

} // namespace genrt::cpu
