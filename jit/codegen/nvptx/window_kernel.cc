#include "jit/codegen/nvptx/window_kernel.h"

#include <algorithm>
#include <cstring>
#include <functional>
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

struct Window {
  std::vector<int64_t> size, strides, base_dilations, window_dilations, pad_low;
};

// The window attributes (1s and 0s where absent); nullopt when malformed.
std::optional<Window> WindowOf(const ir::Op& op) {
  const size_t rank = static_cast<size_t>(op.operand(0)->type().rank());
  auto ints = [&](const char* name) -> std::optional<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> v = op.GetI64Array(name);
    if (!v) return std::vector<int64_t>(rank, 1);
    if (v->size() != rank) return std::nullopt;
    for (int64_t x : *v) {
      if (x < 1) return std::nullopt;
    }
    return v;
  };
  Window w;
  auto size = ints("window_dimensions");
  auto strides = ints("window_strides");
  auto base = ints("base_dilations");
  auto dil = ints("window_dilations");
  if (!size || !strides || !base || !dil) return std::nullopt;
  w.size = *size;
  w.strides = *strides;
  w.base_dilations = *base;
  w.window_dilations = *dil;
  w.pad_low.assign(rank, 0);
  if (const ir::Attribute* a = op.attr("padding")) {
    const auto* dense = a->get_if<ir::DenseElementsAttr>();
    if (!dense || !dense->data || dense->type.dtype() != DType::kS64) return std::nullopt;
    const std::vector<uint8_t>& bytes = *dense->data;
    for (size_t d = 0; d < rank; ++d) {
      const size_t at = bytes.size() == 8 ? 0 : 16 * d;  // splat, or [rank, 2] row-major
      if (at + 8 > bytes.size()) return std::nullopt;
      std::memcpy(&w.pad_low[d], bytes.data() + at, 8);
      if (w.pad_low[d] < -(int64_t{1} << 40) || w.pad_low[d] > (int64_t{1} << 40)) return std::nullopt;
    }
  }
  return w;
}

}  // namespace

bool IsNvptxEmittableReduceWindow(const ir::Op& op) {
  if (op.code() != ir::OpCode::kReduceWindow || op.num_regions() != 1 || op.region(0).num_blocks() != 1) return false;
  const size_t n = op.num_results();
  if (n == 0 || op.num_operands() != 2 * n) return false;
  std::vector<DType> types;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& in = op.operand(i)->type();
    const ir::Type& init = op.operand(n + i)->type();
    const ir::Type& out = op.result(i)->type();
    if (!in.is_tensor() || !init.is_tensor() || !out.is_tensor() || init.rank() != 0) return false;
    if (in.dtype() != out.dtype() || init.dtype() != out.dtype()) return false;
    if (in.dims() != op.operand(0)->type().dims() || out.dims() != op.result(0)->type().dims()) return false;
    types.push_back(out.dtype());
  }
  if (!WindowOf(op)) return false;
  std::vector<DType> args = types;
  args.insert(args.end(), types.begin(), types.end());
  return IsNvptxScalarBlock(op.region(0).block(0), args, types);
}

