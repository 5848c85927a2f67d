// GENC_VECTOR_CLONES: a loop written for the vectoriser built for AVX-512,
// AVX2 + FMA and the baseline, the loader choosing one by the CPU's features
// (GCC's target_clones; the release build). Clang 14 (the ASan/UBSan fuzz
// build) accepts the attribute but emits only its first target, unguarded:
// AVX-512 code that died with SIGILL on a machine without it. There, the
// baseline alone — the fuzz build is for finding bugs, not for speed.
#pragma once

#if defined(__clang__)
#define GENC_VECTOR_CLONES
#else
#define GENC_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#endif
