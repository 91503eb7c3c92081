// Indexing kernels: ops whose element positions come from tensors at run
// time (dynamic_slice, dynamic_update_slice, gather, scatter) and the
// sorting ops (sort, chlo.top_k). Indices read from tensors are clamped or
// bounds-checked exactly as the spec's semantics say, so no value computed
// at run time can make a kernel read or write outside a literal.
#include <algorithm>
#include <complex>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "jit/eval/gather_dims.h"
#include "jit/eval/internal/kernels.h"

namespace jitd::eval {
namespace {
bool ContainsDim(const std::vector<int64_t>& values, int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}
}  // namespace

DimMap MapDims(int64_t result_rank, const std::vector<int64_t>& window_dims, int64_t operand_rank,
               const std::vector<int64_t>& dropped_a, const std::vector<int64_t>& dropped_b,
               int64_t index_vector_dim) {
  DimMap map{std::vector<int64_t>(static_cast<size_t>(result_rank), -1),
             std::vector<int64_t>(static_cast<size_t>(result_rank), -1)};
  int64_t next_operand = 0, next_indices = 0;
  for (int64_t d = 0; d < result_rank; ++d) {
    if (ContainsDim(window_dims, d)) {
      while (next_operand < operand_rank &&
             (ContainsDim(dropped_a, next_operand) || ContainsDim(dropped_b, next_operand))) {
        ++next_operand;
      }
      map.window_operand_dim[static_cast<size_t>(d)] = next_operand++;
    } else {
      if (next_indices == index_vector_dim) ++next_indices;
      map.batch_indices_dim[static_cast<size_t>(d)] = next_indices++;
    }
  }
  return map;
}

}  // namespace jitd::eval

