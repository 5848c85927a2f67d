// Internal to shape inference: the per-op rules, split over
// ShapeRules.cpp (elementwise, reductions, products), ShapeRulesMovement.cpp
// (reshape, slice, gather, ...), ShapeRulesValues.cpp (shape-producing ops)
// and ShapeValues.cpp (symbolic value propagation).
#pragma once
#include "compiler/ir/ShapeInference.h"

#include <functional>
#include <optional>
#include <string>

namespace genc {

/// Slice bounds at or beyond this magnitude are "to the end" sentinels
/// (exporters write INT64_MAX, INT32_MAX, INT64_MIN).
constexpr int64_t kSliceSentinel = 2147483647;

/// What the coefficients of a dim say about its sign, every symbol being a
/// size (>= 0). All false: unknown.
struct DimSign {
  bool geZero = false, gtZero = false, leZero = false, ltZero = false;
};
DimSign dimSign(const Dim &d);
/// A value's elements as text, safe for any int64 (Dim::str is for extents).
std::string valueStr(const SymbolicValue &v);
/// True when the dim's coefficients are small enough that arithmetic on it
/// cannot overflow int64.
bool isSmallDim(const Dim &d);

/// Values of this type are tracked: i64/i32/bool, rank 0 or a short rank 1.
bool tracksValues(const Type &t);
constexpr int64_t kMaxTrackedElements = 64;
/// The elements of an integer tensor as dims (when tracked).
std::optional<SymbolicValue> tensorValue(const Tensor &t);

struct ShapeRules {
  ShapeInference &si;
  Op &op;

  llvm::Error inferTypes();
  /// Sets the symbolic values of the results from the operands' (types first).
  void inferValues();

  // ---- helpers (ShapeRules.cpp)
  llvm::Error error(const std::string &msg) const;
  Value *in(size_t i) const { return op.operand(i); }
  Shape shapeOf(size_t i) const { return si.canonical(in(i)->shape()); }
  int64_t rankOf(size_t i) const { return in(i)->rank(); }
  std::optional<SymbolicValue> valueOf(size_t i) const { return si.symbolicValue(in(i)); }
  /// Constant integer elements of operand i, when all known.
  std::optional<std::vector<int64_t>> constantInts(size_t i) const;
  /// A scalar float constant (constant op or weight data).
  std::optional<double> constantScalar(size_t i) const;
  llvm::Error setResult(size_t i, DType dt, Shape s);
  llvm::Expected<int64_t> normAxis(int64_t axis, int64_t rank, const char *what) const;
  llvm::Expected<std::vector<int64_t>> normAxes(const std::vector<int64_t> &axes, int64_t rank) const;
  /// numpy broadcasting of two shapes; distinct symbols that must be equal are unified.
  llvm::Expected<Shape> broadcast(const Shape &a, const Shape &b) const;
  std::optional<Dim> broadcastDim(const Dim &a, const Dim &b) const;
  /// Two dims that must be equal (matmul contraction, concat): the common dim.
  llvm::Expected<Dim> requireEqual(const Dim &a, const Dim &b, const std::string &what) const;
  llvm::Error requireDType(size_t i, DType dt) const;
  llvm::Error requireSameDType(size_t i, size_t j) const;
  /// The length of a 1-D shape operand (its constant extent).
  llvm::Expected<int64_t> shapeOperandLength(size_t i) const;
  /// The target shape held by 1-D operand i: its symbolic value, else fresh symbols.
  llvm::Expected<Shape> shapeOperand(size_t i, bool *known = nullptr) const;
  std::string typeStr(size_t i) const;

  // ---- elementwise, reductions, products (ShapeRules.cpp)
  llvm::Error elementwise();      // add sub mul div pow max min
  llvm::Error comparison();       // equal less ... and or
  llvm::Error unary();            // abs neg exp ... identity gelu silu not
  llvm::Error whereOp();
  llvm::Error castOp();
  llvm::Error dropout();
  llvm::Error reduceMean();
  llvm::Error sameAsInputAlongAxis(); // softmax cumsum
  llvm::Error norm();                 // layer_norm rms_norm
  llvm::Error matmul();
  llvm::Error gemm();
  llvm::Error matmulNBits();
  llvm::Error attention();

  // ---- data movement (ShapeRulesMovement.cpp)
  llvm::Error reshape();
  bool unifyViewDims(const Shape &x, const Shape &target, std::optional<size_t> inferred) const;
  llvm::Error flatten();
  llvm::Error squeeze();
  llvm::Error unsqueeze();
  llvm::Error transpose();
  llvm::Error expand();
  llvm::Error tile();
  llvm::Error concat();
  llvm::Error split();
  llvm::Error slice();
  llvm::Error gather();
  llvm::Error gatherNd();
  llvm::Error gatherElements();
  llvm::Error trilu();

  // ---- ops that make values from shapes (ShapeRulesValues.cpp)
  llvm::Error constant();
  llvm::Error dims();
  llvm::Error shape();
  llvm::Error constantOfShape();
  llvm::Error range();

  /// Resolved slice parameters (ShapeRulesMovement.cpp), shared with the
  /// symbolic value rule.
  struct SliceParams {
    bool axesKnown = false, stepsKnown = false;
    std::vector<int64_t> axes, steps; // normalized axes
    std::optional<SymbolicValue> starts, ends; // unknown when not tracked
  };
  llvm::Expected<SliceParams> sliceParams(int64_t rank) const;
  /// Elementwise evaluation over operand values (rank <= 1, broadcasting).
  std::optional<SymbolicValue>
  elementwiseValues(const std::function<std::optional<Dim>(const std::vector<Dim> &)> &f) const;
  std::optional<SymbolicValue> resultValue() const;
};

/// Extent of x[start:end:step] along a dim of extent `d` (ONNX Slice
/// clamping); nullopt when it cannot be expressed as a dim.
std::optional<Dim> sliceExtent(const Dim &d, const Dim &start, const Dim &end, int64_t step);
/// Indices x[start:end:step] selects along a constant extent `d`.
std::vector<int64_t> sliceIndices(int64_t d, int64_t start, int64_t end, int64_t step);

} // namespace genc
