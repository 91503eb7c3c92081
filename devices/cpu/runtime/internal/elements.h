// Element plumbing shared by the CPU runtime library's ops (internal to
// devices/cpu/runtime): the arithmetic domain an op computes in, loading raw
// operand bytes into that domain and storing domain values back, with
// exactly the conversions jit/eval applies (ir::Literal's Get*/Set*).
#ifndef JITD_DEVICES_CPU_RUNTIME_INTERNAL_ELEMENTS_H_
#define JITD_DEVICES_CPU_RUNTIME_INTERNAL_ELEMENTS_H_

#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "devices/cpu/runtime/library_op.h"
#include "jit/ir/dtype.h"
#include "jit/ir/literal.h"

namespace jitd::cpu::internal {

// The domain jit/eval's dot products compute in for a result type:
// integers and i1 in uint64 (wrapping), f64 in double, complex<f64> in
// complex<double>, complex<f32> in complex<float>, every other float in
// float (rounded once when stored).
enum class Domain { kU64, kF32, kF64, kC64, kC128 };

inline Domain DomainOf(ir::DType t) {
  if (t == ir::DType::kC128) return Domain::kC128;
  if (t == ir::DType::kC64) return Domain::kC64;
  if (t == ir::DType::kF64) return Domain::kF64;
  if (ir::IsFloat(t)) return Domain::kF32;
  return Domain::kU64;
}

// Calls fn.template operator()<T>() with T the C++ type of `d`.
template <typename F>
decltype(auto) WithDomain(Domain d, F&& fn) {
  switch (d) {
    case Domain::kC128: return fn.template operator()<std::complex<double>>();
    case Domain::kC64: return fn.template operator()<std::complex<float>>();
    case Domain::kF64: return fn.template operator()<double>();
    case Domain::kF32: return fn.template operator()<float>();
    case Domain::kU64: break;
  }
  return fn.template operator()<uint64_t>();
}

// A read-only Literal copy of raw bytes (the slow, exact path for element
// types without a fast conversion).
ir::Literal CopyToLiteral(const ir::Type& type, const void* data);

// n elements of type `from` at `src`, converted to the domain T of a
// result of type `result` as jit/eval's dot products load them (floats to
// integers saturate, NaN -> 0; integers sign- or zero-extend).
template <typename T>
void LoadDomain(const void* src, ir::DType from, ir::DType result, int64_t n, T* dst);

// Stores n domain values as elements of type `to`, rounding (floats) or
// truncating (integers) once, as ir::Literal::Set* does.
template <typename T>
void StoreDomain(const T* src, int64_t n, ir::DType to, void* dst);

// Whether elements of `t` are stored exactly as domain T (no conversion).
template <typename T>
constexpr bool IsNative(ir::DType t) {
  return (std::is_same_v<T, float> && t == ir::DType::kF32) ||
         (std::is_same_v<T, double> && t == ir::DType::kF64) ||
         (std::is_same_v<T, std::complex<float>> && t == ir::DType::kC64) ||
         (std::is_same_v<T, std::complex<double>> && t == ir::DType::kC128);
}

// Row-major strides (in elements) of `dims`.
inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// dst = src (row-major, `dims`) with its dimensions permuted: dst's
// dimension i is src's dimension order[i].
template <typename T>
void Permute(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& order,
             T* dst) {
  const std::vector<int64_t> src_strides = RowMajorStrides(dims);
  const size_t rank = order.size();
  std::vector<int64_t> out_dims(rank), steps(rank);
  int64_t total = 1;
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = dims[static_cast<size_t>(order[i])];
    steps[i] = src_strides[static_cast<size_t>(order[i])];
    total *= out_dims[i];
  }
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  // Odometer over the output; the innermost dimension is a strided copy.
  std::vector<int64_t> index(rank, 0);
  const int64_t inner = out_dims[rank - 1], inner_step = steps[rank - 1];
  int64_t src_off = 0;
  for (int64_t out = 0; out < total; out += inner) {
    const T* s = src + src_off;
    for (int64_t i = 0; i < inner; ++i) dst[out + i] = s[i * inner_step];
    size_t d = rank - 1;
    while (d-- > 0) {
      src_off += steps[d];
      if (++index[d] < out_dims[d]) break;
      src_off -= steps[d] * out_dims[d];
      index[d] = 0;
    }
  }
}

// Whether the op must stop: its deadline passed or it was cancelled.
inline bool PastDeadline(const RunContext& context) {
  return (context.cancel && context.cancel->load(std::memory_order_relaxed)) ||
         (context.deadline && std::chrono::steady_clock::now() >= *context.deadline);
}

// Runs fn(begin, end) over [0, n): on the context's pool when it has one and
// the work is worth splitting, else on the calling thread. When the context
// has a `stopped` flag and a deadline or cancel flag, fn gets slices of ~1M
// operations (cost_per_item each) and PastDeadline is asked before each:
// once it holds, the remaining slices are skipped and *context.stopped is
// set.
void ParallelRange(const RunContext& context, int64_t n, int64_t cost_per_item,
                   const std::function<void(int64_t, int64_t)>& fn);

}  // namespace jitd::cpu::internal

#endif  // JITD_DEVICES_CPU_RUNTIME_INTERNAL_ELEMENTS_H_
