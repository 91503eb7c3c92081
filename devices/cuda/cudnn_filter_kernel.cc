#include "devices/cuda/cudnn_filter_kernel.h"

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

StatusOr<codegen::GridPlan> EmitPermuteKernel(llvm::Module& module, const std::string& name, int64_t element_bytes,
                                              const std::vector<int64_t>& dims,
                                              const std::vector<int64_t>& permutation,
                                              const codegen::GridLimits& limits) {
  if (limits.block_threads <= 0 || limits.max_blocks <= 0) {
    return InvalidArgument("grid limits: block_threads and max_blocks must be positive");
  }
  std::vector<int64_t> sorted = permutation;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = sorted.size() == dims.size();
  for (size_t i = 0; is_permutation && i < sorted.size(); ++i) is_permutation = sorted[i] == static_cast<int64_t>(i);
  if (!is_permutation) return InvalidArgument("permute kernel: not a permutation of the operand's dimensions");
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 && element_bytes != 8 && element_bytes != 16) {
    return InvalidArgument("permute kernel: element size " + std::to_string(element_bytes));
  }
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (count <= 0) return InvalidArgument("permute kernel: an empty operand");
  // The operand's row-major strides, and the result's dimensions.
  std::vector<int64_t> in_strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) in_strides[i - 1] = in_strides[i] * dims[i];
  std::vector<int64_t> out_dims;
  for (int64_t p : permutation) out_dims.push_back(dims[static_cast<size_t>(p)]);

  codegen::GridPlan plan;
  plan.kind = codegen::GridKind::kFlat;
  plan.work_items = count;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((count + plan.block - 1) / plan.block, 1, limits.max_blocks);

  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* global = llvm::PointerType::get(ctx, 1);
  llvm::Function* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {global, global}, false),
                                              llvm::Function::ExternalLinkage, name, module);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addParamAttr(0, llvm::Attribute::NoAlias);
  fn->addParamAttr(0, llvm::Attribute::ReadOnly);
  fn->addParamAttr(1, llvm::Attribute::NoAlias);
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
  // The result's index digits, innermost first, each mapped to its
  // operand stride.
  llvm::Value* rest = i;
  llvm::Value* source = b.getInt64(0);
  for (size_t k = out_dims.size(); k-- > 0;) {
    llvm::Value* extent = b.getInt64(out_dims[k]);
    llvm::Value* digit = k == 0 ? rest : b.CreateURem(rest, extent);
    if (k > 0) rest = b.CreateUDiv(rest, extent);
    source = b.CreateAdd(source,
                         b.CreateMul(digit, b.getInt64(in_strides[static_cast<size_t>(permutation[k])])));
  }
  llvm::Type* unit = b.getIntNTy(static_cast<unsigned>(8 * element_bytes));
  const llvm::Align align(static_cast<uint64_t>(element_bytes));
  llvm::Value* x = b.CreateAlignedLoad(unit, b.CreateInBoundsGEP(unit, fn->getArg(0), source), align);
  b.CreateAlignedStore(x, b.CreateInBoundsGEP(unit, fn->getArg(1), i), align);
  i->addIncoming(b.CreateAdd(i, step), body);
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyFunction(*fn, &os)) {
    fn->eraseFromParent();
    return Internal("cuda: invalid permute kernel: " + os.str());
  }
  return plan;
}

}  // namespace jitd::devices::cuda
