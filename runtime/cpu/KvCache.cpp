#include "runtime/cpu/KvCache.h"

#include "runtime/Env.h"
#include "runtime/kv/Int8Rows.h"
#include "runtime/cpu/MatmulPanels.h"
#include "runtime/cpu/VectorMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <cstdlib>
#include <new>

namespace genrt::cpu {

Status RelativeBias::from(const AttrMap &attrs, const std::vector<Tensor> &ins, size_t index,
                          int64_t heads, RelativeBias &out) {
  out = RelativeBias();
  int64_t M = attrInt(attrs, "bias_max_distance", 0);
  if (M <= 0)
    return ins.size() > index ? Status::error("an operand too many (no bias_max_distance)")
                              : Status::ok();
  if (ins.size() != index + 1)
    return Status::error("bias_max_distance is set but the bias operand is missing");
  const Tensor &t = ins[index];
  if (t.dtype() != DType::F32 || t.shape() != std::vector<int64_t>{heads, 2 * M - 1})
    return Status::error("the relative bias must be f32 [" + std::to_string(heads) + ", " +
                         std::to_string(2 * M - 1) + "]");
  out.table = t.data<float>();
  out.maxDistance = M;
  return Status::ok();
}

// ---- storage ---------------------------------------------------------------

Status HostKvCache::create(const KvLayout &layout, HostKvCache &out) {
  if (Status s = layout.verify(); !s)
    return s;
  if (layout.dtype != DType::F32 && layout.dtype != DType::F16 && layout.dtype != DType::BF16)
    return Status::error("KV cache: dtype must be f32, f16 or bf16");
  out.layout_ = layout;
  out.self_.clear();
  out.cross_.clear();
  size_t es = dtypeSize(layout.dtype);
  try {
    for (size_t l = 0; l < layout.layers.size(); ++l)
      out.self_.emplace_back(2 * static_cast<size_t>(layout.layerElements(l)) * es);
    for (size_t l = 0; l < layout.crossLayers.size(); ++l)
      out.cross_.emplace_back(static_cast<size_t>(layout.crossLayerBytes(l)));
  } catch (const std::bad_alloc &) {
    out.self_.clear();
    out.cross_.clear();
    return Status::error("cannot allocate the " +
                         std::to_string(layout.selfBytes() + layout.crossBytes()) +
                         "-byte KV cache in host memory");
  }
  return Status::ok();
}

void HostKvCache::store(uint8_t *dst, const float *row, int64_t n) const {
  switch (layout_.dtype) {
  case DType::F16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h = floatToHalf(row[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
    break;
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h = floatToBf16(row[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
    break;
  default:
    std::memcpy(dst, row, n * sizeof(float));
  }
}

const float *HostKvCache::load(const uint8_t *src, int64_t n, std::vector<float> &scratch) const {
  if (layout_.dtype == DType::F32)
    return reinterpret_cast<const float *>(src);
  scratch.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    scratch[i] = layout_.dtype == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  return scratch.data();
}

void HostKvCache::round(float *values, int64_t n) const {
  switch (layout_.dtype) {
  case DType::F16:
    for (int64_t i = 0; i < n; ++i)
      values[i] = halfToFloat(floatToHalf(values[i]));
    break;
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i)
      values[i] = bf16ToFloat(floatToBf16(values[i]));
    break;
  default:
    break;
  }
}

void HostKvCache::writeSelf(size_t l, bool v, KvRef where, int64_t head, const float *row) {
  int64_t e = (v ? layout_.layerElements(l) : 0) + layout_.offset(l, where.region, head, where.index);
  store(at(self_[l], e), row, layout_.layers[l].headDim);
}

const float *HostKvCache::readSelf(size_t l, bool v, KvRef where, int64_t head, std::vector<float> &scratch) const {
  int64_t e = (v ? layout_.layerElements(l) : 0) + layout_.offset(l, where.region, head, where.index);
  return load(at(self_[l], e), layout_.layers[l].headDim, scratch);
}

void HostKvCache::writeCross(size_t l, bool v, int64_t entry, int64_t head, int64_t pos,
                             const float *row) {
  const int64_t D = layout_.crossLayers[l].headDim;
  uint8_t *dst = cross_[l].data() + layout_.crossRowByte(l, v, entry, head, pos);
  if (layout_.crossI8) {
    float scale;
    int8RowStore(row, D, reinterpret_cast<int8_t *>(dst), scale);
    std::memcpy(cross_[l].data() + layout_.crossScaleByte(l, v, entry, head, pos), &scale, 4);
    return;
  }
  store(dst, row, D);
}

const float *HostKvCache::readCross(size_t l, bool v, int64_t entry, int64_t head, int64_t pos,
                                    std::vector<float> &scratch) const {
  const int64_t D = layout_.crossLayers[l].headDim;
  const uint8_t *src = cross_[l].data() + layout_.crossRowByte(l, v, entry, head, pos);
  if (layout_.crossI8) {
    float scale;
    std::memcpy(&scale, cross_[l].data() + layout_.crossScaleByte(l, v, entry, head, pos), 4);
    scratch.resize(size_t(D));
    int8RowLoad(reinterpret_cast<const int8_t *>(src), scale, D, scratch.data());
    return scratch.data();
  }
  return load(src, D, scratch);
}

void HostKvCache::copySlots(const std::vector<int32_t> &dst, const std::vector<int32_t> &src,
                            const std::vector<int64_t> &lengths, const std::vector<int64_t> &from) {
  const size_t es = dtypeSize(layout_.dtype);
  for (size_t l = 0; l < layout_.layers.size(); ++l) {
    const KvCacheLayer &L = layout_.layers[l];
    const size_t rowBytes = static_cast<size_t>(L.headDim) * es, headBytes = L.capacity * rowBytes,
                 slotBytes = L.kvHeads * headBytes;
    // Rows [lo, hi) of pair i: past what dst holds already, to what src
    // holds; all of a rolling buffer that has wrapped.
    auto span = [&](size_t i, int64_t &lo, int64_t &hi) {
      const int64_t len = lengths[src[i]];
      lo = len > L.capacity ? 0 : std::min(from[i], len);
      hi = std::min(len, L.capacity);
    };
    for (int kv = 0; kv < 2; ++kv) {
      uint8_t *base = at(self_[l], kv ? layout_.layerElements(l) : 0);
      // A slot may be both a source and a destination: snapshot the rows
      // each source gives before any is overwritten.
      std::vector<std::vector<uint8_t>> snap(dst.size());
      for (size_t i = 0; i < dst.size(); ++i) {
        int64_t lo, hi;
        span(i, lo, hi);
        snap[i].resize(static_cast<size_t>(std::max<int64_t>(hi - lo, 0)) * rowBytes * L.kvHeads);
        for (int64_t h = 0; h < L.kvHeads && hi > lo; ++h)
          std::memcpy(snap[i].data() + h * (hi - lo) * rowBytes, base + src[i] * slotBytes + h * headBytes + lo * rowBytes,
                      (hi - lo) * rowBytes);
      }
      for (size_t i = 0; i < dst.size(); ++i) {
        int64_t lo, hi;
        span(i, lo, hi);
        for (int64_t h = 0; h < L.kvHeads && hi > lo; ++h)
          std::memcpy(base + dst[i] * slotBytes + h * headBytes + lo * rowBytes, snap[i].data() + h * (hi - lo) * rowBytes,
                      (hi - lo) * rowBytes);
      }
    }
  }
}

// ---- attention -------------------------------------------------------------

namespace {

bool isF32(const Tensor &t) { return t.dtype() == DType::F32; }

// fn over [0, n), on the pool when there is one (a piece is at least a few
// rows: below that, waking threads costs more than it saves).
void parallel(ThreadPool *pool, int64_t n, const std::function<void(int64_t, int64_t)> &fn) {
  if (pool)
    pool->parallelFor(n, 4, fn);
  else
    fn(0, n);
}

/// A thread's scratch for attendRow: scores, row pointers, and the rows a
/// non-f32 cache had to widen (each key its own: a row reads them all at
/// once), allocated when first needed.
struct RowScratch {
  std::vector<float> p, kScratch, vScratch;
  std::vector<const float *> k, v;
  std::unique_ptr<float[]> kRows, vRows;
  int64_t rowsCap = 0, n = 0, D = 0;
  /// A cache row as readSelf / readCross gave it: in place when the cache
  /// holds f32, else copied out of the shared scratch to key j's own place.
  const float *keep(bool isV, int64_t j, const float *row) {
    const std::vector<float> &scratch = isV ? vScratch : kScratch;
    if (scratch.empty() || row != scratch.data())
      return row;
    if (rowsCap < n * D) {
      kRows.reset(new float[size_t(n * D)]);
      vRows.reset(new float[size_t(n * D)]);
      rowsCap = n * D;
    }
    float *dst = (isV ? vRows : kRows).get() + j * D;
    std::memcpy(dst, row, size_t(D) * sizeof(float));
    return dst;
  }
};

/// softmax(scale · q·key(j) + bias[j]) · value(j) over keys j in [0, n):
/// the rows' pointers first, then one vectorised pass (VectorMath.h).
template <typename KeyFn, typename ValueFn>
void attendRow(const float *q, int64_t n, int64_t D, float scale, const float *bias, KeyFn key,
               ValueFn value, RowScratch &s, float *o) {
  s.p.resize(n);
  s.k.resize(n);
  s.v.resize(n);
  s.n = n;
  s.D = D;
  for (int64_t j = 0; j < n; ++j) {
    s.k[j] = key(j);
    s.v[j] = value(j);
  }
  attendRowF32(q, s.k.data(), s.v.data(), n, D, scale, bias, s.p.data(), o);
}

// A piece of a prompt's causal attention as two products per head (a
// prefill's queries are many): S = Q Kᵀ and O = P V through the panel GEMM
// (cpu/MatmulPanels.h), the softmax between them a vectorised pass per row.
// Row by row each (token, head) walked its keys with no reuse; here each K
// and V row is read once per query head.
//
// Every piece of two tokens or more takes it, whether it starts a sequence
// or continues one (its keys: the cached positions, then its own), and a
// one-token piece (a decode step) the row path: every element of S and O is
// one FMA chain in order from zero, and a row's softmax depends only on its
// own scores, so a query's output is the same bits however its prompt was
// split into pieces and whatever else shares the run. That is what keeps a
// request's tokens independent of its batch-mates in the server (the
// scheduler never cuts a one-token piece out of a longer prompt, nor does
// the Session: docs/serving.md). Sliding windows and relative biases take
// the row path throughout.
struct PrefillSegment {
  int64_t start = 0, len = 0, cached = 0;
};

bool panelSegments(const std::vector<TokenPlace> &tokens, int64_t window, bool bias,
                   std::vector<PrefillSegment> &out) {
  // GENC_CPU_ROW_ATTENTION=1: the row path for every prefill (A/B runs).
  static const bool rowsOnly = [] {
    const char *e = genrt::env::get("GENC_CPU_ROW_ATTENTION");
    return e && std::string(e) == "1";
  }();
  if (bias || window > 0 || rowsOnly || !havePanelKernels())
    return false;
  const int64_t T = static_cast<int64_t>(tokens.size());
  for (int64_t t = 0; t < T;) {
    int64_t e = t + 1;
    while (e < T && tokens[e].slot == tokens[t].slot && tokens[e].position == tokens[e - 1].position + 1 &&
           tokens[e].cachedBefore == tokens[t].cachedBefore)
      ++e;
    if (e - t >= 2 && tokens[t].position == tokens[t].cachedBefore)
      out.push_back({t, e - t, tokens[t].cachedBefore});
    t = e;
  }
  return !out.empty();
}

/// One thread's panels of a KV head's Kᵀ [D, n] and V [n, D] (kept while
/// the query heads of its group go by), and the scores.
struct PrefillScratch {
  std::vector<float> kPanels, vPanels, kt, v, scores, row;
  int64_t packed = -1; // which (segment, KV head) the panels hold

  /// Keys j < cached from `cachedKey(j)` / `cachedValue(j)`, the rest the
  /// run's rows k, v (n - cached of them).
  template <typename CachedFn>
  void pack(int64_t which, int64_t cached, CachedFn cachedRow, const float *k, const float *vRun, int64_t n,
            int64_t D) {
    if (packed == which)
      return;
    kt.resize(static_cast<size_t>(D * n));
    v.resize(static_cast<size_t>(n * D));
    for (int64_t j = 0; j < n; ++j) {
      const float *kr = j < cached ? cachedRow(false, j, row) : k + (j - cached) * D;
      for (int64_t d = 0; d < D; ++d)
        kt[d * n + j] = kr[d];
      const float *vr = j < cached ? cachedRow(true, j, row) : vRun + (j - cached) * D;
      std::copy_n(vr, D, v.data() + j * D);
    }
    kPanels.resize(static_cast<size_t>(panelFloats(D, n)));
    packPanels(kt.data(), D, n, kPanels.data());
    vPanels.resize(static_cast<size_t>(panelFloats(n, D)));
    packPanels(v.data(), n, D, vPanels.data());
    packed = which;
  }

  /// q: the piece's len queries, at positions cached.. of n keys.
  void attend(const float *q, int64_t len, int64_t cached, int64_t n, int64_t D, float scale, float *o) {
    scores.resize(static_cast<size_t>(len * n));
    matmulPanels(q, kPanels.data(), scores.data(), len, n, D, nullptr);
    softmaxCausalRows(scores.data(), len, n, cached, scale);
    matmulPanels(scores.data(), vPanels.data(), o, len, D, n, nullptr);
  }
};

} // namespace

Status selfAttention(HostKvCache &cache, const AttrMap &attrs, const std::vector<Tensor> &ins,
                     Tensor &out, const AttentionContext &ctx, ThreadPool *pool) {
  const KvLayout &layout = cache.layout();
  int64_t li = attrInt(attrs, "layer", -1);
  if (li < 0 || li >= static_cast<int64_t>(layout.layers.size()) || ins.size() < 3 || ins.size() > 4)
    return Status::error("kv_attention: bad layer or operands");
  const KvCacheLayer &L = layout.layers[li];
  const Tensor &q = ins[0], &k = ins[1], &v = ins[2];
  const std::vector<TokenPlace> &tokens = ctx.tokens;
  int64_t T = static_cast<int64_t>(tokens.size());
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || q.shape()[0] != 1 || q.shape()[2] != T ||
      k.shape() != std::vector<int64_t>{1, L.kvHeads, T, L.headDim} || v.shape() != k.shape() ||
      q.shape()[3] != L.headDim || q.shape()[1] % L.kvHeads || !isF32(q) || !isF32(k) || !isF32(v))
    return Status::error("kv_attention: operand shapes do not match the cache layout");
  int64_t H = q.shape()[1], D = L.headDim, KVH = L.kvHeads, group = H / KVH;
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  int64_t window = attrInt(attrs, "window", 0);
  if (out.shape() != q.shape() || !isF32(out))
    return Status::error("kv_attention: the output buffer does not match q");
  RelativeBias bias;
  if (Status s = RelativeBias::from(attrs, ins, 3, H, bias); !s)
    return Status::error("kv_attention: " + s.message());
  const float *qd = q.data<float>(), *kd = k.data<float>(), *vd = v.data<float>();
  float *od = out.data<float>();
  // A 16-bit cache: the run's own keys and values as the cache will hold
  // them, so that a query sees the same numbers whether a key came in this
  // run or an earlier one: a prompt's logits then do not depend on where it
  // was cut into pieces (the server's chunked prefill), and a decode step's
  // own key is what the next step reads back (as on the GPU).
  std::vector<float> kRound, vRound;
  if (layout.dtype != DType::F32) {
    kRound.assign(kd, kd + k.numElements());
    vRound.assign(vd, vd + v.numElements());
    cache.round(kRound.data(), static_cast<int64_t>(kRound.size()));
    cache.round(vRound.data(), static_cast<int64_t>(vRound.size()));
    kd = kRound.data();
    vd = vRound.data();
  }
  for (const TokenPlace &tok : tokens) {
    int64_t lo = window > 0 ? std::max<int64_t>(0, tok.position - window + 1) : 0;
    if (tok.cachedBefore - lo > L.capacity || tok.position < tok.cachedBefore ||
        tok.position - tok.cachedBefore >= T ||
        (ctx.rows && static_cast<int64_t>(ctx.rows->of(tok.slot).size()) < tok.cachedBefore))
      return Status::error("kv_attention: the cache cannot hold the attended positions");
    if (bias.table && !bias.covers(lo - tok.position))
      return Status::error("kv_attention: a key is further away than the relative bias covers");
  }
  for (int64_t t = 0; t < T; ++t)
    if (tokens[t].position - tokens[t].cachedBefore > t)
      return Status::error("kv_attention: the cache cannot hold the attended positions");
  std::vector<PrefillSegment> segments;
  std::vector<char> byPanels(static_cast<size_t>(T), 0);
  if (panelSegments(tokens, window, bias.table != nullptr, segments)) {
    for (const PrefillSegment &g : segments)
      std::fill(byPanels.begin() + g.start, byPanels.begin() + g.start + g.len, 1);
    // (segment, head) pairs, each writing its own output rows; a thread's
    // consecutive heads of one KV head's group share its panels.
    const int64_t pairs = static_cast<int64_t>(segments.size()) * H;
    auto run = [&](int64_t begin, int64_t end) {
      PrefillScratch s;
      for (int64_t i = begin; i < end; ++i) {
        const PrefillSegment &g = segments[i / H];
        const int64_t h = i % H, kh = h / group, n = g.cached + g.len;
        const int32_t slot = tokens[g.start].slot;
        auto cachedRow = [&](bool isV, int64_t j, std::vector<float> &scratch) {
          return cache.readSelf(li, isV, ctx.cached(slot, j), kh, scratch);
        };
        s.pack(i / H * KVH + kh, g.cached, cachedRow, kd + (kh * T + g.start) * D, vd + (kh * T + g.start) * D, n,
               D);
        s.attend(qd + (h * T + g.start) * D, g.len, g.cached, n, D, scale, od + (h * T + g.start) * D);
      }
    };
    if (pool)
      pool->parallelFor(pairs, 1, run);
    else
      run(0, pairs);
  }
  std::vector<int64_t> rowTokens;
  for (int64_t t = 0; t < T; ++t)
    if (!byPanels[size_t(t)])
      rowTokens.push_back(t);
  if (!rowTokens.empty()) {
    // (token, head) pairs are independent: each writes its own output row.
    // Tokens are dealt from both ends (0, T-1, 1, T-2, ...): a causal
    // prefill's later tokens attend to more keys, and the pool's contiguous
    // pieces then carry even work.
    const int64_t R = static_cast<int64_t>(rowTokens.size());
    parallel(pool, R * H, [&](int64_t begin, int64_t end) {
    RowScratch p;
    std::vector<float> b;
    for (int64_t th = begin; th < end; ++th) {
      const int64_t i = th / H, h = th % H, t = rowTokens[size_t(i % 2 ? R - 1 - i / 2 : i / 2)];
      const TokenPlace &tok = tokens[t];
      int64_t lo = window > 0 ? std::max<int64_t>(0, tok.position - window + 1) : 0;
      int64_t n = tok.position - lo + 1;
      int64_t kh = h / group;
      // Keys [0, cached): from the cache before this run; the rest, this
      // run's operands, are consecutive rows there (a prefill's every key).
      const int64_t cached = std::min(n, std::max<int64_t>(0, tok.cachedBefore - lo));
      const int64_t first = kh * T + (t - (tok.position - (lo + cached))); // operand row of key `cached`
      if (bias.table) {
        b.resize(n);
        for (int64_t j = 0; j < n; ++j)
          b[j] = bias.at(h, lo + j - tok.position);
      }
      attendRow(
          qd + (h * T + t) * D, n, D, scale, bias.table ? b.data() : nullptr,
          [&](int64_t j) {
            return j < cached ? p.keep(false, j, cache.readSelf(li, false, ctx.cached(tok.slot, lo + j), kh, p.kScratch))
                              : kd + (first + (j - cached)) * D;
          },
          [&](int64_t j) {
            return j < cached ? p.keep(true, j, cache.readSelf(li, true, ctx.cached(tok.slot, lo + j), kh, p.vScratch))
                              : vd + (first + (j - cached)) * D;
          },
          p, od + (h * T + t) * D);
    }
  });
  }
  // Append after attending, so a rolling buffer never loses a key that an
  // earlier token of the same run still needed.
  for (int64_t t = 0; t < T; ++t)
    for (int64_t kh = 0; kh < KVH; ++kh) {
      cache.writeSelf(li, false, tokens[t].write, kh, kd + (kh * T + t) * D);
      cache.writeSelf(li, true, tokens[t].write, kh, vd + (kh * T + t) * D);
    }
  return Status::ok();
}

Status crossAttention(const HostKvCache &cache, const AttrMap &attrs, const std::vector<Tensor> &ins,
                      Tensor &out, const AttentionContext &ctx, ThreadPool *pool) {
  const KvLayout &layout = cache.layout();
  int64_t li = attrInt(attrs, "layer", -1);
  if (li < 0 || li >= static_cast<int64_t>(layout.crossLayers.size()) || ins.size() != 1)
    return Status::error("cross_attention: bad layer or operands");
  const CrossCacheLayer &L = layout.crossLayers[li];
  const Tensor &q = ins[0];
  int64_t T = static_cast<int64_t>(ctx.crossEntryOfToken.size());
  if (q.rank() != 4 || !isF32(q) || q.shape()[0] != 1 || q.shape()[2] != T ||
      q.shape()[3] != L.headDim || q.shape()[1] % L.kvHeads || out.shape() != q.shape() || !isF32(out))
    return Status::error("cross_attention: q does not match the cross cache layout");
  int64_t H = q.shape()[1], D = L.headDim, group = H / L.kvHeads;
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  for (int64_t t = 0; t < T; ++t) {
    int64_t e = ctx.crossEntryOfToken[t];
    if (e < 0 || e >= static_cast<int64_t>(ctx.crossLengths.size()) || ctx.crossLengths[e] <= 0 ||
        ctx.crossLengths[e] > layout.maxSourceLength)
      return Status::error("cross_attention: a token's sequence has no encoded source");
  }
  parallel(pool, T * H, [&](int64_t begin, int64_t end) {
    RowScratch p;
    for (int64_t th = begin; th < end; ++th) {
      const int64_t t = th / H, h = th % H, e = ctx.crossEntryOfToken[t], kh = h / group;
      attendRow(
          q.data<float>() + (h * T + t) * D, ctx.crossLengths[e], D, scale, nullptr,
          [&](int64_t j) { return p.keep(false, j, cache.readCross(li, false, e, kh, j, p.kScratch)); },
          [&](int64_t j) { return p.keep(true, j, cache.readCross(li, true, e, kh, j, p.vScratch)); }, p,
          out.data<float>() + (h * T + t) * D);
    }
  });
  return Status::ok();
}

Status packedAttention(const AttrMap &attrs, const std::vector<Tensor> &ins, Tensor &out,
                       const AttentionContext &ctx) {
  if (ins.size() < 3)
    return Status::error("packed_attention: bad operands");
  const Tensor &q = ins[0], &k = ins[1], &v = ins[2];
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4 || !isF32(q) || !isF32(k) || !isF32(v) ||
      q.shape()[0] != 1 || k.shape()[0] != 1 || v.shape() != k.shape() ||
      k.shape()[2] != q.shape()[2] || k.shape()[3] != q.shape()[3] || k.shape()[1] == 0 ||
      q.shape()[1] % k.shape()[1] || out.shape() != q.shape() || !isF32(out))
    return Status::error("packed_attention: q, k, v do not fit together");
  int64_t H = q.shape()[1], T = q.shape()[2], D = q.shape()[3], KVH = k.shape()[1];
  RelativeBias bias;
  if (Status s = RelativeBias::from(attrs, ins, 3, H, bias); !s)
    return Status::error("packed_attention: " + s.message());
  float scale = static_cast<float>(attrFloat(attrs, "scale", 1.0 / std::sqrt(double(D))));
  RowScratch p;
  std::vector<float> b;
  for (const SourceSegment &sg : ctx.segments) {
    if (sg.start < 0 || sg.len <= 0 || sg.start + sg.len > T)
      return Status::error("packed_attention: a source lies outside the packed tokens");
    if (bias.table && !bias.covers(sg.len - 1))
      return Status::error("packed_attention: a source is longer than the relative bias covers");
    for (int64_t h = 0; h < H; ++h) {
      int64_t kh = h / (H / KVH);
      // k, v [1, KVH, T, D]: key j of head kh at (kh * T + start + j) * D.
      const float *kb = k.data<float>() + (kh * T + sg.start) * D;
      const float *vb = v.data<float>() + (kh * T + sg.start) * D;
      for (int64_t i = 0; i < sg.len; ++i) {
        if (bias.table) {
          b.resize(sg.len);
          for (int64_t j = 0; j < sg.len; ++j)
            b[j] = bias.at(h, j - i);
        }
        attendRow(q.data<float>() + (h * T + sg.start + i) * D, sg.len, D, scale,
                  bias.table ? b.data() : nullptr, [&](int64_t j) { return kb + j * D; },
                  [&](int64_t j) { return vb + j * D; }, p,
                  out.data<float>() + (h * T + sg.start + i) * D);
      }
    }
  }
  return Status::ok();
}

} // namespace genrt::cpu
