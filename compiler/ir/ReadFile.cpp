#include "compiler/ir/ReadFile.h"

#include "llvm/Support/FileSystem.h"

namespace genc {
namespace {

class NotRegularCategory : public std::error_category {
public:
  const char *name() const noexcept override { return "genc.file"; }
  std::string message(int) const override { return "not a regular file"; }
};

} // namespace

llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> readRegularFile(const llvm::Twine &path, bool isText,
                                                                   bool requiresNullTerminator) {
  static const NotRegularCategory category;
  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(path, st))
    return ec;
  if (st.type() != llvm::sys::fs::file_type::regular_file)
    return std::error_code(1, category);
  return llvm::MemoryBuffer::getFile(path, isText, requiresNullTerminator);
}

} // namespace genc
