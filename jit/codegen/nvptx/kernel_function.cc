#include "jit/codegen/nvptx/kernel_function.h"

#include <string>
#include <vector>

#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/Alignment.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

llvm::Function* DeclareKernel(llvm::Module& module, std::string_view name, size_t num_params,
                              ParamRange read_only, int64_t alignment) {
  llvm::LLVMContext& ctx = module.getContext();
  const std::vector<llvm::Type*> params(num_params, llvm::PointerType::get(ctx, 1));
  llvm::Function* fn =
      llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false),
                             llvm::Function::ExternalLinkage, llvm::StringRef(name.data(), name.size()),
                             module);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i = 0; i < num_params; ++i) {
    fn->addParamAttr(i, llvm::Attribute::NoAlias);
    if (i >= read_only.begin && i < read_only.end) fn->addParamAttr(i, llvm::Attribute::ReadOnly);
    if (alignment > 1) {
      fn->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx, llvm::Align(static_cast<uint64_t>(alignment))));
    }
  }
  module.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(
          ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "kernel"),
                llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))}));
  return fn;
}

void EraseKernel(llvm::Module& module, llvm::Function* fn) {
  if (llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations")) {
    std::vector<llvm::MDNode*> keep;
    for (llvm::MDNode* node : annotations->operands()) {
      auto* named = node->getNumOperands() > 0
                        ? llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(node->getOperand(0))
                        : nullptr;
      if (named == nullptr || named->getValue() != fn) keep.push_back(node);
    }
    annotations->clearOperands();
    for (llvm::MDNode* node : keep) annotations->addOperand(node);
  }
  fn->eraseFromParent();
}

Status FinishKernel(llvm::Module& module, llvm::Function* fn, Status status, const ir::Op& op) {
  std::string message;
  llvm::raw_string_ostream os(message);
  if (status.ok() && llvm::verifyFunction(*fn, &os)) {
    status = Internal("codegen produced invalid NVPTX IR for '" + std::string(op.name()) + "' at " +
                      op.loc().ToString() + ": " + os.str());
  }
  if (!status.ok()) EraseKernel(module, fn);
  return status;
}

GridStride ThreadGridStride(llvm::IRBuilderBase& b, int64_t block) {
  auto sreg = [&](llvm::Intrinsic::ID id) {
    return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty());
  };
  llvm::Value* threads = b.getInt64(block);
  GridStride stride;
  stride.first = b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), threads),
                             sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  stride.step = b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), threads);
  return stride;
}

GridStrideLoop BeginGridStrideLoop(llvm::IRBuilderBase& b, llvm::Function* fn, int64_t block,
                                   int64_t count, std::string_view body_name) {
  llvm::LLVMContext& ctx = fn->getContext();
  const GridStride stride = ThreadGridStride(b, block);
  llvm::BasicBlock* from = b.GetInsertBlock();
  GridStrideLoop loop;
  loop.step = stride.step;
  loop.header = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* body =
      llvm::BasicBlock::Create(ctx, llvm::StringRef(body_name.data(), body_name.size()), fn);
  loop.done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateBr(loop.header);
  b.SetInsertPoint(loop.header);
  loop.index = b.CreatePHI(b.getInt64Ty(), 2);
  loop.index->addIncoming(stride.first, from);
  b.CreateCondBr(b.CreateICmpSLT(loop.index, b.getInt64(count)), body, loop.done);
  b.SetInsertPoint(body);
  return loop;
}

void EndGridStrideLoop(llvm::IRBuilderBase& b, const GridStrideLoop& loop) {
  loop.index->addIncoming(b.CreateAdd(loop.index, loop.step), b.GetInsertBlock());
  b.CreateBr(loop.header);
  b.SetInsertPoint(loop.done);
}

}  // namespace jitd::codegen
