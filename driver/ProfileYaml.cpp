#include "driver/ProfileYaml.h"
#include "compiler/ir/ReadFile.h"

#include "codegen/NvrtcCompile.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/YAMLTraits.h"

#include <set>

using namespace genc;

namespace {

// Shared by the mapping traits and the diagnostic handler: llvm::yaml
// reports an error at the offending node, and only we know which key it
// belongs to.
struct Ctx {
  std::vector<std::string> path; // keys being read, outermost first
  std::string scratch;           // a ScalarTraits::input message must outlive the call
  std::string error;             // the first diagnostic, formatted
};

std::string keyPath(const std::vector<std::string> &path) {
  std::string s;
  for (const auto &k : path)
    s += (s.empty() ? "" : ".") + k;
  return s;
}

const char *const kTopKeys = "max_batch, max_beams, max_length, max_tokens, max_source_length, "
                             "max_new_tokens, dtype, cross_kv_dtype, weights, group_size, quantize_lm_head, "
                             "weights_zero_point, nbits_accuracy_level, gpu_archs, cuda, passes, generation, tokenizer";
const char *const kCudaKeys = "attention_heads_per_block, decode_stage_kib, decode_stream, attention_trace, step_blocks, step_blocks_per_sm, step_warps";
const char *const kGenerationKeys =
    "eos_token_id, pad_token_id, bos_token_id, decoder_start_token_id";

// llvm::yaml's words for a value of the wrong shape, in the user's terms.
std::string explain(const std::string &msg, const std::vector<std::string> &path) {
  if (msg == "unexpected scalar")
    return "expected a single value, not a list or a mapping";
  if (msg == "not a sequence")
    return "expected a list, e.g. [ a, b ]";
  if (msg == "not a mapping")
    return "expected a mapping of keys to values";
  if (llvm::StringRef(msg).startswith("unknown key"))
    return msg + " (known: " + (path.empty() ? kTopKeys : path.front() == "cuda" ? kCudaKeys : kGenerationKeys) +
           ")";
  return msg;
}

void onDiagnostic(const llvm::SMDiagnostic &d, void *context) {
  Ctx &c = *static_cast<Ctx *>(context);
  if (!c.error.empty())
    return; // the first error is the one to fix
  std::string where = d.getFilename().str() + ":" + std::to_string(d.getLineNo()) + ":" +
                      std::to_string(d.getColumnNo() + 1) + ": ";
  // llvm::yaml finds that a value is no mapping when it looks up the first
  // key inside it: name the value's key, not that one.
  std::vector<std::string> path = c.path;
  if (d.getMessage() == "not a mapping" && !path.empty())
    path.pop_back();
  std::string key = keyPath(path);
  c.error = where + (key.empty() ? "" : key + ": ") + explain(d.getMessage().str(), path);
}

llvm::StringRef report(void *context, std::string why) {
  Ctx &c = *static_cast<Ctx *>(context);
  c.scratch = std::move(why);
  return c.scratch;
}

// Values checked where they are read, so that an error points at the value.
struct Count {
  int64_t v = 0;
};
struct TokenId {
  int64_t v = 0;
};
struct DTypeName {
  std::string v;
};
struct CrossKvDTypeName {
  std::string v;
};
struct WeightsName {
  std::string v;
};
struct GroupSize {
  int64_t v = 0;
};
struct ArchName {
  std::string v;
};
struct PassName {
  std::string v;
};
struct PathName {
  std::string v;
};
struct HeadsPerBlock {
  int64_t v = 0;
};
struct StageKib {
  int64_t v = 0;
};
struct StepBlocks {
  int64_t v = 0;
};
struct StepBlocksPerSm {
  int64_t v = 0;
};
struct StepWarps {
  int64_t v = 0;
};
struct Flag {
  bool v = false;
};
struct AccuracyLevel {
  int64_t v = 0;
};
struct GenerationSection {
  GenerationDefaults v;
};
struct CudaSection {
  CudaKernelChoices v;
};

std::string checkPath(const std::string &s) { return s.empty() ? "must be a file path" : ""; }

template <typename W, std::string (*Check)(int64_t)> struct IntScalar {
  static void output(const W &w, void *, llvm::raw_ostream &os) { os << w.v; }
  static llvm::StringRef input(llvm::StringRef s, void *ctx, W &w) {
    long long v;
    if (s.getAsInteger(10, v))
      return report(ctx, "expected an integer (got '" + s.str() + "')");
    w.v = v;
    return report(ctx, Check(w.v));
  }
  static llvm::yaml::QuotingType mustQuote(llvm::StringRef) {
    return llvm::yaml::QuotingType::None;
  }
};

// true or false, nothing else (YAML 1.1's yes / on / 1 are not read as either).
struct FlagScalar {
  static void output(const Flag &w, void *, llvm::raw_ostream &os) { os << (w.v ? "true" : "false"); }
  static llvm::StringRef input(llvm::StringRef s, void *ctx, Flag &w) {
    if (s != "true" && s != "false")
      return report(ctx, "expected true or false (got '" + s.str() + "')");
    w.v = s == "true";
    return report(ctx, "");
  }
  static llvm::yaml::QuotingType mustQuote(llvm::StringRef) { return llvm::yaml::QuotingType::None; }
};

template <typename W, std::string (*Check)(const std::string &)> struct TextScalar {
  static void output(const W &w, void *, llvm::raw_ostream &os) { os << w.v; }
  static llvm::StringRef input(llvm::StringRef s, void *ctx, W &w) {
    w.v = s.str();
    return report(ctx, Check(w.v));
  }
  static llvm::yaml::QuotingType mustQuote(llvm::StringRef s) { return llvm::yaml::needsQuotes(s); }
};

template <typename W, typename T>
void mapKey(llvm::yaml::IO &io, const char *key, std::optional<T> &field) {
  Ctx &c = *static_cast<Ctx *>(io.getContext());
  c.path.push_back(key);
  llvm::Optional<W> w;
  if (io.outputting() && field)
    w = W{*field};
  io.mapOptional(key, w);
  if (!io.outputting() && w)
    field = w->v;
  c.path.pop_back();
}

template <typename W, typename T>
void mapList(llvm::yaml::IO &io, const char *key, std::optional<std::vector<T>> &field) {
  Ctx &c = *static_cast<Ctx *>(io.getContext());
  c.path.push_back(key);
  llvm::Optional<std::vector<W>> w;
  if (io.outputting() && field) {
    w.emplace();
    for (const T &x : *field)
      w->push_back(W{x});
  }
  io.mapOptional(key, w);
  if (!io.outputting() && w) {
    field.emplace();
    for (const W &x : *w)
      field->push_back(x.v);
  }
  c.path.pop_back();
}

} // namespace

LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(TokenId)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(ArchName)
LLVM_YAML_IS_SEQUENCE_VECTOR(PassName)

namespace llvm::yaml {

template <> struct ScalarTraits<Count> : IntScalar<Count, checkCount> {};
template <> struct ScalarTraits<TokenId> : IntScalar<TokenId, checkTokenId> {};
template <> struct ScalarTraits<HeadsPerBlock> : IntScalar<HeadsPerBlock, checkHeadsPerBlock> {};
template <> struct ScalarTraits<StageKib> : IntScalar<StageKib, checkStageKib> {};
template <> struct ScalarTraits<StepBlocks> : IntScalar<StepBlocks, checkStepBlocks> {};
template <> struct ScalarTraits<StepBlocksPerSm> : IntScalar<StepBlocksPerSm, checkStepBlocksPerSm> {};
template <> struct ScalarTraits<StepWarps> : IntScalar<StepWarps, checkStepWarps> {};
template <> struct ScalarTraits<Flag> : FlagScalar {};
template <> struct ScalarTraits<DTypeName> : TextScalar<DTypeName, checkDType> {};
template <> struct ScalarTraits<CrossKvDTypeName> : TextScalar<CrossKvDTypeName, checkCrossKvDType> {};
template <> struct ScalarTraits<WeightsName> : TextScalar<WeightsName, checkWeights> {};
template <> struct ScalarTraits<GroupSize> : IntScalar<GroupSize, checkGroupSize> {};
template <> struct ScalarTraits<AccuracyLevel> : IntScalar<AccuracyLevel, checkAccuracyLevel> {};
template <> struct ScalarTraits<ArchName> : TextScalar<ArchName, checkGpuArchName> {};
template <> struct ScalarTraits<PassName> : TextScalar<PassName, checkPassName> {};
template <> struct ScalarTraits<PathName> : TextScalar<PathName, checkPath> {};

template <> struct MappingTraits<GenerationSection> {
  static void mapping(IO &io, GenerationSection &g) {
    mapList<TokenId>(io, "eos_token_id", g.v.eosTokenId);
    mapKey<TokenId>(io, "pad_token_id", g.v.padTokenId);
    mapKey<TokenId>(io, "bos_token_id", g.v.bosTokenId);
    mapKey<TokenId>(io, "decoder_start_token_id", g.v.decoderStartTokenId);
  }
};

template <> struct MappingTraits<CudaSection> {
  static void mapping(IO &io, CudaSection &c) {
    mapKey<HeadsPerBlock>(io, "attention_heads_per_block", c.v.attentionHeadsPerBlock);
    mapKey<StageKib>(io, "decode_stage_kib", c.v.decodeStageKib);
    mapKey<Flag>(io, "decode_stream", c.v.decodeStream);
    mapKey<Flag>(io, "attention_trace", c.v.attentionTrace);
    mapKey<StepBlocks>(io, "step_blocks", c.v.stepBlocks);
    mapKey<StepBlocksPerSm>(io, "step_blocks_per_sm", c.v.stepBlocksPerSm);
    mapKey<StepWarps>(io, "step_warps", c.v.stepWarps);
  }
};

template <> struct MappingTraits<CompileProfile> {
  static void mapping(IO &io, CompileProfile &p) {
    mapKey<Count>(io, "max_batch", p.maxBatch);
    mapKey<Count>(io, "max_beams", p.maxBeams);
    mapKey<Count>(io, "max_length", p.maxLength);
    mapKey<Count>(io, "max_tokens", p.maxTokens);
    mapKey<Count>(io, "max_source_length", p.maxSourceLength);
    mapKey<Count>(io, "max_new_tokens", p.maxNewTokens);
    mapKey<DTypeName>(io, "dtype", p.dtype);
    mapKey<CrossKvDTypeName>(io, "cross_kv_dtype", p.crossKvDtype);
    mapKey<WeightsName>(io, "weights", p.weights);
    mapKey<GroupSize>(io, "group_size", p.groupSize);
    mapKey<Flag>(io, "quantize_lm_head", p.quantizeLmHead);
    mapKey<Flag>(io, "weights_zero_point", p.weightsZeroPoint);
    mapKey<AccuracyLevel>(io, "nbits_accuracy_level", p.nbitsAccuracyLevel);
    mapList<ArchName>(io, "gpu_archs", p.gpuArchs);
    std::optional<CudaKernelChoices> cuda; // no section when it sets nothing
    if (p.cuda.any())
      cuda = p.cuda;
    mapKey<CudaSection>(io, "cuda", cuda);
    if (cuda)
      p.cuda = *cuda;
    mapList<PassName>(io, "passes", p.passes);
    std::optional<GenerationDefaults> g; // no section when it sets nothing
    if (p.generation.any())
      g = p.generation;
    mapKey<GenerationSection>(io, "generation", g);
    if (g)
      p.generation = *g;
    mapKey<PathName>(io, "tokenizer", p.tokenizer);
  }
};

} // namespace llvm::yaml

