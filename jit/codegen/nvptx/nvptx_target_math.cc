// NVPTX's target math: see nvptx_target_math.h. Everything here computes
// in double with libdevice's functions (__nv_*, declared here and linked by
// nvptx_backend.cc) and plain LLVM instructions.
#include "jit/codegen/nvptx/nvptx_target_math.h"

#include <cmath>
#include <numbers>

#include "jit/eval/scalar_math.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

namespace jitd::codegen {

using ir::DType;

namespace {

using llvm::Value;

// A complex value as its two double parts.
struct Cx {
  Value* re;
  Value* im;
};

// Scalar double arithmetic and libdevice calls at the builder's point.
class DoubleMath {
 public:
  DoubleMath(Builder& b, llvm::Module& m) : b_(b), m_(m) {}

  Value* c(double v) { return llvm::ConstantFP::get(b_.getDoubleTy(), v); }
  Value* add(Value* x, Value* y) { return b_.CreateFAdd(x, y); }
  Value* sub(Value* x, Value* y) { return b_.CreateFSub(x, y); }
  Value* mul(Value* x, Value* y) { return b_.CreateFMul(x, y); }
  Value* div(Value* x, Value* y) { return b_.CreateFDiv(x, y); }
  Value* neg(Value* x) { return b_.CreateFNeg(x); }
  Value* fabs(Value* x) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  Value* fma(Value* x, Value* y, Value* z) { return b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, z}); }
  Value* copysign(Value* mag, Value* sign) {
    return b_.CreateIntrinsic(llvm::Intrinsic::copysign, {mag->getType()}, {mag, sign});
  }
  Value* sel(Value* cond, Value* x, Value* y) { return b_.CreateSelect(cond, x, y); }
  Value* is_nan(Value* x) { return b_.CreateFCmpUNO(x, x); }
  Value* is_inf(Value* x) { return b_.CreateFCmpOEQ(fabs(x), c(INFINITY)); }
  Value* is_finite(Value* x) { return b_.CreateFCmpOLT(fabs(x), c(INFINITY)); }
  Value* lt(Value* x, Value* y) { return b_.CreateFCmpOLT(x, y); }
  Value* ge(Value* x, Value* y) { return b_.CreateFCmpOGE(x, y); }
  Value* eq(Value* x, Value* y) { return b_.CreateFCmpOEQ(x, y); }
  Value* gt0(Value* x) { return b_.CreateFCmpOGT(x, c(0)); }
  Value* both(Value* p, Value* q) { return b_.CreateAnd(p, q); }
  Value* either(Value* p, Value* q) { return b_.CreateOr(p, q); }
  Value* no(Value* p) { return b_.CreateNot(p); }