namespace jitd::eval::internal {
namespace {

using ir::DType;
using ir::Literal;

// Element i of integer tensor `lit` clamped to [0, hi] (hi >= 0). Unsigned
// values above INT64_MAX clamp to hi rather than wrapping negative.
int64_t ClampedIndex(const Literal& lit, int64_t i, int64_t hi) {
  if (ir::IsUnsignedInt(lit.dtype())) {
    const uint64_t v = lit.GetUInt(i);
    return v > static_cast<uint64_t>(hi) ? hi : static_cast<int64_t>(v);
  }
  return std::clamp<int64_t>(lit.GetInt(i), 0, hi);
}

// Element i of integer tensor `lit`, exactly (ui64 values included).
__int128 WideIndex(const Literal& lit, int64_t i) {
  if (ir::IsUnsignedInt(lit.dtype())) return static_cast<__int128>(lit.GetUInt(i));
  return lit.GetInt(i);
}

// The start indices of dynamic_slice / dynamic_update_slice (operands
// first..first+rank-1, 0-d integers) clamped to [0, dim(operand) - size].
std::vector<int64_t> ClampedStarts(const OpContext& ctx, size_t first,
                                   const std::vector<int64_t>& operand_dims,
                                   const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts(operand_dims.size());
  for (size_t d = 0; d < starts.size(); ++d) {
    starts[d] = ClampedIndex(ctx.operand(first + d), 0, operand_dims[d] - sizes[d]);
  }
  return starts;
}

KernelResult DynamicSlice(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::vector<int64_t>& dims = operand.type().dims();
  const std::vector<int64_t> starts = ClampedStarts(ctx, 1, dims, result.type().dims());
  const std::vector<int64_t> operand_strides = Strides(dims);
  const std::vector<int64_t> result_strides = Strides(result.type().dims());
  JITD_RETURN_IF_ERROR(ForEachIndex(result.type().dims(), [&](const std::vector<int64_t>& ri) {
    int64_t from = 0;
    for (size_t d = 0; d < ri.size(); ++d) from += (starts[d] + ri[d]) * operand_strides[d];
    CopyElement(operand, from, result, Offset(ri, result_strides));
    return Status::Ok();
  }));
  return Single(std::move(result));
}

KernelResult DynamicUpdateSlice(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const Literal& update = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  if (!operand.bytes().empty()) {
    std::memcpy(result.mutable_bytes().data(), operand.bytes().data(), operand.bytes().size());
  }
  const std::vector<int64_t>& dims = operand.type().dims();
  const std::vector<int64_t> starts = ClampedStarts(ctx, 2, dims, update.type().dims());
  const std::vector<int64_t> result_strides = Strides(dims);
  const std::vector<int64_t> update_strides = Strides(update.type().dims());
  JITD_RETURN_IF_ERROR(ForEachIndex(update.type().dims(), [&](const std::vector<int64_t>& ui) {
    int64_t to = 0;
    for (size_t d = 0; d < ui.size(); ++d) to += (starts[d] + ui[d]) * result_strides[d];
    CopyElement(update, Offset(ui, update_strides), result, to);
    return Status::Ok();
  }));
  return Single(std::move(result));
}

// A scalar field of a dimension-numbers struct (index_vector_dim), 0 when
// absent as MLIR prints the default.
int64_t ScalarField(const OpContext& ctx, std::string_view attr, std::string_view field) {
  const std::vector<int64_t> v = ctx.StructField(attr, field);
  return v.empty() ? 0 : v[0];
}


using eval::DimMap;
using eval::MapDims;

KernelResult Gather(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const Literal& indices = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  constexpr std::string_view kDims = "dimension_numbers";
  const std::vector<int64_t> offset_dims = ctx.StructField(kDims, "offset_dims");
  const std::vector<int64_t> collapsed = ctx.StructField(kDims, "collapsed_slice_dims");
  const std::vector<int64_t> operand_batching = ctx.StructField(kDims, "operand_batching_dims");
  const std::vector<int64_t> indices_batching =
      ctx.StructField(kDims, "start_indices_batching_dims");
  const std::vector<int64_t> start_index_map = ctx.StructField(kDims, "start_index_map");
  const int64_t index_vector_dim = ScalarField(ctx, kDims, "index_vector_dim");
  const std::vector<int64_t> slice_sizes = ctx.I64s("slice_sizes");

  const std::vector<int64_t>& operand_dims = operand.type().dims();
  const std::vector<int64_t>& result_dims = result.type().dims();
  const int64_t indices_rank = indices.type().rank();
  const DimMap map = MapDims(result.type().rank(), offset_dims, operand.type().rank(), collapsed,
                             operand_batching, index_vector_dim);
  const std::vector<int64_t> operand_strides = Strides(operand_dims);
  const std::vector<int64_t> indices_strides = Strides(indices.type().dims());
  const std::vector<int64_t> result_strides = Strides(result_dims);
  std::vector<int64_t> indices_index(static_cast<size_t>(indices_rank), 0);
  std::vector<int64_t> operand_index(operand_dims.size(), 0);

  JITD_RETURN_IF_ERROR(ForEachIndex(result_dims, [&](const std::vector<int64_t>& ri) {
    std::fill(operand_index.begin(), operand_index.end(), 0);
    for (size_t d = 0; d < ri.size(); ++d) {
      if (map.batch_indices_dim[d] >= 0) {
        indices_index[static_cast<size_t>(map.batch_indices_dim[d])] = ri[d];
      }
    }
    // full_batching_index: the batch index along the paired indices dim.
    for (size_t i = 0; i < operand_batching.size(); ++i) {
      operand_index[static_cast<size_t>(operand_batching[i])] =
          indices_index[static_cast<size_t>(indices_batching[i])];
    }
    // full_start_index: the index vector, each entry clamped so the slice
    // fits in the operand.
    for (size_t k = 0; k < start_index_map.size(); ++k) {
      if (index_vector_dim < indices_rank) {
        indices_index[static_cast<size_t>(index_vector_dim)] = static_cast<int64_t>(k);
      }
      const size_t d = static_cast<size_t>(start_index_map[k]);
      operand_index[d] = ClampedIndex(indices, Offset(indices_index, indices_strides),
                                      std::max<int64_t>(operand_dims[d] - slice_sizes[d], 0));
    }
    // full_offset_index.
    for (size_t d = 0; d < ri.size(); ++d) {
      if (map.window_operand_dim[d] >= 0) {
        operand_index[static_cast<size_t>(map.window_operand_dim[d])] += ri[d];
      }
    }
    for (size_t d = 0; d < operand_index.size(); ++d) {
      // Only reachable with a zero slice size on a collapsed dimension.
      if (operand_index[d] >= operand_dims[d]) {
        return ctx.Error("reads outside the operand (a collapsed dimension with slice size 0)");
      }
    }
    CopyElement(operand, Offset(operand_index, operand_strides), result,
                Offset(ri, result_strides));
    return Status::Ok();
  }));
  return Single(std::move(result));
}

// Scatter, variadic: operands are inputs[0..n), scatter_indices, updates[0..n).
// Update elements are applied in row-major order of the updates' index
// space; an element whose result index is out of bounds is skipped.
KernelResult Scatter(OpContext& ctx) {
  const size_t n = (ctx.num_operands() - 1) / 2;
  const Literal& indices = ctx.operand(n);
  constexpr std::string_view kDims = "scatter_dimension_numbers";
  const std::vector<int64_t> window_dims = ctx.StructField(kDims, "update_window_dims");
  const std::vector<int64_t> inserted = ctx.StructField(kDims, "inserted_window_dims");
  const std::vector<int64_t> input_batching = ctx.StructField(kDims, "input_batching_dims");
  const std::vector<int64_t> indices_batching =
      ctx.StructField(kDims, "scatter_indices_batching_dims");
  const std::vector<int64_t> to_operand = ctx.StructField(kDims, "scatter_dims_to_operand_dims");
  const int64_t index_vector_dim = ScalarField(ctx, kDims, "index_vector_dim");

  // Results start as the inputs, converted to the region's element types.
  std::vector<Literal> results;
  for (size_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(i));
    const Literal& input = ctx.operand(i);
    for (int64_t e = 0; e < input.num_elements(); ++e) ConvertElement(input, e, result, e);
    results.push_back(std::move(result));
  }
  const Literal& updates0 = ctx.operand(n + 1);
  const std::vector<int64_t>& input_dims = results[0].type().dims();
  const int64_t indices_rank = indices.type().rank();
  const DimMap map = MapDims(updates0.type().rank(), window_dims, results[0].type().rank(),
                             inserted, input_batching, index_vector_dim);
  const std::vector<int64_t> input_strides = Strides(input_dims);
  const std::vector<int64_t> indices_strides = Strides(indices.type().dims());
  const std::vector<int64_t> update_strides = Strides(updates0.type().dims());
  std::vector<int64_t> indices_index(static_cast<size_t>(indices_rank), 0);
  std::vector<__int128> result_index(input_dims.size(), 0);

