// .npy layout: "\x93NUMPY", major, minor, header length (u16 LE for v1, u32
// LE for v2/v3), then a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n', then the raw array bytes.
#include "compiler/interp/Npy.h"
#include "compiler/ir/ReadFile.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>

namespace genc {
namespace {

llvm::Error npyError(const std::string &name, const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "'" + name + "': " + msg);
}

/// The header dict: a tiny parser for the Python literals numpy writes.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &s) : s_(s) {}

  std::string descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  bool hasDescr = false;

  /// Returns an error message, or "" on success.
  std::string parse() {
    if (!eat('{'))
      return "header is not a dict";
    while (!eat('}')) {
      std::string key;
      if (!readString(key))
        return "expected a quoted key in the header";
      if (!eat(':'))
        return "expected ':' after '" + key + "'";
      if (key == "descr") {
        if (!readString(descr))
          return "'descr' must be a string (structured dtypes are not supported)";
        hasDescr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          fortran = true;
        else if (word("False"))
          fortran = false;
        else
          return "'fortran_order' must be True or False";
      } else if (key == "shape") {
        std::vector<int64_t> dims;
        if (!eat('('))
          return "'shape' must be a tuple";
        while (!eat(')')) {
          int64_t d;
          if (!readInt(d))
            return "'shape' must hold non-negative integers";
          dims.push_back(d);
          if (!eat(',') && !peek(')'))
            return "expected ',' or ')' in 'shape'";
        }
        shape = dims;
      } else {
        return "unexpected key '" + key + "' in the header";
      }
      if (!eat(',') && !peek('}'))
        return "expected ',' or '}' in the header";
    }
    skipSpace();
    if (pos_ != s_.size())
      return "trailing characters after the header dict";
    if (!hasDescr || !fortran || !shape)
      return "the header lacks 'descr', 'fortran_order' or 'shape'";
    return "";
  }

private:
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool peek(char c) {
    skipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool eat(char c) {
    if (!peek(c))
      return false;
    ++pos_;
    return true;
  }
  bool word(const char *w) {
    skipSpace();
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0)
      return false;
    pos_ += n;
    return true;
  }
  bool readString(std::string &out) {
    skipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      return false;
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos)
      return false;
    out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  bool readInt(int64_t &out) {
    skipSpace();
    size_t start = pos_;
    out = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (out > (INT64_MAX - 9) / 10)
        return false;
      out = out * 10 + (s_[pos_++] - '0');
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') // Python 2 longs
      ++pos_;
    return pos_ > start;
  }

  const std::string &s_;
  size_t pos_ = 0;
};

struct NpyType {
  const char *code; // without byte order
  DType dtype;
};
constexpr NpyType kTypes[] = {{"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16},
                              {"i8", DType::I64}, {"i4", DType::I32}, {"i1", DType::I8},
                              {"u1", DType::U8},  {"b1", DType::Bool}};

} // namespace

llvm::Expected<Tensor> parseNpy(const std::string &bytes, const std::string &name) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return npyError(name, "not a .npy file (bad magic)");
  const unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  const auto u8 = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  if (major == 1) {
    headerLen = u8(8) | u8(9) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return npyError(name, "truncated header");
    headerLen = u8(8) | u8(9) << 8 | u8(10) << 16 | u8(11) << 24;
    headerStart = 12;
  } else {
    return npyError(name, "unsupported .npy format version " + std::to_string(major));
  }
  if (bytes.size() < headerStart + headerLen)
    return npyError(name, "truncated header");
  const std::string header = bytes.substr(headerStart, headerLen);
  HeaderParser hp(header);
  std::string msg = hp.parse();
  if (!msg.empty())
    return npyError(name, "malformed header: " + msg);

  const std::string &descr = hp.descr;
  if (descr.size() != 3)
    return npyError(name, "unsupported dtype '" + descr + "'");
  const char order = descr[0];
  const std::string code = descr.substr(1);
  std::optional<DType> dtype;
  for (const auto &t : kTypes)
    if (code == t.code)
      dtype = t.dtype;
  if (!dtype || (order != '<' && order != '>' && order != '|' && order != '='))
    return npyError(name, "unsupported dtype '" + descr +
                              "' (expected f4, f8, f2, i8, i4, i1, u1 or b1)");
  if (order == '>' && dtypeSize(*dtype) > 1)
    return npyError(name, "big-endian data ('" + descr + "') is not supported; save it "
                          "with arr.astype(arr.dtype.newbyteorder('<'))");
  if (*hp.fortran)
    return npyError(name, "Fortran-order arrays are not supported; save "
                          "np.ascontiguousarray(arr)");

  const std::vector<int64_t> &shape = *hp.shape;
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > (uint64_t(1) << 40) / static_cast<uint64_t>(d))
      return npyError(name, "shape is too large");
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t want = count * dtypeSize(*dtype);
  const uint64_t have = bytes.size() - headerStart - headerLen;
  if (have < want)
    return npyError(name, "truncated: the header promises " + std::to_string(want) +
                              " data bytes, the file has " + std::to_string(have));
  if (have > want)
    return npyError(name, "malformed: " + std::to_string(have - want) +
                              " bytes after the array data");
  Tensor t(*dtype, shape);
  if (want)
    std::memcpy(t.data<char>(), bytes.data() + headerStart + headerLen, want);
  if (*dtype == DType::Bool) // numpy bools are 0/1; keep any other byte meaning true
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.data<uint8_t>()[i] = t.data<uint8_t>()[i] != 0;
  return t;
}

llvm::Expected<Tensor> readNpy(const std::string &path) {
  auto buf = readRegularFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return npyError(path, "cannot read: " + buf.getError().message());
  return parseNpy((*buf)->getBuffer().str(), path);
}

std::string serializeNpy(const Tensor &in) {
  const Tensor t = in.dtype() == DType::BF16 ? in.castTo(DType::F32) : in;
  const char *code = "";
  for (const auto &k : kTypes)
    if (k.dtype == t.dtype())
      code = k.code;
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : i + 1 < t.shape().size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + (dtypeSize(t.dtype()) == 1 ? "|" : "<") +
                       code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts on a 64-byte boundary, as numpy does.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  if (t.numBytes())
    out.append(static_cast<const char *>(t.rawData()), t.numBytes());
  return out;
}

llvm::Error writeNpy(const std::string &path, const Tensor &t) {
  std::ofstream os(path, std::ios::binary);
  std::string bytes = serializeNpy(t);
  if (os)
    os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!os)
    return npyError(path, "cannot write");
  return llvm::Error::success();
}

} // namespace genc
