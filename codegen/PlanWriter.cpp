#include "codegen/PlanWriter.h"

#include "codegen/LaunchCount.h"
#include "codegen/StepWeights.h"

#include "compiler/ir/Metadata.h"
#include "compiler/remarks/Progress.h"
#include "passes/analysis/PlanOptions.h"
#include "passes/analysis/Storage.h"
#include "runtime/kv/KvLayout.h"
#include "runtime/plan/PlanFormat.h"
#include "runtime/cuda/KernelAbi.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace genc {
namespace {

llvm::Error fail(const std::string &m) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "plan writer: %s", m.c_str());
}

class Writer {
public:
  Writer(const Module &m, const PlanParts &parts)
      : m_(m), activation_(parts.activation), kernels_(parts.kernels), code_(parts.code),
        profile_(parts.profile), tokenizer_(parts.tokenizer) {}

  llvm::Expected<PlanStats> write(const std::string &path) {
    PlanOptions opts = planOptions(m_);
    const Function *prefill = m_.function("prefill"), *decode = m_.function("decode_step");
    if (!prefill || !decode)
      return fail("the module has no @prefill / @decode_step (run derive-plan)");
    llvm::json::Object root;
    llvm::json::Object model;
    const Value *logits = prefill->outputs()[0].value;
    if (!logits->shape().back().isConstant())
      return fail("the vocabulary size is not constant");
    int64_t vocab = logits->shape().back().constant();
    model["vocab_size"] = vocab;
    llvm::json::Array eos;
    for (int64_t e : metadataInts(m_, "config.eos_token_id")) {
      if (e < 0 || e >= vocab) // the loader would refuse the plan
        return fail("eos_token_id " + std::to_string(e) + " is outside the vocabulary (" +
                    std::to_string(vocab) + " tokens)");
      eos.push_back(e);
    }
    model["eos_token_ids"] = std::move(eos);
    model["pad_token_id"] = metaInt("config.pad_token_id", -1);
    model["bos_token_id"] = metaInt("config.bos_token_id", -1);
    model["decoder_start_token_id"] = metaInt("config.decoder_start_token_id", -1);
    const Function *encode = m_.function("encode");
    model["encoder_decoder"] = encode != nullptr;
    model["max_batch"] = opts.maxBatch;
    model["max_beams"] = opts.maxBeams;
    model["max_length"] = opts.maxLength;
    if (encode)
      model["max_source_length"] = opts.sourceLength();
    if (opts.maxNewTokens > 0)
      model["max_new_tokens"] = opts.maxNewTokens;
    if (opts.crossKvI8)
      model["cross_kv_dtype"] = "i8";
    model["generation_defaults"] = generationDefaults();
    root["model"] = std::move(model);
    root["max_tokens"] = opts.prefillTokens();
    root["activation_dtype"] = dtypeName(activation_);
    if (!profile_.empty())
      root["profile"] = profile_;

    // KV cache layout from the attention ops; its bytes come from the same
    // description the loader and the executors use (runtime/kv/KvLayout.h).
    genrt::KvLayout layout;
    layout.dtype = activation_;
    layout.slots = opts.slots();
    layout.maxLength = opts.maxLength;
    if (opts.sharesPrompts()) {
      layout.homes = opts.maxBatch;
      layout.branchRows = opts.maxNewTokens;
    }
    std::map<int64_t, const Op *> layers, crossLayers;
    for (auto &op : prefill->ops()) {
      if (op->is("kv_attention"))
        layers[op->intAttr("layer", 0)] = op.get();
      if (op->is("cross_attention"))
        crossLayers[op->intAttr("layer", 0)] = op.get();
    }
    llvm::json::Array kv, cross;
    for (auto &[i, op] : layers) {
      if (i != static_cast<int64_t>(kv.size()))
        return fail("kv_attention layers are not numbered 0..n-1");
      layout.addLayer(op->intAttr("num_kv_heads", 0), op->intAttr("head_dim", 0), op->intAttr("window", 0));
      kv.push_back(llvm::json::Object{{"kv_heads", op->intAttr("num_kv_heads", 0)},
                                      {"head_dim", op->intAttr("head_dim", 0)},
                                      {"window", op->intAttr("window", 0)}});
    }
    root["kv_cache"] = std::move(kv);
    for (auto &[i, op] : crossLayers) {
      if (i != static_cast<int64_t>(cross.size()))
        return fail("cross_attention layers are not numbered 0..n-1");
      layout.crossLayers.push_back({op->intAttr("num_kv_heads", 0), op->intAttr("head_dim", 0)});
      cross.push_back(llvm::json::Object{{"kv_heads", op->intAttr("num_kv_heads", 0)},
                                         {"head_dim", op->intAttr("head_dim", 0)}});
    }
    if (opts.crossKvI8 && !encode)
      return fail("--cross-kv-dtype i8: the model has no cross-attention cache");
    if (encode) {
      layout.crossI8 = opts.crossKvI8;
      layout.crossEntries = opts.maxBatch;
      layout.maxSourceLength = opts.sourceLength();
      if (static_cast<int64_t>(cross.size()) * 2 != static_cast<int64_t>(encode->outputs().size()))
        return fail("@encode's outputs are not one K and one V per cross-attention layer");
      root["cross_cache"] = std::move(cross);
    }
    if (genrt::Status st = layout.verify(); !st)
      return fail(st.message());
    PlanStats stats;
    stats.kvCacheBytes = layout.selfBytes();
    stats.kvCacheBytesUnshared = layout.unshared().selfBytes();
    stats.crossKvCacheBytes = layout.crossBytes();
    stats.crossKvCacheBytesUnshared = layout.crossBytes() * std::max<int64_t>(1, opts.maxBeams);

    llvm::json::Array weights;
    for (auto &w : m_.weights()) {
      if (!w->data())
        return fail("weight @" + w->name() + " has no data (IR parsed from text?)");
      weightIndex_[w.get()] = weights.size();
      auto ref = addBlob(*w->data());
      ref["name"] = w->name();
      weights.push_back(std::move(ref));
      stats.weightsBytes += static_cast<int64_t>(w->data()->numBytes());
    }
    root["weights"] = std::move(weights);

    llvm::json::Array programs;
    for (const Function *f : {encode, prefill, decode}) {
      if (!f)
        continue;
      auto p = program(*f);
      if (!p)
        return p.takeError();
      int64_t bytes = metaInt("arena." + f->name() + ".bytes", -1);
      stats.arenaBytesByFunction[f->name()] = bytes;
      stats.arenaBytes = std::max(stats.arenaBytes, bytes);
      programs.push_back(std::move(*p));
    }
    root["programs"] = std::move(programs);
    // Bodies of the fused ops (passes/Fuse.cpp), run op by op on the CPU.
    llvm::json::Array bodies;
    for (auto &f : m_.functions())
      if (isFusedBody(*f)) {
        auto p = program(*f);
        if (!p)
          return p.takeError();
        bodies.push_back(std::move(*p));
      }
    root["functions"] = std::move(bodies);
    if (kernels_ && code_)
      root["kernels"] = kernelsJson();
    if (tokenizer_) {
      if (tokenizer_->idLimit > vocab)
        return fail("the tokenizer (" + tokenizer_->source + ") has ids up to " +
                    std::to_string(tokenizer_->idLimit - 1) + ", the model's vocabulary " +
                    std::to_string(vocab) + " (pass --no-tokenizer to compile without it)");
      llvm::json::Object specials;
      for (const auto &[k, v] : tokenizer_->specialTokens)
        specials[k] = v;
      llvm::json::Object tok{{"format", "tokenizer.json"},
                             {"source", tokenizer_->source},
                             {"offset", static_cast<int64_t>(addBytes(tokenizer_->json))},
                             {"bytes", static_cast<int64_t>(tokenizer_->json.size())},
                             {"special_tokens", std::move(specials)}};
      // chat_template: a string (one template), or an object of named ones.
      const auto &chats = tokenizer_->chatTemplates;
      if (chats.size() == 1 && chats.begin()->first.empty()) {
        tok["chat_template"] = chats.begin()->second;
      } else if (!chats.empty()) {
        llvm::json::Object named;
        for (const auto &[k, v] : chats)
          named[k] = v;
        tok["chat_template"] = std::move(named);
      }
      root["tokenizer"] = std::move(tok);
    }
    // The decode step's schedule for the step kernel (passes/ScheduleStep.cpp),
    // as the pass wrote it.
    // Only with the kernel that runs it (codegen/StepKernel.cpp gives it its
    // routines): a plan built without NVRTC keeps the kernel-per-op step.
    if (auto it = m_.metadata().find("step.schedule");
        it != m_.metadata().end() && !it->second.empty() && kernels_ && code_) {
      auto v = llvm::json::parse(it->second);
      if (!v)
        return fail("the step schedule is not JSON: " + llvm::toString(v.takeError()));
      const llvm::json::Object *o = v->getAsObject();
      if (o && o->getInteger("codes").getValueOr(0) > 0)
        root["step"] = std::move(*v);
    }
    stats.decodeStepLaunches = countLaunches(*decode);
    stats.decodeWeightsBytes = weightBytesRead(m_, *decode);
    stats.quantizedWeights = quantizedWeightBytes(m_);
    stats.decodeStepLaunchesOneRow = countLaunches(*decode, /*oneRow=*/true);

    std::string json;
    llvm::raw_string_ostream js(json);
    js << llvm::json::Value(std::move(root));
    js.flush();
    return emit(path, json, stats);
  }

private:
  // The generation options of config.json / generation_config.json that the
  // runtime acts on, in HF's names and JSON shapes: genrun and the Python
  // package start from them, as HF generate() starts from the model's
  // generation config (their flags and keywords override).
  llvm::json::Object generationDefaults() {
    static const char *const kKeys[] = {
        "max_new_tokens", "max_length", "min_new_tokens", "min_length", "num_beams", "length_penalty", "early_stopping",
        "no_repeat_ngram_size", "repetition_penalty", "do_sample", "temperature", "top_k", "top_p", "min_p",
        "forced_bos_token_id", "forced_eos_token_id", "suppress_tokens", "begin_suppress_tokens",
        "exponential_decay_length_penalty", "num_return_sequences", "typical_p", "epsilon_cutoff", "eta_cutoff",
        "renormalize_logits", "bad_words_ids", "sequence_bias", "encoder_repetition_penalty",
        "encoder_no_repeat_ngram_size", "stop_strings",
        // Not run, but read so that the modes they select are refused
        // (GenerationConfig::hubMode) rather than run as something else.
        "num_beam_groups", "diversity_penalty", "penalty_alpha", "force_words_ids", "dola_layers"};
    llvm::json::Object out;
    for (const char *k : kKeys) {
      auto it = m_.metadata().find(std::string("config.") + k);
      if (it == m_.metadata().end() || it->second.empty())
        continue; // absent or null: HF's default
      const std::string &text = it->second;
      if (std::string(k) == "early_stopping" && text == "never") {
        out[k] = "never";
        continue;
      }
      if (std::string(k) == "stop_strings") {
        // A list of strings was recorded as JSON; one string as its text.
        auto list = llvm::json::parse(text);
        const llvm::json::Array *a = list ? list->getAsArray() : nullptr;
        if (!list)
          llvm::consumeError(list.takeError());
        if (a && std::all_of(a->begin(), a->end(), [](const llvm::json::Value &e) { return e.getAsString(); }))
          out[k] = std::move(*list);
        else
          out[k] = text;
        continue;
      }
      auto v = llvm::json::parse(text);
      if (!v) {
        llvm::consumeError(v.takeError());
        if (std::string(k) == "dola_layers")
          out[k] = text; // "high" / "low": set, whatever it names
        continue; // not a value the runtime reads (e.g. a string)
      }
      out[k] = std::move(*v);
    }
    return out;
  }

