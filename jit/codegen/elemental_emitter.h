// ElementalEmitter: "the value of a kernel's root (and of its extra
// outputs) at an index" in LLVM IR, for a schedule that owns the function
// and the loops: the cpu's (cpu/cpu_kernel_emitter.h: flat, rows, tiled
// transpose, reductions, split reductions) and the gpu's
// (nvptx/grid_kernel_emitter.h and the other nvptx kernels). It walks the
// fused producers backwards through their index maps (this file's table:
// broadcast_in_dim, reshape, transpose, slice, reverse, concatenate, pad,
// dynamic_slice, dynamic_update_slice, iota, splat constants,
// bitcast_convert between widths) down to the kernel's inputs, and computes
// every other op with its ScalarEmitter (scalar_emitter.h: each scalar
// op's value, conversions, narrow floats, scalar regions). What the machine
// provides comes from the TargetMath (target_math.h) alone, so what a
// target can fuse (IsFusibleOp, IsEmittableReduce) is what this emitter can
// compute there: both answer from the same tables.
//
// The per-type semantics are exactly jit/eval's: integers wrap, integer
// division / remainder by zero and shifts by the width or more give XLA's
// answers, float -> int converts saturate (NaN -> 0), maximum / minimum
// propagate NaN and order -0 below +0, compare honours TOTALORDER.
// Transcendentals call libm names that LLVM maps to libmvec when it
// vectorizes. Element types: pred, 2..64-bit integers (i2 / i4 / ui2 / ui4
// wrap in their width, one per byte, no bitcast), f16, bf16, the 8-bit
// floats with a zero and a sign (f8E3M4, f8E4M3, f8E4M3FN, f8E4M3FNUZ,
// f8E4M3B11FNUZ, f8E5M2, f8E5M2FNUZ: computed in f32, read through a table,
// written by jit/ir's EncodeFloat; no bitcast, reduce_precision or
// TOTALORDER compare on them), f32, f64, and complex<f32> / complex<f64>
// for the ops jit/eval computes exactly (add, subtract, negate, select,
// real, imag, complex, convert, index maps; multiply, divide, abs and
// compare as jit/eval's long double code; transcendentals, sign, power,
// atan2 and remainder, and the real special functions lgamma / digamma /
// erf_inv / bessel_i1e / CHLO cosh / sinh, as calls of jit/eval's own
// per-element functions, see kernel_runtime.h); others are left to the
// caller's fallback. Converts into f16 / bf16 round once, as jit/eval
// does. bitcast_convert (also between widths: the narrow side's extra minor
// dimension holds the pieces) and reduce_precision work on storage bits,
// f16 / bf16 operands read as bits (see HalfBits). Dynamic start indices are
// read at run time and clamped as the spec says.
//
// Use: create the function, position the builder in its entry block, Bind
// the buffers there, then call the element methods wherever the schedule's
// loops need them (any block dominated by the entry). Values computed by one
// call are not reused by the next (each call may sit in another loop).
// One emitter per kernel and thread; it borrows the module, spec and target.
#ifndef JITD_JIT_CODEGEN_ELEMENTAL_EMITTER_H_
#define JITD_JIT_CODEGEN_ELEMENTAL_EMITTER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/codegen/scalar_emitter.h"
#include "jit/codegen/target_math.h"

namespace jitd::codegen {

// True when a kernel can compute `op`'s result element by element (the op
// kind, its attributes and every element type are handled) on the target
// whose math is `target`; without one, the host's.
bool IsFusibleOp(const ir::Op& op);
bool IsFusibleOp(const ir::Op& op, const TargetMath& target);
// True when `op` is a stablehlo.reduce whose body a kernel can emit (a
// scalar region, IsScalarBlock, in the result types).
bool IsEmittableReduce(const ir::Op& op);
bool IsEmittableReduce(const ir::Op& op, const TargetMath& target);
// Fusible ops that are worth recomputing in every consumer instead of
// materializing (splat constants, iota, broadcasts of scalars).
bool IsCheapToDuplicate(const ir::Op& op);
// The index maps of the table (iota, broadcast_in_dim, reshape, ...,
// dynamic_update_slice): ops whose value needs an index, not just operands.
bool IsIndexMap(ir::OpCode code);
// The ops the emitter has rules for: the index maps, splat constants and
// ScalarEmitter's table (for tests that walk every op it claims).
std::vector<ir::OpCode> ElementalOps();

class ElementalEmitter {
 public:
  ElementalEmitter(llvm::Module& module, const KernelSpec& spec, const TargetMath& target);
  ElementalEmitter(const ElementalEmitter&) = delete;
  ElementalEmitter& operator=(const ElementalEmitter&) = delete;

