// The decode step as the work items of one persistent kernel (the step
// kernel): what genc's schedule-step pass decides at compile time and the
// plan carries (PlanFormat.h, "step"), verified on load like every section.
//
// Each step op is one op of @decode_step as the kernel runs it: a matrix-
// vector product over a tile of its output rows (with the fused row op
// before it and the elementwise op after it inside, where GEMV fusion takes
// them), a fused row op of its own, or attention's decode and merge. An op's
// items split its work; every item of an op waits until the ops it reads
// from have finished (a counter per op: each of its items adds one when
// done) and adds one to its own op's counter. Each block of the kernel runs
// its list of items in order; the matrix items' weight rows stream through
// a ring of shared-memory pages ahead of the item computing, so the next
// op's weights load while the current op waits on its inputs.
#pragma once
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace genrt {

struct Program;
class Tensor;
namespace json {
class Value;
}

/// The most rows (tokens) a step of the step kernel takes: a product keeps
/// a sum a row in registers and every row of its input in shared memory.
constexpr int64_t kStepMaxRows = 8;
/// A step-kernel block's shared memory (dynamic and static) where `perSm`
/// blocks share an sm_90 SM's 228 KB, less the 1 KB the driver keeps for each.
constexpr int64_t stepSharedLimit(int64_t perSm) { return (int64_t(228) << 10) / (perSm < 1 ? 1 : perSm) - 1024; }

enum class StepOpKind : int32_t {
  Matvec = 0,     // rows of a matmul's product (+ prologue row op, + GLU epilogue)
  Rows = 1,       // a fused op on its own: rows of it (a block per row), or its elements
  AttnDecode = 2, // kv_attention's decode blocks: (KV head part, split), every token of the run
  AttnMerge = 3,  // kv_attention's merge of the splits: a query head, every token
};
const char *stepOpKindName(StepOpKind k); // "matvec", "rows", "attn_decode", "attn_merge"

struct StepWait {
  int32_t counter = -1; // a step op's counter
  int32_t need = 0;     // the value it must reach (that op's item count)
};

struct StepOp {
  StepOpKind kind = StepOpKind::Matvec;
  int32_t op = -1;     // @decode_step's op: the matmul, the fused op, the kv_attention
  int32_t before = -1; // Matvec: the fused row op it runs first (its prologue); -1: none
  int32_t after = -1;  // Matvec: the elementwise fused op it runs on its products (a GLU); -1: none
  int32_t layer = -1;  // the model layer, for messages (-1: none)
  /// Matvec: outputs (weight rows, half of them with a GLU); Rows: rows or
  /// elements it covers at the most rows; attention: decode blocks (KV head
  /// parts) or merge heads.
  int64_t units = 0;
  int64_t rowBytes = 0; // Matvec: one weight row's bytes (K times the element size)
  int32_t splits = 0;   // AttnDecode: the most splits of a token's keys (items per head part)
  int32_t code = -1;    // the step kernel's routine for it (codegen/StepKernel.cpp)
  std::vector<StepWait> waits;
  std::string name; // "layer 3 matmul \"/m/...\"": what an error names
};

/// One work item. Matvec: outputs [first, first + count); Rows: units
/// first, first + count, ... (a stride of `count` over the op's units: row
/// r of the run is unit r); AttnDecode: head part `first`, split `count`;
/// AttnMerge: heads [first, first + count).
struct StepItem {
  int32_t op = 0;
  int32_t first = 0, count = 0;
};

struct StepSchedule {
  int32_t blocks = 0;  // persistent blocks (the SMs of the target GPU, times blocksPerSm)
  int32_t blocksPerSm = 1; // blocks that share an SM, each with that share of its shared memory (1..4)
  int32_t threads = 0; // compute threads a block (128 or 256; the copy warp comes on top: stepBlockThreads)
  int64_t pageBytes = 0; // one page of the weight ring
  int32_t pages = 0;     // pages in the ring
  int64_t maxRows = 0;   // the most rows (tokens) of a step it runs
  int32_t codes = 0;     // routines in the kernel (an op's code is below)
  int64_t sharedBytes = 0; // the kernel's dynamic shared memory
  int64_t abi = 0;         // the kernel's parameter form (runtime/cuda/StepAbi.h's digest; 0: a plan before it)
  std::vector<StepOp> ops;
  std::vector<StepItem> items;
  std::vector<int32_t> order;      // item indices, block by block
  std::vector<int32_t> blockStart; // blocks + 1 offsets into `order`
  bool empty() const { return ops.empty(); }
  /// Pages (ring slots of pageBytes) the Matvec item streams: a page holds
  /// whole weight rows (two sets, gate and up, with a GLU).
  int64_t rowsPerPage(const StepOp &op) const;
  int64_t itemPages(const StepItem &it) const;
  /// Bytes of weights item `it` reads.
  int64_t itemBytes(const StepItem &it) const;
};

/// A block of the step kernel: its compute threads and the copy warp that
/// streams the weight pages.
inline int32_t stepBlockThreads(const StepSchedule &s) { return s.threads + 32; }

/// Everything a plan's schedule must be before a kernel runs it, against
/// the plan's @decode_step and weights: ops that exist and are of the kind
/// named, weight rows within their weights, items within their ops, every
/// item of every op in exactly one block's list, waits on counters that
/// exist and reach their need, and an order in which no block waits on an
/// item that can only come after it (a simulation of the blocks' lists:
/// a cycle or a deadlock is refused). Errors name the op or item.
Status verifyStepSchedule(const StepSchedule &s, const Program &decode, const std::vector<Tensor> &weights);

/// The plan's form of a schedule (JSON): a header, the ops, and the items,
/// the order and the block starts as flat integer arrays.
std::string stepScheduleJson(const StepSchedule &s);
/// Reads it back (shapes only: verifyStepSchedule checks the meaning).
Status parseStepSchedule(const json::Value &v, StepSchedule &out);

/// A readable listing (genc inspect --print-step-schedule): the header, each
/// op with its waits and items, and each block's list.
std::string printStepSchedule(const StepSchedule &s, bool blocks);

} // namespace genrt
