#include "compiler/remarks/Remark.h"

#include "compiler/remarks/RemarkStream.h"

namespace genc {

const char *remarkKindName(RemarkKind k) {
  switch (k) {
  case RemarkKind::Passed:
    return "Passed";
  case RemarkKind::Missed:
    return "Missed";
  case RemarkKind::Analysis:
    return "Analysis";
  }
  return "Analysis";
}

std::string Remark::message() const {
  std::string s;
  for (const auto &a : args)
    s += a.value;
  return s;
}

RemarkArg arg(std::string key, std::string value) { return {std::move(key), std::move(value)}; }
RemarkArg arg(std::string key, int64_t value) { return {std::move(key), std::to_string(value)}; }
RemarkArg arg(std::string key, const Type &type) { return {std::move(key), type.str()}; }
RemarkArg arg(std::string key, const std::vector<int64_t> &ints) {
  std::string s = "[";
  for (size_t i = 0; i < ints.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ints[i]);
  return {std::move(key), s + "]"};
}

RemarkBuilder::~RemarkBuilder() {
  if (stream_)
    stream_->emit(r_);
}

RemarkBuilder &RemarkBuilder::operator<<(std::string text) {
  if (stream_)
    r_.args.push_back({"String", std::move(text)});
  return *this;
}

RemarkBuilder &RemarkBuilder::operator<<(RemarkArg a) {
  if (stream_)
    r_.args.push_back(std::move(a));
  return *this;
}

RemarkBuilder Remarks::make(RemarkKind k, const char *name, const Function &f, const Op *at) const {
  if (!stream_)
    return RemarkBuilder(nullptr, Remark{});
  Remark r;
  r.kind = k;
  r.pass = pass_;
  r.name = name;
  r.function = f.name();
  r.loc = at ? at->loc() : "";
  return RemarkBuilder(stream_, std::move(r));
}

} // namespace genc
