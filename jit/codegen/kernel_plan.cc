#include "jit/codegen/kernel_plan.h"

#include <algorithm>
#include <vector>

#include "jit/eval/fold.h"

namespace jitd::codegen {

std::string_view GridKindName(GridKind kind) {
  switch (kind) {
    case GridKind::kFlat: return "flat";
    case GridKind::kBlockReduce: return "block_reduce";
    case GridKind::kThreadReduce: return "thread_reduce";
  }
  return "?";
}

namespace {

bool IsHalfFloat(ir::DType t) {
  return ir::IsFloat(t) && ir::BitWidth(t) < 32;
}

// Whether the reduce combines in a tree (ElementalEmitter::FoldIdentity's
// conditions): one result, a recognized fold, not complex, not an f16 /
// bf16 sum or product.
bool HasTreeFold(const ir::Op& root) {
  if (root.num_results() != 1) return false;
  const ir::DType t = root.result(0)->type().dtype();
  if (ir::IsComplex(t)) return false;
  const std::optional<eval::FoldOp> fold = eval::RecognizeFold(root, 0, t);
  if (!fold) return false;
  const bool sum_or_product = *fold == eval::FoldOp::kAdd || *fold == eval::FoldOp::kMultiply;
  return !(IsHalfFloat(t) && sum_or_product);
}

int64_t Blocks(int64_t items, int64_t per_block, int64_t max_blocks) {
  return std::clamp<int64_t>((items + per_block - 1) / per_block, 1, max_blocks);
}

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The kFlat vector width (kernel_plan.h). Every element the kernel writes
// sits at the root's linear index (extra outputs included), so the stores
// of V neighbours are contiguous; inputs read through other index maps
// (transpose, broadcast, slices) stay correct element by element and just
// do not merge. The widest element bounds V so that V of them fit in the
// buffers' guaranteed alignment.
int64_t FlatVectorWidth(const KernelSpec& spec, int64_t work_items, const GridLimits& limits) {
  if (work_items < limits.vector_min_items || KernelOps(spec) > static_cast<size_t>(limits.vector_max_ops)) {
    return 1;
  }
  int64_t widest = 1;
  auto widen = [&](const ir::Value* v) {
    if (v->type().is_tensor()) widest = std::max<int64_t>(widest, ir::StorageBytes(v->type().dtype()));
  };
  for (size_t r = 0; r < spec.root->num_results(); ++r) widen(spec.root->result(r));
  for (const ir::Value* v : spec.extra_outputs) widen(v);
  for (const ir::Value* v : spec.inputs) {
    if (v->type().rank() > 0) widen(v);  // 0-d inputs are read once, before the loops
  }
  int64_t width = 1;
  while (width * 2 <= limits.max_vector_width && width * 2 * widest <= limits.buffer_alignment) width *= 2;
  return width;
}

}  // namespace

StatusOr<GridPlan> PlanGridKernel(const KernelSpec& spec, const GridLimits& limits) {
  if (limits.warp_size <= 0 || limits.block_threads <= 0 || limits.block_threads % limits.warp_size != 0 ||
      limits.block_threads / limits.warp_size > limits.warp_size || limits.max_blocks <= 0) {
    return InvalidArgument("grid limits: block_threads " + std::to_string(limits.block_threads) +
                           " must be a positive multiple of the warp size " + std::to_string(limits.warp_size) +
                           ", at most warp_size^2 threads, and max_blocks positive");
  }
  if (!IsPowerOfTwo(limits.buffer_alignment) || !IsPowerOfTwo(limits.max_vector_width)) {
    return InvalidArgument("grid limits: buffer_alignment " + std::to_string(limits.buffer_alignment) +
                           " and max_vector_width " + std::to_string(limits.max_vector_width) +
                           " must be powers of two");
  }
  if (!spec.root) return InvalidArgument("kernel '" + spec.name + "' has no root op");
  const ir::Op& root = *spec.root;
  GridPlan plan;
  if (root.code() != ir::OpCode::kReduce) {
    plan.kind = GridKind::kFlat;
    plan.work_items = root.result(0)->type().num_elements();
    plan.vector_width = FlatVectorWidth(spec, plan.work_items, limits);
    plan.block = limits.block_threads;
    const int64_t threads = (plan.work_items + plan.vector_width - 1) / plan.vector_width;
    plan.grid = Blocks(threads, plan.block, limits.max_blocks);
    return plan;
  }
  const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
  plan.extent = 1;
  for (int64_t d : root.GetI64Array("dimensions").value_or(std::vector<int64_t>{})) {
    if (d < 0 || static_cast<size_t>(d) >= in_dims.size()) {
      return InvalidArgument(root.loc().ToString() + ": 'stablehlo.reduce' dimension " + std::to_string(d) +
                             " out of range for its rank-" + std::to_string(in_dims.size()) + " operand");
    }
    plan.extent *= in_dims[static_cast<size_t>(d)];
  }
  plan.work_items = root.result(0)->type().num_elements();
  if (HasTreeFold(root) && plan.extent >= limits.block_reduce_min_extent) {
    plan.kind = GridKind::kBlockReduce;
    plan.block = limits.block_threads;
    plan.grid = std::clamp<int64_t>(plan.work_items, 1, limits.max_blocks);
    // One 8-byte slot per warp: the warps' partials.
    plan.shared_bytes = 8 * (limits.block_threads / limits.warp_size);
    if (plan.shared_bytes > limits.max_shared_bytes) {
      return InvalidArgument("grid limits: " + std::to_string(plan.shared_bytes) +
                             " bytes of shared memory above the limit of " +
                             std::to_string(limits.max_shared_bytes));
    }
    // Few outputs, long rows: chunks of each row to blocks of their own.
    if (spec.extra_outputs.empty() && limits.split_min_chunk > 0 && plan.work_items > 0 &&
        plan.work_items < limits.split_target_blocks) {
      const int64_t wanted = (limits.split_target_blocks + plan.work_items - 1) / plan.work_items;
      const int64_t split = std::min(wanted, plan.extent / limits.split_min_chunk);
      if (split >= 2) {
        plan.split = split;
        plan.chunk = (plan.extent + split - 1) / split;
        plan.combine_grid = plan.grid;
        plan.grid = std::clamp<int64_t>(plan.work_items * split, 1, limits.max_blocks);
      }
    }
    return plan;
  }
  plan.kind = GridKind::kThreadReduce;
  // Fewer threads per block for few outputs: a block of 256 threads for
  // 3 outputs would be 253 idle threads.
  plan.block = std::min<int64_t>(limits.block_threads,
                                 std::max<int64_t>(limits.warp_size, (plan.work_items + limits.warp_size - 1) /
                                                                         limits.warp_size * limits.warp_size));
  plan.grid = Blocks(plan.work_items, plan.block, limits.max_blocks);
  return plan;
}

}  // namespace jitd::codegen