  // libdevice's double function __nv_<name> of `args` (all double).
  Value* call(const std::string& name, llvm::ArrayRef<Value*> args) {
    std::vector<llvm::Type*> params;
    for (Value* a : args) params.push_back(a->getType());
    llvm::Type* result = name == "ilogb" ? static_cast<llvm::Type*>(b_.getInt32Ty()) : b_.getDoubleTy();
    llvm::FunctionCallee callee =
        m_.getOrInsertFunction("__nv_" + name, llvm::FunctionType::get(result, params, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    llvm::CallInst* call = b_.CreateCall(callee, args);
    call->setDoesNotAccessMemory();
    return call;
  }
  Value* f(const char* name, Value* x) { return call(name, {x}); }

  Builder& b() { return b_; }

 private:
  Builder& b_;
  llvm::Module& m_;
};

Value* Pack(Builder& b, Cx z) {
  Value* v = llvm::UndefValue::get(llvm::FixedVectorType::get(b.getDoubleTy(), 2));
  v = b.CreateInsertElement(v, z.re, uint64_t{0});
  return b.CreateInsertElement(v, z.im, uint64_t{1});
}
Cx Unpack(Builder& b, Value* v) { return {b.CreateExtractElement(v, uint64_t{0}), b.CreateExtractElement(v, uint64_t{1})}; }

// a*d - b*c style differences in double: with `exact_products` (parts that
// were floats, so products are exact) plainly, else with one fma so the
// result has one rounding of the first product's error (Kahan).
Value* DiffOfProducts(DoubleMath& d, Value* a, Value* b, Value* c, Value* e, bool exact_products) {
  if (exact_products) return d.sub(d.mul(a, b), d.mul(c, e));
  Value* ce = d.mul(c, e);
  Value* err = d.fma(d.neg(c), e, ce);  // ce - c*e exactly
  return d.add(d.fma(a, b, d.neg(ce)), err);
}

// x * y with C99 Annex G's recovery of infinities when both parts are NaN.
Cx Mul(DoubleMath& d, Cx x, Cx y, bool exact_products) {
  Value* a = x.re;
  Value* b = x.im;
  Value* c = y.re;
  Value* e = y.im;
  Value* re = DiffOfProducts(d, a, c, b, e, exact_products);
  Value* im = DiffOfProducts(d, a, e, d.neg(b), c, exact_products);
  auto box = [&](Value* v) { return d.copysign(d.sel(d.is_inf(v), d.c(1), d.c(0)), v); };
  auto zero_nan = [&](Value* v) { return d.sel(d.is_nan(v), d.copysign(d.c(0), v), v); };
  Value* z_inf = d.either(d.is_inf(a), d.is_inf(b));
  Value* a1 = d.sel(z_inf, box(a), a);
  Value* b1 = d.sel(z_inf, box(b), b);
  Value* c1 = d.sel(z_inf, zero_nan(c), c);
  Value* e1 = d.sel(z_inf, zero_nan(e), e);
  Value* w_inf = d.either(d.is_inf(c1), d.is_inf(e1));
  Value* c2 = d.sel(w_inf, box(c1), c1);
  Value* e2 = d.sel(w_inf, box(e1), e1);
  Value* a2 = d.sel(w_inf, zero_nan(a1), a1);
  Value* b2 = d.sel(w_inf, zero_nan(b1), b1);
  Value* recalc = d.either(z_inf, w_inf);
  Value* overflow = d.both(d.no(recalc), d.either(d.either(d.is_inf(d.mul(a, c)), d.is_inf(d.mul(b, e))),
                                                  d.either(d.is_inf(d.mul(a, e)), d.is_inf(d.mul(b, c)))));
  Value* a3 = d.sel(overflow, zero_nan(a2), a2);
  Value* b3 = d.sel(overflow, zero_nan(b2), b2);
  Value* c3 = d.sel(overflow, zero_nan(c2), c2);
  Value* e3 = d.sel(overflow, zero_nan(e2), e2);
  recalc = d.either(recalc, overflow);
  Value* re2 = d.mul(d.c(INFINITY), d.sub(d.mul(a3, c3), d.mul(b3, e3)));
  Value* im2 = d.mul(d.c(INFINITY), d.add(d.mul(a3, e3), d.mul(b3, c3)));
  Value* use = d.both(d.both(d.is_nan(re), d.is_nan(im)), recalc);
  return {d.sel(use, re2, re), d.sel(use, im2, im)};
}

// x / y as C99 Annex G's __divdc3: the divisor scaled by a power of two
// (no overflow or underflow of c*c + d*d), then the infinity / zero
// recovery when both parts are NaN.
Cx Div(DoubleMath& d, Cx x, Cx y) {
  Builder& b = d.b();
  Value* a = x.re;
  Value* bb = x.im;
  Value* c = y.re;
  Value* e = y.im;
  Value* logbw = d.f("logb", d.call("fmax", {d.fabs(c), d.fabs(e)}));
  Value* scale_ok = d.is_finite(logbw);
  Value* ilogbw = b.CreateSelect(scale_ok, b.CreateFPToSI(d.sel(scale_ok, logbw, d.c(0)), b.getInt32Ty()), b.getInt32(0));
  Value* minus = b.CreateNeg(ilogbw);
  Value* cs = d.call("scalbn", {c, minus});
  Value* es = d.call("scalbn", {e, minus});
  Value* denom = d.add(d.mul(cs, cs), d.mul(es, es));
  Value* re = d.call("scalbn", {d.div(d.add(d.mul(a, cs), d.mul(bb, es)), denom), minus});
  Value* im = d.call("scalbn", {d.div(d.sub(d.mul(bb, cs), d.mul(a, es)), denom), minus});
  // Recovery.
  Value* both_nan = d.both(d.is_nan(re), d.is_nan(im));
  Value* zero_den = d.both(d.eq(denom, d.c(0)), d.either(d.no(d.is_nan(a)), d.no(d.is_nan(bb))));
  Value* inf_num = d.both(d.either(d.is_inf(a), d.is_inf(bb)), d.both(d.is_finite(c), d.is_finite(e)));
  Value* inf_den = d.both(d.is_inf(logbw), d.both(d.gt0(logbw), d.both(d.is_finite(a), d.is_finite(bb))));
  // Case 1: (a, b) / 0.
  Value* inf_c = d.copysign(d.c(INFINITY), c);
  Value* re1 = d.mul(inf_c, a);
  Value* im1 = d.mul(inf_c, bb);
  // Case 2: infinite numerator, finite divisor.
  auto box = [&](Value* v) { return d.copysign(d.sel(d.is_inf(v), d.c(1), d.c(0)), v); };
  Value* a2 = box(a);
  Value* b2 = box(bb);
  Value* re2 = d.mul(d.c(INFINITY), d.add(d.mul(a2, c), d.mul(b2, e)));
  Value* im2 = d.mul(d.c(INFINITY), d.sub(d.mul(b2, c), d.mul(a2, e)));
  // Case 3: infinite divisor, finite numerator.
  Value* c3 = box(c);
  Value* e3 = box(e);
  Value* re3 = d.mul(d.c(0), d.add(d.mul(a, c3), d.mul(bb, e3)));
  Value* im3 = d.mul(d.c(0), d.sub(d.mul(bb, c3), d.mul(a, e3)));
  Value* use1 = d.both(both_nan, zero_den);
  Value* use2 = d.both(d.both(both_nan, d.no(use1)), inf_num);
  Value* use3 = d.both(d.both(both_nan, d.no(d.either(use1, use2))), inf_den);
  re = d.sel(use1, re1, d.sel(use2, re2, d.sel(use3, re3, re)));
  im = d.sel(use1, im1, d.sel(use2, im2, d.sel(use3, im3, im)));
  return {re, im};
}

using eval::ComplexFn;
using eval::ComplexFn2;
using eval::SpecialFn;

Cx Neg(DoubleMath& d, Cx z) { return {d.neg(z.re), d.neg(z.im)}; }
Cx Add(DoubleMath& d, Cx x, Cx y) { return {d.add(x.re, y.re), d.add(x.im, y.im)}; }
Cx Sub(DoubleMath& d, Cx x, Cx y) { return {d.sub(x.re, y.re), d.sub(x.im, y.im)}; }
Cx Real(DoubleMath& d, double v) { return {d.c(v), d.c(0)}; }
// i * z and -i * z.
Cx TimesI(DoubleMath& d, Cx z) { return {d.neg(z.im), z.re}; }
Cx TimesMinusI(DoubleMath& d, Cx z) { return {z.im, d.neg(z.re)}; }

Cx Exp(DoubleMath& d, Cx z) {
  // A real argument stays real (exp(x) exactly, imaginary part kept).
  Value* ex = d.f("exp", z.re);
  Value* real = d.eq(z.im, d.c(0));
  return {d.sel(real, ex, d.mul(ex, d.f("cos", z.im))), d.sel(real, z.im, d.mul(ex, d.f("sin", z.im)))};
}

Cx Log(DoubleMath& d, Cx z) { return {d.f("log", d.call("hypot", {z.re, z.im})), d.call("atan2", {z.im, z.re})}; }

// sqrt with the principal branch: t = sqrt((|x| + |z|) / 2), computed
// from scaled parts so |z| does not overflow.
Cx Sqrt(DoubleMath& d, Cx z) {
  Value* x = z.re;
  Value* y = z.im;
  Value* t = d.f("sqrt", d.mul(d.add(d.fabs(x), d.call("hypot", {x, y})), d.c(0.5)));
  Value* half_y_over_t = d.div(d.fabs(y), d.mul(t, d.c(2)));
  Value* pos = d.ge(x, d.c(0));
  Value* re = d.sel(pos, t, half_y_over_t);
  Value* im = d.sel(pos, d.copysign(half_y_over_t, y), d.copysign(t, y));
  // sqrt(+-0 + yi) with y = +-0: (+0, y); infinities in y give (inf, y).
  Value* zero = d.both(d.eq(x, d.c(0)), d.eq(y, d.c(0)));
  Value* inf_y = d.is_inf(y);
  re = d.sel(zero, d.c(0), d.sel(inf_y, d.c(INFINITY), re));
  im = d.sel(zero, y, d.sel(inf_y, y, im));
  return {re, im};
}

// tanh(x + iy) = (sinh 2x + i sin 2y) / (cosh 2x + cos 2y); for |x| > 20
// the denominator is dominated by cosh: (sign x, 4 sin y cos y e^{-2|x|}).
Cx Tanh(DoubleMath& d, Cx z) {
  Value* x2 = d.mul(z.re, d.c(2));
  Value* y2 = d.mul(z.im, d.c(2));
  Value* den = d.add(d.f("cosh", x2), d.f("cos", y2));
  Value* re = d.div(d.f("sinh", x2), den);
  Value* im = d.div(d.f("sin", y2), den);
  Value* big = d.b().CreateFCmpOGT(d.fabs(z.re), d.c(20));
  Value* re_big = d.copysign(d.c(1), z.re);
  Value* im_big = d.mul(d.mul(d.c(4), d.mul(d.f("sin", z.im), d.f("cos", z.im))),
                        d.f("exp", d.mul(d.c(-2), d.fabs(z.re))));
  return {d.sel(big, re_big, re), d.sel(big, im_big, im)};
}

// asinh(z) = log(z + sqrt(z^2 + 1)), evaluated for Re z >= 0 (no
// cancellation) and mirrored: asinh(-z) = -asinh(z).
Cx Asinh(DoubleMath& d, Cx z) {
  Value* neg = d.lt(z.re, d.c(0));
  Cx w = {d.sel(neg, d.neg(z.re), z.re), d.sel(neg, d.neg(z.im), z.im)};
  Cx r = Log(d, Add(d, w, Sqrt(d, Add(d, Mul(d, w, w, false), Real(d, 1)))));
  return {d.sel(neg, d.neg(r.re), r.re), d.sel(neg, d.neg(r.im), r.im)};
}

// atanh(z) = (log(1 + z) - log(1 - z)) / 2.
Cx Atanh(DoubleMath& d, Cx z) {
  Cx r = Sub(d, Log(d, Add(d, Real(d, 1), z)), Log(d, Sub(d, Real(d, 1), z)));
  return {d.mul(r.re, d.c(0.5)), d.mul(r.im, d.c(0.5))};
}

Cx Unary(DoubleMath& d, ComplexFn fn, Cx z) {
  switch (fn) {
    case ComplexFn::kExp: return Exp(d, z);
    case ComplexFn::kExpm1: {
      // e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y / 2).
      Value* s = d.f("sin", d.mul(z.im, d.c(0.5)));
      Value* re = d.sub(d.mul(d.f("expm1", z.re), d.f("cos", z.im)), d.mul(d.c(2), d.mul(s, s)));
      Value* im = d.mul(d.f("exp", z.re), d.f("sin", z.im));
      return {re, d.sel(d.eq(z.im, d.c(0)), z.im, im)};
    }
    case ComplexFn::kLog: return Log(d, z);
    case ComplexFn::kLog1p: {
      // |1 + z|^2 = 1 + (2x + x^2 + y^2): log1p of the small part near 0.
      Value* x = z.re;
      Value* y = z.im;
      Value* small = d.lt(d.add(d.fabs(x), d.fabs(y)), d.c(0.5));
      Value* near = d.mul(d.c(0.5), d.f("log1p", d.add(d.mul(x, d.add(d.c(2), x)), d.mul(y, y))));
      Value* far = d.f("log", d.call("hypot", {d.add(x, d.c(1)), y}));
      return {d.sel(small, near, far), d.call("atan2", {y, d.add(x, d.c(1))})};
    }
    case ComplexFn::kLogistic: return Div(d, Real(d, 1), Add(d, Real(d, 1), Exp(d, Neg(d, z))));
    case ComplexFn::kSqrt: return Sqrt(d, z);
    case ComplexFn::kRsqrt: return Div(d, Real(d, 1), Sqrt(d, z));
    case ComplexFn::kSin:
      return {d.mul(d.f("sin", z.re), d.f("cosh", z.im)), d.mul(d.f("cos", z.re), d.f("sinh", z.im))};
    case ComplexFn::kCos:
      return {d.mul(d.f("cos", z.re), d.f("cosh", z.im)), d.neg(d.mul(d.f("sin", z.re), d.f("sinh", z.im)))};
    case ComplexFn::kTan: return TimesMinusI(d, Tanh(d, TimesI(d, z)));  // tan z = -i tanh(iz)
    case ComplexFn::kTanh: return Tanh(d, z);
    case ComplexFn::kSign: {
      Value* r = d.call("hypot", {z.re, z.im});
      Value* zero = d.eq(r, d.c(0));
      return {d.sel(zero, z.re, d.div(z.re, r)), d.sel(zero, z.im, d.div(z.im, r))};
    }
    case ComplexFn::kAsinh: return Asinh(d, z);
    case ComplexFn::kAsin: return TimesMinusI(d, Asinh(d, TimesI(d, z)));  // asin z = -i asinh(iz)
    case ComplexFn::kAcos: {
      Cx s = TimesMinusI(d, Asinh(d, TimesI(d, z)));
      return {d.sub(d.c(std::numbers::pi / 2), s.re), d.neg(s.im)};  // acos z = pi/2 - asin z
    }
    case ComplexFn::kAcosh: {
      // log(z + sqrt(z + 1) sqrt(z - 1)).
      Cx root = Mul(d, Sqrt(d, Add(d, z, Real(d, 1))), Sqrt(d, Sub(d, z, Real(d, 1))), false);
      return Log(d, Add(d, z, root));
    }
    case ComplexFn::kAtanh: return Atanh(d, z);
    case ComplexFn::kAtan: return TimesMinusI(d, Atanh(d, TimesI(d, z)));  // atan z = -i atanh(iz)
    case ComplexFn::kCosh:
      return {d.mul(d.f("cosh", z.re), d.f("cos", z.im)), d.mul(d.f("sinh", z.re), d.f("sin", z.im))};
    case ComplexFn::kSinh:
      return {d.mul(d.f("sinh", z.re), d.f("cos", z.im)), d.mul(d.f("cosh", z.re), d.f("sin", z.im))};
    case ComplexFn::kSquare: return Mul(d, z, z, false);
    case ComplexFn::kCbrt: break;
  }
  return {nullptr, nullptr};
}

// The interpreter's lowering of CHLO cosh / sinh (jit/eval/elementwise.cc's
// CoshByLowering / SinhByLowering) in `ty` (float or double): the sums in
// `ty`, each exp computed in double and rounded to `ty` once.
Value* CoshSinhByLowering(DoubleMath& d, Value* x, llvm::Type* ty, bool sinh) {
  Builder& b = d.b();
  auto to_ty = [&](Value* v) { return ty->isDoubleTy() ? v : b.CreateFPTrunc(v, ty); };
  auto to_d = [&](Value* v) { return ty->isDoubleTy() ? v : b.CreateFPExt(v, b.getDoubleTy()); };
  Value* xt = to_ty(x);
  Value* log_half = llvm::ConstantFP::get(ty, std::log(0.5));
  Value* e1 = to_ty(d.f("exp", to_d(b.CreateFAdd(xt, log_half))));
  Value* e2 = to_ty(d.f("exp", to_d(b.CreateFSub(log_half, xt))));
  if (!sinh) return to_d(b.CreateFAdd(e1, e2));
  Value* big = b.CreateFSub(e1, e2);
  Value* em1 = to_ty(d.f("expm1", to_d(xt)));
  Value* ratio = b.CreateFDiv(em1, b.CreateFAdd(em1, llvm::ConstantFP::get(ty, 1)));
  Value* small = b.CreateFMul(llvm::ConstantFP::get(ty, 0.5), b.CreateFAdd(em1, ratio));
  Value* is_small = b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, xt), llvm::ConstantFP::get(ty, 1));
  return to_d(b.CreateSelect(is_small, small, big));
}

