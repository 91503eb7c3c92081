// The elemental emitter's index maps (elemental_emitter.h): one table entry
// per op — what it supports, where it reads each operand, its value — and
// the storage-bit walks of bitcast_convert and f16 / bf16 (HalfBits).
#include <array>
#include <iterator>
#include <cstring>
#include <string>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/internal/element_types.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"

namespace jitd::codegen {

using internal::IsCplx;
using internal::IsF;
using internal::IsHalf16;
using internal::IsPredT;
using internal::TensorTypesSupported;
using ir::DType;
using ir::Op;
using ir::OpCode;

namespace {

bool IsSplatConstant(const Op& op) {
  const ir::Attribute* value = op.attr("value");
  const auto* dense = value ? value->get_if<ir::DenseElementsAttr>() : nullptr;
  if (!dense || !dense->data) return false;
  if (dense->splat) return true;
  return dense->type.num_elements() == 1;
}

// Pad attributes small enough that the emitter's int64 index arithmetic
// (result index - low, operand index * (interior + 1)) cannot overflow;
// absurd ones stay on the fallback, which computes in 128 bits.
bool PadAttributesInRange(const Op& op) {
  constexpr int64_t kLimit = int64_t{1} << 40;
  const size_t rank = static_cast<size_t>(op.operand(0)->type().rank());
  for (const char* name : {"edge_padding_low", "edge_padding_high", "interior_padding"}) {
    const std::optional<std::vector<int64_t>> v = op.GetI64Array(name);
    if (!v || v->size() != rank) return false;
    for (int64_t x : *v) {
      if (x <= -kLimit || x >= kLimit) return false;
    }
  }
  return true;
}

bool ConstantSupported(const Op& op, const TargetMath& target) {
  return IsSplatConstant(op) && TensorTypesSupported(op, target.HasNarrowFloats());
}
bool IotaSupported(const Op& op, const TargetMath& target) {
  return TensorTypesSupported(op, target.HasNarrowFloats()) && op.num_results() == 1 &&
         !IsCplx(op.result(0)->type().dtype());
}
bool MapSupported(const Op& op, const TargetMath& target) {
  return TensorTypesSupported(op, target.HasNarrowFloats()) && op.num_results() == 1 && op.num_operands() >= 1;
}
bool PadSupported(const Op& op, const TargetMath& target) {
  return TensorTypesSupported(op, target.HasNarrowFloats()) && op.num_results() == 1 && op.num_operands() == 2 &&
         PadAttributesInRange(op);
}
// The widths and shapes are ScalarEmitter's rule (its scalar form).
bool BitcastSupported(const Op& op, const TargetMath& target) { return ScalarEmitter::Supports(op, target); }

}  // namespace

using E = ElementalEmitter;

const E::MapRule* ElementalEmitter::MapRules(size_t& count) {
  using Rule = MapRule;
  static const Rule kRules[] = {
      // code, kind, supported, operand index, value, copies_elements, starts_first
      {OpCode::kConstant, Rule::kConstant, ConstantSupported, nullptr, &E::EmitConstant, false, false},
      {OpCode::kIota, Rule::kIndexMap, IotaSupported, nullptr, &E::EmitIota, false, false},
      {OpCode::kBroadcastInDim, Rule::kIndexMap, MapSupported, &E::BroadcastOperand, &E::EmitOperand0, true, false},
      {OpCode::kReshape, Rule::kIndexMap, MapSupported, &E::ReshapeOperand, &E::EmitOperand0, true, false},
      {OpCode::kTranspose, Rule::kIndexMap, MapSupported, &E::TransposeOperand, &E::EmitOperand0, true, false},
      {OpCode::kSlice, Rule::kIndexMap, MapSupported, &E::SliceOperand, &E::EmitOperand0, true, false},
      {OpCode::kReverse, Rule::kIndexMap, MapSupported, &E::ReverseOperand, &E::EmitOperand0, true, false},
      {OpCode::kConcatenate, Rule::kIndexMap, MapSupported, &E::ConcatenateOperand, &E::EmitConcatenate, true,
       false},
      {OpCode::kPad, Rule::kIndexMap, PadSupported, &E::PadOperand, &E::EmitPad, true, false},
      {OpCode::kDynamicSlice, Rule::kIndexMap, MapSupported, &E::DynamicSliceOperand, &E::EmitOperand0, true, true},
      {OpCode::kDynamicUpdateSlice, Rule::kIndexMap, MapSupported, &E::DynamicUpdateSliceOperand,
       &E::EmitDynamicUpdateSlice, true, false},
      {OpCode::kBitcastConvert, Rule::kBits, BitcastSupported, &E::BitcastOperand, &E::EmitBitcast, false, false},
  };
  count = std::size(kRules);
  return kRules;
}

const E::MapRule* ElementalEmitter::FindMapRule(OpCode code) {
  size_t n = 0;
  const MapRule* rules = MapRules(n);
  for (size_t i = 0; i < n; ++i) {
    if (rules[i].code == code) return &rules[i];
  }
  return nullptr;
}

std::vector<OpCode> ElementalOps() {
  std::vector<OpCode> ops = ScalarEmitter::TableOps();  // bitcast_convert among them
  size_t n = 0;
  const ElementalEmitter::MapRule* rules = ElementalEmitter::MapRules(n);
  for (size_t i = 0; i < n; ++i) {
    if (rules[i].code != OpCode::kBitcastConvert) ops.push_back(rules[i].code);
  }
  return ops;
}

// ---- Where each index map reads its operands ----------------------------------------

E::Index* ElementalEmitter::BroadcastOperand(const Op& op, size_t k, Index* idx) {
  const ir::Value* operand = op.operand(k);
  if (operand->type().rank() == 0) return ScalarIndex();
  const std::vector<int64_t> bdims = op.GetI64Array("broadcast_dimensions").value_or(std::vector<int64_t>{});
  Index* o = NewIndex(operand->type().dims());
  const auto& m = Multi(*idx);
  for (size_t d = 0; d < bdims.size(); ++d) {
    const int64_t od = operand->type().dim(static_cast<int64_t>(d));
    o->multi.push_back(od == 1 ? b_.getInt64(0) : m[static_cast<size_t>(bdims[d])]);
  }
  return o;
}

E::Index* ElementalEmitter::ReshapeOperand(const Op& op, size_t k, Index* idx) {
  Index* o = NewIndex(op.operand(k)->type().dims());
  o->linear = Linear(*idx);
  return o;
}

E::Index* ElementalEmitter::TransposeOperand(const Op& op, size_t k, Index* idx) {
  const std::vector<int64_t> perm = op.GetI64Array("permutation").value_or(std::vector<int64_t>{});
  Index* o = NewIndex(op.operand(k)->type().dims());
  o->multi.resize(perm.size());
  const auto& m = Multi(*idx);
  for (size_t i = 0; i < perm.size(); ++i) o->multi[static_cast<size_t>(perm[i])] = m[i];
  return o;
}

E::Index* ElementalEmitter::SliceOperand(const Op& op, size_t k, Index* idx) {
  const auto start = op.GetI64Array("start_indices").value_or(std::vector<int64_t>{});
  auto strides = op.GetI64Array("strides").value_or(std::vector<int64_t>{});
  Index* o = NewIndex(op.operand(k)->type().dims());
  const auto& m = Multi(*idx);
  for (size_t d = 0; d < m.size(); ++d) {
    const int64_t s = d < strides.size() ? strides[d] : 1;
    o->multi.push_back(b_.CreateAdd(b_.CreateMul(m[d], b_.getInt64(s)), b_.getInt64(start[d])));
  }
  return o;
}

E::Index* ElementalEmitter::ReverseOperand(const Op& op, size_t k, Index* idx) {
  const ir::Value* operand = op.operand(k);
  const auto dims = op.GetI64Array("dimensions").value_or(std::vector<int64_t>{});
  Index* o = NewIndex(operand->type().dims());
  o->multi = Multi(*idx);
  for (int64_t d : dims) {
    o->multi[static_cast<size_t>(d)] =
        b_.CreateSub(b_.getInt64(operand->type().dim(d) - 1), o->multi[static_cast<size_t>(d)]);
  }
  return o;
}

// Each operand is read at its own index, clamped into its range
// (EmitConcatenate selects the one whose range holds the result index).
E::Index* ElementalEmitter::ConcatenateOperand(const Op& op, size_t k, Index* idx) {
  const ir::Value* operand = op.operand(k);
  const size_t dim = static_cast<size_t>(op.GetInt("dimension").value_or(0));
  const int64_t size = operand->type().dim(static_cast<int64_t>(dim));
  if (size == 0) return nullptr;
  int64_t offset = 0;
  for (size_t j = 0; j < k; ++j) offset += op.operand(j)->type().dim(static_cast<int64_t>(dim));
  Index* o = NewIndex(operand->type().dims());
  o->multi = Multi(*idx);
  llvm::Value* local = b_.CreateSub(o->multi[dim], b_.getInt64(offset));
  local = scalar_.Intrinsic(llvm::Intrinsic::smax, {local, b_.getInt64(0)});
  local = scalar_.Intrinsic(llvm::Intrinsic::smin, {local, b_.getInt64(size - 1)});
  o->multi[dim] = local;
  return o;
}

// operand[clamped start + result index]: always in bounds.
E::Index* ElementalEmitter::DynamicSliceOperand(const Op& op, size_t k, Index* idx) {
  if (k > 0) return ScalarIndex();  // a start index
  const std::vector<int64_t>& odims = op.operand(0)->type().dims();
  const std::vector<llvm::Value*> starts = ClampedStarts(op, 1, odims, op.result(0)->type().dims());
  Index* o = NewIndex(odims);
  const auto& m = Multi(*idx);
  for (size_t d = 0; d < m.size(); ++d) o->multi.push_back(b_.CreateAdd(m[d], starts[d], "", true, true));
  return o;
}

E::Index* ElementalEmitter::DynamicUpdateSliceOperand(const Op&, size_t k, Index*) {
  return k >= 2 ? ScalarIndex() : nullptr;  // start indices only
}

E::Index* ElementalEmitter::PadOperand(const Op&, size_t k, Index*) {
  return k == 1 ? ScalarIndex() : nullptr;  // the padding value only
}

// Equal widths read the operand's element at the same index (f16 / bf16
// operands are read as bits, by HalfBits).
E::Index* ElementalEmitter::BitcastOperand(const Op& op, size_t k, Index* idx) {
  const DType from = op.operand(k)->type().dtype();
  const bool same_width = ir::BitWidth(from) == ir::BitWidth(op.result(0)->type().dtype());
  return same_width && !IsHalf16(from) ? idx : nullptr;
}

// ---- Each index map's value ---------------------------------------------------------

llvm::Value* ElementalEmitter::EmitConstant(const Op& op, Index*) { return scalar_.Constant(op); }

llvm::Value* ElementalEmitter::EmitIota(const Op& op, Index* idx) {
  const size_t dim = static_cast<size_t>(op.GetInt("iota_dimension").value_or(0));
  llvm::Value* i = Multi(*idx)[dim];
  const DType t = op.result(0)->type().dtype();
  if (IsF(t)) return b_.CreateUIToFP(i, ComputeType(t));
  if (IsPredT(t)) return b_.CreateICmpNE(i, b_.getInt64(0));
  return b_.CreateTrunc(i, ComputeType(t));
}

llvm::Value* ElementalEmitter::EmitOperand0(const Op& op, Index* idx) {
  return Value(op.operand(0), OperandIndex(op, 0, idx));
}

// Every operand is read at its own (clamped) index and the one whose range
// holds the result index is selected: no branches in the loop, no reads
// out of bounds.
llvm::Value* ElementalEmitter::EmitConcatenate(const Op& op, Index* idx) {
  const size_t dim = static_cast<size_t>(op.GetInt("dimension").value_or(0));
  llvm::Value* position = Multi(*idx)[dim];
  llvm::Value* result = nullptr;
  int64_t offset = 0;
  for (size_t k = 0; k < op.num_operands(); ++k) {
    const ir::Value* operand = op.operand(k);
    const int64_t size = operand->type().dim(static_cast<int64_t>(dim));
    if (size == 0) continue;
    llvm::Value* v = Value(operand, OperandIndex(op, k, idx));
    result = result ? b_.CreateSelect(b_.CreateICmpSGE(position, b_.getInt64(offset)), v, result) : v;
    offset += size;
  }
  if (!result) {
    scalar_.Fail("concatenate of empty operands");
    return llvm::UndefValue::get(ComputeType(op.result(0)->type().dtype()));
  }
  return result;
}

// pad as a select on the result index: result index r maps to operand index
// (r - low) / (interior + 1) when that divides evenly and lies inside the
// operand; the padding value elsewhere. The operand is read only there
// (Guarded).
llvm::Value* ElementalEmitter::EmitPad(const Op& op, Index* idx) {
  const ir::Value* operand = op.operand(0);
  llvm::Value* padding = Value(op.operand(1), ScalarIndex());
  if (operand->type().num_elements() == 0) return padding;
  const auto low = op.GetI64Array("edge_padding_low").value_or(std::vector<int64_t>{});
  const auto interior = op.GetI64Array("interior_padding").value_or(std::vector<int64_t>{});
  const std::vector<int64_t>& odims = operand->type().dims();
  const std::vector<llvm::Value*> m = Multi(*idx);
  llvm::Value* inside = b_.getTrue();
  std::vector<llvm::Value*> q(m.size());
  for (size_t d = 0; d < m.size(); ++d) {
    llvm::Value* t = b_.CreateSub(m[d], b_.getInt64(low[d]), "", false, true);
    const int64_t step = interior[d] + 1;
    q[d] = t;
    if (step != 1) {
      // t < 0 is outside anyway (unsigned: huge, so q >= dim below).
      q[d] = b_.CreateUDiv(t, b_.getInt64(step));
      inside = b_.CreateAnd(inside, b_.CreateICmpEQ(b_.CreateURem(t, b_.getInt64(step)), b_.getInt64(0)));
    }
    // 0 <= t and q < dim: t < 0 is a huge unsigned value.
    inside = b_.CreateAnd(inside, b_.CreateICmpSGE(t, b_.getInt64(0)));
    inside = b_.CreateAnd(inside, b_.CreateICmpULT(q[d], b_.getInt64(odims[d])));
  }
  return Guarded(inside, padding, [&] {
    Index* o = NewIndex(odims);
    o->multi = q;
    return Value(operand, o);
  });
}

// update[index - start] inside the update's window, operand[index]
// elsewhere; the update is only read inside (a guarded block the vectorizer
// turns into masked loads).
llvm::Value* ElementalEmitter::EmitDynamicUpdateSlice(const Op& op, Index* idx) {
  const ir::Type& rt = op.result(0)->type();
  const ir::Value* operand = op.operand(0);
  const ir::Value* update = op.operand(1);
  const std::vector<int64_t>& udims = update->type().dims();
  if (update->type().num_elements() == 0) return Value(operand, idx);
  const std::vector<llvm::Value*> starts = ClampedStarts(op, 2, rt.dims(), udims);
  const std::vector<llvm::Value*> m = Multi(*idx);
  llvm::Value* inside = b_.getTrue();
  std::vector<llvm::Value*> rel(m.size());
  for (size_t d = 0; d < m.size(); ++d) {
    // index - start as unsigned: negative values compare >= size.
    rel[d] = b_.CreateSub(m[d], starts[d]);
    inside = b_.CreateAnd(inside, b_.CreateICmpULT(rel[d], b_.getInt64(udims[d])));
  }
  // A constant on the other edge and the operand read after the join: a
  // phi of two loads would be folded into one load of a selected address
  // (a gather).
  llvm::Type* element = raw_half_ && IsHalf16(rt.dtype()) ? b_.getInt16Ty() : ComputeType(rt.dtype());
  llvm::Value* x = Guarded(inside, llvm::Constant::getNullValue(element), [&] {
    Index* u = NewIndex(udims);
    u->multi = rel;
    return Value(update, u);
  });
  return b_.CreateSelect(inside, x, Value(operand, idx));
}

llvm::Value* ElementalEmitter::EmitBitcast(const Op& op, Index* idx) {
  return scalar_.FromBits(BitcastBits(op, idx), op.result(0)->type().dtype());
}

// The start indices of dynamic_slice / dynamic_update_slice (operands
// first.., 0-d integers of any width and signedness) as i64 clamped to [0,
// dims[d] - sizes[d]] (jit/eval's ClampedStarts): unsigned values above
// INT64_MAX clamp to the top, not around to negative.
std::vector<llvm::Value*> ElementalEmitter::ClampedStarts(const Op& op, size_t first,
                                                          const std::vector<int64_t>& dims,
                                                          const std::vector<int64_t>& sizes) {
  std::vector<llvm::Value*> starts;
  for (size_t d = 0; d < dims.size(); ++d) {
    const ir::Value* v = op.operand(first + d);
    const DType t = v->type().dtype();
    llvm::Value* hi = b_.getInt64(dims[d] - sizes[d]);
    llvm::Value* s = Value(v, ScalarIndex());
    if (ir::IsUnsignedInt(t)) {
      s = b_.CreateZExtOrTrunc(s, b_.getInt64Ty());
      s = scalar_.Intrinsic(llvm::Intrinsic::umin, {s, hi});
    } else {
      s = b_.CreateSExtOrTrunc(s, b_.getInt64Ty());
      s = scalar_.Intrinsic(llvm::Intrinsic::smin, {scalar_.Intrinsic(llvm::Intrinsic::smax, {s, b_.getInt64(0)}), hi});
    }
    starts.push_back(s);
  }
  return starts;
}

// `inside ? then() : otherwise` where then() is emitted in a block of its
// own that runs only when `inside` holds (its loads may be out of bounds
// otherwise). The loop vectorizer if-converts such blocks with masked loads.
// Values computed in the block are dropped from the cache: they do not
// dominate what follows.
llvm::Value* ElementalEmitter::Guarded(llvm::Value* inside, llvm::Value* otherwise,
                                       const std::function<llvm::Value*()>& then) {
  llvm::LLVMContext& ctx = b_.getContext();
  llvm::BasicBlock* from = b_.GetInsertBlock();
  llvm::BasicBlock* in = llvm::BasicBlock::Create(ctx, "guarded", function_);
  llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx, "join", function_);
  b_.CreateCondBr(inside, in, join);
  b_.SetInsertPoint(in);
  const auto saved = cache_;
  const auto saved_derived = derived_;  // their lazily computed parts too
  llvm::Value* x = then();
  cache_ = saved;
  derived_ = saved_derived;
  llvm::BasicBlock* in_end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  llvm::PHINode* phi = b_.CreatePHI(x->getType(), 2);
  phi->addIncoming(x, in_end);
  phi->addIncoming(otherwise, from);
  return phi;
}

