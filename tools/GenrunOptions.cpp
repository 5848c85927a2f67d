#include "tools/GenrunOptions.h"

#include "runtime/json/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

using genrt::Status;

namespace genrun {
namespace {

const char *const kUsage =
    "usage: genrun MODEL.plan --input PROMPTS.jsonl [--output OUT.jsonl] [--device auto|cpu|cuda] [options]\n"
    "       genrun MODEL.plan --prompt TEXT [--prompt TEXT ...] [options]\n"
    "       genrun MODEL.plan [options] < PROMPTS.jsonl\n"
    "       genrun serve MODEL.plan [--host 127.0.0.1] [--port 8000] [--device auto|cpu|cuda] [--max-queue N]\n"
    "                    [--api-key KEY] [--served-model-name NAME] [--step-tokens N]   (genrun serve --help)\n"
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
    "  --max-new-tokens N         tokens to generate at most (default 20, or what\n"
    "                             the model's max_length leaves)\n"
    "  --max-length N             HF's max_length: the longest prompt + new tokens;\n"
    "                             --max-new-tokens wins when both are given\n"
    "  --min-new-tokens N         no eos before N new tokens (default 0)\n"
    "  --ignore-eos               the plan's eos ids end nothing (only --eos-token-id's do)\n"
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
    "Logits processors (lengths count the whole prompt, as HF's input_ids):\n"
    "  --min-length N             no eos before the row is N tokens long (default 0)\n"
    "  --forced-bos-token-id N    the first generated token after a 1-token prompt\n"
    "  --forced-eos-token-id N|'[N, ...]'   forced as the last token at the maximum length\n"
    "  --suppress-tokens '[N, ...]'         never generated\n"
    "  --begin-suppress-tokens '[N, ...]'   not generated first\n"
    "  --exponential-decay-length-penalty '[START, FACTOR]'  eos score grows by FACTOR\n"
    "                             each token past START new tokens\n"
    "  --bad-words-ids '[[N, ...], ...]'    token sequences never completed\n"
    "  --sequence-bias '[[[N, ...], BIAS], ...]'  added to a sequence's last token\n"
    "  --renormalize-logits       log-softmax the processed scores (beam scores)\n"
    "  --encoder-repetition-penalty F       the source's tokens (a decoder-only model's\n"
    "                             prompt) made F times likelier (default 1.0: off)\n"
    "  --encoder-no-repeat-ngram-size N     never repeat an N-gram of the source (prompt)\n"
    "  --stop-strings '[\"S\", ...]'        a row ends with the token completing S in its\n"
    "                             text (needs the plan's tokenizer)\n"
    "  --typical-p F, --epsilon-cutoff F, --eta-cutoff F   sampling warpers (default off)\n"
    "  --num-beam-groups N, --diversity-penalty F, --penalty-alpha F   HF's group beam and\n"
    "                             contrastive search: refused as Hugging Face 5.x refuses\n"
    "                             them (Hub code); N 1 / F 0 override a model's values\n"
    "  --batch-size N             prompts per batch, at least 1 (default: what the plan allows)\n"
    "  --threads N                CPU executor threads (default: the physical cores)\n"
    "  --gpus N                   GPUs of this machine (default 1); more than one shards\n"
    "                             each sequence's KV cache by position across them (tree\n"
    "                             attention: weights on every GPU, attention combined by NCCL)\n"
    "  --stream                   JSON lines per event as tokens are final (above)\n"
    "  --stats                    print time to first token, tokens/s and memory to stderr\n"
    "  --help-env                 list the GENC_* environment variables genc and genrun read\n";

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

bool isValued(const std::string &name) {
  static const char *const kValued[] = {
      "--input", "--prompt", "--output", "--device", "--max-new-tokens", "--max-length", "--min-new-tokens", "--num-beams",
      "--length-penalty", "--early-stopping", "--num-return-sequences", "--no-repeat-ngram-size",
      "--repetition-penalty", "--temperature", "--top-k", "--top-p", "--min-p", "--seed",
      "--eos-token-id", "--batch-size", "--threads", "--gpus", "--min-length", "--forced-bos-token-id",
      "--forced-eos-token-id", "--suppress-tokens", "--begin-suppress-tokens", "--exponential-decay-length-penalty",
      "--bad-words-ids", "--sequence-bias", "--typical-p", "--epsilon-cutoff", "--eta-cutoff",
      "--encoder-repetition-penalty", "--encoder-no-repeat-ngram-size", "--stop-strings", "--num-beam-groups",
      "--diversity-penalty", "--penalty-alpha"};
  for (const char *k : kValued)
    if (name == k)
      return true;
  return false;
}

// A JSON list of token ids (HF's shape), into `out`; "" or the error.
std::string idList(const std::string &value, const std::string &name, std::vector<int64_t> &out) {
  genrt::json::Value v;
  if (!genrt::json::parse(value, v) || !genrt::parseTokenIds(v, out))
    return "invalid value '" + value + "' for " + name + ": expected a JSON list of token ids";
  return "";
}

// One valued option; "" or the error.
std::string setOption(const std::string &name, const std::string &value, Args &a) {
  genrt::GenerationConfig &c = a.cfg;
  auto intArg = [&](int64_t &dst) {
    return parseInt(value, dst) ? "" : "invalid value '" + value + "' for " + name + ": expected an integer";
  };
  auto doubleArg = [&](double &dst) {
    return parseDouble(value, dst) ? "" : "invalid value '" + value + "' for " + name + ": expected a number";
  };
  // A value in HF's JSON shape, read by `parse`; `expected` names the shape.
  auto jsonArg = [&](auto parse, const std::string &expected) -> std::string {
    genrt::json::Value v;
    if (genrt::json::parse(value, v) && parse(v))
      return "";
    return "invalid value '" + value + "' for " + name + ": expected " + expected;
  };
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
    if (!parseInt(value, n) || n < 1 || n > 1024)
      return "invalid value '" + value + "' for --threads: expected 1 to 1024";
    a.exec.threads = static_cast<int>(n);
  } else if (name == "--gpus") {
    int64_t n = 0;
    if (!parseInt(value, n) || n < 1 || n > 64)
      return "invalid value '" + value + "' for --gpus: expected 1 to 64";
    a.exec.gpus = static_cast<int>(n);
  } else if (name == "--max-new-tokens") {
    c.maxNewTokensGiven = true;
    return intArg(c.maxNewTokens);
  } else if (name == "--max-length") {
    return intArg(c.maxLength);
  } else if (name == "--min-new-tokens") {
    return intArg(c.minNewTokens);
  } else if (name == "--num-beams") {
    return intArg(c.numBeams);
  } else if (name == "--length-penalty") {
    return doubleArg(c.lengthPenalty);
  } else if (name == "--early-stopping") {
    if (!genrt::parseEarlyStopping(value, c.earlyStopping))
      return "invalid value '" + value + "' for --early-stopping: expected true, false or never";
  } else if (name == "--num-return-sequences") {
    return intArg(c.numReturnSequences);
  } else if (name == "--no-repeat-ngram-size") {
    return intArg(c.noRepeatNgramSize);
  } else if (name == "--repetition-penalty") {
    return doubleArg(c.repetitionPenalty);
  } else if (name == "--encoder-no-repeat-ngram-size") {
    return intArg(c.encoderNoRepeatNgramSize);
  } else if (name == "--encoder-repetition-penalty") {
    return doubleArg(c.encoderRepetitionPenalty);
  } else if (name == "--temperature") {
    return doubleArg(c.temperature);
  } else if (name == "--top-k") {
    return intArg(c.topK);
  } else if (name == "--num-beam-groups") {
    return intArg(c.numBeamGroups);
  } else if (name == "--diversity-penalty") {
    return doubleArg(c.diversityPenalty);
  } else if (name == "--penalty-alpha") {
    return doubleArg(c.penaltyAlpha);
  } else if (name == "--top-p") {
    return doubleArg(c.topP);
  } else if (name == "--min-p") {
    return doubleArg(c.minP);
  } else if (name == "--seed") {
    int64_t s;
    std::string bad = intArg(s);
    c.seed = uint64_t(s);
    return bad;
  } else if (name == "--eos-token-id") {
    int64_t e;
    std::string bad = intArg(e);
    c.eosTokenIds.push_back(e);
    return bad;
  } else if (name == "--min-length") {
    return intArg(c.minLength);
  } else if (name == "--forced-bos-token-id") {
    return intArg(c.forcedBosTokenId);
  } else if (name == "--forced-eos-token-id") {
    int64_t one = 0;
    if (parseInt(value, one)) {
      c.forcedEosTokenIds = {one};
      return "";
    }
    return idList(value, name, c.forcedEosTokenIds);
  } else if (name == "--suppress-tokens") {
    return idList(value, name, c.suppressTokens);
  } else if (name == "--begin-suppress-tokens") {
    return idList(value, name, c.beginSuppressTokens);
  } else if (name == "--exponential-decay-length-penalty") { // HF's pair (start index, decay factor)
    return jsonArg([&](const genrt::json::Value &v) { return genrt::parseExpDecay(v, c.expDecayStart, c.expDecayFactor); },
                   "[START, FACTOR], START >= 0");
  } else if (name == "--bad-words-ids") {
    return jsonArg([&](const genrt::json::Value &v) { return genrt::parseBadWordsIds(v, c.badWordsIds); },
                   "[[N, ...], ...] (HF's shape)");
  } else if (name == "--sequence-bias") {
    return jsonArg([&](const genrt::json::Value &v) { return genrt::parseSequenceBias(v, c.sequenceBias); },
                   "[[[N, ...], BIAS], ...] (HF's shape)");
  } else if (name == "--stop-strings") {
    return jsonArg([&](const genrt::json::Value &v) { return genrt::parseStopStrings(v, c.stopStrings); },
                   "a JSON string or list of strings, none empty (e.g. '[\"\\n\\n\", \"END\"]')");
  } else if (name == "--typical-p") {
    return doubleArg(c.typicalP);
  } else if (name == "--epsilon-cutoff") {
    return doubleArg(c.epsilonCutoff);
  } else if (name == "--eta-cutoff") {
    return doubleArg(c.etaCutoff);
  } else if (name == "--batch-size") {
    int64_t n = 0;
    if (std::string bad = intArg(n); !bad.empty())
      return bad;
    if (genrt::Status st = c.setBatchSize(n); !st)
      return st.message();
  }
  return "";
}

} // namespace

