// ImportState and NodeContext: the name table and a converter's view of a node.
#include "compiler/onnx/ImportContext.h"

#include "compiler/ir/Printer.h"
#include "compiler/onnx/OnnxTensor.h"

#include <cstdio>
#include <cstring>
#include <cstdlib>

namespace genc {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

std::string quoted(const std::string &name, bool quote) {
  std::string out = quote ? "'" : "";
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return quote ? out + "'" : out;
}

// ---------------------------------------------------------------- ImportState

llvm::Error ImportState::appendAndInfer(std::unique_ptr<Op> op, Op *&out) {
  out = func.append(std::move(op));
  return shapes.inferOp(*out);
}

llvm::Expected<Value *> ImportState::lookup(const std::string &name) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto p = pending.find(name);
  if (p == pending.end())
    return nullptr;
  const Tensor &t = *p->second.tensor;
  Shape shape(t.shape().begin(), t.shape().end());
  auto op = std::make_unique<Op>("constant", std::vector<Value *>{},
                                 std::vector<Type>{Type{t.dtype(), shape}}, p->second.loc);
  op->setAttr("value", t);
  Op *made = nullptr;
  if (auto e = appendAndInfer(std::move(op), made))
    return fail("constant " + quoted(name) + ": " + llvm::toString(std::move(e)));
  pending.erase(p);
  values[name] = made->result();
  return made->result();
}

static bool sameContent(const Value &w, const Tensor &t) {
  const Tensor *d = w.data();
  return d && d->dtype() == t.dtype() && d->shape() == t.shape() &&
         (t.numBytes() == 0 || std::memcmp(d->rawData(), t.rawData(), t.numBytes()) == 0);
}

Value *ImportState::addWeight(const std::string &name, std::shared_ptr<const Tensor> data) {
  if (Value *existing = module.weight(name))
    if (sameContent(*existing, *data))
      return existing;
  std::string unique = name;
  if (module.weight(name)) {
    std::string base = weightPrefix + name;
    unique = base;
    for (int k = 1; module.weight(unique); ++k)
      unique = base + "_" + std::to_string(k);
  }
  Shape shape(data->shape().begin(), data->shape().end());
  DType dtype = data->dtype();
  return module.addWeight(unique, Type{dtype, shape}, std::move(data));
}

llvm::Expected<Tensor> decodeGraphTensor(ImportState &state, const onnx::TensorProto &t) {
  return tensorFromProto(t, state.owner, *state.external);
}

// ---------------------------------------------------------------- NodeContext

llvm::Error NodeContext::error(const llvm::Twine &msg) const {
  return fail(state_.file + ": node " + quoted(loc_) + " (op " + quoted(node_.op_type(), false) + ", opset " +
              llvm::Twine(state_.opset) + "): " + msg);
}

bool NodeContext::hasInput(size_t i) const {
  return i < numInputs() && !node_.input(static_cast<int>(i)).empty();
}

const std::string &NodeContext::inputName(size_t i) const {
  static const std::string none;
  return i < numInputs() ? node_.input(static_cast<int>(i)) : none;
}

llvm::Expected<Value *> NodeContext::input(size_t i) {
  if (!hasInput(i))
    return error("input " + llvm::Twine(i) + " is required but missing");
  auto v = state_.lookup(inputName(i));
  if (!v)
    return error(llvm::toString(v.takeError()));
  if (!*v)
    return error("input " + quoted(inputName(i)) +
                 " is not defined (no graph input, initializer or earlier node output has that name)");
  return *v;
}

llvm::Expected<Value *> NodeContext::optionalInput(size_t i) {
  if (!hasInput(i))
    return nullptr;
  return input(i);
}

llvm::Expected<Value *> NodeContext::indexInput(size_t i) {
  if (hasInput(i)) {
    auto known = state_.knownTensors.find(inputName(i));
    if (known != state_.knownTensors.end() && known->second->dtype() != DType::I64 &&
        isInteger(known->second->dtype()))
      return constant(known->second->castTo(DType::I64));
  }
  auto v = input(i);
  if (!v || (*v)->dtype() != DType::I32)
    return v;
  return emit1("cast", {*v}, {{"to", std::string("i64")}});
}

