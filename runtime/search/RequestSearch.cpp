// What the per-request searches share: which one a config asks for, and
// when a group of them (a batch) stops.
#include "runtime/search/RequestSearch.h"

namespace genrt {
namespace search {

bool groupStops(const std::vector<StopVote> &votes) {
  bool cannotImprove = true, full = true, allHit = true;
  for (const StopVote &v : votes) {
    cannotImprove = cannotImprove && v.cannotImprove;
    full = full && v.full;
    allHit = allHit && v.allHit;
  }
  return cannotImprove || full || allHit;
}

Status makeSearch(BatchItem item, const GenerationConfig &cfg, const StopRules &stop, SearchContext ctx,
                  std::unique_ptr<RequestSearch> &out) {
  if (int64_t(ctx.slots.size()) != cfg.rowsPerPrompt())
    return Status::error("a search of " + std::to_string(cfg.rowsPerPrompt()) + " rows given " +
                         std::to_string(ctx.slots.size()) + " slots");
  if (cfg.numBeams > 1)
    return makeBeamSearch(std::move(item), cfg, stop, std::move(ctx), out);
  out = makeGreedyOrSample(std::move(item), cfg, stop, std::move(ctx));
  return Status::ok();
}

} // namespace search
} // namespace genrt
