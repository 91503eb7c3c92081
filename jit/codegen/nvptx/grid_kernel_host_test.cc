// The flat grid kernels' LLVM IR, as EmitGridKernel writes it (vector
// loop, unrolled elements, the emitter's vector loads and stores, scalar
// tail), run on the host: the thread / block id registers become host
// globals, and every (block, thread) of the launch runs in turn. The
// results are checked element by element against C++. This tests the
// schedule and the emitter's rewrites without a GPU; the NVPTX backend's
// own code generation is not what runs (nvptx_kernel_test.cc checks its
// PTX). Kernels that call libdevice are not run here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/codegen/fusion.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/nvptx/fuse_for_testing.h"
#include "jit/codegen/nvptx/grid_kernel_emitter.h"
#include "jit/codegen/nvptx/nvptx_backend.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/frontend/parser.h"
#include "jit/passes/fusion.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

namespace jitd::codegen {
namespace {

// Small blocks and grids, so that a few thousand elements take several
// grid strides, and vectors from the first element on.
GridLimits SmallGrid() {
  GridLimits limits;
  limits.block_threads = 32;
  limits.max_blocks = 3;
  limits.vector_min_items = 1;
  return limits;
}

// One kernel compiled for the host. Run() launches it over plan.grid x
// plan.block threads on `buffers` (inputs, then outputs).
class HostKernel {
 public:
  static std::unique_ptr<HostKernel> Create(KernelSpec spec, const GridLimits& limits) {
    auto machine = CreateNvptxTargetMachine({});
    EXPECT_TRUE(machine.ok()) << machine.status().message();
    if (!machine.ok()) return nullptr;
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("host", *context);
    PrepareNvptxModule(*module, **machine);
    spec.name = "jitd_k0";
    auto plan = PlanGridKernel(spec, limits);
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    if (!plan.ok()) return nullptr;
    Status emitted = EmitGridKernel(*module, spec, *plan, limits);
    EXPECT_TRUE(emitted.ok()) << emitted.message();
    if (!emitted.ok()) return nullptr;
    std::string ir;
    llvm::raw_string_ostream os(ir);
    module->print(os, nullptr);

    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jit = llvm::orc::LLJITBuilder().create();
    EXPECT_TRUE(static_cast<bool>(jit)) << llvm::toString(jit.takeError());
    if (!jit) return nullptr;
    std::unique_ptr<HostKernel> kernel(new HostKernel());
    kernel->plan_ = *plan;
    kernel->ir_ = std::move(ir);
    kernel->jit_ = std::move(*jit);
    if (!kernel->Retarget(*module, kernel->jit_->getDataLayout())) return nullptr;
    llvm::Error added = kernel->jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context)));
    EXPECT_FALSE(static_cast<bool>(added)) << llvm::toString(std::move(added));
    auto lookup = [&](const char* name) -> void* {
      auto address = kernel->jit_->lookup(name);
      EXPECT_TRUE(static_cast<bool>(address)) << llvm::toString(address.takeError());
      return address ? address->toPtr<void*>() : nullptr;
    };
    kernel->call_ = reinterpret_cast<void (*)(void**)>(lookup("jitd_host_call"));
    kernel->tid_ = static_cast<uint32_t*>(lookup("jitd_host_tid"));
    kernel->ctaid_ = static_cast<uint32_t*>(lookup("jitd_host_ctaid"));
    kernel->nctaid_ = static_cast<uint32_t*>(lookup("jitd_host_nctaid"));
    if (!kernel->call_ || !kernel->tid_ || !kernel->ctaid_ || !kernel->nctaid_) return nullptr;
    return kernel;
  }

  const GridPlan& plan() const { return plan_; }
  const std::string& ir() const { return ir_; }  // as emitted, for NVPTX

  void Run(std::vector<void*> buffers) {
    *nctaid_ = static_cast<uint32_t>(plan_.grid);
    for (int64_t block = 0; block < plan_.grid; ++block) {
      for (int64_t thread = 0; thread < plan_.block; ++thread) {
        *ctaid_ = static_cast<uint32_t>(block);
        *tid_ = static_cast<uint32_t>(thread);
        call_(buffers.data());
      }
    }
  }

 private:
  HostKernel() = default;

  // The NVPTX kernel made a host function: the special registers it reads
  // become loads of host globals, a C entry jitd_host_call(void** buffers)
  // calls it, and the module takes the host's triple and data layout.
  bool Retarget(llvm::Module& module, const llvm::DataLayout& layout) {
    llvm::LLVMContext& ctx = module.getContext();
    llvm::Function* kernel = module.getFunction("jitd_k0");
    EXPECT_NE(kernel, nullptr);
    if (!kernel) return false;
    auto global = [&](const char* name) {
      return new llvm::GlobalVariable(module, llvm::Type::getInt32Ty(ctx), false, llvm::GlobalValue::ExternalLinkage,
                                      llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 0), name);
    };
    llvm::GlobalVariable* tid = global("jitd_host_tid");
    llvm::GlobalVariable* ctaid = global("jitd_host_ctaid");
    llvm::GlobalVariable* nctaid = global("jitd_host_nctaid");
    std::vector<llvm::CallInst*> calls;
    for (llvm::BasicBlock& block : *kernel) {
      for (llvm::Instruction& inst : block) {
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) calls.push_back(call);
      }
    }
    for (llvm::CallInst* call : calls) {
      llvm::GlobalVariable* from = nullptr;
      switch (call->getIntrinsicID()) {
        case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x: from = tid; break;
        case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x: from = ctaid; break;
        case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x: from = nctaid; break;
        default:
          if (!call->getCalledFunction() || call->getCalledFunction()->getName().starts_with("llvm.nvvm.") ||
              (call->getCalledFunction()->isDeclaration() && !call->getCalledFunction()->isIntrinsic())) {
            ADD_FAILURE() << "the kernel calls "
                          << (call->getCalledFunction() ? call->getCalledFunction()->getName().str() : "a pointer")
                          << ", which this test cannot run on the host";
            return false;
          }
          continue;
      }
      llvm::Value* x = new llvm::LoadInst(llvm::Type::getInt32Ty(ctx), from, "", call);
      call->replaceAllUsesWith(x);
      call->eraseFromParent();
    }
    if (llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations")) {
      module.eraseNamedMetadata(annotations);
    }
    kernel->setCallingConv(llvm::CallingConv::C);
    module.setTargetTriple(llvm::sys::getProcessTriple());
    module.setDataLayout(layout);

    auto* entry = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                                                 {llvm::PointerType::get(ctx, 0)}, false),
                                         llvm::Function::ExternalLinkage, "jitd_host_call", module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
    std::vector<llvm::Value*> args;
    for (unsigned i = 0; i < kernel->arg_size(); ++i) {
      llvm::Value* slot = b.CreateConstGEP1_64(b.getPtrTy(), entry->getArg(0), i);
      args.push_back(b.CreateAddrSpaceCast(b.CreateLoad(b.getPtrTy(), slot), kernel->getArg(i)->getType()));
    }
    b.CreateCall(kernel, args);
    b.CreateRetVoid();
    return true;
  }

  GridPlan plan_;
  std::string ir_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  void (*call_)(void**) = nullptr;
  uint32_t* tid_ = nullptr;
  uint32_t* ctaid_ = nullptr;
  uint32_t* nctaid_ = nullptr;
};

