// genc: the compiler driver. A thin main over the compiler libraries.
//
//   genc compile model.onnx -o model.plan [--emit=ir] [--passes=a,b] [--print-ir-after=P]
//   genc opt input.gir [--passes=a,b] [-o out.gir]
//   genc eval model.onnx --input input_ids=ids.npy ... --output-dir DIR
//   genc compile model.onnx --emit=cuda -o -     (the fused groups' CUDA C++)
//   genc inspect model.plan                      (programs, functions, kernels, archs, sizes)
#include "codegen/CudaEmitter.h"
#include "codegen/NvrtcCompile.h"
#include "codegen/PlanWriter.h"
#include "compiler/driver/ModelConfig.h"
#include "compiler/driver/Pipeline.h"
#include "compiler/driver/TokenizerFiles.h"
#include "passes/analysis/PlanOptions.h"
#include "compiler/interp/Interpreter.h"
#include "compiler/interp/Npy.h"
#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/Importer.h"
#include "passes/PassRegistry.h"
#include "runtime/PlanFormat.h"
#include "runtime/Program.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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
static cl::opt<int64_t> MaxTokens("max-tokens",
                                  cl::desc("Prompt tokens per prefill step; longer prompt batches are prefilled in chunks "
                                           "(default: max-batch x max-length, at most 2048)"),
                                  cl::init(0), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::opt<std::string> StorageDType("dtype",
                                         cl::desc("Storage of weights and activations on the GPU: f32 (default), "
                                                  "f16 or bf16 (math stays fp32; logits stay f32)"),
                                         cl::init("f32"), cl::sub(CompileCmd), cl::cat(GencCat));
static cl::list<std::string> GpuArchs("gpu-arch", cl::CommaSeparated,
                                      cl::desc("GPU architectures to compile kernels for (default sm_80,sm_90)"),
                                      cl::value_desc("sm_XX,..."), cl::sub(CompileCmd), cl::cat(GencCat));
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
static cl::opt<bool> ListPasses("list-passes", cl::desc("List the known passes and exit"),
                                cl::sub(*cl::AllSubCommands), cl::cat(GencCat));

[[noreturn]] static void fail(const std::string &msg) {
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
    auto buf = MemoryBuffer::getFile(path);
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

static std::vector<std::string> pipelineFor(bool defaultStandard) {
  if (Passes.getNumOccurrences()) { // `--passes=` (empty) runs none
    std::vector<std::string> names;
    for (const auto &p : Passes)
      if (!p.empty())
        names.push_back(p);
    return names;
  }
  if (!defaultStandard)
    return {};
  return CompileCmd && Emit == EmitKind::IR ? graphPipeline() : defaultPipeline();
}

static void runPasses(Module &m, bool defaultStandard) {
  PipelineOptions opts;
  opts.printAfter.insert(PrintAfter.begin(), PrintAfter.end());
  opts.printAfterAll = PrintAfterAll;
  opts.printStream = &std::cerr;
  check(runPipeline(m, pipelineFor(defaultStandard), opts));
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

static void setPlanOptionsFromFlags(Module &m) {
  PlanOptions o;
  auto positive = [](const char *flag, int64_t v) {
    if (v <= 0 || v > (int64_t(1) << 24))
      fail(std::string("--") + flag + " must be a positive integer (got " + std::to_string(v) + ")");
    return v;
  };
  o.maxBatch = positive("max-batch", MaxBatch);
  o.maxBeams = positive("max-beams", MaxBeams);
  int64_t modelMax = 0;
  for (const char *k : {"config.max_position_embeddings", "config.n_positions"})
    if (auto it = m.metadata().find(k); it != m.metadata().end() && !modelMax)
      modelMax = std::atoll(it->second.c_str());
  if (MaxLength.getNumOccurrences()) {
    o.maxLength = positive("max-length", MaxLength);
  } else {
    o.maxLength = modelMax > 0 ? std::min<int64_t>(modelMax, 2048) : 2048;
  }
  o.maxTokens = MaxTokens.getNumOccurrences() ? positive("max-tokens", MaxTokens) : 0;
  setPlanOptions(m, o);
}

// --dtype: the weights are cast here; the activations' storage is the
// kernels' and the plan's business (codegen/KernelStorage.h). Returns it.
static DType castWeights(Module &m) {
  auto dt = parseDType(StorageDType);
  if (!dt || (*dt != DType::F32 && *dt != DType::F16 && *dt != DType::BF16))
    fail("--dtype must be f32, f16 or bf16 (got '" + StorageDType + "')");
  if (*dt == DType::F32)
    return *dt;
  for (auto &w : m.weights())
    if (w->data() && isFloat(w->dtype()) && w->dtype() != *dt) {
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

static GpuKernels compileGpuKernels(const Module &m, DType activation) {
  std::vector<std::string> names(GpuArchs.begin(), GpuArchs.end());
  if (names.empty())
    names = {"sm_80", "sm_90"};
  auto archs = check(parseGpuArchs(names));
  if (!haveNvrtc()) {
    if (GpuArchs.getNumOccurrences())
      fail("--gpu-arch: genc was built without CUDA (NVRTC), it cannot compile kernels");
    return {}; // the plan runs on the CPU executor
  }
  GpuKernels g;
  g.kernels = emitCuda(m, activation);
  g.code = check(compileModule(g.kernels, archs));
  g.built = true;
  return g;
}

static int runCompileOrOpt(bool isCompile) {
  auto m = loadModel({Inputs.begin(), Inputs.end()});
  std::optional<PlanTokenizer> tokenizer;
  if (isCompile) {
    std::string dir = sys::fs::is_directory(Inputs[0]) ? Inputs[0]
                                                       : sys::path::parent_path(Inputs[0]).str();
    check(loadModelConfig(dir, *m));
    setPlanOptionsFromFlags(*m);
    if (!NoTokenizer)
      tokenizer = check(findTokenizer(dir));
  }
  runPasses(*m, isCompile);
  if (isCompile && Emit == EmitKind::Cuda) {
    DType activation = castWeights(*m);
    writeText(cudaModuleText(emitCuda(*m, activation)));
    return 0;
  }
  if (isCompile && Emit == EmitKind::Plan) {
    if (OutputFile == "-")
      fail("a plan is binary: give -o FILE (or --emit=ir to print the IR)");
    DType activation = castWeights(*m);
    GpuKernels gpu = compileGpuKernels(*m, activation);
    const PlanTokenizer *tok = tokenizer ? &*tokenizer : nullptr;
    auto stats = check(gpu.built ? writePlan(*m, OutputFile, activation, &gpu.kernels, &gpu.code, tok)
                                 : writePlan(*m, OutputFile, activation, nullptr, nullptr, tok));
    if (!StatsJson.empty()) {
      std::ofstream os(StatsJson);
      os << "{\"weights_bytes\": " << stats.weightsBytes << ", \"kv_cache_bytes\": "
         << stats.kvCacheBytes << ", \"cross_kv_cache_bytes\": " << stats.crossKvCacheBytes
         << ", \"arena_bytes\": " << stats.arenaBytes
         << ", \"arena_bytes_by_function\": {";
      bool first = true;
      for (auto &[k, v] : stats.arenaBytesByFunction) {
        os << (first ? "" : ", ") << "\"" << k << "\": " << v;
        first = false;
      }
      os << "}, \"decode_step_launches\": {";
      first = true;
      for (auto &[k, v] : stats.decodeStepLaunches) {
        os << (first ? "" : ", ") << "\"" << k << "\": " << v;
        first = false;
      }
      os << "}}\n";
      if (!os)
        fail("cannot write '" + StatsJson + "'");
    }
    return 0;
  }
  PrintOptions po;
  po.locations = !NoLocations;
  writeText(moduleToString(*m, po));
  return 0;
}

static int runEval() {
  if (OutputDir.empty())
    fail("eval needs --output-dir");
  auto m = loadModel({Inputs.begin(), Inputs.end()});
  runPasses(*m, /*defaultStandard=*/false);
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
    return runCompileOrOpt(true);
  if (OptCmd)
    return runCompileOrOpt(false);
  if (EvalCmd)
    return runEval();
  if (InspectCmd)
    return runInspect();
  errs() << "genc: error: expected a command: compile, opt, eval or inspect (see genc --help)\n";
  return 1;
}
