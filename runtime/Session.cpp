#include "runtime/Session.h"

#include "runtime/Env.h"
#include "runtime/choice/OnHost.h"

#include <algorithm>

namespace genrt {

Session::Session(std::shared_ptr<const Plan> plan, std::unique_ptr<Executor> exec)
    : plan_(std::move(plan)), exec_(std::move(exec)),
      kv_(exec_->sharesPrompts() ? plan_->kv : plan_->kv.unshared()) {
  if (kv_.sharesPrompts())
    rows_ = KvRows(kv_);
  lengths_.assign(maxSlots(), 0);
  // GENC_SPLIT_DECODE=1: a step's decode rows as their own run (on the GPU
  // their CUDA graph) and its prompt pieces as another. Off until measured
  // on a GPU; the CPU would read its weights twice.
  splitDecode_ = env::choice("GENC_SPLIT_DECODE", {0, 1}, 0) == 1;
  if (plan_->model.encoderDecoder) {
    entryOfSlot_.assign(maxSlots(), -1);
    crossLengths_.assign(plan_->kv.crossEntries, 0);
  }
}

int32_t Session::maxSlots() const { return static_cast<int32_t>(plan_->kv.slots); }

void Session::resetSlot(int32_t slot) {
  if (slot < 0 || slot >= maxSlots())
    return;
  lengths_[slot] = 0;
  if (kv_.sharesPrompts())
    rows_.release(slot);
  if (!entryOfSlot_.empty())
    entryOfSlot_[slot] = -1;
}

// The caches as shared (each source's cross-attention K/V once per batch
// item; with shared prompts, each prompt's K/V once too, and each beam
// only the tokens it generates), as they would be with a copy per beam, and
// how many batch items of the plan's lengths the device holds: its memory
// less the weights, over one item's share of everything else. Not just the
// caches: the executors' per-row buffers (beam reorder scratch, token work)
// grow with the batch too — counting them as fixed promised BART-large 291
// items where 261 ran (H100).
std::string Session::kvReport() const {
  const KvLayout &kv = kv_;
  const int64_t beams = std::max<int64_t>(1, plan_->model.maxBeams);
  const int64_t batch = std::max<int64_t>(1, kv.slots / beams);
  const int64_t shared = kv.selfBytes() + kv.crossBytes(),
                unshared = kv.unshared().selfBytes() + kv.crossBytes() * beams;
  std::string what = kv.sharesPrompts() ? "its own copy of the prompt" : "";
  if (!kv.crossLayers.empty())
    what += (what.empty() ? "" : " and ") + std::string("its own cross-attention K/V");
  std::string line = "kv cache " + std::to_string(shared) + " bytes";
  if (!what.empty())
    line += " (" + std::to_string(unshared) + " without sharing: each beam " + what + ")";
  else if (plan_->kv.sharesPrompts())
    line += " (this device keeps a copy of the prompt a beam)";
  const int64_t offered = exec_->deviceBytes(), fixed = plan_->weightBytes();
  const int64_t perItem = (exec_->memoryBytes() - fixed) / batch, perItemUnshared = perItem + (unshared - shared) / batch;
  if (offered <= 0 || perItem <= 0)
    return line + "; the device's memory is not known here";
  const int64_t largest = offered > fixed ? (offered - fixed) / perItem : 0;
  const int64_t largestUnshared = offered > fixed ? (offered - fixed) / perItemUnshared : 0;
  const std::string length = kv.crossLayers.empty()
                                 ? std::to_string(kv.maxLength) + " positions"
                                 : std::to_string(kv.maxSourceLength) + " source and " + std::to_string(kv.maxLength) +
                                       " decoder positions";
  return line + "; this device holds " + std::to_string(largest) + " sequences of " + length + " with " +
         std::to_string(beams) + " beams (" + std::to_string(largestUnshared) + " without sharing)";
}

int64_t Session::slotLength(int32_t slot) const {
  return slot >= 0 && slot < maxSlots() ? lengths_[slot] : 0;
}

Status Session::checkSymbols(const ProgramRun &run) {
  for (const auto &[sym, value] : run.symbols) {
    auto it = run.program->maxSymbols.find(sym);
    if (it != run.program->maxSymbols.end() && value > it->second)
      return Status::error(run.program->name + ": " + sym + " = " + std::to_string(value) +
                           " exceeds the plan's maximum " + std::to_string(it->second));
  }
  return Status::ok();
}

Status Session::encode(const std::vector<int64_t> &sourceIds, const std::vector<int32_t> &slots) {
  return encodeSources({sourceIds}, {slots});
}

// Each source into a free cross-cache entry (one no slot outside the lists
// reads), the sources packed into @encode runs of at most the plan's
// src_tokens (a source starts its positions at 0; packed attention keeps
// each to its own segment), and the listed slots pointed at their entries.
Status Session::encodeSources(const std::vector<std::vector<int64_t>> &sources,
                              const std::vector<std::vector<int32_t>> &slots) {
  if (entryOfSlot_.empty())
    return Status::error("this model has no encoder");
  if (sources.size() != slots.size())
    return Status::error("encode: sources and slot lists differ in number");
  const ModelInfo &mi = plan_->model;
  for (const std::vector<int64_t> &src : sources) {
    const int64_t S = static_cast<int64_t>(src.size());
    if (S == 0)
      return Status::error("encode: the source is empty");
    if (S > mi.maxSourceLength)
      return Status::error("encode: the source has " + std::to_string(S) +
                           " tokens, more than the plan's maximum source length " +
                           std::to_string(mi.maxSourceLength));
    for (int64_t t : src)
      if (t < 0 || t >= mi.vocabSize)
        return Status::error("encode: token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                             std::to_string(mi.vocabSize) + ")");
  }
  std::vector<char> mine(maxSlots(), 0), busy(crossLengths_.size(), 0);
  for (const std::vector<int32_t> &list : slots)
    for (int32_t s : list) {
      if (s < 0 || s >= maxSlots())
        return Status::error("encode: slot " + std::to_string(s) + " out of range");
      mine[s] = 1;
    }
  for (int32_t s = 0; s < maxSlots(); ++s)
    if (!mine[s] && entryOfSlot_[s] >= 0)
      busy[entryOfSlot_[s]] = 1;
  std::vector<int32_t> entries;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto free = std::find(busy.begin(), busy.end(), 0);
    if (free == busy.end())
      return Status::error("encode: every cross-attention cache entry is in use (max batch " +
                           std::to_string(busy.size()) + ")");
    *free = 1;
    entries.push_back(static_cast<int32_t>(free - busy.begin()));
  }

