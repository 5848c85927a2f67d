#include "tests/fuzz/PlanMutator.h"

#include "runtime/json/Json.h"
#include "runtime/plan/OpSignatures.h"
#include "runtime/plan/PlanHeader.h"

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace genfuzz {
namespace {

using genrt::json::Value;
using Rng = std::minstd_rand;

size_t pick(Rng &r, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(r); }

void collect(Value &v, std::vector<Value *> &all) {
  all.push_back(&v);
  for (Value &i : v.items())
    collect(i, all);
  for (auto &[k, m] : v.members())
    collect(m, all);
}

// Boundary values, small neighbours, or another number of the plan (an
// index, offset or size that exists elsewhere).
int64_t number(Rng &r, int64_t was, const std::vector<Value *> &all) {
  if (pick(r, 4) == 0)
    for (int tries = 0; tries < 8; ++tries)
      if (const Value *v = all[pick(r, all.size())]; v->isInteger())
        return v->asInt();
  const int64_t choices[] = {0, -1, 1, 2, 3, 16, 64, int64_t(uint64_t(was) + 1), int64_t(uint64_t(was) - 1),
                             int64_t(uint64_t(was) * 2), was / 2, int64_t(1) << 24, (int64_t(1) << 24) + 1,
                             INT32_MAX, int64_t(INT32_MAX) + 1, int64_t(1) << 40, int64_t(1) << 62,
                             std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  return choices[pick(r, sizeof choices / sizeof *choices)];
}

// Dims, dtypes, storages, op kinds and names a plan uses, another string of
// the plan, or this one cut short.
std::string text(Rng &r, const std::string &was, const std::vector<Value *> &all) {
  static const char *const words[] = {"tokens", "rows", "src_tokens", "batch", "2*tokens", "tokens+1", "-tokens",
                                      "tokens*rows", "64", "0", "-1", "99999999999999999999", "f32", "f16", "bf16",
                                      "f64", "i64", "i32", "u8", "bool", "arena", "weight", "argument", "local",
                                      "prefill", "decode_step", "encode", "half", "interleaved", "elementwise",
                                      "bias_relu", "tokenizer.json", "sm_80", "compute_90", ""};
  switch (pick(r, 4)) {
  case 0: {
    const auto &sigs = genrt::allOpSignatures();
    return sigs[pick(r, sigs.size())].kind;
  }
  case 1:
    for (int tries = 0; tries < 8; ++tries)
      if (const Value *v = all[pick(r, all.size())]; v->isString())
        return v->asString();
    return was;
  case 2:
    return was.empty() ? was : was.substr(0, pick(r, was.size()));
  default:
    return words[pick(r, sizeof words / sizeof *words)];
  }
}

void mutateValue(Rng &r, Value &v, const std::vector<Value *> &all) {
  if (pick(r, 10) == 0) { // transplant: another node of the plan (type confusion, aliasing)
    const Value *other = all[pick(r, all.size())];
    if (other != &v && genrt::json::write(*other).size() < 4096) {
      Value copy = *other;
      v = std::move(copy);
    }
    return;
  }
  switch (v.kind()) {
  case Value::Kind::Number:
    v = Value::integer(number(r, v.isInteger() ? v.asInt() : 0, all));
    if (pick(r, 8) == 0)
      v = Value::number(pick(r, 2) ? 0.5 : 1e300);
    return;
  case Value::Kind::String:
    v = Value::string(text(r, v.asString(), all));
    return;
  case Value::Kind::Bool:
    v = Value::boolean(!v.asBool());
    return;
  case Value::Kind::Array: {
    auto &items = v.items();
    if (items.empty()) {
      items.push_back(Value::integer(0));
      return;
    }
    size_t i = pick(r, items.size());
    switch (pick(r, 3)) {
    case 0: items.erase(items.begin() + i); return;
    case 1: items.insert(items.begin() + i, Value(items[i])); return;
    default: std::swap(items[i], items[pick(r, items.size())]); return;
    }
  }
  case Value::Kind::Object: {
    auto &members = v.members();
    if (!members.empty())
      members.erase(members.begin() + pick(r, members.size()));
    return;
  }
  case Value::Kind::Null:
    v = Value::integer(0);
    return;
  }
}

// header + JSON + padding to 64 + blob, as the plan writer lays them out.
size_t join(const uint8_t *original, const std::string &meta, const uint8_t *blob, uint64_t blobBytes,
            uint8_t *out, size_t maxSize) {
  const uint64_t blobOff = (genrt::kPlanHeaderBytes + meta.size() + 63) / 64 * 64;
  if (blobOff + blobBytes > maxSize)
    return 0;
  std::vector<uint8_t> file(blobOff + blobBytes, 0);
  std::memcpy(file.data(), original, 16);
  uint64_t fields[4] = {genrt::kPlanHeaderBytes, meta.size(), blobOff, blobBytes};
  std::memcpy(file.data() + 16, fields, sizeof fields);
  std::memcpy(file.data() + genrt::kPlanHeaderBytes, meta.data(), meta.size());
  if (blobBytes)
    std::memcpy(file.data() + blobOff, blob, blobBytes);
  std::memcpy(out, file.data(), file.size());
  return file.size();
}

} // namespace

size_t mutatePlan(uint8_t *data, size_t size, size_t maxSize, unsigned seed) {
  Rng r(seed);
  genrt::PlanHeader h;
  const size_t choice = pick(r, 10);
  if (choice < 2 || !readPlanHeader(data, size, h).empty())
    return LLVMFuzzerMutate(data, size, maxSize);
  if (choice == 2) { // one header field: an offset or a size
    uint64_t field;
    size_t at = 16 + 8 * pick(r, 4);
    std::memcpy(&field, data + at, 8);
    const uint64_t choices[] = {0, field + 1, field - 1, field + 64, size, size - field, uint64_t(1) << 63, ~uint64_t(0)};
    field = choices[pick(r, sizeof choices / sizeof *choices)];
    std::memcpy(data + at, &field, 8);
    return size;
  }
  Value meta;
  if (!genrt::json::parse(std::string(reinterpret_cast<const char *>(data + h.jsonOffset), h.jsonBytes), meta))
    return LLVMFuzzerMutate(data, size, maxSize);
  std::vector<Value *> all;
  collect(meta, all);
  for (size_t n = 1 + pick(r, 3); n > 0; --n)
    mutateValue(r, *all[pick(r, all.size())], all), all.clear(), collect(meta, all);
  std::vector<uint8_t> blob(data + h.blobOffset, data + h.blobOffset + h.blobBytes);
  std::vector<uint8_t> head(data, data + 16);
  size_t n = join(head.data(), genrt::json::write(meta), blob.data(), blob.size(), data, maxSize);
  return n ? n : LLVMFuzzerMutate(data, size, maxSize);
}

} // namespace genfuzz