  JITD_RETURN_IF_ERROR(ForEachIndex(updates0.type().dims(), [&](const std::vector<int64_t>& ui) {
    std::fill(result_index.begin(), result_index.end(), 0);
    for (size_t d = 0; d < ui.size(); ++d) {
      if (map.batch_indices_dim[d] >= 0) {
        indices_index[static_cast<size_t>(map.batch_indices_dim[d])] = ui[d];
      }
    }
    for (size_t i = 0; i < input_batching.size(); ++i) {
      result_index[static_cast<size_t>(input_batching[i])] =
          indices_index[static_cast<size_t>(indices_batching[i])];
    }
    // full_start_index: not clamped; out-of-bounds results are skipped below.
    for (size_t k = 0; k < to_operand.size(); ++k) {
      if (index_vector_dim < indices_rank) {
        indices_index[static_cast<size_t>(index_vector_dim)] = static_cast<int64_t>(k);
      }
      result_index[static_cast<size_t>(to_operand[k])] =
          WideIndex(indices, Offset(indices_index, indices_strides));
    }
    for (size_t d = 0; d < ui.size(); ++d) {
      if (map.window_operand_dim[d] >= 0) {
        result_index[static_cast<size_t>(map.window_operand_dim[d])] += ui[d];
      }
    }
    int64_t to = 0;
    for (size_t d = 0; d < result_index.size(); ++d) {
      if (result_index[d] < 0 || result_index[d] >= input_dims[d]) return Status::Ok();
      to += static_cast<int64_t>(result_index[d]) * input_strides[d];
    }
    const int64_t from = Offset(ui, update_strides);
    std::vector<RuntimeValue> args;
    args.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) args.push_back(ScalarOf(results[i], to));
    for (size_t i = 0; i < n; ++i) {
      const Literal& update = ctx.operand(n + 1 + i);
      if (update.dtype() == results[i].dtype()) {
        args.push_back(ScalarOf(update, from));
      } else {
        JITD_ASSIGN_OR_RETURN(Literal converted,
                              ctx.NewLiteral(ir::Type::Scalar(results[i].dtype())));
        ConvertElement(update, from, converted, 0);
        args.emplace_back(std::move(converted));
      }
    }
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, ctx.CallRegion(0, std::move(args)));
    if (out.size() != n) return ctx.Error("update_computation returned the wrong number of values");
    for (size_t i = 0; i < n; ++i) StoreScalar(out[i], results[i], to);
    return Status::Ok();
  }));
  std::vector<RuntimeValue> out;
  for (Literal& r : results) out.emplace_back(std::move(r));
  return out;
}

