// A CUDA injection library (CUDA_INJECTION64_PATH) that writes every kernel's
// device start and end, as CUPTI's activity records see them, to the CSV file
// GENC_TRACE_OUT: "start_ns,end_ns,name". Kernels replayed from a CUDA graph
// come out one record a node, so bench/trace_step.sh can see a decode step
// inside the graph, dependent-launch overlap included, where Nsight Systems
// is not installed (the GPU machine has only the toolkit's libcupti).
// Not part of the product: the runtime wall (driver API, cuBLASLt, C++
// standard library) holds; tools/pack.sh builds it where CUPTI's headers are.
//
//   g++ -shared -fPIC -O2 -I/usr/local/cuda/include bench/kernel_trace.cpp
//       -L/usr/local/cuda/lib64 -lcupti -o libgenc_trace.so      (one line)
//   CUDA_INJECTION64_PATH=$PWD/libgenc_trace.so GENC_TRACE_OUT=k.csv genrun ...
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::FILE *out = nullptr;
std::mutex outLock;

void CUPTIAPI bufferRequested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
  *size = 8u << 20;
  *buffer = static_cast<uint8_t *>(std::aligned_alloc(8, *size));
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid) {
  CUpti_Activity *r = nullptr;
  std::lock_guard<std::mutex> hold(outLock);
  while (out && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(r);
      std::fprintf(out, "%llu,%llu,%s\n", static_cast<unsigned long long>(k->start),
                   static_cast<unsigned long long>(k->end), k->name ? k->name : "?");
    }
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> hold(outLock);
  if (out)
    std::fclose(out);
  out = nullptr;
}

} // namespace

extern "C" int InitializeInjection() {
  const char *path = std::getenv("GENC_TRACE_OUT");
  out = std::fopen(path ? path : "kernels.csv", "w");
  if (!out)
    return 0;
  if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_trace: CUPTI would not trace kernels\n");
    return 0;
  }
  std::atexit(finish);
  return 1;
}
