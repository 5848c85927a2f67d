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
//
//   genc_beam_topk  grid (rules, P), block 256, after genc_greedy on the
//       same logits (its token and log-softmax give a row's max and
//       log-sum-exp): rule r's best K beam candidates over logits row
//       r / share (share > 1: a prompt's step, every beam of an item ranks
//       its one row) by the rule of runtime/choice/Beams.h — the log-softmax,
//       the rule's edits (GencEdits: sequence bias, the encoder and the
//       repetition penalties, a forced step's wipe, the length decay,
//       bans), with `renormalize` the edited row's log-softmax (its max and
//       log-sum-exp from genc_beam_norm), + its running score — ranked
//       (value desc, index asc). Block (r, k) stages the k-th part of the
//       row (at most kBeamPartElements) in shared memory, edits the ids that
//       fall in it, and writes its own best K, in order, to `parts`
//       [rules, P, K]; the last block of a rule (a ticket, as genc_greedy's)
//       merges the P ordered lists into `out` [rules, K].
//
//   genc_beam_norm  grid (rules, P), block 256, between the two when a rule
//       renormalizes (renormalize_logits): the edited row's max and sum of
//       exp(x - max) in f64 a part into `normParts` [rules, P], merged by a
//       rule's last block in order (genc_greedy's tree) into `norm`
//       [rules]: (max, log-sum-exp) as two f32.
//
//   genc_token_pass  grid (rows, P), block 256, one launch per pass
//       (TokenPass): greedy search with listed-token processors and sampling
//       (temperature, top-k, top-p, min-p) by the rule of
//       runtime/choice/Sampling.h, where the logits are: the edits on the raw
//       row, the thresholds by radix selects over the row's float keys
//       (histograms of 2048 bins, integer atomics: exact in any order), the
//       sums in fixed trees (a part's in its block, the parts in order by the
//       last block). Each pass's last block (a ticket per row, zero between
//       launches) decides for the row into `state`; the prep pass (greedy)
//       or the draw pass writes the row's token and logprob into `choice`.
//
//   genc_kv_copy  grid (n, KVH, 2), block 256: copy i's rows of head y of K
//       (z 0) or V (z 1), in 16-byte words (rows a multiple of 16 bytes).
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
  };                                                                                               \
  /* Beam reordering: rows [from, to) of every head of slot src to slot dst. */                  \
  struct GencKvCopy { long long dst, src, from, to; };                                             \
  struct GencKvCopyParams {                                                                        \
    unsigned long long in, out;   /* a layer's K (its V halfBytes on), or the scratch's */         \
    unsigned long long copies;    /* GencKvCopy [n] */                                             \
    long long halfBytes, slotBytes, headBytes, rowBytes;                                           \
  };                                                                                               \
  /* An i8 cross cache's rows from @encode's K or V [KVH, srcTokens, D] (f32, or 16-bit */      \
  /* with bf16 0/1): positions segStart.. +segLen to an entry's codes [KVH, capacity, D] and */   \
  /* scales [KVH, capacity] (runtime/kv/Int8Rows.h). */                                             \
  struct GencCrossStoreParams {                                                                    \
    unsigned long long src, codes, scales;                                                         \
    long long srcTokens, segStart, segLen, capacity;                                               \
    int D, srcBytes, bf16, pad;                                                                    \
  };                                                                                               \
  /* A row's edits (runtime/choice/Beams.h's BeamRow), ranges of `list`: the bias range holds */  \
  /* (id, float bits) pairs, the others ids. */                                                  \
  struct GencEdits {                                                                               \
    float encoderPenalty, penalty, decayScale;                                                     \
    int force;                                                                                     \
    int biasBegin, biasEnd, encBegin, encEnd, penBegin, penEnd;                                    \
    int forcedBegin, forcedEnd, decayBegin, decayEnd, banBegin, banEnd;                            \
  };                                                                                               \
  struct GencBeamRow { GencEdits e; float score; int renormalize; };                              \
  struct GencBeamCand { float score; int token; };                                                 \
  /* A greedy / sampling row's rule (runtime/choice/Sampling.h): its edits, the step's warpers */    \
  /* (flags: kTok*) and its draw u. */                                                            \
  struct GencTokenRow {                                                                            \
    double u;                                                                                      \
    GencEdits e;                                                                                   \
    float temperature, topPThreshold, minP;                                                        \
    int flags;                                                                                     \
    long long topK;                                                                                \
  };                                                                                               \
  /* What a row's passes found so far (written by a pass's last block). */                       \
  struct GencTokenState {                                                                          \
    double sum, minS;                /* the processed row's sum (then the kept set's); min-p's */  \
    unsigned long long above, qtot;  /* a select's count or mass above its prefix; top-p's total */\
    long long need;                  /* a count select's rank; top-p's kept of the boundary tie */ \
    float max, scaled;               /* the row's max; min-p's probability cut */                 \
    int argmax, pIdx;                /* top-p keeps the boundary key's indices >= pIdx */          \
    unsigned kKey, pKey, prefix, pad; /* top-k keeps keys >= kKey; top-p keys > pKey */            \
  };                                                                                               \
  struct GencTokenParams {                                                                         \
    unsigned long long logits;    /* f32 [rows, vocab], raw */                                     \
    unsigned long long work;      /* f32 [rows, vocab]: the processed (and warped) row */          \
    unsigned long long rowRules;  /* GencTokenRow [rows] */                                        \
    unsigned long long list;      /* i32 ids the rules name */                                     \
    unsigned long long state;     /* GencTokenState [rows] */                                      \
    unsigned long long parts;     /* GencGreedyPart [rows, P] */                                   \
    unsigned long long hist;      /* u32 counts [rows, 2048], then u64 masses [rows, 2048]; zero */\
    unsigned long long tickets;   /* u32 [rows], zero */                                           \
    unsigned long long choice;    /* i64 tokens [rows], then f32 logprobs [rows] */                \
    long long rows, vocab;                                                                         \
    int pass, pad;                                                                                 \
  };                                                                                               \
  struct GencBeamParams {                                                                          \
    unsigned long long logits;    /* f32 [rows, vocab] */                                          \
    unsigned long long greedy;    /* genc_greedy's i64 tokens [rows], then f32 log-softmax [rows] */ \
    unsigned long long rowRules;  /* GencBeamRow [rules] */                                        \
    unsigned long long list;      /* i32 ids the rules name */                                     \
    unsigned long long parts;     /* GencBeamCand [rules, P, K] */                                 \
    unsigned long long tickets;   /* u32 [rules], zero */                                          \
    unsigned long long out;       /* GencBeamCand [rules, K] */                                    \
    unsigned long long normParts; /* GencGreedyPart [rules, P] (genc_beam_norm) */                 \
    unsigned long long norm;      /* f32 (max, log-sum-exp) [rules] (genc_beam_norm) */            \
    long long rows, vocab, k;     /* rows: the logits' */                                          \
    long long share;              /* rules a logits row: rules = rows * share */                   \
  };
