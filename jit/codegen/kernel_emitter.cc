// Kernel emission: loop nests over the root's result (or a reduce's output
// and reduced dimensions) whose body computes one element by walking the
// fused producers backwards through their index maps.
#include "jit/codegen/kernel_emitter.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/kernel_runtime.h"
#include "jit/codegen/target_math.h"
#include "jit/eval/fold.h"
#include "jit/eval/scalar_math.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

namespace jitd::codegen {

using ir::DType;
using ir::Op;
using ir::OpCode;

namespace {

bool IsSupportedDType(DType t) {
  switch (t) {
    case DType::kPred:
    case DType::kS8:
    case DType::kS16:
    case DType::kS32:
    case DType::kS64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF32:
    case DType::kF64:
    case DType::kC64:
    case DType::kC128:
    case DType::kF8E3M4:
    case DType::kF8E4M3:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kS2:
    case DType::kS4:
    case DType::kU2:
    case DType::kU4:
      return true;
    default:
      return false;
  }
}

// i2 / i4 / ui2 / ui4: computed as LLVM i2 / i4 (wrapping in their width, as
// jit/eval masks every result), stored one per byte, zero-extended (jit/ir's
// SetInt) and read back by truncation.
bool IsSubByteInt(DType t) { return ir::IsInteger(t) && ir::BitWidth(t) < 8; }

// The 8-bit floats kernels compute (in f32, like f16 / bf16): every one with
// a sign, a zero and round-to-nearest-even (not f8E8M0FNU, whose rounding
// of log2 would not survive a first rounding to f32). Their storage is read
// through a table of the 256 values and written by jit/ir's EncodeFloat.
bool IsNarrowFloat(DType t) {
  switch (t) {
    case DType::kF8E3M4:
    case DType::kF8E4M3:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
      return true;
    default:
      return false;
  }
}

// f16, bf16 and the 8-bit floats compute in f32 and round to their type
// after every op: f32 holds more than 2p + 2 of their bits, so + - * / sqrt
// rounded twice equal the interpreter's single rounding from double.
bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16 || IsNarrowFloat(t); }
// The two 16-bit ones (whose bits HalfBits reads raw).
bool IsHalf16(DType t) { return t == DType::kF16 || t == DType::kBF16; }
bool IsF(DType t) { return t == DType::kF32 || t == DType::kF64 || IsHalf(t); }
bool IsInt(DType t) { return ir::IsInteger(t); }
bool IsPredT(DType t) { return t == DType::kPred; }
bool IsCplx(DType t) { return ir::IsComplex(t); }

bool HasComplexType(const Op& op) {
  for (const ir::Value* v : op.operands()) {
    if (v->type().is_tensor() && IsCplx(v->type().dtype())) return true;
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    const ir::Type& t = op.result(i)->type();
    if (t.is_tensor() && IsCplx(t.dtype())) return true;
  }
  return false;
}

bool AllTensorTypesSupported(const Op& op, const TargetMath& target) {
  // Quantized tensors hold their storage integers (dtype()), but an op on
  // them means dequantize -> op -> quantize (jit/eval/quantized.cc): never
  // the storage type's own arithmetic, so no kernel computes them -- except
  // bitcast_convert, which reinterprets the storage bits (what
  // jit/passes/lower_quantized.h leaves at function boundaries).
  const bool storage_bits = op.code() == OpCode::kBitcastConvert;
  auto ok = [&](const ir::Type& t) {
    return t.is_tensor() && (storage_bits || !t.is_quantized()) && IsSupportedDType(t.dtype()) &&
           (target.HasNarrowFloats() || !IsNarrowFloat(t.dtype()));
  };
  for (const ir::Value* v : op.operands()) {
    if (!ok(v->type())) return false;
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    if (!ok(op.result(i)->type())) return false;
  }
  return true;
}

// The interpreter's per-element function for a complex op that kernels
// call (jit/eval/scalar_math.h): the transcendentals, sign, power, atan2,
// remainder.
std::optional<int32_t> ComplexUnaryFnOf(OpCode code) {
  using F = eval::ComplexFn;
  F fn;
  switch (code) {
    case OpCode::kExponential: fn = F::kExp; break;
    case OpCode::kExponentialMinusOne: fn = F::kExpm1; break;
    case OpCode::kLog: fn = F::kLog; break;
    case OpCode::kLogPlusOne: fn = F::kLog1p; break;
    case OpCode::kLogistic: fn = F::kLogistic; break;
    case OpCode::kSqrt: fn = F::kSqrt; break;
    case OpCode::kRsqrt: fn = F::kRsqrt; break;
    case OpCode::kCbrt: fn = F::kCbrt; break;
    case OpCode::kSine: fn = F::kSin; break;
    case OpCode::kCosine: fn = F::kCos; break;
    case OpCode::kTan:
    case OpCode::kChloTan: fn = F::kTan; break;
    case OpCode::kTanh: fn = F::kTanh; break;
    case OpCode::kSign: fn = F::kSign; break;
    case OpCode::kChloAcos: fn = F::kAcos; break;
    case OpCode::kChloAcosh: fn = F::kAcosh; break;
    case OpCode::kChloAsin: fn = F::kAsin; break;
    case OpCode::kChloAsinh: fn = F::kAsinh; break;
    case OpCode::kChloAtan: fn = F::kAtan; break;
    case OpCode::kChloAtanh: fn = F::kAtanh; break;
    case OpCode::kChloCosh: fn = F::kCosh; break;
    case OpCode::kChloSinh: fn = F::kSinh; break;
    case OpCode::kChloSquare: fn = F::kSquare; break;
    default: return std::nullopt;
  }
  return static_cast<int32_t>(fn);
}
std::optional<int32_t> ComplexBinaryFnOf(OpCode code) {
  using F = eval::ComplexFn2;
  switch (code) {
    case OpCode::kPower: return static_cast<int32_t>(F::kPower);
    case OpCode::kAtan2: return static_cast<int32_t>(F::kAtan2);
    case OpCode::kRemainder: return static_cast<int32_t>(F::kRemainder);
    default: return std::nullopt;
  }
}
// Real special functions kernels call in jit/eval (`t` picks cosh / sinh's
// f32 or f64 lowering).
std::optional<int32_t> SpecialFnOf(OpCode code, DType t) {
  using F = eval::SpecialFn;
  const bool f64 = t == DType::kF64;
  switch (code) {
    case OpCode::kChloLgamma: return static_cast<int32_t>(F::kLgamma);
    case OpCode::kChloDigamma: return static_cast<int32_t>(F::kDigamma);
    case OpCode::kChloErfInv: return static_cast<int32_t>(F::kErfInv);
    case OpCode::kChloBesselI1e: return static_cast<int32_t>(F::kBesselI1e);
    case OpCode::kChloCosh: return static_cast<int32_t>(f64 ? F::kCoshF64 : F::kCoshF32);
    case OpCode::kChloSinh: return static_cast<int32_t>(f64 ? F::kSinhF64 : F::kSinhF32);
    default: return std::nullopt;
  }
}

// bitcast_convert between element types of the same width (same shape), or
// of different widths where the narrower side has one more, minor dimension
// holding the pieces of a wider element (little-endian: piece j is bits
// [j * narrow, (j + 1) * narrow)), as jit/eval's BitcastConvertKernel. i1
// only to i1.
bool BitcastSupported(const Op& op) {
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& out = op.result(0)->type();
  const DType t = in.dtype(), r = out.dtype();
  if (IsNarrowFloat(t) || IsNarrowFloat(r)) return false;  // their bits are not computed in kernels
  if (IsSubByteInt(t) || IsSubByteInt(r)) return false;    // pieces of bytes: the fallback
  if (IsPredT(t) || IsPredT(r)) return t == r && in.rank() == out.rank();
  const int from = ir::BitWidth(t), to = ir::BitWidth(r);
  if (from == to) return in.rank() == out.rank();
  if (from > to) {
    return from % to == 0 && out.rank() == in.rank() + 1 && out.dims().back() == from / to;
  }
  return to % from == 0 && in.rank() == out.rank() + 1 && in.dims().back() == to / from;
}

// The math a scalar op needs for its element type(s), as the emitter
// implements it. Mirrors EmitScalarOp's switch.
bool ScalarOpSupported(const Op& op, const TargetMath& target) {
  if (!AllTensorTypesSupported(op, target)) return false;
  if (op.num_results() != 1) return false;
  const DType t = op.num_operands() > 0 ? op.operand(0)->type().dtype()
                                        : op.result(0)->type().dtype();
  if (HasComplexType(op)) {
    // Complex values: the ops whose results jit/eval computes exactly in
    // the component type (add / subtract in double round once into f32 as
    // f32 arithmetic does), and multiply / divide / abs in x87 extended
    // precision as jit/eval's long double (ComplexMultiply, ComplexDivide,
    // ComplexAbs). The transcendentals call jit/eval's own functions.
    switch (op.code()) {
      case OpCode::kMultiply:
      case OpCode::kDivide:  // libgcc's __divxc3, as jit/eval
      case OpCode::kAbs:  // hypotl
        return target.HasExtendedComplex();
      case OpCode::kBitcastConvert:
        return BitcastSupported(op);
      case OpCode::kCompare:  // lexicographic, as jit/eval's CompareComplex
      case OpCode::kAdd:
      case OpCode::kSubtract:
      case OpCode::kNegate:
      case OpCode::kSelect:
      case OpCode::kReal:
      case OpCode::kImag:
      case OpCode::kComplex:
      case OpCode::kConvert:
        return true;
      default:
        // Transcendentals, sign, power, atan2, remainder: calls of the
        // interpreter's own per-element functions (jit/eval/scalar_math.h).
        // A target without them may compute some itself (TargetMath::Has*).
        if (!IsCplx(t) || !IsCplx(op.result(0)->type().dtype())) return false;
        if (std::optional<int32_t> fn = ComplexUnaryFnOf(op.code())) {
          return target.HasHostRuntime() || target.HasComplexUnary(*fn);
        }
        if (std::optional<int32_t> fn = ComplexBinaryFnOf(op.code())) {
          return target.HasHostRuntime() || target.HasComplexBinary(*fn);
        }
        return false;
    }
  }
  if (std::optional<int32_t> fn = SpecialFnOf(op.code(), t)) {  // jit/eval's own functions, called
    return IsF(t) && (target.HasHostRuntime() || target.HasSpecial(*fn));
  }
  switch (op.code()) {
    case OpCode::kReal:
    case OpCode::kImag:
      return IsF(t);
    case OpCode::kCompare:
      // TOTALORDER on 8-bit floats would order their f32 values, not their
      // bit patterns (NaNs of either sign).
      if (IsNarrowFloat(t)) {
        const ir::EnumAttr* ct = op.GetEnum("compare_type");
        return !ct || ct->value != "TOTALORDER";
      }
      return true;
    case OpCode::kAdd:
    case OpCode::kMultiply:
    case OpCode::kMaximum:
    case OpCode::kMinimum:
    case OpCode::kSelect:
    case OpCode::kClamp:
      return true;
    case OpCode::kConvert:
      // Into f16 / bf16 from f64 and wide integers: rounded to odd in f32
      // first, then once to the narrow type (see Convert).
      return true;
    case OpCode::kSubtract:
    case OpCode::kDivide:
    case OpCode::kRemainder:
    case OpCode::kNegate:
    case OpCode::kAbs:
    case OpCode::kSign:
      return IsF(t) || IsInt(t);
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor:
    case OpCode::kNot:
      return IsInt(t) || IsPredT(t);
    case OpCode::kShiftLeft:
    case OpCode::kShiftRightArithmetic:
    case OpCode::kShiftRightLogical:
    case OpCode::kPopulationCount:
    case OpCode::kCountLeadingZeros:
      return IsInt(t);
    case OpCode::kExponential:
    case OpCode::kExponentialMinusOne:
    case OpCode::kLog:
    case OpCode::kLogPlusOne:
    case OpCode::kLogistic:
    case OpCode::kTanh:
    case OpCode::kSine:
    case OpCode::kCosine:
    case OpCode::kTan:
    case OpCode::kChloTan:
    case OpCode::kSqrt:
    case OpCode::kRsqrt:
    case OpCode::kCbrt:
    case OpCode::kFloor:
    case OpCode::kCeil:
    case OpCode::kRoundNearestAfz:
    case OpCode::kRoundNearestEven:
    case OpCode::kIsFinite:
    case OpCode::kPower:
    case OpCode::kAtan2:
    case OpCode::kChloSquare:
    case OpCode::kChloIsInf:
    case OpCode::kChloIsPosInf:
    case OpCode::kChloIsNegInf:
    case OpCode::kChloAsin:
    case OpCode::kChloAcos:
    case OpCode::kChloAtan:
    case OpCode::kChloAsinh:
    case OpCode::kChloAcosh:
    case OpCode::kChloAtanh:
    case OpCode::kChloErf:
    case OpCode::kChloErfc:
      return IsF(t);
    case OpCode::kBitcastConvert:
      return BitcastSupported(op);
    case OpCode::kReducePrecision:
      return IsF(t) && !IsNarrowFloat(t) && op.GetInt("exponent_bits").value_or(1) >= 1 && op.GetInt("mantissa_bits").value_or(0) >= 0;
    default:
      return false;
  }
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

bool IsSplatConstant(const Op& op) {
  if (op.code() != OpCode::kConstant) return false;
  const ir::Attribute* value = op.attr("value");
  const auto* dense = value ? value->get_if<ir::DenseElementsAttr>() : nullptr;
  if (!dense || !dense->data) return false;
  if (dense->splat) return true;
  return dense->type.num_elements() == 1;
}

}  // namespace

bool IsFusibleOp(const Op& op) { return IsFusibleOp(op, HostTargetMath()); }

bool IsFusibleOp(const Op& op, const TargetMath& target) {
  if (op.num_regions() != 0) return false;
  switch (op.code()) {
    case OpCode::kConstant:
      return IsSplatConstant(op) && AllTensorTypesSupported(op, target);
    case OpCode::kIota:
      return AllTensorTypesSupported(op, target) && !HasComplexType(op);
    case OpCode::kBroadcastInDim:
    case OpCode::kReshape:
    case OpCode::kTranspose:
    case OpCode::kSlice:
    case OpCode::kReverse:
    case OpCode::kConcatenate:
      return AllTensorTypesSupported(op, target) && op.num_results() == 1 && op.num_operands() >= 1;
    case OpCode::kPad:
      return AllTensorTypesSupported(op, target) && op.num_results() == 1 && op.num_operands() == 2 &&
             PadAttributesInRange(op);
    case OpCode::kDynamicSlice:
    case OpCode::kDynamicUpdateSlice:
      return AllTensorTypesSupported(op, target) && op.num_results() == 1 && op.num_operands() >= 1;
    default:
      return ScalarOpSupported(op, target);
  }
}

bool IsCheapToDuplicate(const Op& op) {
  if (op.code() == OpCode::kConstant || op.code() == OpCode::kIota) return true;
  if (op.code() == OpCode::kBroadcastInDim || op.code() == OpCode::kReshape) {
    return op.operand(0)->type().num_elements() == 1;
  }
  return false;
}

bool IsEmittableReduce(const Op& op) { return IsEmittableReduce(op, HostTargetMath()); }

bool IsEmittableReduce(const Op& op, const TargetMath& target) {
  if (op.code() != OpCode::kReduce || op.num_regions() != 1) return false;
  // Complex accumulators too: the body's ops are the interpreter's (add in
  // the component type, multiply in long double), step by step.
  if (!AllTensorTypesSupported(op, target)) return false;
  const size_t n = op.num_results();
  if (n == 0 || op.num_operands() != 2 * n) return false;
  const ir::Region& r = op.region(0);
  if (r.num_blocks() != 1) return false;
  const ir::Block& b = r.block(0);
  if (b.num_args() != 2 * n) return false;
  for (size_t i = 0; i < b.num_args(); ++i) {
    const ir::Type& t = b.arg(i)->type();
    // Bodies in a wider type than the operands (promotion) go to the fallback.
    if (!t.is_tensor() || t.rank() != 0 || t.dtype() != op.result(i % n)->type().dtype()) {
      return false;
    }
  }
  for (const auto& body_op : b.ops()) {
    if (body_op->code() == OpCode::kReturn) continue;
    if (!IsFusibleOp(*body_op, target)) return false;
    for (size_t i = 0; i < body_op->num_results(); ++i) {
      if (body_op->result(i)->type().rank() != 0) return false;
    }
    // Only scalar math and splat constants in a body (no index maps).
    switch (body_op->code()) {
      case OpCode::kIota:
      case OpCode::kBroadcastInDim:
      case OpCode::kTranspose:
      case OpCode::kSlice:
      case OpCode::kReverse:
      case OpCode::kConcatenate:
      case OpCode::kPad:
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice:
        return false;
      default:
        break;
    }
  }
  return true;
}

namespace {

// A multi-index into a shape, with its row-major linear offset; either part
// is computed from the other on demand.
struct Index {
  std::vector<int64_t> dims;
  std::vector<llvm::Value*> multi;  // empty until known (rank > 0)
  llvm::Value* linear = nullptr;
};

class Emitter final : public ElementalEmitter {
 public:
  Emitter(llvm::Module& module, const KernelSpec& spec, const TargetMath& target)
      : module_(module), ctx_(module.getContext()), b_(ctx_), spec_(spec), target_(target) {
    for (const Op* op : spec.fused) fused_.insert(op);
    i64_ = b_.getInt64Ty();
  }

