// Greedy search's choice from one row of logits, on the host: the rule the
// device kernels (runtime/cuda/TokenAbi.h) reproduce.
#pragma once
#include <cstdint>

namespace genrt {

/// token = the first index of the row's maximum (torch.argmax); logprob =
/// its log-softmax, (x - max) - log(sum exp(x - max)) with the sum in f64
/// (-inf when every logit is -inf).
void greedyChoice(const float *row, int64_t vocab, int64_t &token, float &logprob);

} // namespace genrt