const char *usageText() { return kUsage; }

Status parseArgs(const std::vector<std::string> &argv, Args &a) {
  a = Args();
  std::vector<std::string> positional;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string &arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      return Status::ok();
    }
    if (arg == "--help-env") {
      a.helpEnv = true;
      return Status::ok();
    }
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (!arg.empty() && arg[0] == '-' && arg != "-")
        return Status::error("unknown option '" + arg + "' (see genrun --help)");
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
    if (name == "--stats" || name == "--do-sample" || name == "--stream" || name == "--renormalize-logits" ||
        name == "--ignore-eos") {
      bool b = true;
      if (hasValue && !parseBool(value, b))
        return Status::error("invalid value '" + value + "' for " + name + ": expected true or false");
      (name == "--stats"                ? a.stats
       : name == "--stream"             ? a.stream
       : name == "--renormalize-logits" ? a.cfg.renormalizeLogits
       : name == "--ignore-eos"         ? a.cfg.ignoreModelEos
                                        : a.cfg.doSample) = b;
      if (name == "--do-sample" || name == "--renormalize-logits")
        a.given.push_back(name == "--do-sample" ? "do_sample" : "renormalize_logits");
      continue;
    }
    if (!isValued(name))
      return Status::error("unknown option '" + name + "' (see genrun --help)");
    std::string keyword = name.substr(2);
    for (char &ch : keyword)
      if (ch == '-')
        ch = '_';
    a.given.push_back(keyword);
    if (!hasValue) {
      if (i + 1 >= argv.size())
        return Status::error("option " + name + " needs a value");
      value = argv[++i];
    }
    if (std::string bad = setOption(name, value, a); !bad.empty())
      return Status::error(bad);
  }
  if (positional.empty())
    return Status::error("no plan given (usage: genrun MODEL.plan --input PROMPTS.jsonl ...)");
  if (positional.size() > 1)
    return Status::error("more than one plan given: '" + positional[0] + "', '" + positional[1] + "'");
  a.plan = positional[0];
  if (!a.input.empty() && !a.prompts.empty())
    return Status::error("give --input or --prompt, not both");
  if (a.input.empty() && a.prompts.empty())
    a.input = "-";
  return Status::ok();
}

} // namespace genrun
