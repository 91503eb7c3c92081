#include "jit/codegen/nvptx/dot_kernel.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
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

namespace {

using ir::DType;

struct DotDims {
  std::vector<int64_t> lhs_batching, rhs_batching, lhs_contracting, rhs_contracting;
};

std::vector<int64_t> Field(const ir::Op& op, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct("dot_dimension_numbers");
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

DotDims DimsOf(const ir::Op& op) {
  if (op.code() == ir::OpCode::kDot) {
    return {{}, {}, {op.operand(0)->type().rank() - 1}, {0}};
  }
  return {Field(op, "lhs_batching_dimensions"), Field(op, "rhs_batching_dimensions"),
          Field(op, "lhs_contracting_dimensions"), Field(op, "rhs_contracting_dimensions")};
}

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batching,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batching.begin(), batching.end(), d) == batching.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
      free.push_back(d);
    }
  }
  return free;
}

bool IsRealFloat(DType t) { return t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64; }

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

bool Valid(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[static_cast<size_t>(d)]) return false;
    seen[static_cast<size_t>(d)] = true;
  }
  return true;
}

}  // namespace

bool IsNvptxEmittableDot(const ir::Op& op) {
  if ((op.code() != ir::OpCode::kDotGeneral && op.code() != ir::OpCode::kDot) || op.num_operands() != 2 ||
      op.num_results() != 1) {
    return false;
  }
  const ir::Type& lhs = op.operand(0)->type();
  const ir::Type& rhs = op.operand(1)->type();
  const ir::Type& out = op.result(0)->type();
  if (!lhs.is_tensor() || !rhs.is_tensor() || !out.is_tensor() || lhs.rank() == 0 || rhs.rank() == 0) return false;
  const DType r = out.dtype();
  const bool ints = ir::IsInteger(r) && (ir::IsInteger(lhs.dtype()) || lhs.dtype() == DType::kPred) &&
                    (ir::IsInteger(rhs.dtype()) || rhs.dtype() == DType::kPred);
  const bool reals = IsRealFloat(r) && IsRealFloat(lhs.dtype()) && IsRealFloat(rhs.dtype());
  const bool complex = ir::IsComplex(r) && lhs.dtype() == r && rhs.dtype() == r;
  if (!ints && !reals && !complex) return false;
  const DotDims d = DimsOf(op);
  if (!Valid(d.lhs_batching, lhs.rank()) || !Valid(d.rhs_batching, rhs.rank()) ||
      !Valid(d.lhs_contracting, lhs.rank()) || !Valid(d.rhs_contracting, rhs.rank()) ||
      d.lhs_batching.size() != d.rhs_batching.size() || d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return false;
  }
  for (size_t k = 0; k < d.lhs_contracting.size(); ++k) {
    if (lhs.dim(d.lhs_contracting[k]) != rhs.dim(d.rhs_contracting[k])) return false;
  }
  for (size_t k = 0; k < d.lhs_batching.size(); ++k) {
    if (lhs.dim(d.lhs_batching[k]) != rhs.dim(d.rhs_batching[k])) return false;
  }
  return true;
}

