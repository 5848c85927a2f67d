// A compiled plan as the runtime holds it: weights, KV cache layout and the
// programs (@encode for encoder-decoder, @prefill, @decode_step) as lists of ops over planned buffers.
//
// The file format (runtime/plan/PlanFormat.h) is JSON metadata plus one aligned
// binary blob; the loader (PlanLoader.cpp) checks every offset and size.
#pragma once
#include "runtime/plan/Attr.h"
#include "runtime/Decoder.h"
#include "runtime/plan/Dim.h"
#include "runtime/kv/KvLayout.h"
#include "runtime/Status.h"
#include "runtime/plan/StepSchedule.h"
#include "runtime/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace genrt {

// Local: a value inside a fused body (Plan::functions), held by the executor
// while the body runs; bodies have no arena.
enum class Storage : uint8_t { Argument, Weight, Arena, Local };

struct ValueInfo {
  DType dtype = DType::F32;       // the IR's: what the math sees (f32 for any float)
  /// How the value lies in memory: the plan's activation dtype for float
  /// activations, f32 for what the host reads or writes (arguments, logits).
  /// Arena buffers are sized for it.
  DType stored = DType::F32;
  Shape shape;                    // over the program's symbols (tokens, rows)
  Storage storage = Storage::Arena;
  int32_t index = -1;             // argument or weight index
  int64_t offset = 0;             // arena byte offset
  int64_t maxBytes = 0;           // bytes at the program's maximum symbols
};

struct OpInfo {
  std::string kind;
  std::vector<int32_t> operands, results; // indexes into Program::values
  AttrMap attrs;
  std::string loc;
};

struct Program {
  std::string name;
  std::vector<ValueInfo> values;
  std::vector<OpInfo> ops;
  std::vector<int32_t> arguments, outputs;
  std::vector<std::string> argumentNames, outputNames;
  std::map<std::string, int64_t> maxSymbols; // symbol -> largest value the arena allows
  int64_t arenaBytes = 0;
};

/// A generated kernel of a fused body (codegen/CudaEmitter.h): how to launch
/// it. Parameters: one `long long` per symbol (in this order), a pointer per
/// body argument, a pointer per body result, each 16-byte aligned.
struct KernelInfo {
  std::string name;             // = the fused body's and the entry point's name
  std::string mode;             // "elementwise" (grid-stride) or "rows" (a block per row)
  std::vector<std::string> symbols;
  int64_t numInputs = 0, numOutputs = 0;
  /// Element type of each pointer parameter in memory. The body's value may
  /// say f32 (its math type) where the buffer holds f16/bf16.
  std::vector<DType> inputDTypes, outputDTypes;
  Dim work;                     // threads' work items: elements or vectors (elementwise), rows
  Dim sharedFloats;             // dynamic shared memory, in floats
  int64_t blockSize = 0;
};

/// Code for every kernel at once, for one architecture: a cubin ("sm_80") or
/// PTX ("compute_80"); a view into the mapped plan.
struct KernelCode {
  std::string arch;
  const uint8_t *data = nullptr;
  uint64_t bytes = 0;
};

struct Plan {
  ModelInfo model;
  /// How float activations are stored on the GPU (f32, f16, bf16): the
  /// buffers GEMMs, attention and kernels pass to one another, except the
  /// programs' arguments and outputs (logits), which stay f32. Math is fp32;
  /// the CPU executor computes in f32 whatever this says.
  DType activationDType = DType::F32;
  std::vector<std::string> weightNames;
  std::vector<Tensor> weights;       // views into the mapped file
  std::map<std::string, Program> programs;
  /// Bodies of `fused` ops (passes/Fuse.cpp), by name: the ops a generated
  /// kernel computes, which the CPU executor runs one by one.
  std::map<std::string, Program> functions;
  /// GPU kernels of the fused bodies (empty where genc had no NVRTC).
  std::vector<KernelInfo> kernels;
  std::vector<KernelCode> cubins, ptx;
  /// The kernel contract the kernels were generated for
  /// (runtime/cuda/KernelAbi.h); 1 where the plan does not say.
  int64_t kernelAbi = 1;
  KvLayout kv; // self-attention caches, and cross-attention caches of encoder-decoders
  int64_t maxTokens = 0;             // tokens per prefill forward
  /// The compile profile (YAML) genc built the plan with; empty for plans
  /// from before profiles. The runtime only carries it for genc inspect.
  std::string profile;
  /// The tokenizer.json genc packed, a view into the mapped plan (empty:
  /// none); runtime/text/PlanTokenizer.h builds the tokenizer from it.
  std::string_view tokenizerJson;
  /// What the tokenizer section carries for chat (genc compile packs it
  /// from tokenizer_config.json / chat_template.jinja): the special tokens
  /// transformers passes to a chat template (its special_tokens_map), and
  /// the chat templates by name ("": the one unnamed template).
  std::map<std::string, std::string> specialTokens, chatTemplates;
  /// @decode_step as the step kernel's work items (empty: the plan's step
  /// runs kernel by kernel); verified against the program and the weights.
  StepSchedule step;
  std::shared_ptr<const void> mapping;

  const Program *program(const std::string &n) const {
    auto it = programs.find(n);
    return it == programs.end() ? nullptr : &it->second;
  }
  int64_t weightBytes() const;
  int64_t arenaBytes() const; // one arena serves every program (they never overlap)
};

/// Loads and verifies a plan file (runtime/plan/PlanVerifier.h). Errors name what
/// is wrong (bad magic, other format version, an offset outside the file,
/// an op that reads a value before it is defined, ...). A path that is not a
/// regular file (a directory, a named pipe) is refused without waiting.
Status loadPlan(const std::string &path, Plan &out);
/// The same over a plan's bytes in memory (`name` names it in errors);
/// `owner` keeps the bytes alive for the plan's weight views.
Status loadPlanFromMemory(std::shared_ptr<const void> owner, const uint8_t *data, size_t size,
                          const std::string &name, Plan &out);

} // namespace genrt
