// Compiled with -fno-rtti (it defines an LLVM pass, and Debian's LLVM is
// built without RTTI).
#include "devices/cpu/cpu_jit.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "jit/codegen/cpu/cpu_kernel_emitter.h"
#include "jit/codegen/kernel_runtime.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/IRCompileLayer.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

namespace jitd::cpu {
namespace {

// Runs last in the O2 pipeline: in kernels the emitter marked for streaming
// stores (codegen::kStreamStoresAttr), a vector store whose address is a
// multiple of 64 bytes away from a pointer an llvm.assume declares 64-byte
// aligned (by ScalarEvolution: a constant, or an affine recurrence of
// constant start and step) becomes aligned and !nontemporal, which x86
// lowers to vmovntps / vmovntdq. LLVM's AlignmentFromAssumptions does not
// serve here: it follows the assumed pointer's users only, and instcombine
// rewrites the loop's addresses off that pointer. Unproven stores stay
// ordinary stores.
struct MarkStreamingStores : llvm::PassInfoMixin<MarkStreamingStores> {
  static constexpr int64_t kAlign = 64;

  static bool MultipleOfAlign(const llvm::SCEV* s, llvm::ScalarEvolution& se) {
    auto constant_multiple = [](const llvm::SCEV* c) {
      const auto* k = llvm::dyn_cast<llvm::SCEVConstant>(c);
      return k && k->getAPInt().getSExtValue() % kAlign == 0;
    };
    if (constant_multiple(s)) return true;
    const auto* rec = llvm::dyn_cast<llvm::SCEVAddRecExpr>(s);
    return rec && rec->isAffine() && constant_multiple(rec->getStart()) &&
           constant_multiple(rec->getStepRecurrence(se));
  }

  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam) {
    if (!f.hasFnAttribute(codegen::kStreamStoresAttr)) return llvm::PreservedAnalyses::all();
    // Pointers declared kAlign-aligned by `assume [ "align"(ptr, kAlign) ]`.
    std::vector<std::pair<llvm::Instruction*, llvm::Value*>> aligned;
    for (llvm::BasicBlock& block : f) {
      for (llvm::Instruction& inst : block) {
        auto* assume = llvm::dyn_cast<llvm::AssumeInst>(&inst);
        if (!assume) continue;
        for (unsigned i = 0; i < assume->getNumOperandBundles(); ++i) {
          const llvm::OperandBundleUse bundle = assume->getOperandBundleAt(i);
          if (bundle.getTagName() != "align" || bundle.Inputs.size() != 2) continue;
          const auto* align = llvm::dyn_cast<llvm::ConstantInt>(bundle.Inputs[1]);
          if (align && align->getZExtValue() == kAlign) aligned.emplace_back(assume, bundle.Inputs[0]);
        }
      }
    }
    if (aligned.empty()) return llvm::PreservedAnalyses::all();
    auto& se = fam.getResult<llvm::ScalarEvolutionAnalysis>(f);
    auto& dt = fam.getResult<llvm::DominatorTreeAnalysis>(f);
    const llvm::DataLayout& dl = f.getParent()->getDataLayout();
    llvm::MDNode* one = llvm::MDNode::get(
        f.getContext(), llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(f.getContext()), 1)));
    bool changed = false;
    for (llvm::BasicBlock& block : f) {
      for (llvm::Instruction& inst : block) {
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        if (!store || !store->getValueOperand()->getType()->isVectorTy()) continue;
        const uint64_t bytes = dl.getTypeStoreSize(store->getValueOperand()->getType()).getFixedValue();
        if (bytes < 16 || bytes > static_cast<uint64_t>(kAlign)) continue;
        const llvm::SCEV* address = se.getSCEV(store->getPointerOperand());
        for (const auto& [assume, pointer] : aligned) {
          if (!dt.dominates(assume, store)) continue;
          const llvm::SCEV* diff = se.getMinusSCEV(address, se.getSCEV(pointer));
          if (llvm::isa<llvm::SCEVCouldNotCompute>(diff) || !MultipleOfAlign(diff, se)) continue;
          store->setAlignment(llvm::Align(kAlign));
          store->setMetadata(llvm::LLVMContext::MD_nontemporal, one);
          changed = true;
          break;
        }
      }
    }
    if (!changed) return llvm::PreservedAnalyses::all();
    llvm::PreservedAnalyses kept;
    kept.preserveSet<llvm::CFGAnalyses>();
    return kept;
  }
};

Status FromLlvm(llvm::Error error, const std::string& what) {
  return Internal(what + ": " + llvm::toString(std::move(error)));
}