StatusOr<GridPlan> EmitReduceWindowKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                          const GridLimits& limits) {
  if (!IsNvptxEmittableReduceWindow(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.reduce_window' has no NVPTX kernel");
  }
  const size_t n = op.num_results();
  const Window w = *WindowOf(op);
  const std::vector<int64_t>& in_dims = op.operand(0)->type().dims();
  const std::vector<int64_t>& out_dims = op.result(0)->type().dims();
  const size_t rank = in_dims.size();
  const bool empty_input = op.operand(0)->type().num_elements() == 0;
  int64_t window_elements = 1;
  for (int64_t s : w.size) window_elements *= s;

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = op.result(0)->type().num_elements();
  plan.extent = window_elements;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((plan.work_items + plan.block - 1) / plan.block, 1, limits.max_blocks);

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, 3 * n, {0, 2 * n});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  for (unsigned i = 0; i < fn->arg_size(); ++i) ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
  std::vector<llvm::Value*> inits;
  for (size_t i = 0; i < n; ++i) inits.push_back(element.LoadAt(ptrs[n + i], op.result(i)->type().dtype(), b.getInt64(0)));
  // for (o = first; o < outputs; o += step)
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, plan.work_items, "output");
  llvm::PHINode* o = loop.index;
  std::vector<llvm::Value*> r(rank);
  llvm::Value* rest = o;
  for (size_t d = rank; d-- > 0;) {
    r[d] = d == 0 ? rest : b.CreateURem(rest, b.getInt64(out_dims[d]));
    if (d > 0) rest = b.CreateUDiv(rest, b.getInt64(out_dims[d]));
  }
  // for (k = 0; k < window_elements; ++k), k's digits the window index.
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* wheader = llvm::BasicBlock::Create(ctx, "window", fn);
  llvm::BasicBlock* wbody = llvm::BasicBlock::Create(ctx, "window_element", fn);
  llvm::BasicBlock* wdone = llvm::BasicBlock::Create(ctx, "window_done", fn);
  b.CreateBr(wheader);
  b.SetInsertPoint(wheader);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2);
  k->addIncoming(b.getInt64(0), pre);
  std::vector<llvm::PHINode*> acc;
  std::vector<llvm::Value*> acc_values;
  for (size_t i = 0; i < n; ++i) {
    acc.push_back(b.CreatePHI(inits[i]->getType(), 2));
    acc[i]->addIncoming(inits[i], pre);
    acc_values.push_back(acc[i]);
  }
  b.CreateCondBr(b.CreateICmpSLT(k, b.getInt64(window_elements)), wbody, wdone);
  b.SetInsertPoint(wbody);
  llvm::Value* in = b.getInt64(0);
  llvm::Value* padding = b.getInt1(empty_input);
  llvm::Value* wrest = k;
  int64_t in_stride = 1;
  for (size_t d = rank; d-- > 0;) {
    llvm::Value* wd = d == 0 ? wrest : b.CreateURem(wrest, b.getInt64(w.size[d]));
    if (d > 0) wrest = b.CreateUDiv(wrest, b.getInt64(w.size[d]));
    // p = r * stride + w * window_dilation - pad_low, in the padded and
    // base-dilated input.
    llvm::Value* p = b.CreateSub(b.CreateAdd(b.CreateMul(r[d], b.getInt64(w.strides[d])),
                                             b.CreateMul(wd, b.getInt64(w.window_dilations[d]))),
                                 b.getInt64(w.pad_low[d]));
    llvm::Value* q = b.CreateSDiv(p, b.getInt64(w.base_dilations[d]));
    llvm::Value* hole = b.CreateICmpNE(b.CreateSRem(p, b.getInt64(w.base_dilations[d])), b.getInt64(0));
    padding = b.CreateOr(padding, b.CreateOr(b.CreateICmpSLT(p, b.getInt64(0)),
                                             b.CreateOr(hole, b.CreateICmpSGE(q, b.getInt64(in_dims[d])))));
    in = b.CreateAdd(in, b.CreateMul(q, b.getInt64(in_stride)));
    in_stride *= in_dims[d];
  }
  llvm::Value* safe = b.CreateSelect(padding, b.getInt64(0), in);  // never read out of bounds
  std::vector<llvm::Value*> args = acc_values;
  for (size_t i = 0; i < n; ++i) {
    llvm::Value* x = empty_input ? inits[i] : element.LoadAt(ptrs[i], op.result(i)->type().dtype(), safe);
    args.push_back(b.CreateSelect(padding, inits[i], x));
  }
  std::vector<llvm::Value*> next = element.EmitScalarBlock(op.region(0).block(0), args);
  llvm::BasicBlock* wlatch = b.GetInsertBlock();
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), wlatch);
  for (size_t i = 0; i < n && i < next.size(); ++i) acc[i]->addIncoming(next[i], wlatch);
  b.CreateBr(wheader);
  b.SetInsertPoint(wdone);
  for (size_t i = 0; i < n; ++i) element.StoreAt(acc[i], op.result(i)->type().dtype(), ptrs[2 * n + i], o);
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