// digamma for x > 0 by ten steps of psi(x) = psi(x + 1) - 1/x (taken while
// x < 10), then the asymptotic series through x^-14; below 0 by reflection
// psi(x) = psi(1 - x) - pi / tan(pi x); NaN at the poles and -inf, as the
// interpreter.
Value* DigammaPositive(DoubleMath& d, Value* x) {
  Value* acc = d.c(0);
  for (int i = 0; i < 10; ++i) {
    Value* step = d.lt(x, d.c(10));
    acc = d.sel(step, d.sub(acc, d.div(d.c(1), x)), acc);
    x = d.sel(step, d.add(x, d.c(1)), x);
  }
  Value* r = d.div(d.c(1), d.mul(x, x));
  // Bernoulli terms B_2k / (2k x^2k), k = 1..7, by Horner in r.
  const double coeff[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12};
  Value* poly = d.c(coeff[6]);
  for (int k = 5; k >= 0; --k) poly = d.add(d.c(coeff[k]), d.mul(r, poly));
  Value* series = d.sub(d.sub(d.f("log", x), d.div(d.c(0.5), x)), d.mul(r, poly));
  return d.add(acc, series);
}

Value* Digamma(DoubleMath& d, Value* x) {
  Value* neg = d.lt(x, d.c(0.5));
  Value* y = d.sel(neg, d.sub(d.c(1), x), x);
  Value* psi = DigammaPositive(d, y);
  Value* pi = d.c(std::numbers::pi);
  Value* reflected = d.sub(psi, d.div(pi, d.f("tan", d.mul(pi, x))));
  Value* r = d.sel(neg, reflected, psi);
  Value* pole = d.both(d.b().CreateFCmpOLE(x, d.c(0)), d.eq(x, d.f("floor", x)));
  r = d.sel(pole, d.c(NAN), r);
  r = d.sel(d.eq(x, d.c(INFINITY)), x, r);
  r = d.sel(d.eq(x, d.c(-INFINITY)), d.c(NAN), r);
  return d.sel(d.is_nan(x), x, r);
}

