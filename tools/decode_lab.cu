// Decode attention's memory structure alone, on the device machine: does the
// way the decode kernel streams its K/V tiles reach the copy bandwidth when
// nothing is computed? (docs/performance.md, session 9: the kernel sits at
// 1.5 TB/s whether its copies are 16-byte cp.async words with index math,
// words at constant offsets, or one bulk copy a row; its prologue's loads
// batched; nothing moved it.) Each variant reads the issue's workload (c):
// 2 KV heads x 65,536 keys x head dim 128, f16, K and V (64 MiB), split over
// blocks as the decode kernel splits it, and only folds every word it
// staged into one register, so its time is the streaming structure's.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o build/decode_lab tools/decode_lab.cu
//   build/decode_lab            # there; prints one table
//
// Variants: `stage` = the decode kernel's pipeline (KT-key tiles, ST stages,
// cp.async 16-byte words, block barriers); `bulk` = the same with one
// cp.async.bulk a row and an mbarrier a stage; `ldg` = plain 16-byte loads
// into registers, U in flight a thread, no shared memory.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int KVH = 2, D = 128, RW = D * 2 / 16, RS = RW + 1; // 16-byte words a row, padded stride
constexpr long long KEYS = 65536;

#define CHECK(x)                                                                                                       \
  do {                                                                                                                 \
    cudaError_t e = (x);                                                                                               \
    if (e != cudaSuccess) {                                                                                            \
      std::fprintf(stderr, "decode_lab: %s: %s\n", #x, cudaGetErrorString(e));                                         \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

// Block (kh, split): keys [a, b) of KV head kh, a whole number of 64-key
// runs (the decode kernel's tile) whatever KT the variant stages them in.
struct Range {
  long long a, b;
  __device__ Range(int split, int S) {
    const long long tilesAll = KEYS / 64, per = (tilesAll + S - 1) / S;
    a = split * per * 64;
    b = a + per * 64 < KEYS ? a + per * 64 : KEYS;
  }
};

template <int KT, int ST, int NT>
__global__ void __launch_bounds__(NT) stage(const uint4 *k, const uint4 *v, unsigned *out) {
  extern __shared__ uint4 tiles[]; // [ST][K, V][KT][RS]
  const int kh = blockIdx.x, S = gridDim.y;
  Range r(blockIdx.y, S);
  const int n = (int)((r.b - r.a + KT - 1) / KT);
  const uint4 *ks = k + (kh * KEYS + r.a) * RW, *vs = v + (kh * KEYS + r.a) * RW;
  auto issue = [&](int i) {
    uint4 *kt = tiles + (i % ST) * 2 * KT * RS, *vt = kt + KT * RS;
    for (int e = threadIdx.x; e < 2 * KT * RW; e += NT) {
      const int which = e / (KT * RW), row = (e / RW) % KT, c = e % RW;
      const long long j = (long long)i * KT + row;
      const bool in = r.a + j < r.b;
      const uint4 *src = (which ? vs : ks) + (in ? j : 0) * RW + c;
      const unsigned dst = (unsigned)__cvta_generic_to_shared((which ? vt : kt) + row * RS + c);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(in ? 16 : 0));
    }
  };
  for (int s = 0; s < ST - 1; ++s) {
    if (s < n) issue(s);
    asm volatile("cp.async.commit_group;\n" ::);
  }
  unsigned acc = 0;
  for (int i = 0; i < n; ++i) {
    if (i + ST - 1 < n) issue(i + ST - 1);
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 1));
    __syncthreads();
    const uint4 *kt = tiles + (i % ST) * 2 * KT * RS;
    for (int e = threadIdx.x; e < 2 * KT * RS; e += NT) acc ^= kt[e].x;
    __syncthreads();
  }
  if (acc == 0x12345678u) out[0] = acc; // keeps the reads
}

template <int KT, int ST, int NT>
__global__ void __launch_bounds__(NT) bulk(const uint4 *k, const uint4 *v, unsigned *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ uint4 tiles[];
  __shared__ __align__(8) unsigned long long bars[ST];
  const unsigned barsAt = (unsigned)__cvta_generic_to_shared(bars);
  const int kh = blockIdx.x, S = gridDim.y;
  Range r(blockIdx.y, S);
  const int n = (int)((r.b - r.a + KT - 1) / KT);
  const uint4 *ks = k + (kh * KEYS + r.a) * RW, *vs = v + (kh * KEYS + r.a) * RW;
  if (threadIdx.x == 0) {
    for (int s = 0; s < ST; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(barsAt + 8u * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int i) {
    uint4 *kt = tiles + (i % ST) * 2 * KT * RS, *vt = kt + KT * RS;
    const unsigned bar = barsAt + 8u * (i % ST);
    if (threadIdx.x == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(2 * KT * D * 2) : "memory");
    for (int e = threadIdx.x; e < 2 * KT; e += NT) {
      const int which = e / KT, row = e % KT;
      const long long j = (long long)i * KT + row;
      const uint4 *src = (which ? vs : ks) + (r.a + j < r.b ? j : 0) * RW;
      const unsigned dst = (unsigned)__cvta_generic_to_shared((which ? vt : kt) + row * RS);
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                   "l"(src), "r"(D * 2), "r"(bar)
                   : "memory");
    }
  };
  for (int s = 0; s < ST - 1 && s < n; ++s) issue(s);
  unsigned acc = 0;
  for (int i = 0; i < n; ++i) {
    if (i + ST - 1 < n) issue(i + ST - 1);
    const unsigned bar = barsAt + 8u * (i % ST), parity = (unsigned)(i / ST) & 1u;
    unsigned done;
    do {
      asm volatile("{\n .reg .pred P;\n mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n selp.u32 %0, 1, 0, P;\n}\n"
                   : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
    const uint4 *kt = tiles + (i % ST) * 2 * KT * RS;
    for (int e = threadIdx.x; e < 2 * KT * RS; e += NT) acc ^= kt[e].x;
    __syncthreads();
  }
  if (acc == 0x12345678u) out[0] = acc;
#endif
}

template <int U, int NT>
__global__ void __launch_bounds__(NT) ldg(const uint4 *k, const uint4 *v, unsigned *out, long long words) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * NT;
  for (long long base = blockIdx.x * (long long)NT + threadIdx.x; base < words; base += stride * U) {
    uint4 w[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long e = base + u * stride;
      w[u] = e < words ? __ldcs((e < words / 2 ? k + e : v + (e - words / 2))) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= w[u].x;
  }
  if (acc == 0x12345678u) out[0] = acc;
}

struct Timer {
  cudaEvent_t a, b;
  Timer() { CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b)); }
  template <typename F>
  double us(F launch, int reps = 30) {
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(a));
    for (int i = 0; i < reps; ++i) launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e3 / reps;
  }
};

