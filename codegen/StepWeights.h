// The weight bytes one run of a program reads: the bandwidth floor's
// numerator (bench/bench.py), as `genc --stats-json`'s decode_weights_bytes.
#pragma once
#include "compiler/ir/IR.h"

#include <cstdint>
#include <map>
#include <string>

namespace genc {

/// Bytes of the module's weights that one run of `f` reads whole: every
/// weight an op of `f` (or of a fused body it calls) takes, except a table
/// read only through `gather` (an embedding: a run reads its rows for the
/// run's tokens, not the table). Weights only other programs use (an
/// encoder's) do not count.
int64_t weightBytesRead(const Module &m, const Function &f);

/// The 4/8-bit matrices of the module (matmul_nbits' operands), by the name
/// of their codes: the bytes of codes, scales and zero points together.
std::map<std::string, int64_t> quantizedWeightBytes(const Module &m);

} // namespace genc
