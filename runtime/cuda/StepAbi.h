// The contract between the step kernel genc generates into a plan
// (codegen/StepKernel.cpp) and the CUDA executor that runs it
// (runtime/cuda/StepRunner.cpp): one launch runs a decode step's every op as
// the work items of the plan's schedule (runtime/plan/StepSchedule.h).
//
//   genc_step   grid (schedule.blocks), block schedule.threads compute
//       threads (4 or 7 warps) and a copy warp (stepBlockThreads), one block
//       an SM (all resident at once: the blocks wait on one another's
//       items), dynamic shared memory as the plan's step section says.
//       Block b runs items order[start[b] .. start[b + 1]) in order (tasks[k]:
//       item order[k] with its op's waits, read one entry ahead). Before an
//       item its thread 0 waits (a bounded spin on acquire loads) until each
//       of its op's waits has reached its count; after it, the last compute
//       warp's lane 0 adds one to the op's counter (a release), while thread 0
//       goes on to the next item's waits. A Matvec item's weight rows reach
//       shared memory by bulk copies (cp.async.bulk, sm_90) into a ring of
//       pages that the copy warp keeps full along the block's list, so the
//       next items' weights stream while an item waits or computes. The last
//       block to finish sets every counter back to zero for the next step.
//       A wait that passes `timeoutNs` writes the item into `error` and the
//       kernel ends: the executor reports it by name.
#pragma once
#include "runtime/cuda/AttentionAbi.h"

#include <cstdint>

#define GENC_STEP_STR(...) #__VA_ARGS__
#define GENC_STEP_XSTR(...) GENC_STEP_STR(__VA_ARGS__)

// clang-format off
#define GENC_STEP_ABI                                                                              \
  struct GencStepWaits {                                                                          \
    int n;                               /* waits in use */                                       \
    int counter[6], need[6];                                                                      \
  };                                                                                               \
  struct GencStepMatvec {                /* y = epilogue(prologue(a) . w^T + bias) */               \
    unsigned long long w;                /* [N, K], K contiguous */                                 \
    unsigned long long a;                /* [K] when there is no prologue */                        \
    unsigned long long bias, y;          /* [N], the product or the GLU's result */                 \
    long long N, K;                      /* weight rows, their length */                            \
    long long rowBytes, rowsPerPage;     /* a page: rowsPerPage outputs' rows */                    \
    long long sym[4];                    /* the prologue body's symbols */                          \
    unsigned long long ptr[12];          /* and its arguments, then results (0: not written) */    \
    int consumed;                        /* the prologue result the product reads */                \
    int glu;                             /* 1: weight rows n and N/2 + n make output n */           \
  };                                                                                               \
  struct GencStepRows {                  /* a fused row op on its own */                            \
    long long sym[4];                                                                              \
    unsigned long long ptr[12];                                                                    \
  };                                                                                               \
  struct GencStepOp {                                                                              \
    int kind, code;                      /* StepOpKind; the generated routine */                    \
    GencStepWaits waits;                                                                           \
    GencStepMatvec mv;                                                                             \
    GencStepRows rows;                                                                             \
    GencAttnParams attn;                 /* this layer's, as the attention step fills it */         \
  };                                                                                               \
  struct GencStepItem {                                                                           \
    int op, first, count;                                                                          \
  };                                                                                               \
  struct GencStepTask {                  /* entry k of the blocks' lists: item order[k], its op's waits */\
    int item, op, first, count;          /* (the runner's copy: one load a step, no chain of them) */\
    GencStepWaits waits;                                                                           \
    int pad[3];                          /* 80 bytes: five 16-byte words */                         \
  };                                                                                               \
  struct GencStepArgs {                  /* per step, staged with the run's inputs */               \
    long long tokens;                    /* rows of the step */                                     \
    long long splits;                    /* attention: splits of each token's keys */              \
  };                                                                                               \
  struct GencStepError {                                                                          \
    unsigned code;                       /* 0: none; 1: a wait timed out */                         \
    int item, op, counter;               /* where */                                                \
    unsigned have, need;                                                                           \
  };                                                                                               \
  struct GencStepParams {                                                                          \
    unsigned long long ops, items, order, blockStart; /* GencStepOp [], GencStepItem [], int [] */  \
    unsigned long long counters;         /* u32 [ops], zero between steps */                        \
    unsigned long long done;             /* u32, zero between steps */                              \
    unsigned long long args;             /* GencStepArgs */                                         \
    unsigned long long error;            /* GencStepError */                                        \
    long long nops;                                                                                \
    long long timeoutNs;                                                                           \
    unsigned long long trace;            /* u64 [items][6] (GENC_CUDA_STEP_TRACE) or 0 */           \
    long long stallOp;                   /* GENC_CUDA_STEP_STALL: this op never signals; -1 */      \
    unsigned long long tasks;            /* GencStepTask [order's length] */                        \
  };
// clang-format on

namespace genrt::cuda {
GENC_STEP_ABI
constexpr char kGencStepAbiSource[] = GENC_STEP_XSTR(GENC_STEP_ABI);

static_assert(sizeof(GencStepTask) == 80, "a step task is five 16-byte words");

/// A digest of the parameters' form above (FNV-1a of their text), which genc
/// writes into the plan's schedule: a runner whose form differs declines the
/// plan's step kernel (it would read its parameters wrongly) and says so.
constexpr uint32_t stepAbiDigest(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; ++s)
    h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
  return h;
}
constexpr uint32_t kStepAbiDigest = stepAbiDigest(kGencStepAbiSource);

/// The most waits a step op carries.
constexpr int kStepMaxWaits = 6;
/// A wait on a counter ends the step with an error past this (a bug or a
/// damaged plan; a healthy step of the largest plans takes milliseconds).
constexpr long long kStepTimeoutNs = 2'000'000'000;

} // namespace genrt::cuda
