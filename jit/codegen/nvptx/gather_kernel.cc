#include "jit/codegen/nvptx/gather_kernel.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/kernel_function.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/codegen/nvptx/scatter_kernel.h"
#include "jit/eval/gather_dims.h"
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

std::vector<int64_t> Field(const ir::Op& op, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct("dimension_numbers");
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

bool InRange(const std::vector<int64_t>& dims, int64_t rank) {
  return std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d >= 0 && d < rank; });
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

}  // namespace

bool IsNvptxEmittableGather(const ir::Op& op) {
  if (op.code() != ir::OpCode::kGather || op.num_operands() != 2 || op.num_results() != 1) return false;
  const ir::Type& operand = op.operand(0)->type();
  const ir::Type& indices = op.operand(1)->type();
  const ir::Type& result = op.result(0)->type();
  if (!operand.is_tensor() || !indices.is_tensor() || !result.is_tensor()) return false;
  if (!ir::IsInteger(indices.dtype()) || result.dtype() != operand.dtype()) return false;
  // A plain element type: the types IsNvptxScalarBlock accepts.
  switch (operand.dtype()) {
    case DType::kPred: case DType::kF16: case DType::kBF16: case DType::kF32: case DType::kF64:
    case DType::kC64: case DType::kC128:
      break;
    default:
      if (!ir::IsInteger(operand.dtype())) return false;
  }
  const std::optional<std::vector<int64_t>> sizes = op.GetI64Array("slice_sizes");
  if (!sizes || static_cast<int64_t>(sizes->size()) != operand.rank()) return false;
  for (size_t d = 0; d < sizes->size(); ++d) {
    if ((*sizes)[d] < 1 || (*sizes)[d] > std::max<int64_t>(operand.dim(static_cast<int64_t>(d)), 1)) return false;
  }
  if (!InRange(Field(op, "start_index_map"), operand.rank()) || !InRange(Field(op, "offset_dims"), result.rank()) ||
      !InRange(Field(op, "operand_batching_dims"), operand.rank()) ||
      !InRange(Field(op, "start_indices_batching_dims"), indices.rank())) {
    return false;
  }
  return Field(op, "operand_batching_dims").size() == Field(op, "start_indices_batching_dims").size();
}

StatusOr<GridPlan> EmitGatherKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                    const GridLimits& limits) {
  if (!IsNvptxEmittableGather(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.gather' has no NVPTX kernel");
  }
  const std::vector<int64_t> offset_dims = Field(op, "offset_dims");
  const std::vector<int64_t> collapsed = Field(op, "collapsed_slice_dims");
  const std::vector<int64_t> operand_batching = Field(op, "operand_batching_dims");
  const std::vector<int64_t> indices_batching = Field(op, "start_indices_batching_dims");
  const std::vector<int64_t> start_index_map = Field(op, "start_index_map");
  const std::vector<int64_t> ivd_field = Field(op, "index_vector_dim");
  const int64_t index_vector_dim = ivd_field.empty() ? 0 : ivd_field[0];
  const std::vector<int64_t> slice_sizes = *op.GetI64Array("slice_sizes");
  const ir::Type& operand_type = op.operand(0)->type();
  const ir::Type& indices_type = op.operand(1)->type();
  const ir::Type& result_type = op.result(0)->type();
  const std::vector<int64_t>& operand_dims = operand_type.dims();
  const std::vector<int64_t>& result_dims = result_type.dims();
  const int64_t indices_rank = indices_type.rank();
  const eval::DimMap map = eval::MapDims(result_type.rank(), offset_dims, operand_type.rank(), collapsed,
                                         operand_batching, index_vector_dim);
  const std::vector<int64_t> operand_strides = Strides(operand_dims);
  const std::vector<int64_t> indices_strides = Strides(indices_type.dims());

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = result_type.num_elements();
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
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, plan.work_items, "element");
  llvm::PHINode* o = loop.index;

  std::vector<llvm::Value*> ri(result_dims.size());
  llvm::Value* rest = o;
  for (size_t d = result_dims.size(); d-- > 0;) {
    ri[d] = d == 0 ? rest : b.CreateURem(rest, b.getInt64(result_dims[d]));
    if (d > 0) rest = b.CreateUDiv(rest, b.getInt64(result_dims[d]));
  }
  std::vector<llvm::Value*> indices_index(static_cast<size_t>(indices_rank), b.getInt64(0));
  std::vector<llvm::Value*> operand_index(operand_dims.size(), b.getInt64(0));
  for (size_t d = 0; d < ri.size(); ++d) {
    if (map.batch_indices_dim[d] >= 0) indices_index[static_cast<size_t>(map.batch_indices_dim[d])] = ri[d];
  }
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    operand_index[static_cast<size_t>(operand_batching[i])] = indices_index[static_cast<size_t>(indices_batching[i])];
  }
  const DType index_type = indices_type.dtype();
  for (size_t k = 0; k < start_index_map.size(); ++k) {
    if (index_vector_dim < indices_rank) indices_index[static_cast<size_t>(index_vector_dim)] = b.getInt64(k);
    llvm::Value* offset = b.getInt64(0);
    for (size_t j = 0; j < indices_index.size(); ++j) {
      offset = b.CreateAdd(offset, b.CreateMul(indices_index[j], b.getInt64(indices_strides[j])));
    }
    const size_t d = static_cast<size_t>(start_index_map[k]);
    const int64_t hi = std::max<int64_t>(operand_dims[d] - slice_sizes[d], 0);
    llvm::Value* v = element.LoadAt(ptrs[1], index_type, offset);
    llvm::Value* start;
    if (ir::IsUnsignedInt(index_type)) {
      v = b.CreateZExtOrTrunc(v, b.getInt64Ty());
      start = b.CreateSelect(b.CreateICmpUGT(v, b.getInt64(hi)), b.getInt64(hi), v);
    } else {
      v = b.CreateSExtOrTrunc(v, b.getInt64Ty());
      start = b.CreateSelect(b.CreateICmpSLT(v, b.getInt64(0)), b.getInt64(0), v);
      start = b.CreateSelect(b.CreateICmpSGT(start, b.getInt64(hi)), b.getInt64(hi), start);
    }
    operand_index[d] = start;
  }
  for (size_t d = 0; d < ri.size(); ++d) {
    if (map.window_operand_dim[d] >= 0) {
      llvm::Value*& x = operand_index[static_cast<size_t>(map.window_operand_dim[d])];
      x = b.CreateAdd(x, ri[d]);
    }
  }
  llvm::Value* from = b.getInt64(0);
  for (size_t d = 0; d < operand_index.size(); ++d) {
    from = b.CreateAdd(from, b.CreateMul(operand_index[d], b.getInt64(operand_strides[d])));
  }
  const DType t = result_type.dtype();
  element.StoreAt(element.LoadAt(ptrs[0], t, from), t, ptrs[2], o);
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

}  // namespace jitd::codegen