  StatusOr<KernelInfo> Emit() {
    const Op& root = *spec_.root;
    const size_t num_params = spec_.inputs.size() + root.num_results() + spec_.extra_outputs.size();
    KernelInfo info;
    if (root.code() == OpCode::kReduce) {
      if (std::optional<Split> split = PlanSplit()) {
        // Phase 1 and 2 share the buffers, the partials appended last.
        JITD_RETURN_IF_ERROR(EmitFunction(spec_.name, num_params + 1, [&](llvm::Value* b, llvm::Value* e) {
          return EmitReducePartials(*split, b, e, info);
        }));
        JITD_RETURN_IF_ERROR(EmitFunction(CombineSymbol(spec_.name), num_params + 1,
                                          [&](llvm::Value* b, llvm::Value* e) {
                                            return EmitReduceCombine(*split, b, e);
                                          }));
        return info;
      }
      JITD_RETURN_IF_ERROR(EmitFunction(spec_.name, num_params, [&](llvm::Value* b, llvm::Value* e) {
        return EmitReduce(b, e, info);
      }));
      return info;
    }
    JITD_RETURN_IF_ERROR(EmitFunction(spec_.name, num_params, [&](llvm::Value* b, llvm::Value* e) {
      return EmitElementwise(b, e, info);
    }));
    return info;
  }

