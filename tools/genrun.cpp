// genrun: runs a compiled generation plan. A thin main over the runtime
// library; it links nothing of the compiler (no LLVM: arguments are parsed
// by hand, in GenrunOptions.cpp).
//
//   genrun model.plan [--input prompts.jsonl | --prompt TEXT ...] [--output out.jsonl] [--device auto|cpu|cuda] [options]
//   genrun serve model.plan [--host H] [--port P] [options]   (tools/GenrunServe.h)
//
// Every input is read and checked before anything is generated, and output
// is written only when all of it is ready (to a temporary file renamed into
// place), so a failure never leaves partial output behind; except with
// --stream, whose lines go out as tokens become final.
#include "tools/GenrunOptions.h"
#include "tools/GenrunServe.h"

#include "runtime/Env.h"
#include "tools/GenrunJsonLines.h"
#include "runtime/Runtime.h"
#include "runtime/search/Generate.h"
#include "runtime/text/PlanTokenizer.h"
#include "runtime/search/TextStream.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace genrt;

[[noreturn]] static void fail(const std::string &msg) {
  std::cerr << "genrun: error: " << msg << "\n";
  std::exit(1);
}

namespace {

std::string readFile(const std::string &path) {
  std::FILE *f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f)
    fail("cannot open input '" + path + "': " + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    text.append(buf, n);
  // A directory opens fine and fails here (EISDIR).
  bool bad = std::ferror(f);
  int readErrno = errno;
  if (f != stdin)
    std::fclose(f);
  if (bad)
    fail("cannot read input '" + path + "': " + std::strerror(readErrno));
  return text;
}

} // namespace

// Output is written only when all of it is ready (to a temporary file
// renamed into place), so a failure never leaves partial output behind.
static void generateAll(const genrun::Args &args, Decoder &decoder, const text::Tokenizer *tokenizer,
                        const CheckedGeneration &request, GenerationStats &stats) {
  // Open the output before the (possibly long) generation so that a bad
  // path fails fast; write into a temporary beside it, rename at the end.
  std::string tmpPath;
  std::ofstream outFile;
  if (!args.output.empty()) {
    tmpPath = args.output + ".tmp" + std::to_string(getpid());
    outFile.open(tmpPath, std::ios::binary | std::ios::trunc);
    if (!outFile)
      fail("cannot write output '" + args.output + "': " + std::strerror(errno));
  }
  auto abandon = [&](const std::string &msg) {
    if (!tmpPath.empty()) {
      outFile.close();
      std::remove(tmpPath.c_str());
    }
    fail(msg);
  };

  std::vector<GenerationResult> results;
  if (Status s = generate(decoder, request, results, &stats); !s)
    abandon(s.message());

  std::string text;
  for (const GenerationResult &r : results) {
    std::vector<std::string> decoded;
    for (const GeneratedSequence &seq : r.sequences)
      if (tokenizer)
        decoded.push_back(tokenizer->decode(seq.outputIds, true));
    text += resultLine(r, tokenizer ? &decoded : nullptr);
    text += '\n';
  }
  if (args.output.empty()) {
    std::cout << text;
    std::cout.flush();
    if (!std::cout)
      fail("cannot write to stdout");
  } else {
    outFile << text;
    outFile.close();
    if (!outFile)
      abandon("cannot write output '" + tmpPath + "'");
    if (std::rename(tmpPath.c_str(), args.output.c_str()) != 0)
      abandon("cannot rename '" + tmpPath + "' to '" + args.output + "': " + std::strerror(errno));
  }
}

// --stream: one JSON line per event, flushed as it happens, to --output
// (written directly: the lines already out are the point) or stdout. On a
// failure the lines written stay, and the error follows on stderr.
static void generateStreaming(const genrun::Args &args, Decoder &decoder, const text::Tokenizer *tokenizer,
                              const CheckedGeneration &request, GenerationStats &stats) {
  std::ofstream file;
  if (!args.output.empty()) {
    file.open(args.output, std::ios::binary | std::ios::trunc);
    if (!file)
      fail("cannot write output '" + args.output + "': " + std::strerror(errno));
  }
  std::ostream &out = args.output.empty() ? std::cout : file;
  TextStreamObserver observer(tokenizer, [&](StreamEvent &&ev) {
    out << streamEventLine(ev, tokenizer != nullptr) << '\n';
    out.flush();
  });
  observer.dropResults(); // every line is out already: nothing to hold until the end
  std::vector<GenerationResult> results;
  if (Status s = generate(decoder, request, results, &stats, &observer); !s)
    fail(s.message());
  if (!out)
    fail(args.output.empty() ? "cannot write to stdout" : "cannot write output '" + args.output + "'");
}

