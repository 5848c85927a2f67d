#include "runtime/plan/Attr.h"

namespace genrt {

template <typename T> static const T *get(const AttrMap &m, const std::string &n) {
  auto it = m.find(n);
  return it == m.end() ? nullptr : std::get_if<T>(&it->second);
}

int64_t attrInt(const AttrMap &m, const std::string &n, int64_t dflt) {
  auto *v = get<int64_t>(m, n);
  return v ? *v : dflt;
}

double attrFloat(const AttrMap &m, const std::string &n, double dflt) {
  if (auto *v = get<double>(m, n))
    return *v;
  if (auto *v = get<int64_t>(m, n))
    return static_cast<double>(*v);
  return dflt;
}

std::string attrStr(const AttrMap &m, const std::string &n, const std::string &dflt) {
  auto *v = get<std::string>(m, n);
  return v ? *v : dflt;
}

std::vector<int64_t> attrInts(const AttrMap &m, const std::string &n, std::vector<int64_t> dflt) {
  auto *v = get<std::vector<int64_t>>(m, n);
  return v ? *v : dflt;
}

const Tensor *attrTensor(const AttrMap &m, const std::string &n) { return get<Tensor>(m, n); }
const DimList *attrDims(const AttrMap &m, const std::string &n) { return get<DimList>(m, n); }

} // namespace genrt