  // `i8 NAME(ptr lhs, ptr rhs)` for the sort root's comparator region (see
  // EmitComparator in the header).
  Status EmitComparatorFunction() {
    const Op& sort = *spec_.root;
    const ir::Block& block = sort.region(0).block(0);
    auto* type = llvm::FunctionType::get(b_.getInt8Ty(), {b_.getPtrTy(), b_.getPtrTy()}, false);
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec_.name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    fn->setOnlyReadsMemory();
    function_ = fn;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    for (size_t i = 0; i < sort.num_operands(); ++i) {
      const DType t = sort.operand(i)->type().dtype();
      for (unsigned side = 0; side < 2; ++side) {
        llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn->getArg(side), i);
        llvm::Value* element = b_.CreateLoad(b_.getPtrTy(), slot);
        scalars_[block.arg(2 * i + side)] = LoadElement(element, t, b_.getInt64(0));
      }
    }
    auto scalar = [&](const ir::Value* v) -> llvm::Value* {
      if (auto it = scalars_.find(v); it != scalars_.end()) return it->second;
      if (const Op* def = v->defining_op(); def && def->code() == OpCode::kConstant) return SplatConstant(*def);
      Fail("comparator value defined outside the region");
      return llvm::UndefValue::get(ComputeType(v->type().dtype()));
    };
    bool returned = false;
    for (const auto& op : block.ops()) {
      if (op->code() == OpCode::kReturn) {
        b_.CreateRet(b_.CreateZExt(scalar(op->operand(0)), b_.getInt8Ty()));
        returned = true;
        break;
      }
      std::vector<llvm::Value*> operands;
      for (const ir::Value* v : op->operands()) operands.push_back(scalar(v));
      scalars_[op->result(0)] = op->code() == OpCode::kConstant ? SplatConstant(*op) : Scalar(*op, operands);
    }
    if (!returned) Fail("comparator has no return");
    if (!status_.ok()) return status_;
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*fn, &os)) {
      return Internal("codegen produced an invalid comparator for 'stablehlo.sort' at " +
                      sort.loc().ToString() + ": " + os.str());
    }
    return Status::Ok();
  }

  // `void NAME(ptr acc, ptr x)` for the reduce_window root's body (see
  // EmitReduceWindowBody in the header).
  Status EmitWindowBodyFunction() {
    const Op& op = *spec_.root;
    const size_t n = op.num_results();
    const ir::Block& block = op.region(0).block(0);
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy()}, false);
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec_.name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::WillReturn);
    function_ = fn;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    std::vector<llvm::Value*> acc_ptrs;
    for (size_t i = 0; i < 2 * n; ++i) {
      const DType t = block.arg(i)->type().dtype();
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn->getArg(i < n ? 0 : 1), i % n);
      llvm::Value* element = b_.CreateLoad(b_.getPtrTy(), slot);
      if (i < n) acc_ptrs.push_back(element);
      scalars_[block.arg(i)] = LoadElement(element, t, b_.getInt64(0));
    }
    auto scalar = [&](const ir::Value* v) -> llvm::Value* {
      if (auto it = scalars_.find(v); it != scalars_.end()) return it->second;
      if (const Op* def = v->defining_op(); def && def->code() == OpCode::kConstant) return SplatConstant(*def);
      Fail("reduce_window body value defined outside the region");
      return llvm::UndefValue::get(ComputeType(v->type().dtype()));
    };
    bool returned = false;
    for (const auto& body_op : block.ops()) {
      if (body_op->code() == OpCode::kReturn) {
        // All results computed before any accumulator is overwritten.
        std::vector<llvm::Value*> results;
        for (const ir::Value* v : body_op->operands()) results.push_back(scalar(v));
        for (size_t i = 0; i < n && i < results.size(); ++i) {
          Store(results[i], op.result(i)->type().dtype(), acc_ptrs[i], b_.getInt64(0));
        }
        b_.CreateRetVoid();
        returned = true;
        break;
      }
      std::vector<llvm::Value*> operands;
      for (const ir::Value* v : body_op->operands()) operands.push_back(scalar(v));
      scalars_[body_op->result(0)] =
          body_op->code() == OpCode::kConstant ? SplatConstant(*body_op) : Scalar(*body_op, operands);
    }
    if (!returned) Fail("reduce_window body has no return");
    if (!status_.ok()) return status_;
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*fn, &os)) {
      return Internal("codegen produced an invalid body for 'stablehlo.reduce_window' at " +
                      op.loc().ToString() + ": " + os.str());
    }
    return Status::Ok();
  }

  // ---- ElementalEmitter (elemental_emitter.h) -------------------------------

  Builder& builder() override { return b_; }

  void Bind(llvm::Function* fn, const std::vector<llvm::Value*>& inputs,
            const std::vector<llvm::Value*>& outputs) override {
    params_.clear();
    scalars_.clear();
    ResetIndices();
    preloaded_.clear();
    partial_ = nullptr;
    function_ = fn;
    for (size_t i = 0; i < spec_.inputs.size() && i < inputs.size(); ++i) params_[spec_.inputs[i]] = inputs[i];
    for (const ir::Value* v : spec_.inputs) {
      if (v->type().rank() == 0) preloaded_[v] = Load(v, ScalarIndex());
    }
    outputs_ = outputs;
  }

  void StoreElement(llvm::Value* linear) override {
    const Op& root = *spec_.root;
    const ir::Type& type = root.result(0)->type();
    ResetIndices();
    Index* idx = NewIndex(type.dims());
    idx->linear = linear;
    if (type.rank() == 1) idx->multi = {linear};
    Store(Value(root.result(0), idx), type.dtype(), outputs_[0], linear);
    StoreExtraOutputs(idx, linear);
  }

  int64_t ReducedExtent() const override {
    const Op& root = *spec_.root;
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    int64_t extent = 1;
    for (int64_t d : root.GetI64Array("dimensions").value_or(std::vector<int64_t>{})) {
      extent *= in_dims[static_cast<size_t>(d)];
    }
    return extent;
  }

  std::vector<llvm::Value*> ReduceInits() override {
    const Op& root = *spec_.root;
    const size_t n = root.num_results();
    ResetIndices();
    std::vector<llvm::Value*> init;
    for (size_t k = 0; k < n; ++k) init.push_back(Value(root.operand(n + k), ScalarIndex()));
    return init;
  }

  std::vector<llvm::Value*> ReduceInputs(llvm::Value* out_linear, llvm::Value* reduced) override {
    const Op& root = *spec_.root;
    const size_t n = root.num_results();
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    std::vector<bool> is_reduced(in_dims.size(), false);
    for (int64_t d : root.GetI64Array("dimensions").value_or(std::vector<int64_t>{})) {
      is_reduced[static_cast<size_t>(d)] = true;
    }
    ResetIndices();
    Index* out_idx = NewIndex(root.result(0)->type().dims());
    out_idx->linear = out_linear;
    std::vector<llvm::Value*> out_multi = Multi(*out_idx);
    std::vector<llvm::Value*> in_multi(in_dims.size(), nullptr);
    size_t kept = 0;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (!is_reduced[d]) in_multi[d] = out_multi[kept++];
    }
    // The reduced dimensions' digits of `reduced`, minor first.
    llvm::Value* rest = reduced;
    std::vector<size_t> reduced_dims;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (is_reduced[d]) reduced_dims.push_back(d);
    }
    for (size_t k = reduced_dims.size(); k-- > 0;) {
      const size_t d = reduced_dims[k];
      if (k == 0) {
        in_multi[d] = rest;
      } else {
        in_multi[d] = b_.CreateURem(rest, b_.getInt64(in_dims[d]));
        rest = b_.CreateUDiv(rest, b_.getInt64(in_dims[d]));
      }
    }
    Index* idx = NewIndex(in_dims);
    idx->multi = in_multi;
    std::vector<llvm::Value*> x;
    for (size_t k = 0; k < n; ++k) x.push_back(Value(root.operand(k), idx));
    if (!spec_.extra_outputs.empty()) StoreExtraOutputs(idx, Linear(*idx));
    return x;
  }

  std::vector<llvm::Value*> ReduceCombine(const std::vector<llvm::Value*>& acc,
                                          const std::vector<llvm::Value*>& x) override {
    return ReduceBody(spec_.root->region(0).block(0), acc, x);
  }

  void StoreReduceResults(llvm::Value* out_linear, const std::vector<llvm::Value*>& acc) override {
    const Op& root = *spec_.root;
    for (size_t k = 0; k < root.num_results() && k < acc.size(); ++k) {
      Store(acc[k], root.result(k)->type().dtype(), outputs_[k], out_linear);
    }
  }

  std::optional<llvm::Value*> FoldIdentity() override {
    const Op& root = *spec_.root;
    if (root.code() != OpCode::kReduce || root.num_results() != 1) return std::nullopt;
    const DType t = root.result(0)->type().dtype();
    const std::optional<eval::FoldOp> fold = eval::RecognizeFold(root, 0, t);
    if (!fold || IsCplx(t)) return std::nullopt;
    const bool sum_or_product = *fold == eval::FoldOp::kAdd || *fold == eval::FoldOp::kMultiply;
    if (IsHalf(t) && sum_or_product) return std::nullopt;
    return FoldIdentity(*fold, t);
  }

  llvm::Value* LoadAt(llvm::Value* ptr, DType t, llvm::Value* offset) override {
    return LoadElement(ptr, t, offset);
  }

  void StoreAt(llvm::Value* x, DType t, llvm::Value* ptr, llvm::Value* offset) override { Store(x, t, ptr, offset); }

  std::vector<llvm::Value*> EmitScalarBlock(const ir::Block& block, const std::vector<llvm::Value*>& args) override {
    return ReduceBody(block, args, {});
  }

  Status status() const override { return status_; }

 private:
  // void NAME.body(ptr noalias p0, ..., i64 begin, i64 end), always inlined
  // into void NAME(ptr buffers, i64 begin, i64 end). Parameters: the spec's
  // inputs, the root's outputs, then (num_params beyond those) the partials
  // of a split reduction. `fill` emits the body's loops.
  Status EmitFunction(const std::string& name, size_t num_params,
                      const std::function<Status(llvm::Value*, llvm::Value*)>& fill) {
    const Op& root = *spec_.root;
    params_.clear();
    scalars_.clear();
    outputs_.clear();
    ResetIndices();
    preloaded_.clear();  // values of the previous function (a split reduction's phase 1)
    partial_ = nullptr;
    stream_stores_ = false;
    std::vector<llvm::Type*> body_params(num_params, b_.getPtrTy());
    body_params.push_back(i64_);
    body_params.push_back(i64_);
    auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), body_params, false);
    llvm::Function* body = llvm::Function::Create(body_type, llvm::Function::InternalLinkage,
                                                  name + ".body", module_);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    body->addFnAttr("prefer-vector-width", "512");
    for (size_t i = 0; i < num_params; ++i) {
      body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
      if (i < spec_.inputs.size()) body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::ReadOnly);
    }
    function_ = body;
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", body);
    b_.SetInsertPoint(entry);
    for (size_t i = 0; i < spec_.inputs.size(); ++i) params_[spec_.inputs[i]] = body->getArg(static_cast<unsigned>(i));
    // 0-d inputs (scalars, start indices, padding values) are read once
    // here, before any loop.
    for (const ir::Value* v : spec_.inputs) {
      if (v->type().rank() == 0) preloaded_[v] = Load(v, ScalarIndex());
    }
    const size_t num_outputs = root.num_results() + spec_.extra_outputs.size();
    for (size_t i = 0; i < num_outputs; ++i) {
      outputs_.push_back(body->getArg(static_cast<unsigned>(spec_.inputs.size() + i)));
    }
    const size_t fixed = spec_.inputs.size() + num_outputs;
    if (num_params > fixed) partial_ = body->getArg(static_cast<unsigned>(fixed));
    llvm::Value* begin = body->getArg(static_cast<unsigned>(num_params));
    llvm::Value* end = body->getArg(static_cast<unsigned>(num_params + 1));

    JITD_RETURN_IF_ERROR(fill(begin, end));
    if (!status_.ok()) return status_;
    b_.CreateRetVoid();

    // The entry point.
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), i64_, i64_}, false);
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr("prefer-vector-width", "512");
    if (stream_stores_) fn->addFnAttr(kStreamStoresAttr);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < num_params; ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn->getArg(0), i);
      args.push_back(b_.CreateLoad(b_.getPtrTy(), slot));
    }
    args.push_back(fn->getArg(1));
    args.push_back(fn->getArg(2));
    b_.CreateCall(body, args);
    b_.CreateRetVoid();

    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*body, &os) || llvm::verifyFunction(*fn, &os)) {
      return Internal("codegen produced invalid LLVM IR for '" + std::string(root.name()) +
                      "' at " + root.loc().ToString() + ": " + os.str());
    }
    return Status::Ok();
  }

  // ---- Types ---------------------------------------------------------------

  // complex<f32> / complex<f64> compute as <2 x float> / <2 x double>
  // (real, imaginary), the layout of their storage.
  llvm::Type* ComputeType(DType t) override {
    switch (t) {
      case DType::kC64: return llvm::FixedVectorType::get(b_.getFloatTy(), 2);
      case DType::kC128: return llvm::FixedVectorType::get(b_.getDoubleTy(), 2);
      case DType::kPred: return b_.getInt1Ty();
      case DType::kF16:
      case DType::kBF16:
      case DType::kF32: return b_.getFloatTy();
      case DType::kF64: return b_.getDoubleTy();
      default:
        if (IsNarrowFloat(t)) return b_.getFloatTy();
        return b_.getIntNTy(static_cast<unsigned>(ir::BitWidth(t)));
    }
  }
  llvm::Type* StorageType(DType t) {
    if (IsNarrowFloat(t) || IsSubByteInt(t)) return b_.getInt8Ty();
    if (IsHalf(t)) return b_.getInt16Ty();
    return t == DType::kPred ? b_.getInt8Ty() : ComputeType(t);
  }

  // f16 / bf16 bits (i16) <-> their f32 value; exact both ways, NaN
  // payloads included: a NaN's sign and mantissa move as bits (the
  // hardware conversions would quiet a signalling NaN), so a half value
  // that a kernel only moves keeps its bits, as in the interpreter.
  llvm::Value* HalfToFloat(llvm::Value* bits, DType t) {
    if (IsNarrowFloat(t)) return NarrowToFloat(bits, t);
    if (t == DType::kF16) {
      llvm::Value* x = b_.CreateFPExt(b_.CreateBitCast(bits, b_.getHalfTy()), b_.getFloatTy());
      llvm::Value* b32 = b_.CreateZExt(bits, b_.getInt32Ty());
      llvm::Value* nan_bits = b_.CreateOr(b_.CreateShl(b_.CreateAnd(b32, b_.getInt32(0x8000)), 16),
                                          b_.CreateOr(b_.getInt32(0x7F800000),
                                                      b_.CreateShl(b_.CreateAnd(b32, b_.getInt32(0x3FF)), 13)));
      llvm::Value* is_nan = b_.CreateICmpUGT(b_.CreateAnd(b32, b_.getInt32(0x7FFF)), b_.getInt32(0x7C00));
      return b_.CreateSelect(is_nan, b_.CreateBitCast(nan_bits, b_.getFloatTy()), x);
    }
    llvm::Value* wide = b_.CreateShl(b_.CreateZExt(bits, b_.getInt32Ty()), 16);
    return b_.CreateBitCast(wide, b_.getFloatTy());
  }
  // f32 -> f16 / bf16 bits, rounded to nearest even. A NaN keeps its sign
  // and the top of its payload; one whose kept payload would be zero (only
  // low f32 bits set) gets the quiet bit, so it stays a NaN.
  llvm::Value* FloatToHalf(llvm::Value* x, DType t) {
    if (IsNarrowFloat(t)) return FloatToNarrow(x, t);
    llvm::Value* bits = b_.CreateBitCast(x, b_.getInt32Ty());
    llvm::Value* is_nan = b_.CreateFCmpUNO(x, x);
    if (t == DType::kF16) {
      llvm::Value* rounded = b_.CreateBitCast(b_.CreateFPTrunc(x, b_.getHalfTy()), b_.getInt16Ty());
      llvm::Value* payload = b_.CreateAnd(b_.CreateLShr(bits, 13), b_.getInt32(0x3FF));
      payload = b_.CreateSelect(b_.CreateICmpEQ(payload, b_.getInt32(0)), b_.getInt32(0x200), payload);
      llvm::Value* nan = b_.CreateOr(b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(0x8000)),
                                     b_.CreateOr(b_.getInt32(0x7C00), payload));
      return b_.CreateSelect(is_nan, b_.CreateTrunc(nan, b_.getInt16Ty()), rounded);
    }
    llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
    llvm::Value* rounded = b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7FFF))), 16);
    llvm::Value* top = b_.CreateLShr(bits, 16);
    llvm::Value* nan = b_.CreateSelect(b_.CreateICmpEQ(b_.CreateAnd(top, b_.getInt32(0x7F)), b_.getInt32(0)),
                                       b_.CreateOr(top, b_.getInt32(0x40)), top);
    return b_.CreateTrunc(b_.CreateSelect(is_nan, nan, rounded), b_.getInt16Ty());
  }
  // 8-bit float bits (i8) -> their f32 value (exact): a load from a table
  // of jit/ir's DecodeFloat of all 256 patterns.
  llvm::Value* NarrowToFloat(llvm::Value* bits, DType t) {
    const std::string name = std::string("jitd_decode_") + std::string(ir::DTypeName(t));
    llvm::GlobalVariable* table = module_.getGlobalVariable(name, /*AllowInternal=*/true);
    if (!table) {
      const ir::FloatFormat format = *ir::GetFloatFormat(t);
      std::vector<float> values(256);
      for (uint64_t b = 0; b < 256; ++b) values[b] = static_cast<float>(ir::DecodeFloat(b, format));
      llvm::Constant* init = llvm::ConstantDataArray::get(ctx_, values);
      table = new llvm::GlobalVariable(module_, init->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::InternalLinkage, init, name);
    }
    llvm::Value* addr = b_.CreateInBoundsGEP(b_.getFloatTy(), table, b_.CreateZExt(bits, i64_));
    return b_.CreateLoad(b_.getFloatTy(), addr);
  }
  // f32 -> 8-bit float bits, rounded once by jit/ir's EncodeFloat (the
  // interpreter's own rounding, saturation and NaN encoding).
  llvm::Value* FloatToNarrow(llvm::Value* x, DType t) {
    llvm::Value* wide = b_.CreateFPExt(x, b_.getDoubleTy());
    llvm::Value* bits = EvalCall(kEncodeFloatSymbol, b_.getInt64Ty(),
                                 {b_.getInt32(static_cast<uint32_t>(t)), wide});
    return b_.CreateTrunc(bits, b_.getInt8Ty());
  }

  // An f32 value rounded to `t` when t is f16 / bf16 / an 8-bit float.
  llvm::Value* RoundTo(llvm::Value* x, DType t) {
    if (!IsHalf(t)) return x;
    return HalfToFloat(FloatToHalf(x, t), t);
  }

  // ---- Loops ---------------------------------------------------------------

  using LoopBody = std::function<std::vector<llvm::Value*>(llvm::Value* i,
                                                           const std::vector<llvm::Value*>& carried)>;

  // for (i = lo; i < hi; ++i) carried = body(i, carried); returns the final
  // carried values. `vectorize` adds loop metadata asking for it.
  std::vector<llvm::Value*> EmitLoop(llvm::Value* lo, llvm::Value* hi,
                                     const std::vector<llvm::Value*>& init, const LoopBody& body) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", function_);
    llvm::BasicBlock* loop_body = llvm::BasicBlock::Create(ctx_, "body", function_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "exit", function_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(i64_, 2);
    i->addIncoming(lo, pre);
    std::vector<llvm::PHINode*> phis;
    std::vector<llvm::Value*> carried;
    for (llvm::Value* v : init) {
      llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, pre);
      phis.push_back(phi);
      carried.push_back(phi);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), loop_body, exit);
    b_.SetInsertPoint(loop_body);
    std::vector<llvm::Value*> next = body(i, carried);
    llvm::Value* i_next = b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateBr(header);
    i->addIncoming(i_next, latch);
    for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
    b_.SetInsertPoint(exit);
    return carried;
  }

  // ---- Indices -------------------------------------------------------------

  Index* NewIndex(std::vector<int64_t> dims) {
    indices_.emplace_back();
    indices_.back().dims = std::move(dims);
    return &indices_.back();
  }
  // The index of rank-0 values: one object (constants only), so their
  // values are cached once.
  Index* ScalarIndex() {
    if (!scalar_) {
      scalar_ = NewIndex({});
      scalar_->linear = b_.getInt64(0);
    }
    return scalar_;
  }
  // Forgets the values computed so far (they need not dominate what is
  // emitted next).
  void ClearValues() {
    cache_.clear();
    derived_.clear();
  }
  // ClearValues, and frees the indices.
  void ResetIndices() {
    ClearValues();
    indices_.clear();
    scalar_ = nullptr;
  }

  llvm::Value* Linear(Index& idx) {
    if (idx.linear) return idx.linear;
    if (idx.dims.empty()) return idx.linear = b_.getInt64(0);
    llvm::Value* offset = b_.getInt64(0);
    int64_t stride = 1;
    for (size_t d = idx.dims.size(); d-- > 0;) {
      offset = b_.CreateAdd(offset, b_.CreateMul(idx.multi[d], b_.getInt64(stride), "", true, true),
                            "", true, true);
      stride *= idx.dims[d];
    }
    return idx.linear = offset;
  }

  const std::vector<llvm::Value*>& Multi(Index& idx) {
    if (!idx.multi.empty() || idx.dims.empty()) return idx.multi;
    idx.multi.resize(idx.dims.size());
    llvm::Value* rest = idx.linear;
    for (size_t d = idx.dims.size(); d-- > 0;) {
      if (d == 0) {
        idx.multi[d] = rest;
      } else {
        idx.multi[d] = b_.CreateURem(rest, b_.getInt64(idx.dims[d]));
        rest = b_.CreateUDiv(rest, b_.getInt64(idx.dims[d]));
      }
    }
    return idx.multi;
  }

  // The index of operand `i` of elementwise `op` at result index `idx`
  // (rank-0 operands of select / clamp broadcast implicitly).
  Index* ElementwiseOperandIndex(const Op& op, size_t i, Index* idx) {
    if (op.operand(i)->type().rank() == 0 && !idx->dims.empty()) return ScalarIndex();
    return idx;
  }

  // The index at which fused `op`, computed at `idx`, reads operand `k`
  // unconditionally (EmitOp reads it there through Value), or null when it
  // reads it otherwise: inside a guarded block (pad's and
  // dynamic_update_slice's data), after a join (dynamic_update_slice's
  // operand), as bits or pieces (bitcast_convert between widths or from
  // f16 / bf16), or not at all (an empty concatenate operand). Memoized
  // per (op, k, idx): the Index object is the cache key, so Prepare and
  // EmitOp must get the same one. dynamic_slice's operand index needs its
  // start values computed first (StartsFirst).
  Index* OperandIndex(const Op& op, size_t k, Index* idx) {
    const auto key = std::make_tuple(&op, k, static_cast<const Index*>(idx));
    if (auto it = derived_.find(key); it != derived_.end()) return it->second;
    Index* o = DeriveOperandIndex(op, k, idx);
    derived_[key] = o;
    return o;
  }
  static bool StartsFirst(const Op& op, size_t k) {
    return op.code() == OpCode::kDynamicSlice && k == 0;
  }

  Index* DeriveOperandIndex(const Op& op, size_t k, Index* idx) {
    const ir::Value* operand = op.operand(k);
    switch (op.code()) {
      case OpCode::kBroadcastInDim: {
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
      case OpCode::kReshape: {
        Index* o = NewIndex(operand->type().dims());
        o->linear = Linear(*idx);
        return o;
      }
      case OpCode::kTranspose: {
        const std::vector<int64_t> perm = op.GetI64Array("permutation").value_or(std::vector<int64_t>{});
        Index* o = NewIndex(operand->type().dims());
        o->multi.resize(perm.size());
        const auto& m = Multi(*idx);
        for (size_t i = 0; i < perm.size(); ++i) o->multi[static_cast<size_t>(perm[i])] = m[i];
        return o;
      }
      case OpCode::kSlice: {
        const auto start = op.GetI64Array("start_indices").value_or(std::vector<int64_t>{});
        auto strides = op.GetI64Array("strides").value_or(std::vector<int64_t>{});
        Index* o = NewIndex(operand->type().dims());
        const auto& m = Multi(*idx);
        for (size_t d = 0; d < m.size(); ++d) {
          const int64_t s = d < strides.size() ? strides[d] : 1;
          o->multi.push_back(b_.CreateAdd(b_.CreateMul(m[d], b_.getInt64(s)), b_.getInt64(start[d])));
        }
        return o;
      }
      case OpCode::kReverse: {
        const auto dims = op.GetI64Array("dimensions").value_or(std::vector<int64_t>{});
        Index* o = NewIndex(operand->type().dims());
        o->multi = Multi(*idx);
        for (int64_t d : dims) {
          o->multi[static_cast<size_t>(d)] = b_.CreateSub(
              b_.getInt64(operand->type().dim(d) - 1), o->multi[static_cast<size_t>(d)]);
        }
        return o;
      }
      case OpCode::kConcatenate: {
        // Each operand is read at its own index, clamped into its range
        // (EmitOp selects the one whose range holds the result index).
        const size_t dim = static_cast<size_t>(op.GetInt("dimension").value_or(0));
        const int64_t size = operand->type().dim(static_cast<int64_t>(dim));
        if (size == 0) return nullptr;
        int64_t offset = 0;
        for (size_t j = 0; j < k; ++j) offset += op.operand(j)->type().dim(static_cast<int64_t>(dim));
        Index* o = NewIndex(operand->type().dims());
        o->multi = Multi(*idx);
        llvm::Value* local = b_.CreateSub(o->multi[dim], b_.getInt64(offset));
        local = Intrinsic(llvm::Intrinsic::smax, {local, b_.getInt64(0)});
        local = Intrinsic(llvm::Intrinsic::smin, {local, b_.getInt64(size - 1)});
        o->multi[dim] = local;
        return o;
      }
      case OpCode::kDynamicSlice: {
        if (k > 0) return ScalarIndex();  // a start index
        // operand[clamped start + result index]: always in bounds.
        const std::vector<int64_t>& odims = operand->type().dims();
        const std::vector<llvm::Value*> starts =
            ClampedStarts(op, 1, odims, op.result(0)->type().dims());
        Index* o = NewIndex(odims);
        const auto& m = Multi(*idx);
        for (size_t d = 0; d < m.size(); ++d) o->multi.push_back(b_.CreateAdd(m[d], starts[d], "", true, true));
        return o;
      }
      case OpCode::kDynamicUpdateSlice:
        return k >= 2 ? ScalarIndex() : nullptr;  // start indices only
      case OpCode::kPad:
        return k == 1 ? ScalarIndex() : nullptr;  // the padding value only
      case OpCode::kBitcastConvert: {
        // Equal widths read the operand's element at the same index (f16 /
        // bf16 operands are read as bits, by HalfBits).
        const DType from = operand->type().dtype();
        const bool same_width = ir::BitWidth(from) == ir::BitWidth(op.result(0)->type().dtype());
        return same_width && !IsHalf16(from) ? idx : nullptr;
      }
      default:
        return ElementwiseOperandIndex(op, k, idx);  // EmitOp's pointwise ops
    }
  }

  // ---- Values --------------------------------------------------------------

  llvm::Value* Load(const ir::Value* v, Index* idx) {
    if (auto it = preloaded_.find(v); it != preloaded_.end()) return it->second;
    const DType t = v->type().dtype();
    llvm::Value* ptr = params_.at(v);
    llvm::Value* offset = v->type().rank() == 0 ? b_.getInt64(0) : Linear(*idx);
    llvm::Value* addr = b_.CreateInBoundsGEP(StorageType(t), ptr, offset);
    // Complex elements are aligned to their component only.
    llvm::Value* x = IsCplx(t) ? b_.CreateAlignedLoad(StorageType(t), addr, llvm::Align(ir::StorageBytes(t) / 2))
                               : b_.CreateLoad(StorageType(t), addr);
    if (t == DType::kPred) x = b_.CreateICmpNE(x, b_.getInt8(0));
    if (IsHalf(t)) x = HalfToFloat(x, t);
    if (IsSubByteInt(t)) x = b_.CreateTrunc(x, ComputeType(t));
    return x;
  }

  // Element `offset` of a buffer of `t` at `ptr`, in its compute type.
  llvm::Value* LoadElement(llvm::Value* ptr, DType t, llvm::Value* offset) {
    llvm::Value* addr = b_.CreateInBoundsGEP(StorageType(t), ptr, offset);
    // Complex elements are aligned to their component only.
    llvm::Value* x = IsCplx(t) ? b_.CreateAlignedLoad(StorageType(t), addr, llvm::Align(ir::StorageBytes(t) / 2))
                               : b_.CreateLoad(StorageType(t), addr);
    if (t == DType::kPred) x = b_.CreateICmpNE(x, b_.getInt8(0));
    if (IsHalf(t)) x = HalfToFloat(x, t);
    if (IsSubByteInt(t)) x = b_.CreateTrunc(x, ComputeType(t));
    return x;
  }

  void Store(llvm::Value* x, DType t, llvm::Value* ptr, llvm::Value* offset) {
    if (t == DType::kPred) x = b_.CreateZExt(x, b_.getInt8Ty());
    if (IsHalf(t)) x = FloatToHalf(x, t);
    if (IsSubByteInt(t)) x = b_.CreateZExt(x, b_.getInt8Ty());
    llvm::Value* addr = b_.CreateInBoundsGEP(StorageType(t), ptr, offset);
    if (IsCplx(t)) {
      b_.CreateAlignedStore(x, addr, llvm::Align(ir::StorageBytes(t) / 2));
      return;
    }
    b_.CreateStore(x, addr);
  }

  llvm::Value* Value(const ir::Value* v, Index* idx) {
    if (raw_half_) {
      // Inside HalfBits' walk: f16 / bf16 values as their bits, every other
      // value (start indices, select predicates) as usual.
      if (IsHalf16(v->type().dtype())) return HalfBits(v, idx);
      raw_half_ = false;
      llvm::Value* x = Value(v, idx);
      raw_half_ = true;
      return x;
    }
    auto key = std::make_pair(v, static_cast<const Index*>(idx));
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    Prepare(v, idx);
    auto it = cache_.find(key);  // missing only when emission stopped (status_)
    return it != cache_.end() ? it->second : llvm::UndefValue::get(ComputeType(v->type().dtype()));
  }

  // Computes `v` at `idx` into the cache, after the values it reads at
  // indices OperandIndex knows, bottom-up, with an explicit stack: a chain
  // of N fused ops costs no native stack. Reads OperandIndex leaves out
  // (pad / dynamic_update_slice data, bitcasts between widths, f16 / bf16
  // bits) recurse through EmitOp, one level per such op on a path;
  // kMaxKernelOps bounds that.
  void Prepare(const ir::Value* v, Index* idx) {
    struct Item {
      const ir::Value* v;
      Index* idx;
      int phase;  // 0: push reads; 1: push StartsFirst reads; 2: compute
    };
    std::vector<Item> stack = {{v, idx, 0}};
    while (!stack.empty() && status_.ok()) {
      Item& item = stack.back();
      const auto key = std::make_pair(item.v, static_cast<const Index*>(item.idx));
      if (cache_.count(key)) {
        stack.pop_back();
        continue;
      }
      const Op* op = item.v->defining_op();
      const bool computed_here =
          !scalars_.count(item.v) && !params_.count(item.v) && op && fused_.count(op);
      if (!computed_here || item.phase == 2) {
        const Item done = item;
        stack.pop_back();
        cache_[key] = Compute(done.v, done.idx);
        continue;
      }
      const int phase = item.phase++;
      Index* at = item.idx;  // `item` dangles once the stack grows
      // Pushed last to first: read (and emitted) first to last, as EmitOp would.
      for (size_t k = op->num_operands(); k-- > 0;) {
        if (StartsFirst(*op, k) != (phase == 1)) continue;
        if (Index* o = OperandIndex(*op, k, at)) stack.push_back({op->operand(k), o, 0});
      }
    }
  }

  // `v` at `idx`, its reads through Value (cached when Prepare ran).
  llvm::Value* Compute(const ir::Value* v, Index* idx) {
    llvm::Value* x = nullptr;
    if (auto it = scalars_.find(v); it != scalars_.end()) {
      x = it->second;
    } else if (params_.count(v)) {
      x = Load(v, idx);
    } else if (const Op* op = v->defining_op(); op && fused_.count(op)) {
      if (!CountComputation()) return llvm::UndefValue::get(ComputeType(v->type().dtype()));
      x = EmitOp(*op, idx);
    } else {
      Fail("a value that is neither a kernel input nor fused");
      x = llvm::UndefValue::get(ComputeType(v->type().dtype()));
    }
    return x;
  }

  void Fail(const std::string& message) {
    if (status_.ok()) {
      status_ = Internal("codegen for '" + std::string(spec_.root->name()) + "' at " +
                         spec_.root->loc().ToString() + ": " + message);
    }
  }

  // Counts one op computed for an element (kMaxKernelComputations); false
  // (and the kernel failed) past the limit, or once anything failed: the
  // caller then returns an undefined value instead of emitting more.
  bool CountComputation() {
    if (!status_.ok()) return false;
    if (++computations_ <= kMaxKernelComputations) return true;
    status_ = ResourceExhausted(spec_.root->loc().ToString() + ": '" + std::string(spec_.root->name()) +
                                "' op roots a kernel that computes more than " +
                                std::to_string(kMaxKernelComputations) +
                                " ops per element (operands read at many indices recompute)");
    return false;
  }

  llvm::Value* SplatConstant(const Op& op) {
    const auto& dense = op.attr("value")->as<ir::DenseElementsAttr>();
    const DType t = dense.type.dtype();
    const uint8_t* p = dense.data->data();
    if (t == DType::kC64) {
      float f[2];
      std::memcpy(f, p, 8);
      return llvm::ConstantVector::get({llvm::ConstantFP::get(b_.getFloatTy(), f[0]),
                                        llvm::ConstantFP::get(b_.getFloatTy(), f[1])});
    }
    if (t == DType::kC128) {
      double d[2];
      std::memcpy(d, p, 16);
      return llvm::ConstantVector::get({llvm::ConstantFP::get(b_.getDoubleTy(), d[0]),
                                        llvm::ConstantFP::get(b_.getDoubleTy(), d[1])});
    }
    uint64_t bits = 0;
    std::memcpy(&bits, p, static_cast<size_t>(ir::StorageBytes(t)));
    switch (t) {
      case DType::kPred: return b_.getInt1(bits != 0);
      case DType::kF16:
        return llvm::ConstantFP::get(b_.getFloatTy(), ir::HalfToFloat(static_cast<uint16_t>(bits)));
      case DType::kBF16:
        return llvm::ConstantFP::get(b_.getFloatTy(), ir::BFloat16ToFloat(static_cast<uint16_t>(bits)));
      case DType::kF8E3M4:
      case DType::kF8E4M3:
      case DType::kF8E4M3FN:
      case DType::kF8E4M3FNUZ:
      case DType::kF8E4M3B11FNUZ:
      case DType::kF8E5M2:
      case DType::kF8E5M2FNUZ:
        return llvm::ConstantFP::get(b_.getFloatTy(),
                                     static_cast<float>(ir::DecodeFloat(bits, *ir::GetFloatFormat(t))));
      case DType::kF32: {
        float f;
        std::memcpy(&f, p, 4);
        return llvm::ConstantFP::get(b_.getFloatTy(), f);
      }
      case DType::kF64: {
        double d;
        std::memcpy(&d, p, 8);
        return llvm::ConstantFP::get(b_.getDoubleTy(), d);
      }
      default:
        return llvm::ConstantInt::get(ComputeType(t), bits);
    }
  }

  llvm::Value* EmitOp(const Op& op, Index* idx) {
    const ir::Type& rt = op.result(0)->type();
    switch (op.code()) {
      case OpCode::kConstant:
        return SplatConstant(op);
      case OpCode::kIota: {
        const size_t dim = static_cast<size_t>(op.GetInt("iota_dimension").value_or(0));
        llvm::Value* i = Multi(*idx)[dim];
        const DType t = rt.dtype();
        if (IsF(t)) return b_.CreateUIToFP(i, ComputeType(t));
        if (IsPredT(t)) return b_.CreateICmpNE(i, b_.getInt64(0));
        return b_.CreateTrunc(i, ComputeType(t));
      }
      case OpCode::kBroadcastInDim:
      case OpCode::kReshape:
      case OpCode::kTranspose:
      case OpCode::kSlice:
      case OpCode::kReverse:
      case OpCode::kDynamicSlice:
        return Value(op.operand(0), OperandIndex(op, 0, idx));
      case OpCode::kConcatenate: {
        // Every operand is read at its own (clamped) index and the one
        // whose range holds the result index is selected: no branches in
        // the loop, no reads out of bounds.
        const size_t dim = static_cast<size_t>(op.GetInt("dimension").value_or(0));
        llvm::Value* position = Multi(*idx)[dim];
        llvm::Value* result = nullptr;
        int64_t offset = 0;
        for (size_t k = 0; k < op.num_operands(); ++k) {
          const ir::Value* operand = op.operand(k);
          const int64_t size = operand->type().dim(static_cast<int64_t>(dim));
          if (size == 0) continue;
          llvm::Value* v = Value(operand, OperandIndex(op, k, idx));
          result = result ? b_.CreateSelect(b_.CreateICmpSGE(position, b_.getInt64(offset)), v, result)
                          : v;
          offset += size;
        }
        if (!result) {
          Fail("concatenate of empty operands");
          return llvm::UndefValue::get(ComputeType(rt.dtype()));
        }
        return result;
      }
      case OpCode::kPad:
        return EmitPad(op, idx);
      case OpCode::kBitcastConvert:
        return FromBits(BitcastBits(op, idx), rt.dtype());
      case OpCode::kDynamicUpdateSlice: {
        // update[index - start] inside the update's window, operand[index]
        // elsewhere; the update is only read inside (a guarded block the
        // vectorizer turns into masked loads).
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
        // A constant on the other edge and the operand read after the
        // join: a phi of two loads would be folded into one load of a
        // selected address (a gather).
        llvm::Type* element = raw_half_ && IsHalf16(rt.dtype()) ? b_.getInt16Ty() : ComputeType(rt.dtype());
        llvm::Value* x = Guarded(inside, llvm::Constant::getNullValue(element), [&] {
          Index* u = NewIndex(udims);
          u->multi = rel;
          return Value(update, u);
        });
        return b_.CreateSelect(inside, x, Value(operand, idx));
      }
      default:
        break;
    }
    std::vector<llvm::Value*> operands;
    for (size_t i = 0; i < op.num_operands(); ++i) {
      operands.push_back(Value(op.operand(i), OperandIndex(op, i, idx)));
    }
    return Scalar(op, operands);
  }

  // The start indices of dynamic_slice / dynamic_update_slice (operands
  // first.., 0-d integers of any width and signedness) as i64 clamped to
  // [0, dims[d] - sizes[d]] (jit/eval's ClampedStarts): unsigned values
  // above INT64_MAX clamp to the top, not around to negative.
  std::vector<llvm::Value*> ClampedStarts(const Op& op, size_t first, const std::vector<int64_t>& dims,
                                          const std::vector<int64_t>& sizes) {
    std::vector<llvm::Value*> starts;
    for (size_t d = 0; d < dims.size(); ++d) {
      const ir::Value* v = op.operand(first + d);
      const DType t = v->type().dtype();
      llvm::Value* hi = b_.getInt64(dims[d] - sizes[d]);
      llvm::Value* s = Value(v, ScalarIndex());
      if (ir::IsUnsignedInt(t)) {
        s = b_.CreateZExtOrTrunc(s, i64_);
        s = Intrinsic(llvm::Intrinsic::umin, {s, hi});
      } else {
        s = b_.CreateSExtOrTrunc(s, i64_);
        s = Intrinsic(llvm::Intrinsic::smin, {Intrinsic(llvm::Intrinsic::smax, {s, b_.getInt64(0)}), hi});
      }
      starts.push_back(s);
    }
    return starts;
  }

  // `inside ? then() : otherwise` where then() is emitted in a block of its
  // own that runs only when `inside` holds (its loads may be out of bounds
  // otherwise). The loop vectorizer if-converts such blocks with masked
  // loads. Values computed in the block are dropped from the cache: they do
  // not dominate what follows.
  llvm::Value* Guarded(llvm::Value* inside, llvm::Value* otherwise, const std::function<llvm::Value*()>& then) {
    llvm::BasicBlock* from = b_.GetInsertBlock();
    llvm::BasicBlock* in = llvm::BasicBlock::Create(ctx_, "guarded", function_);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "join", function_);
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

  // pad as a select on the result index: result index r maps to operand
  // index (r - low) / (interior + 1) when that divides evenly and lies
  // inside the operand; the padding value elsewhere. The operand is read
  // only there (Guarded).
  llvm::Value* EmitPad(const Op& op, Index* idx) {
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

  // ---- Element bits (bitcast_convert, reduce_precision) ---------------------

  // jit/eval's canonical quiet NaN (ir::EncodeFloat's NanBits) of f16 / bf16.
  llvm::Value* HalfNanBits(DType t) { return b_.getInt16(t == DType::kF16 ? 0x7E00 : 0x7FC0); }

  // The storage bits of a value of type `t` in its compute form, as an
  // integer of BitWidth(t) bits (i1 for pred). f16 / bf16 values are
  // rounded back from f32 (exact: they hold a value of the type), NaN as
  // jit/eval's canonical NaN when `canonical_nan` (what the interpreter
  // stores for a computed NaN).
  llvm::Value* ToBits(llvm::Value* x, DType t, bool canonical_nan) {
    if (IsPredT(t) || IsInt(t)) return x;
    if (IsNarrowFloat(t)) return FloatToHalf(x, t);  // EncodeFloat: NaN canonical already
    if (IsHalf(t)) {
      llvm::Value* bits = FloatToHalf(x, t);
      return canonical_nan ? b_.CreateSelect(b_.CreateFCmpUNO(x, x), HalfNanBits(t), bits) : bits;
    }
    return b_.CreateBitCast(x, b_.getIntNTy(static_cast<unsigned>(ir::BitWidth(t))));
  }
  // The compute form of storage bits of type `t`.
  llvm::Value* FromBits(llvm::Value* bits, DType t) {
    if (IsPredT(t) || IsInt(t)) return bits;
    if (IsHalf(t)) return HalfToFloat(bits, t);
    return b_.CreateBitCast(bits, ComputeType(t));
  }

  // The i16 storage bits of f16 / bf16 value `v` at `idx`, exactly as the
  // interpreter holds them: f16's f32 round trip quiets signalling NaNs,
  // so values that reach a bitcast_convert or reduce_precision through ops
  // that copy elements (index maps, select) are read as bits from their
  // buffer or constant; bitcast_convert and reduce_precision results are
  // bits already. Anything computed is rounded from f32, a NaN as the
  // interpreter's canonical one.
  llvm::Value* HalfBits(const ir::Value* v, Index* idx) {
    // Not cached (bits differ from the computed form): every path counts.
    if (!CountComputation()) return llvm::UndefValue::get(b_.getInt16Ty());
    const DType t = v->type().dtype();
    if (auto it = params_.find(v); it != params_.end()) {
      llvm::Value* offset = v->type().rank() == 0 ? b_.getInt64(0) : Linear(*idx);
      return b_.CreateLoad(b_.getInt16Ty(), b_.CreateInBoundsGEP(b_.getInt16Ty(), it->second, offset));
    }
    const Op* op = v->defining_op();
    if (op && fused_.count(op) && !scalars_.count(v)) {
      switch (op->code()) {
        case OpCode::kConstant: {
          uint16_t bits;
          std::memcpy(&bits, op->attr("value")->as<ir::DenseElementsAttr>().data->data(), 2);
          return b_.getInt16(bits);
        }
        case OpCode::kBitcastConvert:
          return BitcastBits(*op, idx);
        case OpCode::kReducePrecision:
          return ReducePrecisionBits(*op, HalfBits(op->operand(0), idx));
        case OpCode::kSelect: {
          const bool saved = raw_half_;
          raw_half_ = false;
          llvm::Value* p = Value(op->operand(0), ElementwiseOperandIndex(*op, 0, idx));
          raw_half_ = saved;
          return b_.CreateSelect(p, HalfBits(op->operand(1), ElementwiseOperandIndex(*op, 1, idx)),
                                 HalfBits(op->operand(2), ElementwiseOperandIndex(*op, 2, idx)));
        }
        case OpCode::kBroadcastInDim:
        case OpCode::kReshape:
        case OpCode::kTranspose:
        case OpCode::kSlice:
        case OpCode::kReverse:
        case OpCode::kConcatenate:
        case OpCode::kPad:
        case OpCode::kDynamicSlice:
        case OpCode::kDynamicUpdateSlice: {
          // The index map itself, its half-typed operands read as bits
          // (Value defers to HalfBits while raw_half_ is set).
          const bool saved = raw_half_;
          raw_half_ = true;
          llvm::Value* x = EmitOp(*op, idx);
          raw_half_ = saved;
          return x;
        }
        default:
          break;
      }
    }
    const bool saved = raw_half_;
    raw_half_ = false;
    llvm::Value* x = Value(v, idx);
    raw_half_ = saved;
    return ToBits(x, t, /*canonical_nan=*/true);
  }

  // The result element of bitcast_convert `op` at `idx` as BitWidth bits:
  // equal widths reinterpret; a narrower result takes piece j (its minor
  // index) of the operand element; a wider one joins the operand's minor
  // dimension, piece j at bits [j * narrow, (j + 1) * narrow).
  llvm::Value* BitcastBits(const Op& op, Index* idx) {
    const ir::Value* in = op.operand(0);
    const DType from = in->type().dtype(), to = op.result(0)->type().dtype();
    const unsigned fb = static_cast<unsigned>(ir::BitWidth(from)), tb = static_cast<unsigned>(ir::BitWidth(to));
    auto bits_at = [&](Index* i) {
      if (IsHalf16(from)) return HalfBits(in, i);
      const bool saved = raw_half_;
      raw_half_ = false;
      llvm::Value* x = Value(in, i);
      raw_half_ = saved;
      return ToBits(x, from, /*canonical_nan=*/true);
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

  // Implements reduce_precision as the StableHLO spec and XLA define it.
  // The same steps as jit/eval/elementwise.cc's ReducePrecisionBits, on the
  // storage bits of an f16 / bf16 / f32 / f64 (1 + exponent + mantissa bits,
  // IEEE bias): round to `mantissa_bits` (to nearest, ties to even), then a
  // signed infinity above or a signed zero below the normal range of an
  // `exponent_bits`-wide exponent. NaN passes through unchanged.
  llvm::Value* ReducePrecisionBits(const Op& op, llvm::Value* bits) {
    const ir::FloatFormat format = *ir::GetFloatFormat(op.operand(0)->type().dtype());
    const int m = format.mantissa_bits;
    const int e = format.exponent_bits;
    const int64_t mantissa_bits = op.GetInt("mantissa_bits").value_or(m);
    const int64_t exponent_bits = op.GetInt("exponent_bits").value_or(e);
    llvm::Type* int_type = bits->getType();
    auto constant = [&](uint64_t v) { return llvm::ConstantInt::get(int_type, v); };
    auto ones = [](int n) { return (uint64_t{1} << n) - 1; };  // n < 64 here
    llvm::Value* x = bits;
    if (mantissa_bits < m) {
      // Take the low `cut` bits away, and add one unit of the new width back
      // when they were more than half a unit, or exactly half and the kept
      // part is odd. A carry out of the mantissa moves into the exponent,
      // which is the right result (up to infinity).
      const int cut = m - static_cast<int>(mantissa_bits);
      const uint64_t unit = uint64_t{1} << cut;
      llvm::Value* rest = b_.CreateAnd(x, constant(unit - 1));
      x = b_.CreateSub(x, rest);
      llvm::Value* odd = b_.CreateICmpNE(b_.CreateAnd(x, constant(unit)), constant(0));
      llvm::Value* above_half = b_.CreateICmpUGT(rest, constant(unit / 2));
      llvm::Value* tie_to_even = b_.CreateAnd(b_.CreateICmpEQ(rest, constant(unit / 2)), odd);
      x = b_.CreateAdd(x, b_.CreateSelect(b_.CreateOr(above_half, tie_to_even), constant(unit), constant(0)));
    }
    if (exponent_bits < e) {
      // Normal numbers at the new width have unbiased exponents from
      // 1 - new_bias to new_bias; compared here as the biased field (the
      // bias added to both sides). Subnormals are not kept.
      const uint64_t bias = ones(e - 1);
      const uint64_t new_bias = ones(static_cast<int>(exponent_bits) - 1);
      llvm::Value* field = b_.CreateAnd(b_.CreateLShr(x, constant(static_cast<uint64_t>(m))), constant(ones(e)));
      llvm::Value* sign = b_.CreateAnd(x, constant(uint64_t{1} << (e + m)));
      llvm::Value* infinity = b_.CreateOr(sign, constant(ones(e) << m));
      llvm::Value* too_large = b_.CreateICmpUGT(field, constant(bias + new_bias));
      llvm::Value* too_small = b_.CreateICmpULT(field, constant(bias + 1 - new_bias));
      x = b_.CreateSelect(too_large, infinity, b_.CreateSelect(too_small, sign, x));
    }
    // NaN: all exponent bits set and a nonzero mantissa, whatever the sign.
    llvm::Value* magnitude = b_.CreateAnd(bits, constant(ones(e + m)));
    return b_.CreateSelect(b_.CreateICmpUGT(magnitude, constant(ones(e) << m)), bits, x);
  }

  // ---- Scalar math (jit/eval/elementwise.cc's semantics) -------------------

  // A function of jit/eval's (jit/eval/scalar_math.h), declared as not
  // touching memory.
  llvm::CallInst* EvalCall(const char* symbol, llvm::Type* result, llvm::ArrayRef<llvm::Value*> args) {
    if (!target_.HasHostRuntime()) {
      Fail(std::string("a call of the host's ") + symbol + ", which target " + std::string(target_.name()) +
           " does not have");
    }
    std::vector<llvm::Type*> params;
    for (llvm::Value* a : args) params.push_back(a->getType());
    llvm::FunctionCallee callee = module_.getOrInsertFunction(symbol, llvm::FunctionType::get(result, params, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    llvm::CallInst* call = b_.CreateCall(callee, args);
    call->setDoesNotAccessMemory();
    return call;
  }

  // The interpreter's complex function `fn` of `zs`: parts widened to
  // double, {re, im} doubles back (the C ABI of a struct of two doubles),
  // narrowed per part for complex<f32> as the interpreter stores them.
  llvm::Value* EvalComplexCall(const char* symbol, int32_t fn, llvm::ArrayRef<llvm::Value*> zs, DType t) {
    llvm::Type* d = b_.getDoubleTy();
    if (!target_.HasHostRuntime()) return TargetComplexCall(symbol, fn, zs, t);
    std::vector<llvm::Value*> args = {b_.getInt32(static_cast<uint32_t>(fn))};
    for (llvm::Value* z : zs) {
      for (uint64_t part = 0; part < 2; ++part) {
        llvm::Value* v = b_.CreateExtractElement(z, part);
        args.push_back(t == DType::kC64 ? b_.CreateFPExt(v, d) : v);
      }
    }
    llvm::Value* r = EvalCall(symbol, llvm::StructType::get(ctx_, {d, d}), args);
    llvm::Value* out = llvm::UndefValue::get(ComputeType(t));
    for (unsigned part = 0; part < 2; ++part) {
      llvm::Value* v = b_.CreateExtractValue(r, part);
      out = b_.CreateInsertElement(out, t == DType::kC64 ? b_.CreateFPTrunc(v, b_.getFloatTy()) : v,
                                   uint64_t{part});
    }
    return out;
  }

  // EvalComplexCall on a target without the host's functions: its own
  // code (TargetMath::ComplexUnary / ComplexBinary) on the parts widened
  // to double, narrowed the same way.
  llvm::Value* TargetComplexCall(const char* symbol, int32_t fn, llvm::ArrayRef<llvm::Value*> zs, DType t) {
    llvm::Type* d2 = llvm::FixedVectorType::get(b_.getDoubleTy(), 2);
    std::vector<llvm::Value*> wide;
    for (llvm::Value* z : zs) wide.push_back(t == DType::kC64 ? b_.CreateFPExt(z, d2) : z);
    llvm::Value* r = nullptr;
    if (wide.size() == 1) r = target_.ComplexUnary(b_, module_, fn, wide[0]);
    if (wide.size() == 2) r = target_.ComplexBinary(b_, module_, fn, wide[0], wide[1]);
    if (!r) {
      Fail(std::string(symbol) + " function " + std::to_string(fn) + ", which target " +
           std::string(target_.name()) + " does not have");
      return llvm::UndefValue::get(ComputeType(t));
    }
    return t == DType::kC64 ? b_.CreateFPTrunc(r, ComputeType(t)) : r;
  }

  // The interpreter's real special function `fn` of x: in double, rounded
  // once into the type (f16 / bf16: rounded to odd in f32 first, so the
  // caller's rounding to the type is the only one, as jit/eval's EncodeFloat).
  llvm::Value* EvalSpecialCall(int32_t fn, llvm::Value* x, DType t) {
    llvm::Value* wide = t == DType::kF64 ? x : b_.CreateFPExt(x, b_.getDoubleTy());
    llvm::Value* r = target_.HasHostRuntime()
                         ? EvalCall(kSpecialSymbol, b_.getDoubleTy(), {b_.getInt32(static_cast<uint32_t>(fn)), wide})
                         : target_.Special(b_, module_, fn, wide);
    if (!r) {
      Fail("special function " + std::to_string(fn) + ", which target " + std::string(target_.name()) +
           " does not have");
      r = wide;
    }
    if (t == DType::kF64) return r;
    return IsHalf(t) ? DoubleToFloatRoundToOdd(r) : b_.CreateFPTrunc(r, b_.getFloatTy());
  }

  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args) {
    return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
  }

  // A call to a libm function (f32: name + "f"), declared as not touching
  // memory so the vectorizer can map it to libmvec.
  // `precise`: a call the vectorizer must not replace by a libmvec variant
  // (those are up to 4 ULP off; f64 results need libm's < 1 ULP).
  llvm::Value* LibmCall(const std::string& base, llvm::ArrayRef<llvm::Value*> args,
                        bool precise = false) {
    llvm::Type* t = args[0]->getType();
    const std::string name = target_.MathFunction(base, t->isFloatTy());
    std::vector<llvm::Type*> params(args.size(), t);
    llvm::FunctionCallee callee =
        module_.getOrInsertFunction(name, llvm::FunctionType::get(t, params, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    llvm::CallInst* call = b_.CreateCall(callee, args);
    call->setDoesNotAccessMemory();
    if (precise) call->addFnAttr(llvm::Attribute::NoBuiltin);
    return call;
  }

  // f32 values computed in f64 and rounded once: for the functions where
  // the f32 vector variants are less accurate than the corpus allows.
  llvm::Value* LibmCallWide(const std::string& base, llvm::Value* x) {
    if (!x->getType()->isFloatTy()) return LibmCall(base, {x}, /*precise=*/true);
    llvm::Value* wide = b_.CreateFPExt(x, b_.getDoubleTy());
    return b_.CreateFPTrunc(LibmCall(base, {wide}), b_.getFloatTy());
  }

  llvm::Value* FloatMax(llvm::Value* a, llvm::Value* b) { return Intrinsic(llvm::Intrinsic::maximum, {a, b}); }
  llvm::Value* FloatMin(llvm::Value* a, llvm::Value* b) { return Intrinsic(llvm::Intrinsic::minimum, {a, b}); }

  llvm::Value* Max(DType t, llvm::Value* a, llvm::Value* b) {
    if (IsF(t)) return FloatMax(a, b);
    if (IsPredT(t)) return b_.CreateOr(a, b);
    return ir::IsSignedInt(t) ? Intrinsic(llvm::Intrinsic::smax, {a, b}) : Intrinsic(llvm::Intrinsic::umax, {a, b});
  }
  llvm::Value* Min(DType t, llvm::Value* a, llvm::Value* b) {
    if (IsF(t)) return FloatMin(a, b);
    if (IsPredT(t)) return b_.CreateAnd(a, b);
    return ir::IsSignedInt(t) ? Intrinsic(llvm::Intrinsic::smin, {a, b}) : Intrinsic(llvm::Intrinsic::umin, {a, b});
  }

  // f64 -> f32 rounded to odd (truncated toward zero, the last bit set when
  // inexact; beyond FLT_MAX: FLT_MAX). f32 keeps 24 bits, more than
  // p + 2 for f16 (11) and bf16 (8), so rounding this once more to nearest
  // even gives the correctly rounded f16 / bf16 value: one rounding, as
  // jit/eval's EncodeFloat from double. NaN becomes the canonical quiet NaN
  // (jit/eval's NanBits). f32 subnormals keep >= 2 bits below f16's and
  // bf16's subnormal steps too.
  llvm::Value* DoubleToFloatRoundToOdd(llvm::Value* x) {
    llvm::Value* f = b_.CreateFPTrunc(x, b_.getFloatTy());
    llvm::Value* back = b_.CreateFPExt(f, b_.getDoubleTy());
    llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
    // Rounded away from zero (|f| > |x|, overflow to inf included): step
    // one ulp back toward zero (sign-magnitude: bits - 1).
    llvm::Value* away = b_.CreateFCmpOGT(Intrinsic(llvm::Intrinsic::fabs, {back}),
                                         Intrinsic(llvm::Intrinsic::fabs, {x}));
    bits = b_.CreateSelect(away, b_.CreateSub(bits, b_.getInt32(1)), bits);
    llvm::Value* inexact = b_.CreateFCmpUNE(back, x);
    bits = b_.CreateSelect(inexact, b_.CreateOr(bits, b_.getInt32(1)), bits);
    llvm::Value* r = b_.CreateBitCast(bits, b_.getFloatTy());
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), llvm::ConstantFP::getQNaN(b_.getFloatTy()), r);
  }

  // A 32- or 64-bit integer -> f32 rounded to odd (see above): the
  // magnitude's top 24 bits, the last one ORed with any dropped bit.
  llvm::Value* IntToFloatRoundToOdd(llvm::Value* x, bool is_signed) {
    llvm::Type* it = x->getType();
    llvm::Value* negative = is_signed ? b_.CreateICmpSLT(x, llvm::ConstantInt::get(it, 0)) : b_.getFalse();
    llvm::Value* mag = b_.CreateSelect(negative, b_.CreateNeg(x), x);  // INT_MIN: 2^(w-1) unsigned
    mag = b_.CreateZExt(mag, i64_);
    llvm::Value* lz = b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {i64_}, {mag, b_.getFalse()});
    // drop = max(64 - lz - 24, 0)
    llvm::Value* drop = Intrinsic(llvm::Intrinsic::smax, {b_.CreateSub(b_.getInt64(40), lz), b_.getInt64(0)});
    llvm::Value* kept = b_.CreateLShr(mag, drop);
    llvm::Value* mask = b_.CreateSub(b_.CreateShl(b_.getInt64(1), drop), b_.getInt64(1));
    llvm::Value* sticky = b_.CreateICmpNE(b_.CreateAnd(mag, mask), b_.getInt64(0));
    kept = b_.CreateOr(kept, b_.CreateZExt(sticky, i64_));
    // kept < 2^24 converts exactly; scaling by 2^drop (<= 2^40) is exact.
    llvm::Value* f = b_.CreateUIToFP(kept, b_.getFloatTy());
    llvm::Value* scale = b_.CreateBitCast(
        b_.CreateShl(b_.CreateTrunc(b_.CreateAdd(drop, b_.getInt64(127)), b_.getInt32Ty()), 23), b_.getFloatTy());
    f = b_.CreateFMul(f, scale);
    return b_.CreateSelect(negative, b_.CreateFNeg(f), f);
  }

  llvm::Value* Convert(llvm::Value* x, DType from, DType to) {
    if (from == to) return x;
    if (IsCplx(from) && IsCplx(to)) {
      // Each part rounded once (jit/eval: double -> float per part).
      return to == DType::kC128 ? b_.CreateFPExt(x, ComputeType(to)) : b_.CreateFPTrunc(x, ComputeType(to));
    }
    if (IsCplx(from)) {
      // Into a real type: the real part, as that part's own convert.
      return Convert(b_.CreateExtractElement(x, uint64_t{0}), ir::ComplexComponent(from), to);
    }
    if (IsCplx(to)) {
      // Into the component type, imaginary part 0.
      const DType c = ir::ComplexComponent(to);
      llvm::Value* re = Convert(x, from, c);
      llvm::Value* z = llvm::Constant::getNullValue(ComputeType(to));
      return b_.CreateInsertElement(z, re, uint64_t{0});
    }
    llvm::Type* tt = ComputeType(to);
    if (IsPredT(from)) {
      return IsF(to) ? b_.CreateUIToFP(x, tt) : b_.CreateZExt(x, tt);
    }
    if (IsInt(from)) {
      if (IsPredT(to)) return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
      // Integers f32 does not hold exactly into f16 / bf16: one rounding.
      if (IsHalf(to) && ir::BitWidth(from) > 24) return IntToFloatRoundToOdd(x, ir::IsSignedInt(from));
      if (IsF(to)) return ir::IsSignedInt(from) ? b_.CreateSIToFP(x, tt) : b_.CreateUIToFP(x, tt);
      return ir::IsSignedInt(from) ? b_.CreateSExtOrTrunc(x, tt) : b_.CreateZExtOrTrunc(x, tt);
    }
    // from a float
    if (IsPredT(to)) return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    if (IsHalf(to)) {
      // jit/eval rounds every conversion into f16 / bf16 once from the
      // double value and writes NaN as the canonical quiet NaN.
      if (from == DType::kF64) return DoubleToFloatRoundToOdd(x);
      return b_.CreateSelect(b_.CreateFCmpUNO(x, x), llvm::ConstantFP::getQNaN(b_.getFloatTy()), x);
    }
    if (IsF(to)) {
      if (x->getType() == tt) return x;  // f16/bf16 -> f32: exact
      return x->getType()->isFloatTy() ? b_.CreateFPExt(x, tt) : b_.CreateFPTrunc(x, tt);
    }
    return b_.CreateIntrinsic(ir::IsSignedInt(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat,
                              {tt, x->getType()}, {x});
  }

  llvm::Value* Compare(const Op& op, llvm::Value* a, llvm::Value* b) {
    const DType t = op.operand(0)->type().dtype();
    const ir::EnumAttr* dir_attr = op.GetEnum("comparison_direction");
    const std::string dir = dir_attr ? dir_attr->value : "";
    if (IsCplx(t)) {
      // jit/eval's CompareComplex: equality of both parts; order
      // lexicographic on (real, imag); compare_type does not matter.
      llvm::Value* ar = b_.CreateExtractElement(a, uint64_t{0});
      llvm::Value* ai = b_.CreateExtractElement(a, uint64_t{1});
      llvm::Value* br = b_.CreateExtractElement(b, uint64_t{0});
      llvm::Value* bi = b_.CreateExtractElement(b, uint64_t{1});
      llvm::Value* req = b_.CreateFCmpOEQ(ar, br);
      llvm::Value* eq = b_.CreateAnd(req, b_.CreateFCmpOEQ(ai, bi));
      llvm::Value* gt = b_.CreateSelect(req, b_.CreateFCmpOGT(ai, bi), b_.CreateFCmpOGT(ar, br));
      llvm::Value* lt = b_.CreateSelect(req, b_.CreateFCmpOLT(ai, bi), b_.CreateFCmpOLT(ar, br));
      if (dir == "EQ") return eq;
      if (dir == "NE") return b_.CreateNot(eq);
      if (dir == "GE") return b_.CreateOr(gt, eq);
      if (dir == "GT") return gt;
      if (dir == "LE") return b_.CreateOr(lt, eq);
      return lt;
    }
    std::string type = IsF(t) ? "FLOAT" : ir::IsSignedInt(t) ? "SIGNED" : "UNSIGNED";
    if (const ir::EnumAttr* ct = op.GetEnum("compare_type")) type = ct->value;
    using P = llvm::CmpInst::Predicate;
    if (IsF(t) && type == "TOTALORDER") {
      const unsigned width = ComputeType(t)->getPrimitiveSizeInBits().getFixedValue();
      llvm::Type* it = b_.getIntNTy(width);
      auto key = [&](llvm::Value* v) {
        llvm::Value* bits = b_.CreateBitCast(v, it);
        llvm::Value* sign_mask = llvm::ConstantInt::get(it, llvm::APInt::getSignedMinValue(width));
        llvm::Value* mag = b_.CreateAnd(bits, b_.CreateNot(sign_mask));
        llvm::Value* neg = b_.CreateICmpNE(b_.CreateAnd(bits, sign_mask), llvm::ConstantInt::get(it, 0));
        return b_.CreateSelect(neg, b_.CreateSub(b_.CreateNeg(mag), llvm::ConstantInt::get(it, 1)), mag);
      };
      a = key(a);
      b = key(b);
      type = "SIGNED";
    }
    P p;
    if (IsF(t) && type == "FLOAT") {
      if (dir == "EQ") p = P::FCMP_OEQ;
      else if (dir == "NE") p = P::FCMP_UNE;
      else if (dir == "GE") p = P::FCMP_OGE;
      else if (dir == "GT") p = P::FCMP_OGT;
      else if (dir == "LE") p = P::FCMP_OLE;
      else p = P::FCMP_OLT;
      return b_.CreateFCmp(p, a, b);
    }
    const bool s = type == "SIGNED";
    if (dir == "EQ") p = P::ICMP_EQ;
    else if (dir == "NE") p = P::ICMP_NE;
    else if (dir == "GE") p = s ? P::ICMP_SGE : P::ICMP_UGE;
    else if (dir == "GT") p = s ? P::ICMP_SGT : P::ICMP_UGT;
    else if (dir == "LE") p = s ? P::ICMP_SLE : P::ICMP_ULE;
    else p = s ? P::ICMP_SLT : P::ICMP_ULT;
    return b_.CreateICmp(p, a, b);
  }

  // One op on scalars, rounded to its result type (f16 / bf16 after every
  // op, as the interpreter rounds every op's result).
  llvm::Value* Scalar(const Op& op, const std::vector<llvm::Value*>& x) {
    return RoundTo(ScalarUnrounded(op, x), op.result(0)->type().dtype());
  }

  llvm::Value* ScalarUnrounded(const Op& op, const std::vector<llvm::Value*>& x) {
    const DType t = op.num_operands() > 0 ? op.operand(0)->type().dtype()
                                          : op.result(0)->type().dtype();
    const DType rt = op.result(0)->type().dtype();
    if (IsCplx(t) && IsCplx(rt)) {
      if (std::optional<int32_t> fn = ComplexUnaryFnOf(op.code())) {
        return EvalComplexCall(kComplexUnarySymbol, *fn, {x[0]}, t);
      }
      if (std::optional<int32_t> fn = ComplexBinaryFnOf(op.code())) {
        return EvalComplexCall(kComplexBinarySymbol, *fn, {x[0], x[1]}, t);
      }
    }
    if (IsF(t)) {
      if (std::optional<int32_t> fn = SpecialFnOf(op.code(), t)) return EvalSpecialCall(*fn, x[0], t);
    }
    const bool is_signed = ir::IsSignedInt(t);
    auto fconst = [&](double v) { return llvm::ConstantFP::get(x[0]->getType(), v); };
    auto iconst = [&](int64_t v) { return llvm::ConstantInt::get(x[0]->getType(), static_cast<uint64_t>(v), true); };
    switch (op.code()) {
      case OpCode::kAdd:
        if (IsF(t) || IsCplx(t)) return b_.CreateFAdd(x[0], x[1]);
        if (IsPredT(t)) return b_.CreateOr(x[0], x[1]);
        return b_.CreateAdd(x[0], x[1]);
      case OpCode::kSubtract:
        return IsF(t) || IsCplx(t) ? b_.CreateFSub(x[0], x[1]) : b_.CreateSub(x[0], x[1]);
      case OpCode::kMultiply:
        if (IsCplx(t)) return target_.ComplexMultiply(b_, module_, x[0], x[1], t);
        if (IsF(t)) return b_.CreateFMul(x[0], x[1]);
        if (IsPredT(t)) return b_.CreateAnd(x[0], x[1]);
        return b_.CreateMul(x[0], x[1]);
      case OpCode::kDivide: {
        if (IsCplx(t)) return target_.ComplexDivide(b_, module_, x[0], x[1], t);
        if (IsF(t)) return b_.CreateFDiv(x[0], x[1]);
        llvm::Value* zero = b_.CreateICmpEQ(x[1], iconst(0));
        llvm::Value* minus_one = is_signed ? b_.CreateICmpEQ(x[1], iconst(-1)) : b_.getFalse();
        llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), iconst(1), x[1]);
        llvm::Value* q = is_signed ? b_.CreateSDiv(x[0], safe) : b_.CreateUDiv(x[0], safe);
        q = b_.CreateSelect(minus_one, b_.CreateNeg(x[0]), q);
        return b_.CreateSelect(zero, iconst(-1), q);
      }
      case OpCode::kRemainder: {
        if (IsF(t)) return b_.CreateFRem(x[0], x[1]);
        llvm::Value* zero = b_.CreateICmpEQ(x[1], iconst(0));
        llvm::Value* minus_one = is_signed ? b_.CreateICmpEQ(x[1], iconst(-1)) : b_.getFalse();
        llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), iconst(1), x[1]);
        llvm::Value* r = is_signed ? b_.CreateSRem(x[0], safe) : b_.CreateURem(x[0], safe);
        r = b_.CreateSelect(minus_one, iconst(0), r);
        return b_.CreateSelect(zero, x[0], r);
      }
      case OpCode::kMaximum: return Max(t, x[0], x[1]);
      case OpCode::kMinimum: return Min(t, x[0], x[1]);
      case OpCode::kAnd: return b_.CreateAnd(x[0], x[1]);
      case OpCode::kOr: return b_.CreateOr(x[0], x[1]);
      case OpCode::kXor: return b_.CreateXor(x[0], x[1]);
      case OpCode::kNot: return b_.CreateNot(x[0]);
      case OpCode::kNegate: return IsF(t) || IsCplx(t) ? b_.CreateFNeg(x[0]) : b_.CreateNeg(x[0]);
      // real / imag: a complex operand's part; of a float, itself / +0.
      case OpCode::kReal:
        return IsCplx(t) ? b_.CreateExtractElement(x[0], uint64_t{0}) : x[0];
      case OpCode::kImag:
        return IsCplx(t) ? b_.CreateExtractElement(x[0], uint64_t{1}) : fconst(0);
      case OpCode::kComplex: {
        llvm::Value* z = llvm::UndefValue::get(ComputeType(rt));
        z = b_.CreateInsertElement(z, x[0], uint64_t{0});
        return b_.CreateInsertElement(z, x[1], uint64_t{1});
      }
      case OpCode::kAbs:
        if (IsCplx(t)) return target_.ComplexAbs(b_, module_, x[0], t);
        if (IsF(t)) return Intrinsic(llvm::Intrinsic::fabs, {x[0]});
        if (!is_signed) return x[0];
        return b_.CreateSelect(b_.CreateICmpSLT(x[0], iconst(0)), b_.CreateNeg(x[0]), x[0]);
      case OpCode::kSign:
        if (IsF(t)) {
          llvm::Value* keep = b_.CreateOr(b_.CreateFCmpUNO(x[0], x[0]), b_.CreateFCmpOEQ(x[0], fconst(0)));
          llvm::Value* one = b_.CreateIntrinsic(llvm::Intrinsic::copysign, {x[0]->getType()}, {fconst(1), x[0]});
          return b_.CreateSelect(keep, x[0], one);
        }
        if (is_signed) {
          return Intrinsic(llvm::Intrinsic::smin, {Intrinsic(llvm::Intrinsic::smax, {x[0], iconst(-1)}), iconst(1)});
        }
        return b_.CreateZExt(b_.CreateICmpNE(x[0], iconst(0)), x[0]->getType());
      case OpCode::kShiftLeft:
      case OpCode::kShiftRightLogical:
      case OpCode::kShiftRightArithmetic: {
        const int64_t width = ir::BitWidth(t);
        llvm::Value* in_range = b_.CreateICmpULT(x[1], iconst(width));
        llvm::Value* amount = b_.CreateSelect(in_range, x[1], iconst(0));
        if (op.code() == OpCode::kShiftLeft) {
          return b_.CreateSelect(in_range, b_.CreateShl(x[0], amount), iconst(0));
        }
        if (op.code() == OpCode::kShiftRightLogical) {
          return b_.CreateSelect(in_range, b_.CreateLShr(x[0], amount), iconst(0));
        }
        return b_.CreateSelect(in_range, b_.CreateAShr(x[0], amount), b_.CreateAShr(x[0], iconst(width - 1)));
      }
      case OpCode::kPopulationCount: return Intrinsic(llvm::Intrinsic::ctpop, {x[0]});
      case OpCode::kCountLeadingZeros:
        return b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {x[0]->getType()}, {x[0], b_.getFalse()});
      case OpCode::kSelect: return b_.CreateSelect(x[0], x[1], x[2]);
      case OpCode::kClamp: {
        const DType xt = op.operand(1)->type().dtype();
        return Min(xt, Max(xt, x[1], x[0]), x[2]);
      }
      case OpCode::kCompare: return Compare(op, x[0], x[1]);
      case OpCode::kConvert: return Convert(x[0], t, rt);
      case OpCode::kBitcastConvert:  // scalars (comparators, reduce bodies): equal widths
        return FromBits(ToBits(x[0], t, /*canonical_nan=*/true), rt);
      case OpCode::kReducePrecision:
        return FromBits(ReducePrecisionBits(op, ToBits(x[0], t, /*canonical_nan=*/false)), t);
      // Floats.
      case OpCode::kSqrt: return Intrinsic(llvm::Intrinsic::sqrt, {x[0]});
      case OpCode::kRsqrt: {
        if (t != DType::kF64) {
          llvm::Value* w = b_.CreateFPExt(x[0], b_.getDoubleTy());
          w = b_.CreateFDiv(llvm::ConstantFP::get(b_.getDoubleTy(), 1.0), Intrinsic(llvm::Intrinsic::sqrt, {w}));
          return b_.CreateFPTrunc(w, b_.getFloatTy());
        }
        return b_.CreateFDiv(fconst(1), Intrinsic(llvm::Intrinsic::sqrt, {x[0]}));
      }
      case OpCode::kFloor: return Intrinsic(llvm::Intrinsic::floor, {x[0]});
      case OpCode::kCeil: return Intrinsic(llvm::Intrinsic::ceil, {x[0]});
      case OpCode::kRoundNearestAfz: return Intrinsic(llvm::Intrinsic::round, {x[0]});
      case OpCode::kRoundNearestEven: return Intrinsic(llvm::Intrinsic::roundeven, {x[0]});
      case OpCode::kIsFinite:
        return b_.CreateFCmpOLT(Intrinsic(llvm::Intrinsic::fabs, {x[0]}), fconst(INFINITY));
      case OpCode::kChloIsInf:
        return b_.CreateFCmpOEQ(Intrinsic(llvm::Intrinsic::fabs, {x[0]}), fconst(INFINITY));
      case OpCode::kChloIsPosInf: return b_.CreateFCmpOEQ(x[0], fconst(INFINITY));
      case OpCode::kChloIsNegInf: return b_.CreateFCmpOEQ(x[0], fconst(-INFINITY));
      case OpCode::kChloSquare: return b_.CreateFMul(x[0], x[0]);
      case OpCode::kExponential: return LibmCallWide("exp", x[0]);
      case OpCode::kExponentialMinusOne: return LibmCallWide("expm1", x[0]);
      case OpCode::kLog: return LibmCallWide("log", x[0]);
      case OpCode::kLogPlusOne: return LibmCallWide("log1p", x[0]);
      case OpCode::kTanh:
        // libmvec's f32 tanh meets the corpus tolerance (checked by
        // jitd_conformance_cpu); f64 stays on scalar libm.
        if (!target_.HasAccurateF32Tanh()) return LibmCallWide("tanh", x[0]);
        return LibmCall("tanh", {x[0]}, /*precise=*/t == DType::kF64);
      case OpCode::kSine: return LibmCallWide("sin", x[0]);
      case OpCode::kCosine: return LibmCallWide("cos", x[0]);
      case OpCode::kTan:
      case OpCode::kChloTan: return LibmCallWide("tan", x[0]);
      case OpCode::kCbrt: return LibmCallWide("cbrt", x[0]);
      case OpCode::kChloAsin: return LibmCallWide("asin", x[0]);
      case OpCode::kChloAcos: return LibmCallWide("acos", x[0]);
      case OpCode::kChloAtan: return LibmCallWide("atan", x[0]);
      case OpCode::kChloAsinh: return LibmCallWide("asinh", x[0]);
      case OpCode::kChloAcosh: return LibmCallWide("acosh", x[0]);
      case OpCode::kChloAtanh: return LibmCallWide("atanh", x[0]);
      case OpCode::kChloErf: return LibmCallWide("erf", x[0]);
      case OpCode::kChloErfc: return LibmCallWide("erfc", x[0]);
      case OpCode::kLogistic: {
        // 1 / (1 + e^-x), in f64 for f32 operands.
        llvm::Value* w = t != DType::kF64 ? b_.CreateFPExt(x[0], b_.getDoubleTy()) : x[0];
        llvm::Value* one = llvm::ConstantFP::get(w->getType(), 1.0);
        llvm::Value* e = LibmCall("exp", {b_.CreateFNeg(w)}, /*precise=*/t == DType::kF64);
        llvm::Value* r = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
        return t != DType::kF64 ? b_.CreateFPTrunc(r, b_.getFloatTy()) : r;
      }
      case OpCode::kPower:
      case OpCode::kAtan2: {
        const std::string name = op.code() == OpCode::kPower ? "pow" : "atan2";
        if (t != DType::kF64) {
          llvm::Value* a = b_.CreateFPExt(x[0], b_.getDoubleTy());
          llvm::Value* c = b_.CreateFPExt(x[1], b_.getDoubleTy());
          return b_.CreateFPTrunc(LibmCall(name, {a, c}), b_.getFloatTy());
        }
        return LibmCall(name, {x[0], x[1]}, /*precise=*/true);
      }
      default:
        Fail("op '" + std::string(op.name()) + "' has no scalar emitter");
        return llvm::UndefValue::get(ComputeType(rt));
    }
  }

  // ---- Kernels -------------------------------------------------------------

  // True when every fused op reads its operands at the result's own linear
  // offset (elementwise ops, reshapes, scalar broadcasts): one flat loop.
  // Whether an elementwise kernel writing `type` streams its stores (see
  // kStreamStoreMinBytes): real element types only, one output.
  bool StreamsStores(const ir::Type& type) const {
    const DType t = type.dtype();
    return spec_.root->num_results() == 1 && !IsCplx(t) && t != DType::kPred &&
           type.num_elements() * ir::StorageBytes(t) >= kStreamStoreMinBytes;
  }

  bool IsLinear() const {
    for (const Op* op : spec_.fused) {
      switch (op->code()) {
        case OpCode::kIota:
        case OpCode::kTranspose:
        case OpCode::kSlice:
        case OpCode::kReverse:
        case OpCode::kConcatenate:
        case OpCode::kPad:
        case OpCode::kDynamicSlice:
        case OpCode::kDynamicUpdateSlice:
          return false;
        case OpCode::kBitcastConvert:
          if (op->operand(0)->type().rank() != op->result(0)->type().rank()) return false;
          break;
        case OpCode::kBroadcastInDim: {
          if (op->operand(0)->type().num_elements() == 1) break;
          if (op->operand(0)->type().dims() != op->result(0)->type().dims()) return false;
          const auto bdims = op->GetI64Array("broadcast_dimensions").value_or(std::vector<int64_t>{});
          for (size_t k = 0; k < bdims.size(); ++k) {
            if (bdims[k] != static_cast<int64_t>(k)) return false;
          }
          break;
        }
        default:
          break;
      }
    }
    return true;
  }

  // A fused transpose moves the result's last dimension away from the
  // operand's last one: the inner loop would stride through memory.
  bool TransposesLastDim() const {
    for (const Op* op : spec_.fused) {
      if (op->code() != OpCode::kTranspose) continue;
      const auto perm = op->GetI64Array("permutation").value_or(std::vector<int64_t>{});
      if (!perm.empty() && perm.back() != static_cast<int64_t>(perm.size()) - 1 &&
          op->result(0)->type().dims().back() > 1) {
        return true;
      }
    }
    return false;
  }

  int64_t BytesPerItem() const {
    int64_t bytes = 0;
    for (const ir::Value* v : spec_.inputs) {
      if (v->type().num_elements() > 1) bytes += ir::StorageBytes(v->type().dtype());
    }
    for (size_t i = 0; i < spec_.root->num_results(); ++i) {
      bytes += ir::StorageBytes(spec_.root->result(i)->type().dtype());
    }
    for (const ir::Value* v : spec_.extra_outputs) bytes += ir::StorageBytes(v->type().dtype());
    return bytes;
  }

  // Multi-output fusion: writes every extra output's element at `idx` (the
  // kernel's own iteration index, linear offset `offset`).
  void StoreExtraOutputs(Index* idx, llvm::Value* offset) {
    const size_t first = spec_.root->num_results();
    for (size_t j = 0; j < spec_.extra_outputs.size(); ++j) {
      const ir::Value* v = spec_.extra_outputs[j];
      Store(Value(v, idx), v->type().dtype(), outputs_[first + j], offset);
    }
  }

  Status EmitElementwise(llvm::Value* begin, llvm::Value* end, KernelInfo& info) {
    const Op& root = *spec_.root;
    const ir::Type& type = root.result(0)->type();
    const DType t = type.dtype();
    const std::vector<int64_t>& dims = type.dims();
    info.bytes_per_item = BytesPerItem();
    if (IsLinear() || dims.size() <= 1) {
      info.work_items = type.num_elements();
      auto emit_range = [&](llvm::Value* lo, llvm::Value* hi) {
        EmitLoop(lo, hi, {}, [&](llvm::Value* i, const std::vector<llvm::Value*>&) {
          ResetIndices();
          Index* idx = NewIndex(dims);
          idx->linear = i;
          if (dims.size() == 1) idx->multi = {i};
          Store(Value(root.result(0), idx), t, outputs_[0], i);
          StoreExtraOutputs(idx, i);  // ordinary stores (only outputs_[0] streams)
          return std::vector<llvm::Value*>{};
        });
      };
      if (!StreamsStores(type)) {
        emit_range(begin, end);
        return Status::Ok();
      }
      // Head [begin, aligned) up to the first 64-byte-aligned output
      // element (buffers are element-aligned, as every load here assumes),
      // then the aligned rest.
      const int64_t elem = ir::StorageBytes(t);
      llvm::Value* first = b_.CreatePtrToInt(b_.CreateInBoundsGEP(StorageType(t), outputs_[0], begin), i64_);
      llvm::Value* pad = b_.CreateUDiv(b_.CreateAnd(b_.CreateNeg(first), b_.getInt64(63)), b_.getInt64(elem));
      llvm::Value* head_end = b_.CreateAdd(begin, pad, "", true, true);
      llvm::Value* aligned = b_.CreateSelect(b_.CreateICmpSLT(head_end, end), head_end, end);
      emit_range(begin, aligned);
      llvm::BasicBlock* rest = llvm::BasicBlock::Create(ctx_, "aligned", function_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "done", function_);
      b_.CreateCondBr(b_.CreateICmpSLT(aligned, end), rest, done);
      b_.SetInsertPoint(rest);
      b_.CreateAlignmentAssumption(module_.getDataLayout(),
                                   b_.CreateInBoundsGEP(StorageType(t), outputs_[0], aligned), 64);
      emit_range(aligned, end);
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      if (llvm::Triple(module_.getTargetTriple()).isX86()) {
        b_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::x86_sse_sfence));
      }
      stream_stores_ = true;
      return Status::Ok();
    }
    // Rows: the outer dimensions per work item, the last one in an inner loop.
    const int64_t inner = dims.back();
    std::vector<int64_t> outer_dims(dims.begin(), dims.end() - 1);
    int64_t rows = 1;
    for (int64_t d : outer_dims) rows *= d;
    info.bytes_per_item *= inner;
    // One row of the result at index (row, j) for j in [j0, j1).
    auto emit_row = [&](llvm::Value* row, llvm::Value* j0, llvm::Value* j1) {
      ResetIndices();
      Index* outer = NewIndex(outer_dims);
      outer->linear = row;
      std::vector<llvm::Value*> outer_multi = Multi(*outer);
      llvm::Value* row_base = b_.CreateMul(row, b_.getInt64(inner), "", true, true);
      EmitLoop(j0, j1, {}, [&](llvm::Value* j, const std::vector<llvm::Value*>&) {
        ResetIndices();
        Index* idx = NewIndex(dims);
        idx->multi = outer_multi;
        idx->multi.push_back(j);
        idx->linear = b_.CreateAdd(row_base, j, "", true, true);
        Store(Value(root.result(0), idx), t, outputs_[0], idx->linear);
        StoreExtraOutputs(idx, idx->linear);
        return std::vector<llvm::Value*>{};
      });
    };
    if (TransposesLastDim()) {
      // Tiles of kTile x kTile: reading along the result's rows walks a
      // column of the operand; within a tile those lines stay in cache.
      constexpr int64_t kTile = 16;
      const int64_t blocks = (rows + kTile - 1) / kTile;
      const int64_t col_blocks = (inner + kTile - 1) / kTile;
      info.work_items = blocks;
      info.bytes_per_item *= kTile;
      auto min = [&](llvm::Value* a, int64_t b) {
        return b_.CreateSelect(b_.CreateICmpSLT(a, b_.getInt64(b)), a, b_.getInt64(b));
      };
      EmitLoop(begin, end, {}, [&](llvm::Value* block, const std::vector<llvm::Value*>&) {
        llvm::Value* r0 = b_.CreateMul(block, b_.getInt64(kTile));
        llvm::Value* r1 = min(b_.CreateAdd(r0, b_.getInt64(kTile)), rows);
        EmitLoop(b_.getInt64(0), b_.getInt64(col_blocks), {},
                 [&](llvm::Value* jb, const std::vector<llvm::Value*>&) {
                   llvm::Value* j0 = b_.CreateMul(jb, b_.getInt64(kTile));
                   llvm::Value* j1 = min(b_.CreateAdd(j0, b_.getInt64(kTile)), inner);
                   EmitLoop(r0, r1, {}, [&](llvm::Value* row, const std::vector<llvm::Value*>&) {
                     emit_row(row, j0, j1);
                     return std::vector<llvm::Value*>{};
                   });
                   return std::vector<llvm::Value*>{};
                 });
        return std::vector<llvm::Value*>{};
      });
      return Status::Ok();
    }
    info.work_items = rows;
    EmitLoop(begin, end, {}, [&](llvm::Value* row, const std::vector<llvm::Value*>&) {
      ResetIndices();
      Index* outer = NewIndex(outer_dims);
      outer->linear = row;
      std::vector<llvm::Value*> outer_multi = Multi(*outer);
      llvm::Value* row_base = b_.CreateMul(row, b_.getInt64(inner), "", true, true);
      EmitLoop(b_.getInt64(0), b_.getInt64(inner), {}, [&](llvm::Value* j, const std::vector<llvm::Value*>&) {
        ResetIndices();
        Index* idx = NewIndex(dims);
        idx->multi = outer_multi;
        idx->multi.push_back(j);
        idx->linear = b_.CreateAdd(row_base, j, "", true, true);
        Store(Value(root.result(0), idx), t, outputs_[0], idx->linear);
        StoreExtraOutputs(idx, idx->linear);
        return std::vector<llvm::Value*>{};
      });
      return std::vector<llvm::Value*>{};
    });
    return Status::Ok();
  }

  // ReduceBody, with reassociation allowed for its float ops when
  // `reassociate` (vectorized partial sums; see kReassociateMinExtent).
  std::vector<llvm::Value*> ReduceStep(const ir::Block& block, const std::vector<llvm::Value*>& acc,
                                       const std::vector<llvm::Value*>& x, bool reassociate) {
    const llvm::FastMathFlags saved = b_.getFastMathFlags();
    if (reassociate) {
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      b_.setFastMathFlags(fmf);
    }
    std::vector<llvm::Value*> next = ReduceBody(block, acc, x);
    b_.setFastMathFlags(saved);
    return next;
  }

  // Runs the reduce body on scalars: block args = accumulators then inputs.
  std::vector<llvm::Value*> ReduceBody(const ir::Block& block, const std::vector<llvm::Value*>& acc,
                                       const std::vector<llvm::Value*>& x) {
    for (size_t i = 0; i < acc.size(); ++i) scalars_[block.arg(i)] = acc[i];
    for (size_t i = 0; i < x.size(); ++i) scalars_[block.arg(acc.size() + i)] = x[i];
    for (const auto& op : block.ops()) {
      if (op->code() == OpCode::kReturn) {
        std::vector<llvm::Value*> out;
        for (const ir::Value* v : op->operands()) out.push_back(scalars_.at(v));
        return out;
      }
      std::vector<llvm::Value*> operands;
      for (const ir::Value* v : op->operands()) operands.push_back(scalars_.at(v));
      scalars_[op->result(0)] = op->code() == OpCode::kConstant ? SplatConstant(*op) : Scalar(*op, operands);
    }
    Fail("reduce body has no return");
    return acc;
  }

  Status EmitReduce(llvm::Value* begin, llvm::Value* end, KernelInfo& info) {
    const Op& root = *spec_.root;
    const size_t n = root.num_results();
    const ir::Type& in_type = root.operand(0)->type();
    const std::vector<int64_t>& in_dims = in_type.dims();
    const std::vector<int64_t> red = root.GetI64Array("dimensions").value_or(std::vector<int64_t>{});
    std::vector<bool> is_reduced(in_dims.size(), false);
    for (int64_t d : red) is_reduced[static_cast<size_t>(d)] = true;
    std::vector<int64_t> reduced_dims;  // ascending
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (is_reduced[d]) reduced_dims.push_back(static_cast<int64_t>(d));
    }
    const ir::Type& out_type = root.result(0)->type();
    info.work_items = out_type.num_elements();
    int64_t extent = 1;
    for (int64_t d : reduced_dims) extent *= in_dims[static_cast<size_t>(d)];
    info.bytes_per_item = BytesPerItem() * extent;
    const ir::Block& body = root.region(0).block(0);

    // Reassociate long float sums and products (vectorized partial sums).
    bool reassociate = false;
    if (extent >= kReassociateMinExtent && n == 1 && IsF(out_type.dtype()) &&
        !IsHalf(out_type.dtype()) && body.ops().size() == 2 &&
        (body.ops()[0]->code() == OpCode::kAdd || body.ops()[0]->code() == OpCode::kMultiply)) {
      reassociate = true;
      info.reassociates = true;
    }

    EmitLoop(begin, end, {}, [&](llvm::Value* o, const std::vector<llvm::Value*>&) {
      ResetIndices();
      Index* out_idx = NewIndex(out_type.dims());
      out_idx->linear = o;
      std::vector<llvm::Value*> out_multi = Multi(*out_idx);
      std::vector<llvm::Value*> acc;
      for (size_t k = 0; k < n; ++k) acc.push_back(Value(root.operand(n + k), ScalarIndex()));
      std::vector<llvm::Value*> in_multi(in_dims.size(), nullptr);
      {
        size_t kept = 0;
        for (size_t d = 0; d < in_dims.size(); ++d) {
          if (!is_reduced[d]) in_multi[d] = out_multi[kept++];
        }
      }
      std::function<std::vector<llvm::Value*>(size_t, const std::vector<llvm::Value*>&)> nest =
          [&](size_t level, const std::vector<llvm::Value*>& carried) -> std::vector<llvm::Value*> {
        const size_t d = static_cast<size_t>(reduced_dims[level]);
        return EmitLoop(b_.getInt64(0), b_.getInt64(in_dims[d]), carried,
                        [&](llvm::Value* i, const std::vector<llvm::Value*>& c) {
                          in_multi[d] = i;
                          if (level + 1 < reduced_dims.size()) return nest(level + 1, c);
                          ClearValues();
                          Index* idx = NewIndex(in_dims);
                          idx->multi = in_multi;
                          std::vector<llvm::Value*> x;
                          for (size_t k = 0; k < n; ++k) x.push_back(Value(root.operand(k), idx));
                          if (!spec_.extra_outputs.empty()) StoreExtraOutputs(idx, Linear(*idx));
                          return ReduceStep(body, c, x, reassociate);
                        });
      };
      if (!reduced_dims.empty()) acc = nest(0, acc);
      for (size_t k = 0; k < n; ++k) Store(acc[k], root.result(k)->type().dtype(), outputs_[k], o);
      return std::vector<llvm::Value*>{};
    });
    return Status::Ok();
  }

  // ---- Split reductions (kernel_emitter.h: kSplitChunkElements) -----------

  struct Split {
    eval::FoldOp fold;
    std::vector<int64_t> reduced_dims;  // ascending
    size_t level = 0;     // reduced_dims[level] is cut into blocks
    int64_t block = 1;    // its elements per chunk
    int64_t blocks = 1;   // ceil(its size / block)
    int64_t inner = 1;    // elements of the reduced dimensions after it
    int64_t chunks = 1;   // per output: (reduced dims before it) * blocks
    int64_t outputs = 1;
  };

  // A chunk is one index of the reduced dimensions before `level`, a block
  // of `level`, and all of the reduced dimensions after it: the innermost
  // `level` whose suffix of reduced dimensions holds kSplitChunkElements.
  // Depends on the shape only.
  std::optional<Split> PlanSplit() const {
    const Op& root = *spec_.root;
    if (root.num_results() != 1) return std::nullopt;
    const DType t = root.result(0)->type().dtype();
    const std::optional<eval::FoldOp> fold = eval::RecognizeFold(root, 0, t);
    if (!fold) return std::nullopt;
    const bool sum_or_product = *fold == eval::FoldOp::kAdd || *fold == eval::FoldOp::kMultiply;
    if (IsHalf(t) && sum_or_product) return std::nullopt;  // rounded per step: not reassociated
    if (IsCplx(t)) return std::nullopt;  // no complex identities / partials
    Split s;
    s.fold = *fold;
    s.outputs = root.result(0)->type().num_elements();
    if (s.outputs < 1 || s.outputs > kSplitMaxOutputs) return std::nullopt;
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    std::vector<int64_t> red = root.GetI64Array("dimensions").value_or(std::vector<int64_t>{});
    std::sort(red.begin(), red.end());
    if (red.empty()) return std::nullopt;
    int64_t extent = 1;
    for (int64_t d : red) extent *= in_dims[static_cast<size_t>(d)];
    if (extent < 2 * kSplitChunkElements) return std::nullopt;
    s.reduced_dims = red;
    auto size = [&](size_t level) { return in_dims[static_cast<size_t>(red[level])]; };
    s.level = red.size() - 1;
    while (s.level > 0 && s.inner * size(s.level) < kSplitChunkElements) {
      s.inner *= size(s.level);
      --s.level;
    }
    s.block = std::min(size(s.level), (kSplitChunkElements + s.inner - 1) / s.inner);
    s.blocks = (size(s.level) + s.block - 1) / s.block;
    s.chunks = s.blocks;
    for (size_t l = 0; l < s.level; ++l) s.chunks *= size(l);
    if (s.chunks < 2) return std::nullopt;
    return s;
  }

  // The fold's identity in `t`'s compute type: chunks start from it.
  llvm::Value* FoldIdentity(eval::FoldOp fold, DType t) {
    llvm::Type* ty = ComputeType(t);
    if (IsF(t)) {
      switch (fold) {
        case eval::FoldOp::kAdd: return llvm::ConstantFP::getNegativeZero(ty);  // -0 + x == x
        case eval::FoldOp::kMultiply: return llvm::ConstantFP::get(ty, 1.0);
        case eval::FoldOp::kMaximum: return llvm::ConstantFP::getInfinity(ty, /*Negative=*/true);
        default: return llvm::ConstantFP::getInfinity(ty, /*Negative=*/false);  // minimum
      }
    }
    const unsigned w = ty->getIntegerBitWidth();
    const bool is_signed = ir::IsSignedInt(t);
    switch (fold) {
      case eval::FoldOp::kMultiply: return llvm::ConstantInt::get(ty, 1);  // i1: and
      case eval::FoldOp::kAnd: return llvm::ConstantInt::get(ty, llvm::APInt::getAllOnes(w));
      case eval::FoldOp::kMaximum:
        return llvm::ConstantInt::get(ty, is_signed ? llvm::APInt::getSignedMinValue(w) : llvm::APInt::getMinValue(w));
      case eval::FoldOp::kMinimum:
        return llvm::ConstantInt::get(ty, is_signed ? llvm::APInt::getSignedMaxValue(w) : llvm::APInt::getMaxValue(w));
      default: return llvm::ConstantInt::get(ty, 0);  // add (i1: or), or, xor
    }
  }

  // Phase 1: work item c * outputs + o folds chunk c of output o.
  Status EmitReducePartials(const Split& s, llvm::Value* begin, llvm::Value* end, KernelInfo& info) {
    const Op& root = *spec_.root;
    const DType t = root.result(0)->type().dtype();
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    const ir::Type& out_type = root.result(0)->type();
    std::vector<bool> is_reduced(in_dims.size(), false);
    for (int64_t d : s.reduced_dims) is_reduced[static_cast<size_t>(d)] = true;
    const ir::Block& body = root.region(0).block(0);
    info.work_items = s.outputs * s.chunks;
    info.bytes_per_item = BytesPerItem() * s.block * s.inner;
    info.split_chunks = s.chunks;
    info.combine_items = s.outputs;
    info.partial_bytes = s.outputs * s.chunks * ir::StorageBytes(t);
    const bool reassociate = IsF(t) && (s.fold == eval::FoldOp::kAdd || s.fold == eval::FoldOp::kMultiply);
    info.reassociates = reassociate;
    auto dim_size = [&](size_t level) { return in_dims[static_cast<size_t>(s.reduced_dims[level])]; };

    EmitLoop(begin, end, {}, [&](llvm::Value* item, const std::vector<llvm::Value*>&) {
      ResetIndices();
      llvm::Value* o = b_.CreateURem(item, b_.getInt64(s.outputs));
      llvm::Value* c = b_.CreateUDiv(item, b_.getInt64(s.outputs));
      llvm::Value* blk = b_.CreateURem(c, b_.getInt64(s.blocks));
      llvm::Value* outer = b_.CreateUDiv(c, b_.getInt64(s.blocks));
      Index* out_idx = NewIndex(out_type.dims());
      out_idx->linear = o;
      std::vector<llvm::Value*> out_multi = Multi(*out_idx);
      std::vector<llvm::Value*> in_multi(in_dims.size(), nullptr);
      size_t kept = 0;
      for (size_t d = 0; d < in_dims.size(); ++d) {
        if (!is_reduced[d]) in_multi[d] = out_multi[kept++];
      }
      // Reduced dimensions before `level`: row-major digits of `outer`.
      for (size_t l = s.level; l-- > 0;) {
        const size_t d = static_cast<size_t>(s.reduced_dims[l]);
        in_multi[d] = l == 0 ? outer : b_.CreateURem(outer, b_.getInt64(in_dims[d]));
        if (l > 0) outer = b_.CreateUDiv(outer, b_.getInt64(in_dims[d]));
      }
      llvm::Value* lo = b_.CreateMul(blk, b_.getInt64(s.block));
      llvm::Value* hi = b_.CreateAdd(lo, b_.getInt64(s.block));
      hi = b_.CreateSelect(b_.CreateICmpSLT(hi, b_.getInt64(dim_size(s.level))), hi,
                           b_.getInt64(dim_size(s.level)));
      std::function<std::vector<llvm::Value*>(size_t, const std::vector<llvm::Value*>&)> nest =
          [&](size_t level, const std::vector<llvm::Value*>& carried) -> std::vector<llvm::Value*> {
        const size_t d = static_cast<size_t>(s.reduced_dims[level]);
        llvm::Value* from = level == s.level ? lo : b_.getInt64(0);
        llvm::Value* to = level == s.level ? hi : b_.getInt64(in_dims[d]);
        return EmitLoop(from, to, carried, [&](llvm::Value* i, const std::vector<llvm::Value*>& acc) {
          in_multi[d] = i;
          if (level + 1 < s.reduced_dims.size()) return nest(level + 1, acc);
          ClearValues();
          Index* idx = NewIndex(in_dims);
          idx->multi = in_multi;
          std::vector<llvm::Value*> x = {Value(root.operand(0), idx)};
          if (!spec_.extra_outputs.empty()) StoreExtraOutputs(idx, Linear(*idx));
          return ReduceStep(body, acc, x, reassociate);
        });
      };
      std::vector<llvm::Value*> acc = nest(s.level, {FoldIdentity(s.fold, t)});
      Store(acc[0], t, partial_, item);
      return std::vector<llvm::Value*>{};
    });
    return Status::Ok();
  }

  // Phase 2: out[o] = init folded with the partials in ascending chunk order.
  Status EmitReduceCombine(const Split& s, llvm::Value* begin, llvm::Value* end) {
    const Op& root = *spec_.root;
    const DType t = root.result(0)->type().dtype();
    const ir::Block& body = root.region(0).block(0);
    EmitLoop(begin, end, {}, [&](llvm::Value* o, const std::vector<llvm::Value*>&) {
      ResetIndices();
      std::vector<llvm::Value*> init = {Value(root.operand(1), ScalarIndex())};
      std::vector<llvm::Value*> acc =
          EmitLoop(b_.getInt64(0), b_.getInt64(s.chunks), init, [&](llvm::Value* c, const std::vector<llvm::Value*>& a) {
            llvm::Value* item = b_.CreateAdd(b_.CreateMul(c, b_.getInt64(s.outputs)), o);
            return ReduceBody(body, a, {LoadElement(partial_, t, item)});
          });
      Store(acc[0], t, outputs_[0], o);
      return std::vector<llvm::Value*>{};
    });
    return Status::Ok();
  }

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const KernelSpec& spec_;
  const TargetMath& target_;
  llvm::Type* i64_;
  llvm::Function* function_ = nullptr;
  std::unordered_set<const Op*> fused_;
  std::unordered_map<const ir::Value*, llvm::Value*> params_;
  std::unordered_map<const ir::Value*, llvm::Value*> scalars_;
  std::unordered_map<const ir::Value*, llvm::Value*> preloaded_;  // 0-d inputs
  std::vector<llvm::Value*> outputs_;
  llvm::Value* partial_ = nullptr;  // a split reduction's partials
  bool stream_stores_ = false;      // the body ends its stores with an sfence
  std::deque<Index> indices_;
  Index* scalar_ = nullptr;  // ScalarIndex, in indices_
  std::map<std::pair<const ir::Value*, const Index*>, llvm::Value*> cache_;
  // OperandIndex: (op, operand, index of op) -> index of the operand.
  std::map<std::tuple<const Op*, size_t, const Index*>, Index*> derived_;
  // Set while HalfBits walks index maps: f16 / bf16 values are produced as
  // their i16 storage bits (never cached), see HalfBits.
  bool raw_half_ = false;
  int64_t computations_ = 0;  // CountComputation
  Status status_ = Status::Ok();
};

}  // namespace

