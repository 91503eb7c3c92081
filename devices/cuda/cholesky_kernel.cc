#include "devices/cuda/cholesky_kernel.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::devices::cuda {

namespace {

struct Shape {
  int64_t n = 0;
  int64_t batch = 0;
};

Shape ShapeOf(const ir::Op& op) {
  const ir::Type& t = op.operand(0)->type();
  Shape s;
  s.n = t.dim(t.rank() - 1);
  s.batch = s.n == 0 ? 0 : t.num_elements() / (s.n * s.n);
  return s;
}

}  // namespace

bool IsNvptxEmittableCholesky(const ir::Op& op) {
  if (op.code() != ir::OpCode::kCholesky || op.num_operands() != 1 || op.num_results() != 1) return false;
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& out = op.result(0)->type();
  if (!in.is_tensor() || !(in == out) || in.rank() < 2) return false;
  if (in.dtype() != ir::DType::kF32 && in.dtype() != ir::DType::kF64) return false;
  return in.dim(in.rank() - 1) == in.dim(in.rank() - 2) && in.num_elements() > 0;
}

int64_t CholeskyScratchBytes(const ir::Op& op) {
  const Shape s = ShapeOf(op);
  return s.batch * s.n * s.n * 8;
}

StatusOr<codegen::GridPlan> EmitCholeskyKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                               const codegen::GridLimits& limits) {
  if (!IsNvptxEmittableCholesky(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.cholesky' has no NVPTX kernel");
  }
  if (limits.block_threads <= 0 || limits.max_blocks <= 0) {
    return InvalidArgument("grid limits: block_threads and max_blocks must be positive");
  }
  const Shape shape = ShapeOf(op);
  const bool lower = op.GetBool("lower").value_or(false);
  const bool f64 = op.operand(0)->type().dtype() == ir::DType::kF64;

  codegen::GridPlan plan;
  plan.kind = codegen::GridKind::kFlat;
  plan.work_items = shape.batch;
  plan.block = std::min<int64_t>(limits.block_threads, 64);
  plan.grid = std::clamp<int64_t>((shape.batch + plan.block - 1) / plan.block, 1, limits.max_blocks);
  plan.extent = shape.n;

  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* global = llvm::PointerType::get(ctx, 1);
  llvm::Function* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {global, global, global}, false),
                                              llvm::Function::ExternalLinkage, name, module);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i = 0; i < 3; ++i) fn->addParamAttr(i, llvm::Attribute::NoAlias);
  fn->addParamAttr(0, llvm::Attribute::ReadOnly);
  module.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "kernel"),
                                           llvm::ValueAsMetadata::get(b.getInt32(1))}));
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* d = b.getDoubleTy();
  llvm::Type* t = f64 ? d : b.getFloatTy();
  const llvm::Align t_align(f64 ? 8 : 4);
  const llvm::Align d_align(8);

  // for (v = lo; v < hi; v += step) body(v): counters in allocas (SROA
  // makes them registers).
  auto loop = [&](llvm::Value* lo, llvm::Value* hi, llvm::Value* step, const std::function<void(llvm::Value*)>& body) {
    llvm::IRBuilderBase::InsertPoint here = b.saveIP();
    b.SetInsertPoint(entry, entry->begin());
    llvm::AllocaInst* var = b.CreateAlloca(i64);
    b.restoreIP(here);
    b.CreateStore(lo, var);
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "loop", fn);
    llvm::BasicBlock* inner = llvm::BasicBlock::Create(ctx, "body", fn);
    llvm::BasicBlock* after = llvm::BasicBlock::Create(ctx, "after", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::Value* v = b.CreateLoad(i64, var);
    b.CreateCondBr(b.CreateICmpSLT(v, hi), inner, after);
    b.SetInsertPoint(inner);
    body(v);
    b.CreateStore(b.CreateAdd(b.CreateLoad(i64, var), step), var);
    b.CreateBr(head);
    b.SetInsertPoint(after);
  };
  auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), i64); };
  llvm::Value* block = b.getInt64(plan.block);
  llvm::Value* first = b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), block),
                                   sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  llvm::Value* stride = b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), block);
  llvm::Value* n = b.getInt64(shape.n);
  llvm::Value* zero = b.getInt64(0);
  llvm::Value* one = b.getInt64(1);
  llvm::Argument* a_ptr = fn->getArg(0);
  llvm::Argument* out_ptr = fn->getArg(1);
  llvm::Argument* l_ptr = fn->getArg(2);

  llvm::BasicBlock* body_end = nullptr;
  loop(first, b.getInt64(shape.batch), stride, [&](llvm::Value* m) {
    llvm::Value* base = b.CreateMul(m, b.getInt64(shape.n * shape.n));
    auto index = [&](llvm::Value* i, llvm::Value* j) { return b.CreateAdd(base, b.CreateAdd(b.CreateMul(i, n), j)); };
    // a[i][j] for i >= j as the lower factor sees it (upper: a[j][i]).
    auto in = [&](llvm::Value* i, llvm::Value* j) {
      llvm::Value* at = lower ? index(i, j) : index(j, i);
      llvm::Value* x = b.CreateAlignedLoad(t, b.CreateInBoundsGEP(t, a_ptr, at), t_align);
      return f64 ? x : b.CreateFPExt(x, d);
    };
    auto l_at = [&](llvm::Value* i, llvm::Value* j) { return b.CreateInBoundsGEP(d, l_ptr, index(i, j)); };
    auto l = [&](llvm::Value* i, llvm::Value* j) { return b.CreateAlignedLoad(d, l_at(i, j), d_align); };
    llvm::AllocaInst* acc;
    {
      llvm::IRBuilderBase::InsertPoint here = b.saveIP();
      b.SetInsertPoint(entry, entry->begin());
      acc = b.CreateAlloca(d);
      b.restoreIP(here);
    }
    loop(zero, n, one, [&](llvm::Value* j) {
      b.CreateStore(in(j, j), acc);
      loop(zero, j, one, [&](llvm::Value* k) {
        llvm::Value* x = l(j, k);
        b.CreateStore(b.CreateFSub(b.CreateLoad(d, acc), b.CreateFMul(x, x)), acc);
      });
      llvm::Value* dv = b.CreateLoad(d, acc);
      llvm::Value* root = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, dv);
      llvm::Value* ljj = b.CreateSelect(b.CreateFCmpOGE(dv, llvm::ConstantFP::get(d, 0.0)), root,
                                        llvm::ConstantFP::getNaN(d));
      b.CreateAlignedStore(ljj, l_at(j, j), d_align);
      loop(b.CreateAdd(j, one), n, one, [&](llvm::Value* i) {
        b.CreateStore(in(i, j), acc);
        loop(zero, j, one, [&](llvm::Value* k) {
          b.CreateStore(b.CreateFSub(b.CreateLoad(d, acc), b.CreateFMul(l(i, k), l(j, k))), acc);
        });
        b.CreateAlignedStore(b.CreateFDiv(b.CreateLoad(d, acc), b.CreateAlignedLoad(d, l_at(j, j), d_align)),
                             l_at(i, j), d_align);
      });
    });
    // The result: each value rounded once, the other triangle zero.
    loop(zero, n, one, [&](llvm::Value* i) {
      loop(zero, n, one, [&](llvm::Value* j) {
        // lower: out[i][j] = l[i][j] for j <= i; upper: out[i][j] = l[j][i] for j >= i.
        llvm::Value* inside = lower ? b.CreateICmpSLE(j, i) : b.CreateICmpSGE(j, i);
        llvm::Value* src_i = lower ? i : j;
        llvm::Value* src_j = lower ? j : i;
        // Clamp the read into the computed triangle (the select drops it outside).
        llvm::Value* safe_i = b.CreateSelect(inside, src_i, zero);
        llvm::Value* safe_j = b.CreateSelect(inside, src_j, zero);
        llvm::Value* v = l(safe_i, safe_j);
        llvm::Value* rounded = f64 ? v : b.CreateFPTrunc(v, t);
        llvm::Value* result = b.CreateSelect(inside, rounded, llvm::ConstantFP::get(t, 0.0));
        b.CreateAlignedStore(result, b.CreateInBoundsGEP(t, out_ptr, index(i, j)), t_align);
      });
    });
    body_end = b.GetInsertBlock();
  });
  (void)body_end;
  b.CreateRetVoid();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyFunction(*fn, &os)) {
    fn->eraseFromParent();
    return Internal("cuda: invalid cholesky kernel: " + os.str());
  }
  return plan;
}

}  // namespace jitd::devices::cuda
