// The denominator of a log-softmax over a vocabulary row on the host.
#pragma once
#include <cstdint>

namespace genrt {

/// Σ_v e^(row[v] - mx), in double, for a row whose largest value is mx;
/// -inf entries add 0, a NaN makes the sum NaN (as libm's exp would).
/// Greedy's and beam search's host log-softmax: libm's exp took ~0.5 ms a
/// 32k-vocabulary row, 16 of a 32-prompt batch's 24 ms to the first token
/// (H200, 2026-11-28); this runs vectorised at libm's accuracy, 2-3x faster
/// (a 32k row on the 2-core build machine: 108-119 against 227-355 µs).
double sumExpShifted(const float *row, int64_t vocab, float mx);

} // namespace genrt