namespace {

// Appends op name, operand ids, result types, attributes and regions to
// `key`, numbering results as they appear.
void DescribeOp(const Op& op, std::unordered_map<const ir::Value*, int>& ids, std::string& key) {
  key += op.name();
  key += '(';
  for (const ir::Value* v : op.operands()) {
    auto it = ids.find(v);
    key += it == ids.end() ? std::string("?") : std::to_string(it->second);
    key += ',';
  }
  key += ")->";
  for (size_t i = 0; i < op.num_results(); ++i) {
    key += op.result(i)->type().ToString();
    key += ',';
    ids[op.result(i)] = static_cast<int>(ids.size());
  }
  op.attrs().AppendDictTo(key);
  for (size_t r = 0; r < op.num_regions(); ++r) {
    key += "{";
    for (size_t b = 0; b < op.region(r).num_blocks(); ++b) {
      const ir::Block& block = op.region(r).block(b);
      key += "^(";
      for (size_t i = 0; i < block.num_args(); ++i) {
        key += block.arg(i)->type().ToString();
        key += ',';
        ids[block.arg(i)] = static_cast<int>(ids.size());
      }
      key += ")";
      for (const auto& inner : block.ops()) {
        DescribeOp(*inner, ids, key);
        key += ';';
      }
    }
    key += "}";
  }
}

}  // namespace

