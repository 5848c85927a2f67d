// The host's answer to a choice request (runtime/Choice.h) from a run's
// logits: where an executor does not choose where the logits are, the
// Session brings them back and answers here, by the rules the device
// kernels reproduce (Greedy.h, Beams.h, Sampling.h).
#pragma once
#include "runtime/Choice.h"
#include "runtime/Status.h"

#include <cstdint>

namespace genrt {

/// answer := `request` answered from `logits`, [rows, vocab] (left as they were).
Status answerOnHost(const ChoiceRequest &request, const float *logits, int64_t rows, int64_t vocab,
                    ChoiceAnswer &answer);

} // namespace genrt
