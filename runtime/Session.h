// The device-neutral half of running a plan: a Decoder over any Executor.
//
// The Session keeps the slot bookkeeping (each slot's length, its batch
// item's cross-cache entry), checks what the search loop asks for, splits
// prefill into pieces of at most the plan's max_tokens (chunked prefill),
// picks @decode_step or @prefill with its symbols, and lays out the packed
// token ids, positions, logit rows and attention context of each run. The
// executor below it only runs programs.
#pragma once
#include "runtime/Decoder.h"
#include "runtime/Executor.h"

#include <functional>
#include <memory>

namespace genrt {

class Session final : public Decoder {
public:
  Session(std::shared_ptr<const Plan> plan, std::unique_ptr<Executor> exec);

  const ModelInfo &info() const override { return plan_->model; }
  int32_t maxSlots() const override;
  void resetSlot(int32_t slot) override;
  int64_t slotLength(int32_t slot) const override;
  Status forward(const std::vector<Chunk> &chunks, const ChoiceRequest &request, ChoiceAnswer &answer) override;
  bool chooses(const ChoiceRequest &request) const override;
  Status reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src) override;
  Status reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                      const std::vector<int64_t> &shared) override;
  Status encode(const std::vector<int64_t> &sourceIds, const std::vector<int32_t> &slots) override;
  Status encodeSources(const std::vector<std::vector<int64_t>> &sources,
                       const std::vector<std::vector<int32_t>> &slots) override;
  int64_t memoryBytes() const override { return exec_->memoryBytes(); }
  std::string memoryReport() const override { return exec_->memoryReport(); }
  std::string choiceReport() const override { return exec_->choiceReport(); }
  std::string deviceName() const override { return exec_->deviceName(); }
  std::string kvReport() const override;

  Executor &executor() { return *exec_; }

private:
  /// A run's share of one chunk: some of its tokens.
  struct Piece {
    int32_t slot;
    std::vector<int64_t> tokens;
    int64_t logitRow; // the output row this piece's last token gives; -1: none
    int64_t firstRow = -1; // an everyToken chunk's piece: its first token's row (each token gives one)
  };
  /// The run of the pieces: program, symbols, ids, positions, attention context.
  Status buildRun(const std::vector<Piece> &pieces, ProgramRun &run) const;
  /// What forward() refuses before running anything (slots, lengths, ids).
  Status checkChunks(const std::vector<Chunk> &chunks) const;
  /// The chunks as runs of at most max_tokens tokens, in order.
  Status eachRun(const std::vector<Chunk> &chunks, const std::function<Status(const std::vector<Piece> &)> &run) const;
  /// Checks the run's symbols against the program's maximums.
  static Status checkSymbols(const ProgramRun &run);
  /// After a run succeeded: its slots' lengths and (shared prompts) places.
  void advance(const ProgramRun &run);

  std::shared_ptr<const Plan> plan_;
  std::unique_ptr<Executor> exec_;
  KvLayout kv_; // the caches as the executor keeps them (Executor::sharesPrompts)
  KvRows rows_; // shared prompts: where each slot's positions live
  std::vector<int64_t> lengths_;      // per slot
  std::vector<int32_t> entryOfSlot_;  // encoder-decoder: slot -> cross entry (-1: none)
  std::vector<int64_t> crossLengths_; // per cross entry: source length (0: free of data)
  bool splitDecode_ = false;          // decode rows and prompt pieces as two runs (eachRun)
};

} // namespace genrt
