// ScalarEmitter: the math of one element, the lower half of the elemental
// emitter (elemental_emitter.h, which owns one and adds the index maps).
//
//   scalar_ops.cc         every scalar op's value — what it can compute
//                         (Supports) and how, one table entry per op
//   scalar_conversions.cc compute and storage forms, converts, f16 / bf16 /
//                         8-bit float rounding, storage bits
//   scalar_emitter.cc     loads and stores, constants, fold identities,
//                         calls (libm, jit/eval's functions)
//   scalar_region.cc      scalar regions (reduce bodies, comparators,
//                         window bodies, scatter updates): which it
//                         computes (IsScalarBlock) and EmitBlock
//
// What the machine provides comes from the TargetMath alone. One emitter
// per function being built, on one thread; it borrows the module and the
// target, and owns the IRBuilder every part of a kernel emits through.
#ifndef JITD_JIT_CODEGEN_SCALAR_EMITTER_H_
#define JITD_JIT_CODEGEN_SCALAR_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/codegen/target_math.h"
#include "jit/eval/fold.h"
#include "jit/ir/module.h"

namespace jitd::codegen {

// What a scalar region may hold beyond its own arguments and scalar ops.
struct ScalarBlockRules {
  // Rank-0 splat constants defined outside the region.
  bool outer_constants = false;
  // bitcast_convert (same-width scalars). Its f16 / bf16 operands' NaN
  // payloads become the canonical NaN, which a sort comparator must not see.
  bool bitcasts = true;
};

// Whether `block` is a region ScalarEmitter::EmitBlock computes: rank-0
// arguments of the element types `args`, ops that IsFusibleOp(op, target)
// computes on rank-0 values (splat constants, scalar math; no index maps),
// each operand defined before it (or allowed by `rules`), and a last op
// returning rank-0 values of the element types `results`.
bool IsScalarBlock(const ir::Block& block, const std::vector<ir::DType>& args,
                   const std::vector<ir::DType>& results, const TargetMath& target, ScalarBlockRules rules = {});

class ScalarEmitter {
 public:
  // Errors name `context` (the kernel's root, or the op owning a region).
  ScalarEmitter(llvm::Module& module, const TargetMath& target, const ir::Op& context);
  ScalarEmitter(const ScalarEmitter&) = delete;
  ScalarEmitter& operator=(const ScalarEmitter&) = delete;

  // Whether the op table has `op` (one result) with its attributes and
  // element types on `target`. The index maps are ElementalEmitter's.
  static bool Supports(const ir::Op& op, const TargetMath& target);
  // The ops of the table (for tests that walk every op it claims).
  static std::vector<ir::OpCode> TableOps();

  Builder& builder() { return b_; }
  llvm::Module& module() { return module_; }
  const TargetMath& target() const { return target_; }

  // ---- Element types ----
  // The compute form: i1, iN, float (f16, bf16, 8-bit floats too), double,
  // <2 x float> / <2 x double> for complex (real, imaginary).
  llvm::Type* ComputeType(ir::DType t);
  // The storage form: i8 for pred, sub-byte integers and 8-bit floats, i16
  // for f16 / bf16, the compute form otherwise.
  llvm::Type* StorageType(ir::DType t);

  // Element `offset` of a buffer of `t` at `ptr`, in its compute form; a
  // store of one.
  llvm::Value* Load(llvm::Value* ptr, ir::DType t, llvm::Value* offset);
  void Store(llvm::Value* x, ir::DType t, llvm::Value* ptr, llvm::Value* offset);

