// Shape kernels: ops that move elements without computing on them (iota,
// broadcasts, reshape, transpose, reverse, slice, concatenate, pad,
// get_dimension_size). Each follows its op's "Semantics" section in the
// StableHLO spec; the verifier has already checked shapes and attributes.
#include <cstring>
#include <vector>

#include "jit/eval/internal/kernels.h"

namespace jitd::eval::internal {
namespace {

using ir::Literal;

// Fills `result` by copying, for every result index, the operand element at
// the linear offset `source(result_index)` returns.
template <typename F>
Status CopyFrom(const Literal& operand, Literal& result, F&& source) {
  const std::vector<int64_t>& dims = result.type().dims();
  const std::vector<int64_t> strides = Strides(dims);
  return ForEachIndex(dims, [&](const std::vector<int64_t>& index) {
    CopyElement(operand, source(index), result, Offset(index, strides));
    return Status::Ok();
  });
}

// output[index] = index[iota_dimension], converted to the element type.
KernelResult Iota(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const size_t dim = static_cast<size_t>(ctx.Int("iota_dimension", 0));
  int64_t i = 0;
  JITD_RETURN_IF_ERROR(ForEachIndex(result.type().dims(), [&](const std::vector<int64_t>& index) {
    result.SetInt(i++, index[dim]);  // SetInt converts for float and complex types
    return Status::Ok();
  }));
  return Single(std::move(result));
}

// result[ri] = operand[oi] with oi[d] = dim(operand, d) == 1 ? 0 : ri[dims[d]].
KernelResult BroadcastInDim(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::vector<int64_t> dims = ctx.I64s("broadcast_dimensions");
  const std::vector<int64_t>& operand_dims = operand.type().dims();
  const std::vector<int64_t> strides = Strides(operand_dims);
  JITD_RETURN_IF_ERROR(CopyFrom(operand, result, [&](const std::vector<int64_t>& ri) {
    int64_t offset = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (operand_dims[d] != 1) offset += ri[static_cast<size_t>(dims[d])] * strides[d];
    }
    return offset;
  }));
  return Single(std::move(result));
}

// Legacy broadcast: result = broadcast_sizes ++ shape(operand); the leading
// dimensions are new.
KernelResult Broadcast(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const size_t leading = ctx.I64s("broadcast_sizes").size();
  const std::vector<int64_t> strides = Strides(operand.type().dims());
  JITD_RETURN_IF_ERROR(CopyFrom(operand, result, [&](const std::vector<int64_t>& ri) {
    int64_t offset = 0;
    for (size_t d = 0; d < strides.size(); ++d) offset += ri[leading + d] * strides[d];
    return offset;
  }));
  return Single(std::move(result));
}

// Row-major order is unchanged by a reshape: the bytes carry over.
KernelResult Reshape(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  if (!operand.bytes().empty()) {
    std::memcpy(result.mutable_bytes().data(), operand.bytes().data(), operand.bytes().size());
  }
  return Single(std::move(result));
}

// result[ri] = operand[oi] with oi[permutation[d]] = ri[d].
KernelResult Transpose(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::vector<int64_t> perm = ctx.I64s("permutation");
  const std::vector<int64_t> strides = Strides(operand.type().dims());
  JITD_RETURN_IF_ERROR(CopyFrom(operand, result, [&](const std::vector<int64_t>& ri) {
    int64_t offset = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      offset += ri[d] * strides[static_cast<size_t>(perm[d])];
    return offset;
  }));
  return Single(std::move(result));
}

// Reverses the listed dimensions.
KernelResult Reverse(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::vector<int64_t>& dims = operand.type().dims();
  std::vector<bool> reversed(dims.size(), false);
  for (int64_t d : ctx.I64s("dimensions")) reversed[static_cast<size_t>(d)] = true;
  const std::vector<int64_t> strides = Strides(dims);
  JITD_RETURN_IF_ERROR(CopyFrom(operand, result, [&](const std::vector<int64_t>& ri) {
    int64_t offset = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      offset += (reversed[d] ? dims[d] - 1 - ri[d] : ri[d]) * strides[d];
    }
    return offset;
  }));
  return Single(std::move(result));
}

