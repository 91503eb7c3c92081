// ScalarEmitter's element types and conversions (scalar_emitter.h): compute
// and storage forms, f16 / bf16 / 8-bit float rounding, converts with
// jit/eval's single rounding, storage bits and reduce_precision.
#include <string>
#include <vector>

#include "jit/codegen/internal/element_types.h"
#include "jit/codegen/kernel_runtime.h"
#include "jit/codegen/scalar_emitter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Module.h"

namespace jitd::codegen {

using internal::IsCplx;
using internal::IsF;
using internal::IsHalf;
using internal::IsInt;
using internal::IsNarrowFloat;
using internal::IsPredT;
using internal::IsSubByteInt;
using ir::DType;

// complex<f32> / complex<f64> compute as <2 x float> / <2 x double>
// (real, imaginary), the layout of their storage.
llvm::Type* ScalarEmitter::ComputeType(DType t) {
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

llvm::Type* ScalarEmitter::StorageType(DType t) {
  if (IsNarrowFloat(t) || IsSubByteInt(t)) return b_.getInt8Ty();
  if (IsHalf(t)) return b_.getInt16Ty();
  return t == DType::kPred ? b_.getInt8Ty() : ComputeType(t);
}

// f16 / bf16 bits (i16) <-> their f32 value; exact both ways, NaN
// payloads included: a NaN's sign and mantissa move as bits (the hardware
// conversions would quiet a signalling NaN), so a half value that a kernel
// only moves keeps its bits, as in the interpreter.
llvm::Value* ScalarEmitter::HalfToFloat(llvm::Value* bits, DType t) {
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

// f32 -> f16 / bf16 bits, rounded to nearest even. A NaN keeps its sign and
// the top of its payload; one whose kept payload would be zero (only low
// f32 bits set) gets the quiet bit, so it stays a NaN.
llvm::Value* ScalarEmitter::FloatToHalf(llvm::Value* x, DType t) {
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

// 8-bit float bits (i8) -> their f32 value (exact): a load from a table of
// jit/ir's DecodeFloat of all 256 patterns.
llvm::Value* ScalarEmitter::NarrowToFloat(llvm::Value* bits, DType t) {
  const std::string name = std::string("jitd_decode_") + std::string(ir::DTypeName(t));
  llvm::GlobalVariable* table = module_.getGlobalVariable(name, /*AllowInternal=*/true);
  if (!table) {
    const ir::FloatFormat format = *ir::GetFloatFormat(t);
    std::vector<float> values(256);
    for (uint64_t b = 0; b < 256; ++b) values[b] = static_cast<float>(ir::DecodeFloat(b, format));
    llvm::Constant* init = llvm::ConstantDataArray::get(ctx_, values);
    table = new llvm::GlobalVariable(module_, init->getType(), /*isConstant=*/true, llvm::GlobalValue::InternalLinkage,
                                     init, name);
  }
  llvm::Value* addr = b_.CreateInBoundsGEP(b_.getFloatTy(), table, b_.CreateZExt(bits, b_.getInt64Ty()));
  return b_.CreateLoad(b_.getFloatTy(), addr);
}

// f32 -> 8-bit float bits, rounded once by jit/ir's EncodeFloat (the
// interpreter's own rounding, saturation and NaN encoding).
llvm::Value* ScalarEmitter::FloatToNarrow(llvm::Value* x, DType t) {
  llvm::Value* wide = b_.CreateFPExt(x, b_.getDoubleTy());
  llvm::Value* bits = EvalCall(kEncodeFloatSymbol, b_.getInt64Ty(), {b_.getInt32(static_cast<uint32_t>(t)), wide});
  return b_.CreateTrunc(bits, b_.getInt8Ty());
}

llvm::Value* ScalarEmitter::RoundTo(llvm::Value* x, DType t) {
  if (!IsHalf(t)) return x;
  return HalfToFloat(FloatToHalf(x, t), t);
}

// f64 -> f32 rounded to odd (truncated toward zero, the last bit set when
// inexact; beyond FLT_MAX: FLT_MAX). f32 keeps 24 bits, more than p + 2 for
// f16 (11) and bf16 (8), so rounding this once more to nearest even gives
// the correctly rounded f16 / bf16 value: one rounding, as jit/eval's
// EncodeFloat from double. NaN becomes the canonical quiet NaN (jit/eval's
// NanBits). f32 subnormals keep >= 2 bits below f16's and bf16's subnormal
// steps too.
llvm::Value* ScalarEmitter::DoubleToFloatRoundToOdd(llvm::Value* x) {
  llvm::Value* f = b_.CreateFPTrunc(x, b_.getFloatTy());
  llvm::Value* back = b_.CreateFPExt(f, b_.getDoubleTy());
  llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
  // Rounded away from zero (|f| > |x|, overflow to inf included): step one
  // ulp back toward zero (sign-magnitude: bits - 1).
  llvm::Value* away =
      b_.CreateFCmpOGT(Intrinsic(llvm::Intrinsic::fabs, {back}), Intrinsic(llvm::Intrinsic::fabs, {x}));
  bits = b_.CreateSelect(away, b_.CreateSub(bits, b_.getInt32(1)), bits);
  llvm::Value* inexact = b_.CreateFCmpUNE(back, x);
  bits = b_.CreateSelect(inexact, b_.CreateOr(bits, b_.getInt32(1)), bits);
  llvm::Value* r = b_.CreateBitCast(bits, b_.getFloatTy());
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), llvm::ConstantFP::getQNaN(b_.getFloatTy()), r);
}

// A 32- or 64-bit integer -> f32 rounded to odd (see above): the
// magnitude's top 24 bits, the last one ORed with any dropped bit.
llvm::Value* ScalarEmitter::IntToFloatRoundToOdd(llvm::Value* x, bool is_signed) {
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* it = x->getType();
  llvm::Value* negative = is_signed ? b_.CreateICmpSLT(x, llvm::ConstantInt::get(it, 0)) : b_.getFalse();
  llvm::Value* mag = b_.CreateSelect(negative, b_.CreateNeg(x), x);  // INT_MIN: 2^(w-1) unsigned
  mag = b_.CreateZExt(mag, i64);
  llvm::Value* lz = b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {i64}, {mag, b_.getFalse()});
  // drop = max(64 - lz - 24, 0)
  llvm::Value* drop = Intrinsic(llvm::Intrinsic::smax, {b_.CreateSub(b_.getInt64(40), lz), b_.getInt64(0)});
  llvm::Value* kept = b_.CreateLShr(mag, drop);
  llvm::Value* mask = b_.CreateSub(b_.CreateShl(b_.getInt64(1), drop), b_.getInt64(1));
  llvm::Value* sticky = b_.CreateICmpNE(b_.CreateAnd(mag, mask), b_.getInt64(0));
  kept = b_.CreateOr(kept, b_.CreateZExt(sticky, i64));
  // kept < 2^24 converts exactly; scaling by 2^drop (<= 2^40) is exact.
  llvm::Value* f = b_.CreateUIToFP(kept, b_.getFloatTy());
  llvm::Value* scale = b_.CreateBitCast(
      b_.CreateShl(b_.CreateTrunc(b_.CreateAdd(drop, b_.getInt64(127)), b_.getInt32Ty()), 23), b_.getFloatTy());
  f = b_.CreateFMul(f, scale);
  return b_.CreateSelect(negative, b_.CreateFNeg(f), f);
}

llvm::Value* ScalarEmitter::Convert(llvm::Value* x, DType from, DType to) {
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
    // jit/eval rounds every conversion into f16 / bf16 once from the double
    // value and writes NaN as the canonical quiet NaN.
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

llvm::Value* ScalarEmitter::HalfNanBits(DType t) { return b_.getInt16(t == DType::kF16 ? 0x7E00 : 0x7FC0); }

// f16 / bf16 values are rounded back from f32 (exact: they hold a value of
// the type), NaN as jit/eval's canonical NaN when `canonical_nan` (what the
// interpreter stores for a computed NaN).
llvm::Value* ScalarEmitter::ToBits(llvm::Value* x, DType t, bool canonical_nan) {
  if (IsPredT(t) || IsInt(t)) return x;
  if (IsNarrowFloat(t)) return FloatToHalf(x, t);  // EncodeFloat: NaN canonical already
  if (IsHalf(t)) {
    llvm::Value* bits = FloatToHalf(x, t);
    return canonical_nan ? b_.CreateSelect(b_.CreateFCmpUNO(x, x), HalfNanBits(t), bits) : bits;
  }
  return b_.CreateBitCast(x, b_.getIntNTy(static_cast<unsigned>(ir::BitWidth(t))));
}

llvm::Value* ScalarEmitter::FromBits(llvm::Value* bits, DType t) {
  if (IsPredT(t) || IsInt(t)) return bits;
  if (IsHalf(t)) return HalfToFloat(bits, t);
  return b_.CreateBitCast(bits, ComputeType(t));
}

// Implements reduce_precision as the StableHLO spec and XLA define it. The
// same steps as jit/eval/elementwise.cc's ReducePrecisionBits, on the
// storage bits of an f16 / bf16 / f32 / f64 (1 + exponent + mantissa bits,
// IEEE bias): round to `mantissa_bits` (to nearest, ties to even), then a
// signed infinity above or a signed zero below the normal range of an
// `exponent_bits`-wide exponent. NaN passes through unchanged.
llvm::Value* ScalarEmitter::ReducePrecisionBits(const ir::Op& op, llvm::Value* bits) {
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
    // 1 - new_bias to new_bias; compared here as the biased field (the bias
    // added to both sides). Subnormals are not kept.
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

}  // namespace jitd::codegen