  // Launch metadata per kernel, with the storage dtype of each pointer
  // parameter (what the launcher must pass); one cubin per sm_XX and PTX per
  // compute_XX holding every kernel (codegen/NvrtcCompile.h), in the blob.
  llvm::json::Object kernelsJson() {
    llvm::json::Array entries, cubins, ptx;
    for (const CudaKernel &k : kernels_->kernels) {
      llvm::json::Array syms, inDTypes, outDTypes;
      for (const auto &s : k.symbols)
        syms.push_back(s);
      for (const auto &p : k.inputs)
        inDTypes.push_back(dtypeName(p.dtype));
      for (const auto &p : k.outputs)
        outDTypes.push_back(dtypeName(p.dtype));
      entries.push_back(llvm::json::Object{{"name", k.name},
                                           {"mode", k.mode},
                                           {"symbols", std::move(syms)},
                                           {"inputs", static_cast<int64_t>(k.inputs.size())},
                                           {"outputs", static_cast<int64_t>(k.outputs.size())},
                                           {"input_dtypes", std::move(inDTypes)},
                                           {"output_dtypes", std::move(outDTypes)},
                                           {"work", k.work.str()},
                                           {"shared_floats", k.sharedFloats.str()},
                                           {"block", static_cast<int64_t>(k.blockSize)}});
    }
    auto code = [&](const std::vector<std::pair<std::string, std::string>> &list, llvm::json::Array &out) {
      for (const auto &[arch, bytes] : list) {
        uint64_t off = addBytes(bytes);
        out.push_back(llvm::json::Object{{"arch", arch},
                                         {"offset", static_cast<int64_t>(off)},
                                         {"bytes", static_cast<int64_t>(bytes.size())}});
      }
    };
    code(code_->cubins, cubins);
    code(code_->ptx, ptx);
    return llvm::json::Object{{"abi", static_cast<int64_t>(genrt::cuda::kGencKernelAbi)},
                              {"entries", std::move(entries)},
                              {"cubins", std::move(cubins)},
                              {"ptx", std::move(ptx)}};
  }