std::string KernelKey(const KernelSpec& spec) {
  std::unordered_map<const ir::Value*, int> ids;
  std::string key;
  for (const ir::Value* v : spec.inputs) {
    key += "in:" + v->type().ToString() + ";";
    ids[v] = static_cast<int>(ids.size());
  }
  // Producers before consumers: the reverse of the planner's discovery
  // order (root first, then producers by descending block position).
  std::vector<const Op*> ops(spec.fused.rbegin(), spec.fused.rend());
  for (const Op* op : ops) {
    if (op == spec.root) continue;
    DescribeOp(*op, ids, key);
    key += ';';
  }
  key += "root:";
  DescribeOp(*spec.root, ids, key);
  for (const ir::Value* v : spec.extra_outputs) {
    auto it = ids.find(v);
    key += ";out:" + (it == ids.end() ? std::string("?") : std::to_string(it->second));
  }
  return key;
}

size_t KernelOps(const KernelSpec& spec) {
  size_t n = 0;
  for (const Op* op : spec.fused) n += op->code() != OpCode::kConstant;
  return n;
}

std::unique_ptr<ElementalEmitter> CreateElementalEmitter(llvm::Module& module, const KernelSpec& spec,
                                                         const TargetMath& target) {
  return std::make_unique<Emitter>(module, spec, target);
}