// Stable merge sort of `order` under `less`, which may fail (a region
// error) and need not be a strict weak ordering: every step only compares
// elements in bounds, so an inconsistent comparator yields some permutation
// rather than undefined behaviour.
template <typename Less>
Status MergeSort(std::vector<int64_t>& order, Less&& less) {
  const size_t size = order.size();
  std::vector<int64_t> buffer(size);
  for (size_t width = 1; width < size; width *= 2) {
    for (size_t lo = 0; lo < size; lo += 2 * width) {
      const size_t mid = std::min(lo + width, size), hi = std::min(lo + 2 * width, size);
      size_t a = lo, b = mid, out = lo;
      while (a < mid && b < hi) {
        // Take from the right run only when strictly less: keeps stability.
        JITD_ASSIGN_OR_RETURN(bool right_first, less(order[b], order[a]));
        buffer[out++] = right_first ? order[b++] : order[a++];
      }
      while (a < mid) buffer[out++] = order[a++];
      while (b < hi) buffer[out++] = order[b++];
    }
    order.swap(buffer);
  }
  return Status::Ok();
}

// Calls `fn(base, stride, length)` for every 1-d slice of `dims` along `dim`
// (base = linear offset of the slice's first element).
template <typename F>
Status ForEachSlice(const std::vector<int64_t>& dims, size_t dim, F&& fn) {
  std::vector<int64_t> outer = dims;
  outer[dim] = 1;
  const std::vector<int64_t> strides = Strides(dims);
  if (dims[dim] == 0) return Status::Ok();
  return ForEachIndex(outer, [&](const std::vector<int64_t>& index) {
    return fn(Offset(index, strides), strides[dim], dims[dim]);
  });
}

// Sorts 1-d slices of all inputs together along `dimension` with the
// comparator region. Always stable (a valid choice when is_stable = false).
KernelResult Sort(OpContext& ctx) {
  const size_t n = ctx.num_operands();
  const std::vector<int64_t>& dims = ctx.operand(0).type().dims();
  int64_t dimension = ctx.Int("dimension", -1);
  if (dimension < 0) dimension += static_cast<int64_t>(dims.size());
  std::vector<Literal> results;
  for (size_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(i));
    results.push_back(std::move(result));
  }
  std::vector<int64_t> order;
  JITD_RETURN_IF_ERROR(ForEachSlice(
      dims, static_cast<size_t>(dimension), [&](int64_t base, int64_t stride, int64_t length) {
        order.resize(static_cast<size_t>(length));
        std::iota(order.begin(), order.end(), 0);
        auto less = [&](int64_t lhs, int64_t rhs) -> StatusOr<bool> {
          std::vector<RuntimeValue> args;
          args.reserve(2 * n);
          for (size_t i = 0; i < n; ++i) {
            args.push_back(ScalarOf(ctx.operand(i), base + lhs * stride));
            args.push_back(ScalarOf(ctx.operand(i), base + rhs * stride));
          }
          JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out, ctx.CallRegion(0, std::move(args)));
          if (out.size() != 1 || !out[0].is_tensor()) {
            return ctx.Error("comparator must return one tensor<i1>");
          }
          return out[0].literal().GetPred(0);
        };
        JITD_RETURN_IF_ERROR(MergeSort(order, less));
        for (size_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < length; ++j) {
            CopyElement(ctx.operand(i), base + order[static_cast<size_t>(j)] * stride, results[i],
                        base + j * stride);
          }
        }
        return Status::Ok();
      }));
  std::vector<RuntimeValue> out;
  for (Literal& r : results) out.emplace_back(std::move(r));
  return out;
}