std::optional<Tensor> NodeContext::constantInput(size_t i) {
  if (!hasInput(i))
    return std::nullopt;
  auto known = state_.knownTensors.find(inputName(i));
  if (known != state_.knownTensors.end())
    return *known->second;
  auto it = state_.values.find(inputName(i));
  if (it == state_.values.end())
    return std::nullopt;
  auto sym = state_.shapes.symbolicValue(it->second);
  if (!sym)
    return std::nullopt;
  std::vector<int64_t> ints;
  for (const Dim &d : *sym) {
    if (!d.isConstant())
      return std::nullopt;
    ints.push_back(d.constant());
  }
  std::vector<int64_t> shape;
  if (it->second->rank() != 0 || ints.size() != 1)
    shape.push_back(static_cast<int64_t>(ints.size()));
  return Tensor::fromVector<int64_t>(DType::I64, shape, ints);
}

llvm::Expected<std::vector<int64_t>> NodeContext::intsInput(size_t i, const char *what) {
  if (!hasInput(i))
    return error(llvm::Twine("the ") + what + " input is missing");
  auto t = constantInput(i);
  if (!t)
    return error(llvm::Twine("the ") + what + " input " + quoted(inputName(i)) +
                 " is not a constant (only constant " + what + " are supported)");
  if (!isInteger(t->dtype()))
    return error(llvm::Twine("the ") + what + " input " + quoted(inputName(i)) + " is " +
                 dtypeName(t->dtype()) + ", expected integers");
  std::vector<int64_t> out;
  for (int64_t k = 0; k < t->numElements(); ++k)
    out.push_back(t->getInt(k));
  return out;
}

std::optional<Dim> NodeContext::inputDim(size_t i, int64_t axis) {
  if (!hasInput(i))
    return std::nullopt;
  const std::string &name = inputName(i);
  std::optional<Dim> symbolic;
  auto known = state_.knownTensors.find(name);
  if (known != state_.knownTensors.end()) {
    int64_t r = known->second->rank(), a = axis < 0 ? axis + r : axis;
    if (a >= 0 && a < r)
      return Dim(known->second->shape()[a]);
    return std::nullopt;
  }
  auto it = state_.values.find(name);
  if (it != state_.values.end()) {
    // Until shape inference has typed a result it carries a rank-0
    // placeholder, so an out-of-range axis here means "not known yet".
    int64_t r = it->second->rank(), a = axis < 0 ? axis + r : axis;
    if (a >= 0 && a < r) {
      const Dim &d = it->second->shape()[a];
      if (d.isConstant())
        return d;
      symbolic = d;
    }
  }
  auto vi = state_.valueInfo.find(name);
  if (vi != state_.valueInfo.end() && vi->second->has_tensor_type() &&
      vi->second->tensor_type().has_shape()) {
    const auto &dims = vi->second->tensor_type().shape().dim();
    int64_t r = dims.size(), a = axis < 0 ? axis + r : axis;
    if (a >= 0 && a < r && dims.Get(static_cast<int>(a)).has_dim_value())
      return Dim(dims.Get(static_cast<int>(a)).dim_value());
  }
  return symbolic;
}

std::optional<int64_t> NodeContext::inputRank(size_t i) {
  if (!hasInput(i))
    return std::nullopt;
  const std::string &name = inputName(i);
  auto known = state_.knownTensors.find(name);
  if (known != state_.knownTensors.end())
    return known->second->rank();
  auto it = state_.values.find(name);
  // Rank 0 may be the placeholder of a result not typed yet; ask value_info.
  if (it != state_.values.end() && (it->second->rank() > 0 || !it->second->definingOp()))
    return it->second->rank();
  auto vi = state_.valueInfo.find(name);
  if (vi != state_.valueInfo.end() && vi->second->has_tensor_type() &&
      vi->second->tensor_type().has_shape())
    return vi->second->tensor_type().shape().dim_size();
  return std::nullopt;
}

std::optional<int64_t> NodeContext::inputLength(size_t i) {
  auto known = state_.knownTensors.find(inputName(i));
  if (hasInput(i) && known != state_.knownTensors.end())
    return known->second->numElements();
  auto d = inputDim(i, 0);
  if (d && d->isConstant())
    return d->constant();
  return std::nullopt;
}

bool NodeContext::hasOutput(size_t i) const {
  return i < numOutputs() && !node_.output(static_cast<int>(i)).empty();
}