  const Program *prog = plan_->program("encode");
  int64_t cap = mi.maxSourceLength;
  if (prog)
    if (auto it = prog->maxSymbols.find("src_tokens"); it != prog->maxSymbols.end())
      cap = std::max(cap, it->second);
  // The listed slots' entries may be rewritten from here on: until every
  // run is done they read none.
  for (int32_t s = 0; s < maxSlots(); ++s)
    if (mine[s])
      entryOfSlot_[s] = -1;
  for (size_t i = 0; i < sources.size();) {
    ProgramRun run;
    run.kind = ProgramKind::Encode;
    run.program = prog;
    int64_t total = 0;
    for (; i < sources.size() && (total == 0 || total + static_cast<int64_t>(sources[i].size()) <= cap); ++i) {
      const int64_t S = static_cast<int64_t>(sources[i].size());
      run.attention.segments.push_back({total, S, entries[i]});
      run.inputIds.insert(run.inputIds.end(), sources[i].begin(), sources[i].end());
      for (int64_t p = 0; p < S; ++p)
        run.positions.push_back(p);
      total += S;
    }
    run.symbols = {{"src_tokens", total}};
    if (Status s = checkSymbols(run); !s)
      return s;
    if (Status s = exec_->encode(run); !s)
      return s;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    crossLengths_[entries[i]] = static_cast<int64_t>(sources[i].size());
    for (int32_t s : slots[i])
      entryOfSlot_[s] = entries[i];
  }
  return Status::ok();
}

Status Session::reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src) {
  return reorderSlots(dst, src, std::vector<int64_t>(dst.size(), 0));
}

