// The interface between the device-neutral Session (runtime/Session.h) and a
// device's executor (runtime/cpu, runtime/cuda). The Session decides which
// tokens run, in which slot, at which position, with which program; an
// executor only runs that program over its weights, arena and caches.
#pragma once
#include "runtime/Choice.h"
#include "runtime/kv/KvRows.h"
#include "runtime/plan/Program.h"
#include "runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace genrt {

enum class ProgramKind { Encode, Prefill, Decode };

/// Where one packed token belongs: what an attention op needs to read and
/// append the right cache rows.
struct TokenPlace {
  int32_t slot = 0;
  int64_t position = 0;     // its position in the slot's sequence
  int64_t cachedBefore = 0; // the slot's length before this run: positions below it
                            // come from the cache, the rest from this run's tokens
  KvRef write;              // where its K/V go: (slot, position) without shared prompts
};

/// One packed source of an @encode run: tokens [start, start + len), whose
/// K/V fill cross-cache entry `entry`.
struct SourceSegment {
  int64_t start = 0, len = 0;
  int32_t entry = -1;
};

/// Whether an @encode run's segments can be stored as the executors store
/// them: they tile [0, tokens) in order, each at most the cache's length,
/// each into its own entry of the cross cache. A Session builds only such
/// runs; the executors check before writing.
inline bool segmentsFit(const std::vector<SourceSegment> &segments, int64_t tokens, const KvLayout &kv) {
  int64_t next = 0;
  std::vector<char> used(static_cast<size_t>(kv.crossEntries > 0 ? kv.crossEntries : 0), 0);
  for (const SourceSegment &sg : segments) {
    if (sg.start != next || sg.len <= 0 || sg.len > kv.maxSourceLength || sg.entry < 0 || sg.entry >= kv.crossEntries ||
        used[static_cast<size_t>(sg.entry)])
      return false;
    used[static_cast<size_t>(sg.entry)] = 1;
    next += sg.len;
  }
  return !segments.empty() && next == tokens;
}

/// The attention context of a run: token -> slot and position, and for
/// encoder-decoders token -> cross-cache entry. The Session builds it once
/// per run; every attention op of the program reads it.
struct AttentionContext {
  std::vector<TokenPlace> tokens;          // @prefill / @decode_step
  std::vector<int32_t> crossEntryOfToken;  // encoder-decoder @prefill / @decode_step
  std::vector<int64_t> crossLengths;       // per cross entry: its source's length (0: empty)
  std::vector<SourceSegment> segments;     // @encode
  /// Shared prompts (Executor::sharesPrompts): where each slot's cached
  /// positions live; null: position p of slot s is (s, p).
  const KvRows *rows = nullptr;
  KvRef cached(int32_t slot, int64_t p) const {
    return rows ? rows->at(slot, p) : KvRef{slot, static_cast<int32_t>(p)};
  }
};

/// One run of a program: its arguments and symbols, laid out by the Session.
struct ProgramRun {
  ProgramKind kind = ProgramKind::Prefill;
  const Program *program = nullptr;
  std::map<std::string, int64_t> symbols; // tokens and rows, or src_tokens
  std::vector<int64_t> inputIds, positions;
  std::vector<int64_t> logitRows; // @prefill: the packed rows whose logits are wanted
  AttentionContext attention;
};

/// What a user may choose about an executor when opening a plan.
struct ExecutorOptions {
  int threads = 0; // CPU: worker threads (0: the machine's physical cores)
  int gpus = 1;    // CUDA: GPUs of this machine (> 1: tree attention over them)
};

class Executor {
public:
  virtual ~Executor() = default;
  /// "cpu", "cuda: NVIDIA H100 80GB HBM3 (sm_90)": what genrun --stats names.
  virtual std::string deviceName() const = 0;

  /// Runs @prefill or @decode_step, appends every token's K/V to its slot,
  /// and answers `request` for the run's output rows (runtime/Choice.h; the
  /// rows of ProgramRun::logitRows, or every token of a decode step) into
  /// `answer` (null: nothing comes back, e.g. a tree-attention group's other
  /// GPUs). The Session passes only requests chooses() accepts.
  virtual Status run(const ProgramRun &run, const ChoiceRequest &request, ChoiceAnswer *answer) = 0;
  /// Whether run() answers `request` in a run of `kind` where the logits
  /// are (the GPU: only the choices cross to the host). Every executor
  /// answers Logits; for the rest the Session takes the logits and answers
  /// on the host.
  virtual bool chooses(const ChoiceRequest &request, ProgramKind kind) const {
    return request.kind == ChoiceKind::Logits;
  }
  /// Runs @encode over its packed sources and stores each one's K/V in the
  /// cross-cache entry of its segment (run.attention.segments).
  virtual Status encode(const ProgramRun &run) = 0;
  /// Whether the executor keeps the plan's KV layout as it is, shared
  /// prompts included (reading cached positions through
  /// AttentionContext::rows; a reorder moves no rows). Without it the
  /// executor keeps plan.kv.unshared() and the Session calls copySlots.
  virtual bool sharesPrompts() const { return false; }
  /// Beam reordering: slot dst[k] takes the first lengths[src[k]] positions
  /// of slot src[k] as they were before the call; its positions below
  /// from[k] already hold the same (a prompt its beams share), so only
  /// [from[k], length) move (all of a rolling buffer that wrapped).
  virtual Status copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                           const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) = 0;

  /// Bytes the executor holds: weights + caches + arena (+ workspaces).
  virtual int64_t memoryBytes() const = 0;
  /// A line for --stats: what the bytes are (e.g. the cuBLASLt workspace).
  virtual std::string memoryReport() const { return {}; }
  /// A line for --stats: where the runs' tokens were chosen (empty: on the
  /// host, from the logits, always).
  virtual std::string choiceReport() const { return {}; }
  /// The memory the device offered this executor before it allocated
  /// (a GPU's free memory at open; the host's for the CPU); 0: unknown.
  virtual int64_t deviceBytes() const { return 0; }
};

} // namespace genrt