// glibc's libmvec variants (SSE 'b', AVX2 'd', AVX-512 'e') for the libm
// functions the emitter calls. LLVM 19's own LIBMVEC_X86 table covers only
// sin/cos/exp/log/pow up to AVX2; this one adds tanh & co and AVX-512.
const std::vector<llvm::VecDesc>& LibmvecMappings() {
  static const std::vector<llvm::VecDesc>* mappings = [] {
    static std::deque<std::string> names;  // VecDesc holds StringRefs
    auto* out = new std::vector<llvm::VecDesc>;
    const char* unary[] = {"sin",  "cos",   "tan",   "exp",   "log",   "tanh", "expm1",
                           "log1p", "asin", "acos",  "atan",  "asinh", "acosh", "atanh",
                           "erf",  "erfc",  "cbrt",  "sinh",  "cosh",  "exp2",  "log2", "log10"};
    struct Isa { char letter; int f64_lanes; };
    const Isa isas[] = {{'b', 2}, {'d', 4}, {'e', 8}};
    auto add = [&](const std::string& scalar, const std::string& vector, int lanes, const char* params) {
      names.push_back(scalar);
      const std::string& s = names.back();
      names.push_back(vector);
      const std::string& v = names.back();
      names.push_back("_ZGV_LLVM_N" + std::to_string(lanes) + params);
      out->emplace_back(s, v, llvm::ElementCount::getFixed(static_cast<unsigned>(lanes)), false,
                        names.back());
    };
    for (const Isa& isa : isas) {
      for (const char* f : unary) {
        const std::string fn(f);
        add(fn, std::string("_ZGV") + isa.letter + "N" + std::to_string(isa.f64_lanes) + "v_" + fn,
            isa.f64_lanes, "v");
        add(fn + "f",
            std::string("_ZGV") + isa.letter + "N" + std::to_string(2 * isa.f64_lanes) + "v_" + fn + "f",
            2 * isa.f64_lanes, "v");
      }
      for (const char* f : {"pow", "atan2"}) {
        const std::string fn(f);
        add(fn, std::string("_ZGV") + isa.letter + "N" + std::to_string(isa.f64_lanes) + "vv_" + fn,
            isa.f64_lanes, "vv");
        add(fn + "f",
            std::string("_ZGV") + isa.letter + "N" + std::to_string(2 * isa.f64_lanes) + "vv_" + fn + "f",
            2 * isa.f64_lanes, "vv");
      }
    }
    return out;
  }();
  return *mappings;
}

// Counts what JITLink allocates for each JITDylib's code and data: the
// standard-lifetime sections of every graph linked into it, grouped by
// protection (each group gets pages of its own), each group rounded up to
// whole pages. Finalize-lifetime sections are freed once linked, and
// metadata (no-alloc) sections are never allocated.
class LinkedBytesPlugin final : public llvm::orc::ObjectLinkingLayer::Plugin {
 public:
  explicit LinkedBytesPlugin(uint64_t page_size) : page_size_(page_size) {}

  void modifyPassConfig(llvm::orc::MaterializationResponsibility& mr, llvm::jitlink::LinkGraph&,
                        llvm::jitlink::PassConfiguration& config) override {
    const llvm::orc::JITDylib* jd = &mr.getTargetJITDylib();
    config.PostAllocationPasses.push_back([this, jd](llvm::jitlink::LinkGraph& graph) {
      std::map<llvm::orc::MemProt, uint64_t> by_prot;
      for (llvm::jitlink::Section& section : graph.sections()) {
        if (section.getMemLifetime() != llvm::orc::MemLifetime::Standard) continue;
        uint64_t& bytes = by_prot[section.getMemProt()];
        for (const llvm::jitlink::Block* block : section.blocks()) {
          bytes = llvm::alignTo(bytes, block->getAlignment()) + block->getSize();
        }
      }
      uint64_t total = 0;
      for (const auto& [prot, bytes] : by_prot) total += llvm::alignTo(bytes, page_size_);
      std::lock_guard<std::mutex> lock(mu_);
      bytes_[jd] += total;
      return llvm::Error::success();
    });
  }
  llvm::Error notifyFailed(llvm::orc::MaterializationResponsibility&) override { return llvm::Error::success(); }
  llvm::Error notifyRemovingResources(llvm::orc::JITDylib& jd, llvm::orc::ResourceKey) override {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_.erase(&jd);
    return llvm::Error::success();
  }
  void notifyTransferringResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey, llvm::orc::ResourceKey) override {}

  // The bytes linked into `jd` so far; forgets them.
  uint64_t Take(const llvm::orc::JITDylib* jd) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = bytes_.find(jd);
    if (it == bytes_.end()) return 0;
    const uint64_t bytes = it->second;
    bytes_.erase(it);
    return bytes;
  }

 private:
  const uint64_t page_size_;
  std::mutex mu_;
  std::map<const llvm::orc::JITDylib*, uint64_t> bytes_;
};

}  // namespace

