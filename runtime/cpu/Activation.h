// tanh-GELU over a row, the one definition every CPU path uses (the gelu
// kernel, a linear layer's epilogue): vectorised (built for AVX-512, AVX2
// and the baseline) and compiled without FMA contraction, so a vector body
// and its scalar tail round alike and the kernel and the epilogue agree bit
// for bit on any row length.
#pragma once
#include <cstdint>

namespace genrt::cpu {

/// x[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) over [0, n); tanh
/// from ExpPoly.h's exp: within ~2e-7 of libm's absolute.
void geluTanhRow(float *x, int64_t n);

/// y[i] = sigmoid(x[i]) / silu(x[i]) (runtime/cpu/Kernels.h's definitions),
/// vectorised as geluTanhRow; x and y may not overlap.
void sigmoidRow(const float *x, float *y, int64_t n);
void siluRow(const float *x, float *y, int64_t n);

} // namespace genrt::cpu
