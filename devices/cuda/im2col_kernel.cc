#include "devices/cuda/im2col_kernel.h"

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

StatusOr<codegen::GridPlan> EmitIm2colKernel(llvm::Module& module, const std::string& name,
                                             const Im2colConvPlan& plan, const codegen::GridLimits& limits) {
  if (limits.block_threads <= 0 || limits.max_blocks <= 0) {
    return InvalidArgument("grid limits: block_threads and max_blocks must be positive");
  }
  if (plan.element_bytes != 2 && plan.element_bytes != 4 && plan.element_bytes != 8) {
    return InvalidArgument("im2col kernel: element size " + std::to_string(plan.element_bytes));
  }
  if (plan.patch_elements <= 0 || plan.rows <= 0 || plan.depth <= 0) {
    return InvalidArgument("im2col kernel: an empty patch matrix");
  }
  const size_t spatial = plan.in_spatial.size();
  codegen::GridPlan grid;
  grid.kind = codegen::GridKind::kFlat;
  grid.work_items = plan.patch_elements;
  grid.extent = plan.depth;
  grid.block = limits.block_threads;
  grid.grid = std::clamp<int64_t>((plan.patch_elements + grid.block - 1) / grid.block, 1, limits.max_blocks);

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
  llvm::BasicBlock* load = llvm::BasicBlock::Create(ctx, "load", fn);
  llvm::BasicBlock* store = llvm::BasicBlock::Create(ctx, "store", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty()); };
  llvm::Value* block = b.getInt64(grid.block);
  llvm::Value* first = b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), block),
                                   sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  llvm::Value* step = b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), block);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(first, entry);
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(plan.patch_elements)), body, done);

  // Im2colSource, in IR: the index digits are all non-negative (unsigned
  // division), the window position may be negative (signed).
  b.SetInsertPoint(body);
  llvm::Value* k = b.CreateURem(i, b.getInt64(plan.depth));
  llvm::Value* rest = b.CreateUDiv(i, b.getInt64(plan.depth));
  llvm::Value* r = b.CreateURem(rest, b.getInt64(plan.rows));
  llvm::Value* g = b.CreateUDiv(rest, b.getInt64(plan.rows));
  llvm::Value* offset = b.getInt64(0);
  llvm::Value* valid = b.getTrue();
  for (size_t s = spatial; s-- > 0;) {
    llvm::Value* ks = b.getInt64(plan.kernel_spatial[s]);
    llvm::Value* os = b.getInt64(plan.out_spatial[s]);
    llvm::Value* tap = b.CreateURem(k, ks);
    k = b.CreateUDiv(k, ks);
    llvm::Value* o = b.CreateURem(r, os);
    r = b.CreateUDiv(r, os);
    llvm::Value* w = plan.reversal[s] ? b.CreateSub(b.getInt64(plan.kernel_spatial[s] - 1), tap) : tap;
    llvm::Value* p = b.CreateSub(b.CreateAdd(b.CreateMul(o, b.getInt64(plan.stride[s])),
                                             b.CreateMul(w, b.getInt64(plan.rhs_dilation[s]))),
                                 b.getInt64(plan.pad_low[s]));
    valid = b.CreateAnd(valid, b.CreateICmpSGE(p, b.getInt64(0)));
    // A negative p is already invalid; clamp it so the unsigned digits
    // below stay meaningful for the offset (never used then).
    p = b.CreateSelect(b.CreateICmpSLT(p, b.getInt64(0)), b.getInt64(0), p);
    llvm::Value* x = p;
    if (plan.lhs_dilation[s] != 1) {
      llvm::Value* ld = b.getInt64(plan.lhs_dilation[s]);
      valid = b.CreateAnd(valid, b.CreateICmpEQ(b.CreateURem(p, ld), b.getInt64(0)));
      x = b.CreateUDiv(p, ld);
    }
    valid = b.CreateAnd(valid, b.CreateICmpSLT(x, b.getInt64(plan.in_spatial[s])));
    offset = b.CreateAdd(offset, b.CreateMul(x, b.getInt64(plan.in_spatial_strides[s])));
  }
  llvm::Value* n = plan.batch_groups ? b.CreateAdd(b.CreateMul(g, b.getInt64(plan.batch)), r) : r;
  llvm::Value* c = plan.batch_groups ? k : b.CreateAdd(b.CreateMul(g, b.getInt64(plan.channels)), k);
  llvm::Value* source = b.CreateAdd(offset, b.CreateAdd(b.CreateMul(n, b.getInt64(plan.in_batch_stride)),
                                                        b.CreateMul(c, b.getInt64(plan.in_feature_stride))));
  llvm::Type* unit = b.getIntNTy(static_cast<unsigned>(8 * plan.element_bytes));
  const llvm::Align align(static_cast<uint64_t>(plan.element_bytes));
  b.CreateCondBr(valid, load, store);
  b.SetInsertPoint(load);
  llvm::Value* x = b.CreateAlignedLoad(unit, b.CreateInBoundsGEP(unit, fn->getArg(0), source), align);
  b.CreateBr(store);
  b.SetInsertPoint(store);
  llvm::PHINode* value = b.CreatePHI(unit, 2);
  value->addIncoming(llvm::ConstantInt::get(unit, 0), body);
  value->addIncoming(x, load);
  b.CreateAlignedStore(value, b.CreateInBoundsGEP(unit, fn->getArg(1), i), align);
  i->addIncoming(b.CreateAdd(i, step), store);
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyFunction(*fn, &os)) {
    fn->eraseFromParent();
    return Internal("cuda: invalid im2col kernel: " + os.str());
  }
  return grid;
}

}  // namespace jitd::devices::cuda
