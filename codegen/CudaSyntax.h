// How the generated CUDA C++ spells IR dtypes, storage types and constants,
// and the prelude of device helpers every kernel's translation unit starts
// with (conversions, block reductions, vector loads and stores).
#pragma once
#include "compiler/ir/IR.h"

#include <string>

namespace genc {

/// Math domain of a value in registers: fp32, int64 or bool.
enum class Dom { F, I, B };
Dom domOf(DType t);
const char *domType(Dom d);

/// Element type in memory; empty if unsupported.
std::string storageType(DType t);
/// `ref` (an element in memory of type `t`) as its math domain's value.
std::string loadExpr(DType t, const std::string &ref);
/// A math value `v` converted for a store into memory of type `t`.
std::string storeExpr(DType t, const std::string &v);

std::string floatLit(double d);
std::string intLit(int64_t v);
bool isIdent(const std::string &s);
/// Whether the C++ text `code` mentions the identifier `name`.
bool mentions(const std::string &code, const std::string &name);

/// Device helpers shared by all kernels (once per translation unit).
const char *cudaPrelude();
/// The prelude's storage struct for `t` in templates (genc_f32, genc_f16,
/// genc_bf16; any other type reads as f32).
const char *storageStruct(DType t);

} // namespace genc
