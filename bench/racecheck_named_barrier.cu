// racecheck's reading of named barriers with a thread count, the step
// kernel's pattern (bench/racecheck_step.sh builds and checks it): a
// 256-thread block whose first 7 warps meet on `bar.sync 2, 224` and whose
// 8th (the step kernel's copy warp) never joins them; per item, warps 1..6
// copy a record into shared memory, every compute warp reads it after a
// barrier, the first 4 warps run a routine of their own on `bar.sync 1, 128`
// while the others wait at the item's closing barrier; the block ends on
// __syncthreads. There is no race: a hazard racecheck reports here is its
// own reading of the barriers.
#include <cstdio>

__global__ void named_barriers(int *out, int items) {
  __shared__ int rec[8];
  __shared__ int scratch[128];
  const int tid = threadIdx.x;
  if (tid >= 224) {
    for (volatile int spin = 0; spin < 1000; ++spin) {
    }
  } else {
    for (int i = 0; i < items; ++i) {
      if (tid >= 32 && tid < 40) rec[tid - 32] = i + tid; // the item's record
      asm volatile("bar.sync 2, 224;" ::: "memory");
      int v = rec[tid & 7];
      if (tid < 128) { // a routine of the first four warps
        scratch[tid] = v;
        asm volatile("bar.sync 1, 128;" ::: "memory");
        v += scratch[127 - tid];
        asm volatile("bar.sync 1, 128;" ::: "memory");
      }
      out[tid] += v;
      asm volatile("bar.sync 2, 224;" ::: "memory"); // the item's closing barrier
    }
  }
  __syncthreads();
}

int main() {
  int *out = nullptr;
  if (cudaMalloc(&out, 256 * sizeof(int)) != cudaSuccess || cudaMemset(out, 0, 256 * sizeof(int)) != cudaSuccess)
    return 1;
  named_barriers<<<1, 256>>>(out, 4);
  int h[256];
  if (cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  // thread 200 reads rec[0] = i + 32 each item: 32 + 33 + 34 + 35
  std::printf("named barriers: thread 200 summed %d (expected 134)\n", h[200]);
  return h[200] == 134 ? 0 : 1;
}
