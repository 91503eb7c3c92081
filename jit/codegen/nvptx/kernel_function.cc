#include "jit/codegen/nvptx/kernel_function.h"

#include <string>
#include <vector>

#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
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

}  // namespace jitd::codegen