bool NodeContext::outputUsed(size_t i) const {
  return hasOutput(i) && state_.usedNames.count(node_.output(static_cast<int>(i)));
}

// ---------------------------------------------------------------- attributes

const onnx::AttributeProto *NodeContext::attr(const char *name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

const onnx::AttributeProto *NodeContext::typedAttr(const char *name, int type) {
  const onnx::AttributeProto *a = attr(name);
  // Very old exporters leave `type` unset; trust the field then.
  if (!a || a->type() == type || a->type() == onnx::AttributeProto::UNDEFINED)
    return a;
  if (attrError_.empty())
    attrError_ = std::string("attribute '") + name + "' is " +
                 onnx::AttributeProto_AttributeType_Name(a->type()) + ", expected " +
                 onnx::AttributeProto_AttributeType_Name(
                     static_cast<onnx::AttributeProto_AttributeType>(type));
  return nullptr;
}

int64_t NodeContext::intAttr(const char *name, int64_t dflt) {
  auto *a = typedAttr(name, onnx::AttributeProto::INT);
  return a ? a->i() : dflt;
}

// ONNX float attributes are f32; widening 1e-5f gives 9.99999974737875e-06,
// which nobody wrote. Take the shortest decimal that reads back as the same
// f32 instead, so the IR says `epsilon = 1e-05`.
static double widenFloat(float f) {
  return std::strtod(formatFloat(f, /*asFloat=*/true).c_str(), nullptr);
}

double NodeContext::floatAttr(const char *name, double dflt) {
  auto *a = typedAttr(name, onnx::AttributeProto::FLOAT);
  return a ? widenFloat(a->f()) : dflt;
}

std::string NodeContext::stringAttr(const char *name, const std::string &dflt) {
  auto *a = typedAttr(name, onnx::AttributeProto::STRING);
  return a ? a->s() : dflt;
}

std::vector<int64_t> NodeContext::intsAttr(const char *name) {
  auto *a = typedAttr(name, onnx::AttributeProto::INTS);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

std::vector<double> NodeContext::floatsAttr(const char *name) {
  auto *a = typedAttr(name, onnx::AttributeProto::FLOATS);
  std::vector<double> out;
  if (a)
    for (float f : a->floats())
      out.push_back(widenFloat(f));
  return out;
}

std::optional<Tensor> NodeContext::tensorAttr(const char *name) {
  auto *a = typedAttr(name, onnx::AttributeProto::TENSOR);
  if (!a)
    return std::nullopt;
  auto t = decodeGraphTensor(state_, a->t());
  if (!t) {
    std::string msg = llvm::toString(t.takeError());
    if (attrError_.empty())
      attrError_ = std::string("attribute '") + name + "': " + msg;
    return std::nullopt;
  }
  return std::move(*t);
}

// ---------------------------------------------------------------- building

llvm::Expected<Op *> NodeContext::emit(const std::string &kind, std::vector<Value *> operands,
                                       std::map<std::string, Attribute> attrs,
                                       unsigned numResults) {
  for (Value *v : operands)
    if (!v)
      return error("internal error: null operand for '" + kind + "'");
  // Placeholder result types: shape inference overwrites them right away.
  std::vector<Type> types(numResults, Type{DType::F32, {}});
  auto op = std::make_unique<Op>(kind, std::move(operands), std::move(types), loc_);
  for (auto &[name, a] : attrs)
    op->setAttr(name, std::move(a));
  Op *made = nullptr;
  if (auto e = state_.appendAndInfer(std::move(op), made))
    return error(llvm::toString(std::move(e)));
  return made;
}

llvm::Expected<Value *> NodeContext::emit1(const std::string &kind, std::vector<Value *> operands,
                                           std::map<std::string, Attribute> attrs) {
  auto op = emit(kind, std::move(operands), std::move(attrs));
  if (!op)
    return op.takeError();
  return (*op)->result();
}

llvm::Expected<Value *> NodeContext::constant(Tensor t) {
  Shape shape(t.shape().begin(), t.shape().end());
  auto op = std::make_unique<Op>("constant", std::vector<Value *>{},
                                 std::vector<Type>{Type{t.dtype(), shape}}, loc_);
  op->setAttr("value", std::move(t));
  Op *made = nullptr;
  if (auto e = state_.appendAndInfer(std::move(op), made))
    return error(llvm::toString(std::move(e)));
  return made->result();
}

} // namespace genc
