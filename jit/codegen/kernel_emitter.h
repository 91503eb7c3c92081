// jit/codegen: IR -> LLVM IR for fused loop kernels (the CPU device's
// KernelThunks; the NVPTX backend can share the element emission later).
//
// A kernel computes the results of one root op — an elementwise op (index
// maps such as broadcast_in_dim / reshape / transpose / slice / iota / pad /
// dynamic_slice / dynamic_update_slice included; dynamic start indices are
// read at run time and clamped as the spec says) or a reduce — together
// with the producers fused into it, reading
// every other value from a buffer. Its LLVM signature is
//
//   void NAME(void** buffers, int64_t begin, int64_t end)
//
// where buffers[i] is input i (KernelSpec::inputs order) followed by one
// output per root result, and [begin, end) is a range of work items
// (KernelInfo::work_items in all) that may run on different threads.
//
// The per-type semantics are exactly jit/eval's: integers wrap, integer
// division / remainder by zero and shifts by the width or more give XLA's
// answers, float -> int converts saturate (NaN -> 0), maximum / minimum
// propagate NaN and order -0 below +0, compare honours TOTALORDER.
// Transcendentals call libm names that LLVM maps to libmvec when it
// vectorizes. Element types: pred, 8..64-bit integers, f16, bf16, f32, f64,
// and complex<f32> / complex<f64> for the ops jit/eval computes exactly
// (add, subtract, negate, select, real, imag, complex, convert, index maps;
// multiply, divide, abs and compare as jit/eval's long double code);
// others are left to the caller's fallback. Converts into f16 / bf16 round
// once, as jit/eval does.
#ifndef JITD_JIT_CODEGEN_KERNEL_EMITTER_H_
#define JITD_JIT_CODEGEN_KERNEL_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// True when a fused kernel can compute `op`'s result element by element
// (the op kind, its attributes and every element type are handled).
bool IsFusibleOp(const ir::Op& op);
// True when `op` is a stablehlo.reduce whose body a kernel can emit.
bool IsEmittableReduce(const ir::Op& op);
// Fusible ops that are worth recomputing in every consumer instead of
// materializing (splat constants, iota, broadcasts of scalars).
bool IsCheapToDuplicate(const ir::Op& op);

struct KernelSpec {
  std::string name;                       // the LLVM symbol
  const ir::Op* root = nullptr;           // elementwise op or reduce
  std::vector<const ir::Op*> fused;       // ops computed inside, root included
  std::vector<const ir::Value*> inputs;   // values read from buffers
};

struct KernelInfo {
  int64_t work_items = 0;      // the kernel's [begin, end) covers [0, work_items)
  int64_t bytes_per_item = 0;  // rough memory traffic per item (for splitting)
  bool reassociates = false;   // float reduction vectorized with partial sums
};

// A structural key: two specs with equal keys compute the same function of
// their inputs (same ops, types, attributes and wiring), so one emitted
// kernel serves both (repeated layers of a model share their kernels).
std::string KernelKey(const KernelSpec& spec);

// Appends the kernel's function to `module` (which must have the target's
// data layout set). Errors name the op codegen could not handle.
StatusOr<KernelInfo> EmitKernel(llvm::Module& module, const KernelSpec& spec);

// Reductions at least this long over floats are vectorized with partial
// sums (the spec leaves the order open; shorter ones keep the interpreter's
// left-to-right order bit for bit).
inline constexpr int64_t kReassociateMinExtent = 1024;

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_EMITTER_H_
