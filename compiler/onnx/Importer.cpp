// The graph walk: parse the file, bind graph inputs and initializers, convert
// nodes in order (OnnxOps*.cpp), bind outputs, then type the whole function.
#include "compiler/onnx/Importer.h"
#include "compiler/ir/ReadFile.h"

#include "compiler/onnx/ExternalData.h"
#include "compiler/onnx/ImportContext.h"
#include "compiler/onnx/OnnxTensor.h"
#include "compiler/remarks/Progress.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>

namespace genc {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

/// Parses a .onnx file's bytes (`path` names it in errors). Protobuf's
/// default 64 MB total-bytes limit would refuse real models, so the
/// stream's limit is raised to the format's own maximum (2 GB; larger
/// models must use external data).
static llvm::Expected<std::shared_ptr<onnx::ModelProto>> parseModel(llvm::StringRef bytes, const std::string &path) {
  if (bytes.empty())
    return fail(path + ": not an ONNX model (the file is empty)");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return fail(path + ": file is larger than 2 GB, which protobuf cannot hold "
                       "(save the model with external data)");
  auto model = std::make_shared<onnx::ModelProto>();
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&in);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    // Every exporter writes ir_version (field 1, varint: tag 0x08) first, so
    // a file that starts like that is a damaged model rather than another file.
    if (static_cast<uint8_t>(bytes[0]) == 0x08)
      return fail(path + ": truncated or corrupt ONNX file (protobuf parse failed)");
    return fail(path + ": not an ONNX model (protobuf parse failed)");
  }
  // Arbitrary bytes sometimes parse as a message of unknown fields.
  if (!model->has_graph() || model->ir_version() <= 0)
    return fail(path + ": not an ONNX model (no " +
                (model->has_graph() ? "ir_version" : "graph") + ")");
  return model;
}

static bool isDefaultDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

/// Symbols must read back from the IR text: [A-Za-z_][A-Za-z0-9_]*.
static std::string sanitizeSymbol(const std::string &s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "_" + out;
  return out;
}

namespace {

class GraphImporter {
public:
  GraphImporter(ImportState &s, const onnx::GraphProto &g) : s_(s), g_(g) {}

  llvm::Error run() {
    indexNames();
    if (auto e = bindInitializers())
      return e;
    if (auto e = bindInputs())
      return e;
    for (int i = 0; i < g_.node_size(); ++i)
      if (auto e = convertNode(g_.node(i), i))
        return e;
    if (auto e = bindOutputs())
      return e;
    if (auto e = ShapeInference(s_.module).run(s_.func))
      return fail(s_.file + ": shape inference: " + llvm::toString(std::move(e)));
    return llvm::Error::success();
  }

private:
  void indexNames() {
    for (const auto &n : g_.node())
      for (const auto &in : n.input())
        if (!in.empty())
          s_.usedNames.insert(in);
    for (const auto &o : g_.output())
      s_.usedNames.insert(o.name());
    for (const auto &vi : g_.value_info())
      s_.valueInfo[vi.name()] = &vi.type();
    for (const auto &vi : g_.input())
      noteSymbols(vi);
    for (const auto &vi : g_.value_info())
      noteSymbols(vi);
  }

  void noteSymbols(const onnx::ValueInfoProto &vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
      return;
    for (const auto &d : vi.type().tensor_type().shape().dim())
      if (d.has_dim_param())
        takenSymbols_.insert(sanitizeSymbol(d.dim_param()));
  }

  /// A symbol for a dim the exporter left unnamed, distinct from every named one.
  std::string freshSymbol() {
    std::string s;
    do
      s = "unk" + std::to_string(nextUnknown_++);
    while (takenSymbols_.count(s));
    return s;
  }

