// The host's target math: see cpu_target_math.h. The complex arithmetic
// reproduces jit/eval's std::complex<long double> code on x86_fp80.
#include "jit/codegen/cpu/cpu_target_math.h"

#include <cmath>

#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

namespace jitd::codegen {

using ir::DType;

namespace {

// <2 x float> / <2 x double>: a complex value in the emitter.
llvm::Type* PairType(Builder& ir, DType t) {
  return llvm::FixedVectorType::get(t == DType::kC64 ? ir.getFloatTy() : ir.getDoubleTy(), 2);
}

}  // namespace

const TargetMath& HostTargetMath() {
  static const CpuTargetMath* math = new CpuTargetMath();
  return *math;
}

std::string CpuTargetMath::MathFunction(std::string_view base, bool f32) const {
  return f32 ? std::string(base) + "f" : std::string(base);
}

bool CpuTargetMath::HasExtendedComplex() const {
#if defined(__x86_64__) || defined(__i386__)
  return true;  // long double is x87 extended precision (x86_fp80)
#else
  return false;
#endif
}

// |z| as jit/eval: hypotl of the parts in long double, narrowed to
// double and then to the component type.
llvm::Value* CpuTargetMath::ComplexAbs(Builder& ir, llvm::Module& m, llvm::Value* z, DType t) const {
  llvm::Type* ext = llvm::Type::getX86_FP80Ty(ir.getContext());
  llvm::Value* re = ir.CreateFPExt(ir.CreateExtractElement(z, uint64_t{0}), ext);
  llvm::Value* im = ir.CreateFPExt(ir.CreateExtractElement(z, uint64_t{1}), ext);
  llvm::FunctionCallee callee =
      m.getOrInsertFunction("hypotl", llvm::FunctionType::get(ext, {ext, ext}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();
    f->addFnAttr(llvm::Attribute::WillReturn);
  }
  llvm::CallInst* call = ir.CreateCall(callee, {re, im});
  call->setDoesNotAccessMemory();
  call->addFnAttr(llvm::Attribute::NoBuiltin);
  llvm::Value* r = ir.CreateFPTrunc(call, ir.getDoubleTy());
  return t == DType::kC64 ? ir.CreateFPTrunc(r, ir.getFloatTy()) : r;
}

// jit/eval divides std::complex<long double>, which the compiler turns
// into a call of the runtime's __divxc3 (libgcc_s here; jitd imports it,
// so the JIT resolves it in the process): the same call, then narrowed
// to double and, for complex<f32>, to float. A complex long double comes
// back in x87 st0 / st1: { x86_fp80, x86_fp80 } in LLVM, as clang emits.
llvm::Value* CpuTargetMath::ComplexDivide(Builder& ir, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                                        DType t) const {
  llvm::Type* ext = llvm::Type::getX86_FP80Ty(ir.getContext());
  auto part = [&](llvm::Value* z, uint64_t i) { return ir.CreateFPExt(ir.CreateExtractElement(z, i), ext); };
  llvm::StructType* pair = llvm::StructType::get(ir.getContext(), {ext, ext});
  llvm::FunctionCallee callee =
      m.getOrInsertFunction("__divxc3", llvm::FunctionType::get(pair, {ext, ext, ext, ext}, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();
    f->addFnAttr(llvm::Attribute::WillReturn);
  }
  llvm::CallInst* q = ir.CreateCall(callee, {part(x, 0), part(x, 1), part(y, 0), part(y, 1)});
  q->setDoesNotAccessMemory();
  auto narrow = [&](llvm::Value* v) {
    v = ir.CreateFPTrunc(v, ir.getDoubleTy());
    return t == DType::kC64 ? ir.CreateFPTrunc(v, ir.getFloatTy()) : v;
  };
  llvm::Value* z = llvm::UndefValue::get(PairType(ir, t));
  z = ir.CreateInsertElement(z, narrow(ir.CreateExtractValue(q, 0)), uint64_t{0});
  return ir.CreateInsertElement(z, narrow(ir.CreateExtractValue(q, 1)), uint64_t{1});
}

// jit/eval multiplies std::complex<long double>: (ac - bd, ad + bc) in x87
// extended precision, with C99 Annex G's recovery of infinities when
// both parts come out NaN (libgcc's __mulxc3), then narrowed to double
// and, for complex<f32>, to float. The same here on x86_fp80 (scalar x87
// code: bit for bit, not vectorized).
llvm::Value* CpuTargetMath::ComplexMultiply(Builder& ir, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                                          DType t) const {
  llvm::Type* ext = llvm::Type::getX86_FP80Ty(ir.getContext());
  auto part = [&](llvm::Value* z, uint64_t i) { return ir.CreateFPExt(ir.CreateExtractElement(z, i), ext); };
  llvm::Value* a = part(x, 0);
  llvm::Value* b = part(x, 1);
  llvm::Value* c = part(y, 0);
  llvm::Value* d = part(y, 1);
  auto fc = [&](double v) { return llvm::ConstantFP::get(ext, v); };
  auto is_nan = [&](llvm::Value* v) { return ir.CreateFCmpUNO(v, v); };
  auto is_inf = [&](llvm::Value* v) { return ir.CreateFCmpOEQ(ir.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v), fc(INFINITY)); };
  auto copysign = [&](llvm::Value* mag, llvm::Value* sign) {
    return ir.CreateIntrinsic(llvm::Intrinsic::copysign, {ext}, {mag, sign});
  };
  auto product = [&](llvm::Value* a, llvm::Value* b, llvm::Value* c, llvm::Value* d) {
    return std::pair{ir.CreateFSub(ir.CreateFMul(a, c), ir.CreateFMul(b, d)),
                     ir.CreateFAdd(ir.CreateFMul(a, d), ir.CreateFMul(b, c))};
  };
  llvm::Value* ac = ir.CreateFMul(a, c);
  llvm::Value* bd = ir.CreateFMul(b, d);
  llvm::Value* ad = ir.CreateFMul(a, d);
  llvm::Value* bc = ir.CreateFMul(b, c);
  llvm::Value* re = ir.CreateFSub(ac, bd);
  llvm::Value* im = ir.CreateFAdd(ad, bc);
  // Recovery (only used when both parts are NaN).
  auto box = [&](llvm::Value* v) { return copysign(ir.CreateSelect(is_inf(v), fc(1), fc(0)), v); };
  auto zero_nan = [&](llvm::Value* v) { return ir.CreateSelect(is_nan(v), copysign(fc(0), v), v); };
  llvm::Value* z_inf = ir.CreateOr(is_inf(a), is_inf(b));
  llvm::Value* a1 = ir.CreateSelect(z_inf, box(a), a);
  llvm::Value* b1 = ir.CreateSelect(z_inf, box(b), b);
  llvm::Value* c1 = ir.CreateSelect(z_inf, zero_nan(c), c);
  llvm::Value* d1 = ir.CreateSelect(z_inf, zero_nan(d), d);
  llvm::Value* w_inf = ir.CreateOr(is_inf(c1), is_inf(d1));
  llvm::Value* c2 = ir.CreateSelect(w_inf, box(c1), c1);
  llvm::Value* d2 = ir.CreateSelect(w_inf, box(d1), d1);
  llvm::Value* a2 = ir.CreateSelect(w_inf, zero_nan(a1), a1);
  llvm::Value* b2 = ir.CreateSelect(w_inf, zero_nan(b1), b1);
  llvm::Value* recalc = ir.CreateOr(z_inf, w_inf);
  llvm::Value* overflow = ir.CreateAnd(
      ir.CreateNot(recalc),
      ir.CreateOr(ir.CreateOr(is_inf(ac), is_inf(bd)), ir.CreateOr(is_inf(ad), is_inf(bc))));
  llvm::Value* a3 = ir.CreateSelect(overflow, zero_nan(a2), a2);
  llvm::Value* b3 = ir.CreateSelect(overflow, zero_nan(b2), b2);
  llvm::Value* c3 = ir.CreateSelect(overflow, zero_nan(c2), c2);
  llvm::Value* d3 = ir.CreateSelect(overflow, zero_nan(d2), d2);
  recalc = ir.CreateOr(recalc, overflow);
  auto [re2, im2] = product(a3, b3, c3, d3);
  re2 = ir.CreateFMul(fc(INFINITY), re2);
  im2 = ir.CreateFMul(fc(INFINITY), im2);
  llvm::Value* use = ir.CreateAnd(ir.CreateAnd(is_nan(re), is_nan(im)), recalc);
  re = ir.CreateSelect(use, re2, re);
  im = ir.CreateSelect(use, im2, im);
  // Narrowed as jit/eval does: to double, then (complex<f32>) to float.
  auto narrow = [&](llvm::Value* v) {
    v = ir.CreateFPTrunc(v, ir.getDoubleTy());
    return t == DType::kC64 ? ir.CreateFPTrunc(v, ir.getFloatTy()) : v;
  };
  llvm::Value* z = llvm::UndefValue::get(PairType(ir, t));
  z = ir.CreateInsertElement(z, narrow(re), uint64_t{0});
  return ir.CreateInsertElement(z, narrow(im), uint64_t{1});
}


}  // namespace jitd::codegen