struct CpuJit::State {
  CpuJitOptions options;
  // Builds a target machine per compile (a TargetMachine is not shared
  // between threads).
  std::optional<llvm::orc::JITTargetMachineBuilder> jtmb;
  // Unique across JITs in the process (module ids name the dump files).
  static inline std::atomic<uint64_t> counter{0};
  // Sizes of linked code and data (null when the JIT links with RuntimeDyld).
  std::shared_ptr<LinkedBytesPlugin> linked_bytes;
  // JITDylibs removed (JitCode destroyed), for the symbol pool sweep.
  std::atomic<uint64_t> removals{0};
  static constexpr uint64_t kRemovalsPerPoolSweep = 64;

  static std::string Print(const llvm::Module& m) {
    std::string text;
    llvm::raw_string_ostream os(text);
    m.print(os, nullptr);
    return text;
  }

  // The assembly of the optimized module (a copy goes through the target's
  // code generator a second time; only when dumping).
  static std::string Assembly(const llvm::Module& m, llvm::TargetMachine& tm) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
    llvm::SmallString<0> text;
    llvm::raw_svector_ostream os(text);
    llvm::legacy::PassManager pm;
    if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
      return "; the target cannot emit assembly\n";
    }
    pm.run(*copy);
    return std::string(text.str());
  }

  static void WriteFile(const std::string& path, const std::string& text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec) os << text;
  }

  // O2 on `m` with `tm` as the cost model.
  static void Optimize(llvm::Module& m, llvm::TargetMachine& tm) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    // Kernels are memory-bound loops: one vector accumulator keeps up with
    // memory, and interleaving / unrolling only multiply the code (and the
    // compile time: ~2x on the models).
    pto.LoopInterleaving = false;
    pto.LoopUnrolling = false;
    llvm::PassBuilder pb(&tm, pto);
    llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
    tlii.addVectorizableFunctions(LibmvecMappings());
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
      mpm.addPass(llvm::createModuleToFunctionPassAdaptor(MarkStreamingStores()));
    });
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(m, mam);
  }

  // One partition of a program: optimized, then compiled to an object file.
  struct Part {
    std::unique_ptr<llvm::LLVMContext> context;
    std::unique_ptr<llvm::Module> module;
    std::string object;
    std::string optimized_ir, assembly;  // when dumping
    Status status = Status::Ok();
    double optimize_ms = 0, codegen_ms = 0;
  };

  void Compile(Part& part, bool dump) const {
    llvm::orc::JITTargetMachineBuilder builder = *jtmb;  // a copy per thread
    auto tm = builder.createTargetMachine();
    if (!tm) {
      part.status = FromLlvm(tm.takeError(), "cannot create the host target machine");
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    Optimize(*part.module, **tm);
    const auto optimized = std::chrono::steady_clock::now();
    if (dump) {
      part.optimized_ir = Print(*part.module);
      part.assembly = Assembly(*part.module, **tm);
    }
    auto object = llvm::orc::SimpleCompiler(**tm)(*part.module);
    if (!object) {
      part.status = FromLlvm(object.takeError(), "cannot compile the program's module");
      return;
    }
    part.object = (*object)->getBuffer().str();
    part.optimize_ms = std::chrono::duration<double, std::milli>(optimized - start).count();
    part.codegen_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - optimized).count();
  }

  // `m` cut into up to `n` modules, each in its own context (so they compile
  // concurrently), by llvm::SplitModule: internal functions (a kernel's
  // .body) stay with their callers, partitions balanced by size. One part
  // (the module itself) when it is too small to be worth splitting.
  static std::vector<Part> Partition(std::unique_ptr<llvm::Module> m, std::unique_ptr<llvm::LLVMContext> context,
                                     int n) {
    std::vector<Part> parts;
    int64_t kernels = 0;
    for (const llvm::Function& f : *m) {
      if (!f.isDeclaration() && f.hasExternalLinkage()) ++kernels;
    }
    n = static_cast<int>(std::min<int64_t>(n, kernels / kMinFunctionsPerPart));
    if (n <= 1) {
      Part whole;
      whole.context = std::move(context);
      whole.module = std::move(m);
      parts.push_back(std::move(whole));
      return parts;
    }
    const std::string id = m->getModuleIdentifier();
    llvm::SplitModule(*m, static_cast<unsigned>(n), [&](std::unique_ptr<llvm::Module> piece) {
      llvm::SmallVector<char, 0> bitcode;
      llvm::raw_svector_ostream os(bitcode);
      llvm::WriteBitcodeToFile(*piece, os);
      Part part;
      part.context = std::make_unique<llvm::LLVMContext>();
      auto parsed = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), id), *part.context);
      if (!parsed) {
        part.status = FromLlvm(parsed.takeError(), "cannot split the program's module");
      } else {
        part.module = std::move(*parsed);
        part.module->setModuleIdentifier(id + ".part" + std::to_string(parts.size()));
      }
      parts.push_back(std::move(part));
    }, /*PreserveLocals=*/true);
    m.reset();  // before its context
    context.reset();
    return parts;
  }

  // Programs with fewer external functions per part than this compile as
  // one module (each module costs a few ms of fixed work).
  static constexpr int64_t kMinFunctionsPerPart = 8;
};