StatusOr<KernelInfo> EmitKernel(llvm::Module& module, const KernelSpec& spec) {
  if (const size_t n = KernelOps(spec); n > kMaxKernelOps) {
    return InvalidArgument(spec.root->loc().ToString() + ": '" + std::string(spec.root->name()) +
                           "' op roots a kernel of " + std::to_string(n) +
                           " ops, above the limit of " + std::to_string(kMaxKernelOps) +
                           " ops per kernel");
  }
  Emitter emitter(module, spec, HostTargetMath());
  StatusOr<KernelInfo> info = emitter.Emit();
  if (!info.ok()) {
    // Nothing of a failed kernel stays in the module (a caller may go on).
    for (const std::string& name : {spec.name, CombineSymbol(spec.name)}) {
      for (const std::string& symbol : {name, name + ".body"}) {
        if (llvm::Function* f = module.getFunction(symbol)) f->eraseFromParent();
      }
    }
  }
  return info;
}

namespace {

// The values a comparator / window-body region may read: its block
// arguments, the results of its ops already accepted, and splat constants
// from outside.
class RegionValues {
 public:
  void Define(const ir::Value* v) { defined_.insert(v); }
  bool Known(const ir::Value* v) const {
    if (defined_.count(v)) return true;
    const Op* def = v->defining_op();  // a splat constant outside the region
    return def && def->code() == OpCode::kConstant && IsFusibleOp(*def) && v->type().rank() == 0;
  }
  // `op` is scalar math the region emitters compile (fusible, one rank-0
  // result, no index map: those are trivial on scalars but need an index)
  // on known values; its result becomes known.
  bool AcceptScalarMath(const Op& op) {
    if (!IsFusibleOp(op) || op.num_results() != 1 || op.result(0)->type().rank() != 0) return false;
    switch (op.code()) {
      case OpCode::kIota:
      case OpCode::kBroadcastInDim:
      case OpCode::kReshape:
      case OpCode::kTranspose:
      case OpCode::kSlice:
      case OpCode::kReverse:
      case OpCode::kConcatenate:
      case OpCode::kPad:
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice:
      case OpCode::kBitcastConvert:
        return false;
      default:
        break;
    }
    for (const ir::Value* v : op.operands()) {
      if (!Known(v)) return false;
    }
    Define(op.result(0));
    return true;
  }

