// How the dimensions of gather's result (or scatter's updates) map onto the
// operand and the indices tensor, shared by jit/eval's gather/scatter
// kernels and the CPU runtime library's so both index identically. Plain
// functions; thread-safe.
#ifndef JITD_JIT_EVAL_GATHER_DIMS_H_
#define JITD_JIT_EVAL_GATHER_DIMS_H_

#include <cstdint>
#include <vector>

namespace jitd::eval {

// Each result dimension is either a window dimension, fed by an operand
// dimension that is not collapsed/inserted or batching, or a batch
// dimension, fed by an indices dimension other than index_vector_dim.
struct DimMap {
  std::vector<int64_t> window_operand_dim;  // per result dim; -1 for batch dims
  std::vector<int64_t> batch_indices_dim;   // per result dim; -1 for window dims
};

// `dropped_a` / `dropped_b`: the operand dimensions with no result dimension
// (collapsed or inserted window dims, and batching dims).
DimMap MapDims(int64_t result_rank, const std::vector<int64_t>& window_dims, int64_t operand_rank,
               const std::vector<int64_t>& dropped_a, const std::vector<int64_t>& dropped_b,
               int64_t index_vector_dim);

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_GATHER_DIMS_H_
