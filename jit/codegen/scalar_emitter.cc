// ScalarEmitter (scalar_emitter.h): loads and stores, constants, fold
// identities, the calls element math makes (libm, jit/eval's functions or
// the target's code for them) and errors.
#include "jit/codegen/scalar_emitter.h"

#include <cstring>
#include <string>
#include <vector>

#include "jit/codegen/internal/element_types.h"
#include "jit/codegen/kernel_runtime.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

namespace jitd::codegen {

using internal::IsCplx;
using internal::IsF;
using internal::IsHalf;
using internal::IsPredT;
using internal::IsSubByteInt;
using ir::DType;

ScalarEmitter::ScalarEmitter(llvm::Module& module, const TargetMath& target, const ir::Op& context)
    : module_(module), ctx_(module.getContext()), b_(ctx_), target_(target), context_(context) {}

void ScalarEmitter::Fail(const std::string& message) {
  if (status_.ok()) {
    status_ = Internal("codegen for '" + std::string(context_.name()) + "' at " + context_.loc().ToString() + ": " +
                       message);
  }
}

void ScalarEmitter::SetError(Status error) {
  if (status_.ok()) status_ = std::move(error);
}

llvm::Value* ScalarEmitter::Load(llvm::Value* ptr, DType t, llvm::Value* offset) {
  llvm::Value* addr = b_.CreateInBoundsGEP(StorageType(t), ptr, offset);
  // Complex elements are aligned to their component only.
  llvm::Value* x = IsCplx(t) ? b_.CreateAlignedLoad(StorageType(t), addr, llvm::Align(ir::StorageBytes(t) / 2))
                             : b_.CreateLoad(StorageType(t), addr);
  if (t == DType::kPred) x = b_.CreateICmpNE(x, b_.getInt8(0));
  if (IsHalf(t)) x = HalfToFloat(x, t);
  if (IsSubByteInt(t)) x = b_.CreateTrunc(x, ComputeType(t));
  return x;
}

void ScalarEmitter::Store(llvm::Value* x, DType t, llvm::Value* ptr, llvm::Value* offset) {
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

llvm::Value* ScalarEmitter::Constant(const ir::Op& op) {
  const auto& dense = op.attr("value")->as<ir::DenseElementsAttr>();
  const DType t = dense.type.dtype();
  const uint8_t* p = dense.data->data();
  if (t == DType::kC64) {
    float f[2];
    std::memcpy(f, p, 8);
    return llvm::ConstantVector::get(
        {llvm::ConstantFP::get(b_.getFloatTy(), f[0]), llvm::ConstantFP::get(b_.getFloatTy(), f[1])});
  }
  if (t == DType::kC128) {
    double d[2];
    std::memcpy(d, p, 16);
    return llvm::ConstantVector::get(
        {llvm::ConstantFP::get(b_.getDoubleTy(), d[0]), llvm::ConstantFP::get(b_.getDoubleTy(), d[1])});
  }
  uint64_t bits = 0;
  std::memcpy(&bits, p, static_cast<size_t>(ir::StorageBytes(t)));
  switch (t) {
    case DType::kPred: return b_.getInt1(bits != 0);
    case DType::kF16:
      return llvm::ConstantFP::get(b_.getFloatTy(), ir::HalfToFloat(static_cast<uint16_t>(bits)));
    case DType::kBF16:
      return llvm::ConstantFP::get(b_.getFloatTy(), ir::BFloat16ToFloat(static_cast<uint16_t>(bits)));
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
      if (internal::IsNarrowFloat(t)) {
        return llvm::ConstantFP::get(b_.getFloatTy(),
                                     static_cast<float>(ir::DecodeFloat(bits, *ir::GetFloatFormat(t))));
      }
      return llvm::ConstantInt::get(ComputeType(t), bits);
  }
}

llvm::Value* ScalarEmitter::FoldIdentity(eval::FoldOp fold, DType t) {
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

// ---- Calls --------------------------------------------------------------------

llvm::Value* ScalarEmitter::Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args) {
  return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
}

llvm::Value* ScalarEmitter::LibmCall(const std::string& base, llvm::ArrayRef<llvm::Value*> args, bool precise) {
  llvm::Type* t = args[0]->getType();
  const std::string name = target_.MathFunction(base, t->isFloatTy());
  std::vector<llvm::Type*> params(args.size(), t);
  llvm::FunctionCallee callee = module_.getOrInsertFunction(name, llvm::FunctionType::get(t, params, false));
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

// For the functions where the f32 vector variants are less accurate than
// the corpus allows.
llvm::Value* ScalarEmitter::LibmCallWide(const std::string& base, llvm::Value* x) {
  if (!x->getType()->isFloatTy()) return LibmCall(base, {x}, /*precise=*/true);
  llvm::Value* wide = b_.CreateFPExt(x, b_.getDoubleTy());
  return b_.CreateFPTrunc(LibmCall(base, {wide}), b_.getFloatTy());
}

// A function of jit/eval's (jit/eval/scalar_math.h), declared as not
// touching memory.
llvm::CallInst* ScalarEmitter::EvalCall(const char* symbol, llvm::Type* result, llvm::ArrayRef<llvm::Value*> args) {
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

// The interpreter's complex function `fn` of `zs`: parts widened to double,
// {re, im} doubles back (the C ABI of a struct of two doubles), narrowed per
// part for complex<f32> as the interpreter stores them.
llvm::Value* ScalarEmitter::EvalComplexCall(const char* symbol, int32_t fn, llvm::ArrayRef<llvm::Value*> zs,
                                            DType t) {
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
    out = b_.CreateInsertElement(out, t == DType::kC64 ? b_.CreateFPTrunc(v, b_.getFloatTy()) : v, uint64_t{part});
  }
  return out;
}

// EvalComplexCall on a target without the host's functions: its own code
// (TargetMath::ComplexUnary / ComplexBinary) on the parts widened to
// double, narrowed the same way.
llvm::Value* ScalarEmitter::TargetComplexCall(const char* symbol, int32_t fn, llvm::ArrayRef<llvm::Value*> zs,
                                              DType t) {
  llvm::Type* d2 = llvm::FixedVectorType::get(b_.getDoubleTy(), 2);
  std::vector<llvm::Value*> wide;
  for (llvm::Value* z : zs) wide.push_back(t == DType::kC64 ? b_.CreateFPExt(z, d2) : z);
  llvm::Value* r = nullptr;
  if (wide.size() == 1) r = target_.ComplexUnary(b_, module_, fn, wide[0]);
  if (wide.size() == 2) r = target_.ComplexBinary(b_, module_, fn, wide[0], wide[1]);
  if (!r) {
    Fail(std::string(symbol) + " function " + std::to_string(fn) + ", which target " + std::string(target_.name()) +
         " does not have");
    return llvm::UndefValue::get(ComputeType(t));
  }
  return t == DType::kC64 ? b_.CreateFPTrunc(r, ComputeType(t)) : r;
}

// The interpreter's real special function `fn` of x: in double, rounded
// once into the type (f16 / bf16: rounded to odd in f32 first, so the
// caller's rounding to the type is the only one, as jit/eval's EncodeFloat).
llvm::Value* ScalarEmitter::EvalSpecialCall(int32_t fn, llvm::Value* x, DType t) {
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

llvm::Value* ScalarEmitter::Max(DType t, llvm::Value* a, llvm::Value* b) {
  if (IsF(t)) return Intrinsic(llvm::Intrinsic::maximum, {a, b});
  if (IsPredT(t)) return b_.CreateOr(a, b);
  return ir::IsSignedInt(t) ? Intrinsic(llvm::Intrinsic::smax, {a, b}) : Intrinsic(llvm::Intrinsic::umax, {a, b});
}

llvm::Value* ScalarEmitter::Min(DType t, llvm::Value* a, llvm::Value* b) {
  if (IsF(t)) return Intrinsic(llvm::Intrinsic::minimum, {a, b});
  if (IsPredT(t)) return b_.CreateAnd(a, b);
  return ir::IsSignedInt(t) ? Intrinsic(llvm::Intrinsic::smin, {a, b}) : Intrinsic(llvm::Intrinsic::umin, {a, b});
}

}  // namespace jitd::codegen