// A key whose unsigned order is the IEEE total order of a float's bits
// (-NaN < -inf < ... < -0 < +0 < ... < inf < +NaN).
uint64_t TotalOrderKey(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (sign << 1) - 1;
  bits &= mask;
  return (bits & sign) ? (~bits & mask) : (bits | sign);
}

uint64_t DoubleKey(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return TotalOrderKey(bits, 64);
}

// True when element a of `lit` orders after element b in the total order
// jax.lax.top_k uses (floats by their bits, NaNs at the ends by sign;
// complex lexicographically by parts).
bool Greater(const Literal& lit, int64_t a, int64_t b) {
  const DType t = lit.dtype();
  if (ir::IsComplex(t)) {
    const std::complex<double> x = lit.GetComplex(a), y = lit.GetComplex(b);
    const uint64_t xr = DoubleKey(x.real()), yr = DoubleKey(y.real());
    if (xr != yr) return xr > yr;
    return DoubleKey(x.imag()) > DoubleKey(y.imag());
  }
  if (ir::IsFloat(t)) {
    const int width = ir::BitWidth(t);
    return TotalOrderKey(lit.GetBits(a), width) > TotalOrderKey(lit.GetBits(b), width);
  }
  if (ir::IsSignedInt(t)) return lit.GetInt(a) > lit.GetInt(b);
  return lit.GetUInt(a) > lit.GetUInt(b);  // unsigned and i1
}

// chlo.top_k: the k largest elements of each last-dimension row, largest
// first, ties by lower index, and their i32 indices.
KernelResult TopK(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal values, ctx.NewResult(0));
  JITD_ASSIGN_OR_RETURN(Literal indices, ctx.NewResult(1));
  const std::vector<int64_t>& dims = operand.type().dims();
  const int64_t length = dims.back();
  const int64_t k = values.type().dims().back();
  const int64_t rows = length == 0 ? 0 : operand.num_elements() / length;
  std::vector<int64_t> order(static_cast<size_t>(length));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t base = row * length;
    std::iota(order.begin(), order.end(), 0);
    JITD_RETURN_IF_ERROR(MergeSort(order, [&](int64_t a, int64_t b) -> StatusOr<bool> {
      return Greater(operand, base + a, base + b);
    }));
    for (int64_t j = 0; j < k; ++j) {
      CopyElement(operand, base + order[static_cast<size_t>(j)], values, row * k + j);
      indices.SetInt(row * k + j, order[static_cast<size_t>(j)]);
    }
  }
  std::vector<RuntimeValue> out;
  out.emplace_back(std::move(values));
  out.emplace_back(std::move(indices));
  return out;
}

}  // namespace

void RegisterIndexingKernels(KernelTable& table) {
  Register(table, ir::OpCode::kDynamicSlice, DynamicSlice);
  Register(table, ir::OpCode::kDynamicUpdateSlice, DynamicUpdateSlice);
  Register(table, ir::OpCode::kGather, Gather);
  Register(table, ir::OpCode::kScatter, Scatter);
  Register(table, ir::OpCode::kSort, Sort);
  Register(table, ir::OpCode::kChloTopK, TopK);
}

}  // namespace jitd::eval::internal