// ---- Storage bits -------------------------------------------------------------------

// The i16 storage bits of f16 / bf16 value `v` at `idx`, exactly as the
// interpreter holds them: f16's f32 round trip quiets signalling NaNs, so
// values that reach a bitcast_convert or reduce_precision through ops that
// copy elements (index maps, select) are read as bits from their buffer or
// constant; bitcast_convert and reduce_precision results are bits already.
// Anything computed is rounded from f32, a NaN as the interpreter's
// canonical one.
llvm::Value* ElementalEmitter::HalfBits(const ir::Value* v, Index* idx) {
  // Not cached (bits differ from the computed form): every path counts.
  if (!CountComputation()) return llvm::UndefValue::get(b_.getInt16Ty());
  const DType t = v->type().dtype();
  if (auto it = params_.find(v); it != params_.end()) {
    llvm::Value* offset = v->type().rank() == 0 ? b_.getInt64(0) : Linear(*idx);
    return b_.CreateLoad(b_.getInt16Ty(), b_.CreateInBoundsGEP(b_.getInt16Ty(), it->second, offset));
  }
  const Op* op = v->defining_op();
  if (op && fused_.count(op)) {
    const MapRule* rule = FindMapRule(op->code());
    if (op->code() == OpCode::kConstant) {
      uint16_t bits;
      std::memcpy(&bits, op->attr("value")->as<ir::DenseElementsAttr>().data->data(), 2);
      return b_.getInt16(bits);
    }
    if (op->code() == OpCode::kBitcastConvert) return BitcastBits(*op, idx);
    if (op->code() == OpCode::kReducePrecision) {
      return scalar_.ReducePrecisionBits(*op, HalfBits(op->operand(0), idx));
    }
    if (op->code() == OpCode::kSelect) {
      const bool saved = raw_half_;
      raw_half_ = false;
      llvm::Value* p = Value(op->operand(0), ElementwiseOperandIndex(*op, 0, idx));
      raw_half_ = saved;
      return b_.CreateSelect(p, HalfBits(op->operand(1), ElementwiseOperandIndex(*op, 1, idx)),
                             HalfBits(op->operand(2), ElementwiseOperandIndex(*op, 2, idx)));
    }
    if (rule && rule->copies_elements) {
      // The index map itself, its half-typed operands read as bits (Value
      // defers to HalfBits while raw_half_ is set).
      const bool saved = raw_half_;
      raw_half_ = true;
      llvm::Value* x = EmitOp(*op, idx);
      raw_half_ = saved;
      return x;
    }
  }
  const bool saved = raw_half_;
  raw_half_ = false;
  llvm::Value* x = Value(v, idx);
  raw_half_ = saved;
  return scalar_.ToBits(x, t, /*canonical_nan=*/true);
}

