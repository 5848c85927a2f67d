// Reference CPU kernels in float32, shared by the compiler's interpreter and
// the CPU executor. Plain loops over row-major buffers; shapes in comments.
#pragma once
#include <cstdint>

namespace genrt::cpu {

// c[M,N] = a[M,K] · b[K,N]   (row-major; b transposed when transB: b[N,K])
void matmul(const float *a, const float *b, float *c, int64_t M, int64_t N, int64_t K,
            bool transB = false);

// x[rows, n] -> softmax along n, in place (max-subtracted, fp32 accumulation)
void softmaxRows(float *x, int64_t rows, int64_t n);

// y[rows, n] = (x - mean) / sqrt(var + eps) * scale[n] + bias[n]  (bias may be null)
void layerNormRows(const float *x, const float *scale, const float *bias, float *y, int64_t rows,
                   int64_t n, float eps);

} // namespace genrt::cpu