Status Session::reorderSlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                             const std::vector<int64_t> &shared) {
  if (dst.size() != src.size() || shared.size() != dst.size())
    return Status::error("reorderSlots: dst, src and shared differ in length");
  std::vector<int64_t> from(dst.size());
  std::vector<char> taken(static_cast<size_t>(maxSlots()), 0);
  for (size_t i = 0; i < dst.size(); ++i) {
    if (dst[i] < 0 || dst[i] >= maxSlots() || src[i] < 0 || src[i] >= maxSlots())
      return Status::error("reorderSlots: slot out of range");
    if (taken[dst[i]]++)
      return Status::error("reorderSlots: slot " + std::to_string(dst[i]) + " is a destination twice");
    // What dst already holds of src: at most what both hold.
    from[i] = std::clamp<int64_t>(shared[i], 0, std::min(lengths_[dst[i]], lengths_[src[i]]));
  }
  if (kv_.sharesPrompts())
    rows_.copy(dst, src, from); // the positions' places move, never their rows
  else if (Status s = exec_->copySlots(dst, src, lengths_, from); !s)
    return s;
  std::vector<int64_t> old = lengths_;
  for (size_t i = 0; i < dst.size(); ++i)
    lengths_[dst[i]] = old[src[i]];
  if (!entryOfSlot_.empty()) { // beams share their item's cross entry: move the index, never the cache
    std::vector<int32_t> oldEntry = entryOfSlot_;
    for (size_t i = 0; i < dst.size(); ++i)
      entryOfSlot_[dst[i]] = oldEntry[src[i]];
  }
  return Status::ok();
}

Status Session::checkChunks(const std::vector<Chunk> &chunks) const {
  const ModelInfo &mi = plan_->model;
  std::vector<int64_t> pending(maxSlots(), 0);
  for (const Chunk &c : chunks) {
    if (c.slot < 0 || c.slot >= maxSlots())
      return Status::error("forward: slot " + std::to_string(c.slot) + " out of range");
    if (c.tokens.empty())
      return Status::error("forward: an empty chunk");
    // One chunk a slot: a run lays a slot's tokens out as one consecutive
    // piece, which the attention kernels index by position.
    if (pending[c.slot])
      return Status::error("forward: slot " + std::to_string(c.slot) + " is in two chunks; give its tokens as one");
    if (c.everyToken && !c.output)
      return Status::error("forward: a chunk that gives every token's row gives output");
    pending[c.slot] += static_cast<int64_t>(c.tokens.size());
    if (lengths_[c.slot] + pending[c.slot] > mi.maxLength)
      return Status::error("forward: slot " + std::to_string(c.slot) + " would exceed the plan's "
                           "max length " + std::to_string(mi.maxLength));
    for (int64_t t : c.tokens)
      if (t < 0 || t >= mi.vocabSize)
        return Status::error("forward: token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                             std::to_string(mi.vocabSize) + ")");
    if (!entryOfSlot_.empty() && entryOfSlot_[c.slot] < 0)
      return Status::error("forward: slot " + std::to_string(c.slot) + " has no encoded source");
  }
  return Status::ok();
}

