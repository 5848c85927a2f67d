// Optimization remarks: what a pass decided and why, in LLVM's terms
// (`opt -pass-remarks-output`, clang's -fsave-optimization-record).
//
// A remark has a kind (Passed: done; Missed: wanted but not done, with the
// reason; Analysis: a fact the pass established), the pass, a name for the
// decision, the function, the ONNX node of the op it is about, and arguments
// whose values, read in order, make the message. A pass writes
//
//   Remarks R(m, "fuse-gemms");
//   R.missed("ActivationNotFolded", f, act) << "erf-GELU has no cuBLASLt epilogue";
//   R.passed("GemmsMerged", f, mm) << arg("GEMMs", 3) << " GEMMs merged";
//
// and the remark goes out when the statement ends. Without a stream on the
// module nothing is recorded, so passes need no `if`.
//
// Keep remark text ASCII and free of apostrophes: LLVM's YAML remark parser
// reads quoted scalars raw, so an escaped '' or a "double-quoted" value
// would reach its tools (llvm-remarkutil, opt-viewer) changed.
#pragma once
#include "compiler/ir/IR.h"

#include <string>
#include <vector>

namespace genc {

enum class RemarkKind { Passed, Missed, Analysis };
const char *remarkKindName(RemarkKind k); // "Passed", "Missed", "Analysis"

struct RemarkArg {
  std::string key, value;
};

struct Remark {
  RemarkKind kind = RemarkKind::Analysis;
  std::string pass, name, function;
  std::string loc; // the ONNX node the op came from; empty for a whole function
  std::vector<RemarkArg> args;
  /// The argument values end to end.
  std::string message() const;
};

/// A named argument: tools (and FileCheck) can read it by key.
RemarkArg arg(std::string key, std::string value);
RemarkArg arg(std::string key, int64_t value);
/// `shape` prints as f32[1, tokens, 64]; `ints` as [0, 64, 96].
RemarkArg arg(std::string key, const Type &type);
RemarkArg arg(std::string key, const std::vector<int64_t> &ints);

/// Collects one remark's arguments; emits it when destroyed.
class RemarkBuilder {
public:
  RemarkBuilder(RemarkStream *stream, Remark r) : stream_(stream), r_(std::move(r)) {}
  RemarkBuilder(RemarkBuilder &&o) noexcept : stream_(o.stream_), r_(std::move(o.r_)) {
    o.stream_ = nullptr;
  }
  RemarkBuilder(const RemarkBuilder &) = delete;
  ~RemarkBuilder();

  RemarkBuilder &operator<<(std::string text); // a "String" argument
  RemarkBuilder &operator<<(const char *text) { return *this << std::string(text); }
  RemarkBuilder &operator<<(RemarkArg a);

private:
  RemarkStream *stream_;
  Remark r_;
};

/// One pass's view of the module's remark stream.
class Remarks {
public:
  Remarks(const Module &m, std::string pass) : stream_(m.remarks()), pass_(std::move(pass)) {}

  /// `at`: the op the remark is about (its location); null for the function.
  RemarkBuilder passed(const char *name, const Function &f, const Op *at = nullptr) const {
    return make(RemarkKind::Passed, name, f, at);
  }
  RemarkBuilder missed(const char *name, const Function &f, const Op *at = nullptr) const {
    return make(RemarkKind::Missed, name, f, at);
  }
  RemarkBuilder analysis(const char *name, const Function &f, const Op *at = nullptr) const {
    return make(RemarkKind::Analysis, name, f, at);
  }

private:
  RemarkBuilder make(RemarkKind k, const char *name, const Function &f, const Op *at) const;

  RemarkStream *stream_;
  std::string pass_;
};

} // namespace genc