int occupancy(const void *fn, int threads, size_t smem) {
  int blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, threads, smem));
  return blocks;
}

} // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const long long words = 2 * KVH * KEYS * RW; // K and V, 16-byte words
  const double bytes = words * 16.0;
  uint4 *k, *v, *big;
  unsigned *out;
  CHECK(cudaMalloc(&k, bytes / 2));
  CHECK(cudaMalloc(&v, bytes / 2));
  CHECK(cudaMalloc(&out, 16));
  CHECK(cudaMemset(k, 1, bytes / 2));
  CHECK(cudaMemset(v, 2, bytes / 2));
  const size_t copyBytes = 1ull << 30;
  CHECK(cudaMalloc(&big, 2 * copyBytes));
  Timer t;
  const double copyUs = t.us([&] { CHECK(cudaMemcpyAsync((char *)big + copyBytes, big, copyBytes, cudaMemcpyDeviceToDevice)); }, 10);
  std::printf("device %s, %d SMs; copy bandwidth %.3f TB/s (read + write); K/V %.0f MiB\n\n", prop.name,
              prop.multiProcessorCount, 2 * copyBytes / copyUs / 1e6, bytes / (1 << 20));
  std::printf("| variant | keys/tile | stages | threads | splits | blocks/SM | us | TB/s |\n|---|---|---|---|---|---|---|---|\n");
  auto row = [&](const char *name, int kt, int st, int nt, int splits, int occ, double us) {
    std::printf("| %s | %d | %d | %d | %d | %d | %.1f | %.2f |\n", name, kt, st, nt, splits, occ, us, bytes / us / 1e6);
  };
  // One variant: KERNEL<KT, ST, NT> over (KV heads, SPLITS) blocks, its
  // stages' shared memory asked for, its blocks an SM reported.
#define TILED(KERNEL, KT, ST, NT, SPLITS)                                                                              \
  {                                                                                                                    \
    const size_t smem = (size_t)ST * 2 * KT * RS * 16;                                                                 \
    auto fn = KERNEL<KT, ST, NT>;                                                                                      \
    CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));                          \
    const int occ = occupancy((const void *)fn, NT, smem);                                                             \
    row(#KERNEL, KT, ST, NT, SPLITS, occ, t.us([&] { fn<<<dim3(KVH, SPLITS), NT, smem>>>(k, v, out); }));            \
  }
#define STAGE(KT, ST, NT, SPLITS) TILED(stage, KT, ST, NT, SPLITS)
#define BULK(KT, ST, NT, SPLITS) TILED(bulk, KT, ST, NT, SPLITS)
  // The decode kernel's own shape first: 64-key tiles, 2 stages, 128 threads, 171 splits.
  STAGE(64, 2, 128, 171)
  STAGE(64, 2, 128, 264)
  STAGE(64, 3, 128, 171)
  STAGE(64, 4, 128, 171)
  STAGE(32, 4, 128, 171)
  STAGE(32, 6, 128, 264)
  STAGE(64, 2, 256, 171)
  STAGE(128, 2, 256, 132)
  STAGE(16, 8, 128, 264)
  BULK(64, 2, 128, 171)
  BULK(64, 3, 128, 171)
  BULK(64, 4, 128, 171)
  BULK(32, 4, 128, 264)
  BULK(16, 8, 128, 264)
  BULK(64, 6, 128, 132)
#define LDG(U, NT, BLOCKS)                                                                                             \
  {                                                                                                                    \
    auto fn = ldg<U, NT>;                                                                                              \
    const int occ = occupancy((const void *)fn, NT, 0);                                                                \
    row("ldg x" #U, 0, 0, NT, BLOCKS, occ, t.us([&] { fn<<<BLOCKS, NT>>>(k, v, out, words); }));                      \
  }
  const int sms = prop.multiProcessorCount;
  LDG(4, 256, sms * 8)
  LDG(8, 256, sms * 4)
  LDG(8, 128, sms * 3)
  LDG(16, 128, sms * 3)
  return 0;
}