// result[ri] = operand[start_indices + ri * strides].
KernelResult Slice(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::vector<int64_t> start = ctx.I64s("start_indices");
  const std::vector<int64_t> step = ctx.I64s("strides");
  const std::vector<int64_t> strides = Strides(operand.type().dims());
  JITD_RETURN_IF_ERROR(CopyFrom(operand, result, [&](const std::vector<int64_t>& ri) {
    int64_t offset = 0;
    for (size_t d = 0; d < strides.size(); ++d) offset += (start[d] + ri[d] * step[d]) * strides[d];
    return offset;
  }));
  return Single(std::move(result));
}

// Viewing every tensor as [outer, dim(dimension), inner], each input's
// [dim, inner] block of each outer row lands next to the previous input's.
KernelResult Concatenate(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const size_t dim = static_cast<size_t>(ctx.Int("dimension", 0));
  const std::vector<int64_t>& result_dims = result.type().dims();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= result_dims[d];
  for (size_t d = dim + 1; d < result_dims.size(); ++d) inner *= result_dims[d];
  const int64_t bytes = ir::StorageBytes(result.dtype());
  const int64_t result_row = result_dims[dim] * inner * bytes;
  int64_t column = 0;  // bytes into each result row where the next input goes
  for (size_t i = 0; i < ctx.num_operands(); ++i) {
    const Literal& input = ctx.operand(i);
    const int64_t input_row = input.type().dim(static_cast<int64_t>(dim)) * inner * bytes;
    if (input_row == 0) continue;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(result.mutable_bytes().data() + o * result_row + column,
                  input.bytes().data() + o * input_row, static_cast<size_t>(input_row));
    }
    column += input_row;
  }
  return Single(std::move(result));
}

// result[low + oi * (interior + 1)] = operand[oi] where that lies inside the
// result (negative edge padding drops elements); padding_value elsewhere.
KernelResult Pad(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const Literal& padding_value = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  for (int64_t i = 0; i < result.num_elements(); ++i) CopyElement(padding_value, 0, result, i);
  const std::vector<int64_t> low = ctx.I64s("edge_padding_low");
  const std::vector<int64_t> interior = ctx.I64s("interior_padding");
  const std::vector<int64_t>& result_dims = result.type().dims();
  const std::vector<int64_t> result_strides = Strides(result_dims);
  int64_t from = 0;
  JITD_RETURN_IF_ERROR(ForEachIndex(operand.type().dims(), [&](const std::vector<int64_t>& oi) {
    int64_t to = 0;
    for (size_t d = 0; d < oi.size(); ++d) {
      // Attributes may be large enough to overflow int64 in this sum.
      const __int128 r = __int128{low[d]} + __int128{oi[d]} * (__int128{interior[d]} + 1);
      if (r < 0 || r >= result_dims[d]) {
        ++from;
        return Status::Ok();
      }
      to += static_cast<int64_t>(r) * result_strides[d];
    }
    CopyElement(operand, from++, result, to);
    return Status::Ok();
  }));
  return Single(std::move(result));
}

KernelResult GetDimensionSize(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  result.SetInt(0, ctx.operand(0).type().dim(ctx.Int("dimension", 0)));
  return Single(std::move(result));
}

}  // namespace

void RegisterShapeKernels(KernelTable& table) {
  Register(table, ir::OpCode::kIota, Iota);
  Register(table, ir::OpCode::kBroadcastInDim, BroadcastInDim);
  Register(table, ir::OpCode::kBroadcast, Broadcast);
  Register(table, ir::OpCode::kReshape, Reshape);
  Register(table, ir::OpCode::kTranspose, Transpose);
  Register(table, ir::OpCode::kReverse, Reverse);
  Register(table, ir::OpCode::kSlice, Slice);
  Register(table, ir::OpCode::kConcatenate, Concatenate);
  Register(table, ir::OpCode::kPad, Pad);
  Register(table, ir::OpCode::kGetDimensionSize, GetDimensionSize);
}

}  // namespace jitd::eval::internal
