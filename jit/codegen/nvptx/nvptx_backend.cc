#include "jit/codegen/nvptx/nvptx_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/IPO/Internalize.h"

namespace jitd::codegen {

namespace {

const llvm::Target* NvptxTarget(std::string* error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  return llvm::TargetRegistry::lookupTarget(kNvptxTriple, *error);
}

// "ptx85" -> 85; 0 for other names.
int PtxFeatureVersion(llvm::StringRef name) {
  if (!name.consume_front("ptx")) return 0;
  int v = 0;
  return name.getAsInteger(10, v) ? 0 : v;
}

bool FileExists(const std::string& path) { return std::ifstream(path).good(); }

// libdevice's bytes, read once per path.
StatusOr<const llvm::MemoryBuffer*> LibdeviceBytes(const std::string& path) {
  static std::mutex mu;
  static auto* loaded = new std::vector<std::pair<std::string, std::unique_ptr<llvm::MemoryBuffer>>>();
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [p, buffer] : *loaded) {
    if (p == path) return buffer.get();
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) return NotFound("libdevice '" + path + "': " + buffer.getError().message());
  loaded->emplace_back(path, std::move(*buffer));
  return loaded->back().second.get();
}

std::string LlvmErrorText(llvm::Error error) {
  std::string text;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase& e) { text += e.message(); });
  return text;
}

}  // namespace

const NvptxTargetInfo& NvptxInfo() {
  static const NvptxTargetInfo* info = [] {
    auto* out = new NvptxTargetInfo();
    std::string error;
    const llvm::Target* target = NvptxTarget(&error);
    if (!target) return out;
    std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(kNvptxTriple, "sm_50", ""));
    if (!sti) return out;
    for (const llvm::SubtargetSubTypeKV& cpu : sti->getAllProcessorDescriptions()) out->sms.push_back(cpu.Key);
    for (const llvm::SubtargetFeatureKV& feature : sti->getAllProcessorFeatures()) {
      out->max_ptx_version = std::max(out->max_ptx_version, PtxFeatureVersion(feature.Key));
    }
    return out;
  }();
  return *info;
}

int MinPtxVersionForSm(const std::string& sm) {
  // PTX ISA release notes: the first version that targets each sm.
  static const std::pair<const char*, int> kTable[] = {
      {"sm_50", 40}, {"sm_52", 41}, {"sm_53", 42}, {"sm_60", 50}, {"sm_61", 50}, {"sm_62", 50},
      {"sm_70", 60}, {"sm_72", 61}, {"sm_75", 63}, {"sm_80", 70}, {"sm_86", 71}, {"sm_87", 74},
      {"sm_89", 78}, {"sm_90", 78}, {"sm_90a", 80}, {"sm_100", 86}, {"sm_100a", 86}, {"sm_101", 86},
      {"sm_120", 87}, {"sm_120a", 87}};
  for (const auto& [name, version] : kTable) {
    if (sm == name) return version;
  }
  return 0;
}

StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateNvptxTargetMachine(const NvptxOptions& options) {
  std::string error;
  const llvm::Target* target = NvptxTarget(&error);
  if (!target) return Status(StatusCode::kUnavailable, "LLVM has no NVPTX target: " + error);
  const NvptxTargetInfo& info = NvptxInfo();
  if (std::find(info.sms.begin(), info.sms.end(), options.sm) == info.sms.end()) {
    std::string known;
    for (const std::string& s : info.sms) known += (known.empty() ? "" : ", ") + s;
    return InvalidArgument("cuda arch '" + options.sm + "' is not one LLVM's NVPTX target writes (it knows: " +
                           known + ")");
  }
  const int ptx = options.ptx_version > 0 ? options.ptx_version : info.max_ptx_version;
  if (ptx > info.max_ptx_version) {
    return InvalidArgument("PTX ISA " + std::to_string(ptx / 10) + "." + std::to_string(ptx % 10) +
                           " is above what LLVM's NVPTX target writes (" + std::to_string(info.max_ptx_version / 10) +
                           "." + std::to_string(info.max_ptx_version % 10) + ")");
  }
  if (const int need = MinPtxVersionForSm(options.sm); need > ptx) {
    return InvalidArgument("cuda arch '" + options.sm + "' needs PTX ISA " + std::to_string(need / 10) + "." +
                           std::to_string(need % 10) + ", above the " + std::to_string(ptx / 10) + "." +
                           std::to_string(ptx % 10) + " chosen");
  }
  llvm::TargetOptions target_options;
  llvm::CodeGenOptLevel level = options.opt_level >= 3   ? llvm::CodeGenOptLevel::Aggressive
                                : options.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                : options.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                                         : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kNvptxTriple, options.sm, "+ptx" + std::to_string(ptx), target_options, std::nullopt, std::nullopt, level));
  if (!machine) return Internal("LLVM could not create an NVPTX target machine for " + options.sm);
  return machine;
}

