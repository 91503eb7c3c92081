// Kernel plans for the gpu schedule: how a kernel's work maps onto a grid
// of thread blocks, computed from the KernelSpec and the target's limits
// alone (no LLVM), so a compiler knows a kernel's launch before (or
// without) emitting it, and a loader of cached code gets it without
// emitting anything.
//
//   kFlat         elementwise root, grid-stride over the result elements.
//                 With vector_width V = 1: element i is computed by the
//                 thread whose global id is i mod (grid * block). With V > 1
//                 (FlatVectorEnd): thread t computes the V consecutive
//                 elements i .. i + V - 1 for i = V * t, V * (t + T), ...
//                 below FlatVectorEnd (T = grid * block threads), then the
//                 few elements past it (work_items mod V) one each, element
//                 FlatVectorEnd + k by thread k. Each element's value does
//                 not depend on the split; the V neighbours' loads and
//                 stores fall on consecutive, V-element-aligned addresses,
//                 which the backend merges into vector accesses (128 bits
//                 for f32 x 4).
//   kBlockReduce  a reduce with a known fold (ElementalEmitter::FoldIdentity)
//                 and a long reduced extent: a block per output (block-
//                 stride over outputs); thread t folds reduced elements
//                 t, t + block, ... from the fold's identity; the block's
//                 partials are combined by a fixed tree (warp shuffles
//                 down by 16, 8, 4, 2, 1, each warp's result to shared
//                 memory, the first warp combines those the same way), then
//                 the init is folded in last. The order depends on the
//                 shape and the block size only: the same bits every run.
//                 Few outputs over a long extent (a sum of a whole tensor
//                 to a scalar) are split: with `split` S > 1, a first
//                 kernel gives each (output, chunk) pair a block, which
//                 folds the chunk's `chunk` reduced elements as above and
//                 writes the partial (no init) to a scratch buffer of
//                 work_items x S elements; a second (the `_combine`
//                 kernel, `combine_grid` blocks) folds each output's S
//                 partials in the same block tree, then the init. So the
//                 whole GPU reads the input, not one SM, and the order is
//                 still fixed by the shape.
//   kThreadReduce every other reduce: a thread per output folds its reduced
//                 elements in row-major order from the init, the order of
//                 the cpu device and the interpreter (bit for bit).
#ifndef JITD_JIT_CODEGEN_KERNEL_PLAN_H_
#define JITD_JIT_CODEGEN_KERNEL_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "jit/codegen/kernel_emitter.h"

namespace jitd::codegen {

// What a gpu target allows (defaults: every NVIDIA GPU since sm_50).
struct GridLimits {
  int64_t block_threads = 256;  // threads per block (a multiple of the warp size)
  int64_t warp_size = 32;
  int64_t max_blocks = int64_t{1} << 16;  // grid-stride loops past this
  int64_t max_shared_bytes = 48 * 1024;   // static shared memory per block
  // Reductions whose reduced extent is at least this use kBlockReduce.
  int64_t block_reduce_min_extent = 256;
  // kBlockReduce with fewer outputs than split_target_blocks splits each
  // output's extent into chunks of at least split_min_chunk elements, so
  // that about split_target_blocks blocks share the work (a split of 1
  // when the extent is too short for two chunks).
  int64_t split_target_blocks = 1024;
  int64_t split_min_chunk = 8192;
  // Every buffer the caller passes a kernel starts at a multiple of this
  // many bytes (a power of two; the kernels' pointer parameters are
  // declared so). 16 holds on the cuda device: its buffers are memory-pool
  // allocations and arena offsets in multiples of 256 bytes (and
  // CudaAllocator checks each allocation). 1: only aligned to the element,
  // and no kFlat vectorization.
  int64_t buffer_alignment = 16;
  // kFlat vectorization: at most this many elements per thread and
  // iteration (a power of two; the element math is unrolled that often),
  // only for results of at least vector_min_items elements (smaller ones
  // keep a thread per element: more threads, and launch latency dominates
  // anyway) and kernels of at most vector_max_ops ops (KernelOps; the
  // unrolled body grows with both).
  int64_t max_vector_width = 4;
  int64_t vector_min_items = int64_t{1} << 14;
  int64_t vector_max_ops = 64;
};

enum class GridKind { kFlat, kBlockReduce, kThreadReduce };

std::string_view GridKindName(GridKind kind);

struct GridPlan {
  GridKind kind = GridKind::kFlat;
  int64_t work_items = 0;    // kFlat: result elements; reductions: outputs
  int64_t extent = 0;        // reductions: reduced elements per output
  int64_t grid = 1;          // blocks (x); at least 1
  int64_t block = 1;         // threads per block (x)
  int64_t shared_bytes = 0;  // static shared memory per block
  // kFlat: consecutive elements per thread and iteration (a power of two;
  // vector_width * the widest element's bytes <= GridLimits::
  // buffer_alignment); 1 for the other kinds.
  int64_t vector_width = 1;
  // kBlockReduce: chunks per output (1: one kernel; above 1: the partials
  // kernel, grid blocks over work_items x split (output, chunk) pairs, then
  // the combine kernel over combine_grid blocks), reduced elements per
  // chunk (the last may be shorter), and the scratch partials' element
  // count (work_items x split).
  int64_t split = 1;
  int64_t chunk = 0;
  int64_t combine_grid = 0;
};

// The scratch partials of a split kBlockReduce plan (0 when not split).
inline int64_t SplitPartials(const GridPlan& plan) { return plan.split > 1 ? plan.work_items * plan.split : 0; }

// kFlat: where the vector loop's elements end and the scalar tail's begin
// (work_items rounded down to a multiple of vector_width).
inline int64_t FlatVectorEnd(const GridPlan& plan) {
  return plan.work_items - plan.work_items % plan.vector_width;
}

// The plan of `spec` (its root an elementwise op or a reduce). A kFlat
// plan's vector_width is the largest power of two up to max_vector_width
// with vector_width * (the widest element, in bytes, the kernel reads from
// a buffer or writes) <= buffer_alignment, or 1 below vector_min_items or
// above vector_max_ops; its grid covers work_items / vector_width threads.
// Errors: INVALID_ARGUMENT for limits that cannot hold a plan.
StatusOr<GridPlan> PlanGridKernel(const KernelSpec& spec, const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_PLAN_H_
