// The entry function of a PTX kernel, as every NVPTX emitter writes it:
// declared with its parameter attributes and listed in nvvm.annotations
// together, and on an error taken out of the module together, so that a
// failed emission leaves nothing of the kernel behind. And the grid-stride
// loop most of those kernels run their work items in.
#ifndef JITD_JIT_CODEGEN_NVPTX_KERNEL_FUNCTION_H_
#define JITD_JIT_CODEGEN_NVPTX_KERNEL_FUNCTION_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "jit/ir/module.h"

namespace llvm {
class BasicBlock;
class Function;
class IRBuilderBase;
class Module;
class PHINode;
class Value;
}  // namespace llvm

namespace jitd::codegen {

// Parameters [begin, end) of a kernel.
struct ParamRange {
  size_t begin = 0;
  size_t end = 0;
};

// Declares `ptx_kernel void name(ptr addrspace(1) noalias p0, ...)` in
// `module` (no body yet): `num_params` global-memory pointers, those in
// `read_only` also readonly, every one `align alignment` when alignment > 1
// (what lets the backend prove vector accesses aligned). The kernel is
// listed in nvvm.annotations, the form every NVPTX consumer reads.
llvm::Function* DeclareKernel(llvm::Module& module, std::string_view name, size_t num_params,
                              ParamRange read_only, int64_t alignment = 1);

// Takes `fn` out of `module` with every nvvm.annotations entry naming it.
void EraseKernel(llvm::Module& module, llvm::Function* fn);

// Ends a kernel's emission: `status` (what the element emitter found), or
// else what llvm::verifyFunction finds wrong with `fn`, as an INTERNAL
// error naming `op` and where it is. On any error the kernel is erased
// (EraseKernel).
Status FinishKernel(llvm::Module& module, llvm::Function* fn, Status status, const ir::Op& op);

// This thread's first work item and the stride between its items (i64):
// blockIdx.x * block + threadIdx.x and gridDim.x * block, for blocks of
// `block` threads.
struct GridStride {
  llvm::Value* first = nullptr;
  llvm::Value* step = nullptr;
};
GridStride ThreadGridStride(llvm::IRBuilderBase& b, int64_t block);

// for (index = first; index < count; index += step) { ... } in `fn`, from
// the builder's insert block: BeginGridStrideLoop leaves the builder in the
// loop's body (a block named `body_name`); EndGridStrideLoop closes the
// body where the builder is and leaves it after the loop.
struct GridStrideLoop {
  llvm::PHINode* index = nullptr;  // i64
  llvm::Value* step = nullptr;
  llvm::BasicBlock* header = nullptr;
  llvm::BasicBlock* done = nullptr;
};
GridStrideLoop BeginGridStrideLoop(llvm::IRBuilderBase& b, llvm::Function* fn, int64_t block,
                                   int64_t count, std::string_view body_name);
void EndGridStrideLoop(llvm::IRBuilderBase& b, const GridStrideLoop& loop);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_KERNEL_FUNCTION_H_
