#include "jit/codegen/nvptx/dot_kernel.h"

#include <algorithm>
#include <cstring>
#include <optional>
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
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, 3, {0, 2});

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
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, plan.work_items, "output");
  llvm::PHINode* o = loop.index;
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
  const std::vector<llvm::Value*> x = to_domain(element.LoadAt(ptrs[0], lhs_type.dtype(), lhs_at), lhs_type.dtype());
  const std::vector<llvm::Value*> y = to_domain(element.LoadAt(ptrs[1], rhs_type.dtype(), rhs_at), rhs_type.dtype());
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
    result = b.CreateTrunc(acc[0], element.ComputeType(r));
  } else if (complex) {
    result = llvm::UndefValue::get(element.ComputeType(r));
    result = b.CreateInsertElement(result, acc[0], uint64_t{0});
    result = b.CreateInsertElement(result, acc[1], uint64_t{1});
  } else {
    llvm::Type* compute = element.ComputeType(r);
    // f16 / bf16 compute in f32 here: StoreAt rounds once into the type.
    result = compute == domain ? static_cast<llvm::Value*>(acc[0]) : b.CreateFPCast(acc[0], compute);
  }
  element.StoreAt(result, r, ptrs[2], o);
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

namespace {

struct ConvAttrs {
  ir::ConvDimensionNumbers dn;
  std::vector<int64_t> strides, lhs_dilation, rhs_dilation, reversal, pad_low;
  int64_t feature_groups = 1, batch_groups = 1;
};

// As jit/eval: arrays of the wrong length fall back to their defaults.
std::vector<int64_t> IntsOr(const ir::Op& op, const char* name, size_t rank, int64_t fill) {
  std::vector<int64_t> v = op.GetI64Array(name).value_or(std::vector<int64_t>{});
  if (v.size() != rank) v.assign(rank, fill);
  return v;
}

std::optional<ConvAttrs> ConvAttrsOf(const ir::Op& op) {
  const ir::Attribute* a = op.attr("dimension_numbers");
  const auto* dn = a ? a->get_if<ir::ConvDimensionNumbers>() : nullptr;
  if (!dn) return std::nullopt;
  ConvAttrs c;
  c.dn = *dn;
  const size_t spatial = dn->input_spatial_dimensions.size();
  if (dn->kernel_spatial_dimensions.size() != spatial || dn->output_spatial_dimensions.size() != spatial) {
    return std::nullopt;
  }
  c.strides = IntsOr(op, "window_strides", spatial, 1);
  c.lhs_dilation = IntsOr(op, "lhs_dilation", spatial, 1);
  c.rhs_dilation = IntsOr(op, "rhs_dilation", spatial, 1);
  c.reversal = IntsOr(op, "window_reversal", spatial, 0);
  c.pad_low.assign(spatial, 0);
  if (const ir::Attribute* pa = op.attr("padding")) {
    const auto* dense = pa->get_if<ir::DenseElementsAttr>();
    if (!dense || !dense->data || dense->type.dtype() != DType::kS64) return std::nullopt;
    const std::vector<uint8_t>& bytes = *dense->data;
    for (size_t d = 0; d < spatial; ++d) {
      const size_t at = bytes.size() == 8 ? 0 : 16 * d;
      if (at + 8 > bytes.size()) return std::nullopt;
      std::memcpy(&c.pad_low[d], bytes.data() + at, 8);
    }
  }
  constexpr int64_t kLimit = int64_t{1} << 24;  // jit/eval's bound
  for (size_t s = 0; s < spatial; ++s) {
    for (int64_t v : {c.strides[s], c.lhs_dilation[s], c.rhs_dilation[s], c.pad_low[s]}) {
      if (v <= -kLimit || v >= kLimit) return std::nullopt;
    }
    if (c.strides[s] < 1 || c.lhs_dilation[s] < 1 || c.rhs_dilation[s] < 1) return std::nullopt;
  }
  c.feature_groups = op.GetInt("feature_group_count").value_or(1);
  c.batch_groups = op.GetInt("batch_group_count").value_or(1);
  if (c.feature_groups < 1 || c.batch_groups < 1) return std::nullopt;
  return c;
}

}  // namespace