 private:
  std::unordered_set<const ir::Value*> defined_;
};

}  // namespace

bool IsEmittableComparator(const Op& sort) {
  if (sort.code() != OpCode::kSort || sort.num_regions() != 1 || sort.num_operands() == 0) return false;
  const ir::Region& region = sort.region(0);
  if (region.num_blocks() != 1) return false;
  const ir::Block& block = region.block(0);
  if (block.num_args() != 2 * sort.num_operands()) return false;
  RegionValues values;
  for (size_t i = 0; i < block.num_args(); ++i) {
    const ir::Type& t = block.arg(i)->type();
    const ir::Type& operand = sort.operand(i / 2)->type();
    if (!t.is_tensor() || t.rank() != 0 || !operand.is_tensor() || t.dtype() != operand.dtype() ||
        !IsSupportedDType(t.dtype())) {
      return false;
    }
    values.Define(block.arg(i));
  }
  for (const auto& op : block.ops()) {
    if (op->code() == OpCode::kReturn) {
      return op.get() == block.ops().back().get() && op->num_operands() == 1 && values.Known(op->operand(0)) &&
             op->operand(0)->type().is_tensor() && op->operand(0)->type().rank() == 0 &&
             op->operand(0)->type().dtype() == DType::kPred;
    }
    if (!values.AcceptScalarMath(*op)) return false;
  }
  return false;
}

