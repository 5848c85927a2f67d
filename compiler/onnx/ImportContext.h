// What the graph walk (Importer.cpp) and the per-op converters (OnnxOps*.cpp)
// share: the ONNX-name -> IR-value table and a view of one node.
#pragma once
#include "compiler/ir/IR.h"
#include "compiler/ir/ShapeInference.h"
#include "compiler/onnx/ExternalData.h"
#include "compiler/onnx/Importer.h"
#include "genc_onnx/onnx.pb.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace genc {

/// A name from the file for a one-line message: in single quotes (unless
/// `quote` is false), control characters escaped as \xNN, since a damaged
/// file can put anything in a name.
std::string quoted(const std::string &name, bool quote = true);

/// One graph being imported into one function.
struct ImportState {
  ImportState(Module &m, Function &f, std::string file, const ImportOptions &opts,
              int64_t opset)
      : module(m), func(f), file(std::move(file)), opts(opts), opset(opset), shapes(m) {}

  Module &module;
  Function &func;
  std::string file; // as the user named it, for messages
  const ImportOptions &opts;
  int64_t opset; // of the default ONNX domain
  /// Types ops as they are built, so later converters can read operand shapes.
  ShapeInference shapes;

  /// ONNX names bound to IR values (arguments, weights, op results).
  std::unordered_map<std::string, Value *> values;
  /// Every tensor known at import time (initializers, Constant nodes), small
  /// or large, so that converters can read axes / sizes / shapes from them.
  std::unordered_map<std::string, std::shared_ptr<const Tensor>> knownTensors;
  /// Small constants not yet materialised: they become `constant` ops just
  /// before their first use, or never if only read as attribute sources.
  struct PendingConstant {
    std::shared_ptr<const Tensor> tensor;
    std::string loc;
  };
  std::unordered_map<std::string, PendingConstant> pending;
  /// Names some node reads or the graph returns.
  std::set<std::string> usedNames;
  /// Exporter-provided types of intermediate values (dynamo exports have them).
  std::unordered_map<std::string, const onnx::TypeProto *> valueInfo;

  /// The IR value bound to `name`, materialising a pending constant; null if
  /// nothing defines it.
  llvm::Expected<Value *> lookup(const std::string &name);
  bool isDefined(const std::string &name) const {
    return values.count(name) || pending.count(name);
  }
  /// Appends `op` and infers its result types. The caller wraps errors.
  llvm::Error appendAndInfer(std::unique_ptr<Op> op, Op *&out);
  /// The module weight for ONNX tensor `name`: an existing weight of that
  /// name with the same type and bytes (an encoder and decoder sharing tied
  /// embeddings), else a new one, prefixed with weightPrefix on a clash.
  Value *addWeight(const std::string &name, std::shared_ptr<const Tensor> data);
  std::string weightPrefix;
  /// Keeps the parsed model alive for tensors that view its raw bytes.
  std::shared_ptr<const void> owner;
  ExternalDataReader *external = nullptr;
};

/// A converter's view of one ONNX node: its inputs, attributes and how to
/// build IR ops located at it.
class NodeContext {
public:
  NodeContext(ImportState &state, const onnx::NodeProto &node, std::string loc)
      : state_(state), node_(node), loc_(std::move(loc)) {}

  const onnx::NodeProto &node() const { return node_; }
  const std::string &loc() const { return loc_; }
  int64_t opset() const { return state_.opset; }
  ImportState &state() { return state_; }

  /// An error naming the file, the node, its op type and the opset.
  llvm::Error error(const llvm::Twine &msg) const;

  // ---- Inputs. Optional inputs may be absent or given as empty names.
  size_t numInputs() const { return static_cast<size_t>(node_.input_size()); }
  bool hasInput(size_t i) const;
  const std::string &inputName(size_t i) const;
  /// Input i; an error when absent or undefined.
  llvm::Expected<Value *> input(size_t i);
  /// Input i, or null when absent.
  llvm::Expected<Value *> optionalInput(size_t i);
  /// Input i as an i64 tensor (ONNX allows int32 indices in places where the
  /// IR wants i64): constants are converted, other values get a cast.
  llvm::Expected<Value *> indexInput(size_t i);
  /// The value of input i when known at import time: a constant tensor, or an
  /// integer tensor whose elements shape inference knows as constants.
  std::optional<Tensor> constantInput(size_t i);
  /// Input i as constant integers; an error naming `what` when not constant.
  llvm::Expected<std::vector<int64_t>> intsInput(size_t i, const char *what);
  /// The size of dim `axis` of input i (negative counts from the end), from
  /// its IR type or else the exporter's value_info; nullopt when unknown.
  std::optional<Dim> inputDim(size_t i, int64_t axis);
  /// The rank of input i when known.
  std::optional<int64_t> inputRank(size_t i);
  /// The length of a 1-D input i when known.
  std::optional<int64_t> inputLength(size_t i);

