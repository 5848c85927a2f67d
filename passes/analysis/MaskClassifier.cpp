#include "passes/analysis/MaskClassifier.h"

#include "passes/analysis/Probe.h"

#include <cmath>

namespace genc {

std::string MaskKind::describe() const {
  std::string s = causal ? "causal" : "bidirectional";
  if (window)
    s += ", window " + std::to_string(window);
  s += keyPadding.empty() ? ", no key padding" : ", key padding from " + keyPadding;
  if (relativeBias)
    s += ", relative position bias";
  return s;
}

namespace {
// Reads t[b, h, i, j] with size-1 (broadcast) dims; t has rank <= 4.
struct Mask4 {
  const Tensor &t;
  std::vector<int64_t> dims, strides;
  explicit Mask4(const Tensor &t) : t(t) {
    dims.assign(4 - t.rank(), 1);
    dims.insert(dims.end(), t.shape().begin(), t.shape().end());
    strides.assign(4, 0);
    int64_t s = 1;
    for (int i = 3; i >= 0; --i) {
      strides[i] = dims[i] == 1 ? 0 : s;
      s *= dims[i];
    }
  }
  double at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return t.getDouble(b * strides[0] + h * strides[1] + i * strides[2] + j * strides[3]);
  }
};

// Whether the allowed scores of the unpadded batch row 0 get, per head, a
// bias linear in the key position (BLOOM's ALiBi: slope_h · j), which is no
// bias over relative distance row by row.
bool isAlibi(const Mask4 &m4, const MaskKind &k, int64_t L) {
  auto allowed = [&](int64_t i, int64_t j) {
    return (!k.causal || j <= i) && (!k.window || i - j < k.window);
  };
  bool sloped = false;
  for (int64_t h = 0; h < m4.dims[1]; ++h) {
    double slope = 0;
    bool haveSlope = false;
    for (int64_t i = 0; i < L; ++i) {
      int64_t j0 = 0;
      while (j0 < L && !allowed(i, j0))
        ++j0;
      for (int64_t j = j0 + 1; j < L && allowed(i, j); ++j) {
        double step = (m4.at(0, h, i, j) - m4.at(0, h, i, j0)) / double(j - j0);
        if (!haveSlope) {
          slope = step;
          haveSlope = true;
        }
        if (std::fabs(step - slope) > 1e-4 * (1 + std::fabs(slope)))
          return false;
      }
    }
    sloped |= slope != 0;
  }
  return sloped;
}

llvm::Error fail(const std::string &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", msg.c_str());
}

bool isMasked(double v) { return v <= -1e30 || std::isinf(v); }

// The bias over every distance |j - i| < M, from one unpadded sequence of M
// tokens: row 0 gives the distances 0..M-1, column 0 the distances -(M-1)..0
// (masked by causality: left 0, never read). Every other allowed entry of that
// sequence must agree, so the table does not depend on the sequence length.
llvm::Expected<Tensor> tabulateBias(Module &m, Function &f, const Value *mask, const MaskKind &k,
                                    int64_t M) {
  ProbeSpec spec;
  spec.batch = 1;
  spec.length = M;
  spec.padded = false;
  auto val = evaluateWithProbe(m, f, mask, spec);
  if (!val)
    return val.takeError();
  Mask4 m4(*val);
  if (m4.dims[2] != M || m4.dims[3] != M)
    return fail("the relative position bias is not [.., seq, seq] on a long probe");
  int64_t H = m4.dims[1];
  Tensor t(DType::F32, {H, 2 * M - 1});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t d = -(M - 1); d < M; ++d) {
      bool allowed = (!k.causal || d <= 0) && (!k.window || -d < k.window);
      t.setDouble(h * (2 * M - 1) + d + M - 1,
                  !allowed ? 0.0 : d >= 0 ? m4.at(0, h, 0, d) : m4.at(0, h, -d, 0));
    }
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < M; ++j) {
        bool allowed = (!k.causal || j <= i) && (!k.window || i - j < k.window);
        if (allowed && m4.at(0, h, i, j) != t.getDouble(h * (2 * M - 1) + j - i + M - 1))
          return fail("the additive attention term is not a bias over relative distance: "
                      "head " + std::to_string(h) + ", query " + std::to_string(i) + ", key " +
                      std::to_string(j) + " differs from the same distance elsewhere");
      }
  return t;
}
} // namespace

