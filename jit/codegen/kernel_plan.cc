#include "jit/codegen/kernel_plan.h"

#include <algorithm>
#include <vector>

#include "jit/codegen/internal/element_types.h"
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

// ---- The cpu ---------------------------------------------------------------------

std::string_view CpuKernelKindName(CpuKernelKind kind) {
  switch (kind) {
    case CpuKernelKind::kFlat: return "flat";
    case CpuKernelKind::kRows: return "rows";
    case CpuKernelKind::kTiledTranspose: return "tiled_transpose";
    case CpuKernelKind::kReduce: return "reduce";
    case CpuKernelKind::kSplitReduce: return "split_reduce";
  }
  return "?";
}

namespace {

using internal::IsCplx;
using internal::IsF;
using internal::IsHalf;

// Bytes an element of the kernel's iteration space reads (inputs of more
// than one element) and writes.
int64_t CpuBytesPerElement(const KernelSpec& spec) {
  int64_t bytes = 0;
  for (const ir::Value* v : spec.inputs) {
    if (v->type().num_elements() > 1) bytes += ir::StorageBytes(v->type().dtype());
  }
  for (size_t i = 0; i < spec.root->num_results(); ++i) {
    bytes += ir::StorageBytes(spec.root->result(i)->type().dtype());
  }
  for (const ir::Value* v : spec.extra_outputs) bytes += ir::StorageBytes(v->type().dtype());
  return bytes;
}

// True when every fused op reads its operands at the result's own linear
// offset (elementwise ops, reshapes, scalar broadcasts): one flat loop.
bool IsLinear(const KernelSpec& spec) {
  using ir::OpCode;
  for (const ir::Op* op : spec.fused) {
    switch (op->code()) {
      case OpCode::kIota:
      case OpCode::kTranspose:
      case OpCode::kSlice:
      case OpCode::kReverse:
      case OpCode::kConcatenate:
      case OpCode::kPad:
      case OpCode::kDynamicSlice:
      case OpCode::kDynamicUpdateSlice:
        return false;
      case OpCode::kBitcastConvert:
        if (op->operand(0)->type().rank() != op->result(0)->type().rank()) return false;
        break;
      case OpCode::kBroadcastInDim: {
        if (op->operand(0)->type().num_elements() == 1) break;
        if (op->operand(0)->type().dims() != op->result(0)->type().dims()) return false;
        const auto bdims = op->GetI64Array("broadcast_dimensions").value_or(std::vector<int64_t>{});
        for (size_t k = 0; k < bdims.size(); ++k) {
          if (bdims[k] != static_cast<int64_t>(k)) return false;
        }
        break;
      }
      default:
        break;
    }
  }
  return true;
}

// A fused transpose moves the result's last dimension away from the
// operand's last one: the inner loop would stride through memory.
bool TransposesLastDim(const KernelSpec& spec) {
  for (const ir::Op* op : spec.fused) {
    if (op->code() != ir::OpCode::kTranspose) continue;
    const auto perm = op->GetI64Array("permutation").value_or(std::vector<int64_t>{});
    if (!perm.empty() && perm.back() != static_cast<int64_t>(perm.size()) - 1 &&
        op->result(0)->type().dims().back() > 1) {
      return true;
    }
  }
  return false;
}

// Streaming stores (kStreamStoreMinBytes): real element types only, one output.
bool StreamsStores(const KernelSpec& spec, const ir::Type& type) {
  const ir::DType t = type.dtype();
  return spec.root->num_results() == 1 && !IsCplx(t) && t != ir::DType::kPred &&
         type.num_elements() * ir::StorageBytes(t) >= kStreamStoreMinBytes;
}

// The split of a reduce (kSplitChunkElements), into `plan`; false when it
// is not split. A chunk is one index of the reduced dimensions before
// `level`, a block of `level`, and all of the reduced dimensions after it:
// the innermost `level` whose suffix of reduced dimensions holds
// kSplitChunkElements. Depends on the shape only.
bool PlanSplit(const KernelSpec& spec, CpuKernelPlan& plan) {
  const ir::Op& root = *spec.root;
  if (root.num_results() != 1) return false;
  const ir::DType t = root.result(0)->type().dtype();
  const std::optional<eval::FoldOp> fold = eval::RecognizeFold(root, 0, t);
  if (!fold) return false;
  const bool sum_or_product = *fold == eval::FoldOp::kAdd || *fold == eval::FoldOp::kMultiply;
  if (IsHalf(t) && sum_or_product) return false;  // rounded per step: not reassociated
  if (IsCplx(t)) return false;                     // no complex identities / partials
  const int64_t outputs = root.result(0)->type().num_elements();
  if (outputs < 1 || outputs > kSplitMaxOutputs) return false;
  const std::vector<int64_t>& red = plan.reduced_dims;
  if (red.empty() || plan.extent < 2 * kSplitChunkElements) return false;
  const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
  auto size = [&](size_t level) { return in_dims[static_cast<size_t>(red[level])]; };
  size_t level = red.size() - 1;
  int64_t inner = 1;
  while (level > 0 && inner * size(level) < kSplitChunkElements) {
    inner *= size(level);
    --level;
  }
  const int64_t block = std::min(size(level), (kSplitChunkElements + inner - 1) / inner);
  const int64_t blocks = (size(level) + block - 1) / block;
  int64_t chunks = blocks;
  for (size_t l = 0; l < level; ++l) chunks *= size(l);
  if (chunks < 2) return false;
  plan.kind = CpuKernelKind::kSplitReduce;
  plan.fold = *fold;
  plan.split_level = level;
  plan.split_block = block;
  plan.split_blocks = blocks;
  plan.split_inner = inner;
  plan.split_chunks = chunks;
  plan.work_items = outputs * chunks;
  plan.bytes_per_item = CpuBytesPerElement(spec) * block * inner;
  plan.combine_items = outputs;
  plan.partial_bytes = outputs * chunks * ir::StorageBytes(t);
  plan.reassociates = IsF(t) && sum_or_product;
  return true;
}

int64_t MinChunk(int64_t bytes_per_item) {
  return std::max<int64_t>(1, kMinParallelBytes / std::max<int64_t>(1, bytes_per_item));
}

}  // namespace

