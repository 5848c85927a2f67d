// Seeded token ids for the GPU and serving checks: n ids in [3, vocab - 1),
// the same for the same seed on every machine (a splitmix-style hash, no
// <random> distribution whose output differs between standard libraries).
#pragma once
#include <cstdint>
#include <vector>

namespace genc_tests {

inline std::vector<int64_t> seededTokens(int64_t n, uint64_t seed, int64_t vocab) {
  std::vector<int64_t> t;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    t.push_back(int64_t(x % uint64_t(vocab - 4)) + 3);
  }
  return t;
}

} // namespace genc_tests