static void printStats(const Decoder &decoder, size_t promptCount, const GenerationStats &stats,
                       double loadSeconds) {
  // Decode ms/token: the wall time of the search steps after each batch's
  // prefill, per step (one token per live row each).
  double decodeMs = stats.decodeForwardCalls ? stats.decodeSeconds * 1e3 / stats.decodeForwardCalls : 0.0;
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "genrun: stats: device %s; %zu prompts in %lld batches, %lld prompt tokens, %lld generated tokens\n"
                "genrun: stats: load %.1f ms (the plan read, weights to the device, kernels loaded)\n"
                "genrun: stats: time to first token %.3f ms, decode %.3f ms/token, total %.3f s, %.1f generated tokens/s\n"
                "genrun: stats: %lld decode steps, %lld forward calls, memory %lld bytes (%.1f MiB)%s%s\n",
                decoder.deviceName().c_str(), promptCount, (long long)stats.batches,
                (long long)stats.promptTokens, (long long)stats.generatedTokens, loadSeconds * 1e3,
                stats.firstTokenSeconds * 1e3, decodeMs, stats.totalSeconds,
                stats.totalSeconds > 0 ? stats.generatedTokens / stats.totalSeconds : 0.0,
                (long long)stats.decodeSteps, (long long)stats.forwardCalls,
                (long long)decoder.memoryBytes(), decoder.memoryBytes() / (1024.0 * 1024.0),
                decoder.memoryReport().empty() ? "" : ": ", decoder.memoryReport().c_str());
  std::cerr << buf;
  if (std::string kv = decoder.kvReport(); !kv.empty())
    std::cerr << "genrun: stats: " << kv << "\n";
  if (std::string choices = decoder.choiceReport(); !choices.empty())
    std::cerr << "genrun: stats: " << choices << "\n";
}

static int run(int argc, char **argv) {
  genrun::Args args;
  if (Status s = genrun::parseArgs(std::vector<std::string>(argv, argv + argc), args); !s)
    fail(s.message());
  if (args.help) {
    std::cout << genrun::usageText();
    return 0;
  }
  if (args.helpEnv) { // what genc and genrun read from the environment
    for (const genrt::env::Variable &v : genrt::env::variables())
      std::cout << v.name << "  (" << v.reader << ")\n    " << v.what << "\n";
    return 0;
  }
  if (Status s = args.cfg.validate(); !s)
    fail(s.message());

  // Prompts: JSON lines (a file or stdin) or --prompt texts. `where[n]`
  // names prompt n in error messages.
  std::vector<Prompt> prompts;
  std::vector<std::optional<std::string>> texts;
  std::vector<std::string> where;
  if (args.prompts.empty()) {
    std::vector<int64_t> lines;
    std::string name = args.input == "-" ? "<stdin>" : args.input;
    if (Status s = readPromptLines(readFile(args.input), name, prompts, lines, &texts); !s)
      fail(s.message());
    for (int64_t l : lines)
      where.push_back(name + ":" + std::to_string(l));
    // Not silence: an empty output could pass for a run that generated nothing.
    if (prompts.empty())
      std::cerr << "genrun: warning: " << name << " holds no prompts; the output is empty\n";
  } else {
    for (size_t n = 0; n < args.prompts.size(); ++n) {
      prompts.emplace_back();
      texts.push_back(args.prompts[n]);
      where.push_back("--prompt " + std::to_string(n + 1));
    }
  }

  const auto loadStart = std::chrono::steady_clock::now();
  OpenedPlan opened;
  if (Status s = openPlan(args.plan, args.device, opened, args.exec); !s)
    fail(s.message());
  const double loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loadStart).count();
  std::unique_ptr<Decoder> &decoder = opened.decoder;
  std::unique_ptr<text::Tokenizer> &tokenizer = opened.tokenizer;

  const ModelInfo &info = decoder->info();
  // The model's generation config under the flags given, as HF generate()
  // starts from it.
  if (Status s = args.cfg.applyDefaults(info.generationDefaults, args.given); !s)
    fail(s.message());
  args.cfg.tokenizer = tokenizer.get();
  if (Status s = args.cfg.validateFor(info); !s)
    fail(s.message());

  for (size_t n = 0; n < prompts.size(); ++n) {
    if (!texts[n])
      continue;
    std::string field = args.prompts.empty() ? "field \"text\": " : "";
    if (Status s = text::encodePrompt(tokenizer.get(), *texts[n], "give \"input_ids\"", prompts[n].inputIds); !s)
      fail(where[n] + ": " + field + s.message());
  }
  // max_length counts the longest prompt as given (HF pads a batch to it),
  // or an encoder-decoder's decoder start token.
  int64_t longest = info.encoderDecoder ? 1 : 0;
  for (size_t n = 0; n < prompts.size() && !info.encoderDecoder; ++n)
    longest = std::max<int64_t>(longest, static_cast<int64_t>(prompts[n].inputIds.size()));
  if (Status s = args.cfg.resolveMaxLength(longest); !s)
    fail(s.message());
  for (const std::string &w : args.cfg.warnings())
    std::cerr << "genrun: warning: " << w << "\n";
  const size_t promptCount = prompts.size();
  CheckedGeneration request;
  if (Status s = checkGeneration(info, decoder->maxSlots(), args.cfg, std::move(prompts), request, &where); !s)
    fail(s.message());

  GenerationStats stats;
  if (args.stream)
    generateStreaming(args, *decoder, tokenizer.get(), request, stats);
  else
    generateAll(args, *decoder, tokenizer.get(), request, stats);
  if (args.stats)
    printStats(*decoder, promptCount, stats, loadSeconds);
  return 0;
}

int main(int argc, char **argv) {
  for (const std::string &name : genrt::env::unknownExecutorVariables(environ))
    std::fprintf(stderr, "genrun: warning: %s is set, but genrun reads no such variable (genrun --help-env lists them)\n",
                 name.c_str());
  if (argc >= 2 && std::strcmp(argv[1], "serve") == 0)
    return genrun::execServe(argc, argv);
  // Nothing of an out-of-memory failure reaches the user as an abort: the
  // library returns it as a Status, and what genrun itself holds (the
  // prompts, the output text) is caught here.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    fail("out of memory");
  } catch (const std::length_error &) {
    fail("out of memory");
  }
}