bool IsEmittableReduceWindowBody(const Op& op) {
  if (op.code() != OpCode::kReduceWindow || op.num_regions() != 1) return false;
  const size_t n = op.num_results();
  if (n == 0 || op.num_operands() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& r = op.result(i)->type();
    const ir::Type& in = op.operand(i)->type();
    const ir::Type& init = op.operand(n + i)->type();
    if (!r.is_tensor() || !in.is_tensor() || !init.is_tensor() || !IsSupportedDType(r.dtype()) ||
        in.dtype() != r.dtype() || init.dtype() != r.dtype() || init.rank() != 0) {
      return false;
    }
  }
  const ir::Region& region = op.region(0);
  if (region.num_blocks() != 1) return false;
  const ir::Block& block = region.block(0);
  if (block.num_args() != 2 * n) return false;
  RegionValues values;
  for (size_t i = 0; i < block.num_args(); ++i) {
    const ir::Type& t = block.arg(i)->type();
    if (!t.is_tensor() || t.rank() != 0 || t.dtype() != op.result(i % n)->type().dtype()) return false;
    values.Define(block.arg(i));
  }
  for (const auto& body_op : block.ops()) {
    if (body_op->code() == OpCode::kReturn) {
      if (body_op.get() != block.ops().back().get() || body_op->num_operands() != n) return false;
      for (size_t i = 0; i < n; ++i) {
        const ir::Value* v = body_op->operand(i);
        if (!values.Known(v) || !v->type().is_tensor() || v->type().rank() != 0 ||
            v->type().dtype() != op.result(i)->type().dtype()) {
          return false;
        }
      }
      return true;
    }
    if (!values.AcceptScalarMath(*body_op)) return false;
  }
  return false;
}

namespace {

// `name` for the region of `op` through `emit` (an Emitter member), or
// UNIMPLEMENTED naming `what` when `emittable` is false; a function that
// fails half-way is removed again.
Status EmitRegionFunction(llvm::Module& module, const Op& op, const std::string& name, bool emittable,
                          const char* what, Status (Emitter::*emit)()) {
  if (!emittable) {
    return Unimplemented(op.loc().ToString() + ": '" + std::string(op.name()) + "' op " + what +
                         " cannot be compiled");
  }
  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  Emitter emitter(module, spec, HostTargetMath());
  Status status = (emitter.*emit)();
  if (!status.ok()) {
    if (llvm::Function* fn = module.getFunction(name)) fn->eraseFromParent();  // no half-built code
  }
  return status;
}

}  // namespace

Status EmitReduceWindowBody(llvm::Module& module, const Op& op, const std::string& name) {
  return EmitRegionFunction(module, op, name, IsEmittableReduceWindowBody(op), "body",
                            &Emitter::EmitWindowBodyFunction);
}

Status EmitComparator(llvm::Module& module, const Op& sort, const std::string& name) {
  return EmitRegionFunction(module, sort, name, IsEmittableComparator(sort), "comparator",
                            &Emitter::EmitComparatorFunction);
}

}  // namespace jitd::codegen
