#include "jit/codegen/nvptx/rng_kernel.h"

#include <algorithm>
#include <vector>

#include "jit/codegen/nvptx/kernel_function.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

using ir::DType;

bool IsNvptxEmittableRngBitGenerator(const ir::Op& op) {
  if (op.code() != ir::OpCode::kRngBitGenerator || op.num_operands() != 1 || op.num_results() != 2) return false;
  const ir::EnumAttr* algorithm = op.GetEnum("rng_algorithm");
  if (!algorithm) algorithm = op.GetEnum("algorithm");
  if (!algorithm || algorithm->value != "THREE_FRY") return false;
  const ir::Type& state = op.operand(0)->type();
  const ir::Type& out_state = op.result(0)->type();
  const ir::Type& out = op.result(1)->type();
  if (!state.is_tensor() || state.dtype() != DType::kU64 || state.rank() != 1 || state.dim(0) != 2) return false;
  if (out_state != state || !out.is_tensor()) return false;
  return out.dtype() == DType::kU64 || out.dtype() == DType::kS64 || out.dtype() == DType::kF64;
}

StatusOr<GridPlan> EmitRngBitGeneratorKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                             const GridLimits& limits) {
  if (!IsNvptxEmittableRngBitGenerator(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.rng_bit_generator' has no NVPTX kernel");
  }
  const int64_t n = op.result(1)->type().num_elements();
  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = n;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((n + plan.block - 1) / plan.block, 1, limits.max_blocks);

  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Function* fn = DeclareKernel(module, name, 3, {0, 1});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  llvm::BasicBlock* write_state = llvm::BasicBlock::Create(ctx, "state", fn);
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "element", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* state = fn->getArg(0);
  llvm::Value* new_state = fn->getArg(1);
  llvm::Value* out = fn->getArg(2);
  llvm::Value* key = b.CreateLoad(i64, state);
  llvm::Value* counter = b.CreateLoad(i64, b.CreateGEP(i64, state, b.getInt64(1)));
  const GridStride stride = ThreadGridStride(b, plan.block);
  llvm::Value* first = stride.first;
  llvm::Value* step = stride.step;
  b.CreateCondBr(b.CreateICmpEQ(first, b.getInt64(0)), write_state, header);
  // Thread 0: [key, counter + n] (the counter advances by the blocks used).
  b.SetInsertPoint(write_state);
  b.CreateStore(key, new_state);
  b.CreateStore(b.CreateAdd(counter, b.getInt64(n)), b.CreateGEP(i64, new_state, b.getInt64(1)));
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(i64, 3);
  i->addIncoming(first, entry);
  i->addIncoming(first, write_state);
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(n)), body, done);
  b.SetInsertPoint(body);
  // Threefry-2x32, 20 rounds: as jit/eval/rng_bits.h's ThreeFry2x32.
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  llvm::Value* k0 = b.CreateTrunc(key, i32);
  llvm::Value* k1 = b.CreateTrunc(b.CreateLShr(key, 32), i32);
  llvm::Value* ks[3] = {k0, k1, b.CreateXor(b.CreateXor(b.getInt32(0x1BD11BDA), k0), k1)};
  llvm::Value* c = b.CreateAdd(counter, i);
  llvm::Value* x0 = b.CreateAdd(b.CreateTrunc(c, i32), ks[0]);
  llvm::Value* x1 = b.CreateAdd(b.CreateTrunc(b.CreateLShr(c, 32), i32), ks[1]);
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      x0 = b.CreateAdd(x0, x1);
      const int rot = kRotations[(group % 2) * 4 + r];
      x1 = b.CreateIntrinsic(llvm::Intrinsic::fshl, {i32}, {x1, x1, b.getInt32(static_cast<uint32_t>(rot))});
      x1 = b.CreateXor(x1, x0);
    }
    x0 = b.CreateAdd(x0, ks[(group + 1) % 3]);
    x1 = b.CreateAdd(x1, b.CreateAdd(ks[(group + 2) % 3], b.getInt32(static_cast<uint32_t>(group + 1))));
  }
  llvm::Value* word = b.CreateOr(b.CreateZExt(x0, i64), b.CreateShl(b.CreateZExt(x1, i64), 32));
  b.CreateStore(word, b.CreateGEP(i64, out, i));
  i->addIncoming(b.CreateAdd(i, step), body);
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, Status::Ok(), op));
  return plan;
}

}  // namespace jitd::codegen
