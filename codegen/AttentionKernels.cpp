#include "codegen/AttentionKernels.h"

#include "codegen/CudaSyntax.h"
#include "passes/analysis/PlanOptions.h"
#include "passes/analysis/Storage.h"
#include "runtime/Env.h"
#include "runtime/cuda/AttentionAbi.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace genc {
namespace {

int64_t numElements(const Value *v) {
  int64_t n = 1;
  for (const Dim &d : v->shape())
    n *= d.isConstant() ? d.constant() : 0;
  return n;
}

// Operands: X (or q, k, v), then positions, cos, sin; q_norm, k_norm; bias.
// The index of q_norm (of what follows the RoPE tables).
size_t operandsBeforeNorm(const Op &op) {
  const bool packed = !op.intsAttr("qkv_offsets").empty();
  return (packed || op.is("cross_attention") ? 1 : 3) + (op.strAttr("rope", "").empty() ? 0 : 3);
}

// The configuration of one attention op as the struct the templates read:
// its text is also the key that dedups families.

std::string configBody(const Function &f, const Op &op, DType activation, bool sharedPrompts, bool crossI8,
                       const AttentionKernelOptions &options, int &headsPerBlock, genrt::cuda::DecodeShape &decode,
                       bool &stream) {
  const int mode = op.is("kv_attention") ? 0 : op.is("cross_attention") ? 1 : 2;
  // An i8 cross cache (genc --cross-kv-dtype i8): decode steps take the
  // CUDA-core decode kernel over one-byte tiles; no tensor-core prefill.
  const bool i8 = crossI8 && mode == 1;
  const int64_t H = op.intAttr("num_heads", 0), KVH = op.intAttr("num_kv_heads", H),
                D = op.intAttr("head_dim", 0), G = KVH ? H / KVH : 1;
  std::vector<int64_t> offs = op.intsAttr("qkv_offsets");
  const bool packed = !offs.empty();
  const std::string rope = op.strAttr("rope", "");
  const bool qkNorm = op.hasAttr("qk_norm_epsilon");
  const Value *cosV = nullptr, *qn = nullptr, *kn = nullptr, *bias = nullptr;
  size_t next = operandsBeforeNorm(op);
  if (!rope.empty())
    cosV = op.operand(next - 2);
  if (qkNorm) {
    qn = op.operand(next);
    kn = op.operand(next + 1);
    next += 2;
  }
  const int64_t biasM = op.intAttr("bias_max_distance", 0);
  if (biasM > 0)
    bias = op.operand(op.numOperands() - 1);
  // The cache is read in 16-byte vectors of the largest width dividing D.
  const int es = static_cast<int>(dtypeSize(activation));
  int vec = 16 / es;
  while (vec > 1 && D % vec)
    vec /= 2;
  int lanes = 1;
  while (lanes < 32 && lanes * vec < D)
    lanes *= 2;
  // A decode step's attend is a latency chain, not a bandwidth job: one
  // warp's instruction stream holds every (key, head) dot and weighted row
  // of its block, so its length grows with the heads per block. Groups of
  // at most options.headsPerBlock query heads spread it over more blocks;
  // the group's K/V rows, read again by each block, come from L2.
  headsPerBlock = static_cast<int>(G);
  while (headsPerBlock > options.headsPerBlock && headsPerBlock % 2 == 0)
    headsPerBlock /= 2;
  // K/V stream into registers wherever the head dim allows (the shared-
  // memory tiles elsewhere): 48.2 -> 46.8 µs a layer at 1 x 65,536 keys on an
  // H100, 2026-11-25 (docs/performance.md, "Decode attention from registers").
  const bool registers = true;
  decode = genrt::cuda::decodeShape(mode, G, D, i8 ? 1 : es, !i8 && activation == DType::BF16,
                                    options.stageKib * 1024LL, registers,
                                    !i8 ? 0 : activation == DType::F16 ? 1 : activation == DType::BF16 ? 2 : 0);
  // The TMA decode kernel of long contexts (sm_90), where its shape allows.
  const int qkNormKind = qkNorm ? (numElements(qn) == D ? 1 : 2) : 0;
  stream = options.decodeStream && genrt::cuda::streamEligible(decode, mode, D, sharedPrompts && mode == 0, i8,
                                                               op.intAttr("window", 0), qkNormKind);

  std::ostringstream c;
  c << "  static constexpr int MODE = " << mode << ", H = " << H << ", KVH = " << KVH << ", D = " << D
    << ", GROUP = " << headsPerBlock << ", GROUP_ALL = " << G << ";\n"
    << "  static constexpr int DGROUP = " << std::max(decode.heads, 1) << ", DSTAGES = " << decode.stages
    << ", DKT = " << decode.keysPerTile << ", DMMA = " << decode.mma << ", DREG = " << decode.registers << ";\n"
    // The least tiles a decode split takes (GencDecodeRange; A/B runs:
    // GENC_DECODE_MIN_TILES).
    << "  static constexpr int DMINT = " << genrt::env::choice("GENC_DECODE_MIN_TILES", {1, 2, 3, 4, 6, 8, 16}, 1)
    << ";\n"
    // attn_N_stream (codegen/AttentionStream.cpp) and its ring's bytes.
    << "  static constexpr int DSTREAM = " << stream << ";\n"
    << "  static constexpr long long SRING = " << genrt::cuda::kStreamRingBytes << ";\n"
    << "  static constexpr int MTHREADS = " << genrt::cuda::kMergeThreads << ";\n"
    // Self-attention over a plan whose beams share their prompt: rows through
    // the pairs (AttentionAbi.h); 0 compiles the kernels exactly as before.
    << "  static constexpr int SHARED = " << (sharedPrompts && mode == 0) << ";\n"
    // Cross attention over i8 rows and their f32 scales (runtime/kv/Int8Rows.h).
    << "  static constexpr int CROSS_I8 = " << i8 << ";\n"
    << "  static constexpr int PMMA = "
    << (!i8 && genrt::cuda::prefillEligible(D, es) ? (activation == DType::BF16 ? 2 : 1) : 0) << ";\n"
    << "  static constexpr int PACKED = " << packed << ", MERGE = " << op.intAttr("merge_heads", 0) << ";\n"
    << "  static constexpr long long QOFF = " << (packed ? offs[0] : 0)
    << ", KOFF = " << (packed && offs.size() > 1 ? offs[1] : 0)
    << ", VOFF = " << (packed && offs.size() > 2 ? offs[2] : 0) << ";\n"
    << "  static constexpr int ROPE = " << (rope == "half" ? 1 : rope == "interleaved" ? 2 : 0)
    << ", R = " << op.intAttr("rotary_dim", 0) << ";\n"
    << "  static constexpr int QKNORM = "
    << (qkNorm ? (numElements(qn) == D ? 1 : 2) : 0) << ", QNW = " << (qn ? numElements(qn) : 0)
    << ", KNW = " << (kn ? numElements(kn) : 0) << ";\n"
    << "  static constexpr float EPS = " << floatLit(op.floatAttr("qk_norm_epsilon", 0.0)) << ";\n"
    << "  static constexpr long long WINDOW = " << op.intAttr("window", 0) << ";\n"
    << "  static constexpr int BIAS = " << (bias != nullptr) << ";\n"
    << "  static constexpr long long BIAS_M = " << biasM << ";\n"
    << "  static constexpr int VEC = " << vec << ", LANES = " << lanes << ";\n"
    << "  static constexpr long long SSTRIDE = " << (H + 2 * KVH) * D << ";\n"
    << "  typedef " << storageStruct(storageDType(f, op.operand(0), activation)) << " X;\n"
    << "  typedef " << (i8 ? "genc_i8" : storageStruct(activation)) << " Cache;\n"
    << "  typedef " << storageStruct(storageDType(f, op.result(0), activation)) << " Out;\n"
    << "  typedef " << storageStruct(cosV ? storageDType(f, cosV, activation) : DType::F32) << " Rope;\n"
    << "  typedef " << storageStruct(qn ? storageDType(f, qn, activation) : DType::F32) << " Norm;\n"
    << "  typedef " << storageStruct(bias ? storageDType(f, bias, activation) : DType::F32) << " Bias;\n";
  return c.str();
}

} // namespace

