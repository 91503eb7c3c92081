// stablehlo.gather, and stablehlo.scatter with one input whose update body
// is a recognized fold (internal/fold.h) or a plain replacement (returns
// the update); other scatters are declined.
//
// Semantics are jit/eval's: gather clamps each start index so the slice fits
// the operand; scatter applies update elements in row-major order of the
// updates' index space (so duplicate indices and non-associative folds give
// the interpreter's result), skipping elements whose result index is out of
// bounds, and never clamps. Index operands of any integer type are read
// exactly (ui64 included).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/fold.h"
#include "devices/cpu/runtime/internal/ops.h"
#include "jit/eval/gather_dims.h"

namespace jitd::cpu::internal {
namespace {

// Element i of an integer tensor at `p`, exactly.
__int128 IndexAt(const void* p, DType t, int64_t i) {
  const auto* b = static_cast<const uint8_t*>(p);
  auto read = [&]<typename S>(S) {
    S v;
    std::memcpy(&v, b + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
    return static_cast<__int128>(v);
  };
  switch (t) {
    case DType::kS8: return read(int8_t{});
    case DType::kS16: return read(int16_t{});
    case DType::kS32: return read(int32_t{});
    case DType::kS64: return read(int64_t{});
    case DType::kU8: return read(uint8_t{});
    case DType::kU16: return read(uint16_t{});
    case DType::kU32: return read(uint32_t{});
    case DType::kU64: return read(uint64_t{});
    default: return 0;
  }
}

bool IsIndexType(DType t) { return ir::IsInteger(t) && ir::BitWidth(t) >= 8; }


std::vector<int64_t> Field(const ir::Op& op, std::string_view attr, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct(attr);
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

using eval::DimMap;
using eval::MapDims;

// What gather and scatter share: how an element of the result (updates)
// index space finds its operand (result) element.
struct IndexPlan {
  ir::Type operand, indices, space;  // space: gather's result / scatter's updates
  DimMap map;
  std::vector<int64_t> operand_batching, indices_batching, start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> operand_strides, indices_strides;
  bool ok = true;  // false when a window dimension maps past the operand's rank
};

IndexPlan PlanIndexing(const ir::Type& operand, const ir::Type& indices, const ir::Type& space,
                       const std::vector<int64_t>& window_dims,
                       const std::vector<int64_t>& dropped,
                       std::vector<int64_t> operand_batching,
                       std::vector<int64_t> indices_batching,
                       std::vector<int64_t> start_index_map, int64_t index_vector_dim) {
  IndexPlan p;
  p.operand = operand;
  p.indices = indices;
  p.space = space;
  p.map = MapDims(space.rank(), window_dims, operand.rank(), dropped, operand_batching,
                  index_vector_dim);
  p.operand_batching = std::move(operand_batching);
  p.indices_batching = std::move(indices_batching);
  p.start_index_map = std::move(start_index_map);
  p.index_vector_dim = index_vector_dim;
  p.operand_strides = RowMajorStrides(operand.dims());
  p.indices_strides = RowMajorStrides(indices.dims());
  auto in_range = [](const std::vector<int64_t>& v, int64_t rank) {
    return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d >= 0 && d < rank; });
  };
  for (int64_t d : p.map.window_operand_dim) p.ok = p.ok && d < operand.rank();
  for (int64_t d : p.map.batch_indices_dim) p.ok = p.ok && d < indices.rank();
  p.ok = p.ok && p.operand_batching.size() == p.indices_batching.size() &&
         in_range(p.operand_batching, operand.rank()) &&
         in_range(p.indices_batching, indices.rank()) &&
         in_range(p.start_index_map, operand.rank()) && index_vector_dim >= 0 &&
         index_vector_dim <= indices.rank();
  return p;
}

// ---- gather -------------------------------------------------------------------

class GatherOp final : public LibraryOp {
 public:
  GatherOp(IndexPlan plan, std::vector<int64_t> slice_sizes)
      : p_(std::move(plan)), slice_sizes_(std::move(slice_sizes)) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    const auto* operand = static_cast<const uint8_t*>(operands[0]);
    const void* indices = operands[1];
    auto* out = static_cast<uint8_t*>(results[0]);
    const int64_t bytes = ir::StorageBytes(p_.operand.dtype());
    const int64_t count = p_.space.num_elements();
    const size_t rank = static_cast<size_t>(p_.space.rank());
    const size_t operand_rank = static_cast<size_t>(p_.operand.rank());
    const int64_t indices_rank = p_.indices.rank();
    const DType index_type = p_.indices.dtype();
    std::atomic<bool> out_of_range{false};
    ParallelRange(context, count, 4 * static_cast<int64_t>(rank + 1), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> ri(rank, 0), indices_index(static_cast<size_t>(indices_rank), 0),
          operand_index(operand_rank, 0);
      int64_t rest = begin;
      for (size_t d = rank; d-- > 0;) {
        ri[d] = rest % p_.space.dim(static_cast<int64_t>(d));
        rest /= p_.space.dim(static_cast<int64_t>(d));
      }
      for (int64_t e = begin; e < end; ++e) {
        std::fill(operand_index.begin(), operand_index.end(), 0);
        for (size_t d = 0; d < rank; ++d) {
          if (p_.map.batch_indices_dim[d] >= 0) indices_index[p_.map.batch_indices_dim[d]] = ri[d];
        }
        for (size_t i = 0; i < p_.operand_batching.size(); ++i) {
          operand_index[p_.operand_batching[i]] = indices_index[p_.indices_batching[i]];
        }
        for (size_t k = 0; k < p_.start_index_map.size(); ++k) {
          if (p_.index_vector_dim < indices_rank) {
            indices_index[p_.index_vector_dim] = static_cast<int64_t>(k);
          }
          const size_t d = static_cast<size_t>(p_.start_index_map[k]);
          int64_t offset = 0;
          for (int64_t j = 0; j < indices_rank; ++j) offset += indices_index[j] * p_.indices_strides[j];
          const int64_t hi = std::max<int64_t>(p_.operand.dim(static_cast<int64_t>(d)) - slice_sizes_[d], 0);
          const __int128 v = IndexAt(indices, index_type, offset);
          operand_index[d] = v < 0 ? 0 : (v > hi ? hi : static_cast<int64_t>(v));
        }
        for (size_t d = 0; d < rank; ++d) {
          if (p_.map.window_operand_dim[d] >= 0) operand_index[p_.map.window_operand_dim[d]] += ri[d];
        }
        int64_t from = 0;
        for (size_t d = 0; d < operand_rank; ++d) {
          if (operand_index[d] >= p_.operand.dim(static_cast<int64_t>(d))) {
            out_of_range = true;
            return;
          }
          from += operand_index[d] * p_.operand_strides[d];
        }
        std::memcpy(out + e * bytes, operand + from * bytes, static_cast<size_t>(bytes));
        for (size_t d = rank; d-- > 0;) {
          if (++ri[d] < p_.space.dim(static_cast<int64_t>(d))) break;
          ri[d] = 0;
        }
      }
    });
    if (out_of_range) {
      return InvalidArgument(
          "'stablehlo.gather' op reads outside the operand (a collapsed dimension with slice "
          "size 0)");
    }
    return Status::Ok();
  }

