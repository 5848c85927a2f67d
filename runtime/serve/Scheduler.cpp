#include "runtime/serve/Scheduler.h"

#include "runtime/search/LogitsProcessors.h"
#include "runtime/search/PromptScores.h"

#include <algorithm>
#include <limits>

namespace genrt {
namespace serve {

Scheduler::Scheduler(Decoder &decoder, const text::Tokenizer *tokenizer, SchedulerOptions options)
    : dec_(decoder), tok_(tokenizer), opt_(options), totalSlots_(decoder.maxSlots()) {
  opt_.stepTokens = std::max<int64_t>(1, opt_.stepTokens);
  for (int32_t s = totalSlots_ - 1; s >= 0; --s)
    free_.push_back(s);
}

Scheduler::~Scheduler() = default;

Status Scheduler::check(const Request &req) const {
  const ModelInfo &info = dec_.info();
  const GenerationConfig &cfg = req.cfg;
  if (Status s = cfg.validateFor(info); !s)
    return s;
  Prompt p;
  p.inputIds = req.promptIds;
  if (Status s = validatePrompt(p, info, cfg); !s)
    return s;
  int64_t batch = 0;
  if (Status s = batchSizeFor(cfg, info, totalSlots_, batch); !s)
    return s;
  // A request's rows are a prompt's beams or samples: at most what the
  // plan sized a prompt for (genc compile --max-beams).
  if (cfg.rowsPerPrompt() > std::max<int64_t>(1, info.maxBeams))
    return Status::error(std::string(cfg.numBeams > 1 ? "beam search of " : "sampling ") +
                         std::to_string(cfg.rowsPerPrompt()) + (cfg.numBeams > 1 ? " beams" : " sequences") +
                         " exceeds the plan's " + std::to_string(info.maxBeams) +
                         " rows a prompt (genc compile --max-beams)");
  if (!cfg.stopStrings.empty()) {
    if (!tok_)
      return Status::error("stop strings need a plan that carries a tokenizer");
    if (Status s = search::StopStrings::check(cfg.stopStrings, *tok_); !s)
      return s;
  }
  if (req.promptLogprobs >= 0 && info.encoderDecoder)
    return Status::error("prompt log-probabilities are for decoder-only models (the prompt of this one is its "
                         "encoder's source)");
  if (cfg.numBeams > 1) {
    if (req.logprobs.top >= 0)
      return Status::error("logprobs are not available with beam search");
    const int64_t eos = int64_t(cfg.effectiveEos(info).size());
    const int64_t K = std::max<int64_t>(2, 1 + eos) * cfg.numBeams;
    if (K > cfg.numBeams * info.vocabSize)
      return Status::error(cfg.option("num_beams") + " " + std::to_string(cfg.numBeams) +
                           " is too large for a vocabulary of " + std::to_string(info.vocabSize) + " tokens");
  }
  return Status::ok();
}

Status Scheduler::submit(uint64_t id, Request request) {
  {
    std::lock_guard<std::mutex> l(m_);
    if (draining_)
      return Status::error("the server is shutting down");
    if (queued_ >= opt_.maxQueue) {
      metrics_.rejected.fetch_add(1, std::memory_order_relaxed);
      return Status::error("the queue is full (" + std::to_string(opt_.maxQueue) + " requests waiting)");
    }
    incoming_.push_back(Waiting{id, std::move(request), Clock::now()});
    ++queued_;
    metrics_.waiting.store(queued_, std::memory_order_relaxed);
  }
  cv_.notify_all();
  return Status::ok();
}

void Scheduler::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> l(m_);
    cancels_.insert(id);
  }
  cv_.notify_all();
}

void Scheduler::drain() {
  std::lock_guard<std::mutex> l(m_);
  draining_ = true;
}

bool Scheduler::idle() const {
  std::lock_guard<std::mutex> l(m_);
  return queued_ == 0 && metrics_.running.load(std::memory_order_relaxed) == 0;
}

void Scheduler::wake() {
  {
    std::lock_guard<std::mutex> l(m_);
    woken_ = true;
  }
  cv_.notify_all();
}