AttentionKernels emitAttentionKernels(Module &m, DType activation, const AttentionKernelOptions &options) {
  AttentionKernels out;
  std::map<std::string, std::string> familyOf; // config text -> name
  std::ostringstream code;
  for (auto &f : m.functions()) {
    if (f->name() != "encode" && f->name() != "prefill" && f->name() != "decode_step")
      continue;
    for (auto &op : f->ops()) {
      if (!op->is("kv_attention") && !op->is("cross_attention") && !op->is("packed_attention"))
        continue;
      int perBlock = 1;
      genrt::cuda::DecodeShape decode;
      bool stream = false;
      std::string body = configBody(*f, *op, activation, planOptions(m).sharesPrompts(), planOptions(m).crossKvI8,
                                    options, perBlock, decode, stream);
      auto [it, fresh] = familyOf.emplace(body, "attn_" + std::to_string(familyOf.size()));
      const std::string &name = it->second;
      op->setAttr("gpu_kernel", name);
      op->setAttr("gpu_heads_per_block", static_cast<int64_t>(perBlock));
      if (decode.heads) {
        op->setAttr("gpu_decode_heads_per_block", static_cast<int64_t>(decode.heads));
        op->setAttr("gpu_decode_rows", static_cast<int64_t>(1)); // no prologue launch before it
        op->setAttr("gpu_decode_stages", static_cast<int64_t>(decode.stages));
        // The decode routine's dynamic shared bytes, for a kernel that calls
        // it from its own launch (codegen/StepKernel.cpp).
        op->setAttr("gpu_decode_shared_bytes", static_cast<int64_t>(decode.sharedBytes));
        if (decode.registers)
          op->setAttr("gpu_decode_registers", static_cast<int64_t>(1));
        if (stream)
          op->setAttr("gpu_decode_stream", static_cast<int64_t>(1));
      }
      // Every op of the family, not only its first: the executor reads the
      // op's attributes.
      const bool prefill =
          genrt::cuda::prefillEligible(op->intAttr("head_dim", 0), static_cast<int>(dtypeSize(activation))) &&
          !(op->is("cross_attention") && planOptions(m).crossKvI8);
      if (prefill)
        op->setAttr("gpu_prefill", static_cast<int64_t>(1));
      if (op->is("kv_attention") && planOptions(m).sharesPrompts())
        op->setAttr("gpu_shared_prompts", static_cast<int64_t>(1)); // SHARED 1 (the executor checks)
      if (!fresh)
        continue;
      out.names.push_back(name);
      code << "\n// ==== attention kernels " << name << " (" << op->kind() << " at \"" << op->loc()
           << "\") ====\nstruct " << name << "_cfg {\n"
           << body << "};\n";
      // weigh / finish: tree attention's combine, for self-attention only;
      // prefill: runs of many tokens on tensor cores, over 16-bit caches.
      const bool self = op->is("kv_attention");
      for (const char *entry :
           {"prologue", "attend", "append", "decode", "merge", "weigh", "finish", "prefill", "stream"})
        if (const std::string e = entry; e == "stream") {
          // The producer warp starts before the dependent-launch wait; the
          // tensor maps are read where the parameters are (__grid_constant__).
          if (stream)
            code << "extern \"C\" __global__ void __launch_bounds__(" << genrt::cuda::kStreamThreads << ") " << name
                 << "_stream(const __grid_constant__ GencAttnParams p) {\n  genc_attn_stream<" << name
                 << "_cfg>(p);\n}\n";
        } else if (((e != "decode" && e != "merge") || decode.heads) &&
                                         ((e != "weigh" && e != "finish") || self) && (e != "prefill" || prefill))
        {
          // Stage stamps where the profile's attention_trace asks for them.
          const std::string cfg = name + "_cfg", row = e == "merge" ? "9" : "blockIdx.z < 8 ? (int)blockIdx.z : -1";
          const bool mark = options.trace && (e == "merge" || e == "decode");
          code << "extern \"C\" __global__ void __launch_bounds__("
               << (e == "merge" ? genrt::cuda::kMergeThreads : genrt::cuda::kAttnThreads) << ") " << name << "_"
               << entry << "(const GencAttnParams p) {\n";
          if (mark)
            code << "  genc_attn_mark(" << row << ", 0);\n";
          if (e == "merge") { // the next GEMVs' weights into L2 while the decode kernel runs
            code << "  for (int i = 0; i < 3; ++i) genc_l2_prefetch(p.pf[i], p.pfBytes[i]);\n";
            if (mark)
              code << "  genc_attn_mark(9, 1);\n";
            // It reads its place before its own wait.
            code << "  genc_attn_merge<" << cfg << ">(p);\n}\n";
            // The same sums a warp a row, for runs of many rows and few splits.
            code << "extern \"C\" __global__ void __launch_bounds__(" << genrt::cuda::kMergeThreads << ") " << name
                 << "_merge_rows(const GencAttnParams p) {\n  genc_attn_merge_rows<" << cfg << ", "
                 << genrt::cuda::kMergeRowsSplits << ">(p);\n}\n";
            continue;
          }
          code << "  genc_pdl_wait();\n";
          if (mark)
            code << "  genc_attn_mark(" << row << ", 1);\n";
          code << "  genc_pdl_launch();\n  genc_attn_" << entry << "<" << cfg << ">(p);\n}\n";
        }
    }
  }
  out.code = code.str();
  return out;
}

} // namespace genc
