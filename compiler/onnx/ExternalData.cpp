#include "compiler/onnx/ExternalData.h"
#include "compiler/ir/ReadFile.h"

#include "compiler/onnx/ImportContext.h"
#include "compiler/onnx/OnnxTensor.h"

#include "llvm/Support/Path.h"

#include <cstdint>
#include <cstring>

namespace genc {

static llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// Offsets and lengths are decimal strings in the proto; anything else is a
// corrupt file, not something to guess at.
static bool parseU64(const std::string &s, uint64_t &out) {
  if (s.empty() || s.size() > 19)
    return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

std::string ExternalDataReader::fullPath(const std::string &location) const {
  llvm::SmallString<256> path(modelDir_);
  llvm::sys::path::append(path, location);
  return std::string(path.str());
}

llvm::Expected<std::shared_ptr<llvm::MemoryBuffer>>
ExternalDataReader::open(const std::string &location) {
  auto it = files_.find(location);
  if (it != files_.end())
    return it->second;
  // The ONNX checker allows only paths inside the model's folder; so do we, so
  // that a model cannot make us read arbitrary files.
  if (llvm::sys::path::is_absolute(location))
    return fail("external data location " + quoted(location) +
                " must be relative to the model's folder");
  for (auto c = llvm::sys::path::begin(location), e = llvm::sys::path::end(location); c != e; ++c)
    if (*c == "..")
      return fail("external data location " + quoted(location) +
                  " must not leave the model's folder");
  std::string path = fullPath(location);
  auto buf = readRegularFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail("cannot read external data file " + quoted(path) + ": " + buf.getError().message());
  std::shared_ptr<llvm::MemoryBuffer> shared(std::move(*buf));
  files_[location] = shared;
  return shared;
}

llvm::Expected<Tensor> ExternalDataReader::read(const onnx::TensorProto &t, DType dtype,
                                                const std::vector<int64_t> &shape) {
  std::string location;
  uint64_t offset = 0, length = 0;
  bool hasLength = false;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      if (!parseU64(kv.value(), offset))
        return fail("bad external data offset " + quoted(kv.value()));
    } else if (kv.key() == "length") {
      if (!parseU64(kv.value(), length))
        return fail("bad external data length " + quoted(kv.value()));
      hasLength = true;
    }
  }
  if (location.empty())
    return fail("external data without a location");

  auto n = checkedNumElements(shape, dtypeSize(dtype));
  if (!n)
    return fail("bad shape");
  uint64_t need = static_cast<uint64_t>(*n) * dtypeSize(dtype);
  if (hasLength && length != need)
    return fail("external data length " + std::to_string(length) +
                " does not match its shape (" + std::to_string(need) + " bytes)");

  auto file = open(location);
  if (!file)
    return file.takeError();
  std::shared_ptr<llvm::MemoryBuffer> buf = *file;
  uint64_t size = buf->getBufferSize();
  if (offset > size || size - offset < need)
    return fail("external data file " + quoted(fullPath(location)) +
                " is too short (" +
                std::to_string(size) + " bytes; the tensor needs bytes " +
                std::to_string(offset) + ".." + std::to_string(offset + need) + ")");

  const char *bytes = buf->getBufferStart() + offset;
  if (reinterpret_cast<uintptr_t>(bytes) % dtypeSize(dtype) == 0)
    return Tensor(dtype, shape, std::shared_ptr<const void>(buf, buf.get()), bytes);
  // Misaligned for its element type: copy rather than hand out a bad pointer.
  Tensor copy(dtype, shape);
  if (need)
    std::memcpy(copy.data<uint8_t>(), bytes, need);
  return copy;
}

} // namespace genc
