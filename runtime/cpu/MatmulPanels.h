// y[M, N] = a[M, K] · w[K, N] with w laid out once as column panels: panel
// p is w[:, 32p .. 32p + 32) stored [K][32] contiguous (the last panel
// zero-padded), so a register tile of up to 12 rows x 32 columns streams its
// panel in order with no stride and no per-call packing (BLAS's sgemm packs
// w on every call: a prefill reads each weight twice). The CPU executor
// packs the weights only matmuls read at load; cpu::matmul packs other
// operands per call for 9 rows and more.
//
// Every output is one sum over k in order with fused multiply-adds from
// zero, as matmulFewRows' (runtime/cpu/MatmulFewRows.h): the same bits
// whatever the rows per tile, the thread count, or whether w came packed.
#pragma once
#include <cstdint>

namespace genrt::cpu {

class ThreadPool;

constexpr int64_t kPanelWidth = 32;

/// Floats of w[K, N]'s panels.
inline int64_t panelFloats(int64_t K, int64_t N) { return (N + kPanelWidth - 1) / kPanelWidth * kPanelWidth * K; }

/// Whether this CPU runs the panel kernels (AVX-512, or AVX2 + FMA).
bool havePanelKernels();

/// w[K, N] (row-major) into `out` (panelFloats(K, N) floats).
void packPanels(const float *w, int64_t K, int64_t N, float *out);

/// The panels of w[K, N] where w is stored transposed, wt[N, K] (a tied
/// embedding read as the LM head): the same layout as packPanels of its
/// transpose.
void packPanelsTransposed(const float *wt, int64_t K, int64_t N, float *out);

/// y = a · w from w's panels; false (nothing written) without either.
bool matmulPanels(const float *a, const float *panels, float *y, int64_t M, int64_t N, int64_t K, ThreadPool *pool);

/// Causal softmax of scores S [rows, n] in place: row t becomes
/// softmax(scale · S[t, 0..offset+t]) with zeros after (16 lanes with
/// AVX-512, else one; exp is runtime/cpu/ExpPoly.h's polynomial). A row's
/// values depend on its own valid scores alone.
void softmaxCausalRows(float *S, int64_t rows, int64_t n, int64_t offset, float scale);

} // namespace genrt::cpu