llvm::Expected<MaskKind> classifyMask(Module &m, Function &f, const Value *mask,
                                      int64_t windowHint, int64_t maxLength) {
  ProbeSpec spec;
  spec.length = std::max<int64_t>(12, windowHint + 5);
  auto probe = makeProbe(f, spec);
  if (!probe)
    return probe.takeError();
  auto vals = evaluateOnProbe(m, f, {mask}, *probe);
  if (!vals)
    return vals.takeError();
  // The same probe with other token ids: a mask must not depend on them.
  ProbeSpec other = spec;
  other.seed = 7;
  auto t2 = evaluateWithProbe(m, f, mask, other);
  if (!t2)
    return t2.takeError();
  const Tensor &t = (*vals)[0];
  if (t.rank() > 4 || !isFloat(t.dtype()))
    return fail("the mask is not a float tensor of rank <= 4");
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (t.getDouble(i) != t2->getDouble(i) &&
        !(std::isnan(t.getDouble(i)) && std::isnan(t2->getDouble(i))))
      return fail("the mask depends on the token ids");

  Mask4 m4(t);
  int64_t L = spec.length;
  if (m4.dims[2] != L || m4.dims[3] != L)
    return fail("the mask is not [.., seq, seq] on the probe");
  // Which mask argument (if any) pads keys: the first whose padded keys are masked.
  MaskKind kind;
  const std::vector<std::vector<int64_t>> *pad = nullptr;
  for (auto &[name, rows] : probe->masks) {
    bool padsKeys = true;
    for (int64_t b = 0; b < (int64_t)rows.size() && padsKeys; ++b)
      for (int64_t j = 0; j < L; ++j)
        if (!rows[b][j] && rows[b][L - 1] && !isMasked(m4.at(b % m4.dims[0], 0, L - 1, j)))
          padsKeys = false;
    if (padsKeys) {
      kind.keyPadding = name;
      pad = &rows;
      break;
    }
  }
  // Causality and window from the unpadded row 0.
  kind.causal = isMasked(m4.at(0, 0, 0, L - 1));
  if (kind.causal) {
    int64_t jmin = 0;
    while (jmin < L && isMasked(m4.at(0, 0, L - 1, jmin)))
      ++jmin;
    if (jmin > 0)
      kind.window = L - jmin;
  }
  // Now every valid query row must match the hypothesis exactly. Allowed
  // scores get 0 added, or a bias that depends on (head, j - i) only.
  bool biased = false;
  for (int64_t h = 0; h < m4.dims[1] && !biased; ++h)
    for (int64_t i = 0; i < L && !biased; ++i)
      for (int64_t j = 0; j <= i || (!kind.causal && j < L); ++j)
        if (j < L && (!kind.window || i - j < kind.window) && m4.at(0, h, i, j) != 0.0 &&
            !isMasked(m4.at(0, h, i, j))) {
          biased = true;
          break;
        }
  if (biased)
    kind.relativeBias = std::make_shared<Tensor>(); // describe() says so in errors
  auto biasAt = [&](int64_t h, int64_t i, int64_t j) { return m4.at(0, h, i, j); };
  for (int64_t b = 0; b < std::max<int64_t>(m4.dims[0], pad ? (int64_t)pad->size() : 1); ++b)
    for (int64_t h = 0; h < m4.dims[1]; ++h)
      for (int64_t i = 0; i < L; ++i) {
        if (pad && !(*pad)[b][i])
          continue; // padded query rows: their outputs are never used
        for (int64_t j = 0; j < L; ++j) {
          bool allowed = (!kind.causal || j <= i) && (!kind.window || i - j < kind.window) &&
                         (!pad || (*pad)[b][j]);
          double v = m4.at(b % m4.dims[0], h, i, j);
          // The bias at (i, j) equals the one on row 0's diagonal at the same distance.
          double want = !biased ? 0.0 : j >= i ? biasAt(h, 0, j - i) : biasAt(h, i - j, 0);
          if (allowed && v != want && biased && isAlibi(m4, kind, L))
            return fail("the additive term is a per-head bias linear in the key position "
                        "(ALiBi); the attention op takes a bias over relative distance only");
          if (allowed ? v != want : !isMasked(v))
            return fail("the mask is not " + kind.describe() + " (row " + std::to_string(i) +
                        ", key " + std::to_string(j) + " of batch " + std::to_string(b) +
                        " is " + std::to_string(v) + ")");
        }
      }
  if (biased) {
    auto table = tabulateBias(m, f, mask, kind, maxLength);
    if (!table)
      return table.takeError();
    kind.relativeBias = std::make_shared<Tensor>(std::move(*table));
    kind.maxDistance = maxLength;
  }
  return kind;
}

} // namespace genc