  Builder& builder() { return scalar_.builder(); }

  // The buffers of the function being built, as generic pointers:
  // `inputs` in KernelSpec::inputs order, `outputs` the root's results
  // then the extra outputs. Reads the 0-d inputs at the insert point.
  void Bind(llvm::Function* fn, const std::vector<llvm::Value*>& inputs, const std::vector<llvm::Value*>& outputs);

  // The row-major multi-index of `linear` in `dims` (empty for rank 0).
  std::vector<llvm::Value*> Delinearize(llvm::Value* linear, const std::vector<int64_t>& dims);

  // Elementwise root: computes element `linear` (row-major, i64) of the
  // root's result and of every extra output, and stores them. The second
  // form takes the multi-index too (a schedule's loop variables).
  void StoreElement(llvm::Value* linear);
  void StoreElement(const std::vector<llvm::Value*>& multi, llvm::Value* linear);

  // Reduce root (N results). The reduced elements of output `out_linear`
  // are numbered row-major over the reduced dimensions in ascending order,
  // [0, ReducedExtent()); the cpu schedule folds them in that order.
  int64_t ReducedExtent() const;
  // The N init values.
  std::vector<llvm::Value*> ReduceInits();
  // The N input elements at (out_linear, reduced); writes the extra
  // outputs at that input element too. ReduceInputsAt takes the input's
  // multi-index instead (a schedule's loop variables).
  std::vector<llvm::Value*> ReduceInputs(llvm::Value* out_linear, llvm::Value* reduced);
  std::vector<llvm::Value*> ReduceInputsAt(const std::vector<llvm::Value*>& input_multi);
  // The body: acc, x -> next accumulators (with the builder's fast-math
  // flags, which a schedule may set to reassociate).
  std::vector<llvm::Value*> ReduceCombine(const std::vector<llvm::Value*>& acc, const std::vector<llvm::Value*>& x);
  // Stores the N results of output `out_linear`.
  void StoreReduceResults(llvm::Value* out_linear, const std::vector<llvm::Value*>& acc);
  // A single-result reduce whose body is a known fold (jit/eval/fold.h) has
  // an identity; a schedule may then combine partial folds in any fixed
  // tree (sums and products of floats are then reassociated, as the cpu
  // device's long reductions are). nullopt otherwise, and for f16 / bf16
  // sums and products, which round at every step.
  std::optional<llvm::Value*> FoldIdentity();

  // Scalar pieces for schedules of ops that are not elementwise (scatter,
  // sort, windows): the element of type `t` at `offset` (elements) from
  // `ptr`, in its compute type; a store of one; a scalar region run on
  // `args` (IsScalarBlock), returning its results.
  llvm::Value* LoadAt(llvm::Value* ptr, ir::DType t, llvm::Value* offset) { return scalar_.Load(ptr, t, offset); }
  void StoreAt(llvm::Value* x, ir::DType t, llvm::Value* ptr, llvm::Value* offset) {
    scalar_.Store(x, t, ptr, offset);
  }
  std::vector<llvm::Value*> EmitScalarBlock(const ir::Block& block, const std::vector<llvm::Value*>& args) {
    return scalar_.EmitBlock(block, args);
  }

  // The element's LLVM type (complex: <2 x float / double>), and its
  // storage type in a buffer.
  llvm::Type* ComputeType(ir::DType t) { return scalar_.ComputeType(t); }
  llvm::Type* StorageType(ir::DType t) { return scalar_.StorageType(t); }

  // The first failure of any call above (it names the op), else OK.
  const Status& status() const { return scalar_.status(); }

 private:
  // A multi-index into a shape, with its row-major linear offset; either
  // part is computed from the other on demand.
  struct Index {
    std::vector<int64_t> dims;
    std::vector<llvm::Value*> multi;  // empty until known (rank > 0)
    llvm::Value* linear = nullptr;
  };
  // One index map's entry in the table of elemental_index_maps.cc: what it
  // supports, where it reads its operands, its value.
  struct MapRule {
    enum Kind : uint8_t {
      kConstant,  // a splat constant: no index
      kIndexMap,  // needs the index (iota, broadcast_in_dim, ... dynamic_update_slice)
      kBits,      // bitcast_convert: storage bits, pieces between widths
    };
    ir::OpCode code;
    Kind kind;
    bool (*supported)(const ir::Op& op, const TargetMath& target);
    // Where the op, computed at `idx`, reads operand `k` unconditionally
    // (OperandIndex), or null; unused without operands.
    Index* (ElementalEmitter::*operand)(const ir::Op& op, size_t k, Index* idx);
    // The op's value at `idx`.
    llvm::Value* (ElementalEmitter::*value)(const ir::Op& op, Index* idx);
    // It only moves its operands' elements: HalfBits walks it on bits.
    bool copies_elements;
    // Operand 0's index needs the other operands' values (start indices).
    bool starts_first;
  };
  static const MapRule* MapRules(size_t& count);  // the table
  static const MapRule* FindMapRule(ir::OpCode code);
  friend bool IsFusibleOp(const ir::Op& op, const TargetMath& target);
  friend bool IsIndexMap(ir::OpCode code);
  friend std::vector<ir::OpCode> ElementalOps();