 private:
  IndexPlan p_;
  std::vector<int64_t> slice_sizes_;
};

// ---- scatter ------------------------------------------------------------------

class ScatterOp final : public LibraryOp {
 public:
  ScatterOp(IndexPlan plan, std::optional<FoldOp> fold) : p_(std::move(plan)), fold_(fold) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    Status status = Status::Ok();
    WithCodec(p_.operand.dtype(), [&]<typename C>() { status = RunAs<C>(operands, results, context); });
    return status;
  }

 private:
  template <typename C>
  Status RunAs(std::span<const void* const> operands, std::span<void* const> results,
               const RunContext& context) const {
    using S = typename C::Storage;
    const S* input = static_cast<const S*>(operands[0]);
    const void* indices = operands[1];
    const S* updates = static_cast<const S*>(operands[2]);
    S* out = static_cast<S*>(results[0]);
    if (p_.operand.byte_size() > 0) {
      std::memcpy(out, input, static_cast<size_t>(p_.operand.byte_size()));
    }
    const size_t rank = static_cast<size_t>(p_.space.rank());
    const size_t operand_rank = static_cast<size_t>(p_.operand.rank());
    const int64_t indices_rank = p_.indices.rank();
    const DType index_type = p_.indices.dtype();
    std::vector<int64_t> ui(rank, 0), indices_index(static_cast<size_t>(indices_rank), 0);
    std::vector<__int128> result_index(operand_rank, 0);
    const int64_t count = p_.space.num_elements();
    for (int64_t e = 0; e < count; ++e) {
      if ((e & 0xffff) == 0xffff && PastDeadline(context)) {
        return Status(StatusCode::kDeadlineExceeded, "scatter ran past its deadline");
      }
      std::fill(result_index.begin(), result_index.end(), 0);
      for (size_t d = 0; d < rank; ++d) {
        if (p_.map.batch_indices_dim[d] >= 0) indices_index[p_.map.batch_indices_dim[d]] = ui[d];
      }
      for (size_t i = 0; i < p_.operand_batching.size(); ++i) {
        result_index[p_.operand_batching[i]] = indices_index[p_.indices_batching[i]];
      }
      for (size_t k = 0; k < p_.start_index_map.size(); ++k) {
        if (p_.index_vector_dim < indices_rank) {
          indices_index[p_.index_vector_dim] = static_cast<int64_t>(k);
        }
        int64_t offset = 0;
        for (int64_t j = 0; j < indices_rank; ++j) offset += indices_index[j] * p_.indices_strides[j];
        result_index[p_.start_index_map[k]] = IndexAt(indices, index_type, offset);
      }
      for (size_t d = 0; d < rank; ++d) {
        if (p_.map.window_operand_dim[d] >= 0) result_index[p_.map.window_operand_dim[d]] += ui[d];
      }
      int64_t to = 0;
      bool inside = true;
      for (size_t d = 0; d < operand_rank && inside; ++d) {
        inside = result_index[d] >= 0 && result_index[d] < p_.operand.dim(static_cast<int64_t>(d));
        to += static_cast<int64_t>(result_index[d]) * p_.operand_strides[d];
      }
      if (inside) {
        out[to] = fold_ ? C::Store(Apply(*fold_, C::Load(out[to]), C::Load(updates[e])))
                        : updates[e];
      }
      for (size_t d = rank; d-- > 0;) {
        if (++ui[d] < p_.space.dim(static_cast<int64_t>(d))) break;
        ui[d] = 0;
      }
    }
    return Status::Ok();
  }

  IndexPlan p_;
  std::optional<FoldOp> fold_;  // nullopt: replace
};

