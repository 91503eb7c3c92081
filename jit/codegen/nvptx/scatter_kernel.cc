#include "jit/codegen/nvptx/scatter_kernel.h"

#include <algorithm>
#include <memory>
#include <unordered_set>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/grid_kernel_emitter.h"
#include "jit/codegen/nvptx/kernel_function.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/eval/gather_dims.h"
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

namespace {

using ir::DType;
using ir::OpCode;

std::vector<int64_t> Field(const ir::Op& op, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct("scatter_dimension_numbers");
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

bool IsPlainElementType(DType t) {
  switch (t) {
    case DType::kPred:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64:
    case DType::kC64:
    case DType::kC128:
      return true;
    default:
      return ir::IsInteger(t);
  }
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

}  // namespace

bool IsNvptxEmittableScatter(const ir::Op& op) {
  if (op.code() != OpCode::kScatter || op.num_regions() != 1 || op.region(0).num_blocks() != 1) return false;
  if (op.num_operands() < 3 || op.num_operands() % 2 != 1) return false;
  const size_t n = (op.num_operands() - 1) / 2;
  if (op.num_results() != n) return false;
  const ir::Type& indices = op.operand(n)->type();
  if (!indices.is_tensor() || !ir::IsInteger(indices.dtype())) return false;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& in = op.operand(i)->type();
    const ir::Type& update = op.operand(n + 1 + i)->type();
    const ir::Type& out = op.result(i)->type();
    if (!in.is_tensor() || !update.is_tensor() || !out.is_tensor()) return false;
    if (!IsPlainElementType(in.dtype()) || update.dtype() != in.dtype() || out.dtype() != in.dtype()) return false;
    if (in.dims() != out.dims() || update.dims() != op.operand(n + 1)->type().dims()) return false;
  }
  std::vector<DType> types;
  for (size_t i = 0; i < n; ++i) types.push_back(op.result(i)->type().dtype());
  std::vector<DType> args = types;
  args.insert(args.end(), types.begin(), types.end());
  return IsNvptxScalarBlock(op.region(0).block(0), args, types);
}

bool IsNvptxScalarBlock(const ir::Block& block, const std::vector<DType>& args, const std::vector<DType>& results) {
  for (DType t : args) {
    if (!IsPlainElementType(t)) return false;
  }
  return IsScalarBlock(block, args, results, NvptxMath(), {.outer_constants = false, .bitcasts = true});
}

Status EmitSerialScatterKernel(llvm::Module& module, const ir::Op& op, const std::string& name) {
  if (!IsNvptxEmittableScatter(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.scatter' has no NVPTX kernel");
  }
  const size_t n = (op.num_operands() - 1) / 2;
  const std::vector<int64_t> window_dims = Field(op, "update_window_dims");
  const std::vector<int64_t> inserted = Field(op, "inserted_window_dims");
  const std::vector<int64_t> input_batching = Field(op, "input_batching_dims");
  const std::vector<int64_t> indices_batching = Field(op, "scatter_indices_batching_dims");
  const std::vector<int64_t> to_operand = Field(op, "scatter_dims_to_operand_dims");
  const std::vector<int64_t> ivd_field = Field(op, "index_vector_dim");
  const int64_t index_vector_dim = ivd_field.empty() ? 0 : ivd_field[0];
  const ir::Type& indices_type = op.operand(n)->type();
  const ir::Type& updates_type = op.operand(n + 1)->type();
  const std::vector<int64_t>& input_dims = op.result(0)->type().dims();
  const std::vector<int64_t>& update_dims = updates_type.dims();
  const int64_t indices_rank = indices_type.rank();
  const eval::DimMap map = eval::MapDims(updates_type.rank(), window_dims, static_cast<int64_t>(input_dims.size()),
                                         inserted, input_batching, index_vector_dim);
  for (int64_t d : to_operand) {
    if (d < 0 || d >= static_cast<int64_t>(input_dims.size())) {
      return InvalidArgument(op.loc().ToString() + ": scatter_dims_to_operand_dims holds " + std::to_string(d));
    }
  }
  const std::vector<int64_t> input_strides = Strides(input_dims);
  const std::vector<int64_t> indices_strides = Strides(indices_type.dims());
  const int64_t updates = updates_type.num_elements();

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, 2 * n + 1, {n, 2 * n + 1});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  for (unsigned i = 0; i < fn->arg_size(); ++i) ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
  // Only thread 0 of block 0 works (the launch has one thread; a bigger
  // one must not apply updates twice).
  llvm::Value* tid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  llvm::Value* ctaid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
  llvm::BasicBlock* work = llvm::BasicBlock::Create(ctx, "work", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateCondBr(b.CreateICmpEQ(b.CreateOr(tid, ctaid), b.getInt32(0)), work, done);

  // for (u = 0; u < updates; ++u)
  b.SetInsertPoint(work);
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "body", fn);
  llvm::BasicBlock* latch = llvm::BasicBlock::Create(ctx, "next", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* u = b.CreatePHI(b.getInt64Ty(), 2);
  u->addIncoming(b.getInt64(0), work);
  b.CreateCondBr(b.CreateICmpSLT(u, b.getInt64(updates)), body, done);

  b.SetInsertPoint(body);
  // The update index, row-major digits of u.
  std::vector<llvm::Value*> ui(update_dims.size());
  llvm::Value* rest = u;
  for (size_t d = update_dims.size(); d-- > 0;) {
    if (d == 0) {
      ui[d] = rest;
    } else {
      ui[d] = b.CreateURem(rest, b.getInt64(update_dims[d]));
      rest = b.CreateUDiv(rest, b.getInt64(update_dims[d]));
    }
  }
  std::vector<llvm::Value*> indices_index(static_cast<size_t>(indices_rank), b.getInt64(0));
  std::vector<llvm::Value*> result_index(input_dims.size(), b.getInt64(0));
  for (size_t d = 0; d < ui.size(); ++d) {
    if (map.batch_indices_dim[d] >= 0) indices_index[static_cast<size_t>(map.batch_indices_dim[d])] = ui[d];
  }
  for (size_t i = 0; i < input_batching.size() && i < indices_batching.size(); ++i) {
    result_index[static_cast<size_t>(input_batching[i])] = indices_index[static_cast<size_t>(indices_batching[i])];
  }
  llvm::Value* out_of_bounds = b.getFalse();
  const DType index_type = indices_type.dtype();
  for (size_t k = 0; k < to_operand.size(); ++k) {
    if (index_vector_dim < indices_rank) indices_index[static_cast<size_t>(index_vector_dim)] = b.getInt64(k);
    llvm::Value* offset = b.getInt64(0);
    for (size_t j = 0; j < indices_index.size(); ++j) {
      offset = b.CreateAdd(offset, b.CreateMul(indices_index[j], b.getInt64(indices_strides[j])));
    }
    llvm::Value* start = element.LoadAt(ptrs[n], index_type, offset);
    start = ir::IsSignedInt(index_type) ? b.CreateSExtOrTrunc(start, b.getInt64Ty())
                                        : b.CreateZExtOrTrunc(start, b.getInt64Ty());
    // An unsigned 64-bit start of 2^63 or more is far out of bounds (the
    // window offsets added below must not wrap it back in).
    if (!ir::IsSignedInt(index_type) && ir::BitWidth(index_type) >= 64) {
      out_of_bounds = b.CreateOr(out_of_bounds, b.CreateICmpSLT(start, b.getInt64(0)));
    }
    result_index[static_cast<size_t>(to_operand[k])] = start;
  }
  for (size_t d = 0; d < ui.size(); ++d) {
    if (map.window_operand_dim[d] >= 0) {
      llvm::Value*& r = result_index[static_cast<size_t>(map.window_operand_dim[d])];
      r = b.CreateAdd(r, ui[d]);
    }
  }
  llvm::Value* to = b.getInt64(0);
  for (size_t d = 0; d < result_index.size(); ++d) {
    out_of_bounds = b.CreateOr(out_of_bounds, b.CreateICmpUGE(result_index[d], b.getInt64(input_dims[d])));
    to = b.CreateAdd(to, b.CreateMul(result_index[d], b.getInt64(input_strides[d])));
  }
  llvm::BasicBlock* apply = llvm::BasicBlock::Create(ctx, "apply", fn);
  b.CreateCondBr(out_of_bounds, latch, apply);
  b.SetInsertPoint(apply);
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < n; ++i) args.push_back(element.LoadAt(ptrs[i], op.result(i)->type().dtype(), to));
  for (size_t i = 0; i < n; ++i) args.push_back(element.LoadAt(ptrs[n + 1 + i], op.result(i)->type().dtype(), u));
  std::vector<llvm::Value*> out = element.EmitScalarBlock(op.region(0).block(0), args);
  for (size_t i = 0; i < n && i < out.size(); ++i) element.StoreAt(out[i], op.result(i)->type().dtype(), ptrs[i], to);
  b.CreateBr(latch);
  b.SetInsertPoint(latch);
  u->addIncoming(b.CreateAdd(u, b.getInt64(1)), latch);
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();

  return FinishKernel(module, fn, element.status(), op);
}

StatusOr<GridPlan> EmitCopyKernel(llvm::Module& module, const std::string& name, int64_t bytes,
                                  const GridLimits& limits) {
  if (limits.block_threads <= 0 || limits.max_blocks <= 0) {
    return InvalidArgument("grid limits: block_threads and max_blocks must be positive");
  }
  int64_t word = 8;
  while (word > 1 && bytes % word != 0) word /= 2;
  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = bytes / word;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((plan.work_items + plan.block - 1) / plan.block, 1, limits.max_blocks);

  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Function* fn = DeclareKernel(module, name, 2, {0, 1});
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "body", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.SetInsertPoint(entry);
  const GridStride stride = ThreadGridStride(b, plan.block);
  llvm::Value* first = stride.first;
  llvm::Value* step = stride.step;
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(first, entry);
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(plan.work_items)), body, done);
  b.SetInsertPoint(body);
  llvm::Type* unit = b.getIntNTy(static_cast<unsigned>(8 * word));
  llvm::Value* x = b.CreateAlignedLoad(unit, b.CreateInBoundsGEP(unit, fn->getArg(0), i), llvm::Align(word));
  b.CreateAlignedStore(x, b.CreateInBoundsGEP(unit, fn->getArg(1), i), llvm::Align(word));
  i->addIncoming(b.CreateAdd(i, step), body);
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyFunction(*fn, &os)) {
    EraseKernel(module, fn);
    return Internal("codegen produced an invalid copy kernel: " + os.str());
  }
  return plan;
}

}  // namespace jitd::codegen
