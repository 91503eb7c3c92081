#include "jit/codegen/nvptx/sort_kernel.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/kernel_function.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/codegen/nvptx/scatter_kernel.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

namespace {

using ir::DType;

int64_t SortDimension(const ir::Op& op) {
  int64_t d = op.GetInt("dimension").value_or(-1);
  if (d < 0) d += op.operand(0)->type().rank();
  return d;
}

}  // namespace

bool IsNvptxEmittableSort(const ir::Op& op) {
  if (op.code() != ir::OpCode::kSort || op.num_regions() != 1 || op.region(0).num_blocks() != 1) return false;
  const size_t n = op.num_operands();
  if (n == 0 || op.num_results() != n) return false;
  const ir::Type& first = op.operand(0)->type();
  if (!first.is_tensor() || first.rank() == 0) return false;
  const int64_t d = SortDimension(op);
  if (d < 0 || d >= first.rank()) return false;
  std::vector<DType> args;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& t = op.operand(i)->type();
    if (!t.is_tensor() || t.dims() != first.dims() || op.result(i)->type() != t) return false;
    args.push_back(t.dtype());
    args.push_back(t.dtype());
  }
  return IsNvptxScalarBlock(op.region(0).block(0), args, {DType::kPred});
}

StatusOr<GridPlan> EmitSortKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                  const GridLimits& limits) {
  if (!IsNvptxEmittableSort(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.sort' has no NVPTX kernel");
  }
  const size_t n = op.num_operands();
  const std::vector<int64_t>& dims = op.operand(0)->type().dims();
  const size_t d = static_cast<size_t>(SortDimension(op));
  const int64_t length = dims[d];
  int64_t inner = 1;  // the stride of the sorted dimension
  for (size_t k = d + 1; k < dims.size(); ++k) inner *= dims[k];
  const int64_t rows = length == 0 ? 0 : op.operand(0)->type().num_elements() / length;

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = rows;
  plan.extent = length;
  plan.block = std::min<int64_t>(limits.block_threads,
                                 std::max<int64_t>(limits.warp_size, (rows + limits.warp_size - 1) / limits.warp_size *
                                                                         limits.warp_size));
  plan.grid = std::clamp<int64_t>((rows + plan.block - 1) / plan.block, 1, limits.max_blocks);

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, n, {0, 0});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  std::vector<DType> types;
  for (unsigned i = 0; i < n; ++i) {
    ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
    types.push_back(op.operand(i)->type().dtype());
  }
  // for (row = first; row < rows; row += step)
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, rows, "row");
  llvm::PHINode* row = loop.index;
  llvm::BasicBlock* row_body = b.GetInsertBlock();
  // Element j of the row is at base + j * inner.
  llvm::Value* base = b.CreateAdd(b.CreateMul(b.CreateUDiv(row, b.getInt64(inner)), b.getInt64(length * inner)),
                                  b.CreateURem(row, b.getInt64(inner)));
  auto at = [&](llvm::Value* j) { return b.CreateAdd(base, b.CreateMul(j, b.getInt64(inner))); };

  // for (i = 1; i < length; ++i) { j = i; while (j > 0 && less(x[j], x[j-1])) swap(j, j-1), --j; }
  llvm::BasicBlock* outer_header = llvm::BasicBlock::Create(ctx, "insert", fn);
  llvm::BasicBlock* outer_body = llvm::BasicBlock::Create(ctx, "insert_body", fn);
  llvm::BasicBlock* row_done = llvm::BasicBlock::Create(ctx, "row_done", fn);
  llvm::BasicBlock* sift = llvm::BasicBlock::Create(ctx, "sift", fn);
  llvm::BasicBlock* compare = llvm::BasicBlock::Create(ctx, "compare", fn);
  llvm::BasicBlock* swap = llvm::BasicBlock::Create(ctx, "swap", fn);
  llvm::BasicBlock* outer_latch = llvm::BasicBlock::Create(ctx, "insert_next", fn);
  b.CreateBr(outer_header);
  b.SetInsertPoint(outer_header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(1), row_body);
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(length)), outer_body, row_done);
  b.SetInsertPoint(outer_body);
  b.CreateBr(sift);
  b.SetInsertPoint(sift);
  llvm::PHINode* j = b.CreatePHI(b.getInt64Ty(), 2);
  j->addIncoming(i, outer_body);
  b.CreateCondBr(b.CreateICmpSGT(j, b.getInt64(0)), compare, outer_latch);
  b.SetInsertPoint(compare);
  llvm::Value* right = at(j);
  llvm::Value* left = at(b.CreateSub(j, b.getInt64(1)));
  std::vector<llvm::Value*> right_values, left_values, args;
  for (size_t k = 0; k < n; ++k) {
    right_values.push_back(element.LoadAt(ptrs[k], types[k], right));
    left_values.push_back(element.LoadAt(ptrs[k], types[k], left));
    args.push_back(right_values[k]);  // lhs: does x[j] sort before x[j - 1]?
    args.push_back(left_values[k]);
  }
  std::vector<llvm::Value*> less = element.EmitScalarBlock(op.region(0).block(0), args);
  llvm::Value* moves = less.empty() ? b.getFalse() : less[0];
  b.CreateCondBr(moves, swap, outer_latch);
  b.SetInsertPoint(swap);
  for (size_t k = 0; k < n; ++k) {
    element.StoreAt(right_values[k], types[k], ptrs[k], left);
    element.StoreAt(left_values[k], types[k], ptrs[k], right);
  }
  j->addIncoming(b.CreateSub(j, b.getInt64(1)), swap);
  b.CreateBr(sift);
  b.SetInsertPoint(outer_latch);
  i->addIncoming(b.CreateAdd(i, b.getInt64(1)), outer_latch);
  b.CreateBr(outer_header);
  b.SetInsertPoint(row_done);
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

}  // namespace jitd::codegen
