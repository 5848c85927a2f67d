#include "codegen/TokenKernels.h"

#include "runtime/cuda/TokenAbi.h"

#include <string>

namespace genc {

namespace {
const char *kSource = R"(
// ---- genc token choice -----------------------------------------------------
// (max, first index of it, sum of exp(x - max) in f64) of a part of a row;
// merged in a fixed order: ties keep the lower index, as torch.argmax does.
struct GencArgmax { float m; long long i; double s; };
static __device__ __forceinline__ GencArgmax genc_argmax_merge(GencArgmax a, GencArgmax b) {
  if (b.m > a.m || (b.m == a.m && b.i < a.i)) { GencArgmax t = a; a = b; b = t; }
  // a holds the larger max (or the earlier index of an equal one).
  if (b.m == -__int_as_float(0x7f800000)) return a;
  a.s += b.s * exp((double)(b.m - a.m));
  return a;
}
extern "C" __global__ void __launch_bounds__(512) genc_greedy(const GencGreedyParams p) {
  __shared__ GencArgmax red[512];
  const long long r = blockIdx.x;
  const float *x = (const float *)p.logits + r * p.vocab;
  GencArgmax acc = {-__int_as_float(0x7f800000), 0, 0.0};
  for (long long v = threadIdx.x; v < p.vocab; v += blockDim.x) {
    float f = x[v];
    if (f > acc.m) { acc.s = acc.m == -__int_as_float(0x7f800000) ? 0.0 : acc.s * exp((double)(acc.m - f)); acc.m = f; acc.i = v; }
    if (f != -__int_as_float(0x7f800000)) acc.s += exp((double)(f - acc.m));
  }
  if (acc.m == -__int_as_float(0x7f800000)) acc.i = threadIdx.x < p.vocab ? threadIdx.x : 0;
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) red[threadIdx.x] = genc_argmax_merge(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    GencArgmax a = red[0];
    ((long long *)p.tokens)[r] = a.i;
    ((float *)p.logprobs)[r] = a.m == -__int_as_float(0x7f800000) ? a.m : -(float)log(a.s);
  }
}
)";
} // namespace

const char *tokenKernelsSource() {
  static const std::string s = std::string("\n") + genrt::cuda::kGencTokenAbiSource + kSource;
  return s.c_str();
}

} // namespace genc