  // The blob is a list of pieces written one after another at the end (the
  // weights straight from their tensors): no copy of gigabytes into one
  // buffer that grows by reallocation.
  uint64_t place(const void *data, size_t bytes, std::shared_ptr<const std::string> owned = nullptr) {
    uint64_t off = (blobSize_ + genrt::kPlanAlignment - 1) / genrt::kPlanAlignment * genrt::kPlanAlignment;
    pieces_.push_back({off, data, bytes, std::move(owned)});
    blobSize_ = off + bytes;
    return off;
  }

  uint64_t addBytes(const std::string &bytes) {
    auto copy = std::make_shared<const std::string>(bytes);
    return place(copy->data(), copy->size(), copy);
  }

  int64_t metaInt(const std::string &k, int64_t dflt) const {
    return metadataInt(m_, k).value_or(dflt);
  }

  // `t` must outlive write() (the module's weights do).
  llvm::json::Object addBlob(const Tensor &t) {
    uint64_t off = place(t.rawData(), t.numBytes());
    llvm::json::Array shape;
    for (int64_t d : t.shape())
      shape.push_back(d);
    return llvm::json::Object{{"dtype", dtypeName(t.dtype())},
                              {"shape", std::move(shape)},
                              {"offset", static_cast<int64_t>(off)},
                              {"bytes", static_cast<int64_t>(t.numBytes())}};
  }