namespace genc {

// llvm::yaml::Input lets a repeated key silently replace the first; walk
// the document once with the parser to refuse that (and to report syntax
// errors and extra documents) before mapping it.
static void checkKeysOnce(llvm::yaml::Stream &stream, llvm::yaml::Node *n, Ctx &c) {
  auto *map = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(n);
  if (!map)
    return;
  std::set<std::string> seen;
  for (llvm::yaml::KeyValueNode &kv : *map) {
    auto *k = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(kv.getKey());
    if (!k)
      continue;
    llvm::SmallString<32> storage;
    std::string key = k->getValue(storage).str();
    c.path.push_back(key);
    if (!seen.insert(key).second) {
      stream.printError(k, "given twice");
      c.path.pop_back();
      return;
    }
    checkKeysOnce(stream, kv.getValue(), c);
    c.path.pop_back();
  }
}

llvm::Expected<CompileProfile> parseProfile(llvm::StringRef text, llvm::StringRef name) {
  Ctx c;
  auto fail = [&]() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", c.error.c_str());
  };
  llvm::MemoryBufferRef buffer(text, name);
  bool empty = true; // no content, or only comments
  {
    llvm::SourceMgr sm;
    sm.setDiagHandler(onDiagnostic, &c);
    llvm::yaml::Stream stream(buffer, sm);
    int documents = 0;
    for (llvm::yaml::Document &doc : stream) {
      llvm::yaml::Node *root = doc.getRoot();
      if (++documents == 2)
        stream.printError(root, "a profile is one YAML document");
      if (!c.error.empty())
        break;
      empty = !root || llvm::isa<llvm::yaml::NullNode>(root);
      checkKeysOnce(stream, root, c);
    }
    if (!c.error.empty())
      return fail();
  }
  CompileProfile p;
  if (empty) // yaml::Input would map an empty document through a null node
    return p;
  llvm::yaml::Input in(buffer, &c, onDiagnostic, &c);
  in >> p;
  if (in.error() || !c.error.empty()) {
    if (c.error.empty())
      c.error = name.str() + ": not a compile profile";
    return fail();
  }
  return p;
}

llvm::Expected<CompileProfile> readProfile(const std::string &path) {
  auto buf = readRegularFile(path, /*IsText=*/true);
  if (!buf)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot read profile '%s': %s",
                                   path.c_str(), buf.getError().message().c_str());
  return parseProfile((*buf)->getBuffer(), path);
}

std::string profileYaml(const CompileProfile &p) {
  Ctx c;
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::yaml::Output out(os, &c);
  CompileProfile copy = p; // yaml::Output maps through non-const references
  out << copy;
  os.flush();
  return s;
}

} // namespace genc
