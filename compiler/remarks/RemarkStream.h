// Where a compilation's remarks go: a file of LLVM remark documents
// (`--remarks-file`), one line each on stderr (`--remarks=REGEX` without a
// file), and always a count of the Missed ones for genc's summary line.
#pragma once
#include "compiler/remarks/Remark.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace genc {

class RemarkStream {
public:
  /// `path`: a YAML file ("-": stdout), or empty for none. `passRegex`
  /// selects the passes whose remarks are written (searched in the pass
  /// name, as LLVM's -pass-remarks); empty: every pass when there is a file,
  /// none otherwise. With a regex and no file, selected remarks go to stderr.
  static llvm::Expected<std::unique_ptr<RemarkStream>> open(const std::string &path,
                                                            const std::string &passRegex);
  ~RemarkStream();

  void emit(const Remark &r);

  /// "2 missed optimizations (fuse-gemms 2)", or empty when there were none.
  std::string missedSummary() const;
  /// Flushes the file; an I/O error names it.
  llvm::Error close();

private:
  RemarkStream() = default;
  bool selected(const Remark &r) const;

  std::string path_;
  std::unique_ptr<llvm::raw_fd_ostream> file_;
  std::optional<llvm::Regex> filter_;
  bool toStderr_ = false;
  std::map<std::string, int> missedByPass_;
};

/// One remark as an LLVM YAML document (`--- !Missed` ... `...`).
std::string remarkYaml(const Remark &r);

} // namespace genc