  // Indices (elemental_emitter.cc).
  Index* NewIndex(std::vector<int64_t> dims);
  Index* ScalarIndex();
  void ClearValues();
  void ResetIndices();
  llvm::Value* Linear(Index& idx);
  const std::vector<llvm::Value*>& Multi(Index& idx);
  Index* ElementwiseOperandIndex(const ir::Op& op, size_t i, Index* idx);
  Index* OperandIndex(const ir::Op& op, size_t k, Index* idx);

  // Values (elemental_emitter.cc).
  llvm::Value* Load(const ir::Value* v, Index* idx);
  llvm::Value* Value(const ir::Value* v, Index* idx);
  void Prepare(const ir::Value* v, Index* idx);
  llvm::Value* Compute(const ir::Value* v, Index* idx);
  bool CountComputation();
  llvm::Value* EmitOp(const ir::Op& op, Index* idx);
  void StoreExtraOutputs(Index* idx, llvm::Value* offset);

  // The index maps' rules (elemental_index_maps.cc).
  Index* BroadcastOperand(const ir::Op& op, size_t k, Index* idx);
  Index* ReshapeOperand(const ir::Op& op, size_t k, Index* idx);
  Index* TransposeOperand(const ir::Op& op, size_t k, Index* idx);
  Index* SliceOperand(const ir::Op& op, size_t k, Index* idx);
  Index* ReverseOperand(const ir::Op& op, size_t k, Index* idx);
  Index* ConcatenateOperand(const ir::Op& op, size_t k, Index* idx);
  Index* DynamicSliceOperand(const ir::Op& op, size_t k, Index* idx);
  Index* DynamicUpdateSliceOperand(const ir::Op& op, size_t k, Index* idx);
  Index* PadOperand(const ir::Op& op, size_t k, Index* idx);
  Index* BitcastOperand(const ir::Op& op, size_t k, Index* idx);
  llvm::Value* EmitConstant(const ir::Op& op, Index* idx);
  llvm::Value* EmitIota(const ir::Op& op, Index* idx);
  llvm::Value* EmitOperand0(const ir::Op& op, Index* idx);
  llvm::Value* EmitConcatenate(const ir::Op& op, Index* idx);
  llvm::Value* EmitPad(const ir::Op& op, Index* idx);
  llvm::Value* EmitDynamicUpdateSlice(const ir::Op& op, Index* idx);
  llvm::Value* EmitBitcast(const ir::Op& op, Index* idx);
  std::vector<llvm::Value*> ClampedStarts(const ir::Op& op, size_t first, const std::vector<int64_t>& dims,
                                          const std::vector<int64_t>& sizes);
  llvm::Value* Guarded(llvm::Value* inside, llvm::Value* otherwise, const std::function<llvm::Value*()>& then);

  // Storage bits (elemental_index_maps.cc).
  llvm::Value* HalfBits(const ir::Value* v, Index* idx);
  llvm::Value* BitcastBits(const ir::Op& op, Index* idx);

  ScalarEmitter scalar_;
  Builder& b_;  // scalar_'s
  const KernelSpec& spec_;
  const TargetMath& target_;
  llvm::Function* function_ = nullptr;
  std::unordered_set<const ir::Op*> fused_;
  std::unordered_map<const ir::Value*, llvm::Value*> params_;
  std::unordered_map<const ir::Value*, llvm::Value*> preloaded_;  // 0-d inputs
  std::vector<llvm::Value*> outputs_;
  std::deque<Index> indices_;
  Index* scalar_index_ = nullptr;  // ScalarIndex, in indices_
  std::map<std::pair<const ir::Value*, const Index*>, llvm::Value*> cache_;
  // OperandIndex: (op, operand, index of op) -> index of the operand.
  std::map<std::tuple<const ir::Op*, size_t, const Index*>, Index*> derived_;
  // Set while HalfBits walks index maps: f16 / bf16 values are produced as
  // their i16 storage bits (never cached), see HalfBits.
  bool raw_half_ = false;
  int64_t computations_ = 0;  // CountComputation
};

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_ELEMENTAL_EMITTER_H_
