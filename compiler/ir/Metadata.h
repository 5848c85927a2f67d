// Reading the module's metadata (config.* from config.json, plan.* from the
// compile options, arena.* from plan-memory), whose values are text.
#pragma once
#include "compiler/ir/IR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace genc {

/// The integer under `key`; nullopt when absent, empty (JSON null) or not an integer.
std::optional<int64_t> metadataInt(const Module &m, const std::string &key);
/// "2" or "[2, 3]" as integers; empty when absent.
std::vector<int64_t> metadataInts(const Module &m, const std::string &key);

} // namespace genc
