// The stable text form of the IR.
//
//   module {
//     meta "eos_token_id" = "2"
//     weight @wte : f32[1000, 64]
//     func @main(%input_ids: i64[batch, seq]) -> (logits: f32[batch, seq, 1000]) {
//       %0 = gather(@wte, %input_ids) {axis = 0} : f32[batch, seq, 64] loc("/wte/Gather")
//       return %0
//     }
//   }
//
// Results are numbered %0, %1, ... in op order, so printing is deterministic;
// weights print by name and type only; attributes print sorted by name.
#pragma once
#include "compiler/ir/IR.h"

#include <ostream>
#include <string>

namespace genc {

struct PrintOptions {
  bool locations = true;
};

void printModule(const Module &m, std::ostream &os, const PrintOptions &opts = {});
void printFunction(const Function &f, std::ostream &os, const PrintOptions &opts = {});
std::string moduleToString(const Module &m, const PrintOptions &opts = {});

/// Shortest decimal text that reads back as exactly `v` (as float when
/// `asFloat`), always with a '.' or exponent so it never reads as an integer.
std::string formatFloat(double v, bool asFloat);
/// `name` bare when it is an identifier ([A-Za-z_][A-Za-z0-9_.]*), else quoted.
std::string formatName(const std::string &name);
std::string quoteString(const std::string &s);

} // namespace genc