bool IsNvptxEmittableSelectAndScatter(const ir::Op& op) {
  if (op.code() != ir::OpCode::kSelectAndScatter || op.num_regions() != 2 || op.num_operands() != 3 ||
      op.num_results() != 1) {
    return false;
  }
  const DType t = op.result(0)->type().dtype();
  for (size_t i = 0; i < 3; ++i) {
    const ir::Type& type = op.operand(i)->type();
    if (!type.is_tensor() || type.dtype() != t) return false;
  }
  if (op.operand(2)->type().rank() != 0 || op.result(0)->type().dims() != op.operand(0)->type().dims()) return false;
  if (op.operand(0)->type().rank() != op.operand(1)->type().rank()) return false;
  if (op.region(0).num_blocks() != 1 || op.region(1).num_blocks() != 1) return false;
  if (op.GetI64Array("base_dilations") || op.GetI64Array("window_dilations")) return false;
  if (!WindowOf(op)) return false;
  return IsNvptxScalarBlock(op.region(0).block(0), {t, t}, {DType::kPred}) &&
         IsNvptxScalarBlock(op.region(1).block(0), {t, t}, {t});
}

StatusOr<GridPlan> EmitSelectAndScatterKernel(llvm::Module& module, const ir::Op& op, const std::string& name) {
  if (!IsNvptxEmittableSelectAndScatter(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.select_and_scatter' has no NVPTX kernel");
  }
  const Window w = *WindowOf(op);
  const DType t = op.result(0)->type().dtype();
  const std::vector<int64_t>& in_dims = op.operand(0)->type().dims();
  const std::vector<int64_t>& source_dims = op.operand(1)->type().dims();
  const size_t rank = in_dims.size();
  int64_t window_elements = 1;
  for (int64_t s : w.size) window_elements *= s;
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in_dims[d];

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = op.operand(1)->type().num_elements();
  plan.extent = window_elements;
  plan.grid = 1;
  plan.block = 1;

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, 4, {0, 3});

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  for (unsigned i = 0; i < 4; ++i) ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
  llvm::Value* operand = ptrs[0];
  llvm::Value* source = ptrs[1];
  llvm::Value* result = ptrs[3];
  llvm::Value* tid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  llvm::Value* ctaid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
  llvm::BasicBlock* work = llvm::BasicBlock::Create(ctx, "work", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateCondBr(b.CreateICmpEQ(b.CreateOr(tid, ctaid), b.getInt32(0)), work, done);
  b.SetInsertPoint(work);
  llvm::Value* init = element.LoadAt(ptrs[2], t, b.getInt64(0));

  // A counted loop from the builder's block; `body` emits one iteration.
  auto loop = [&](int64_t count, const std::function<void(llvm::Value*)>& body) {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn);
    llvm::BasicBlock* inside = llvm::BasicBlock::Create(ctx, "body", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
    i->addIncoming(b.getInt64(0), pre);
    b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(count)), inside, exit);
    b.SetInsertPoint(inside);
    body(i);
    i->addIncoming(b.CreateAdd(i, b.getInt64(1)), b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(exit);
  };
  // The result starts as the init value everywhere.
  loop(op.result(0)->type().num_elements(), [&](llvm::Value* j) { element.StoreAt(init, t, result, j); });
  loop(plan.work_items, [&](llvm::Value* s) {
    std::vector<llvm::Value*> sd(rank);
    llvm::Value* rest = s;
    for (size_t d = rank; d-- > 0;) {
      sd[d] = d == 0 ? rest : b.CreateURem(rest, b.getInt64(source_dims[d]));
      if (d > 0) rest = b.CreateUDiv(rest, b.getInt64(source_dims[d]));
    }
    // The window fold: `selected` is -1 until an in-bounds element is seen.
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* wheader = llvm::BasicBlock::Create(ctx, "window", fn);
    llvm::BasicBlock* wbody = llvm::BasicBlock::Create(ctx, "window_element", fn);
    llvm::BasicBlock* check = llvm::BasicBlock::Create(ctx, "in_bounds", fn);
    llvm::BasicBlock* compare = llvm::BasicBlock::Create(ctx, "compare", fn);
    llvm::BasicBlock* wlatch = llvm::BasicBlock::Create(ctx, "window_next", fn);
    llvm::BasicBlock* wdone = llvm::BasicBlock::Create(ctx, "window_done", fn);
    b.CreateBr(wheader);
    b.SetInsertPoint(wheader);
    llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2);
    llvm::PHINode* selected = b.CreatePHI(b.getInt64Ty(), 2);
    k->addIncoming(b.getInt64(0), pre);
    selected->addIncoming(b.getInt64(-1), pre);
    b.CreateCondBr(b.CreateICmpSLT(k, b.getInt64(window_elements)), wbody, wdone);
    b.SetInsertPoint(wbody);
    llvm::Value* in = b.getInt64(0);
    llvm::Value* inside = b.getTrue();
    llvm::Value* wrest = k;
    for (size_t d = rank; d-- > 0;) {
      llvm::Value* wd = d == 0 ? wrest : b.CreateURem(wrest, b.getInt64(w.size[d]));
      if (d > 0) wrest = b.CreateUDiv(wrest, b.getInt64(w.size[d]));
      llvm::Value* p = b.CreateSub(b.CreateAdd(b.CreateMul(sd[d], b.getInt64(w.strides[d])), wd),
                                   b.getInt64(w.pad_low[d]));
      inside = b.CreateAnd(inside, b.CreateICmpULT(p, b.getInt64(in_dims[d])));
      in = b.CreateAdd(in, b.CreateMul(p, b.getInt64(in_strides[d])));
    }
    b.CreateCondBr(inside, check, wlatch);
    b.SetInsertPoint(check);
    b.CreateCondBr(b.CreateICmpSLT(selected, b.getInt64(0)), wlatch, compare);
    b.SetInsertPoint(compare);
    std::vector<llvm::Value*> keep = element.EmitScalarBlock(
        op.region(0).block(0), {element.LoadAt(operand, t, selected), element.LoadAt(operand, t, in)});
    llvm::Value* chosen = b.CreateSelect(keep.empty() ? b.getTrue() : keep[0], selected, in);
    llvm::BasicBlock* compare_end = b.GetInsertBlock();
    b.CreateBr(wlatch);
    b.SetInsertPoint(wlatch);
    llvm::PHINode* next = b.CreatePHI(b.getInt64Ty(), 3);
    next->addIncoming(selected, wbody);
    next->addIncoming(in, check);
    next->addIncoming(chosen, compare_end);
    k->addIncoming(b.CreateAdd(k, b.getInt64(1)), wlatch);
    selected->addIncoming(next, wlatch);
    b.CreateBr(wheader);
    b.SetInsertPoint(wdone);
    llvm::BasicBlock* apply = llvm::BasicBlock::Create(ctx, "scatter", fn);
    llvm::BasicBlock* skip = llvm::BasicBlock::Create(ctx, "source_next", fn);
    b.CreateCondBr(b.CreateICmpSGE(selected, b.getInt64(0)), apply, skip);
    b.SetInsertPoint(apply);
    std::vector<llvm::Value*> out = element.EmitScalarBlock(
        op.region(1).block(0), {element.LoadAt(result, t, selected), element.LoadAt(source, t, s)});
    if (!out.empty()) element.StoreAt(out[0], t, result, selected);
    b.CreateBr(skip);
    b.SetInsertPoint(skip);
  });
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

}  // namespace jitd::codegen