// exp(-|x|) I1(|x|) with the sign of x; past |x| = 700 (where I1
// overflows) the asymptotic series 1/sqrt(2 pi x) (1 - 3/(8x) - 15/(128x^2)
// - 315/(3072x^3)).
Value* BesselI1e(DoubleMath& d, Value* x) {
  Value* ax = d.fabs(x);
  Value* direct = d.mul(d.f("cyl_bessel_i1", ax), d.f("exp", d.neg(ax)));
  Value* inv = d.div(d.c(1), ax);
  Value* poly = d.add(d.c(1), d.mul(inv, d.add(d.c(-0.375), d.mul(inv, d.add(d.c(-0.1171875),
                                                                             d.mul(inv, d.c(-0.1025390625)))))));
  Value* asym = d.div(poly, d.f("sqrt", d.mul(d.c(2 * std::numbers::pi), ax)));
  Value* r = d.sel(d.lt(ax, d.c(700)), direct, asym);
  r = d.copysign(r, x);
  return d.sel(d.either(d.is_nan(x), d.eq(x, d.c(0))), x, r);
}

}  // namespace

bool NvptxTargetMath::HasComplexUnary(int32_t fn) const {
  return fn >= 0 && fn <= static_cast<int32_t>(ComplexFn::kSquare) && fn != static_cast<int32_t>(ComplexFn::kCbrt);
}