template <typename T>
std::vector<T> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-4.0, 4.0);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <typename T>
bool SameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The kernel's input buffers (KernelSpec::inputs order: the fusion op's
// operands) from the entry function's arguments' buffers `args`.
std::vector<void*> Inputs(const Fused& f, const std::vector<void*>& args) {
  std::vector<void*> buffers;
  const ir::Block* entry = f.module->EntryFunction()->entry();
  for (const ir::Value* v : f.fusions[0]->operands()) {
    void* buffer = nullptr;
    for (size_t i = 0; i < entry->num_args(); ++i) {
      if (entry->arg(i) == v) buffer = args[i];
    }
    EXPECT_NE(buffer, nullptr) << "a kernel input that is not an argument";
    buffers.push_back(buffer);
  }
  EXPECT_EQ(buffers.size(), f.specs[0].inputs.size());
  return buffers;
}

const int64_t kSizes[] = {1, 3, 4, 5, 7, 64, 95, 96, 97, 1000, 4099};

TEST(GridKernelOnHost, MultiplyAddIsRightAtEveryElementForEverySize) {
  for (const char* type : {"f32", "f64"}) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(std::string(type) + " x " + std::to_string(n));
      Fused f = FuseForNvptx(MultiplyAdd(n, type));
      ASSERT_EQ(f.specs.size(), 1u);
      std::unique_ptr<HostKernel> kernel = HostKernel::Create(f.specs[0], SmallGrid());
      ASSERT_NE(kernel, nullptr);
      const bool f64 = std::string(type) == "f64";
      EXPECT_EQ(kernel->plan().vector_width, f64 ? 2 : 4);
      auto check = [&](auto zero) {
        using T = decltype(zero);
        std::vector<T> x = Random<T>(n, 1), y = Random<T>(n, 2);
        std::vector<T> out(static_cast<size_t>(n), std::numeric_limits<T>::quiet_NaN());
        std::vector<void*> buffers = Inputs(f, {x.data(), y.data()});
        buffers.push_back(out.data());
        kernel->Run(buffers);
        for (size_t i = 0; i < out.size(); ++i) {
          const T product = x[i] * y[i];
          const T expected = product + x[i];
          ASSERT_TRUE(SameBits(out[i], expected)) << "element " << i << ": " << out[i] << " vs " << expected;
        }
      };
      if (f64) {
        check(0.0);
      } else {
        check(0.0f);
      }
    }
  }
}