  llvm::Error bindInitializers() {
    if (g_.sparse_initializer_size())
      return fail(s_.file + ": sparse initializers are not supported");
    uint64_t total = 0, done = 0;
    for (const onnx::TensorProto &t : g_.initializer())
      total += initializerBytes(t);
    for (int i = 0; i < g_.initializer_size(); ++i) {
      const onnx::TensorProto &t = g_.initializer(i);
      progress::update("import: weights", done, total, /*bytes=*/true);
      done += initializerBytes(t);
      const std::string &name = t.name();
      if (name.empty())
        return fail(s_.file + ": initializer " + llvm::Twine(i) + " has no name");
      if (s_.knownTensors.count(name))
        return fail(s_.file + ": initializer " + quoted(name) + " is defined twice");
      auto tensor = decodeGraphTensor(s_, t);
      if (!tensor)
        return fail(s_.file + ": initializer " + quoted(name) + ": " +
                    llvm::toString(tensor.takeError()));
      auto shared = std::make_shared<const Tensor>(std::move(*tensor));
      s_.knownTensors[name] = shared;
      if (shared->numElements() > s_.opts.inlineConstantLimit) {
        s_.values[name] = s_.addWeight(name, shared);
      } else {
        s_.pending[name] = {shared, name};
      }
    }
    progress::update("import: weights", done, total, /*bytes=*/true);
    return llvm::Error::success();
  }

  // What a weight holds, for progress only: its element count times the
  // element size (0 for types the importer will refuse anyway).
  static uint64_t initializerBytes(const onnx::TensorProto &t) {
    std::optional<DType> dt = dtypeFromOnnx(t.data_type());
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    std::optional<int64_t> n = dt ? checkedNumElements(dims, dtypeSize(*dt)) : std::nullopt;
    return n ? uint64_t(*n) * dtypeSize(*dt) : 0;
  }

  llvm::Error bindInputs() {
    for (const auto &in : g_.input()) {
      const std::string &name = in.name();
      // An input that is also an initializer is a weight (older exporters list
      // every weight as an input too).
      if (s_.knownTensors.count(name))
        continue;
      auto where = [&](const llvm::Twine &msg) {
        return fail(s_.file + ": graph input " + quoted(name) + " " + msg);
      };
      if (name.empty())
        return fail(s_.file + ": a graph input has no name");
      if (s_.values.count(name))
        return where("is declared twice");
      if (!in.type().has_tensor_type())
        return where("is not a tensor");
      const auto &tt = in.type().tensor_type();
      auto dtype = dtypeFromOnnx(tt.elem_type());
      if (!dtype)
        return where("has unsupported element type " + onnxTypeName(tt.elem_type()));
      if (!tt.has_shape())
        return where("has no shape (unknown rank)");
      Shape shape;
      for (const auto &d : tt.shape().dim()) {
        if (d.has_dim_value()) {
          if (d.dim_value() < 0)
            return where("has a negative dim " + llvm::Twine(d.dim_value()));
          shape.push_back(Dim(d.dim_value()));
        } else if (d.has_dim_param() && !d.dim_param().empty()) {
          shape.push_back(Dim::symbol(sanitizeSymbol(d.dim_param())));
        } else {
          shape.push_back(Dim::symbol(freshSymbol()));
        }
      }
      s_.values[name] = s_.func.addArgument(name, Type{*dtype, shape});
    }
    return llvm::Error::success();
  }

  llvm::Error convertNode(const onnx::NodeProto &node, int index) {
    std::string loc = node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                                          : node.name();
    NodeContext ctx(s_, node, loc);
    const bool other = !isDefaultDomain(node.domain());
    const ConvertFn *convert =
        other ? lookupContribConverter(node.domain(), node.op_type()) : lookupConverter(node.op_type());
    if (!convert && other)
      return ctx.error("unsupported op domain " + quoted(node.domain()) +
                       " (genc reads com.microsoft's MatMulNBits there)");
    if (!convert)
      return ctx.error("unsupported op");
    for (const auto &out : node.output())
      if (!out.empty() && s_.isDefined(out))
        return ctx.error("output " + quoted(out) + " is already defined");

    auto results = (*convert)(ctx);
    // An attribute error is the root cause of whatever followed from it.
    if (!ctx.attrError().empty()) {
      if (!results)
        llvm::consumeError(results.takeError());
      return ctx.error(ctx.attrError());
    }
    if (!results)
      return results.takeError();

    for (size_t i = 0; i < ctx.numOutputs(); ++i) {
      if (!ctx.hasOutput(i))
        continue;
      const std::string &name = node.output(static_cast<int>(i));
      if (i < results->size() && (*results)[i])
        s_.values[name] = (*results)[i];
      else if (ctx.outputUsed(i) && !s_.isDefined(name))
        return ctx.error("output " + llvm::Twine(i) + " (" + quoted(name) +
                         ") is used, but the importer does not produce it");
    }
    return llvm::Error::success();
  }