StatusOr<CpuKernelPlan> PlanCpuKernel(const KernelSpec& spec) {
  if (!spec.root) return InvalidArgument("kernel '" + spec.name + "' has no root op");
  const ir::Op& root = *spec.root;
  if (const size_t n = KernelOps(spec); n > kMaxKernelOps) {
    return InvalidArgument(root.loc().ToString() + ": '" + std::string(root.name()) + "' op roots a kernel of " +
                           std::to_string(n) + " ops, above the limit of " + std::to_string(kMaxKernelOps) +
                           " ops per kernel");
  }
  CpuKernelPlan plan;
  const int64_t element_bytes = CpuBytesPerElement(spec);
  if (root.code() == ir::OpCode::kReduce) {
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    std::vector<bool> is_reduced(in_dims.size(), false);
    for (int64_t d : root.GetI64Array("dimensions").value_or(std::vector<int64_t>{})) {
      if (d < 0 || static_cast<size_t>(d) >= in_dims.size()) {
        return InvalidArgument(root.loc().ToString() + ": 'stablehlo.reduce' dimension " + std::to_string(d) +
                               " out of range for its rank-" + std::to_string(in_dims.size()) + " operand");
      }
      is_reduced[static_cast<size_t>(d)] = true;
    }
    plan.extent = 1;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (!is_reduced[d]) continue;
      plan.reduced_dims.push_back(static_cast<int64_t>(d));
      plan.extent *= in_dims[d];
    }
    if (PlanSplit(spec, plan)) {
      plan.min_chunk = MinChunk(plan.bytes_per_item);
      plan.combine_min_chunk = MinChunk(std::max<int64_t>(1, plan.partial_bytes / plan.combine_items));
      return plan;
    }
    plan.kind = CpuKernelKind::kReduce;
    const ir::Type& out_type = root.result(0)->type();
    plan.work_items = out_type.num_elements();
    plan.bytes_per_item = element_bytes * plan.extent;
    // Long float sums and products: vectorized partial sums.
    const ir::Block& body = root.region(0).block(0);
    const ir::DType t = out_type.dtype();
    plan.reassociates = plan.extent >= kReassociateMinExtent && root.num_results() == 1 && IsF(t) && !IsHalf(t) &&
                        body.ops().size() == 2 &&
                        (body.ops()[0]->code() == ir::OpCode::kAdd || body.ops()[0]->code() == ir::OpCode::kMultiply);
    plan.min_chunk = MinChunk(plan.bytes_per_item);
    return plan;
  }
  const ir::Type& type = root.result(0)->type();
  const std::vector<int64_t>& dims = type.dims();
  if (IsLinear(spec) || dims.size() <= 1) {
    plan.kind = CpuKernelKind::kFlat;
    plan.work_items = type.num_elements();
    plan.bytes_per_item = element_bytes;
    plan.stream_stores = StreamsStores(spec, type);
  } else {
    plan.row_length = dims.back();
    plan.rows = 1;
    for (size_t d = 0; d + 1 < dims.size(); ++d) plan.rows *= dims[d];
    plan.bytes_per_item = element_bytes * plan.row_length;
    if (TransposesLastDim(spec)) {
      plan.kind = CpuKernelKind::kTiledTranspose;
      plan.tile = 16;
      plan.work_items = (plan.rows + plan.tile - 1) / plan.tile;
      plan.bytes_per_item *= plan.tile;
    } else {
      plan.kind = CpuKernelKind::kRows;
      plan.work_items = plan.rows;
    }
  }
  plan.min_chunk = MinChunk(plan.bytes_per_item);
  return plan;
}

}  // namespace jitd::codegen