StatusOr<std::string> FindLibdevice(const NvptxOptions& options) {
  if (!options.libdevice_path.empty()) {
    if (!FileExists(options.libdevice_path)) return NotFound("libdevice '" + options.libdevice_path + "' not found");
    return options.libdevice_path;
  }
  std::vector<std::string> tried;
  if (const char* env = std::getenv("JITD_LIBDEVICE"); env && *env) tried.push_back(env);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* env = std::getenv(var); env && *env) tried.push_back(std::string(env) + "/nvvm/libdevice/libdevice.10.bc");
  }
  // Shipped beside the binary (a portable bundle: bin/jitd, lib/libdevice.10.bc).
  char exe[4096];
  if (const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    tried.push_back(dir + "/../lib/libdevice.10.bc");
    tried.push_back(dir + "/../share/jitd/libdevice.10.bc");
  }
  tried.push_back("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  tried.push_back("/usr/lib/cuda/nvvm/libdevice/libdevice.10.bc");
  tried.push_back("/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
  std::string list;
  for (const std::string& p : tried) {
    if (FileExists(p)) return p;
    list += (list.empty() ? "" : ", ") + p;
  }
  return NotFound("libdevice.10.bc not found (set JITD_LIBDEVICE or CUDA_HOME); tried " + list);
}

void PrepareNvptxModule(llvm::Module& module, const llvm::TargetMachine& machine) {
  module.setTargetTriple(kNvptxTriple);
  module.setDataLayout(machine.createDataLayout());
}

StatusOr<std::string> CompileNvptxModule(llvm::Module& module, llvm::TargetMachine& machine,
                                         const NvptxOptions& options) {
  PrepareNvptxModule(module, machine);
  // No flush to zero: __nvvm_reflect("__CUDA_FTZ") is 0 in libdevice.
  module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});

  bool calls_libdevice = false;
  for (const llvm::Function& f : module) {
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) calls_libdevice = true;
  }
  if (calls_libdevice) {
    JITD_ASSIGN_OR_RETURN(std::string path, FindLibdevice(options));
    JITD_ASSIGN_OR_RETURN(const llvm::MemoryBuffer* bytes, LibdeviceBytes(path));
    llvm::Expected<std::unique_ptr<llvm::Module>> lib =
        llvm::getLazyBitcodeModule(bytes->getMemBufferRef(), module.getContext());
    if (!lib) return Internal("libdevice '" + path + "': " + LlvmErrorText(lib.takeError()));
    (*lib)->setTargetTriple(module.getTargetTriple());
    (*lib)->setDataLayout(module.getDataLayout());
    // Only the functions the module calls, internalized (inlined and then
    // dropped by the pipeline).
    const bool failed = llvm::Linker::linkModules(
        module, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded,
        [](llvm::Module& m, const llvm::StringSet<>& linked) {
          llvm::internalizeModule(m, [&linked](const llvm::GlobalValue& gv) {
            return !gv.hasName() || !linked.contains(gv.getName());
          });
        });
    if (failed) return Internal("linking libdevice '" + path + "' failed");
  }

  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(&machine);  // registers NVVMReflect at the pipeline's start
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    const llvm::OptimizationLevel level = options.opt_level >= 3   ? llvm::OptimizationLevel::O3
                                          : options.opt_level == 2 ? llvm::OptimizationLevel::O2
                                          : options.opt_level == 1 ? llvm::OptimizationLevel::O1
                                                                   : llvm::OptimizationLevel::O0;
    llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                      ? pb.buildO0DefaultPipeline(level)
                                      : pb.buildPerModuleDefaultPipeline(level);
    mpm.run(module, mam);
  }

  // A kernel can call nothing: every call left must be an intrinsic.
  for (const llvm::Function& f : module) {
    if (!f.isDeclaration() || f.isIntrinsic() || f.use_empty()) continue;
    const std::string name = f.getName().str();
    if (name.rfind("__nv_", 0) == 0) return Internal("libdevice does not define '" + name + "', which a kernel calls");
    return Internal("an NVPTX kernel calls '" + name + "', which nothing defines on the GPU");
  }
  std::string message;
  llvm::raw_string_ostream verify_os(message);
  if (llvm::verifyModule(module, &verify_os)) return Internal("invalid NVPTX module: " + message);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager printer;
  if (machine.addPassesToEmitFile(printer, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    return Internal("LLVM's NVPTX target cannot print PTX");
  }
  printer.run(module);
  return std::string(ptx.str());
}

}  // namespace jitd::codegen