JitCode::~JitCode() {
  if (release_) release_();
}

CpuJit::~CpuJit() = default;

StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create(const CpuJitOptions& options) {
  static std::once_flag init_once;
  std::call_once(init_once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // libmvec's vector functions, for the JIT's process symbol lookup.
    llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
    // A vectorized remainder loop behind the vectorized main loop doubles
    // the code of every kernel for little gain on long loops.
    const char* argv[] = {"jitd", "-enable-epilogue-vectorization=false"};
    llvm::cl::ParseCommandLineOptions(2, argv);
  });
  std::unique_ptr<CpuJit> jit(new CpuJit());
  jit->state_ = std::make_unique<State>();
  jit->state_->options = options;
  jit->cpu_name_ = llvm::sys::getHostCPUName().str();
  llvm::SubtargetFeatures features;
  for (const auto& [name, enabled] : llvm::sys::getHostCPUFeatures()) {
    features.AddFeature(name, enabled);
  }
  jit->cpu_features_ = features.getString();

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(llvm::sys::getProcessTriple())};
  jtmb.setCPU(jit->cpu_name_);
  jtmb.addFeatures(features.getFeatures());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  if (auto tm = jtmb.createTargetMachine(); !tm) {
    return FromLlvm(tm.takeError(), "cannot create the host target machine");
  }
  jit->state_->jtmb = jtmb;
  // Modules are optimized and compiled to objects by AddModule (on its own
  // threads); the JIT links those objects and resolves symbols.
  // No platform: kernels have no static initializers, and LLJIT's default
  // (generic IR) platform gives every JITDylib an LLVM context and module of
  // its own that live until the JITDylib is removed.
  auto built = llvm::orc::LLJITBuilder()
                   .setJITTargetMachineBuilder(jtmb)
                   .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                   .create();
  if (!built) return FromLlvm(built.takeError(), "cannot create the LLVM JIT");
  jit->jit_ = std::move(*built);
  if (auto* linking = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&jit->jit_->getObjLinkingLayer())) {
    jit->state_->linked_bytes = std::make_shared<LinkedBytesPlugin>(
        jit->jit_->getExecutionSession().getExecutorProcessControl().getPageSize());
    linking->addPlugin(jit->state_->linked_bytes);
  }
  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit->jit_->getDataLayout().getGlobalPrefix());
  if (!generator) return FromLlvm(generator.takeError(), "cannot search the process's symbols");
  jit->jit_->getMainJITDylib().addGenerator(std::move(*generator));
  // jit/eval's per-element math, which kernels call by name (not exported
  // from the executable, so not found by the process search above).
  llvm::orc::SymbolMap runtime;
  for (const auto& [name, address] : codegen::KernelRuntimeSymbols()) {
    runtime[jit->jit_->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                                 llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  }
  if (llvm::Error e = jit->jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime)))) {
    return FromLlvm(std::move(e), "cannot define the kernels' runtime functions");
  }
  return jit;
}

std::unique_ptr<llvm::Module> CpuJit::NewModule(const std::string& name,
                                                llvm::LLVMContext& context) const {
  auto module = std::make_unique<llvm::Module>(name, context);
  module->setDataLayout(jit_->getDataLayout());
  module->setTargetTriple(jit_->getTargetTriple().str());
  return module;
}

StatusOr<std::unique_ptr<JitCode>> CpuJit::Resolve(std::function<void()> release, void* dylib,
                                                   const std::vector<std::string>& symbols) {
  auto& jd = *static_cast<llvm::orc::JITDylib*>(dylib);
  auto code = std::make_unique<JitCode>();
  code->release_ = std::move(release);
  for (const std::string& name : symbols) {
    auto address = jit_->lookup(jd, name);
    if (!address) return FromLlvm(address.takeError(), "cannot resolve kernel '" + name + "'");
    code->addresses_.push_back(address->toPtr<void*>());
  }
  // Every object defines a symbol looked up above, so all are linked now.
  if (state_->linked_bytes) code->code_bytes_ = state_->linked_bytes->Take(&jd);
  return code;
}