bool IsNvptxEmittableConvolution(const ir::Op& op) {
  if (op.code() != ir::OpCode::kConvolution || op.num_operands() != 2 || op.num_results() != 1) return false;
  const ir::Type& lhs = op.operand(0)->type();
  const ir::Type& rhs = op.operand(1)->type();
  const ir::Type& out = op.result(0)->type();
  if (!lhs.is_tensor() || !rhs.is_tensor() || !out.is_tensor()) return false;
  const DType r = out.dtype();
  const bool ints = ir::IsInteger(r) && ir::IsInteger(lhs.dtype()) && ir::IsInteger(rhs.dtype());
  const bool reals = IsRealFloat(r) && IsRealFloat(lhs.dtype()) && IsRealFloat(rhs.dtype());
  if (!ints && !reals) return false;
  const std::optional<ConvAttrs> c = ConvAttrsOf(op);
  if (!c) return false;
  const int64_t rank = lhs.rank();
  if (rhs.rank() != rank || out.rank() != rank) return false;
  std::vector<int64_t> all = {c->dn.input_batch_dimension, c->dn.input_feature_dimension};
  all.insert(all.end(), c->dn.input_spatial_dimensions.begin(), c->dn.input_spatial_dimensions.end());
  std::vector<int64_t> k = {c->dn.kernel_input_feature_dimension, c->dn.kernel_output_feature_dimension};
  k.insert(k.end(), c->dn.kernel_spatial_dimensions.begin(), c->dn.kernel_spatial_dimensions.end());
  std::vector<int64_t> o = {c->dn.output_batch_dimension, c->dn.output_feature_dimension};
  o.insert(o.end(), c->dn.output_spatial_dimensions.begin(), c->dn.output_spatial_dimensions.end());
  if (!Valid(all, rank) || !Valid(k, rank) || !Valid(o, rank) || static_cast<int64_t>(all.size()) != rank) {
    return false;
  }
  const int64_t k_in = rhs.dim(c->dn.kernel_input_feature_dimension);
  const int64_t k_out = rhs.dim(c->dn.kernel_output_feature_dimension);
  const int64_t in_features = lhs.dim(c->dn.input_feature_dimension);
  const int64_t batch = lhs.dim(c->dn.input_batch_dimension);
  return k_out % c->feature_groups == 0 && k_out % c->batch_groups == 0 && batch % c->batch_groups == 0 &&
         in_features == k_in * c->feature_groups && out.dim(c->dn.output_feature_dimension) == k_out;
}