  // ---- Conversions (scalar_conversions.cc) ----
  // f16 / bf16 / 8-bit float storage bits <-> their f32 value (exact; NaN
  // payloads moved as bits); f32 -> bits rounds to nearest even.
  llvm::Value* HalfToFloat(llvm::Value* bits, ir::DType t);
  llvm::Value* FloatToHalf(llvm::Value* x, ir::DType t);
  // An f32 value rounded to `t` when t is f16 / bf16 / an 8-bit float.
  llvm::Value* RoundTo(llvm::Value* x, ir::DType t);
  llvm::Value* Convert(llvm::Value* x, ir::DType from, ir::DType to);
  llvm::Value* DoubleToFloatRoundToOdd(llvm::Value* x);
  // Storage bits of a compute-form value (an integer of BitWidth(t) bits),
  // NaNs of f16 / bf16 as jit/eval's canonical NaN when `canonical_nan`,
  // and back.
  llvm::Value* ToBits(llvm::Value* x, ir::DType t, bool canonical_nan);
  llvm::Value* FromBits(llvm::Value* bits, ir::DType t);
  // jit/eval's canonical quiet NaN of f16 / bf16, as i16 bits.
  llvm::Value* HalfNanBits(ir::DType t);
  // reduce_precision `op` on storage bits of its operand's type.
  llvm::Value* ReducePrecisionBits(const ir::Op& op, llvm::Value* bits);

  // ---- Values ----
  // A splat constant's value.
  llvm::Value* Constant(const ir::Op& splat);
  // The identity of `fold` in `t`'s compute form (-0 for float sums).
  llvm::Value* FoldIdentity(eval::FoldOp fold, ir::DType t);
  // One op of the table on scalars `x`, rounded to its result type (f16 /
  // bf16 / 8-bit floats after every op, as the interpreter rounds).
  llvm::Value* Scalar(const ir::Op& op, const std::vector<llvm::Value*>& x);
  // A scalar region (IsScalarBlock) on `args`: its results. On an error
  // (status) what it computed so far, or `args` without a return.
  std::vector<llvm::Value*> EmitBlock(const ir::Block& block, const std::vector<llvm::Value*>& args);

  // ---- Pieces of the op table (scalar_ops.cc) ----
  llvm::Value* Intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args);
  // libm's `base` in the type of args[0] (the target's name for it),
  // declared as not touching memory so the vectorizer may map it to
  // libmvec; `precise` forbids that (f64 results need libm's < 1 ULP).
  llvm::Value* LibmCall(const std::string& base, llvm::ArrayRef<llvm::Value*> args, bool precise = false);
  // f32 computed in f64 and rounded once; f64 a precise call.
  llvm::Value* LibmCallWide(const std::string& base, llvm::Value* x);
  // jit/eval's own per-element functions (kernel_runtime.h), or the
  // target's code for them where it has no host runtime.
  llvm::CallInst* EvalCall(const char* symbol, llvm::Type* result, llvm::ArrayRef<llvm::Value*> args);
  llvm::Value* EvalComplexCall(const char* symbol, int32_t fn, llvm::ArrayRef<llvm::Value*> zs, ir::DType t);
  llvm::Value* EvalSpecialCall(int32_t fn, llvm::Value* x, ir::DType t);
  llvm::Value* Max(ir::DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* Min(ir::DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* Compare(const ir::Op& op, llvm::Value* a, llvm::Value* b);

  // ---- Errors ----
  // The first error of any call (it names the context op), else OK.
  const Status& status() const { return status_; }
  void Fail(const std::string& message);  // INTERNAL, unless one came first
  void SetError(Status error);            // kept unless one came first

 private:
  llvm::Value* ScalarUnrounded(const ir::Op& op, const std::vector<llvm::Value*>& x);
  llvm::Value* NarrowToFloat(llvm::Value* bits, ir::DType t);
  llvm::Value* FloatToNarrow(llvm::Value* x, ir::DType t);
  llvm::Value* IntToFloatRoundToOdd(llvm::Value* x, bool is_signed);
  llvm::Value* TargetComplexCall(const char* symbol, int32_t fn, llvm::ArrayRef<llvm::Value*> zs, ir::DType t);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  Builder b_;
  const TargetMath& target_;
  const ir::Op& context_;
  Status status_ = Status::Ok();
};

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_SCALAR_EMITTER_H_