// clang-format on

namespace genrt::cuda {
GENC_TOKEN_ABI
static const char *const kGencTokenAbiSource = GENC_TOKEN_XSTR(GENC_TOKEN_ABI);

constexpr int kGreedyThreads = 256;
// A row's parts: about 1024 logits each (4 a thread), at most 256 blocks.
constexpr long long kGreedyPartElements = 1024;
constexpr long long kGreedyMaxParts = 256;
// Beam candidates: K at most 32 a row; a part at most 2048 logits (8 KB of
// shared memory), so vocabularies up to 256 parts x 2048.
constexpr int kBeamMaxK = 32;
constexpr long long kBeamPartElements = 2048;

// genc_token_pass (grid (rows, P), block 256, parts of at most
// kTokenPartElements): one launch per pass, in this order; a rule runs the
// passes tokenPasses() names (runtime/cuda/TokenChoice.h).
enum TokenPass : int {
  kTokPrep = 0,      // edits + temperature into `work`; max, argmax, sum; greedy's choice
  kTokTopK0 = 1,     // 1..3: the k-th largest key, 11 + 11 + 10 bits (counts)
  kTokSumK = 4,      // the sum over top-k's kept
  kTokTopP0 = 5,     // 5..7: top-p's boundary key (counts and quantized masses)
  kTokIdx0 = 8,      // 8..9: the boundary tie's first kept index, 11 + 11 bits
  kTokSumP = 10,     // min-p's sum over top-k and top-p's kept
  kTokDraw = 11,     // the draw over the kept set; the choice
  kTokPasses = 12,
};
// GencTokenRow::flags
constexpr int kTokSample = 1, kTokTopK = 2, kTokTopP = 4, kTokMinP = 8, kTokTemperature = 16;
constexpr long long kTokenPartElements = 2048;
constexpr int kTokenBins = 2048;
constexpr long long kTokenMaxVocab = 1LL << 22; // the index select's 22 bits

} // namespace genrt::cuda
