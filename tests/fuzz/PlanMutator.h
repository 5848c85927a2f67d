// The plan fuzzer's structure-aware mutator: most mutations edit one value
// of the JSON metadata (numbers to boundary values and to other numbers of
// the plan, strings to dims, dtypes, op kinds and storages, arrays and
// objects losing, repeating or swapping entries, subtrees transplanted) or
// one of the header's offsets, keeping the blob, so that mutants get past
// the JSON parser and reach the loader's and verifier's checks. The rest
// are libFuzzer's byte mutations.
#pragma once
#include <cstddef>
#include <cstdint>

namespace genfuzz {

size_t mutatePlan(uint8_t *data, size_t size, size_t maxSize, unsigned seed);

} // namespace genfuzz
