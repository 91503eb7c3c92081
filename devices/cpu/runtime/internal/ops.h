// The per-op factories behind CreateLibraryOp (internal to
// devices/cpu/runtime). Each returns nullptr for what it does not support.
#ifndef JITD_DEVICES_CPU_RUNTIME_INTERNAL_OPS_H_
#define JITD_DEVICES_CPU_RUNTIME_INTERNAL_OPS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devices/cpu/runtime/library_op.h"

namespace jitd::cpu::internal {

using LibraryOpOr = StatusOr<std::unique_ptr<LibraryOp>>;

// "No library op for this": the caller uses another strategy.
inline LibraryOpOr Declined() { return std::unique_ptr<LibraryOp>(); }

LibraryOpOr CreateDotOp(const ir::Op& op);          // dot.cc: dot_general, dot
LibraryOpOr CreateConvolutionOp(const ir::Op& op);  // convolution.cc
LibraryOpOr CreateFftOp(const ir::Op& op);          // fft.cc
LibraryOpOr CreateTriangularSolveOp(const ir::Op& op);  // linalg.cc
LibraryOpOr CreateCholeskyOp(const ir::Op& op);         // linalg.cc
LibraryOpOr CreateReduceWindowOp(const ir::Op& op, const LibraryOpOptions& options);  // reduce_window.cc
LibraryOpOr CreateGatherOp(const ir::Op& op);          // indexing.cc
LibraryOpOr CreateScatterOp(const ir::Op& op);         // indexing.cc
LibraryOpOr CreateSelectAndScatterOp(const ir::Op& op);  // select_and_scatter.cc
LibraryOpOr CreateSortOp(const ir::Op& op, const LibraryOpOptions& options);  // sort.cc
LibraryOpOr CreateRngBitGeneratorOp(const ir::Op& op);  // rng_bit_generator.cc

// The window attributes of a stablehlo.convolution, read and checked by
// CreateConvolutionOp (one entry per spatial dimension).
struct ConvWindow {
  std::vector<int64_t> strides, lhs_dilation, rhs_dilation, reversal;
  std::vector<std::pair<int64_t, int64_t>> padding;
  int64_t feature_groups = 1, batch_groups = 1;
};

// dnnl_convolution.cc: an f32 convolution through oneDNN, or nullptr for
// what it leaves to convolution.cc's im2col op (other element types, lhs
// dilation, window reversal, batch groups, negative padding, products
// below kBlasMinMultiplyAdds, shapes only oneDNN's reference code takes).
// `op` has passed CreateConvolutionOp's checks.
LibraryOpOr CreateDnnlConvolutionOp(const ir::Op& op, const ConvWindow& window);
// Whether `op` came from CreateDnnlConvolutionOp (tests).
bool IsDnnlConvolution(const LibraryOp& op);

// dnnl_matmul.cc: an s8 x s8 -> s32 product of `batch` [m, k] x [k, n]
// matrices through oneDNN's int8 matmul, or nullptr where that would not be
// exact (no VNNI) or pays off (below kBlasMinMultiplyAdds). lhs is stored
// [batch, m, k] ([batch, k, m] when lhs_km), rhs [batch, n, k] ([batch, k,
// n] when rhs_kn), the result row-major [batch, m, n].
struct Int8DotShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool lhs_km = false, rhs_kn = false;
};
LibraryOpOr CreateDnnlInt8DotOp(const Int8DotShape& shape);
// Whether `op` came from CreateDnnlInt8DotOp (tests).
bool IsDnnlInt8Dot(const LibraryOp& op);

// The same product planned once for convolution.cc's im2col: C [m x n]
// (row stride ldc) = A [m x k] (row stride lda) x B [k x n] (row stride
// ldb), s8 x s8 -> s32, exact. Null where CreateDnnlInt8DotOp would
// decline. Run may be called concurrently.
class Int8Gemm {
 public:
  virtual ~Int8Gemm() = default;
  virtual void Run(const int8_t* a, const int8_t* b, int32_t* c, const RunContext& context) const = 0;
};
std::unique_ptr<Int8Gemm> CreateInt8Gemm(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc);
// Whether `op` is convolution.cc's op with an Int8Gemm planned (tests).
bool IsInt8GemmConvolution(const LibraryOp& op);

// "line:col: 'stablehlo.x' op message" as an INVALID_ARGUMENT status.
Status OpError(const ir::Op& op, const std::string& message);

// The i64 array attribute `name`, or `rank` copies of `fill` when it is
// absent or of another length.
std::vector<int64_t> I64sOr(const ir::Op& op, std::string_view name, size_t rank, int64_t fill);

// The (low, high) pairs of the `padding` attribute of windowed ops, (0, 0)
// where absent; an error for a padding attribute that cannot be read.
StatusOr<std::vector<std::pair<int64_t, int64_t>>> PaddingPairs(const ir::Op& op, size_t rank);

}  // namespace jitd::cpu::internal

#endif  // JITD_DEVICES_CPU_RUNTIME_INTERNAL_OPS_H_
