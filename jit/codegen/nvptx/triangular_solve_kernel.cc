#include "jit/codegen/nvptx/triangular_solve_kernel.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/kernel_function.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

using ir::DType;

namespace {
constexpr int64_t kMaxSolveDim = 32;  // unrolled: n^2 / 2 multiply-subtracts
}  // namespace

bool IsNvptxEmittableTriangularSolve(const ir::Op& op) {
  if (op.code() != ir::OpCode::kTriangularSolve || op.num_operands() != 2 || op.num_results() != 1) return false;
  const ir::Type& a = op.operand(0)->type();
  const ir::Type& b = op.operand(1)->type();
  const ir::Type& r = op.result(0)->type();
  if (!a.is_tensor() || !b.is_tensor() || !r.is_tensor() || a.rank() < 2 || b.rank() != a.rank() || r != b) {
    return false;
  }
  const DType t = a.dtype();
  if (!(t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64) || b.dtype() != t) return false;
  const int64_t rank = a.rank();
  const int64_t n = a.dim(rank - 1);
  if (a.dim(rank - 2) != n || n < 1 || n > kMaxSolveDim) return false;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    if (a.dim(d) != b.dim(d)) return false;
  }
  const bool left = op.GetBool("left_side").value_or(false);
  return (left ? b.dim(rank - 2) : b.dim(rank - 1)) == n;
}

StatusOr<GridPlan> EmitTriangularSolveKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                             const GridLimits& limits) {
  if (!IsNvptxEmittableTriangularSolve(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.triangular_solve' has no NVPTX kernel");
  }
  const ir::Type& a_type = op.operand(0)->type();
  const ir::Type& b_type = op.operand(1)->type();
  const int64_t rank = a_type.rank();
  const int64_t n = a_type.dim(rank - 1);
  const int64_t rows = b_type.dim(rank - 2), cols = b_type.dim(rank - 1);
  const bool left = op.GetBool("left_side").value_or(false);
  const bool lower = op.GetBool("lower").value_or(false);
  const bool unit = op.GetBool("unit_diagonal").value_or(false);
  const ir::EnumAttr* transpose_attr = op.GetEnum("transpose_a");
  const bool transposed = transpose_attr && transpose_attr->value != "NO_TRANSPOSE";
  const bool op_lower = lower != transposed;
  const bool forward = left == op_lower;
  const int64_t others = left ? cols : rows;
  const int64_t batch = rows * cols == 0 ? 0 : b_type.num_elements() / (rows * cols);
  const DType t = a_type.dtype();

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = batch * others;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((plan.work_items + plan.block - 1) / plan.block, 1, limits.max_blocks);

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, 3, {0, 2});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  for (unsigned i = 0; i < 3; ++i) ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, plan.work_items, "solve");
  llvm::PHINode* w = loop.index;

  llvm::Type* d = b.getDoubleTy();
  auto widen = [&](llvm::Value* v) { return v->getType()->isDoubleTy() ? v : b.CreateFPExt(v, d); };
  llvm::Value* bt = b.CreateUDiv(w, b.getInt64(others));
  llvm::Value* o = b.CreateURem(w, b.getInt64(others));
  llvm::Value* a_base = b.CreateMul(bt, b.getInt64(n * n));
  llvm::Value* x_base = b.CreateMul(bt, b.getInt64(rows * cols));
  // Element i of this thread's right-hand side (offset in b / the result).
  auto x_at = [&](int64_t i) {
    return left ? b.CreateAdd(x_base, b.CreateAdd(b.CreateMul(b.getInt64(i), b.getInt64(cols)), o))
                : b.CreateAdd(x_base, b.CreateAdd(b.CreateMul(o, b.getInt64(cols)), b.getInt64(i)));
  };
  auto op_a = [&](int64_t i, int64_t k) {  // op(a)[i, k]
    const int64_t r = transposed ? k : i, c = transposed ? i : k;
    return widen(element.LoadAt(ptrs[0], t, b.CreateAdd(a_base, b.getInt64(r * n + c))));
  };
  std::vector<llvm::Value*> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = widen(element.LoadAt(ptrs[1], t, x_at(i)));
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = forward ? s : n - 1 - s;
    llvm::Value* sum = x[static_cast<size_t>(i)];
    for (int64_t k = 0; k < n; ++k) {
      if (!(forward ? k < i : k > i)) continue;
      llvm::Value* term = left ? b.CreateFMul(op_a(i, k), x[static_cast<size_t>(k)])
                               : b.CreateFMul(x[static_cast<size_t>(k)], op_a(k, i));
      sum = b.CreateFSub(sum, term);
    }
    x[static_cast<size_t>(i)] = unit ? sum : b.CreateFDiv(sum, op_a(i, i));
  }
  for (int64_t i = 0; i < n; ++i) {
    llvm::Value* v = x[static_cast<size_t>(i)];
    if (t != DType::kF64) v = b.CreateFPTrunc(v, b.getFloatTy());
    element.StoreAt(v, t, ptrs[2], x_at(i));
  }
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

}  // namespace jitd::codegen