StatusOr<std::unique_ptr<JitCode>> CpuJit::AddModule(std::unique_ptr<llvm::Module> module,
                                                     std::unique_ptr<llvm::LLVMContext> context,
                                                     const std::vector<std::string>& symbols,
                                                     LlvmDumps* dumps) {
  const uint64_t n = state_->counter.fetch_add(1);
  const std::string id = "jitd_program_" + std::to_string(n);
  module->setModuleIdentifier(id);
  LlvmDumps local;
  if (!dumps && !state_->options.dump_dir.empty()) dumps = &local;
  if (dumps) dumps->ir = State::Print(*module);
  const auto start = std::chrono::steady_clock::now();
  std::vector<State::Part> parts =
      State::Partition(std::move(module), std::move(context), std::max(1, state_->options.compile_threads));
  // Part 0 on this thread, the others on their own.
  std::vector<std::thread> threads;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].status.ok()) threads.emplace_back([&, i] { state_->Compile(parts[i], dumps != nullptr); });
  }
  if (parts[0].status.ok()) state_->Compile(parts[0], dumps != nullptr);
  for (std::thread& t : threads) t.join();
  std::vector<std::string> objects;
  for (State::Part& part : parts) {
    JITD_RETURN_IF_ERROR(part.status);
    objects.push_back(std::move(part.object));
  }
  if (std::getenv("JITD_CPU_TIMING")) {
    for (const State::Part& part : parts) {
      std::fprintf(stderr, "cpu jit: %s part of %zu: optimized in %.1f ms, compiled in %.1f ms\n", id.c_str(),
                   parts.size(), part.optimize_ms, part.codegen_ms);
    }
    std::fprintf(stderr, "cpu jit: %s in %.1f ms\n", id.c_str(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (dumps) {
    dumps->optimized_ir.clear();
    dumps->assembly.clear();
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts.size() > 1) {
        const std::string header = "; ---- part " + std::to_string(i) + " of " + std::to_string(parts.size()) +
                                   " (compiled concurrently)\n";
        dumps->optimized_ir += header;
        dumps->assembly += "#" + header.substr(1);
      }
      dumps->optimized_ir += parts[i].optimized_ir;
      dumps->assembly += parts[i].assembly;
    }
    if (!state_->options.dump_dir.empty()) {
      const std::string base = state_->options.dump_dir + "/" + id;
      State::WriteFile(base + ".ll", dumps->ir);
      State::WriteFile(base + ".opt.ll", dumps->optimized_ir);
      State::WriteFile(base + ".s", dumps->assembly);
    }
  }
  return AddObjects(objects, symbols);
}

StatusOr<std::unique_ptr<JitCode>> CpuJit::AddObjects(const std::vector<std::string>& objects,
                                                      const std::vector<std::string>& symbols) {
  const uint64_t n = state_->counter.fetch_add(1);
  const std::string id = "jitd_object_" + std::to_string(n);
  auto created = jit_->createJITDylib(id);
  if (!created) return FromLlvm(created.takeError(), "cannot create a JITDylib");
  llvm::orc::JITDylibSP jd(&*created);
  jd->addToLinkOrder(jit_->getMainJITDylib());
  // Removing the JITDylib frees all it holds: the linked code and data
  // (JITLink's allocations, EH frames deregistered), its symbol table and
  // materialization state; then the session's interned symbol names that
  // nothing uses any more (every kRemovalsPerPoolSweep removals).
  std::function<void()> release = [this, jd] {
    llvm::consumeError(jit_->getExecutionSession().removeJITDylib(*jd));
    if (state_->removals.fetch_add(1) % State::kRemovalsPerPoolSweep == State::kRemovalsPerPoolSweep - 1) {
      jit_->getExecutionSession().getSymbolStringPool()->clearDeadEntries();
    }
  };
  for (const std::string& object : objects) {
    if (auto err = jit_->addObjectFile(*jd, llvm::MemoryBuffer::getMemBufferCopy(object, id))) {
      release();
      return FromLlvm(std::move(err), "cannot load an object file of the program");
    }
  }
  auto code = Resolve(std::move(release), jd.get(), symbols);
  if (code.ok()) (*code)->objects_ = objects;
  return code;
}

}  // namespace jitd::cpu
