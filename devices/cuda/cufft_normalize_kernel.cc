#include "devices/cuda/cufft_normalize_kernel.h"

#include <algorithm>

#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::devices::cuda {

StatusOr<codegen::GridPlan> EmitFftNormalizeKernel(llvm::Module& module, const std::string& name, bool f64,
                                                   int64_t count, int64_t divisor, const codegen::GridLimits& limits) {
  if (limits.block_threads <= 0 || limits.max_blocks <= 0) {
    return InvalidArgument("grid limits: block_threads and max_blocks must be positive");
  }
  if (count < 1 || divisor < 1) {
    return InvalidArgument("fft normalize kernel: count " + std::to_string(count) + " and divisor " +
                           std::to_string(divisor) + " must be positive");
  }
  codegen::GridPlan plan;
  plan.kind = codegen::GridKind::kFlat;
  plan.work_items = count;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((count + plan.block - 1) / plan.block, 1, limits.max_blocks);

  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* global = llvm::PointerType::get(ctx, 1);
  llvm::Function* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {global}, false),
                                              llvm::Function::ExternalLinkage, name, module);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addParamAttr(0, llvm::Attribute::NoAlias);
  module.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "kernel"),
                                           llvm::ValueAsMetadata::get(b.getInt32(1))}));
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "body", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty()); };
  llvm::Value* block = b.getInt64(plan.block);
  llvm::Value* first = b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), block),
                                   sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  llvm::Value* step = b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), block);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(first, entry);
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(count)), body, done);
  b.SetInsertPoint(body);
  llvm::Type* real = f64 ? b.getDoubleTy() : b.getFloatTy();
  const llvm::Align align(f64 ? 8 : 4);
  llvm::Value* at = b.CreateInBoundsGEP(real, fn->getArg(0), i);
  llvm::Value* x = b.CreateAlignedLoad(real, at, align);
  b.CreateAlignedStore(b.CreateFDiv(x, llvm::ConstantFP::get(real, static_cast<double>(divisor))), at, align);
  i->addIncoming(b.CreateAdd(i, step), body);
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyFunction(*fn, &os)) {
    fn->eraseFromParent();
    return Internal("cuda: invalid fft normalize kernel: " + os.str());
  }
  return plan;
}

}  // namespace jitd::devices::cuda
