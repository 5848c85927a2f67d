// Loads a .plan file: maps it, parses the JSON metadata and checks every
// offset, size, index and shape before anything uses them. A plan is
// untrusted input: a bad one gives a Status error, never a crash.
#include "runtime/json/Json.h"
#include "runtime/plan/PlanHeader.h"
#include "runtime/plan/PlanLimits.h"
#include "runtime/plan/PlanVerifier.h"
#include "runtime/plan/Program.h"

#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace genrt {

int64_t Plan::weightBytes() const {
  int64_t n = 0;
  for (const auto &w : weights)
    n += static_cast<int64_t>(w.numBytes());
  return n;
}

int64_t Plan::arenaBytes() const {
  int64_t n = 0;
  for (const auto &[name, p] : programs)
    n = std::max(n, p.arenaBytes);
  return n;
}

namespace {

struct Mapping {
  void *addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr && addr != MAP_FAILED)
      munmap(addr, size);
  }
};

class Loader {
public:
  Loader(const std::string &path, Plan &plan) : path_(path), plan_(plan) {}

  Status runFile() {
    // O_NONBLOCK: opening a named pipe must not wait for a writer; the
    // fstat below refuses it (and anything else that is not a plain file).
    int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      return Status::error("cannot open plan '" + path_ + "': " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return err("not a regular file");
    }
    auto map = std::make_shared<Mapping>();
    map->size = static_cast<size_t>(st.st_size);
    if (map->size < kPlanHeaderBytes) {
      ::close(fd);
      return err("too small to be a plan (" + std::to_string(map->size) + " bytes)");
    }
    map->addr = mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map->addr == MAP_FAILED)
      return err("cannot map the file");
    return runBytes(map, static_cast<const uint8_t *>(map->addr), map->size);
  }

  Status runBytes(std::shared_ptr<const void> owner, const uint8_t *data, size_t size) {
    base_ = data;
    size_ = size;
    plan_.mapping = std::move(owner);

    PlanHeader h;
    if (std::string bad = readPlanHeader(base_, size_, h); !bad.empty())
      return err(bad);
    uint64_t jsonOff = h.jsonOffset, jsonSize = h.jsonBytes;
    blobOff_ = h.blobOffset;
    blobSize_ = h.blobBytes;
    json::Value root;
    Status s = json::parse(std::string(reinterpret_cast<const char *>(base_ + jsonOff), jsonSize), root);
    if (!s)
      return err("metadata: " + s.message());
    if (!(s = readRoot(root)))
      return s;
    // Parsed: now the whole plan is checked before anything uses it.
    if (!(s = verifyPlan(plan_)))
      return err(s.message());
    if (const Program *decode = plan_.program("decode_step"); !plan_.step.empty()) {
      if (!decode)
        return err("a step schedule without a @decode_step");
      if (!(s = verifyStepSchedule(plan_.step, *decode, plan_.weights)))
        return err(s.message());
    }
    return Status::ok();
  }

