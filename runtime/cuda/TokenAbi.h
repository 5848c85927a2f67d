// The contract between the token-choice kernels genc generates into a plan
// (codegen/TokenKernels.h) and the CUDA executor: a decode step's token is
// chosen where its logits are, and only the choice crosses to the host.
//
//   genc_greedy  grid (rows, P), block 256: row r of logits [rows, vocab]
//       (f32): the first index of its largest value (torch.argmax) and that
//       token's log-softmax, (x - max) - log(sum exp(x - max)) with the sum
//       in f64 (as the host's search does). Block (r, k) does the k-th of P
//       equal parts of the row into `parts` [rows, P]; the last of a row's
//       blocks to finish (a ticket per row in `tickets`, zero between
//       launches) merges the parts in order. Fixed reduction trees: the same
//       logits give the same bits.
#pragma once

#define GENC_TOKEN_STR(...) #__VA_ARGS__
#define GENC_TOKEN_XSTR(...) GENC_TOKEN_STR(__VA_ARGS__)

// clang-format off
#define GENC_TOKEN_ABI                                                                             \
  struct GencGreedyPart { double sum; float max; int index; };                                     \
  struct GencGreedyParams {                                                                        \
    unsigned long long logits;   /* f32 [rows, vocab] */                                           \
    unsigned long long tokens;   /* i64 [rows] */                                                  \
    unsigned long long logprobs; /* f32 [rows] */                                                  \
    unsigned long long parts;    /* GencGreedyPart [rows, P] */                                    \
    unsigned long long tickets;  /* u32 [rows], zero */                                            \
    long long rows, vocab;                                                                         \
  };
// clang-format on

namespace genrt::cuda {
GENC_TOKEN_ABI
static const char *const kGencTokenAbiSource = GENC_TOKEN_XSTR(GENC_TOKEN_ABI);

constexpr int kGreedyThreads = 256;
// A row's parts: about 1024 logits each (4 a thread), at most 256 blocks.
constexpr long long kGreedyPartElements = 1024;
constexpr long long kGreedyMaxParts = 256;

} // namespace genrt::cuda
