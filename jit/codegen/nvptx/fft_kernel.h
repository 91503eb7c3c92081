// stablehlo.fft on NVPTX, one transform axis (fft_length of one value):
// a flat grid-stride kernel with a thread per result element computing
// the direct sum X[k] = sum_j x[j] exp(sign 2 pi i j k / n) over its line in
// double, j ascending (the interpreter's order for n <= 64; it uses radix-2
// or Bluestein above), IFFT / IRFFT scaled by 1/n after the sum, IRFFT's
// line the Hermitian extension of its n/2 + 1 inputs as the interpreter
// builds it. Twiddles from libdevice's sinpi / cospi of 2 (jk mod n) / n.
// Not the interpreter's bits (it sums in long double): within a few ulps
// of the line's magnitude (docs/ARCHITECTURE.md 13b). O(n) per element.
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias operand, result)
#ifndef JITD_JIT_CODEGEN_NVPTX_FFT_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_FFT_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitFftKernel handles `op`: one transform axis (the last), f32 /
// f64 / complex element types, shapes that match the fft type.
bool IsNvptxEmittableFft(const ir::Op& op);

StatusOr<GridPlan> EmitFftKernel(llvm::Module& module, const ir::Op& fft, const std::string& name,
                                 const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_FFT_KERNEL_H_