// One path for every request: each run of the chunks (chunked prefill may
// take several) answers its share of the output rows where the logits are
// if the executor chooses so, else from its logits on the host — the one
// host fallback of the runtime.
Status Session::forward(const std::vector<Chunk> &chunks, const ChoiceRequest &request, ChoiceAnswer &answer) {
  if (Status s = checkChunks(chunks); !s)
    return s;
  const int64_t vocab = plan_->model.vocabSize;
  int64_t total = 0;
  bool everyToken = false;
  for (const Chunk &c : chunks) {
    total += c.rows();
    everyToken |= c.everyToken;
  }
  if (everyToken && request.kind != ChoiceKind::Logits)
    return Status::error("forward: a chunk that gives every token's row takes a logits request");
  if (std::string why = request.check(total, vocab); !why.empty())
    return Status::error("forward: " + why);
  answer.reset(request, total, vocab);
  ChoiceAnswer part, logits;
  return eachRun(chunks, [&](const std::vector<Piece> &pieces) {
    ProgramRun run;
    if (Status s = buildRun(pieces, run); !s)
      return s;
    std::vector<int64_t> rows; // the output rows the run gives, in run order
    for (const Piece &p : pieces)
      if (p.firstRow >= 0)
        for (int64_t r = p.firstRow; r <= p.logitRow; ++r)
          rows.push_back(r);
      else if (p.logitRow >= 0)
        rows.push_back(p.logitRow);
    const bool whole = static_cast<int64_t>(rows.size()) == total; // every row, in order
    const ChoiceRequest sub = whole ? ChoiceRequest{} : request.select(rows, total);
    const ChoiceRequest &asked = whole ? request : sub;
    ChoiceAnswer &into = whole ? answer : part;
    const int64_t R = static_cast<int64_t>(rows.size());
    if (R == 0) { // a run of prompt parts only: nothing comes back
      if (Status s = exec_->run(run, ChoiceRequest::logits(), &logits); !s)
        return s;
    } else if (asked.kind == ChoiceKind::Logits || exec_->chooses(asked, run.kind)) {
      if (Status s = exec_->run(run, asked, &into); !s)
        return s;
    } else {
      if (Status s = exec_->run(run, ChoiceRequest::logits(), &logits); !s)
        return s;
      if (Status s = answerOnHost(asked, logits.logits.data(), R, vocab, into); !s)
        return s;
    }
    if (!whole)
      answer.place(request, total, part, rows, vocab);
    advance(run);
    return Status::ok();
  });
}

bool Session::chooses(const ChoiceRequest &request) const { return exec_->chooses(request, ProgramKind::Decode); }

// Pieces of at most max_tokens tokens; a long prompt is prefilled in
// several pieces (chunked prefill) and only its last piece gives output
// (an everyToken chunk: each piece, a row a token, at most the plan's
// rows a run).
// Where the executor splits them, a search's decode rows (one-token chunks
// that want output) go first, as a run of their own, and the prompt pieces
// after: each chunk keeps its output row, whatever run gives it.
Status Session::eachRun(const std::vector<Chunk> &chunks,
                        const std::function<Status(const std::vector<Piece> &)> &run) const {
  const int64_t budget = plan_->maxTokens;
  // The logit rows a run may give: @prefill's bound (the plan's slots).
  int64_t maxRows = maxSlots();
  if (const Program *prefill = plan_->program("prefill"))
    if (auto it = prefill->maxSymbols.find("rows"); it != prefill->maxSymbols.end())
      maxRows = std::max<int64_t>(1, it->second);
  std::vector<int64_t> rowOf(chunks.size(), -1);
  std::vector<size_t> order;
  int64_t outputs = 0, decodeRows = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].output)
      rowOf[i] = outputs;
    outputs += chunks[i].rows();
    decodeRows += chunks[i].output && chunks[i].tokens.size() == 1;
  }
  const bool split = decodeRows > 0 && decodeRows < static_cast<int64_t>(chunks.size()) &&
                     decodeRows <= maxSlots() && splitDecode_;
  auto isDecodeRow = [&](size_t i) { return chunks[i].output && chunks[i].tokens.size() == 1; };
  for (size_t i = 0; i < chunks.size(); ++i)
    if (!split || isDecodeRow(i))
      order.push_back(i);
  const size_t firstPiece = split ? order.size() : 0;
  if (split)
    for (size_t i = 0; i < chunks.size(); ++i)
      if (!isDecodeRow(i))
        order.push_back(i);

  std::vector<Piece> pieces;
  int64_t pieceTokens = 0, pieceRows = 0;
  auto flush = [&]() -> Status {
    Status s = pieces.empty() ? Status::ok() : run(pieces);
    pieces.clear();
    pieceTokens = 0;
    pieceRows = 0;
    return s;
  };
  for (size_t k = 0; k < order.size(); ++k) {
    if (split && k == firstPiece)
      if (Status s = flush(); !s)
        return s;
    const Chunk &c = chunks[order[k]];
    const int64_t row = rowOf[order[k]];
    size_t done = 0;
    while (done < c.tokens.size()) {
      if (pieceTokens == budget || (c.output && pieceRows == maxRows))
        if (Status s = flush(); !s)
          return s;
      const size_t rest = c.tokens.size() - done;
      const int64_t cap = c.everyToken ? std::min(budget - pieceTokens, maxRows - pieceRows) : budget - pieceTokens;
      size_t n = std::min<size_t>(cap, rest);
      // A chunk is never cut into a one-token piece: the CPU's attention
      // takes a one-token piece as a decode step (runtime/cpu/KvCache.cpp),
      // and a row's bits must not depend on where its prompt was cut. (An
      // everyToken chunk on a plan of fewer than 4 rows is cut so.)
      if (n < rest && (c.everyToken ? std::min(budget, maxRows) : budget) >= 4) {
        if (rest - n == 1)
          --n;
        if (n < 2) {
          if (Status s = flush(); !s)
            return s;
          continue;
        }
      }
      bool last = done + n == c.tokens.size();
      Piece p{c.slot, std::vector<int64_t>(c.tokens.begin() + done, c.tokens.begin() + done + n), last ? row : -1};
      if (c.everyToken) {
        p.firstRow = row + static_cast<int64_t>(done);
        p.logitRow = p.firstRow + static_cast<int64_t>(n) - 1;
      }
      pieceRows += c.everyToken ? static_cast<int64_t>(n) : last && row >= 0;
      pieces.push_back(std::move(p));
      pieceTokens += n;
      done += n;
    }
  }
  return flush();
}