  // ---- Outputs.
  size_t numOutputs() const { return static_cast<size_t>(node_.output_size()); }
  /// Output i exists with a non-empty name.
  bool hasOutput(size_t i) const;
  /// Output i is read by another node or returned by the graph.
  bool outputUsed(size_t i) const;

  // ---- Attributes. A wrongly typed attribute records an error (reported
  // after the converter returns) and gives the default, so converters can
  // read attributes without threading errors through every line.
  const onnx::AttributeProto *attr(const char *name) const;
  bool hasAttr(const char *name) const { return attr(name) != nullptr; }
  int64_t intAttr(const char *name, int64_t dflt);
  double floatAttr(const char *name, double dflt);
  std::string stringAttr(const char *name, const std::string &dflt = "");
  std::vector<int64_t> intsAttr(const char *name);
  std::vector<double> floatsAttr(const char *name);
  /// A TENSOR attribute decoded; nullopt when absent or on failure (with the
  /// error recorded).
  std::optional<Tensor> tensorAttr(const char *name);
  /// The first attribute error, if any.
  const std::string &attrError() const { return attrError_; }

  // ---- Building ops located at this node.
  llvm::Expected<Op *> emit(const std::string &kind, std::vector<Value *> operands,
                            std::map<std::string, Attribute> attrs = {},
                            unsigned numResults = 1);
  llvm::Expected<Value *> emit1(const std::string &kind, std::vector<Value *> operands,
                                std::map<std::string, Attribute> attrs = {});
  llvm::Expected<Value *> constant(Tensor t);

private:
  const onnx::AttributeProto *typedAttr(const char *name, int type);
  ImportState &state_;
  const onnx::NodeProto &node_;
  std::string loc_;
  std::string attrError_;
};

/// Converts one node: returns the IR values of its outputs in order (null
/// for outputs it does not produce; may be shorter than the node's outputs).
using ConvertFn = std::function<llvm::Expected<std::vector<Value *>>(NodeContext &)>;
using ConverterTable = std::unordered_map<std::string, ConvertFn>;
/// The converter for an op type of the default domain, or null.
const ConvertFn *lookupConverter(const std::string &opType);
/// The converter for an op of another domain (OnnxOpsContrib.cpp:
/// com.microsoft's MatMulNBits), or null.
const ConvertFn *lookupContribConverter(const std::string &domain, const std::string &opType);
/// A converter for ops whose inputs map one to one onto `kind`'s operands.
ConvertFn directConverter(const char *kind, size_t arity);
/// Each OnnxOps*.cpp file registers its converters.
void addMathConverters(ConverterTable &t);
void addShapingConverters(ConverterTable &t);
void addConstantConverters(ConverterTable &t);

/// Converters are chains of fallible steps; this keeps each step one line:
///   GENC_ASSIGN_OR_RETURN(Value *x, ctx.input(0));
#define GENC_ASSIGN_OR_RETURN(decl, expr)                                                  \
  GENC_ASSIGN_OR_RETURN_IMPL(GENC_CONCAT(genc_or_, __LINE__), decl, expr)
#define GENC_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)                                        \
  auto tmp = (expr);                                                                       \
  if (!tmp)                                                                                \
    return tmp.takeError();                                                                \
  decl = std::move(*tmp)
#define GENC_CONCAT(a, b) GENC_CONCAT_IMPL(a, b)
#define GENC_CONCAT_IMPL(a, b) a##b

/// Decodes a tensor that appears inside the graph (initializer, attribute).
llvm::Expected<Tensor> decodeGraphTensor(ImportState &state, const onnx::TensorProto &t);

} // namespace genc
