#include "compiler/remarks/RemarkStream.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/YAMLTraits.h"

namespace {
// ONNX nodes have names, not lines: the node name stands in DebugLoc's File
// (Line and Column 0), so LLVM's remark parser and opt-viewer read the file.
struct DebugLoc {
  std::string file;
  unsigned line = 0, column = 0;
};
} // namespace

LLVM_YAML_IS_SEQUENCE_VECTOR(genc::RemarkArg)

namespace llvm::yaml {

template <> struct MappingTraits<DebugLoc> {
  static const bool flow = true;
  static void mapping(IO &io, DebugLoc &l) {
    io.mapRequired("File", l.file);
    io.mapRequired("Line", l.line);
    io.mapRequired("Column", l.column);
  }
};

template <> struct MappingTraits<genc::RemarkArg> {
  static void mapping(IO &io, genc::RemarkArg &a) { io.mapRequired(a.key.c_str(), a.value); }
};

template <> struct MappingTraits<genc::Remark> {
  static void mapping(IO &io, genc::Remark &r) {
    for (genc::RemarkKind k :
         {genc::RemarkKind::Passed, genc::RemarkKind::Missed, genc::RemarkKind::Analysis})
      io.mapTag(std::string("!") + genc::remarkKindName(k), r.kind == k);
    io.mapRequired("Pass", r.pass);
    io.mapRequired("Name", r.name);
    if (!r.loc.empty()) {
      DebugLoc loc{r.loc};
      io.mapRequired("DebugLoc", loc);
    }
    io.mapRequired("Function", r.function);
    if (!r.args.empty())
      io.mapRequired("Args", r.args);
  }
};

} // namespace llvm::yaml

namespace genc {

std::string remarkYaml(const Remark &r) {
  std::string s;
  llvm::raw_string_ostream os(s);
  // No wrapping: one line per key keeps the file greppable.
  llvm::yaml::Output out(os, nullptr, /*WrapColumn=*/0);
  Remark copy = r; // yaml::Output maps through non-const references
  out << copy;
  os.flush();
  return s;
}

llvm::Expected<std::unique_ptr<RemarkStream>> RemarkStream::open(const std::string &path,
                                                                 const std::string &passRegex) {
  std::unique_ptr<RemarkStream> s(new RemarkStream());
  s->path_ = path;
  if (!passRegex.empty()) {
    llvm::Regex re(passRegex);
    std::string why;
    if (!re.isValid(why))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--remarks: '%s' is not a regular expression: %s",
                                     passRegex.c_str(), why.c_str());
    s->filter_.emplace(std::move(re));
  }
  if (!path.empty()) {
    std::error_code ec;
    auto file = std::make_unique<llvm::raw_fd_ostream>(path, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      file->clear_error(); // else its destructor reports a fatal I/O error
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--remarks-file: cannot write '%s': %s", path.c_str(),
                                     ec.message().c_str());
    }
    s->file_ = std::move(file);
  } else {
    s->toStderr_ = s->filter_.has_value();
  }
  return s;
}

RemarkStream::~RemarkStream() {
  if (file_) { // not closed through close(): an error here has no one to tell
    file_->close();
    file_->clear_error();
  }
}

bool RemarkStream::selected(const Remark &r) const {
  return !filter_ || filter_->match(r.pass);
}

void RemarkStream::emit(const Remark &r) {
  if (r.kind == RemarkKind::Missed)
    ++missedByPass_[r.pass];
  if (!selected(r))
    return;
  if (file_) {
    *file_ << remarkYaml(r);
  } else if (toStderr_) {
    llvm::errs() << "genc: remark: @" << r.function << (r.loc.empty() ? "" : " '" + r.loc + "'")
                 << ": " << r.message() << " [" << remarkKindName(r.kind) << " " << r.pass
                 << ":" << r.name << "]\n";
  }
}

std::string RemarkStream::missedSummary() const {
  int total = 0;
  std::string parts;
  for (const auto &[pass, n] : missedByPass_) {
    total += n;
    parts += (parts.empty() ? "" : ", ") + pass + " " + std::to_string(n);
  }
  if (!total)
    return "";
  return std::to_string(total) + " missed optimization" + (total == 1 ? "" : "s") + " (" +
         parts + ")";
}

llvm::Error RemarkStream::close() {
  if (!file_)
    return llvm::Error::success();
  file_->close();
  bool failed = file_->has_error();
  if (failed)
    file_->clear_error();
  file_.reset();
  if (failed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--remarks-file: cannot write '%s'", path_.c_str());
  return llvm::Error::success();
}

} // namespace genc
