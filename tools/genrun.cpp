// genrun: runs a compiled generation plan. A thin main over the runtime
// library; it links nothing of the compiler (no LLVM: arguments are parsed
// by hand).
//
//   genrun model.plan [--input prompts.jsonl | --prompt TEXT ...] [--output out.jsonl] [--device auto|cpu|cuda] [options]
//
// Every input is read and checked before anything is generated, and output
// is written only when all of it is ready (to a temporary file renamed into
// place), so a failure never leaves partial output behind; except with
// --stream, whose lines go out as tokens become final.
#include "runtime/JsonLines.h"
#include "runtime/Runtime.h"
#include "runtime/search/Generate.h"
#include "runtime/text/PlanTokenizer.h"
#include "runtime/text/TextStream.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace genrt;

static const char *kUsage =
    "usage: genrun MODEL.plan --input PROMPTS.jsonl [--output OUT.jsonl] [--device auto|cpu|cuda] [options]\n"
    "       genrun MODEL.plan --prompt TEXT [--prompt TEXT ...] [options]\n"
    "       genrun MODEL.plan [options] < PROMPTS.jsonl\n"
    "\n"
    "Input: one JSON object per line, {\"input_ids\": [...]} with an optional\n"
    "\"attention_mask\" (masked positions are not fed to the model but, as in\n"
    "Hugging Face, still count for --repetition-penalty and --no-repeat-ngram-size),\n"
    "or {\"text\": \"...\"} when the plan carries a tokenizer (encoded as Hugging\n"
    "Face's tokenizer(text) does, special tokens included). --prompt TEXT is one\n"
    "text prompt (repeatable); without --input or --prompt, lines come from stdin.\n"
    "Output (stdout unless --output): one line per input, in order,\n"
    "{\"sequences\": [{\"output_ids\": [...], \"text\": \"...\", \"score\": S}, ...]}:\n"
    "generated tokens only; \"text\" (their decoding, special tokens skipped) where\n"
    "the plan carries a tokenizer.\n"
    "--stream: instead, one JSON line per event as soon as tokens are final, with\n"
    "\"prompt\" (the input's index from 0) and \"sequence\": greedy and sampling,\n"
    "{\"event\":\"token\",...,\"token_id\":T,\"text\":\"piece\"} every step (a sequence's\n"
    "pieces concatenate to its text); each returned sequence when complete (beam\n"
    "search: when its hypothesis can no longer change), {\"event\":\"sequence\",...,\n"
    "\"output_ids\":[...],\"text\":\"...\",\"score\":S}; then per prompt\n"
    "{\"event\":\"done\",\"prompt\":P,\"sequences\":[...]} (what the line would be without --stream).\n"
    "score: beam search, Hugging Face's sequences_scores; greedy/sampling, the sum of\n"
    "the chosen tokens' log-probabilities after the logits processors (and warpers).\n"
    "\n"
    "--device auto (default) runs on the GPU when one is visible, else on the CPU.\n"
    "\n"
    "Options (Hugging Face generate() meaning and defaults):\n"
    "  --max-new-tokens N         tokens to generate at most (default 20)\n"
    "  --min-new-tokens N         no eos before N new tokens (default 0)\n"
    "  --num-beams N              beam search when > 1 (default 1)\n"
    "  --length-penalty F         beam score = logprob / length**F (default 1.0)\n"
    "  --early-stopping true|false|never   (default false)\n"
    "  --num-return-sequences N   sequences per prompt (default 1)\n"
    "  --no-repeat-ngram-size N   never repeat an N-gram (default 0: off)\n"
    "  --repetition-penalty F     (default 1.0: off)\n"
    "  --do-sample                sample instead of greedy search\n"
    "  --temperature F            (default 1.0)\n"
    "  --top-k N                  (default 50; 0: off)\n"
    "  --top-p F                  (default 1.0: off)\n"
    "  --min-p F                  (default 0: off)\n"
    "  --seed N                   sampling seed (default 0)\n"
    "  --eos-token-id N           repeatable; default: the plan's eos ids\n"
    "  --batch-size N             prompts per batch (default: what the plan allows)\n"
    "  --threads N                CPU executor threads (default: the physical cores)\n"
    "  --stream                   JSON lines per event as tokens are final (above)\n"
    "  --stats                    print time to first token, tokens/s and memory to stderr\n";

[[noreturn]] static void fail(const std::string &msg) {
  std::cerr << "genrun: error: " << msg << "\n";
  std::exit(1);
}