StatusOr<GridPlan> EmitDotKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                 const GridLimits& limits) {
  if (!IsNvptxEmittableDot(op)) {
    return InvalidArgument(op.loc().ToString() + ": this '" + std::string(op.name()) + "' has no NVPTX kernel");
  }
  const ir::Type& lhs_type = op.operand(0)->type();
  const ir::Type& rhs_type = op.operand(1)->type();
  const ir::Type& out_type = op.result(0)->type();
  const DotDims dims = DimsOf(op);
  const std::vector<int64_t> lhs_free = FreeDims(lhs_type.rank(), dims.lhs_batching, dims.lhs_contracting);
  const std::vector<int64_t> rhs_free = FreeDims(rhs_type.rank(), dims.rhs_batching, dims.rhs_contracting);
  const std::vector<int64_t> lhs_strides = Strides(lhs_type.dims());
  const std::vector<int64_t> rhs_strides = Strides(rhs_type.dims());
  // Result digits, row-major: batch dims, lhs free dims, rhs free dims.
  struct Digit {
    int64_t size, lhs_stride, rhs_stride;
  };
  std::vector<Digit> out_digits, k_digits;
  for (size_t i = 0; i < dims.lhs_batching.size(); ++i) {
    out_digits.push_back({lhs_type.dim(dims.lhs_batching[i]), lhs_strides[static_cast<size_t>(dims.lhs_batching[i])],
                          rhs_strides[static_cast<size_t>(dims.rhs_batching[i])]});
  }
  for (int64_t d : lhs_free) out_digits.push_back({lhs_type.dim(d), lhs_strides[static_cast<size_t>(d)], 0});
  for (int64_t d : rhs_free) out_digits.push_back({rhs_type.dim(d), 0, rhs_strides[static_cast<size_t>(d)]});
  int64_t contract = 1;
  for (size_t i = 0; i < dims.lhs_contracting.size(); ++i) {
    k_digits.push_back({lhs_type.dim(dims.lhs_contracting[i]),
                        lhs_strides[static_cast<size_t>(dims.lhs_contracting[i])],
                        rhs_strides[static_cast<size_t>(dims.rhs_contracting[i])]});
    contract *= lhs_type.dim(dims.lhs_contracting[i]);
  }

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = out_type.num_elements();
  plan.extent = contract;
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((plan.work_items + plan.block - 1) / plan.block, 1, limits.max_blocks);

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  std::unique_ptr<ElementalEmitter> element = CreateElementalEmitter(module, spec, NvptxMath());
  Builder& b = element->builder();
  llvm::LLVMContext& ctx = module.getContext();
  std::vector<llvm::Type*> params(3, llvm::PointerType::get(ctx, 1));
  llvm::Function* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                              llvm::Function::ExternalLinkage, name, module);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i = 0; i < 3; ++i) {
    fn->addParamAttr(i, llvm::Attribute::NoAlias);
    if (i < 2) fn->addParamAttr(i, llvm::Attribute::ReadOnly);
  }
  llvm::MDNode* annotation = llvm::MDNode::get(
      ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "kernel"), llvm::ValueAsMetadata::get(b.getInt32(1))});
  module.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(annotation);

  const DType r = out_type.dtype();
  // The arithmetic domain.
  llvm::Type* domain = ir::IsInteger(r)      ? static_cast<llvm::Type*>(b.getInt64Ty())
                       : r == DType::kF64 || r == DType::kC128 ? b.getDoubleTy()
                                                              : b.getFloatTy();
  const bool complex = ir::IsComplex(r);
  auto to_domain = [&](llvm::Value* x, DType t) -> std::vector<llvm::Value*> {
    if (ir::IsInteger(r)) {
      return {ir::IsSignedInt(t) ? b.CreateSExtOrTrunc(x, domain) : b.CreateZExtOrTrunc(x, domain)};
    }
    if (complex) return {b.CreateExtractElement(x, uint64_t{0}), b.CreateExtractElement(x, uint64_t{1})};
    llvm::Value* wide = x->getType()->isDoubleTy() ? x : b.CreateFPExt(x, b.getDoubleTy());
    return {domain->isDoubleTy() ? wide : b.CreateFPTrunc(wide, domain)};
  };

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  for (unsigned i = 0; i < 3; ++i) ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
  auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty()); };
  llvm::Value* block = b.getInt64(plan.block);
  llvm::Value* first = b.CreateAdd(b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), block),
                                   sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  llvm::Value* step = b.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), block);
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "outputs", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "output", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* o = b.CreatePHI(b.getInt64Ty(), 2);
  o->addIncoming(first, entry);
  b.CreateCondBr(b.CreateICmpSLT(o, b.getInt64(plan.work_items)), body, done);
  b.SetInsertPoint(body);
  llvm::Value* lhs_base = b.getInt64(0);
  llvm::Value* rhs_base = b.getInt64(0);
  llvm::Value* rest = o;
  for (size_t i = out_digits.size(); i-- > 0;) {
    llvm::Value* digit = i == 0 ? rest : b.CreateURem(rest, b.getInt64(out_digits[i].size));
    if (i > 0) rest = b.CreateUDiv(rest, b.getInt64(out_digits[i].size));
    lhs_base = b.CreateAdd(lhs_base, b.CreateMul(digit, b.getInt64(out_digits[i].lhs_stride)));
    rhs_base = b.CreateAdd(rhs_base, b.CreateMul(digit, b.getInt64(out_digits[i].rhs_stride)));
  }
  // for (k = 0; k < contract; ++k) acc = acc + lhs * rhs
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* kheader = llvm::BasicBlock::Create(ctx, "k", fn);
  llvm::BasicBlock* kbody = llvm::BasicBlock::Create(ctx, "k_body", fn);
  llvm::BasicBlock* kdone = llvm::BasicBlock::Create(ctx, "k_done", fn);
  b.CreateBr(kheader);
  b.SetInsertPoint(kheader);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2);
  k->addIncoming(b.getInt64(0), pre);
  std::vector<llvm::PHINode*> acc;
  for (int part = 0; part < (complex ? 2 : 1); ++part) {
    acc.push_back(b.CreatePHI(domain, 2));
    acc.back()->addIncoming(llvm::Constant::getNullValue(domain), pre);
  }
  b.CreateCondBr(b.CreateICmpSLT(k, b.getInt64(contract)), kbody, kdone);
  b.SetInsertPoint(kbody);
  llvm::Value* lhs_at = lhs_base;
  llvm::Value* rhs_at = rhs_base;
  llvm::Value* krest = k;
  for (size_t i = k_digits.size(); i-- > 0;) {
    llvm::Value* digit = i == 0 ? krest : b.CreateURem(krest, b.getInt64(k_digits[i].size));
    if (i > 0) krest = b.CreateUDiv(krest, b.getInt64(k_digits[i].size));
    lhs_at = b.CreateAdd(lhs_at, b.CreateMul(digit, b.getInt64(k_digits[i].lhs_stride)));
    rhs_at = b.CreateAdd(rhs_at, b.CreateMul(digit, b.getInt64(k_digits[i].rhs_stride)));
  }
  const std::vector<llvm::Value*> x = to_domain(element->LoadAt(ptrs[0], lhs_type.dtype(), lhs_at), lhs_type.dtype());
  const std::vector<llvm::Value*> y = to_domain(element->LoadAt(ptrs[1], rhs_type.dtype(), rhs_at), rhs_type.dtype());
  std::vector<llvm::Value*> next;
  if (ir::IsInteger(r)) {
    next = {b.CreateAdd(acc[0], b.CreateMul(x[0], y[0]))};  // wraps
  } else if (!complex) {
    next = {b.CreateFAdd(acc[0], b.CreateFMul(x[0], y[0]))};  // two roundings: no contract flag
  } else {
    llvm::Value* re = b.CreateFSub(b.CreateFMul(x[0], y[0]), b.CreateFMul(x[1], y[1]));
    llvm::Value* im = b.CreateFAdd(b.CreateFMul(x[0], y[1]), b.CreateFMul(x[1], y[0]));
    next = {b.CreateFAdd(acc[0], re), b.CreateFAdd(acc[1], im)};
  }
  llvm::BasicBlock* klatch = b.GetInsertBlock();
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), klatch);
  for (size_t i = 0; i < acc.size(); ++i) acc[i]->addIncoming(next[i], klatch);
  b.CreateBr(kheader);
  b.SetInsertPoint(kdone);
  llvm::Value* result;
  if (ir::IsInteger(r)) {
    result = b.CreateTrunc(acc[0], element->ComputeType(r));
  } else if (complex) {
    result = llvm::UndefValue::get(element->ComputeType(r));
    result = b.CreateInsertElement(result, acc[0], uint64_t{0});
    result = b.CreateInsertElement(result, acc[1], uint64_t{1});
  } else {
    llvm::Type* compute = element->ComputeType(r);
    // f16 / bf16 compute in f32 here: StoreAt rounds once into the type.
    result = compute == domain ? static_cast<llvm::Value*>(acc[0]) : b.CreateFPCast(acc[0], compute);
  }
  element->StoreAt(result, r, ptrs[2], o);
  o->addIncoming(b.CreateAdd(o, step), b.GetInsertBlock());
  b.CreateBr(header);
  b.SetInsertPoint(done);
  b.CreateRetVoid();

  Status status = element->status();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (status.ok() && llvm::verifyFunction(*fn, &os)) {
    status = Internal("codegen produced invalid NVPTX IR for '" + std::string(op.name()) + "' at " +
                      op.loc().ToString() + ": " + os.str());
  }
  if (!status.ok()) {
    llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations");
    std::vector<llvm::MDNode*> keep;
    for (llvm::MDNode* node : annotations->operands()) {
      if (node != annotation) keep.push_back(node);
    }
    annotations->clearOperands();
    for (llvm::MDNode* node : keep) annotations->addOperand(node);
    fn->eraseFromParent();
    return status;
  }
  return plan;
}

}  // namespace jitd::codegen
