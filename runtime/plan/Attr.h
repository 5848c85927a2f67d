// Op attributes, shared by the compiler's IR and the runtime's programs.
#pragma once
#include "runtime/plan/Dim.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

namespace genrt {

/// A list of symbolic dims (`shape<batch, 64>` in IR text), distinct from an
/// integer list so that the text form is unambiguous.
struct DimList {
  Shape dims;
  bool operator==(const DimList &o) const { return dims == o.dims; }
};

using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                          DimList, Tensor>;
using AttrMap = std::map<std::string, Attr>;

/// Typed reads with defaults; a missing or differently typed attribute gives
/// the default (an int reads as a float).
int64_t attrInt(const AttrMap &m, const std::string &n, int64_t dflt);
double attrFloat(const AttrMap &m, const std::string &n, double dflt);
std::string attrStr(const AttrMap &m, const std::string &n, const std::string &dflt = "");
std::vector<int64_t> attrInts(const AttrMap &m, const std::string &n,
                              std::vector<int64_t> dflt = {});
const Tensor *attrTensor(const AttrMap &m, const std::string &n);
const DimList *attrDims(const AttrMap &m, const std::string &n);

} // namespace genrt