llvm::Value* NvptxTargetMath::ComplexUnary(Builder& b, llvm::Module& m, int32_t fn, llvm::Value* z) const {
  if (!HasComplexUnary(fn)) return nullptr;
  DoubleMath d(b, m);
  Cx r = Unary(d, static_cast<ComplexFn>(fn), Unpack(b, z));
  return r.re ? Pack(b, r) : nullptr;
}

bool NvptxTargetMath::HasComplexBinary(int32_t fn) const { return fn == static_cast<int32_t>(ComplexFn2::kPower); }

// pow(x, y) as std::pow of complex values: 0 for x = 0, else exp(y log x).
llvm::Value* NvptxTargetMath::ComplexBinary(Builder& b, llvm::Module& m, int32_t fn, llvm::Value* x,
                                            llvm::Value* y) const {
  if (!HasComplexBinary(fn)) return nullptr;
  DoubleMath d(b, m);
  Cx zx = Unpack(b, x);
  Cx r = Exp(d, Mul(d, Unpack(b, y), Log(d, zx), false));
  Value* zero = d.both(d.eq(zx.re, d.c(0)), d.eq(zx.im, d.c(0)));
  return Pack(b, {d.sel(zero, d.c(0), r.re), d.sel(zero, d.c(0), r.im)});
}

