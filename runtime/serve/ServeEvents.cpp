#include "runtime/serve/ServeEvents.h"

#include <algorithm>

namespace genrt {
namespace serve {

void RequestEvents::onToken(size_t, int64_t sequence, int64_t token, bool last) {
  Event ev;
  ev.request = request_;
  ev.kind = Event::Kind::Token;
  ev.sequence = sequence;
  ev.token = token;
  ev.last = last;
  if (haveLogprobs_) {
    ev.haveLogprobs = true;
    ev.logprob = logprob_;
    ev.top = std::move(top_);
    haveLogprobs_ = false;
  }
  if (last) {
    auto it = stopped_.find(sequence);
    ev.stopped = it != stopped_.end() && it->second;
  }
  if (tok_) { // output text skips special tokens (eos, pad), as genrun's does
    auto it = decoders_.try_emplace(sequence, *tok_, /*skipSpecialTokens=*/true).first;
    ev.text = it->second.push(token);
    if (last) {
      ev.text += it->second.finish();
      decoders_.erase(it);
    }
  }
  ++tokens_;
  out_->push_back(std::move(ev));
}

void RequestEvents::onSequence(size_t, int64_t sequence, const GeneratedSequence &seq) {
  Event ev;
  ev.request = request_;
  ev.kind = Event::Kind::Sequence;
  ev.sequence = sequence;
  ev.ids = seq.outputIds;
  ev.score = seq.score;
  auto it = stopped_.find(sequence);
  // Beam search: a hypothesis ends by eos or a stop string when it finished
  // before the length did; its last token says which for eos.
  ev.stopped = it != stopped_.end() ? it->second
                                    : !seq.outputIds.empty() &&
                                          std::find(eos_.begin(), eos_.end(), seq.outputIds.back()) != eos_.end();
  if (tok_)
    ev.text = tok_->decode(seq.outputIds, /*skipSpecialTokens=*/true);
  out_->push_back(std::move(ev));
}

void RequestEvents::onPromptDone(size_t, const GenerationResult &) {
  Event ev;
  ev.request = request_;
  ev.kind = Event::Kind::Done;
  out_->push_back(std::move(ev));
}

} // namespace serve
} // namespace genrt