StatusOr<GridPlan> EmitConvolutionKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                         const GridLimits& limits) {
  if (!IsNvptxEmittableConvolution(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.convolution' has no NVPTX kernel");
  }
  const ConvAttrs c = *ConvAttrsOf(op);
  const ir::ConvDimensionNumbers& dn = c.dn;
  const ir::Type& lt = op.operand(0)->type();
  const ir::Type& kt = op.operand(1)->type();
  const ir::Type& ot = op.result(0)->type();
  const size_t spatial = dn.input_spatial_dimensions.size();
  const int64_t k_in = kt.dim(dn.kernel_input_feature_dimension);
  const int64_t k_out = kt.dim(dn.kernel_output_feature_dimension);
  const int64_t out_per_feature_group = k_out / c.feature_groups;
  const int64_t out_per_batch_group = k_out / c.batch_groups;
  const int64_t batch_per_group = lt.dim(dn.input_batch_dimension) / c.batch_groups;
  const std::vector<int64_t> lhs_strides = Strides(lt.dims());
  const std::vector<int64_t> k_strides = Strides(kt.dims());
  int64_t taps = 1;
  for (int64_t d : dn.kernel_spatial_dimensions) taps *= kt.dim(d);

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = ot.num_elements();
  plan.extent = taps * k_in;
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

  const DType r = ot.dtype();
  llvm::Type* domain = ir::IsInteger(r) ? static_cast<llvm::Type*>(b.getInt64Ty())
                       : r == DType::kF64 ? b.getDoubleTy()
                                          : b.getFloatTy();
  auto to_domain = [&](llvm::Value* x, DType t) -> llvm::Value* {
    if (ir::IsInteger(r)) return ir::IsSignedInt(t) ? b.CreateSExtOrTrunc(x, domain) : b.CreateZExtOrTrunc(x, domain);
    llvm::Value* wide = x->getType()->isDoubleTy() ? x : b.CreateFPExt(x, b.getDoubleTy());
    return domain->isDoubleTy() ? wide : b.CreateFPTrunc(wide, domain);
  };

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  std::vector<llvm::Value*> ptrs;
  for (unsigned i = 0; i < 3; ++i) ptrs.push_back(b.CreateAddrSpaceCast(fn->getArg(i), b.getPtrTy()));
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, plan.work_items, "output");
  llvm::PHINode* o = loop.index;
  // The output index's digits.
  std::vector<llvm::Value*> od(static_cast<size_t>(ot.rank()));
  llvm::Value* rest = o;
  for (size_t d = od.size(); d-- > 0;) {
    od[d] = d == 0 ? rest : b.CreateURem(rest, b.getInt64(ot.dim(static_cast<int64_t>(d))));
    if (d > 0) rest = b.CreateUDiv(rest, b.getInt64(ot.dim(static_cast<int64_t>(d))));
  }
  llvm::Value* feature = od[static_cast<size_t>(dn.output_feature_dimension)];
  llvm::Value* group = b.CreateUDiv(feature, b.getInt64(out_per_feature_group));
  llvm::Value* batch = b.CreateAdd(b.CreateMul(b.CreateUDiv(feature, b.getInt64(out_per_batch_group)),
                                               b.getInt64(batch_per_group)),
                                   od[static_cast<size_t>(dn.output_batch_dimension)]);
  llvm::Value* lhs_base =
      b.CreateAdd(b.CreateMul(batch, b.getInt64(lhs_strides[static_cast<size_t>(dn.input_batch_dimension)])),
                  b.CreateMul(b.CreateMul(group, b.getInt64(k_in)),
                              b.getInt64(lhs_strides[static_cast<size_t>(dn.input_feature_dimension)])));
  llvm::Value* k_base =
      b.CreateMul(feature, b.getInt64(k_strides[static_cast<size_t>(dn.kernel_output_feature_dimension)]));

  // for (t = 0; t < taps; ++t) for (ci = 0; ci < k_in; ++ci), as one loop
  // over t * k_in + ci.
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* kheader = llvm::BasicBlock::Create(ctx, "k", fn);
  llvm::BasicBlock* kbody = llvm::BasicBlock::Create(ctx, "k_body", fn);
  llvm::BasicBlock* kdone = llvm::BasicBlock::Create(ctx, "k_done", fn);
  b.CreateBr(kheader);
  b.SetInsertPoint(kheader);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2);
  llvm::PHINode* acc = b.CreatePHI(domain, 2);
  k->addIncoming(b.getInt64(0), pre);
  acc->addIncoming(llvm::Constant::getNullValue(domain), pre);
  b.CreateCondBr(b.CreateICmpSLT(k, b.getInt64(plan.extent)), kbody, kdone);
  b.SetInsertPoint(kbody);
  llvm::Value* ci = b.CreateURem(k, b.getInt64(k_in));
  llvm::Value* t = b.CreateUDiv(k, b.getInt64(k_in));
  llvm::Value* lhs_at = b.CreateAdd(lhs_base, b.CreateMul(ci, b.getInt64(lhs_strides[static_cast<size_t>(
                                                              dn.input_feature_dimension)])));
  llvm::Value* k_at = b.CreateAdd(k_base, b.CreateMul(ci, b.getInt64(k_strides[static_cast<size_t>(
                                                          dn.kernel_input_feature_dimension)])));
  llvm::Value* hit = b.getTrue();
  llvm::Value* trest = t;
  for (size_t s = spatial; s-- > 0;) {
    const int64_t k_size = kt.dim(dn.kernel_spatial_dimensions[s]);
    const int64_t in_size = lt.dim(dn.input_spatial_dimensions[s]);
    llvm::Value* tap = s == 0 ? trest : b.CreateURem(trest, b.getInt64(k_size));
    if (s > 0) trest = b.CreateUDiv(trest, b.getInt64(k_size));
    k_at = b.CreateAdd(k_at, b.CreateMul(tap, b.getInt64(k_strides[static_cast<size_t>(dn.kernel_spatial_dimensions[s])])));
    llvm::Value* read_tap = c.reversal[s] ? b.CreateSub(b.getInt64(k_size - 1), tap) : tap;
    llvm::Value* p = b.CreateSub(
        b.CreateAdd(b.CreateMul(od[static_cast<size_t>(dn.output_spatial_dimensions[s])], b.getInt64(c.strides[s])),
                    b.CreateMul(read_tap, b.getInt64(c.rhs_dilation[s]))),
        b.getInt64(c.pad_low[s]));
    llvm::Value* q = b.CreateSDiv(p, b.getInt64(c.lhs_dilation[s]));
    hit = b.CreateAnd(hit, b.CreateICmpSGE(p, b.getInt64(0)));
    hit = b.CreateAnd(hit, b.CreateICmpEQ(b.CreateSRem(p, b.getInt64(c.lhs_dilation[s])), b.getInt64(0)));
    hit = b.CreateAnd(hit, b.CreateICmpSLT(q, b.getInt64(in_size)));
    lhs_at = b.CreateAdd(lhs_at, b.CreateMul(q, b.getInt64(lhs_strides[static_cast<size_t>(dn.input_spatial_dimensions[s])])));
  }
  // Padding and holes read a zero that still takes part (0 * w).
  llvm::Value* safe = b.CreateSelect(hit, lhs_at, b.getInt64(0));
  llvm::Value* x = to_domain(element.LoadAt(ptrs[0], lt.dtype(), safe), lt.dtype());
  x = b.CreateSelect(hit, x, llvm::Constant::getNullValue(domain));
  llvm::Value* w = to_domain(element.LoadAt(ptrs[1], kt.dtype(), k_at), kt.dtype());
  llvm::Value* next = ir::IsInteger(r) ? b.CreateAdd(acc, b.CreateMul(x, w)) : b.CreateFAdd(acc, b.CreateFMul(x, w));
  llvm::BasicBlock* klatch = b.GetInsertBlock();
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), klatch);
  acc->addIncoming(next, klatch);
  b.CreateBr(kheader);
  b.SetInsertPoint(kdone);
  llvm::Value* result;
  if (ir::IsInteger(r)) {
    result = b.CreateTrunc(acc, element.ComputeType(r));
  } else {
    llvm::Type* compute = element.ComputeType(r);
    result = compute == domain ? static_cast<llvm::Value*>(acc) : b.CreateFPCast(acc, compute);
  }
  element.StoreAt(result, r, ptrs[2], o);
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

}  // namespace jitd::codegen
