// The contract between the token-choice kernels genc generates into a plan
// (codegen/TokenKernels.h) and the CUDA executor: a decode step's token is
// chosen where its logits are, and only the choice crosses to the host.
//
//   genc_greedy  grid (rows), block 512: row r of logits [rows, vocab] (f32):
//       the first index of its largest value (torch.argmax) and that
//       token's log-softmax, (x - max) - log(sum exp(x - max)) with the sum
//       in f64 (as the host's search does). A fixed reduction tree: the same
//       logits give the same bits.
#pragma once

#define GENC_TOKEN_STR(...) #__VA_ARGS__
#define GENC_TOKEN_XSTR(...) GENC_TOKEN_STR(__VA_ARGS__)

// clang-format off
#define GENC_TOKEN_ABI                                                                             \
  struct GencGreedyParams {                                                                        \
    unsigned long long logits;   /* f32 [rows, vocab] */                                           \
    unsigned long long tokens;   /* i64 [rows] */                                                  \
    unsigned long long logprobs; /* f32 [rows] */                                                  \
    long long rows, vocab;                                                                         \
  };
// clang-format on

namespace genrt::cuda {
GENC_TOKEN_ABI
static const char *const kGencTokenAbiSource = GENC_TOKEN_XSTR(GENC_TOKEN_ABI);

constexpr int kGreedyThreads = 512;

} // namespace genrt::cuda