private:
  Status err(const std::string &m) const { return Status::error("plan '" + path_ + "': " + m); }

  Status need(const json::Value &obj, const char *key, const json::Value *&out, json::Value::Kind k) {
    out = obj.isObject() ? obj.find(key) : nullptr;
    if (!out || out->kind() != k)
      return err(std::string("metadata: missing or mistyped field '") + key + "'");
    return Status::ok();
  }
  Status needInt(const json::Value &obj, const char *key, int64_t &out, int64_t lo = 0) {
    const json::Value *v = obj.isObject() ? obj.find(key) : nullptr;
    if (!v || !v->isInteger() || v->asInt() < lo)
      return err(std::string("metadata: field '") + key + "' must be an integer >= " +
                 std::to_string(lo));
    out = v->asInt();
    return Status::ok();
  }

  Status readTensorRef(const json::Value &v, Tensor &out) {
    const json::Value *dt, *shape;
    if (Status s = need(v, "dtype", dt, json::Value::Kind::String); !s)
      return s;
    if (Status s = need(v, "shape", shape, json::Value::Kind::Array); !s)
      return s;
    auto dtype = parseDType(dt->asString());
    if (!dtype)
      return err("metadata: unknown dtype '" + dt->asString() + "'");
    std::vector<int64_t> dims;
    int64_t numel = 1;
    for (const auto &d : shape->items()) {
      if (!d.isInteger() || d.asInt() < 0 || d.asInt() > (int64_t(1) << 40))
        return err("metadata: bad tensor dim");
      dims.push_back(d.asInt());
      if (numel > (int64_t(1) << 40) / std::max<int64_t>(1, d.asInt()))
        return err("metadata: tensor too large");
      numel *= d.asInt();
    }
    int64_t off, bytes;
    if (Status s = needInt(v, "offset", off); !s)
      return s;
    if (Status s = needInt(v, "bytes", bytes); !s)
      return s;
    if (bytes != numel * static_cast<int64_t>(dtypeSize(*dtype)))
      return err("metadata: tensor bytes do not match its shape");
    if (static_cast<uint64_t>(off) > blobSize_ || static_cast<uint64_t>(bytes) > blobSize_ - off)
      return err("a tensor lies outside the data blob (truncated file?)");
    if (off % kPlanBufferAlignment)
      return err("metadata: a tensor is not " + std::to_string(kPlanBufferAlignment) +
                 "-byte aligned in the data blob");
    out = Tensor(*dtype, dims, plan_.mapping, base_ + blobOff_ + off);
    return Status::ok();
  }

  Status readRoot(const json::Value &root) {
    const json::Value *model, *weights, *programs, *kv;
    if (Status s = need(root, "model", model, json::Value::Kind::Object); !s)
      return s;
    ModelInfo &mi = plan_.model;
    Status s = Status::ok();
    if (!(s = needInt(*model, "vocab_size", mi.vocabSize, 1)) ||
        !(s = needInt(*model, "pad_token_id", mi.padTokenId, -1)) ||
        !(s = needInt(*model, "bos_token_id", mi.bosTokenId, -1)) ||
        !(s = needInt(*model, "decoder_start_token_id", mi.decoderStartTokenId, -1)) ||
        !(s = needInt(*model, "max_batch", mi.maxBatch, 1)) ||
        !(s = needInt(*model, "max_beams", mi.maxBeams, 1)) ||
        !(s = needInt(*model, "max_length", mi.maxLength, 1)) ||
        !(s = needInt(root, "max_tokens", plan_.maxTokens, 1)))
      return s;
    const json::Value *eos;
    if (!(s = need(*model, "eos_token_ids", eos, json::Value::Kind::Array)))
      return s;
    // Optional (plans from before it); its values are checked where they are
    // applied (GenerationConfig::applyDefaults), by name.
    if (const json::Value *gd = model->find("generation_defaults")) {
      if (!gd->isObject())
        return err("metadata: model.generation_defaults must be an object");
      mi.generationDefaults = *gd;
    }
    if (const json::Value *ad = root.find("activation_dtype")) {
      auto dt = ad->isString() ? parseDType(ad->asString()) : std::nullopt;
      if (!dt || (*dt != DType::F32 && *dt != DType::F16 && *dt != DType::BF16))
        return err("metadata: activation_dtype must be f32, f16 or bf16");
      plan_.activationDType = *dt;
    }
    // The tokenizer genc packed (tokenizer.json's text): a view for the
    // text layer (runtime/text/PlanTokenizer.h), so a plan is read once.
    if (const json::Value *t = root.find("tokenizer")) {
      const json::Value *fmt = t->isObject() ? t->find("format") : nullptr;
      if (!fmt || !fmt->isString() || fmt->asString() != "tokenizer.json")
        return err("metadata: the tokenizer's 'format' must be \"tokenizer.json\"");
      int64_t off = 0, bytes = 0;
      if (!needInt(*t, "offset", off) || !needInt(*t, "bytes", bytes))
        return err("metadata: the tokenizer needs an integer 'offset' and 'bytes'");
      if (static_cast<uint64_t>(off) > blobSize_ || static_cast<uint64_t>(bytes) > blobSize_ - off)
        return err("the tokenizer lies outside the data blob (truncated file?)");
      plan_.tokenizerJson = std::string_view(reinterpret_cast<const char *>(base_ + blobOff_ + off),
                                             static_cast<size_t>(bytes));
      // For chat: string maps (chat_template: a string, or named strings).
      auto strings = [&](const json::Value *v, const char *what, std::map<std::string, std::string> &out) {
        if (!v)
          return Status::ok();
        if (!v->isObject())
          return err(std::string("metadata: the tokenizer's '") + what + "' must be an object");
        for (const auto &[k, e] : v->members()) {
          if (!e.isString())
            return err(std::string("metadata: the tokenizer's '") + what + "' entry '" + k + "' must be a string");
          out[k] = e.asString();
        }
        return Status::ok();
      };
      if (Status s = strings(t->find("special_tokens"), "special_tokens", plan_.specialTokens); !s)
        return s;
      const json::Value *chat = t->find("chat_template");
      if (chat && chat->isString())
        plan_.chatTemplates[""] = chat->asString();
      else if (Status s = strings(chat, "chat_template", plan_.chatTemplates); !s)
        return s;
    }
    if (const json::Value *st = root.find("step"))
      if (Status s = parseStepSchedule(*st, plan_.step); !s)
        return err("metadata: " + s.message());
    if (const json::Value *pr = root.find("profile")) {
      if (!pr->isString())
        return err("metadata: profile must be a string");
      plan_.profile = pr->asString();
    }
    for (const auto &e : eos->items()) {
      if (!e.isInteger() || e.asInt() < 0 || e.asInt() >= mi.vocabSize)
        return err("metadata: eos_token_ids out of range");
      mi.eosTokenIds.push_back(e.asInt());
    }
    if (const json::Value *ed = model->find("encoder_decoder"))
      mi.encoderDecoder = ed->isBool() && ed->asBool();

    // The caches, laid out by the one description every executor uses
    // (runtime/kv/KvLayout.h), in the activation dtype.
    KvLayout &layout = plan_.kv;
    layout.dtype = plan_.activationDType;
    if (__builtin_mul_overflow(mi.maxBatch, mi.maxBeams, &layout.slots))
      return err("metadata: max_batch * max_beams overflows");
    layout.maxLength = mi.maxLength;
    if (model->find("max_new_tokens")) {
      if (!(s = needInt(*model, "max_new_tokens", mi.maxNewTokens, 1)))
        return s;
      if (mi.maxNewTokens >= mi.maxLength)
        return err("metadata: max_new_tokens must be below max_length");
      if (mi.maxBeams > 1) { // beams share their prompt (runtime/kv/KvLayout.h)
        layout.homes = mi.maxBatch;
        layout.branchRows = mi.maxNewTokens;
      }
    }
    if (!(s = need(root, "kv_cache", kv, json::Value::Kind::Array)))
      return s;
    for (const auto &l : kv->items()) {
      int64_t heads, dim, window;
      if (!(s = needInt(l, "kv_heads", heads, 1)) || !(s = needInt(l, "head_dim", dim, 1)) ||
          !(s = needInt(l, "window", window, 0)))
        return s;
      layout.addLayer(heads, dim, window);
    }
    if (mi.encoderDecoder) {
      const json::Value *cross;
      if (!(s = need(root, "cross_cache", cross, json::Value::Kind::Array)))
        return s;
      layout.crossEntries = mi.maxBatch;
      // Plans from before it bound sources by max_length.
      mi.maxSourceLength = mi.maxLength;
      if (model->find("max_source_length") && !(s = needInt(*model, "max_source_length", mi.maxSourceLength, 1)))
        return s;
      layout.maxSourceLength = mi.maxSourceLength;
      if (const json::Value *cd = model->find("cross_kv_dtype")) {
        if (!cd->isString() || cd->asString() != "i8")
          return err("metadata: cross_kv_dtype must be \"i8\" (or absent: the activation dtype)");
        layout.crossI8 = true;
      }
      for (const auto &l : cross->items()) {
        CrossCacheLayer layer;
        if (!(s = needInt(l, "kv_heads", layer.kvHeads, 1)) ||
            !(s = needInt(l, "head_dim", layer.headDim, 1)))
          return s;
        layout.crossLayers.push_back(layer);
      }
      if (mi.decoderStartTokenId < 0 || mi.decoderStartTokenId >= mi.vocabSize)
        return err("metadata: an encoder-decoder plan needs a decoder_start_token_id in the "
                   "vocabulary");
    }
    if (!(s = layout.verify()))
      return err("metadata: " + s.message());

    if (!(s = need(root, "weights", weights, json::Value::Kind::Array)))
      return s;
    for (const auto &w : weights->items()) {
      const json::Value *name;
      if (!(s = need(w, "name", name, json::Value::Kind::String)))
        return s;
      Tensor t;
      if (!(s = readTensorRef(w, t)))
        return s;
      plan_.weightNames.push_back(name->asString());
      plan_.weights.push_back(std::move(t));
    }

    if (!(s = need(root, "programs", programs, json::Value::Kind::Array)))
      return s;
    for (const auto &p : programs->items())
      if (!(s = readProgram(p, false)))
        return s;
    if (!(s = readFusedBodies(root)))
      return s;
    if (!(s = readKernels(root)))
      return s;
    for (const char *required : {"prefill", "decode_step"})
      if (!plan_.program(required))
        return err(std::string("metadata: no program '") + required + "'");
    if (mi.encoderDecoder) {
      const Program *enc = plan_.program("encode");
      if (!enc)
        return err("metadata: an encoder-decoder plan has no program 'encode'");
      if (enc->outputs.size() != 2 * plan_.kv.crossLayers.size())
        return err("metadata: 'encode' must return one K and one V per cross-attention layer");
    }
    // Layer attributes index the caches: check them once here.
    for (const auto &[pname, prog] : plan_.programs)
      for (const auto &op : prog.ops) {
        size_t n = op.kind == "kv_attention"      ? plan_.kv.layers.size()
                   : op.kind == "cross_attention" ? plan_.kv.crossLayers.size()
                                                  : SIZE_MAX;
        if (n == SIZE_MAX)
          continue;
        int64_t layer = attrInt(op.attrs, "layer", -1);
        if (layer < 0 || static_cast<size_t>(layer) >= n)
          return err("metadata: op '" + op.kind + "' in " + pname + " names layer " +
                     std::to_string(layer) + " of " + std::to_string(n));
      }
    return Status::ok();
  }

  Status readShape(const json::Value &arr, Shape &out) {
    if (!arr.isArray())
      return err("metadata: a shape must be an array");
    for (const auto &d : arr.items()) {
      std::optional<Dim> dim = d.isInteger() ? std::optional<Dim>(Dim(d.asInt()))
                                             : d.isString() ? parseDim(d.asString()) : std::nullopt;
      if (!dim)
        return err("metadata: bad dim in a shape");
      out.push_back(*dim);
    }
    return Status::ok();
  }

  Status readAttr(const json::Value &v, Attr &out) {
    if (!v.isObject() || v.members().size() != 1)
      return err("metadata: an attribute must be an object with one member");
    const auto &[tag, x] = v.members()[0];
    if (tag == "int" && x.isInteger()) {
      out = x.asInt();
    } else if (tag == "float" && (x.isNumber() || x.isString())) {
      out = x.isNumber() ? x.asDouble()
            : x.asString() == "inf" ? INFINITY
            : x.asString() == "-inf" ? -INFINITY : NAN;
    } else if (tag == "str" && x.isString()) {
      out = x.asString();
    } else if (tag == "ints" && x.isArray()) {
      std::vector<int64_t> r;
      for (const auto &i : x.items()) {
        if (!i.isInteger())
          return err("metadata: bad int list attribute");
        r.push_back(i.asInt());
      }
      out = r;
    } else if (tag == "floats" && x.isArray()) {
      std::vector<double> r;
      for (const auto &i : x.items()) {
        if (!i.isNumber())
          return err("metadata: bad float list attribute");
        r.push_back(i.asDouble());
      }
      out = r;
    } else if (tag == "dims") {
      DimList dl;
      if (Status s = readShape(x, dl.dims); !s)
        return s;
      out = dl;
    } else if (tag == "tensor") {
      Tensor t;
      if (Status s = readTensorRef(x, t); !s)
        return s;
      out = t;
    } else {
      return err("metadata: unknown attribute kind '" + tag + "'");
    }
    return Status::ok();
  }

  Status readIndexList(const json::Value &arr, size_t limit, std::vector<int32_t> &out) {
    if (!arr.isArray())
      return err("metadata: expected an index list");
    for (const auto &i : arr.items()) {
      if (!i.isInteger() || i.asInt() < 0 || static_cast<size_t>(i.asInt()) >= limit)
        return err("metadata: an index is out of range");
      out.push_back(static_cast<int32_t>(i.asInt()));
    }
    return Status::ok();
  }

  // Fused bodies: each `fused` op names one, with matching operand and
  // result counts; bodies hold only kernel ops (no nesting, no KV cache).
  Status readFusedBodies(const json::Value &root) {
    Status s = Status::ok();
    if (const json::Value *fns = root.find("functions")) {
      if (!fns->isArray())
        return err("metadata: 'functions' must be an array");
      for (const auto &p : fns->items())
        if (!(s = readProgram(p, true)))
          return s;
    }
    for (const auto &[fname, body] : plan_.functions)
      for (const auto &op : body.ops)
        if (op.kind == "fused" || op.kind.find("attention") != std::string::npos)
          return err("metadata: fused body '" + fname + "' holds a '" + op.kind + "' op");
    for (const auto &[pname, prog] : plan_.programs)
      for (const auto &op : prog.ops) {
        if (op.kind != "fused")
          continue;
        std::string b = attrStr(op.attrs, "body");
        auto it = plan_.functions.find(b);
        if (it == plan_.functions.end())
          return err("metadata: a fused op in " + pname + " names no known body ('" + b + "')");
        if (it->second.arguments.size() != op.operands.size() ||
            it->second.outputs.size() != op.results.size())
          return err("metadata: a fused op in " + pname + " does not match the arity of '" + b +
                     "'");
      }
    return Status::ok();
  }

  // Kernels: each names a fused body (same arity), and its code lies in the blob.
  Status readKernels(const json::Value &root) {
    const json::Value *ks = root.find("kernels");
    if (!ks)
      return Status::ok();
    const json::Value *entries, *cubins, *ptx;
    Status s = Status::ok();
    if (!(s = need(*ks, "entries", entries, json::Value::Kind::Array)) ||
        !(s = need(*ks, "cubins", cubins, json::Value::Kind::Array)) ||
        !(s = need(*ks, "ptx", ptx, json::Value::Kind::Array)))
      return s;
    // Absent: a plan from before the version was recorded (1).
    if (ks->find("abi") && !(s = needInt(*ks, "abi", plan_.kernelAbi, 1)))
      return s;
    for (const auto &e : entries->items()) {
      KernelInfo k;
      const json::Value *name, *mode, *syms, *work, *shared;
      if (!(s = need(e, "name", name, json::Value::Kind::String)) ||
          !(s = need(e, "mode", mode, json::Value::Kind::String)) ||
          !(s = need(e, "symbols", syms, json::Value::Kind::Array)) ||
          !(s = need(e, "work", work, json::Value::Kind::String)) ||
          !(s = need(e, "shared_floats", shared, json::Value::Kind::String)) ||
          !(s = needInt(e, "inputs", k.numInputs)) || !(s = needInt(e, "outputs", k.numOutputs)) ||
          !(s = needInt(e, "block", k.blockSize, 1)))
        return s;
      k.name = name->asString();
      k.mode = mode->asString();
      if (k.mode != "elementwise" && k.mode != "rows")
        return err("metadata: kernel '" + k.name + "' has an unknown mode '" + k.mode + "'");
      if (k.blockSize > 1024 || k.blockSize % 32)
        return err("metadata: kernel '" + k.name + "' has a bad block size");
      for (const auto &sy : syms->items()) {
        if (!sy.isString())
          return err("metadata: kernel '" + k.name + "': symbols must be strings");
        k.symbols.push_back(sy.asString());
      }
      auto w = parseDim(work->asString()), sh = parseDim(shared->asString());
      if (!w || !sh)
        return err("metadata: kernel '" + k.name + "' has a malformed size");
      k.work = *w;
      k.sharedFloats = *sh;
      auto it = plan_.functions.find(k.name);
      if (it == plan_.functions.end())
        return err("metadata: kernel '" + k.name + "' names no fused body");
      if (static_cast<size_t>(k.numInputs) != it->second.arguments.size() ||
          static_cast<size_t>(k.numOutputs) != it->second.outputs.size())
        return err("metadata: kernel '" + k.name + "' does not match the arity of its body");
      if (!(s = readKernelDTypes(e, it->second, k)))
        return s;
      plan_.kernels.push_back(std::move(k));
    }
    auto readCode = [&](const json::Value &list, const char *prefix, std::vector<KernelCode> &out) {
      for (const auto &c : list.items()) {
        const json::Value *arch;
        int64_t off, bytes;
        Status st = Status::ok();
        if (!(st = need(c, "arch", arch, json::Value::Kind::String)) || !(st = needInt(c, "offset", off)) ||
            !(st = needInt(c, "bytes", bytes)))
          return st;
        const std::string &a = arch->asString();
        size_t pl = std::strlen(prefix);
        bool ok = a.size() > pl && a.compare(0, pl, prefix) == 0;
        for (size_t i = pl; ok && i < a.size(); ++i)
          ok = a[i] >= '0' && a[i] <= '9';
        if (!ok)
          return err("metadata: kernel code for '" + a + "' (expected " + prefix + "XX)");
        if (static_cast<uint64_t>(off) > blobSize_ || static_cast<uint64_t>(bytes) > blobSize_ - off)
          return err("kernel code for " + a + " lies outside the data blob (truncated file?)");
        out.push_back({a, base_ + blobOff_ + off, static_cast<uint64_t>(bytes)});
      }
      return Status::ok();
    };
    if (!(s = readCode(*cubins, "sm_", plan_.cubins)) || !(s = readCode(*ptx, "compute_", plan_.ptx)))
      return s;
    if (!plan_.kernels.empty() && plan_.cubins.empty() && plan_.ptx.empty())
      return err("metadata: kernels without code");
    return Status::ok();
  }

  // The storage dtype of each kernel pointer: what the launcher passes and
  // the kernel reads, so it must fit the buffer. A weight is passed as
  // stored; an activation is f32 or the plan's activation dtype; integer
  // and bool tensors keep the body's dtype. Absent lists (older plans) say
  // what those kernels took: weights as stored, everything else as the body
  // says.
  Status readKernelDTypes(const json::Value &e, const Program &body, KernelInfo &k) {
    auto domain = [](DType t) { return isFloat(t) ? 0 : t == DType::Bool ? 1 : 2; };
    for (int out = 0; out < 2; ++out) {
      const std::vector<int32_t> &params = out ? body.outputs : body.arguments;
      std::vector<DType> &dts = out ? k.outputDTypes : k.inputDTypes;
      const char *key = out ? "output_dtypes" : "input_dtypes";
      const json::Value *list = e.find(key);
      if (list && (!list->isArray() || list->items().size() != params.size()))
        return err(std::string("metadata: kernel '") + k.name + "': '" + key +
                   "' must list one dtype per parameter");
      for (size_t i = 0; i < params.size(); ++i) {
        DType b = body.values[params[i]].dtype;
        std::optional<DType> t = b;
        if (list) {
          const json::Value &d = list->items()[i];
          t = d.isString() ? parseDType(d.asString()) : std::nullopt;
          if (!t || domain(*t) != domain(b))
            return err(std::string("metadata: kernel '") + k.name + "': bad dtype in '" + key + "'");
        }
        dts.push_back(*t);
      }
    }
    const bool listed = e.find("input_dtypes") != nullptr;
    for (const auto &[pname, prog] : plan_.programs)
      for (const auto &op : prog.ops) {
        if (op.kind != "fused" || attrStr(op.attrs, "body") != k.name)
          continue;
        for (size_t p = 0; p < op.operands.size() + op.results.size(); ++p) {
          bool res = p >= op.operands.size();
          size_t i = res ? p - op.operands.size() : p;
          const ValueInfo &v = prog.values[res ? op.results[i] : op.operands[i]];
          DType &t = res ? k.outputDTypes[i] : k.inputDTypes[i];
          std::string what = std::string(res ? "result " : "operand ") + std::to_string(i);
          if (v.storage == Storage::Weight) {
            DType w = plan_.weights[v.index].dtype();
            if (!listed && domain(w) == domain(t))
              t = w;
            if (t != w)
              return err("metadata: kernel '" + k.name + "' reads weight " + what + " as " +
                         dtypeName(t) + ", the plan stores it as " + dtypeName(w));
          } else if (t != v.dtype &&
                     !(isFloat(v.dtype) && (t == DType::F32 || t == plan_.activationDType))) {
            return err("metadata: kernel '" + k.name + "' stores " + what + " in " + pname + " as " +
                       dtypeName(t) + " (" + dtypeName(v.dtype) + " with " +
                       dtypeName(plan_.activationDType) + " activations)");
          }
        }
      }
    return Status::ok();
  }

  Status readProgram(const json::Value &p, bool body) {
    Program prog;
    const json::Value *name, *values, *ops, *maxSyms;
    Status s = Status::ok();
    if (!(s = need(p, "name", name, json::Value::Kind::String)) ||
        !(s = need(p, "values", values, json::Value::Kind::Array)) ||
        !(s = need(p, "ops", ops, json::Value::Kind::Array)) ||
        (!body && !(s = need(p, "max_symbols", maxSyms, json::Value::Kind::Object))) ||
        (!body && !(s = needInt(p, "arena_bytes", prog.arenaBytes))))
      return s;
    if (prog.arenaBytes > kMaxArenaBytes)
      return err("metadata: arena_bytes of " + name->asString() + " beyond any sane size (" +
                 std::to_string(kMaxArenaBytes) + ")");
    static const json::Value kNoSymbols = json::Value::object();
    if (body)
      maxSyms = &kNoSymbols;
    prog.name = name->asString();
    for (const auto &[sym, v] : maxSyms->members()) {
      if (!v.isInteger() || v.asInt() < 0)
        return err("metadata: bad max_symbols");
      prog.maxSymbols[sym] = v.asInt();
    }
    for (const auto &v : values->items()) {
      ValueInfo vi;
      const json::Value *dt, *shape, *storage;
      if (!(s = need(v, "dtype", dt, json::Value::Kind::String)) ||
          !(s = need(v, "shape", shape, json::Value::Kind::Array)) ||
          !(s = need(v, "storage", storage, json::Value::Kind::String)))
        return s;
      auto dtype = parseDType(dt->asString());
      if (!dtype)
        return err("metadata: unknown dtype '" + dt->asString() + "'");
      vi.dtype = *dtype;
      vi.stored = *dtype;
      if (const json::Value *st = v.find("stored")) {
        auto stored = st->isString() ? parseDType(st->asString()) : std::nullopt;
        // A float value may be stored narrower (the activation dtype); any
        // other value is stored as it is.
        if (!stored || (*stored != *dtype && !(isFloat(*dtype) && *stored == plan_.activationDType)))
          return err("metadata: a value of " + name->asString() + " has a bad 'stored' dtype");
        vi.stored = *stored;
      }
      if (!(s = readShape(*shape, vi.shape)))
        return s;
      const std::string &st = storage->asString();
      if (st == "local" && body) {
        vi.storage = Storage::Local;
      } else if (st == "arena" && !body) {
        vi.storage = Storage::Arena;
        if (!(s = needInt(v, "offset", vi.offset)) || !(s = needInt(v, "max_bytes", vi.maxBytes)))
          return s;
        if (vi.offset > prog.arenaBytes || vi.maxBytes > prog.arenaBytes - vi.offset)
          return err("metadata: a buffer of " + prog.name + " lies outside its arena");
        if (vi.offset % kPlanBufferAlignment)
          return err("metadata: a buffer of " + prog.name + " is not " +
                     std::to_string(kPlanBufferAlignment) + "-byte aligned");
        // The buffer must hold the value at the maximum shapes the plan promises.
        std::optional<int64_t> n = evaluateElements(vi.shape, prog.maxSymbols);
        int64_t bytes;
        if (!n || __builtin_mul_overflow(*n, static_cast<int64_t>(dtypeSize(vi.stored)), &bytes) ||
            bytes > vi.maxBytes)
          return err("metadata: a buffer of " + prog.name + " is smaller than its maximum shape");
      } else if (st == "weight") {
        vi.storage = Storage::Weight;
        int64_t idx;
        if (!(s = needInt(v, "index", idx)))
          return s;
        if (idx >= static_cast<int64_t>(plan_.weights.size()))
          return err("metadata: a weight index is out of range");
        vi.index = static_cast<int32_t>(idx);
      } else if (st == "argument") {
        vi.storage = Storage::Argument;
        int64_t idx;
        if (!(s = needInt(v, "index", idx)))
          return s;
        vi.index = static_cast<int32_t>(idx);
      } else {
        return err("metadata: unknown storage '" + st + "'");
      }
      prog.values.push_back(std::move(vi));
    }
    for (const auto &o : ops->items()) {
      OpInfo op;
      const json::Value *kind, *operands, *results;
      if (!(s = need(o, "kind", kind, json::Value::Kind::String)) ||
          !(s = need(o, "operands", operands, json::Value::Kind::Array)) ||
          !(s = need(o, "results", results, json::Value::Kind::Array)))
        return s;
      op.kind = kind->asString();
      if (!(s = readIndexList(*operands, prog.values.size(), op.operands)) ||
          !(s = readIndexList(*results, prog.values.size(), op.results)))
        return s;
      for (int32_t r : op.results)
        if (prog.values[r].storage != (body ? Storage::Local : Storage::Arena))
          return err("metadata: an op of " + prog.name + " writes a weight or an argument");
      if (const json::Value *loc = o.find("loc"); loc && loc->isString())
        op.loc = loc->asString();
      if (const json::Value *attrs = o.find("attrs")) {
        if (!attrs->isObject())
          return err("metadata: attrs must be an object");
        for (const auto &[k, a] : attrs->members())
          if (!(s = readAttr(a, op.attrs[k])))
            return s;
      }
      prog.ops.push_back(std::move(op));
    }
    const json::Value *args, *outs, *argNames, *outNames;
    if (!(s = need(p, "arguments", args, json::Value::Kind::Array)) ||
        !(s = need(p, "outputs", outs, json::Value::Kind::Array)) ||
        !(s = need(p, "argument_names", argNames, json::Value::Kind::Array)) ||
        !(s = need(p, "output_names", outNames, json::Value::Kind::Array)) ||
        !(s = readIndexList(*args, prog.values.size(), prog.arguments)) ||
        !(s = readIndexList(*outs, prog.values.size(), prog.outputs)))
      return s;
    for (const auto &n : argNames->items())
      prog.argumentNames.push_back(n.isString() ? n.asString() : "");
    for (const auto &n : outNames->items())
      prog.outputNames.push_back(n.isString() ? n.asString() : "");
    if (prog.argumentNames.size() != prog.arguments.size() ||
        prog.outputNames.size() != prog.outputs.size())
      return err("metadata: argument/output names do not match");
    for (size_t i = 0; i < prog.arguments.size(); ++i) {
      const ValueInfo &v = prog.values[prog.arguments[i]];
      if (v.storage != Storage::Argument || v.index != static_cast<int32_t>(i))
        return err("metadata: argument " + std::to_string(i) + " of " + prog.name + " is malformed");
    }
    auto &into = body ? plan_.functions : plan_.programs;
    if (into.count(prog.name))
      return err("metadata: duplicate program '" + prog.name + "'");
    into[prog.name] = std::move(prog);
    return Status::ok();
  }

  std::string path_;
  Plan &plan_;
  const uint8_t *base_ = nullptr;
  size_t size_ = 0;
  uint64_t blobOff_ = 0, blobSize_ = 0;
};

} // namespace

Status loadPlan(const std::string &path, Plan &out) {
  return statusOnOutOfMemory("loading plan '" + path + "'", [&] {
    out = Plan();
    return Loader(path, out).runFile();
  });
}

Status loadPlanFromMemory(std::shared_ptr<const void> owner, const uint8_t *data, size_t size,
                          const std::string &name, Plan &out) {
  return statusOnOutOfMemory("loading plan '" + name + "'", [&] {
    out = Plan();
    if (size < kPlanHeaderBytes)
      return Status::error("plan '" + name + "': too small to be a plan (" + std::to_string(size) + " bytes)");
    if (reinterpret_cast<uintptr_t>(data) % kPlanBufferAlignment)
      return Status::error("plan '" + name + "': its bytes are not " + std::to_string(kPlanBufferAlignment) +
                           "-byte aligned in memory");
    return Loader(name, out).runBytes(std::move(owner), data, size);
  });
}

} // namespace genrt