namespace {

struct Args {
  std::string plan;
  std::string input;
  std::vector<std::string> prompts; // --prompt, in order
  std::string output;
  std::string device = "auto";
  ExecutorOptions exec;
  bool stats = false;
  bool stream = false;
  GenerationConfig cfg;
};

bool parseInt(const std::string &s, int64_t &out) {
  if (s.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size())
    return false;
  out = v;
  return true;
}

bool parseDouble(const std::string &s, double &out) {
  if (s.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v))
    return false;
  out = v;
  return true;
}

bool parseBool(const std::string &s, bool &out) {
  if (s == "true" || s == "1") {
    out = true;
    return true;
  }
  if (s == "false" || s == "0") {
    out = false;
    return true;
  }
  return false;
}

Args parseArgs(int argc, char **argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (!arg.empty() && arg[0] == '-' && arg != "-")
        fail("unknown option '" + arg + "' (see genrun --help)");
      positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    // Flags that take no value.
    if (name == "--stats" || name == "--do-sample" || name == "--stream") {
      bool b = true;
      if (hasValue && !parseBool(value, b))
        fail("invalid value '" + value + "' for " + name + ": expected true or false");
      (name == "--stats" ? a.stats : name == "--stream" ? a.stream : a.cfg.doSample) = b;
      continue;
    }
    static const char *const kValued[] = {
        "--input", "--prompt", "--output", "--device", "--max-new-tokens", "--min-new-tokens", "--num-beams",
        "--length-penalty", "--early-stopping", "--num-return-sequences", "--no-repeat-ngram-size",
        "--repetition-penalty", "--temperature", "--top-k", "--top-p", "--min-p", "--seed",
        "--eos-token-id", "--batch-size", "--threads"};
    bool known = false;
    for (const char *k : kValued)
      known = known || name == k;
    if (!known)
      fail("unknown option '" + name + "' (see genrun --help)");
    if (!hasValue) {
      if (i + 1 >= argc)
        fail("option " + name + " needs a value");
      value = argv[++i];
    }
    auto intArg = [&](int64_t &dst) {
      if (!parseInt(value, dst))
        fail("invalid value '" + value + "' for " + name + ": expected an integer");
    };
    auto doubleArg = [&](double &dst) {
      if (!parseDouble(value, dst))
        fail("invalid value '" + value + "' for " + name + ": expected a number");
    };
    GenerationConfig &c = a.cfg;
    if (name == "--input") {
      a.input = value;
    } else if (name == "--prompt") {
      a.prompts.push_back(value);
    } else if (name == "--output") {
      a.output = value;
    } else if (name == "--device") {
      a.device = value;
    } else if (name == "--threads") {
      int64_t n = 0;
      intArg(n);
      if (n < 1 || n > 1024)
        fail("invalid value '" + value + "' for --threads: expected 1 to 1024");
      a.exec.threads = static_cast<int>(n);
    } else if (name == "--max-new-tokens") {
      intArg(c.maxNewTokens);
    } else if (name == "--min-new-tokens") {
      intArg(c.minNewTokens);
    } else if (name == "--num-beams") {
      intArg(c.numBeams);
    } else if (name == "--length-penalty") {
      doubleArg(c.lengthPenalty);
    } else if (name == "--early-stopping") {
      if (!parseEarlyStopping(value, c.earlyStopping))
        fail("invalid value '" + value + "' for --early-stopping: expected true, false or never");
    } else if (name == "--num-return-sequences") {
      intArg(c.numReturnSequences);
    } else if (name == "--no-repeat-ngram-size") {
      intArg(c.noRepeatNgramSize);
    } else if (name == "--repetition-penalty") {
      doubleArg(c.repetitionPenalty);
    } else if (name == "--temperature") {
      doubleArg(c.temperature);
    } else if (name == "--top-k") {
      intArg(c.topK);
    } else if (name == "--top-p") {
      doubleArg(c.topP);
    } else if (name == "--min-p") {
      doubleArg(c.minP);
    } else if (name == "--seed") {
      int64_t s;
      intArg(s);
      c.seed = uint64_t(s);
    } else if (name == "--eos-token-id") {
      int64_t e;
      intArg(e);
      c.eosTokenIds.push_back(e);
    } else if (name == "--batch-size") {
      intArg(c.batchSize);
    }
  }
  if (positional.empty())
    fail("no plan given (usage: genrun MODEL.plan --input PROMPTS.jsonl ...)");
  if (positional.size() > 1)
    fail("more than one plan given: '" + positional[0] + "', '" + positional[1] + "'");
  a.plan = positional[0];
  if (!a.input.empty() && !a.prompts.empty())
    fail("give --input or --prompt, not both");
  if (a.input.empty() && a.prompts.empty())
    a.input = "-";
  return a;
}

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
static void generateAll(const Args &args, Decoder &decoder, const text::Tokenizer *tokenizer,
                        const std::vector<Prompt> &prompts, GenerationStats &stats) {
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
  if (Status s = generate(decoder, args.cfg, prompts, results, &stats); !s)
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
static void generateStreaming(const Args &args, Decoder &decoder, const text::Tokenizer *tokenizer,
                              const std::vector<Prompt> &prompts, GenerationStats &stats) {
  std::ofstream file;
  if (!args.output.empty()) {
    file.open(args.output, std::ios::binary | std::ios::trunc);
    if (!file)
      fail("cannot write output '" + args.output + "': " + std::strerror(errno));
  }
  std::ostream &out = args.output.empty() ? std::cout : file;
  text::TextStreamObserver observer(tokenizer, [&](text::StreamEvent &&ev) {
    out << streamEventLine(ev, tokenizer != nullptr) << '\n';
    out.flush();
  });
  std::vector<GenerationResult> results;
  if (Status s = generate(decoder, args.cfg, prompts, results, &stats, &observer); !s)
    fail(s.message());
  if (!out)
    fail(args.output.empty() ? "cannot write to stdout" : "cannot write output '" + args.output + "'");
}

static void printStats(const Decoder &decoder, size_t promptCount, const GenerationStats &stats) {
  // Decode ms/token: the wall time of the search steps after each batch's
  // prefill, per step (one token per live row each).
  double decodeMs = stats.decodeForwardCalls ? stats.decodeSeconds * 1e3 / stats.decodeForwardCalls : 0.0;
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "genrun: stats: device %s; %zu prompts in %lld batches, %lld prompt tokens, %lld generated tokens\n"
                "genrun: stats: time to first token %.3f ms, decode %.3f ms/token, total %.3f s, %.1f generated tokens/s\n"
                "genrun: stats: %lld decode steps, %lld forward calls, memory %lld bytes (%.1f MiB)%s%s\n",
                decoder.deviceName().c_str(), promptCount, (long long)stats.batches,
                (long long)stats.promptTokens, (long long)stats.generatedTokens,
                stats.firstTokenSeconds * 1e3, decodeMs, stats.totalSeconds,
                stats.totalSeconds > 0 ? stats.generatedTokens / stats.totalSeconds : 0.0,
                (long long)stats.decodeSteps, (long long)stats.forwardCalls,
                (long long)decoder.memoryBytes(), decoder.memoryBytes() / (1024.0 * 1024.0),
                decoder.memoryReport().empty() ? "" : ": ", decoder.memoryReport().c_str());
  std::cerr << buf;
}