void Session::advance(const ProgramRun &run) {
  for (const TokenPlace &t : run.attention.tokens) {
    ++lengths_[t.slot];
    if (kv_.sharesPrompts())
      rows_.append(t.slot, t.write);
  }
}

// One program run over the pieces: @decode_step when every piece is one
// token that wants its logits (the step of a search), else @prefill.
Status Session::buildRun(const std::vector<Piece> &pieces, ProgramRun &run) const {
  int64_t T = 0, R = 0;
  bool decode = true;
  for (const Piece &p : pieces) {
    T += static_cast<int64_t>(p.tokens.size());
    decode &= p.tokens.size() == 1 && p.logitRow >= 0;
    R += p.firstRow >= 0 ? static_cast<int64_t>(p.tokens.size()) : p.logitRow >= 0;
  }
  decode &= T <= maxSlots();
  run.kind = decode ? ProgramKind::Decode : ProgramKind::Prefill;
  run.program = plan_->program(decode ? "decode_step" : "prefill");
  run.symbols = {{"tokens", T}, {"rows", decode ? T : R}};
  if (Status s = checkSymbols(run); !s)
    return Status::error("forward: " + s.message());
  run.inputIds.reserve(T);
  run.positions.reserve(T);
  run.attention.tokens.reserve(T);
  for (const Piece &p : pieces) {
    int64_t start = lengths_[p.slot];
    for (size_t i = 0; i < p.tokens.size(); ++i) {
      int64_t pos = start + static_cast<int64_t>(i);
      run.inputIds.push_back(p.tokens[i]);
      run.positions.push_back(pos);
      run.attention.tokens.push_back({p.slot, pos, start, KvRef{p.slot, static_cast<int32_t>(pos)}});
      if (!entryOfSlot_.empty())
        run.attention.crossEntryOfToken.push_back(entryOfSlot_[p.slot]);
    }
    const int64_t end = static_cast<int64_t>(run.inputIds.size());
    if (!decode && p.firstRow >= 0)
      for (int64_t t = end - static_cast<int64_t>(p.tokens.size()); t < end; ++t)
        run.logitRows.push_back(t);
    else if (!decode && p.logitRow >= 0)
      run.logitRows.push_back(end - 1);
  }
  run.attention.crossLengths = crossLengths_;
  if (kv_.sharesPrompts()) {
    KvRows::Appends appends;
    for (const Piece &p : pieces)
      appends.push_back({p.slot, static_cast<int64_t>(p.tokens.size())});
    std::vector<KvRef> writes;
    if (Status s = rows_.place(appends, writes); !s)
      return s;
    for (size_t t = 0; t < writes.size(); ++t)
      run.attention.tokens[t].write = writes[t];
    run.attention.rows = &rows_;
  }
  return Status::ok();
}

} // namespace genrt