bool NvptxTargetMath::HasSpecial(int32_t fn) const {
  return fn >= 0 && fn <= static_cast<int32_t>(SpecialFn::kSinhF64);
}

llvm::Value* NvptxTargetMath::Special(Builder& b, llvm::Module& m, int32_t fn, llvm::Value* x) const {
  if (!HasSpecial(fn)) return nullptr;
  DoubleMath d(b, m);
  switch (static_cast<SpecialFn>(fn)) {
    case SpecialFn::kLgamma: {
      Value* r = d.f("lgamma", x);
      Value* pole = d.either(d.is_inf(x), d.both(d.b().CreateFCmpOLE(x, d.c(0)), d.eq(x, d.f("floor", x))));
      return d.sel(d.is_nan(x), x, d.sel(pole, d.c(INFINITY), r));
    }
    case SpecialFn::kDigamma: return Digamma(d, x);
    case SpecialFn::kErfInv: {
      Value* r = d.f("erfinv", x);
      Value* out = d.b().CreateFCmpOGT(d.fabs(x), d.c(1));
      return d.sel(d.is_nan(x), x, d.sel(out, d.c(NAN), r));
    }
    case SpecialFn::kBesselI1e: return BesselI1e(d, x);
    case SpecialFn::kCoshF32: return CoshSinhByLowering(d, x, b.getFloatTy(), false);
    case SpecialFn::kCoshF64: return CoshSinhByLowering(d, x, b.getDoubleTy(), false);
    case SpecialFn::kSinhF32: return CoshSinhByLowering(d, x, b.getFloatTy(), true);
    case SpecialFn::kSinhF64: return CoshSinhByLowering(d, x, b.getDoubleTy(), true);
  }
  return nullptr;
}