  static llvm::json::Array dimsJson(const Shape &s) {
    llvm::json::Array a;
    for (const Dim &d : s) {
      if (d.isConstant())
        a.push_back(d.constant());
      else
        a.push_back(d.str());
    }
    return a;
  }

  llvm::json::Value attrJson(const Attribute &a) {
    struct V {
      Writer &w;
      llvm::json::Value operator()(int64_t v) { return llvm::json::Object{{"int", v}}; }
      llvm::json::Value operator()(double v) {
        if (std::isfinite(v))
          return llvm::json::Object{{"float", v}};
        return llvm::json::Object{{"float", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"}};
      }
      llvm::json::Value operator()(const std::string &s) { return llvm::json::Object{{"str", s}}; }
      llvm::json::Value operator()(const std::vector<int64_t> &v) {
        llvm::json::Array a;
        for (int64_t x : v)
          a.push_back(x);
        return llvm::json::Object{{"ints", std::move(a)}};
      }
      llvm::json::Value operator()(const std::vector<double> &v) {
        llvm::json::Array a;
        for (double x : v)
          a.push_back(x);
        return llvm::json::Object{{"floats", std::move(a)}};
      }
      llvm::json::Value operator()(const DimList &d) {
        return llvm::json::Object{{"dims", dimsJson(d.dims)}};
      }
      llvm::json::Value operator()(const Tensor &t) {
        return llvm::json::Object{{"tensor", w.addBlob(t)}};
      }
    };
    return std::visit(V{*this}, a);
  }

  llvm::Expected<llvm::json::Object> program(const Function &f) {
    const bool body = isFusedBody(f);
    std::unordered_map<const Value *, int64_t> ids;
    llvm::json::Array values, ops, args, argNames, outs, outNames;
    auto valueId = [&](const Value *v) -> llvm::Expected<int64_t> {
      auto it = ids.find(v);
      if (it != ids.end())
        return it->second;
      if (!v->isWeight())
        return fail("@" + f.name() + " uses a value before it is defined");
      int64_t id = values.size();
      values.push_back(llvm::json::Object{{"dtype", dtypeName(v->dtype())},
                                          {"shape", dimsJson(v->shape())},
                                          {"storage", "weight"},
                                          {"index", static_cast<int64_t>(weightIndex_.at(v))}});
      ids[v] = id;
      return id;
    };
    for (size_t i = 0; i < f.arguments().size(); ++i) {
      const Value *a = f.arguments()[i].get();
      ids[a] = values.size();
      args.push_back(static_cast<int64_t>(values.size()));
      argNames.push_back(a->name());
      values.push_back(llvm::json::Object{{"dtype", dtypeName(a->dtype())},
                                          {"shape", dimsJson(a->shape())},
                                          {"storage", "argument"},
                                          {"index", static_cast<int64_t>(i)}});
    }
    std::map<std::string, int64_t> maxSyms;
    std::string prefix = "arena." + f.name() + ".max.";
    for (auto &[k, v] : m_.metadata())
      if (k.compare(0, prefix.size(), prefix) == 0)
        maxSyms[k.substr(prefix.size())] = std::atoll(v.c_str());
    for (auto &opPtr : f.ops()) {
      const Op &op = *opPtr;
      llvm::json::Array operands, results;
      for (const Value *v : op.operands()) {
        auto id = valueId(v);
        if (!id)
          return id.takeError();
        operands.push_back(*id);
      }
      auto offs = op.intsAttr("arena_offsets");
      if (body) { // values local to a fused kernel: no arena
        for (size_t i = 0; i < op.numResults(); ++i) {
          const Value *r = op.result(i);
          ids[r] = values.size();
          results.push_back(static_cast<int64_t>(values.size()));
          values.push_back(llvm::json::Object{{"dtype", dtypeName(r->dtype())},
                                              {"shape", dimsJson(r->shape())},
                                              {"storage", "local"}});
        }
      } else if (offs.size() != op.numResults())
        return fail("op '" + op.kind() + "' in @" + f.name() + " has no arena offsets (run plan-memory)");
      for (size_t i = 0; i < op.numResults() && !body; ++i) {
        const Value *r = op.result(i);
        int64_t n = 1;
        for (const Dim &d : r->shape()) {
          auto v = d.evaluate(maxSyms);
          if (!v)
            return fail("unbounded result shape in @" + f.name());
          n *= *v;
        }
        ids[r] = values.size();
        results.push_back(static_cast<int64_t>(values.size()));
        DType stored = storageDType(f, r, activation_);
        values.push_back(llvm::json::Object{
            {"dtype", dtypeName(r->dtype())},
            {"stored", dtypeName(stored)},
            {"shape", dimsJson(r->shape())},
            {"storage", "arena"},
            {"offset", offs[i]},
            {"max_bytes", n * static_cast<int64_t>(dtypeSize(stored))}});
      }
      llvm::json::Object attrs;
      for (auto &[k, a] : op.attrs())
        if (k != "arena_offsets")
          attrs[k] = attrJson(a);
      ops.push_back(llvm::json::Object{{"kind", op.kind()},
                                       {"operands", std::move(operands)},
                                       {"results", std::move(results)},
                                       {"attrs", std::move(attrs)},
                                       {"loc", op.loc()}});
    }
    for (auto &o : f.outputs()) {
      auto id = valueId(o.value);
      if (!id)
        return id.takeError();
      outs.push_back(*id);
      outNames.push_back(o.name);
    }
    llvm::json::Object syms;
    for (auto &[k, v] : maxSyms)
      syms[k] = v;
    return llvm::json::Object{{"name", f.name()},
                              {"values", std::move(values)},
                              {"ops", std::move(ops)},
                              {"arguments", std::move(args)},
                              {"argument_names", std::move(argNames)},
                              {"outputs", std::move(outs)},
                              {"output_names", std::move(outNames)},
                              {"max_symbols", std::move(syms)},
                              {"arena_bytes", metaInt("arena." + f.name() + ".bytes", 0)}};
  }

  llvm::Expected<PlanStats> emit(const std::string &path, const std::string &json,
                                 const PlanStats &stats) {
    uint64_t jsonOff = genrt::kPlanHeaderBytes;
    uint64_t blobOff = (jsonOff + json.size() + genrt::kPlanAlignment - 1) /
                       genrt::kPlanAlignment * genrt::kPlanAlignment;
    std::string header(genrt::kPlanHeaderBytes, '\0');
    std::memcpy(&header[0], genrt::kPlanMagic, 8);
    uint32_t version = genrt::kPlanFormatVersion;
    std::memcpy(&header[8], &version, 4);
    uint64_t fields[4] = {jsonOff, json.size(), blobOff, blobSize_};
    std::memcpy(&header[16], fields, sizeof fields);
    // Write to a temporary file and rename: no partial plan on failure.
    std::string tmp = path + ".tmp";
    std::error_code ec;
    {
      llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_None);
      if (ec)
        return fail("cannot write '" + path + "': " + ec.message());
      os << header << json;
      os << std::string(blobOff - jsonOff - json.size(), '\0');
      uint64_t at = 0;
      for (const Piece &p : pieces_) {
        progress::update("write-plan: blob", at, blobSize_, /*bytes=*/true);
        os << std::string(p.offset - at, '\0');
        if (p.bytes) // a mapped external-data weight is read here
          os.write(static_cast<const char *>(p.data), p.bytes);
        at = p.offset + p.bytes;
      }
      progress::update("write-plan: blob", at, blobSize_, /*bytes=*/true);
      os.close();
      if (os.has_error()) {
        llvm::sys::fs::remove(tmp);
        return fail("cannot write '" + path + "'");
      }
    }
    if (auto e = llvm::sys::fs::rename(tmp, path)) {
      llvm::sys::fs::remove(tmp);
      return fail("cannot write '" + path + "': " + e.message());
    }
    return stats;
  }

  const Module &m_;
  DType activation_;
  const CudaModule *kernels_;
  const CompiledModule *code_;
  std::string profile_;
  const PlanTokenizer *tokenizer_;
  struct Piece {
    uint64_t offset;
    const void *data;
    size_t bytes;
    std::shared_ptr<const std::string> owned; // bytes the writer made (kernels), else null
  };
  std::vector<Piece> pieces_;
  uint64_t blobSize_ = 0;
  std::unordered_map<const Value *, size_t> weightIndex_;
};

} // namespace

llvm::Expected<PlanStats> writePlan(const Module &m, const std::string &path,
                                    const PlanParts &parts) {
  return Writer(m, parts).write(path);
}

} // namespace genc