  llvm::Error bindOutputs() {
    for (const auto &out : g_.output()) {
      auto v = s_.lookup(out.name());
      if (!v)
        return fail(s_.file + ": graph output " + quoted(out.name()) + ": " +
                    llvm::toString(v.takeError()));
      if (!*v)
        return fail(s_.file + ": graph output " + quoted(out.name()) +
                    " is not defined by any node, graph input or initializer");
      s_.func.addOutput(out.name(), *v);
    }
    return llvm::Error::success();
  }

  ImportState &s_;
  const onnx::GraphProto &g_;
  std::set<std::string> takenSymbols_;
  int nextUnknown_ = 0;
};

} // namespace

static llvm::Error importInto(Module &m, llvm::StringRef bytes, const std::string &path, const std::string &dir,
                              const ImportOptions &opts, const std::string &weightPrefix) {
  auto model = parseModel(bytes, path);
  if (!model)
    return model.takeError();
  const onnx::ModelProto &proto = **model;

  int64_t opset = -1;
  for (const auto &o : proto.opset_import())
    if (isDefaultDomain(o.domain()))
      opset = o.version();
  if (opset < 0)
    return fail(path + ": the model imports no opset of the default ONNX domain");
  // Opsets 11 and 12 differ from 13 only in forms the converters normalise
  // (axes / split attributes, Softmax's flattening); older ones are rare.
  if (opset < 11)
    return fail(path + ": opset " + llvm::Twine(opset) +
                " is not supported (genc reads opset 11 and newer)");
  if (m.function(opts.functionName))
    return fail(path + ": the module already has a function @" + opts.functionName);

  ExternalDataReader external(dir);
  Function *f = m.addFunction(opts.functionName);
  ImportState state(m, *f, path, opts, opset);
  state.weightPrefix = weightPrefix;
  state.owner = *model;
  state.external = &external;
  if (auto e = GraphImporter(state, proto.graph()).run()) {
    // Leave no half-built function behind (weights it added stay, unused).
    m.removeFunction(f);
    return e;
  }
  return llvm::Error::success();
}

llvm::Error importOnnxFileInto(Module &m, const std::string &path, const ImportOptions &opts,
                               const std::string &weightPrefix) {
  auto buf = readRegularFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail("cannot read '" + path + "': " + buf.getError().message());
  std::string dir = llvm::sys::path::parent_path(path).str();
  return importInto(m, (*buf)->getBuffer(), path, dir.empty() ? "." : dir, opts, weightPrefix);
}

llvm::Expected<std::unique_ptr<Module>> importOnnxBytes(llvm::StringRef bytes, const std::string &name,
                                                        const std::string &externalDataDir,
                                                        const ImportOptions &opts) {
  auto m = std::make_unique<Module>();
  if (auto e = importInto(*m, bytes, name, externalDataDir, opts, ""))
    return std::move(e);
  return std::move(m);
}

llvm::Expected<std::unique_ptr<Module>> importOnnxFile(const std::string &path,
                                                       const ImportOptions &opts) {
  auto m = std::make_unique<Module>();
  if (auto e = importOnnxFileInto(*m, path, opts, ""))
    return std::move(e);
  return std::move(m);
}

} // namespace genc
