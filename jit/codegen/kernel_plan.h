// Kernel plans for the gpu schedule: how a kernel's work maps onto a grid
// of thread blocks, computed from the KernelSpec and the target's limits
// alone (no LLVM), so a compiler knows a kernel's launch before (or
// without) emitting it, and a loader of cached code gets it without
// emitting anything.
//
//   kFlat         elementwise root: a guarded thread per result element,
//                 grid-stride: element i is computed by the thread whose
//                 global id is i mod (grid * block).
//   kBlockReduce  a reduce with a known fold (ElementalEmitter::FoldIdentity)
//                 and a long reduced extent: a block per output (block-
//                 stride over outputs); thread t folds reduced elements
//                 t, t + block, ... from the fold's identity; the block's
//                 partials are combined by a fixed tree (warp shuffles
//                 down by 16, 8, 4, 2, 1, each warp's result to shared
//                 memory, the first warp combines those the same way), then
//                 the init is folded in last. The order depends on the
//                 shape and the block size only: the same bits every run.
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
};

// The plan of `spec` (its root an elementwise op or a reduce). Errors:
// INVALID_ARGUMENT for limits that cannot hold a plan.
StatusOr<GridPlan> PlanGridKernel(const KernelSpec& spec, const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_PLAN_H_
