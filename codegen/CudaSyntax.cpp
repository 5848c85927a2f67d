#include "codegen/CudaSyntax.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace genc {

namespace {
const char *kPrelude = R"(// genc prelude: fp32 math; f16/bf16 storage converts on load and store.
static __device__ __forceinline__ float genc_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ unsigned short genc_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float genc_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
static __device__ __forceinline__ unsigned short genc_f2bf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
// Storage types for templates (attention, GEMV): S is what memory holds, ld/st
// convert to and from f32.
struct genc_f32 { typedef float S; static __device__ __forceinline__ float ld(S v) { return v; }
                  static __device__ __forceinline__ S st(float f) { return f; } };
struct genc_f16 { typedef unsigned short S; static __device__ __forceinline__ float ld(S v) { return genc_h2f(v); }
                  static __device__ __forceinline__ S st(float f) { return genc_f2h(f); } };
struct genc_bf16 { typedef unsigned short S; static __device__ __forceinline__ float ld(S v) { return genc_bf2f(v); }
                   static __device__ __forceinline__ S st(float f) { return genc_f2bf(f); } };
// d += A . B on the tensor cores (sm_80+): mma.m16n8k16 of T (genc_f16 or
// genc_bf16) with f32 sums, every kernel's one form of it. a0..a3, b0, b1 as
// PTX lays them out: a0 row g, k 2q, 2q + 1; a1 row g + 8; a2, a3 the same at
// k + 8; b0 k 2q, 2q + 1 of column g; b1 at k + 8; d rows g, g + 8, columns
// 2q, 2q + 1 (g = lane / 4, q = lane % 4).
template <typename T> struct genc_mma;
template <> struct genc_mma<genc_f16> {
  static __device__ __forceinline__ void run(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};
template <> struct genc_mma<genc_bf16> {
  static __device__ __forceinline__ void run(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};
// Split K's hand-over: true in every thread of the last of `blocks` blocks
// to take a ticket (the blocks that split one group's K). Each block's
// writes are fenced before its ticket, and the last fences again before it
// reads, so it sees every block's parts; it zeroes the ticket for the next
// launch. Every thread of the block calls it (two barriers).
static __device__ __forceinline__ bool genc_last_block(unsigned *ticket, unsigned blocks) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(ticket, 1u) == blocks - 1;
    if (last) *ticket = 0u;
  }
  __syncthreads();
  const bool mine = last;
  if (mine) __threadfence();
  return mine;
}
// An i8 cross cache's codes (runtime/kv/Int8Rows.h): ld gives the code, which
// the reader multiplies by its row's scale; st is unused (the cache is
// written by genc_cross_store_i8).
struct genc_i8 { typedef signed char S; static __device__ __forceinline__ float ld(S v) { return (float)v; }
                 static __device__ __forceinline__ S st(float f) { return f != f ? (S)0 : (S)fminf(127.f, fmaxf(-127.f, rintf(f))); } };

static __device__ __forceinline__ float genc_max(float x, float y) { return (x > y || x != x) ? x : y; }
static __device__ __forceinline__ float genc_min(float x, float y) { return (x < y || x != x) ? x : y; }
static __device__ __forceinline__ long long genc_f2i(float v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18f) return 9223372036854775807LL;
  if (v <= -9.2233720368547758e18f) return -9223372036854775807LL - 1;
  return (long long)truncf(v);
}
static __device__ __forceinline__ long long genc_clamp_index(long long k, long long n) {
  if (k < 0) k += n;
  return k < 0 ? 0 : (k >= n ? n - 1 : k);
}
// Block-wide sum / max over the first `warps` warps, which meet on the
// barrier policy S (the step kernel's compute warps meet apart from its copy
// warp). Every thread gets the result; the warps' partials are added in warp
// order (deterministic).
struct GencBlockSync {
  static __device__ __forceinline__ void sync() { __syncthreads(); }
};
template <typename S>
static __device__ __forceinline__ float genc_block_sum_of(float v, float *red, int warps) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  S::sync();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  S::sync();
  float t = 0.f;
  for (int w = 0; w < warps; ++w) t += red[w];
  return t;
}
template <typename S>
static __device__ __forceinline__ float genc_block_max_of(float v, float *red, int warps) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  S::sync();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  S::sync();
  float t = -__int_as_float(0x7f800000);
  for (int w = 0; w < warps; ++w) t = fmaxf(t, red[w]);
  return t;
}
// The whole block (blockDim.x a multiple of 32).
static __device__ __forceinline__ float genc_block_sum(float v, float *red) {
  return genc_block_sum_of<GencBlockSync>(v, red, (int)((blockDim.x + 31) >> 5));
}
static __device__ __forceinline__ float genc_block_max(float v, float *red) {
  return genc_block_max_of<GencBlockSync>(v, red, (int)((blockDim.x + 31) >> 5));
}
// Vector access: V contiguous elements of T as 16-byte words (one smaller
// word below 16 bytes). The caller guarantees alignment to the whole access
// (codegen/CudaVectorize.h); `dst` / `src` are alignas(16) local arrays,
// which stay in registers once the lane loop is unrolled.
template <int B> struct genc_word;
template <> struct genc_word<1> { typedef unsigned char T; };
template <> struct genc_word<2> { typedef unsigned short T; };
template <> struct genc_word<4> { typedef unsigned int T; };
template <> struct genc_word<8> { typedef uint2 T; };
template <> struct genc_word<16> { typedef uint4 T; };
template <typename T, int V>
static __device__ __forceinline__ void genc_vload(T (&dst)[V], const T *src) {
  constexpr int B = (int)sizeof(T) * V, W = B < 16 ? B : 16;
  typedef typename genc_word<W>::T Word;
#pragma unroll
  for (int k = 0; k < B / W; ++k) reinterpret_cast<Word *>(dst)[k] = reinterpret_cast<const Word *>(src)[k];
}
// Programmatic dependent launch (sm_90; runtime/cuda/Device.h): every genc
// kernel may be scheduled while the stream's previous kernel still runs. It
// reads nothing but weights before genc_pdl_wait(), which returns once that
// kernel has finished and its writes are visible; genc_pdl_launch() then lets
// the next kernel be scheduled (at most two kernels overlap). Both are
// no-ops where the launch did not ask for it, and below sm_90.
static __device__ __forceinline__ void genc_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void genc_pdl_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// This block's share of [at, at + bytes) into L2 (a hint: no data comes
// back), slices of 4 KB issued by the first warp's lanes in turn.
static __device__ __forceinline__ void genc_l2_prefetch(unsigned long long at, long long bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (bytes <= 0 || threadIdx.x >= 32) return;
  const unsigned blocks = gridDim.x * gridDim.y * gridDim.z, b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const long long slice = ((bytes + blocks - 1) / blocks + 4095) / 4096 * 4096;
  const long long b0 = (long long)b * slice, b1 = b0 + slice < bytes ? b0 + slice : bytes;
  for (long long o = b0 + (long long)threadIdx.x * 4096; o < b1; o += 32 * 4096) {
    const unsigned n = (unsigned)(b1 - o < 4096 ? b1 - o : 4096);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(at + o), "r"(n) : "memory");
  }