TEST(GridKernelOnHost, BroadcastRowsAndExtraOutputs) {
  // Rows of 7: vector groups straddle rows, so the broadcast operand is
  // read element by element while x and the results go by vectors; the
  // f64 sum is an extra output beside the f32 root (2 per vector: V = 2).
  for (int64_t rows : {1, 2, 5, 147}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const std::string t32 = "tensor<" + std::to_string(rows) + "x7xf32>";
    const std::string t64 = "tensor<" + std::to_string(rows) + "x7xf64>";
    Fused f = FuseForNvptx("func.func @main(%x: " + t32 + ", %b: tensor<7xf64>) -> (" + t32 + ", " + t64 + ") {\n" +
                           "  %0 = stablehlo.convert %x : (" + t32 + ") -> " + t64 + "\n" +
                           "  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<7xf64>) -> " + t64 + "\n" +
                           "  %2 = stablehlo.add %0, %1 : " + t64 + "\n" +
                           "  %3 = stablehlo.multiply %2, %2 : " + t64 + "\n" +
                           "  %4 = stablehlo.convert %3 : (" + t64 + ") -> " + t32 + "\n" +
                           "  return %4, %2 : " + t32 + ", " + t64 + "\n}");
    ASSERT_EQ(f.specs.size(), 1u);
    ASSERT_EQ(f.specs[0].extra_outputs.size(), 1u);
    std::unique_ptr<HostKernel> kernel = HostKernel::Create(f.specs[0], SmallGrid());
    ASSERT_NE(kernel, nullptr);
    EXPECT_EQ(kernel->plan().vector_width, 2);
    const int64_t n = rows * 7;
    std::vector<float> x = Random<float>(n, 3);
    std::vector<double> b = Random<double>(7, 4);
    std::vector<float> square(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
    std::vector<double> sum(static_cast<size_t>(n), std::numeric_limits<double>::quiet_NaN());
    std::vector<void*> buffers = Inputs(f, {x.data(), b.data()});
    buffers.push_back(square.data());
    buffers.push_back(sum.data());
    kernel->Run(buffers);
    for (int64_t i = 0; i < n; ++i) {
      const double expected = static_cast<double>(x[static_cast<size_t>(i)]) + b[static_cast<size_t>(i % 7)];
      const double squared = expected * expected;
      ASSERT_TRUE(SameBits(sum[static_cast<size_t>(i)], expected)) << "element " << i;
      ASSERT_TRUE(SameBits(square[static_cast<size_t>(i)], static_cast<float>(squared))) << "element " << i;
    }
  }
}

TEST(GridKernelOnHost, PredicatesAreWrittenAsBytes) {
  for (int64_t n : kSizes) {
    SCOPED_TRACE(n);
    const std::string t = "tensor<" + std::to_string(n) + "xf32>";
    const std::string p = "tensor<" + std::to_string(n) + "xi1>";
    Fused f = FuseForNvptx("func.func @main(%x: " + t + ", %y: " + t + ") -> " + p + " {\n" +
                           "  %0 = stablehlo.compare GT, %x, %y : (" + t + ", " + t + ") -> " + p + "\n" +
                           "  return %0 : " + p + "\n}");
    ASSERT_EQ(f.specs.size(), 1u);
    std::unique_ptr<HostKernel> kernel = HostKernel::Create(f.specs[0], SmallGrid());
    ASSERT_NE(kernel, nullptr);
    EXPECT_EQ(kernel->plan().vector_width, 4);
    std::vector<float> x = Random<float>(n, 6), y = Random<float>(n, 7);
    std::vector<uint8_t> greater(static_cast<size_t>(n), 0xee);
    std::vector<void*> buffers = Inputs(f, {x.data(), y.data()});
    buffers.push_back(greater.data());
    kernel->Run(buffers);
    for (size_t i = 0; i < greater.size(); ++i) {
      ASSERT_EQ(greater[i], x[i] > y[i] ? 1 : 0) << "element " << i;
    }
  }
}

TEST(GridKernelOnHost, ElementsWithGuardedReadsAreStoredAsOneVector) {
  // dynamic_update_slice reads the update in a guarded block (at shifted
  // indices, element by element) and the operand at the result's own
  // index; each element's store follows its own branch, and the group's
  // stores are sunk into one vector store.
  for (int64_t start : {0, 1, 3, 998, 2000}) {
    SCOPED_TRACE("start " + std::to_string(start));
    Fused f = FuseForNvptx(R"(
func.func @main(%x: tensor<1001xf32>, %u: tensor<3xf32>, %s: tensor<i64>) -> tensor<1001xf32> {
  %0 = stablehlo.negate %x : tensor<1001xf32>
  %1 = stablehlo.dynamic_update_slice %0, %u, %s : (tensor<1001xf32>, tensor<3xf32>, tensor<i64>) -> tensor<1001xf32>
  return %1 : tensor<1001xf32>
})");
    ASSERT_EQ(f.specs.size(), 1u);
    std::unique_ptr<HostKernel> kernel = HostKernel::Create(f.specs[0], SmallGrid());
    ASSERT_NE(kernel, nullptr);
    EXPECT_EQ(kernel->plan().vector_width, 4);
    // x as one vector per group; the four results, each stored after its
    // own guarded read, as one vector store at the group's end.
    EXPECT_EQ(Count(kernel->ir(), "load <4 x float>"), 1u) << kernel->ir();
    EXPECT_EQ(Count(kernel->ir(), "store <4 x float>"), 1u) << kernel->ir();
    std::vector<float> x = Random<float>(1001, 5), u = {100.0f, 200.0f, 300.0f};
    int64_t s = start;
    std::vector<void*> buffers = Inputs(f, {x.data(), u.data(), &s});
    std::vector<float> out(1001, std::numeric_limits<float>::quiet_NaN());
    buffers.push_back(out.data());
    kernel->Run(buffers);
    const int64_t clamped = std::min<int64_t>(std::max<int64_t>(start, 0), 1001 - 3);
    for (int64_t i = 0; i < 1001; ++i) {
      const float expected =
          i >= clamped && i < clamped + 3 ? u[static_cast<size_t>(i - clamped)] : -x[static_cast<size_t>(i)];
      ASSERT_TRUE(SameBits(out[static_cast<size_t>(i)], expected)) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace jitd::codegen
