// genrun's command line, parsed without exiting (genrun.cpp prints the
// error; tests/fuzz/GenrunOptionsFuzzer.cpp feeds it arbitrary arguments).
// No LLVM here: genrun links nothing of the compiler.
#pragma once
#include "runtime/Executor.h"
#include "runtime/Status.h"
#include "runtime/search/GenerationConfig.h"

#include <string>
#include <vector>

namespace genrun {

struct Args {
  std::string plan;
  std::string input;                // "-": stdin
  std::vector<std::string> prompts; // --prompt, in order
  std::string output;
  std::string device = "auto";
  genrt::ExecutorOptions exec;      // --threads
  bool stats = false;
  bool stream = false;              // --stream: JSON lines per event
  bool help = false;                // --help: print usageText() and stop
  bool helpEnv = false;             // --help-env: print the GENC_* variables (runtime/Env.h) and stop
  genrt::GenerationConfig cfg;
  /// The generation options given, in HF's names ("num_beams"): the plan's
  /// defaults fill in the rest (GenerationConfig::applyDefaults).
  std::vector<std::string> given;
};

/// The --help text.
const char *usageText();

/// Parses argv[1..] (argv[0] is the program). Errors are the message after
/// "genrun: error: " (an unknown option, a bad value, no plan, ...); the
/// options' ranges are checked by cfg.validate() afterwards, not here,
/// except --batch-size (GenerationConfig::setBatchSize, as in Python), whose
/// 0 would mean "unset", and --threads.
genrt::Status parseArgs(const std::vector<std::string> &argv, Args &out);

} // namespace genrun
