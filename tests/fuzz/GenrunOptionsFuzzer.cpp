// libFuzzer target: genrun's command line (tools/GenrunOptions.h), the
// arguments split at NUL bytes, then the options' checks alone and against
// a model, and their warnings. The property: any arguments give options or
// a Status, never a crash. Seeds: tests/fuzz/seeds/genrun_options.
#include "tools/GenrunOptions.h"

#include "runtime/search/Generate.h"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> argv{"genrun"};
  std::string arg;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      argv.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(data[i]);
    }
  }
  argv.push_back(arg);
  genrun::Args args;
  if (!genrun::parseArgs(argv, args) || args.help)
    return 0;
  if (!args.cfg.validate())
    return 0;
  (void)args.cfg.warnings();
  genrt::ModelInfo info;
  info.vocabSize = 1000;
  info.eosTokenIds = {2};
  info.maxLength = 64;
  info.maxBatch = 4;
  info.maxBeams = 4;
  if (args.cfg.validateFor(info)) {
    (void)args.cfg.effectiveEos(info);
    (void)args.cfg.rowsPerPrompt();
    int64_t batchSize = 0;
    (void)genrt::batchSizeFor(args.cfg, info, 16, batchSize);
  }
  return 0;
}