int main(int argc, char **argv) {
  Args args = parseArgs(argc, argv);
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
  } else {
    for (size_t n = 0; n < args.prompts.size(); ++n) {
      prompts.emplace_back();
      texts.push_back(args.prompts[n]);
      where.push_back("--prompt " + std::to_string(n + 1));
    }
  }

  Status err = Status::ok();
  std::unique_ptr<Decoder> decoder = openDecoder(args.plan, args.device, err, args.exec);
  if (!decoder)
    fail(err.message());
  std::unique_ptr<text::Tokenizer> tokenizer;
  if (Status s = text::loadPlanTokenizer(args.plan, tokenizer); !s)
    fail(s.message());

  const ModelInfo &info = decoder->info();
  if (Status s = args.cfg.validateFor(info); !s)
    fail(s.message());
  for (size_t n = 0; n < prompts.size(); ++n) {
    if (texts[n]) {
      std::string field = args.prompts.empty() ? "field \"text\": " : "";
      if (Status s = text::encodePrompt(tokenizer.get(), *texts[n], "give \"input_ids\"", prompts[n].inputIds); !s)
        fail(where[n] + ": " + field + s.message());
    }
    if (Status s = validatePrompt(prompts[n], info, args.cfg); !s)
      fail(where[n] + ": " + s.message());
  }

  GenerationStats stats;
  if (args.stream)
    generateStreaming(args, *decoder, tokenizer.get(), prompts, stats);
  else
    generateAll(args, *decoder, tokenizer.get(), prompts, stats);
  if (args.stats)
    printStats(*decoder, prompts.size(), stats);
  return 0;
}
