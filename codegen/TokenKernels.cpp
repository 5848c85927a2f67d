#include "codegen/TokenKernels.h"

#include "runtime/cuda/TokenAbi.h"

#include <string>

namespace genc {

namespace {
const char *kSource = R"(
// ---- genc token choice -----------------------------------------------------
// Merges part b (later in the row) into a: ties keep a's lower index, as
// torch.argmax does; an empty or all -inf part has max -inf.
static __device__ __forceinline__ GencGreedyPart genc_greedy_merge(GencGreedyPart a, GencGreedyPart b) {
  if (b.max == -__int_as_float(0x7f800000)) return a;
  if (a.max == -__int_as_float(0x7f800000)) return b;
  if (b.max > a.max) { b.sum += a.sum * exp((double)(a.max - b.max)); return b; }
  a.sum += b.sum * exp((double)(b.max - a.max));
  return a;
}
extern "C" __global__ void __launch_bounds__(256) genc_greedy(const GencGreedyParams p) {
  __shared__ float mx[256];
  __shared__ int ix[256];
  __shared__ double sm[256];
  __shared__ int lastS;
  const long long r = blockIdx.x;
  const int k = blockIdx.y, P = gridDim.y, tid = threadIdx.x;
  const long long per = (p.vocab + P - 1) / P, v0 = k * per, v1 = v0 + per < p.vocab ? v0 + per : p.vocab;
  const float *x = (const float *)p.logits + r * p.vocab;
  // The part's max and its first index (a strided scan meets a thread's
  // indices in increasing order), then the tree in a fixed order.
  float m = -__int_as_float(0x7f800000);
  int i = 0x7fffffff;
  for (long long v = v0 + tid; v < v1; v += blockDim.x) {
    const float f = x[v];
    if (f > m) { m = f; i = (int)v; }
  }
  mx[tid] = m;
  ix[tid] = i;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (tid < w) {
      const float bm = mx[tid + w];
      const int bi = ix[tid + w];
      if (bm > mx[tid] || (bm == mx[tid] && bi < ix[tid])) { mx[tid] = bm; ix[tid] = bi; }
    }
    __syncthreads();
  }
  const float M = mx[0];
  double s = 0.0;
  if (M != -__int_as_float(0x7f800000))
    for (long long v = v0 + tid; v < v1; v += blockDim.x) s += exp((double)(x[v] - M));
  sm[tid] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (tid < w) sm[tid] += sm[tid + w];
    __syncthreads();
  }
  GencGreedyPart *parts = (GencGreedyPart *)p.parts + r * P;
  GencGreedyPart mine = {sm[0], M, ix[0]};
  if (P > 1) {
    if (tid == 0) {
      parts[k] = mine;
      __threadfence();
      unsigned *ticket = (unsigned *)p.tickets + r;
      lastS = atomicAdd(ticket, 1u) == (unsigned)(P - 1);
      if (lastS) *ticket = 0u; // zero again for the next launch
    }
    __syncthreads();
    if (!lastS || tid != 0) return;
    __threadfence();
    mine.max = -__int_as_float(0x7f800000);
    for (int j = 0; j < P; ++j) {
      GencGreedyPart b;
      b.sum = __ldcg(&parts[j].sum);
      b.max = __ldcg(&parts[j].max);
      b.index = __ldcg(&parts[j].index);
      mine = genc_greedy_merge(mine, b);
    }
  } else if (tid != 0) {
    return;
  }
  // Every logit -inf (or NaN): token 0, as the host's rule gives.
  const bool none = mine.max == -__int_as_float(0x7f800000);
  ((long long *)p.tokens)[r] = none ? 0 : mine.index;
  ((float *)p.logprobs)[r] = none ? mine.max : -(float)log(mine.sum);
}
)";
} // namespace

const char *tokenKernelsSource() {
  static const std::string s = std::string("\n") + genrt::cuda::kGencTokenAbiSource + kSource;
  return s.c_str();
}

} // namespace genc