// The result element of bitcast_convert `op` at `idx` as BitWidth bits:
// equal widths reinterpret; a narrower result takes piece j (its minor
// index) of the operand element; a wider one joins the operand's minor
// dimension, piece j at bits [j * narrow, (j + 1) * narrow).
llvm::Value* ElementalEmitter::BitcastBits(const Op& op, Index* idx) {
  const ir::Value* in = op.operand(0);
  const DType from = in->type().dtype(), to = op.result(0)->type().dtype();
  const unsigned fb = static_cast<unsigned>(ir::BitWidth(from)), tb = static_cast<unsigned>(ir::BitWidth(to));
  auto bits_at = [&](Index* i) {
    if (IsHalf16(from)) return HalfBits(in, i);
    const bool saved = raw_half_;
    raw_half_ = false;
    llvm::Value* x = Value(in, i);
    raw_half_ = saved;
    return scalar_.ToBits(x, from, /*canonical_nan=*/true);
  };
  if (fb == tb) return bits_at(idx);
  const std::vector<llvm::Value*> m = Multi(*idx);
  if (fb > tb) {
    Index* o = NewIndex(in->type().dims());
    o->multi.assign(m.begin(), m.end() - 1);
    llvm::Value* shift = b_.CreateMul(b_.CreateZExtOrTrunc(m.back(), b_.getIntNTy(fb)),
                                      llvm::ConstantInt::get(b_.getIntNTy(fb), tb));
    return b_.CreateTrunc(b_.CreateLShr(bits_at(o), shift), b_.getIntNTy(tb));
  }
  llvm::Value* acc = llvm::ConstantInt::get(b_.getIntNTy(tb), 0);
  for (unsigned j = 0; j < tb / fb; ++j) {
    Index* o = NewIndex(in->type().dims());
    o->multi = m;
    o->multi.push_back(b_.getInt64(j));
    llvm::Value* piece = b_.CreateZExt(bits_at(o), b_.getIntNTy(tb));
    acc = b_.CreateOr(acc, b_.CreateShl(piece, llvm::ConstantInt::get(b_.getIntNTy(tb), j * fb)));
  }
  return acc;
}

}  // namespace jitd::codegen
