// The scalar ops of the elemental emitter: one table entry per op says
// which element types it takes (on which target) and emits its value, so
// what the emitter claims (ScalarEmitter::Supports, hence IsFusibleOp) and
// what it computes cannot drift apart. The semantics are jit/eval's
// (elementwise.cc): see elemental_emitter.h.
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "jit/codegen/internal/element_types.h"
#include "jit/codegen/kernel_runtime.h"
#include "jit/codegen/scalar_emitter.h"
#include "jit/eval/scalar_math.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"

namespace jitd::codegen {

using internal::IsCplx;
using internal::IsF;
using internal::IsInt;
using internal::IsNarrowFloat;
using internal::IsPredT;
using internal::IsSubByteInt;
using ir::DType;
using ir::Op;
using ir::OpCode;

namespace {

// Classes of a real element type: the rule's `real` mask holds those of
// the types the op takes as its first operand (its result, without one).
enum TypeClass : uint8_t { kFloat = 1, kInteger = 2, kPredicate = 4 };
constexpr uint8_t kAnyReal = kFloat | kInteger | kPredicate;
constexpr uint8_t kNumber = kFloat | kInteger;
constexpr uint8_t kBits = kInteger | kPredicate;

uint8_t ClassOf(DType t) {
  if (IsF(t)) return kFloat;
  if (IsInt(t)) return kInteger;
  return IsPredT(t) ? kPredicate : 0;
}

// How an op treats complex values (any operand or result complex).
enum class Complex : uint8_t {
  kNo,        // not computed
  kExact,     // in the component type: what jit/eval computes exactly
  kExtended,  // in x87 long double, as jit/eval's (TargetMath::HasExtendedComplex)
  kCall,      // complex in, complex out: jit/eval's function `call`, or the target's code for it
  kChecked,   // when the rule's `check` holds (bitcast_convert)
};

struct Operands {
  DType t;   // the first operand's element type
  DType rt;  // the result's
  const std::vector<llvm::Value*>& x;
};

using EmitFn = llvm::Value* (*)(ScalarEmitter& s, const Op& op, const Operands& in);
using CheckFn = bool (*)(const Op& op, DType t);

struct ScalarRule {
  OpCode code;
  uint8_t real;  // TypeClass mask; 0: no real form
  Complex complex;
  // The value, for every form but kCall's complex one and the special
  // functions (`special`), which the rule's fields say.
  EmitFn emit;
  CheckFn check = nullptr;  // a further condition (real forms; kChecked)
  int32_t call = -1;        // kCall: eval::ComplexFn (one operand) or eval::ComplexFn2 (two)
  // Real forms computed by jit/eval's eval::SpecialFn: for f32 and the
  // types computed in f32, for f64.
  int32_t special[2] = {-1, -1};
};

constexpr int32_t Fn(eval::ComplexFn fn) { return static_cast<int32_t>(fn); }
constexpr int32_t Fn(eval::ComplexFn2 fn) { return static_cast<int32_t>(fn); }

// bitcast_convert between element types of the same width (same shape), or
// of different widths where the narrower side has one more, minor dimension
// holding the pieces of a wider element (little-endian: piece j is bits
// [j * narrow, (j + 1) * narrow)), as jit/eval's BitcastConvertKernel. i1
// only to i1.
bool BitcastSupported(const Op& op, DType) {
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& out = op.result(0)->type();
  const DType t = in.dtype(), r = out.dtype();
  if (IsNarrowFloat(t) || IsNarrowFloat(r)) return false;  // their bits are not computed in kernels
  if (IsSubByteInt(t) || IsSubByteInt(r)) return false;    // pieces of bytes: the fallback
  if (IsPredT(t) || IsPredT(r)) return t == r && in.rank() == out.rank();
  const int from = ir::BitWidth(t), to = ir::BitWidth(r);
  if (from == to) return in.rank() == out.rank();
  if (from > to) return from % to == 0 && out.rank() == in.rank() + 1 && out.dims().back() == from / to;
  return to % from == 0 && in.rank() == out.rank() + 1 && in.dims().back() == to / from;
}

// TOTALORDER on 8-bit floats would order their f32 values, not their bit
// patterns (NaNs of either sign).
bool CompareSupported(const Op& op, DType t) {
  if (!IsNarrowFloat(t)) return true;
  const ir::EnumAttr* ct = op.GetEnum("compare_type");
  return !ct || ct->value != "TOTALORDER";
}

bool ReducePrecisionSupported(const Op& op, DType t) {
  return !IsNarrowFloat(t) && op.GetInt("exponent_bits").value_or(1) >= 1 &&
         op.GetInt("mantissa_bits").value_or(0) >= 0;
}

llvm::Value* FConst(const Operands& in, double v) { return llvm::ConstantFP::get(in.x[0]->getType(), v); }
llvm::Value* IConst(const Operands& in, int64_t v) {
  return llvm::ConstantInt::get(in.x[0]->getType(), static_cast<uint64_t>(v), true);
}

// Integer division and remainder with XLA's answers for x / 0 (-1, x) and
// INT_MIN / -1 (INT_MIN, 0).
llvm::Value* IntDivide(ScalarEmitter& s, const Operands& in, bool remainder) {
  Builder& b = s.builder();
  const bool is_signed = ir::IsSignedInt(in.t);
  const auto& x = in.x;
  llvm::Value* zero = b.CreateICmpEQ(x[1], IConst(in, 0));
  llvm::Value* minus_one = is_signed ? b.CreateICmpEQ(x[1], IConst(in, -1)) : b.getFalse();
  llvm::Value* safe = b.CreateSelect(b.CreateOr(zero, minus_one), IConst(in, 1), x[1]);
  if (remainder) {
    llvm::Value* r = is_signed ? b.CreateSRem(x[0], safe) : b.CreateURem(x[0], safe);
    r = b.CreateSelect(minus_one, IConst(in, 0), r);
    return b.CreateSelect(zero, x[0], r);
  }
  llvm::Value* q = is_signed ? b.CreateSDiv(x[0], safe) : b.CreateUDiv(x[0], safe);
  q = b.CreateSelect(minus_one, b.CreateNeg(x[0]), q);
  return b.CreateSelect(zero, IConst(in, -1), q);
}

// Shifts by the width or more give 0 (arithmetic right: the sign).
llvm::Value* Shift(ScalarEmitter& s, const Op& op, const Operands& in) {
  Builder& b = s.builder();
  const auto& x = in.x;
  const int64_t width = ir::BitWidth(in.t);
  llvm::Value* in_range = b.CreateICmpULT(x[1], IConst(in, width));
  llvm::Value* amount = b.CreateSelect(in_range, x[1], IConst(in, 0));
  if (op.code() == OpCode::kShiftLeft) return b.CreateSelect(in_range, b.CreateShl(x[0], amount), IConst(in, 0));
  if (op.code() == OpCode::kShiftRightLogical) {
    return b.CreateSelect(in_range, b.CreateLShr(x[0], amount), IConst(in, 0));
  }
  return b.CreateSelect(in_range, b.CreateAShr(x[0], amount), b.CreateAShr(x[0], IConst(in, width - 1)));
}

// f32 through f64 (one rounding), f64 precise: pow, atan2.
llvm::Value* WideBinary(ScalarEmitter& s, const char* name, const Operands& in) {
  Builder& b = s.builder();
  if (in.t != DType::kF64) {
    llvm::Value* a = b.CreateFPExt(in.x[0], b.getDoubleTy());
    llvm::Value* c = b.CreateFPExt(in.x[1], b.getDoubleTy());
    return b.CreateFPTrunc(s.LibmCall(name, {a, c}), b.getFloatTy());
  }
  return s.LibmCall(name, {in.x[0], in.x[1]}, /*precise=*/true);
}

#define JITD_EMIT [](ScalarEmitter & s, [[maybe_unused]] const Op & op, const Operands & in) -> llvm::Value*
#define JITD_WIDE(name) JITD_EMIT { return s.LibmCallWide(name, in.x[0]); }
#define JITD_INTRINSIC(id) JITD_EMIT { return s.Intrinsic(llvm::Intrinsic::id, {in.x[0]}); }

// One entry per op; the order is the op's place in no switch.
const ScalarRule kRules[] = {
    // ---- Arithmetic ----
    {OpCode::kAdd, kAnyReal, Complex::kExact, JITD_EMIT {
       if (IsF(in.t) || IsCplx(in.t)) return s.builder().CreateFAdd(in.x[0], in.x[1]);
       if (IsPredT(in.t)) return s.builder().CreateOr(in.x[0], in.x[1]);
       return s.builder().CreateAdd(in.x[0], in.x[1]);
     }},
    {OpCode::kSubtract, kNumber, Complex::kExact, JITD_EMIT {
       return IsF(in.t) || IsCplx(in.t) ? s.builder().CreateFSub(in.x[0], in.x[1])
                                        : s.builder().CreateSub(in.x[0], in.x[1]);
     }},
    {OpCode::kMultiply, kAnyReal, Complex::kExtended, JITD_EMIT {
       if (IsCplx(in.t)) return s.target().ComplexMultiply(s.builder(), s.module(), in.x[0], in.x[1], in.t);
       if (IsF(in.t)) return s.builder().CreateFMul(in.x[0], in.x[1]);
       if (IsPredT(in.t)) return s.builder().CreateAnd(in.x[0], in.x[1]);
       return s.builder().CreateMul(in.x[0], in.x[1]);
     }},
    // libgcc's __divxc3 for complex, as jit/eval.
    {OpCode::kDivide, kNumber, Complex::kExtended, JITD_EMIT {
       if (IsCplx(in.t)) return s.target().ComplexDivide(s.builder(), s.module(), in.x[0], in.x[1], in.t);
       if (IsF(in.t)) return s.builder().CreateFDiv(in.x[0], in.x[1]);
       return IntDivide(s, in, /*remainder=*/false);
     }},
    {OpCode::kRemainder, kNumber, Complex::kCall, JITD_EMIT {
       if (IsF(in.t)) return s.builder().CreateFRem(in.x[0], in.x[1]);
       return IntDivide(s, in, /*remainder=*/true);
     }, nullptr, Fn(eval::ComplexFn2::kRemainder)},
    {OpCode::kMaximum, kAnyReal, Complex::kNo, JITD_EMIT { return s.Max(in.t, in.x[0], in.x[1]); }},
    {OpCode::kMinimum, kAnyReal, Complex::kNo, JITD_EMIT { return s.Min(in.t, in.x[0], in.x[1]); }},
    {OpCode::kNegate, kNumber, Complex::kExact, JITD_EMIT {
       return IsF(in.t) || IsCplx(in.t) ? s.builder().CreateFNeg(in.x[0]) : s.builder().CreateNeg(in.x[0]);
     }},
    // hypotl for complex.
    {OpCode::kAbs, kNumber, Complex::kExtended, JITD_EMIT {
       Builder& b = s.builder();
       if (IsCplx(in.t)) return s.target().ComplexAbs(b, s.module(), in.x[0], in.t);
       if (IsF(in.t)) return s.Intrinsic(llvm::Intrinsic::fabs, {in.x[0]});
       if (!ir::IsSignedInt(in.t)) return in.x[0];
       return b.CreateSelect(b.CreateICmpSLT(in.x[0], IConst(in, 0)), b.CreateNeg(in.x[0]), in.x[0]);
     }},
    {OpCode::kSign, kNumber, Complex::kCall, JITD_EMIT {
       Builder& b = s.builder();
       const auto& x = in.x;
       if (IsF(in.t)) {
         llvm::Value* keep = b.CreateOr(b.CreateFCmpUNO(x[0], x[0]), b.CreateFCmpOEQ(x[0], FConst(in, 0)));
         llvm::Value* one = b.CreateIntrinsic(llvm::Intrinsic::copysign, {x[0]->getType()}, {FConst(in, 1), x[0]});
         return b.CreateSelect(keep, x[0], one);
       }
       if (ir::IsSignedInt(in.t)) {
         return s.Intrinsic(llvm::Intrinsic::smin,
                            {s.Intrinsic(llvm::Intrinsic::smax, {x[0], IConst(in, -1)}), IConst(in, 1)});
       }
       return b.CreateZExt(b.CreateICmpNE(x[0], IConst(in, 0)), x[0]->getType());
     }, nullptr, Fn(eval::ComplexFn::kSign)},
    {OpCode::kSelect, kAnyReal, Complex::kExact,
     JITD_EMIT { return s.builder().CreateSelect(in.x[0], in.x[1], in.x[2]); }},
    {OpCode::kClamp, kAnyReal, Complex::kNo, JITD_EMIT {
       const DType xt = op.operand(1)->type().dtype();
       return s.Min(xt, s.Max(xt, in.x[1], in.x[0]), in.x[2]);
     }},
    // Lexicographic on complex, as jit/eval's CompareComplex.
    {OpCode::kCompare, kAnyReal, Complex::kExact, JITD_EMIT { return s.Compare(op, in.x[0], in.x[1]); },
     CompareSupported},
    // ---- Bits ----
    {OpCode::kAnd, kBits, Complex::kNo, JITD_EMIT { return s.builder().CreateAnd(in.x[0], in.x[1]); }},
    {OpCode::kOr, kBits, Complex::kNo, JITD_EMIT { return s.builder().CreateOr(in.x[0], in.x[1]); }},
    {OpCode::kXor, kBits, Complex::kNo, JITD_EMIT { return s.builder().CreateXor(in.x[0], in.x[1]); }},
    {OpCode::kNot, kBits, Complex::kNo, JITD_EMIT { return s.builder().CreateNot(in.x[0]); }},
    {OpCode::kShiftLeft, kInteger, Complex::kNo, JITD_EMIT { return Shift(s, op, in); }},
    {OpCode::kShiftRightLogical, kInteger, Complex::kNo, JITD_EMIT { return Shift(s, op, in); }},
    {OpCode::kShiftRightArithmetic, kInteger, Complex::kNo, JITD_EMIT { return Shift(s, op, in); }},
    {OpCode::kPopulationCount, kInteger, Complex::kNo, JITD_INTRINSIC(ctpop)},
    {OpCode::kCountLeadingZeros, kInteger, Complex::kNo, JITD_EMIT {
       return s.builder().CreateIntrinsic(llvm::Intrinsic::ctlz, {in.x[0]->getType()},
                                          {in.x[0], s.builder().getFalse()});
     }},
    // Scalars only (comparators, reduce bodies: equal widths); tensors are
    // the elemental emitter's (between widths too).
    {OpCode::kBitcastConvert, kAnyReal, Complex::kChecked, JITD_EMIT {
       return s.FromBits(s.ToBits(in.x[0], in.t, /*canonical_nan=*/true), in.rt);
     }, BitcastSupported},
    {OpCode::kReducePrecision, kFloat, Complex::kNo, JITD_EMIT {
       return s.FromBits(s.ReducePrecisionBits(op, s.ToBits(in.x[0], in.t, /*canonical_nan=*/false)), in.t);
     }, ReducePrecisionSupported},
    // ---- Types ----
    // Into f16 / bf16 from f64 and wide integers: rounded to odd in f32
    // first, then once to the narrow type (see Convert).
    {OpCode::kConvert, kAnyReal, Complex::kExact, JITD_EMIT { return s.Convert(in.x[0], in.t, in.rt); }},
    // A complex operand's part; of a float, itself / +0.
    {OpCode::kReal, kFloat, Complex::kExact, JITD_EMIT {
       return IsCplx(in.t) ? s.builder().CreateExtractElement(in.x[0], uint64_t{0}) : in.x[0];
     }},
    {OpCode::kImag, kFloat, Complex::kExact, JITD_EMIT {
       return IsCplx(in.t) ? s.builder().CreateExtractElement(in.x[0], uint64_t{1}) : FConst(in, 0);
     }},
    {OpCode::kComplex, 0, Complex::kExact, JITD_EMIT {
       llvm::Value* z = llvm::UndefValue::get(s.ComputeType(in.rt));
       z = s.builder().CreateInsertElement(z, in.x[0], uint64_t{0});
       return s.builder().CreateInsertElement(z, in.x[1], uint64_t{1});
     }},
    // ---- Floats ----
    {OpCode::kSqrt, kFloat, Complex::kCall, JITD_INTRINSIC(sqrt), nullptr, Fn(eval::ComplexFn::kSqrt)},
    {OpCode::kRsqrt, kFloat, Complex::kCall, JITD_EMIT {
       Builder& b = s.builder();
       if (in.t != DType::kF64) {
         llvm::Value* w = b.CreateFPExt(in.x[0], b.getDoubleTy());
         w = b.CreateFDiv(llvm::ConstantFP::get(b.getDoubleTy(), 1.0), s.Intrinsic(llvm::Intrinsic::sqrt, {w}));
         return b.CreateFPTrunc(w, b.getFloatTy());
       }
       return b.CreateFDiv(FConst(in, 1), s.Intrinsic(llvm::Intrinsic::sqrt, {in.x[0]}));
     }, nullptr, Fn(eval::ComplexFn::kRsqrt)},
    {OpCode::kFloor, kFloat, Complex::kNo, JITD_INTRINSIC(floor)},
    {OpCode::kCeil, kFloat, Complex::kNo, JITD_INTRINSIC(ceil)},
    {OpCode::kRoundNearestAfz, kFloat, Complex::kNo, JITD_INTRINSIC(round)},
    {OpCode::kRoundNearestEven, kFloat, Complex::kNo, JITD_INTRINSIC(roundeven)},
    {OpCode::kIsFinite, kFloat, Complex::kNo, JITD_EMIT {
       return s.builder().CreateFCmpOLT(s.Intrinsic(llvm::Intrinsic::fabs, {in.x[0]}), FConst(in, INFINITY));
     }},
    {OpCode::kChloIsInf, kFloat, Complex::kNo, JITD_EMIT {
       return s.builder().CreateFCmpOEQ(s.Intrinsic(llvm::Intrinsic::fabs, {in.x[0]}), FConst(in, INFINITY));
     }},
    {OpCode::kChloIsPosInf, kFloat, Complex::kNo,
     JITD_EMIT { return s.builder().CreateFCmpOEQ(in.x[0], FConst(in, INFINITY)); }},
    {OpCode::kChloIsNegInf, kFloat, Complex::kNo,
     JITD_EMIT { return s.builder().CreateFCmpOEQ(in.x[0], FConst(in, -INFINITY)); }},
    {OpCode::kChloSquare, kFloat, Complex::kCall,
     JITD_EMIT { return s.builder().CreateFMul(in.x[0], in.x[0]); }, nullptr,
     Fn(eval::ComplexFn::kSquare)},
    // ---- Transcendentals: f32 in f64 through libm (libmvec when
    // vectorized), rounded once; f64 on scalar libm (precise). ----
    {OpCode::kExponential, kFloat, Complex::kCall, JITD_WIDE("exp"), nullptr, Fn(eval::ComplexFn::kExp)},
    {OpCode::kExponentialMinusOne, kFloat, Complex::kCall, JITD_WIDE("expm1"), nullptr,
     Fn(eval::ComplexFn::kExpm1)},
    {OpCode::kLog, kFloat, Complex::kCall, JITD_WIDE("log"), nullptr, Fn(eval::ComplexFn::kLog)},
    {OpCode::kLogPlusOne, kFloat, Complex::kCall, JITD_WIDE("log1p"), nullptr, Fn(eval::ComplexFn::kLog1p)},
    // libmvec's f32 tanh meets the corpus tolerance (checked by
    // jitd_conformance_cpu); f64 stays on scalar libm.
    {OpCode::kTanh, kFloat, Complex::kCall, JITD_EMIT {
       if (!s.target().HasAccurateF32Tanh()) return s.LibmCallWide("tanh", in.x[0]);
       return s.LibmCall("tanh", {in.x[0]}, /*precise=*/in.t == DType::kF64);
     }, nullptr, Fn(eval::ComplexFn::kTanh)},
    {OpCode::kSine, kFloat, Complex::kCall, JITD_WIDE("sin"), nullptr, Fn(eval::ComplexFn::kSin)},
    {OpCode::kCosine, kFloat, Complex::kCall, JITD_WIDE("cos"), nullptr, Fn(eval::ComplexFn::kCos)},
    {OpCode::kTan, kFloat, Complex::kCall, JITD_WIDE("tan"), nullptr, Fn(eval::ComplexFn::kTan)},
    {OpCode::kChloTan, kFloat, Complex::kCall, JITD_WIDE("tan"), nullptr, Fn(eval::ComplexFn::kTan)},
    {OpCode::kCbrt, kFloat, Complex::kCall, JITD_WIDE("cbrt"), nullptr, Fn(eval::ComplexFn::kCbrt)},
    {OpCode::kChloAsin, kFloat, Complex::kCall, JITD_WIDE("asin"), nullptr, Fn(eval::ComplexFn::kAsin)},
    {OpCode::kChloAcos, kFloat, Complex::kCall, JITD_WIDE("acos"), nullptr, Fn(eval::ComplexFn::kAcos)},
    {OpCode::kChloAtan, kFloat, Complex::kCall, JITD_WIDE("atan"), nullptr, Fn(eval::ComplexFn::kAtan)},
    {OpCode::kChloAsinh, kFloat, Complex::kCall, JITD_WIDE("asinh"), nullptr, Fn(eval::ComplexFn::kAsinh)},
    {OpCode::kChloAcosh, kFloat, Complex::kCall, JITD_WIDE("acosh"), nullptr, Fn(eval::ComplexFn::kAcosh)},
    {OpCode::kChloAtanh, kFloat, Complex::kCall, JITD_WIDE("atanh"), nullptr, Fn(eval::ComplexFn::kAtanh)},
    {OpCode::kChloErf, kFloat, Complex::kNo, JITD_WIDE("erf")},
    {OpCode::kChloErfc, kFloat, Complex::kNo, JITD_WIDE("erfc")},
    // 1 / (1 + e^-x), in f64 for f32 operands.
    {OpCode::kLogistic, kFloat, Complex::kCall, JITD_EMIT {
       Builder& b = s.builder();
       llvm::Value* w = in.t != DType::kF64 ? b.CreateFPExt(in.x[0], b.getDoubleTy()) : in.x[0];
       llvm::Value* one = llvm::ConstantFP::get(w->getType(), 1.0);
       llvm::Value* e = s.LibmCall("exp", {b.CreateFNeg(w)}, /*precise=*/in.t == DType::kF64);
       llvm::Value* r = b.CreateFDiv(one, b.CreateFAdd(one, e));
       return in.t != DType::kF64 ? b.CreateFPTrunc(r, b.getFloatTy()) : r;
     }, nullptr, Fn(eval::ComplexFn::kLogistic)},
    {OpCode::kPower, kFloat, Complex::kCall, JITD_EMIT { return WideBinary(s, "pow", in); }, nullptr,
     Fn(eval::ComplexFn2::kPower)},
    {OpCode::kAtan2, kFloat, Complex::kCall, JITD_EMIT { return WideBinary(s, "atan2", in); }, nullptr,
     Fn(eval::ComplexFn2::kAtan2)},
    // ---- jit/eval's special functions (emitted from `special`) ----
    {OpCode::kChloLgamma, kFloat, Complex::kNo, nullptr, nullptr, -1,
     {static_cast<int32_t>(eval::SpecialFn::kLgamma), static_cast<int32_t>(eval::SpecialFn::kLgamma)}},
    {OpCode::kChloDigamma, kFloat, Complex::kNo, nullptr, nullptr, -1,
     {static_cast<int32_t>(eval::SpecialFn::kDigamma), static_cast<int32_t>(eval::SpecialFn::kDigamma)}},
    {OpCode::kChloErfInv, kFloat, Complex::kNo, nullptr, nullptr, -1,
     {static_cast<int32_t>(eval::SpecialFn::kErfInv), static_cast<int32_t>(eval::SpecialFn::kErfInv)}},
    {OpCode::kChloBesselI1e, kFloat, Complex::kNo, nullptr, nullptr, -1,
     {static_cast<int32_t>(eval::SpecialFn::kBesselI1e), static_cast<int32_t>(eval::SpecialFn::kBesselI1e)}},
    {OpCode::kChloCosh, kFloat, Complex::kCall, nullptr, nullptr, Fn(eval::ComplexFn::kCosh),
     {static_cast<int32_t>(eval::SpecialFn::kCoshF32), static_cast<int32_t>(eval::SpecialFn::kCoshF64)}},
    {OpCode::kChloSinh, kFloat, Complex::kCall, nullptr, nullptr, Fn(eval::ComplexFn::kSinh),
     {static_cast<int32_t>(eval::SpecialFn::kSinhF32), static_cast<int32_t>(eval::SpecialFn::kSinhF64)}},
};

#undef JITD_INTRINSIC
#undef JITD_WIDE
#undef JITD_EMIT

constexpr size_t kNumOpCodes = [] {
  size_t n = 0;
#define X(e, name) ++n;
#include "jit/ir/ops.def"
#undef X
  return n;
}();

const ScalarRule* FindRule(OpCode code) {
  static const std::array<const ScalarRule*, kNumOpCodes> rules = [] {
    std::array<const ScalarRule*, kNumOpCodes> by_code{};
    for (const ScalarRule& rule : kRules) by_code[static_cast<size_t>(rule.code)] = &rule;
    return by_code;
  }();
  const size_t i = static_cast<size_t>(code);
  return i < rules.size() ? rules[i] : nullptr;
}

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

DType FirstType(const Op& op) {
  return op.num_operands() > 0 ? op.operand(0)->type().dtype() : op.result(0)->type().dtype();
}

}  // namespace

bool ScalarEmitter::Supports(const Op& op, const TargetMath& target) {
  const ScalarRule* rule = FindRule(op.code());
  if (!rule || op.num_results() != 1 || !internal::TensorTypesSupported(op, target.HasNarrowFloats())) return false;
  const DType t = FirstType(op);
  const DType rt = op.result(0)->type().dtype();
  if (HasComplexType(op)) {
    switch (rule->complex) {
      case Complex::kNo: return false;
      case Complex::kExact: return true;
      case Complex::kExtended: return target.HasExtendedComplex();
      case Complex::kChecked: return rule->check(op, t);
      case Complex::kCall:
        if (!IsCplx(t) || !IsCplx(rt)) return false;
        if (target.HasHostRuntime()) return true;
        return op.num_operands() == 1 ? target.HasComplexUnary(rule->call) : target.HasComplexBinary(rule->call);
    }
    return false;
  }
  if (!(rule->real & ClassOf(t))) return false;
  if (rule->special[0] >= 0 && !target.HasHostRuntime() && !target.HasSpecial(rule->special[t == DType::kF64])) {
    return false;
  }
  return !rule->check || rule->check(op, t);
}

std::vector<OpCode> ScalarEmitter::TableOps() {
  std::vector<OpCode> ops;
  for (const ScalarRule& rule : kRules) ops.push_back(rule.code);
  return ops;
}

llvm::Value* ScalarEmitter::Scalar(const Op& op, const std::vector<llvm::Value*>& x) {
  return RoundTo(ScalarUnrounded(op, x), op.result(0)->type().dtype());
}

llvm::Value* ScalarEmitter::ScalarUnrounded(const Op& op, const std::vector<llvm::Value*>& x) {
  const DType t = FirstType(op);
  const DType rt = op.result(0)->type().dtype();
  const ScalarRule* rule = FindRule(op.code());
  if (!rule) {
    Fail("op '" + std::string(op.name()) + "' has no scalar emitter");
    return llvm::UndefValue::get(ComputeType(rt));
  }
  if (rule->complex == Complex::kCall && IsCplx(t) && IsCplx(rt)) {
    if (op.num_operands() == 1) return EvalComplexCall(kComplexUnarySymbol, rule->call, {x[0]}, t);
    return EvalComplexCall(kComplexBinarySymbol, rule->call, {x[0], x[1]}, t);
  }
  if (IsF(t) && rule->special[0] >= 0) return EvalSpecialCall(rule->special[t == DType::kF64], x[0], t);
  if (!rule->emit) {
    Fail("op '" + std::string(op.name()) + "' has no scalar emitter for " + std::string(ir::DTypeName(t)));
    return llvm::UndefValue::get(ComputeType(rt));
  }
  return rule->emit(*this, op, Operands{t, rt, x});
}

llvm::Value* ScalarEmitter::Compare(const Op& op, llvm::Value* a, llvm::Value* b) {
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

}  // namespace jitd::codegen