void Scheduler::waitForWork(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(m_);
  cv_.wait_for(l, timeout, [&] { return woken_ || !incoming_.empty() || !cancels_.empty(); });
  woken_ = false;
}

// Requests a plan holds at once besides its slots: a plan whose beams share
// their prompt's K/V (and an encoder-decoder's cross cache) keeps a home
// per batch item.
int64_t Scheduler::requestCap() const {
  const ModelInfo &info = dec_.info();
  if (info.encoderDecoder || (info.maxNewTokens > 0 && info.maxBeams > 1))
    return std::max<int64_t>(1, info.maxBatch);
  return std::numeric_limits<int64_t>::max();
}

void Scheduler::takeIncoming() {
  std::unordered_set<uint64_t> cancels;
  {
    std::lock_guard<std::mutex> l(m_);
    while (!incoming_.empty()) {
      waiting_.push_back(std::move(incoming_.front()));
      incoming_.pop_front();
    }
    cancels.swap(cancels_);
  }
  if (cancels.empty())
    return;
  int64_t dropped = 0, unqueued = 0;
  for (auto it = waiting_.begin(); it != waiting_.end();)
    if (cancels.count(it->id)) {
      it = waiting_.erase(it);
      ++unqueued;
    } else {
      ++it;
    }
  if (unqueued) {
    std::lock_guard<std::mutex> l(m_);
    queued_ -= unqueued;
  }
  dropped += unqueued;
  for (auto it = running_.begin(); it != running_.end();)
    if (cancels.count((*it)->id)) {
      release(**it);
      it = running_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  metrics_.cancelled.fetch_add(uint64_t(dropped), std::memory_order_relaxed);
}

// The slots go back; reorders it queued for its next step are dropped (the
// slots may belong to another request by then).
void Scheduler::release(Running &r) {
  std::vector<int32_t> &dst = io_.dst, &src = io_.src;
  std::vector<int64_t> &shared = io_.shared;
  for (size_t k = 0; k < dst.size();)
    if (std::find(r.slots.begin(), r.slots.end(), dst[k]) != r.slots.end()) {
      dst.erase(dst.begin() + long(k));
      src.erase(src.begin() + long(k));
      shared.erase(shared.begin() + long(k));
    } else {
      ++k;
    }
  search::resetSlots(dec_, r.slots);
  free_.insert(free_.end(), r.slots.rbegin(), r.slots.rend());
  std::sort(free_.begin(), free_.end(), std::greater<int32_t>());
  r.slots.clear();
}

void Scheduler::fail(Running &r, const std::string &message, std::vector<Event> &events) {
  Event ev;
  ev.request = r.id;
  ev.kind = Event::Kind::Error;
  ev.text = message;
  events.push_back(std::move(ev));
  release(r);
  metrics_.failed.fetch_add(1, std::memory_order_relaxed);
}

// First come, first served: the head of the queue waits for its slots and
// holds back those behind it (a wide beam request is never starved by a
// stream of narrow ones).
void Scheduler::admit(std::vector<Event> &events) {
  const ModelInfo &info = dec_.info();
  while (!waiting_.empty()) {
    Waiting &w = waiting_.front();
    const int64_t rows = w.request.cfg.rowsPerPrompt();
    if (rows > int64_t(free_.size()) || int64_t(running_.size()) >= requestCap())
      break;
    auto r = std::make_unique<Running>();
    r->id = w.id;
    r->request = std::move(w.request);
    r->submitted = w.submitted;
    waiting_.pop_front();
    {
      std::lock_guard<std::mutex> l(m_);
      --queued_;
    }
    for (int64_t k = 0; k < rows; ++k) {
      r->slots.push_back(free_.back());
      free_.pop_back();
    }
    search::resetSlots(dec_, r->slots);
    const GenerationConfig &cfg = r->request.cfg;
    r->stop = std::make_unique<search::StopRules>(
        search::StopRules{cfg.effectiveEos(info), search::StopStrings(cfg.stopStrings, tok_)});
    r->events = std::make_unique<RequestEvents>(r->id, tok_, r->stop->eos, &events);
    search::SearchContext ctx;
    ctx.vocab = info.vocabSize;
    ctx.slots = r->slots;
    ctx.observer = r->events.get();
    ctx.decoderChoosesTokens = search::decoderChoosesTokens(dec_, search::sampleRuleOf(cfg));
    ctx.logprobs = r->request.logprobs;
    Prompt p;
    p.inputIds = r->request.promptIds;
    // Prompt index 0 for the draws: a seeded request samples what genrun
    // samples for the same prompt alone.
    search::BatchItem item = search::makeBatchItem(p, info, 0);
    metrics_.promptTokens.fetch_add(uint64_t(item.decoderPrompt.size()), std::memory_order_relaxed);
    Status s = Status::ok();
    if (info.encoderDecoder)
      s = search::encodeSources(dec_, {item.sourceIds}, {r->slots});
    if (s)
      s = search::makeSearch(std::move(item), r->request.cfg, *r->stop, std::move(ctx), r->search);
    if (!s) {
      fail(*r, s.message(), events);
      continue;
    }
    running_.push_back(std::move(r));
  }
}

// One observation a step per request that got tokens: the first is its
// time to first token (from submit), the rest the time since its last.
void Scheduler::timeTokens(Running &r, size_t firstEvent, const std::vector<Event> &events, Clock::time_point now) {
  bool any = false;
  for (size_t k = firstEvent; k < events.size(); ++k) {
    const Event &ev = events[k];
    if (ev.kind == Event::Kind::Token) {
      any = true;
      metrics_.generatedTokens.fetch_add(1, std::memory_order_relaxed);
    } else if (ev.kind == Event::Kind::Sequence && r.request.cfg.numBeams > 1) {
      any = true;
      metrics_.generatedTokens.fetch_add(uint64_t(ev.ids.size()), std::memory_order_relaxed);
    }
  }
  if (!any)
    return;
  if (!r.sawToken)
    metrics_.timeToFirstToken.observe(std::chrono::duration<double>(now - r.submitted).count());
  else
    metrics_.interTokenLatency.observe(std::chrono::duration<double>(now - r.lastToken).count());
  r.sawToken = true;
  r.lastToken = now;
}

// The log-probability of each prompt token this step's chunks predicted
// (row i of a chunk: the logits after its token i, predicting token i + 1;
// runtime/search/PromptScores.h).
void Scheduler::scorePrompt(Running &r, std::vector<Event> &events) const {
  const std::vector<int64_t> &prompt = r.search->item().decoderPrompt;
  const int64_t V = dec_.info().vocabSize;
  Event ev;
  ev.request = r.id;
  ev.kind = Event::Kind::PromptLogprobs;
  for (const auto &[chunk, first] : r.scored) {
    const search::StepIO::Entry &e = io_.entries[chunk];
    const int64_t n = int64_t(io_.chunks[chunk].tokens.size());
    for (int64_t i = 0; i < n && first + i + 1 < int64_t(prompt.size()); ++i) {
      if (ev.prompt.empty())
        ev.sequence = first + i + 1;
      ev.prompt.push_back(search::scoreRow(io_.logits.data() + (e.firstRow + i) * V, V,
                                           prompt[size_t(first + i + 1)], r.request.promptLogprobs));
    }
  }
  r.scored.clear();
  if (!ev.prompt.empty())
    events.push_back(std::move(ev));
}

bool Scheduler::step(std::vector<Event> &events) {
  takeIncoming();
  admit(events);
  const auto t0 = Clock::now();

  // Decode rows first: every running request's next token.
  io_.clearChunks();
  int64_t decodeTokens = 0;
  for (auto &r : running_) {
    r->inStep = false;
    r->scored.clear();
    if (r->search->prefilled()) {
      const size_t before = io_.chunks.size();
      r->search->addInputs(io_);
      decodeTokens += int64_t(io_.chunks.size() - before);
      r->inStep = true;
    }
  }
  // Then the prompts, in admission order, in pieces up to the budget (16
  // tokens at least, so prompts move while many rows decode; and a piece
  // of left - 1 >= 2 tokens always fits, see below).
  int64_t left = std::max<int64_t>(opt_.stepTokens - decodeTokens, 16);
  for (auto &r : running_) {
    if (r->search->prefilled() || left <= 0)
      continue;
    const std::vector<int64_t> &prompt = r->search->item().decoderPrompt;
    const int64_t rest = int64_t(prompt.size()) - r->promptFed;
    const bool score = r->request.promptLogprobs >= 0;
    if (rest <= left) {
      r->search->setPromptCached(r->promptFed);
      const size_t chunk = io_.chunks.size(); // the prompt's rest, in row 0's slot
      r->search->addInputs(io_);
      if (score) {
        io_.everyToken(chunk);
        r->scored.emplace_back(chunk, r->promptFed);
      }
      r->promptFed = int64_t(prompt.size());
      r->inStep = true;
      left -= rest;
    } else {
      // Never a one-token piece of a longer prompt, nor a one-token rest:
      // a row's bits must not depend on where its prompt was cut (the CPU
      // attends a one-token piece as a decode step).
      int64_t n = rest - left == 1 ? left - 1 : left;
      if (n < 2)
        break;
      const size_t chunk =
          io_.add(r->slots[0], std::vector<int64_t>(prompt.begin() + r->promptFed, prompt.begin() + r->promptFed + n),
                  search::Want::None);
      if (score) {
        io_.everyToken(chunk);
        r->scored.emplace_back(chunk, r->promptFed);
      }
      r->promptFed += n;
      left = 0;
    }
  }
  if (io_.chunks.empty()) {
    metrics_.running.store(int64_t(running_.size()), std::memory_order_relaxed);
    return false;
  }
  // (The decode rows' chunks come first, one each.)
  int64_t tokens = 0, promptTokens = 0;
  for (size_t c = 0; c < io_.chunks.size(); ++c) {
    tokens += int64_t(io_.chunks[c].tokens.size());
    if (int64_t(c) >= decodeTokens)
      promptTokens += int64_t(io_.chunks[c].tokens.size());
  }

  if (Status s = search::runStep(dec_, io_); !s) {
    // A failed forward leaves no request of the step in a known state.
    for (auto &r : running_)
      fail(*r, "generation failed: " + s.message(), events);
    running_.clear();
    metrics_.running.store(0, std::memory_order_relaxed);
    metrics_.slotsInUse.store(0, std::memory_order_relaxed);
    return true;
  }
  const auto now = Clock::now();
  for (auto it = running_.begin(); it != running_.end();) {
    Running &r = **it;
    if (!r.scored.empty())
      scorePrompt(r, events);
    if (!r.inStep) {
      ++it;
      continue;
    }
    const size_t firstEvent = events.size();
    r.events->setOutput(&events);
    Status s = r.search->takeOutputs(io_);
    if (s)
      r.search->endStep(search::groupStops({r.search->vote()}), io_);
    timeTokens(r, firstEvent, events, now);
    if (!s) {
      fail(r, s.message(), events);
      it = running_.erase(it);
    } else if (r.search->finished()) {
      release(r);
      metrics_.finished.fetch_add(1, std::memory_order_relaxed);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  metrics_.steps.fetch_add(1, std::memory_order_relaxed);
  metrics_.stepTokens.fetch_add(uint64_t(tokens), std::memory_order_relaxed);
  metrics_.stepPromptTokens.fetch_add(uint64_t(promptTokens), std::memory_order_relaxed);
  metrics_.stepSeconds[promptTokens > 0 ? 1 : 0].observe(std::chrono::duration<double>(now - t0).count());
  metrics_.afterMicros.fetch_add(
      uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - now).count()),
      std::memory_order_relaxed);
  metrics_.running.store(int64_t(running_.size()), std::memory_order_relaxed);
  metrics_.slotsInUse.store(totalSlots_ - int64_t(free_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> l(m_);
    metrics_.waiting.store(queued_, std::memory_order_relaxed);
  }
  return true;
}

} // namespace serve
} // namespace genrt