#endif
}
template <typename T, int V>
static __device__ __forceinline__ void genc_vstore(T *dst, const T (&src)[V]) {
  constexpr int B = (int)sizeof(T) * V, W = B < 16 ? B : 16;
  typedef typename genc_word<W>::T Word;
#pragma unroll
  for (int k = 0; k < B / W; ++k) reinterpret_cast<Word *>(dst)[k] = reinterpret_cast<const Word *>(src)[k];
}
)";
} // namespace

const char *storageStruct(DType t) {
  return t == DType::F16 ? "genc_f16" : t == DType::BF16 ? "genc_bf16" : "genc_f32";
}

const char *cudaPrelude() { return kPrelude; }

Dom domOf(DType t) {
  if (isFloat(t))
    return Dom::F;
  if (t == DType::Bool)
    return Dom::B;
  return Dom::I;
}

const char *domType(Dom d) { return d == Dom::F ? "float" : d == Dom::I ? "long long" : "bool"; }

std::string storageType(DType t) {
  switch (t) {
  case DType::F32: return "float";
  case DType::F16:
  case DType::BF16: return "unsigned short";
  case DType::F64: return "double";
  case DType::I64: return "long long";
  case DType::I32: return "int";
  case DType::I8: return "signed char";
  case DType::U8:
  case DType::Bool: return "unsigned char";
  default: return "";
  }
}

std::string loadExpr(DType t, const std::string &ref) {
  switch (t) {
  case DType::F16: return "genc_h2f(" + ref + ")";
  case DType::BF16: return "genc_bf2f(" + ref + ")";
  case DType::F64: return "(float)" + ref;
  case DType::Bool: return "(" + ref + " != 0)";
  case DType::F32: return ref;
  default: return "(long long)" + ref;
  }
}

std::string storeExpr(DType t, const std::string &v) {
  switch (t) {
  case DType::F16: return "genc_f2h(" + v + ")";
  case DType::BF16: return "genc_f2bf(" + v + ")";
  case DType::F64: return "(double)" + v;
  case DType::Bool:
  case DType::U8: return "(unsigned char)" + v;
  case DType::I32: return "(int)" + v;
  case DType::I8: return "(signed char)" + v;
  default: return v;
  }
}

std::string floatLit(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(f))
    return "__int_as_float(0x7fffffff)";
  if (std::isinf(f))
    return f > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s + "f";
}

std::string intLit(int64_t v) {
  if (v == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}

bool isIdent(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool mentions(const std::string &code, const std::string &name) {
  auto identChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1))
    if ((at == 0 || !identChar(code[at - 1])) &&
        (at + name.size() == code.size() || !identChar(code[at + name.size()])))
      return true;
  return false;
}

} // namespace genc
