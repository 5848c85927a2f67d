#include "compiler/ir/Metadata.h"

#include <cstdlib>

namespace genc {

std::optional<int64_t> metadataInt(const Module &m, const std::string &key) {
  auto it = m.metadata().find(key);
  if (it == m.metadata().end() || it->second.empty())
    return std::nullopt;
  const char *s = it->second.c_str();
  char *end;
  long long v = std::strtoll(s, &end, 10);
  if (end == s)
    return std::nullopt;
  return v;
}

std::vector<int64_t> metadataInts(const Module &m, const std::string &key) {
  std::vector<int64_t> r;
  auto it = m.metadata().find(key);
  if (it == m.metadata().end())
    return r;
  std::string s = it->second;
  for (char &c : s)
    if (c == '[' || c == ']' || c == ',')
      c = ' ';
  char *p = s.data(), *end;
  while (true) {
    long long v = std::strtoll(p, &end, 10);
    if (end == p)
      break;
    r.push_back(v);
    p = end;
  }
  return r;
}

} // namespace genc
