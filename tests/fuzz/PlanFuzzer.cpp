// libFuzzer target: a plan's bytes through the loader and verifier, and, for
// a plan they accept, its tokenizer and a short generation on the CPU
// executor (greedy or beam search over two prompts). The property: an edited
// plan is either refused with a Status or runs; nothing crashes, reads out
// of bounds or aborts. Mutations: PlanMutator.h. Seeds: fixture plans
// (tools/fuzz.sh compiles them).
#include "tests/fuzz/PlanMutator.h"

#include "runtime/plan/Program.h"
#include "runtime/Session.h"
#include "runtime/cpu/CpuExecutor.h"
#include "runtime/search/Generate.h"
#include "runtime/text/PlanTokenizer.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace genrt;

#ifndef GENC_FUZZ_REPLAY // the mutator calls libFuzzer's LLVMFuzzerMutate
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t maxSize, unsigned seed) {
  return genfuzz::mutatePlan(data, size, maxSize, seed);
}
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The plan's weights are views of these bytes: they must outlive it. A
  // mapped file starts on a page; here 64 bytes (the loader asks for 16).
  std::shared_ptr<uint8_t> bytes(static_cast<uint8_t *>(std::aligned_alloc(64, (size + 64) / 64 * 64)), std::free);
  if (size)
    std::memcpy(bytes.get(), data, size);
  auto plan = std::make_shared<Plan>();
  if (!loadPlanFromMemory(bytes, bytes.get(), size, "fuzz", *plan))
    return 0;
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::vector<int64_t> textIds;
  if (text::loadPlanTokenizer(*plan, "fuzz", tokenizer) && tokenizer) {
    (void)tokenizer->encode("Hello, world! 123", true, textIds);
    (void)tokenizer->decode(textIds, true);
  }
  // A verified plan within the machine's memory is a valid plan; the
  // fuzzer's own memory limit is lower, so plans past it are not run.
  const int64_t need = cpuBytesNeeded(*plan);
  if (need < 0 || need > (int64_t(256) << 20))
    return 0;
  Status err = Status::ok();
  ExecutorOptions one; // one thread: libFuzzer runs an input at a time
  one.threads = 1;
  std::unique_ptr<Executor> exec = makeCpuExecutor(plan, one, err);
  if (!exec)
    return 0;
  Session session(plan, std::move(exec));
  GenerationConfig cfg;
  cfg.maxNewTokens = 3;
  cfg.numBeams = plan->model.maxBeams >= 2 && size % 2 ? 2 : 1;
  const int64_t vocab = plan->model.vocabSize;
  std::vector<Prompt> prompts(2);
  prompts[0].inputIds = {1 % vocab, 2 % vocab, 3 % vocab};
  prompts[1].inputIds = textIds.empty() ? std::vector<int64_t>{4 % vocab} : textIds;
  for (int64_t &id : prompts[1].inputIds)
    id = id < 0 || id >= vocab ? 0 : id;
  std::vector<GenerationResult> results;
  (void)generate(session, cfg, prompts, results);
  return 0;
}