std::string NvptxTargetMath::MathFunction(std::string_view base, bool f32) const {
  return "__nv_" + std::string(base) + (f32 ? "f" : "");
}

llvm::Value* NvptxTargetMath::ComplexMultiply(Builder& b, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                                              ir::DType t) const {
  DoubleMath d(b, m);
  llvm::Type* d2 = llvm::FixedVectorType::get(b.getDoubleTy(), 2);
  const bool f32 = t == DType::kC64;
  Cx r = Mul(d, Unpack(b, f32 ? b.CreateFPExt(x, d2) : x), Unpack(b, f32 ? b.CreateFPExt(y, d2) : y), f32);
  llvm::Value* v = Pack(b, r);
  return f32 ? b.CreateFPTrunc(v, x->getType()) : v;
}

llvm::Value* NvptxTargetMath::ComplexDivide(Builder& b, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                                            ir::DType t) const {
  DoubleMath d(b, m);
  llvm::Type* d2 = llvm::FixedVectorType::get(b.getDoubleTy(), 2);
  const bool f32 = t == DType::kC64;
  Cx r = Div(d, Unpack(b, f32 ? b.CreateFPExt(x, d2) : x), Unpack(b, f32 ? b.CreateFPExt(y, d2) : y));
  llvm::Value* v = Pack(b, r);
  return f32 ? b.CreateFPTrunc(v, x->getType()) : v;
}

llvm::Value* NvptxTargetMath::ComplexAbs(Builder& b, llvm::Module& m, llvm::Value* z, ir::DType t) const {
  DoubleMath d(b, m);
  llvm::Value* re = b.CreateExtractElement(z, uint64_t{0});
  llvm::Value* im = b.CreateExtractElement(z, uint64_t{1});
  if (t == DType::kC64) {
    re = b.CreateFPExt(re, b.getDoubleTy());
    im = b.CreateFPExt(im, b.getDoubleTy());
  }
  llvm::Value* r = d.call("hypot", {re, im});
  return t == DType::kC64 ? b.CreateFPTrunc(r, b.getFloatTy()) : r;
}

const TargetMath& NvptxMath() {
  static const NvptxTargetMath* math = new NvptxTargetMath();
  return *math;
}

}  // namespace jitd::codegen
