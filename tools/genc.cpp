// genc: the compiler driver. A thin main over the compiler libraries.
//
//   genc compile model.onnx -o model.plan [--emit=ir] [--passes=a,b] [--print-ir-after=P]
//   genc compile model.onnx -o model.plan --profile deploy.yaml [--remarks-file r.yaml]
//   genc compile model.onnx --print-profile      (the resolved profile as YAML)
//   genc opt input.gir [--passes=a,b] [-o out.gir]
//   genc eval model.onnx --input input_ids=ids.npy ... --output-dir DIR
//   genc compile model.onnx --emit=cuda -o -     (the fused groups' CUDA C++)
//   genc inspect model.plan                      (programs, functions, kernels, archs, sizes)
//   genc inspect model.plan --print-profile      (the profile the plan was built with)
//   genc inspect model.plan --print-step-schedule (the step kernel's ops, items and each block's list)
#include "codegen/CudaEmitter.h"
#include "codegen/NvrtcCompile.h"
#include "codegen/PlanWriter.h"
#include "compiler/interp/Interpreter.h"
#include "compiler/interp/Npy.h"
#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/ReadFile.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/Importer.h"
#include "compiler/onnx/ModelConfig.h"
#include "compiler/remarks/Progress.h"
#include "compiler/remarks/RemarkStream.h"
#include "driver/CompileProfile.h"
#include "driver/Pipeline.h"
#include "driver/ProfileYaml.h"
#include "driver/TokenizerFiles.h"
#include "passes/PassRegistry.h"
#include "passes/analysis/PlanOptions.h"
#include "runtime/plan/PlanFormat.h"
#include "runtime/plan/Program.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <iostream>
#include <sstream>

using namespace llvm;
using namespace genc;

static cl::SubCommand CompileCmd("compile", "Compile an ONNX model (or .gir) into a plan");
static cl::SubCommand OptCmd("opt", "Run passes over IR text (.gir) and print the result");
static cl::SubCommand EvalCmd("eval", "Run a model in the reference interpreter");
static cl::SubCommand InspectCmd("inspect", "List a plan's programs, functions, kernels, archs and sizes");

static cl::OptionCategory GencCat("genc options");

static cl::list<std::string> Inputs(cl::Positional, cl::OneOrMore, cl::desc("<input files>"),
                                    cl::sub(CompileCmd), cl::sub(OptCmd), cl::sub(EvalCmd),
                                    cl::sub(InspectCmd), cl::cat(GencCat));