// Whether region 0 of `op` returns its second argument unchanged.
bool IsReplaceBody(const ir::Op& op, DType t) {
  if (op.num_regions() != 1 || op.region(0).num_blocks() != 1) return false;
  const ir::Block& b = op.region(0).block(0);
  if (b.num_args() != 2 || b.ops().size() != 1) return false;
  const ir::Op& ret = *b.ops()[0];
  return ret.code() == ir::OpCode::kReturn && ret.num_operands() == 1 &&
         ret.operand(0) == b.arg(1) && b.arg(1)->type() == ir::Type::Scalar(t);
}

}  // namespace

LibraryOpOr CreateGatherOp(const ir::Op& op) {
  if (op.num_operands() != 2 || op.num_results() != 1) return Declined();
  const ir::Type& operand = op.operand(0)->type();
  const ir::Type& indices = op.operand(1)->type();
  const ir::Type& result = op.result(0)->type();
  if (!operand.is_tensor() || !indices.is_tensor() || !result.is_tensor() ||
      result.dtype() != operand.dtype() || !IsIndexType(indices.dtype())) {
    return Declined();
  }
  constexpr std::string_view kDims = "dimension_numbers";
  const std::vector<int64_t> ivd = Field(op, kDims, "index_vector_dim");
  std::vector<int64_t> slice_sizes = op.GetI64Array("slice_sizes").value_or(std::vector<int64_t>{});
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
    return OpError(op, "slice_sizes does not match the operand's rank");
  }
  IndexPlan p = PlanIndexing(operand, indices, result, Field(op, kDims, "offset_dims"),
                             Field(op, kDims, "collapsed_slice_dims"),
                             Field(op, kDims, "operand_batching_dims"),
                             Field(op, kDims, "start_indices_batching_dims"),
                             Field(op, kDims, "start_index_map"), ivd.empty() ? 0 : ivd[0]);
  if (!p.ok) return OpError(op, "has dimension numbers that do not fit its operands");
  return std::unique_ptr<LibraryOp>(new GatherOp(std::move(p), std::move(slice_sizes)));
}

LibraryOpOr CreateScatterOp(const ir::Op& op) {
  // One input: input, scatter_indices, updates.
  if (op.num_operands() != 3 || op.num_results() != 1) return Declined();
  const ir::Type& input = op.operand(0)->type();
  const ir::Type& indices = op.operand(1)->type();
  const ir::Type& updates = op.operand(2)->type();
  const ir::Type& result = op.result(0)->type();
  if (!input.is_tensor() || !indices.is_tensor() || !updates.is_tensor() ||
      !result.is_tensor() || result.dtype() != input.dtype() ||
      updates.dtype() != input.dtype() || !IsIndexType(indices.dtype())) {
    return Declined();
  }
  bool has_codec = false;
  WithCodec(input.dtype(), [&]<typename C>() { has_codec = true; });
  if (!has_codec) return Declined();
  std::optional<FoldOp> fold = RecognizeFold(op, 0, input.dtype());
  if (!fold && !IsReplaceBody(op, input.dtype())) return Declined();
  constexpr std::string_view kDims = "scatter_dimension_numbers";
  const std::vector<int64_t> ivd = Field(op, kDims, "index_vector_dim");
  IndexPlan p = PlanIndexing(input, indices, updates, Field(op, kDims, "update_window_dims"),
                             Field(op, kDims, "inserted_window_dims"),
                             Field(op, kDims, "input_batching_dims"),
                             Field(op, kDims, "scatter_indices_batching_dims"),
                             Field(op, kDims, "scatter_dims_to_operand_dims"),
                             ivd.empty() ? 0 : ivd[0]);
  if (!p.ok) return OpError(op, "has dimension numbers that do not fit its operands");
  return std::unique_ptr<LibraryOp>(new ScatterOp(std::move(p), fold));
}

}  // namespace jitd::cpu::internal
