// The epilogue of a linear layer, `matmul(a, b[, bias]) {epilogue}`: the bias
// added, then the activation: exactly cuBLASLt's BIAS, RELU(_BIAS) and
// GELU(_BIAS) (its GELU is the tanh form). One vocabulary for the pass that
// folds them (passes/FuseGemms.cpp), the shape rule and the kernels.
#pragma once
#include <string>

namespace genrt {

struct Epilogue {
  bool bias = false;
  std::string activation; // "", "relu" or "gelu_tanh"
};

/// Reads an `epilogue` attribute ("" included); false for any other name.
inline bool parseEpilogue(const std::string &name, Epilogue &out) {
  out.bias = name.rfind("bias", 0) == 0;
  std::string rest = out.bias ? name.substr(4) : name;
  if (out.bias && !rest.empty()) {
    if (rest.size() < 2 || rest[0] != '_')
      return false; // "bias_" or "biasrelu"
    rest = rest.substr(1);
  }
  out.activation = rest;
  return rest.empty() || rest == "relu" || rest == "gelu_tanh";
}

/// The attribute value for `e` ("" when there is nothing to do).
inline std::string epilogueName(const Epilogue &e) {
  if (!e.bias)
    return e.activation;
  return e.activation.empty() ? "bias" : "bias_" + e.activation;
}

} // namespace genrt