static cl::opt<std::string> OutputFile("o", cl::desc("Output file ('-' for stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::sub(CompileCmd), cl::sub(OptCmd), cl::cat(GencCat));
enum class EmitKind { Plan, IR, Cuda };
static cl::opt<EmitKind> Emit("emit", cl::desc("What to write"), cl::init(EmitKind::Plan),
                              cl::values(clEnumValN(EmitKind::Plan, "plan", "the generation plan (default)"),
                                         clEnumValN(EmitKind::IR, "ir", "the IR text after the graph pipeline (up to raise-attention; --passes to choose)"),
                                         clEnumValN(EmitKind::Cuda, "cuda", "the CUDA C++ of every fused group's kernel")),
                              cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> MaxBatch("max-batch", cl::desc("Sequences generated together (default 8)"),
                                 cl::init(8), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> MaxBeams("max-beams", cl::desc("Beams per sequence (default 4)"),
                                 cl::init(4), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> MaxLength("max-length",
                                  cl::desc("Prompt + generated tokens per sequence (default: the "
                                           "model's maximum positions, at most 2048)"),
                                  cl::init(0), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> MaxSourceLength("max-source-length",
                                        cl::desc("Encoder-decoder: tokens per source; --max-length then counts the "
                                                 "decoder's tokens, as Hugging Face's max_length does (default: "
                                                 "--max-length)"),
                                        cl::init(0), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> MaxNewTokens("max-new-tokens",
                                     cl::desc("Tokens a beam (or returned sample) generates at most: the beams of a "
                                              "sequence then share its prompt's K/V and store only what they "
                                              "generate (default: each beam a whole copy)"),
                                     cl::init(0), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> MaxTokens("max-tokens",
                                  cl::desc("Prompt tokens per prefill step; longer prompt batches are prefilled in chunks "
                                           "(default: max-batch x max-length, at most 2048)"),
                                  cl::init(0), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<std::string> StorageDType("dtype",
                                         cl::desc("Storage of weights and activations on the GPU: f32 (default), "
                                                  "f16 or bf16 (math stays fp32; logits stay f32)"),
                                         cl::init("f32"), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<std::string> CrossKvDType("cross-kv-dtype",
                                         cl::desc("Encoder-decoder: the cross-attention cache's element type: i8 "
                                                  "(each row as 8-bit codes and an f32 scale: about a quarter of "
                                                  "f32's bytes, half of f16's) or --dtype (default)"),
                                         cl::init(""), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<std::string> WeightsFlag("weights",
                                        cl::desc("The linear layers' weights as 8-bit or 4-bit blocks: int8 or int4 "
                                                 "(round to nearest, a scale per group along K; default: as the "
                                                 "model stores them)"),
                                        cl::init(""), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> GroupSize("group-size", cl::desc("--weights: codes per scale along K (default 32)"), cl::init(32),
                                  cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> QuantizeLmHead("quantize-lm-head",
                                    cl::desc("--weights: the vocabulary projection too (default: it keeps its dtype)"),
                                    cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> WeightsZeroPoint("weights-zero-point",
                                      cl::desc("--weights: a zero point per group (min/max); default symmetric"),
                                      cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> NbitsAccuracyLevel(
    "nbits-accuracy-level",
    cl::desc("4/8-bit products' activations, as ONNX MatMulNBits' accuracy_level: 4 quantizes them to int8 on the "
             "CPU (VNNI dot products; other numbers), 0-3 keep f32 (default 0, whatever the model's own attribute)"),
    cl::init(0), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::list<std::string> GpuArchs("gpu-arch", cl::CommaSeparated,
                                      cl::desc("GPU architectures to compile kernels for (default sm_80,sm_90)"),
                                      cl::value_desc("sm_XX,..."), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> AttentionHeadsPerBlock(
    "attention-heads-per-block",
    cl::desc("GPU: query heads an attention block takes at most, 1..8 (default 4; profile key "
             "cuda.attention_heads_per_block)"),
    cl::init(4), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> StepBlocks(
    "step-blocks",
    cl::desc("GPU: persistent blocks the decode-step kernel is scheduled for, the SMs of the target GPU "
             "(default 132, an H100/H200; 0 keeps one kernel per op; profile key cuda.step_blocks)"),
    cl::init(132), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> StepBlocksPerSm(
    "step-blocks-per-sm",
    cl::desc("GPU: how many of the decode-step kernel's blocks share an SM, each with that share of its shared "
             "memory (1 to 4, default 1; profile key cuda.step_blocks_per_sm)"),
    cl::init(1), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<int64_t> StepWarps(
    "step-warps",
    cl::desc("GPU: compute warps of a decode-step kernel block, 4 or 7 (default 7; the copy warp comes on top; "
             "profile key cuda.step_warps)"),
    cl::init(7), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> AttentionTrace("attention-trace",
                                    cl::desc("GPU diagnostics: the decode attention kernels stamp their stages "
                                             "(genrun prints them with GENC_CUDA_ATTN_TRACE=1; profile key "
                                             "cuda.attention_trace)"),
                                    cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<std::string> StatsJson("stats-json",
                                      cl::desc("Write weights/KV-cache/arena bytes for the maximum shapes"),
                                      cl::value_desc("file"), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> NoTokenizer("no-tokenizer",
                                 cl::desc("Do not pack the tokenizer found beside the model (the plan then takes token ids only)"),
                                 cl::sub(CompileCmd), cl::cat(GencCat));
static cl::list<std::string> Passes("passes", cl::CommaSeparated,
                                    cl::desc("Passes to run, in order (default: the standard pipeline for compile and eval, none for opt)"),
                                    cl::sub(CompileCmd), cl::sub(OptCmd), cl::sub(EvalCmd),
                                    cl::cat(GencCat));
static cl::list<std::string> PrintAfter("print-ir-after", cl::CommaSeparated,
                                        cl::desc("Print the IR after these passes (to stderr)"),
                                        cl::sub(CompileCmd), cl::sub(OptCmd), cl::cat(GencCat));
static cl::opt<bool> PrintAfterAll("print-ir-after-all", cl::desc("Print the IR after every pass"),
                                   cl::sub(CompileCmd), cl::sub(OptCmd), cl::cat(GencCat));
static cl::opt<bool> NoLocations("no-locations", cl::desc("Omit loc(...) when printing IR"),
                                 cl::sub(CompileCmd), cl::sub(OptCmd), cl::cat(GencCat));
static cl::list<std::string> EvalInputs("input", cl::desc("NAME=FILE.npy for each graph input"),
                                        cl::value_desc("name=file"), cl::sub(EvalCmd),
                                        cl::cat(GencCat));
static cl::opt<std::string> OutputDir("output-dir", cl::desc("Folder for the outputs (NAME.npy)"),
                                      cl::value_desc("dir"), cl::sub(EvalCmd), cl::cat(GencCat));
static cl::opt<std::string> ProfileFile("profile",
                                        cl::desc("Read the compile options from a YAML profile; flags "
                                                 "given as well override it"),
                                        cl::value_desc("file"), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> PrintStepSchedule("print-step-schedule",
                                       cl::desc("inspect: print the step kernel's schedule, each block's list too"),
                                       cl::sub(InspectCmd), cl::cat(GencCat));
static cl::opt<bool> PrintProfile("print-profile",
                                  cl::desc("compile: print the resolved profile as YAML and stop; "
                                           "inspect: print the profile the plan was built with"),
                                  cl::sub(CompileCmd), cl::sub(InspectCmd), cl::cat(GencCat));
static cl::opt<std::string> RemarksFile("remarks-file",
                                        cl::desc("Write the passes' optimization remarks (LLVM YAML) "
                                                 "to this file ('-' for stdout)"),
                                        cl::value_desc("file"), cl::sub(CompileCmd), cl::sub(OptCmd),
                                        cl::cat(GencCat));
static cl::opt<std::string> RemarksFilter("remarks",
                                          cl::desc("Only remarks of passes matching this regex; "
                                                   "without --remarks-file they go to stderr"),
                                          cl::value_desc("regex"), cl::sub(CompileCmd), cl::sub(OptCmd),
                                          cl::cat(GencCat));
static cl::opt<bool> Quiet("quiet", cl::desc("Show no progress on stderr (errors and notes still)"),
                           cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> ShowProgress("progress",
                                  cl::desc("Show progress on stderr even when it is not a terminal "
                                           "(default: only on a terminal)"),
                                  cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> TimeReport("time-report", cl::desc("Print the time of each phase and pass to stderr"),
                                cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<std::string> KernelCacheDir(
    "kernel-cache",
    cl::desc("Folder of NVRTC's compiled code, reused by later compiles of the same kernels ('off': none; "
             "default $GENC_KERNEL_CACHE, else $XDG_CACHE_HOME/genc/kernels or ~/.cache/genc/kernels)"),
    cl::value_desc("dir|off"), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<bool> ListPasses("list-passes", cl::desc("List the known passes and exit"),
                                cl::sub(*cl::AllSubCommands), cl::cat(GencCat));

// compile's phases and passes with their wall times: each shown as it
// finishes when progress is on, all of them at the end with --time-report.
static std::vector<std::pair<std::string, double>> Timings;

template <typename F> static auto timed(const std::string &phase, F &&run) {
  progress::begin(phase);
  auto start = std::chrono::steady_clock::now();
  auto result = run();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress::finished(phase, seconds);
  Timings.emplace_back(phase, seconds);
  return result;
}

static void printTimeReport() {
  if (!TimeReport)
    return;
  double total = 0;
  errs() << "genc: time report (wall seconds)\n";
  for (const auto &[name, seconds] : Timings) {
    errs() << format("  %-24s %9.3f\n", name.c_str(), seconds);
    total += seconds;
  }
  errs() << format("  %-24s %9.3f\n", static_cast<const char *>("total"), total);
}

// The remark stream of the running command: `fail` flushes it, so the
// remarks of the passes that ran stay readable after an error.
static std::unique_ptr<RemarkStream> RemarkOut;

// Closes the remark file; for compile, one line on the Missed remarks.
static void finishRemarks() {
  if (!RemarkOut)
    return;
  std::unique_ptr<RemarkStream> r = std::move(RemarkOut);
  if (auto e = r->close())
    errs() << "genc: error: " << toString(std::move(e)) << "\n";
  std::string missed = r->missedSummary();
  if (CompileCmd && !missed.empty())
    errs() << "genc: note: " << missed
           << (RemarksFile.empty() ? "; --remarks-file FILE lists them"
                                   : "; see " + RemarksFile.getValue())
           << "\n";
}

[[noreturn]] static void fail(const std::string &msg) {
  finishRemarks();
  errs() << "genc: error: " << msg << "\n";
  errs().flush();
  std::exit(1);
}

static void check(Error e) {
  if (e)
    fail(toString(std::move(e)));
}

template <typename T> static T check(Expected<T> v) {
  if (!v)
    fail(toString(v.takeError()));
  return std::move(*v);
}

// The model files of an export folder: model.onnx, or an encoder + decoder
// pair under our names or Optimum's.
static std::vector<std::string> findExportFiles(const std::string &dir) {
  auto in = [&](const char *name) {
    SmallString<256> p(dir);
    sys::path::append(p, name);
    return sys::fs::exists(p) ? p.str().str() : std::string();
  };
  for (auto [enc, dec] : {std::pair{"encoder.onnx", "decoder.onnx"},
                          std::pair{"encoder_model.onnx", "decoder_model.onnx"}}) {
    std::string e = in(enc), d = in(dec);
    if (!e.empty() && !d.empty())
      return {e, d};
    if (!e.empty() || !d.empty())
      fail("'" + dir + "' holds " + (e.empty() ? d : e) + " without its " +
           (e.empty() ? "encoder" : "decoder") + " (" + (e.empty() ? enc : dec) + ")");
  }
  if (std::string p = in("model.onnx"); !p.empty())
    return {p};
  fail("'" + dir + "' holds no model.onnx, encoder.onnx + decoder.onnx or encoder_model.onnx + "
       "decoder_model.onnx");
}

static std::unique_ptr<Module> loadModel(const std::vector<std::string> &paths) {
  const std::string &path = paths[0];
  if (StringRef(path).endswith(".gir")) {
    if (paths.size() != 1)
      fail("a .gir input stands alone");
    auto buf = readRegularFile(path);
    if (!buf)
      fail("cannot read '" + path + "': " + buf.getError().message());
    auto m = check(parseModule((*buf)->getBuffer().str(), path));
    check(verifyModule(*m));
    return m;
  }
  std::vector<std::string> files = paths;
  if (paths.size() == 1 && sys::fs::is_directory(path))
    files = findExportFiles(path);
  if (files.size() == 2) {
    // Encoder + decoder: @encoder and @decoder of one module (derive-plan
    // joins them into @encode / @prefill / @decode_step).
    auto m = std::make_unique<Module>();
    ImportOptions eo, dopts;
    eo.functionName = "encoder";
    dopts.functionName = "decoder";
    check(importOnnxFileInto(*m, files[0], eo, "encoder."));
    check(importOnnxFileInto(*m, files[1], dopts, "decoder."));
    check(verifyModule(*m));
    return m;
  }
  if (files.size() != 1)
    fail("expected one ONNX model, an encoder and a decoder, or an export folder");
  auto m = check(importOnnxFile(files[0]));
  check(verifyModule(*m));
  return m;
}

// The flags' pass list; none given: nothing (opt) or the profile's (compile).
static std::vector<std::string> passesFromFlag() {
  std::vector<std::string> names;
  for (const auto &p : Passes) // `--passes=` (empty) runs none
    if (!p.empty())
      names.push_back(p);
  return names;
}

static void runPasses(Module &m, const std::vector<std::string> &passes) {
  PipelineOptions opts;
  opts.printAfter.insert(PrintAfter.begin(), PrintAfter.end());
  opts.printAfterAll = PrintAfterAll;
  opts.printStream = &std::cerr;
  opts.timings = &Timings;
  check(runPipeline(m, passes, opts));
}

static void writeText(const std::string &text) {
  if (OutputFile == "-") {
    std::cout << text;
    return;
  }
  std::ofstream os(OutputFile, std::ios::binary);
  if (!os)
    fail("cannot write '" + OutputFile + "'");
  os << text;
  if (!os)
    fail("cannot write '" + OutputFile + "'");
}

// The compile options given as flags; each checked as its profile key is.
static CompileProfile flagsProfile() {
  CompileProfile p;
  auto count = [](const cl::opt<int64_t> &flag, std::optional<int64_t> &field) {
    if (!flag.getNumOccurrences())
      return;
    if (std::string why = checkCount(flag); !why.empty())
      fail("--" + flag.ArgStr.str() + " " + why);
    field = flag;
  };
  count(MaxBatch, p.maxBatch);
  count(MaxBeams, p.maxBeams);
  count(MaxLength, p.maxLength);
  count(MaxTokens, p.maxTokens);
  count(MaxSourceLength, p.maxSourceLength);
  count(MaxNewTokens, p.maxNewTokens);
  if (StorageDType.getNumOccurrences()) {
    if (std::string why = checkDType(StorageDType); !why.empty())
      fail("--dtype " + why);
    p.dtype = StorageDType;
  }
  if (CrossKvDType.getNumOccurrences()) {
    if (std::string why = checkCrossKvDType(CrossKvDType); !why.empty())
      fail("--cross-kv-dtype " + why);
    p.crossKvDtype = CrossKvDType;
  }
  if (WeightsFlag.getNumOccurrences()) {
    if (std::string why = checkWeights(WeightsFlag); !why.empty())
      fail("--weights " + why);
    p.weights = WeightsFlag;
  }
  if (GroupSize.getNumOccurrences()) {
    if (std::string why = checkGroupSize(GroupSize); !why.empty())
      fail("--group-size " + why);
    p.groupSize = GroupSize;
  }
  if (QuantizeLmHead.getNumOccurrences())
    p.quantizeLmHead = QuantizeLmHead;
  if (WeightsZeroPoint.getNumOccurrences())
    p.weightsZeroPoint = WeightsZeroPoint;
  if (NbitsAccuracyLevel.getNumOccurrences()) {
    if (std::string why = checkAccuracyLevel(NbitsAccuracyLevel); !why.empty())
      fail("--nbits-accuracy-level " + why);
    p.nbitsAccuracyLevel = NbitsAccuracyLevel;
  }
  if (AttentionHeadsPerBlock.getNumOccurrences()) {
    if (std::string why = checkHeadsPerBlock(AttentionHeadsPerBlock); !why.empty())
      fail("--attention-heads-per-block " + why);
    p.cuda.attentionHeadsPerBlock = AttentionHeadsPerBlock;
  }
  if (AttentionTrace.getNumOccurrences())
    p.cuda.attentionTrace = AttentionTrace;
  if (StepBlocks.getNumOccurrences()) {
    if (std::string why = checkStepBlocks(StepBlocks); !why.empty())
      fail("--step-blocks " + why);
    p.cuda.stepBlocks = StepBlocks;
  }
  if (StepBlocksPerSm.getNumOccurrences()) {
    if (std::string why = checkStepBlocksPerSm(StepBlocksPerSm); !why.empty())
      fail("--step-blocks-per-sm " + why);
    p.cuda.stepBlocksPerSm = StepBlocksPerSm;
  }
  if (StepWarps.getNumOccurrences()) {
    if (std::string why = checkStepWarps(StepWarps); !why.empty())
      fail("--step-warps " + why);
    p.cuda.stepWarps = StepWarps;
  }
  if (GpuArchs.getNumOccurrences()) {
    p.gpuArchs.emplace();
    for (const auto &a : GpuArchs) {
      if (a.empty())
        continue; // `--gpu-arch=`: no GPU kernels
      if (std::string why = checkGpuArchName(a); !why.empty())
        fail("--gpu-arch: " + why);
      p.gpuArchs->push_back(a);
    }
  }
  if (Passes.getNumOccurrences()) {
    p.passes = passesFromFlag();
    for (const auto &name : *p.passes)
      if (std::string why = checkPassName(name); !why.empty())
        fail(why);
  }
  return p;
}

// --dtype: the weights are cast here; the activations' storage follows
// passes/analysis/Storage.h (the plan options carry the dtype). Returns it.
// The scales and float zero points of 4/8-bit matrices keep theirs: they
// are what the codes were quantized against (a GGUF's f16 scales in bf16
// would lose bits).
static DType castWeights(Module &m, const std::string &dtype) {
  auto dt = parseDType(dtype); // checked with the profile
  if (*dt == DType::F32)
    return *dt;
  std::set<const Value *> keep;
  for (auto &f : m.functions())
    for (auto &op : f->ops())
      if (op->is("matmul_nbits"))
        for (size_t i = 2; i < op->numOperands(); ++i)
          keep.insert(op->operand(i));
  for (auto &w : m.weights())
    if (w->data() && isFloat(w->dtype()) && w->dtype() != *dt && !keep.count(w.get())) {
      w->setData(std::make_shared<Tensor>(w->data()->castTo(*dt)));
      Type t = w->type();
      t.dtype = *dt;
      w->setType(t);
    }
  return *dt;
}

// NVRTC compiles every fused group's kernel for each --gpu-arch before the
// plan is written: an unknown architecture or a compiler error stops here,
// naming the kernel, and no plan is written.
struct GpuKernels {
  CudaModule kernels;
  CompiledModule code;
  bool built = false;
};

// `names` empty (no NVRTC, or `gpu_archs: []`): a plan for the CPU executor.
static GpuKernels compileGpuKernels(Module &m, DType activation, const CompileProfile &profile) {
  const std::vector<std::string> &names = *profile.gpuArchs;
  if (names.empty())
    return {};
  auto archs = check(parseGpuArchs(names));
  GpuKernels g;
  g.kernels = emitCuda(m, activation, attentionKernelOptions(profile));
  g.code = check(compileModule(g.kernels, archs, KernelCache::fromSetting(KernelCacheDir)));
  g.built = true;
  return g;
}

// Opened before the model is read: a bad flag fails before a slow import.
// compile always keeps a stream, for its line on the Missed remarks.
static void openRemarks() {
  if (RemarksFile.empty() && RemarksFilter.empty() && !CompileCmd)
    return;
  RemarkOut = check(RemarkStream::open(RemarksFile, RemarksFilter));
}

// `, "name": {"key": value, ...}` (the keys are function, kernel and weight
// names; a weight's comes from the model file, so it is escaped).
template <typename Map> static void writeJsonMap(std::ostream &os, const char *name, const Map &map) {
  os << ", \"" << name << "\": {";
  bool first = true;
  for (auto &[k, v] : map) {
    std::string key;
    raw_string_ostream ks(key);
    ks << json::Value(k);
    os << (first ? "" : ", ") << ks.str() << ": " << v;
    first = false;
  }
  os << "}";
}

// `fromCache`: the architectures whose NVRTC code came from the kernel cache.
static void writeStats(const PlanStats &stats, int fromCache) {
  std::ofstream os(StatsJson);
  os << "{\"weights_bytes\": " << stats.weightsBytes << ", \"decode_weights_bytes\": " << stats.decodeWeightsBytes
     << ", \"kv_cache_bytes\": "
     << stats.kvCacheBytes << ", \"kv_cache_bytes_unshared\": " << stats.kvCacheBytesUnshared
     << ", \"cross_kv_cache_bytes\": " << stats.crossKvCacheBytes
     << ", \"cross_kv_cache_bytes_unshared\": " << stats.crossKvCacheBytesUnshared
     << ", \"arena_bytes\": " << stats.arenaBytes << ", \"nvrtc_archs_from_cache\": " << fromCache;
  writeJsonMap(os, "arena_bytes_by_function", stats.arenaBytesByFunction);
  writeJsonMap(os, "decode_step_launches", stats.decodeStepLaunches);
  writeJsonMap(os, "decode_step_launches_one_row", stats.decodeStepLaunchesOneRow);
  int64_t quantized = 0;
  for (auto &[name, bytes] : stats.quantizedWeights)
    quantized += bytes;
  os << ", \"quantized_weights_bytes\": " << quantized;
  writeJsonMap(os, "quantized_weights", stats.quantizedWeights);
  os << "}\n";
  if (!os)
    fail("cannot write '" + StatsJson + "'");
}

static void writeIr(const Module &m) {
  PrintOptions po;
  po.locations = !NoLocations;
  writeText(moduleToString(m, po));
}

static int runOpt() {
  openRemarks();
  auto m = loadModel({Inputs.begin(), Inputs.end()});
  m->setRemarks(RemarkOut.get());
  runPasses(*m, passesFromFlag());
  writeIr(*m);
  finishRemarks();
  return 0;
}

// derive-plan takes the generation facts (vocabulary, eos / pad / decoder
// start ids, how many positions the model has) from the config.json
// Hugging Face exports beside the model; without one it would fail deep in
// a pass with an interpreter error, so say what is missing first.
static void requireConfig(const std::string &dir, const CompileProfile &given) {
  if (StringRef(Inputs[0]).endswith(".gir"))
    return;
  if (given.passes && std::find(given.passes->begin(), given.passes->end(), "derive-plan") == given.passes->end())
    return;
  SmallString<256> config(dir.empty() ? "." : dir);
  sys::path::append(config, "config.json");
  if (!sys::fs::exists(config))
    fail("'" + (dir.empty() ? std::string(".") : dir) +
         "' holds no config.json: genc reads the model's vocabulary, token ids and positions from the "
         "config.json Hugging Face exports beside the model (tools/export.py writes one)");
}

// The profile file (read first: its errors come before a slow import), the
// flags over it, then the model's defaults.
static int runCompile() {
  progress::enable(!Quiet && (ShowProgress || sys::Process::StandardErrIsDisplayed()));
  CompileProfile given = ProfileFile.empty() ? CompileProfile{} : check(readProfile(ProfileFile));
  // A profile's tokenizer path is relative to the profile (they travel
  // together); made absolute, the plan's embedded profile still finds it.
  if (given.tokenizer && sys::path::is_relative(*given.tokenizer)) {
    SmallString<256> p(sys::path::parent_path(ProfileFile));
    sys::path::append(p, *given.tokenizer);
    sys::fs::make_absolute(p);
    sys::path::remove_dots(p, /*remove_dot_dot=*/true);
    given.tokenizer = p.str().str();
  }
  given.overrideWith(flagsProfile());
  if (!PrintProfile)
    openRemarks();
  // The model's own errors (a missing file, a bad proto) come first.
  auto m = timed("import", [] { return loadModel({Inputs.begin(), Inputs.end()}); });
  std::string dir = sys::fs::is_directory(Inputs[0]) ? Inputs[0]
                                                     : sys::path::parent_path(Inputs[0]).str();
  requireConfig(dir, given);
  check(loadModelConfig(dir, *m));
  CompileProfile profile = check(resolveProfile(given, *m, Emit == EmitKind::IR));
  if (PrintProfile) {
    outs() << profileYaml(profile);
    return 0;
  }
  if (Emit == EmitKind::Plan && OutputFile == "-")
    fail("a plan is binary: give -o FILE (or --emit=ir to print the IR)");
  applyProfile(profile, *m);
  m->setRemarks(RemarkOut.get());
  runPasses(*m, *profile.passes);
  if (Emit == EmitKind::IR) {
    writeIr(*m);
  } else if (Emit == EmitKind::Cuda) {
    DType activation = castWeights(*m, *profile.dtype);
    writeText(cudaModuleText(emitCuda(*m, activation, attentionKernelOptions(profile))));
  } else {
    PlanParts parts;
    parts.activation = timed("cast-weights", [&] { return castWeights(*m, *profile.dtype); });
    GpuKernels gpu = timed("nvrtc", [&] { return compileGpuKernels(*m, parts.activation, profile); });
    if (gpu.built) {
      parts.kernels = &gpu.kernels;
      parts.code = &gpu.code;
    }
    parts.profile = profileYaml(profile);
    std::optional<PlanTokenizer> tokenizer;
    if (!NoTokenizer) {
      // The profile's `tokenizer` names a tokenizer.json or its folder;
      // unset, the one beside the model is packed when there is one.
      std::string from = dir;
      if (profile.tokenizer)
        from = sys::fs::is_directory(*profile.tokenizer) ? *profile.tokenizer
                                                         : sys::path::parent_path(*profile.tokenizer).str();
      if (profile.tokenizer && !sys::fs::exists(*profile.tokenizer))
        fail("tokenizer '" + *profile.tokenizer + "' does not exist");
      tokenizer = check(findTokenizer(from.empty() ? "." : from));
      if (profile.tokenizer && !tokenizer)
        fail("tokenizer '" + *profile.tokenizer + "' holds no tokenizer.json");
    }
    parts.tokenizer = tokenizer ? &*tokenizer : nullptr;
    PlanStats stats = timed("write-plan", [&] { return check(writePlan(*m, OutputFile, parts)); });
    if (!StatsJson.empty())
      writeStats(stats, gpu.code.fromCache);
  }
  finishRemarks();
  printTimeReport();
  return 0;
}

static int runEval() {
  if (OutputDir.empty())
    fail("eval needs --output-dir");
  auto m = loadModel({Inputs.begin(), Inputs.end()});
  runPasses(*m, passesFromFlag());
  const Function &f = *m->functions().front();
  std::map<std::string, Tensor> given;
  for (const auto &spec : EvalInputs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos)
      fail("--input expects NAME=FILE.npy, got '" + spec + "'");
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    if (!f.argument(name))
      fail("--input " + name + ": the model has no input named '" + name + "'");
    auto t = readNpy(file);
    if (!t)
      fail("--input " + name + ": " + toString(t.takeError()));
    if (auto e = checkArgumentType(*f.argument(name), *t))
      fail("--input " + name + ": " + toString(std::move(e)));
    if (given.count(name))
      fail("--input " + name + ": given twice");
    given[name] = std::move(*t);
  }
  std::vector<Tensor> inputs;
  for (auto &a : f.arguments()) {
    auto it = given.find(a->name());
    if (it == given.end())
      fail("missing --input for graph input '" + a->name() + "' (" + a->type().str() + ")");
    inputs.push_back(it->second);
  }
  // Symbols shared between inputs (batch, seq) must agree: say which input is off.
  check(bindArguments(f, inputs, [](const Value &a) { return "--input " + a.name(); })
            .takeError());
  auto outputs = check(interpret(*m, f, inputs));
  if (auto ec = sys::fs::create_directories(OutputDir))
    fail("cannot create '" + OutputDir + "': " + ec.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    SmallString<256> path(OutputDir);
    std::string fileName = f.outputs()[i].name;
    for (char &c : fileName)
      if (c == '/' || c == '\\')
        c = '_';
    sys::path::append(path, fileName + ".npy");
    check(writeNpy(path.str().str(), outputs[i]));
  }
  return 0;
}

// What a plan holds, read back with the runtime's verifying loader.
static int runInspect() {
  if (Inputs.size() != 1)
    fail("inspect takes one plan file");
  genrt::Plan plan;
  if (genrt::Status st = genrt::loadPlan(Inputs[0], plan); !st)
    fail(st.message());
  auto &os = outs();
  if (PrintProfile) {
    if (plan.profile.empty())
      fail("plan '" + Inputs[0] + "' holds no profile (compiled before genc recorded them)");
    os << plan.profile;
    return 0;
  }
  if (PrintStepSchedule) {
    os << genrt::printStepSchedule(plan.step, /*blocks=*/true);
    return 0;
  }
  os << "plan: " << Inputs[0] << " (format " << genrt::kPlanFormatVersion << ")\n";
  os << "activation dtype: " << genrt::dtypeName(plan.activationDType) << "\n";
  os << "programs: " << plan.programs.size() << "\n";
  for (const auto &[name, p] : plan.programs)
    os << "  " << name << "  ops " << p.ops.size() << "  arena " << p.arenaBytes << " bytes\n";
  std::set<std::string> withKernel;
  for (const auto &k : plan.kernels)
    withKernel.insert(k.name);
  os << "functions: " << plan.functions.size() << "\n";
  for (const auto &[name, f] : plan.functions)
    os << "  " << name << "  ops " << f.ops.size() << "  inputs " << f.arguments.size() << "  outputs "
       << f.outputs.size() << (withKernel.count(name) ? "  kernel" : "  cpu only") << "\n";
  std::string archs;
  for (const auto &c : plan.cubins)
    archs += (archs.empty() ? "" : ", ") + c.arch;
  os << "kernels: " << plan.kernels.size() << " (archs: " << (archs.empty() ? "none" : archs) << ")\n";
  for (const auto &k : plan.kernels) {
    os << "  " << k.name << "  " << k.mode << "  block " << k.blockSize << "  work " << k.work.str();
    if (k.mode == "rows")
      os << "  shared " << k.sharedFloats.str() << " floats";
    auto dtypes = [](const std::vector<genrt::DType> &l) {
      std::string s;
      for (genrt::DType t : l)
        s += (s.empty() ? "" : ",") + std::string(genrt::dtypeName(t));
      return s;
    };
    os << "  (" << dtypes(k.inputDTypes) << ") -> (" << dtypes(k.outputDTypes) << ")\n";
  }
  for (const auto &c : plan.cubins)
    os << "cubin " << c.arch << "  " << c.bytes << " bytes\n";
  for (const auto &c : plan.ptx)
    os << "ptx " << c.arch << "  " << c.bytes << " bytes\n";
  os << genrt::printStepSchedule(plan.step, /*blocks=*/false);
  const genrt::ModelInfo &mi = plan.model;
  os << "generation defaults: eos_token_id [";
  for (size_t i = 0; i < mi.eosTokenIds.size(); ++i)
    os << (i ? ", " : "") << mi.eosTokenIds[i];
  os << "], pad_token_id " << mi.padTokenId << ", bos_token_id " << mi.bosTokenId
     << ", decoder_start_token_id " << mi.decoderStartTokenId << "\n";
  if (plan.profile.empty()) {
    os << "profile: none (compiled before genc recorded profiles)\n";
  } else {
    os << "profile (genc inspect --print-profile writes it alone):\n";
    for (StringRef line : split(StringRef(plan.profile).rtrim('\n'), '\n'))
      os << "  " << line << "\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(GencCat);
  cl::ParseCommandLineOptions(argc, argv,
                              "genc: ahead-of-time compiler for Transformer text generation\n");
  if (ListPasses) {
    for (const auto &p : allPasses())
      outs() << p.name << "\t" << p.summary << "\n";
    return 0;
  }
  if (CompileCmd)
    return runCompile();
  if (OptCmd)
    return runOpt();
  if (EvalCmd)
    return runEval();
  if (InspectCmd)
    return runInspect();
  errs() << "genc: error: expected a command: compile, opt, eval or inspect (see genc --help)\n";
  return 1;
}
