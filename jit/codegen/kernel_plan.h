// Kernel plans: how a kernel's work maps onto the machine, computed from
// the KernelSpec (and, for the gpu, the target's limits) alone — no LLVM —
// so a compiler knows a kernel's shape before (or without) emitting it and
// a schedule emits exactly what its plan says. Two targets, side by side:
//
// The gpu (PlanGridKernel, GridPlan; emitted by nvptx/grid_kernel_emitter.h):
// a grid of thread blocks.
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
#include <vector>

#include "base/status.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/eval/fold.h"

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

// ---- The cpu -------------------------------------------------------------------------
//
// PlanCpuKernel, CpuKernelPlan; emitted by cpu/cpu_kernel_emitter.h as
// `void NAME(void** buffers, int64_t begin, int64_t end)` over a range
// [begin, end) of work items that the device's thread pool splits:
//
//   kFlat           elementwise root whose every access is at the result's
//                   own linear offset (or rank <= 1): item i = element i.
//                   Outputs of kStreamStoreMinBytes or more stream their
//                   stores (stream_stores).
//   kRows           other elementwise roots: item r = row r of the result
//                   (all dimensions but the last), an inner loop over the
//                   row_length elements of the last one.
//   kTiledTranspose kRows where a fused transpose moves the result's last
//                   dimension: item b = `tile` rows, in tiles of `tile`
//                   columns, so the operand's lines stay in cache.
//   kReduce         a reduce: item o = output o, nested loops over the
//                   reduced dimensions in ascending order (the
//                   interpreter's order), reassociated (vectorized partial
//                   sums) for float sums and products of kReassociateMinExtent
//                   elements or more.
//   kSplitReduce    a long reduce with few outputs, in two phases, see
//                   kSplitChunkElements.

// Reductions at least this long over floats are vectorized with partial
// sums (the spec leaves the order open; shorter ones keep the interpreter's
// left-to-right order bit for bit).
inline constexpr int64_t kReassociateMinExtent = 1024;

// Split reductions: a single-result reduce whose body jit/eval/fold.h's
// RecognizeFold accepts, with at most kSplitMaxOutputs outputs and a reduced
// extent of at least 2 * kSplitChunkElements, is cut into chunks of about
// kSplitChunkElements reduced elements (by shape only, so the result never
// depends on the thread count). Integer / pred folds and float maximum /
// minimum give exactly the interpreter's result; f32 / f64 sums and products
// are reassociated (chunk partials in ascending chunk order), as every long
// float reduction already is. f16 / bf16 sums and products are not split.
// The kernel then takes one more buffer after its outputs, partial_bytes of
// scratch. Phase 1, NAME over [0, work_items): item c * outputs + o folds
// chunk c of output o's reduced elements (from the fold's identity) into
// partial[item]. Phase 2, NAME_combine (CombineSymbol) over [0,
// combine_items = outputs): out[o] = init, then folded with partial[c *
// outputs + o] for ascending c.
inline constexpr int64_t kSplitChunkElements = int64_t{1} << 15;
inline constexpr int64_t kSplitMaxOutputs = 64;

// Streaming stores: a kFlat kernel whose output is at least this big (far
// past the per-core L2) writes it with non-temporal vector stores, which
// skip the read-for-ownership of every output line (STREAM triad here:
// 15.5 -> 10.6 ms over 16M f32), see cpu/cpu_kernel_emitter.h.
inline constexpr int64_t kStreamStoreMinBytes = int64_t{8} << 20;

// The thread split: a kernel moving fewer bytes than this runs on the
// calling thread; bigger ones are split into chunks of at least this much
// traffic (min_chunk items).
inline constexpr int64_t kMinParallelBytes = int64_t{1} << 20;

// The vector width the cpu loops ask LLVM's loop vectorizer for
// ("prefer-vector-width"; it picks the element count).
inline constexpr int64_t kCpuVectorBits = 512;

enum class CpuKernelKind { kFlat, kRows, kTiledTranspose, kReduce, kSplitReduce };

std::string_view CpuKernelKindName(CpuKernelKind kind);

struct CpuKernelPlan {
  CpuKernelKind kind = CpuKernelKind::kFlat;
  int64_t work_items = 0;      // the kernel's [begin, end) covers [0, work_items)
  int64_t bytes_per_item = 0;  // rough memory traffic per item
  int64_t min_chunk = 1;       // the thread split: items per parallel chunk, at least
  int64_t vector_bits = kCpuVectorBits;
  bool stream_stores = false;  // kFlat
  // kRows / kTiledTranspose: the result's rows (all dimensions but the
  // last) and the last dimension; kTiledTranspose's square tiles.
  int64_t rows = 0;
  int64_t row_length = 0;
  int64_t tile = 0;
  // Reductions: reduced elements per output, the reduced dimensions
  // (ascending), and whether float steps are reassociated.
  int64_t extent = 0;
  std::vector<int64_t> reduced_dims;
  bool reassociates = false;
  // kSplitReduce (see kSplitChunkElements): a chunk is one index of the
  // reduced dimensions before reduced_dims[split_level], a block of
  // split_block indices of that one (split_blocks of them), and all of the
  // reduced dimensions after it (split_inner elements). split_chunks per
  // output (0 when not split), combine_items = outputs.
  eval::FoldOp fold = eval::FoldOp::kAdd;
  size_t split_level = 0;
  int64_t split_block = 1;
  int64_t split_blocks = 1;
  int64_t split_inner = 1;
  int64_t split_chunks = 0;
  int64_t partial_bytes = 0;
  int64_t combine_items = 0;
  int64_t combine_min_chunk = 1;
};

// The plan of `spec` (its root an elementwise op or a reduce). Errors:
// INVALID_ARGUMENT for a spec without a root, of more than kMaxKernelOps
// ops, or a reduce dimension out of range.
StatusOr<CpuKernelPlan> PlanCpuKernel(const KernelSpec& spec);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_PLAN_H_
