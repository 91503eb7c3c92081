// ElementalEmitter: the target-neutral half of kernel emission — "the value
// of the kernel's root (and of its extra outputs) at an index" — for a
// schedule that owns the functions and the loops. The cpu schedule is
// kernel_emitter.cc's EmitKernel (its loop kinds: flat, rows, tiled
// transpose, reductions, split reductions); the gpu schedule is
// nvptx/grid_kernel_emitter.h (a thread per element, a block per reduction
// output). Both compute exactly jit/eval's semantics through the same code;
// what the machine provides comes from the TargetMath.
//
// Use: create the function, position the builder in its entry block, Bind
// the buffers there, then call the element methods wherever the schedule's
// loops need them (any block dominated by the entry). Values computed by one
// call are not reused by the next (each call may sit in another loop).
// One emitter per kernel and thread; it borrows the module, spec and target.
#ifndef JITD_JIT_CODEGEN_ELEMENTAL_EMITTER_H_
#define JITD_JIT_CODEGEN_ELEMENTAL_EMITTER_H_

#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "jit/codegen/kernel_emitter.h"
#include "jit/codegen/target_math.h"

namespace jitd::codegen {

class ElementalEmitter {
 public:
  virtual ~ElementalEmitter() = default;

  virtual Builder& builder() = 0;

  // The buffers of the function being built, as generic pointers:
  // `inputs` in KernelSpec::inputs order, `outputs` the root's results
  // then the extra outputs. Reads the 0-d inputs at the insert point.
  virtual void Bind(llvm::Function* fn, const std::vector<llvm::Value*>& inputs,
                    const std::vector<llvm::Value*>& outputs) = 0;

  // Elementwise root: computes element `linear` (row-major, i64) of the
  // root's result and of every extra output, and stores them.
  virtual void StoreElement(llvm::Value* linear) = 0;

  // Reduce root (N results). The reduced elements of output `out_linear`
  // are numbered row-major over the reduced dimensions in ascending order,
  // [0, ReducedExtent()); the cpu schedule folds them in that order.
  virtual int64_t ReducedExtent() const = 0;
  // The N init values.
  virtual std::vector<llvm::Value*> ReduceInits() = 0;
  // The N input elements at (out_linear, reduced); writes the extra
  // outputs at that input element too.
  virtual std::vector<llvm::Value*> ReduceInputs(llvm::Value* out_linear, llvm::Value* reduced) = 0;
  // The body: acc, x -> next accumulators.
  virtual std::vector<llvm::Value*> ReduceCombine(const std::vector<llvm::Value*>& acc,
                                                  const std::vector<llvm::Value*>& x) = 0;
  // Stores the N results of output `out_linear`.
  virtual void StoreReduceResults(llvm::Value* out_linear, const std::vector<llvm::Value*>& acc) = 0;
  // A single-result reduce whose body is a known fold (jit/eval/fold.h) has
  // an identity; a schedule may then combine partial folds in any fixed
  // tree (sums and products of floats are then reassociated, as the cpu
  // device's long reductions are). nullopt otherwise, and for f16 / bf16
  // sums and products, which round at every step.
  virtual std::optional<llvm::Value*> FoldIdentity() = 0;

  // Scalar pieces for schedules of ops that are not elementwise (scatter):
  // the element of type `t` at `offset` (elements) from `ptr`, in its
  // compute type; a store of one; a region block run on scalars (its
  // arguments `args`, every value it uses defined inside it), returning
  // its results.
  virtual llvm::Value* LoadAt(llvm::Value* ptr, ir::DType t, llvm::Value* offset) = 0;
  virtual void StoreAt(llvm::Value* x, ir::DType t, llvm::Value* ptr, llvm::Value* offset) = 0;
  virtual std::vector<llvm::Value*> EmitScalarBlock(const ir::Block& block, const std::vector<llvm::Value*>& args) = 0;

  // The element's LLVM type (complex: <2 x float / double>).
  virtual llvm::Type* ComputeType(ir::DType t) = 0;

  // The first failure of any call above (it names the op), else OK.
  virtual Status status() const = 0;
};

std::unique_ptr<ElementalEmitter> CreateElementalEmitter(llvm::Module& module, const KernelSpec& spec,
                                                         const TargetMath& target);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_ELEMENTAL_EMITTER_H_
