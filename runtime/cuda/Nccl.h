// NCCL, opened at run time (dlopen of libnccl.so.2, or GENC_NCCL_LIB), only
// when genrun is asked for more than one GPU: the few entry points tree
// attention's combine uses, declared here with NCCL's stable C ABI so that
// building genrun needs no NCCL headers.
#pragma once
#include "runtime/Status.h"

#include <cuda.h>

#include <cstddef>
#include <string>

namespace genrt::cuda {

typedef struct ncclComm *ncclComm_t;
struct NcclUniqueId {
  char internal[128];
};
enum NcclResult : int { kNcclSuccess = 0, kNcclInProgress = 7 };
enum NcclOp : int { kNcclSum = 0, kNcclMax = 2 };
constexpr int kNcclFloat32 = 7;

struct NcclApi {
  int (*getVersion)(int *) = nullptr;
  int (*getUniqueId)(NcclUniqueId *) = nullptr;
  int (*commInitRank)(ncclComm_t *, int, NcclUniqueId, int) = nullptr;
  int (*commDestroy)(ncclComm_t) = nullptr;
  int (*commAbort)(ncclComm_t) = nullptr;
  int (*commGetAsyncError)(ncclComm_t, int *) = nullptr;
  int (*allReduce)(const void *, void *, size_t, int, int, ncclComm_t, CUstream) = nullptr;
  int (*allGather)(const void *, void *, size_t, int, ncclComm_t, CUstream) = nullptr;
  const char *(*getErrorString)(int) = nullptr;
  std::string library; // what was opened
  int version = 0;     // e.g. 22703

  /// "ncclAllReduce failed: unhandled cuda error" for a failed call.
  Status check(int r, const char *what) const {
    return r == kNcclSuccess ? Status::ok()
                             : Status::error(std::string("NCCL: ") + what + " failed: " +
                                             (getErrorString ? getErrorString(r) : std::to_string(r)));
  }
};

/// NCCL, opened once per process (`library`, where not empty, is the only
/// one tried: GENC_NCCL_LIB; the first call's is kept); nullptr (with the
/// reason in `err`) where it cannot be.
const NcclApi *nccl(const std::string &library, Status &err);

} // namespace genrt::cuda
