// The IR: a module of functions over SSA values.
//
// A Value has a dtype and a Shape of integer and symbolic dims. It is a
// function argument, the result of an Op, or a module-level weight (a named
// constant tensor). Ops carry a kind (snake_case, e.g. `matmul`), operands,
// results, attributes and a location (the ONNX node name they came from).
#pragma once
#include "compiler/ir/Dim.h"
#include "compiler/ir/Tensor.h"
#include "runtime/plan/Attr.h"

#include <list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace genc {

class Op;
class Function;
class RemarkStream;

struct Type {
  DType dtype = DType::F32;
  Shape shape;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool operator==(const Type &o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const Type &o) const { return !(*this == o); }
  std::string str() const; // e.g. f32[batch, seq, 64]
};

/// Attribute values (runtime/plan/Attr.h): integer and float lists stay distinct
/// from symbolic shapes (`shape<batch, 64>`) so that the text form is unambiguous.
using genrt::DimList;
using Attribute = genrt::Attr;
std::string attributeStr(const Attribute &a);

class Value {
public:
  enum class Kind { Argument, Result, Weight };
  Value(Kind kind, Type type, std::string name = "")
      : kind_(kind), type_(std::move(type)), name_(std::move(name)) {}

  Kind kind() const { return kind_; }
  bool isWeight() const { return kind_ == Kind::Weight; }
  bool isArgument() const { return kind_ == Kind::Argument; }
  const Type &type() const { return type_; }
  void setType(Type t) { type_ = std::move(t); }
  DType dtype() const { return type_.dtype; }
  const Shape &shape() const { return type_.shape; }
  int64_t rank() const { return type_.rank(); }

  /// Argument and weight names; results are numbered by the printer.
  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  /// The defining op of a result, else null.
  Op *definingOp() const { return def_; }
  /// Index of this value among its defining op's results.
  unsigned resultIndex() const { return resultIndex_; }

  /// A weight's data; null when the IR was parsed from text (weights print by
  /// name and shape only).
  const Tensor *data() const { return data_ ? data_.get() : nullptr; }
  void setData(std::shared_ptr<const Tensor> t) { data_ = std::move(t); }

private:
  friend class Op;
  Kind kind_;
  Type type_;
  std::string name_;
  Op *def_ = nullptr;
  unsigned resultIndex_ = 0;
  std::shared_ptr<const Tensor> data_;
};

class Op {
public:
  Op(std::string kind, std::vector<Value *> operands, std::vector<Type> resultTypes,
     std::string loc = "");
  Op(const Op &) = delete;
  Op &operator=(const Op &) = delete;

  const std::string &kind() const { return kind_; }
  bool is(const char *k) const { return kind_ == k; }
  const std::string &loc() const { return loc_; }
  void setLoc(std::string l) { loc_ = std::move(l); }

  size_t numOperands() const { return operands_.size(); }
  Value *operand(size_t i) const { return operands_[i]; }
  const std::vector<Value *> &operands() const { return operands_; }
  void setOperand(size_t i, Value *v) { operands_[i] = v; }
  void setOperands(std::vector<Value *> v) { operands_ = std::move(v); }

  size_t numResults() const { return results_.size(); }
  Value *result(size_t i = 0) const { return results_[i].get(); }
  std::vector<Value *> results() const;

  const std::map<std::string, Attribute> &attrs() const { return attrs_; }
  bool hasAttr(const std::string &n) const { return attrs_.count(n) != 0; }
  const Attribute *attr(const std::string &n) const;
  void setAttr(const std::string &n, Attribute a) { attrs_[n] = std::move(a); }
  void removeAttr(const std::string &n) { attrs_.erase(n); }
  /// Typed getters with defaults; a missing or differently typed attribute
  /// gives the default.
  int64_t intAttr(const std::string &n, int64_t dflt) const;
  double floatAttr(const std::string &n, double dflt) const;
  std::string strAttr(const std::string &n, const std::string &dflt = "") const;
  std::vector<int64_t> intsAttr(const std::string &n, std::vector<int64_t> dflt = {}) const;
  const Tensor *tensorAttr(const std::string &n) const;

  Function *parent() const { return parent_; }

private:
  friend class Function;
  std::string kind_;
  std::vector<Value *> operands_;
  std::vector<std::unique_ptr<Value>> results_;
  std::map<std::string, Attribute> attrs_;
  std::string loc_;
  Function *parent_ = nullptr;
};

class Function {
public:
  using OpList = std::list<std::unique_ptr<Op>>;
  explicit Function(std::string name) : name_(std::move(name)) {}

  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  Value *addArgument(const std::string &name, Type type);
  const std::vector<std::unique_ptr<Value>> &arguments() const { return args_; }
  Value *argument(const std::string &name) const;
  /// Removes an argument; it must be unused.
  void removeArgument(Value *arg);

  /// Appends an op (or inserts before `before`) and takes ownership.
  Op *append(std::unique_ptr<Op> op);
  Op *insertBefore(OpList::iterator before, std::unique_ptr<Op> op);
  /// Removes an op; its results must be unused.
  void erase(Op *op);
  OpList &ops() { return ops_; }
  const OpList &ops() const { return ops_; }
  OpList::iterator find(Op *op);

  struct Output {
    std::string name;
    Value *value;
  };
  const std::vector<Output> &outputs() const { return outputs_; }
  void addOutput(std::string name, Value *v) { outputs_.push_back({std::move(name), v}); }
  void setOutput(size_t i, Value *v) { outputs_[i].value = v; }
  /// Drops every output (a pass that re-targets a function adds new ones).
  void clearOutputs() { outputs_.clear(); }

  /// Rewrites every use of `from` (operands and outputs) to `to`.
  void replaceAllUses(Value *from, Value *to);
  /// Ops that use v as an operand.
  std::vector<Op *> users(const Value *v) const;
  bool hasUses(const Value *v) const;
  /// The one op that reads v, if v is read by exactly one op and is no output.
  Op *soleUser(const Value *v) const;
  /// Erases ops whose results are unused, transitively. Returns how many.
  size_t eraseDeadOps();

private:
  std::string name_;
  std::vector<std::unique_ptr<Value>> args_;
  OpList ops_;
  std::vector<Output> outputs_;
};

class Module {
public:
  Function *addFunction(const std::string &name);
  Function *function(const std::string &name) const;
  /// Removes (and destroys) a function.
  void removeFunction(Function *f);
  const std::vector<std::unique_ptr<Function>> &functions() const { return functions_; }

  /// Weights are kept in insertion order; names are unique.
  Value *addWeight(const std::string &name, Type type, std::shared_ptr<const Tensor> data);
  Value *weight(const std::string &name) const;
  const std::vector<std::unique_ptr<Value>> &weights() const { return weights_; }
  /// Drops weights no function uses.
  void eraseUnusedWeights();

  /// Free-form metadata (model family, eos ids, ...), printed sorted.
  std::map<std::string, std::string> &metadata() { return metadata_; }
  const std::map<std::string, std::string> &metadata() const { return metadata_; }

  /// Where passes report what they decided (compiler/remarks/Remark.h);
  /// null: nowhere. The module does not own it.
  RemarkStream *remarks() const { return remarks_; }
  void setRemarks(RemarkStream *r) { remarks_ = r; }

private:
  std::vector<std::unique_ptr<Function>> functions_;
  std::vector<std::unique_ptr<Value>> weights_;
  std::map<std::string, Value *> weightIndex_;
  std::map<std::string, std::string> metadata_;
  RemarkStream *remarks_ = nullptr;
};

} // namespace genc
