// The per-op factories behind CreateLibraryOp (internal to
// devices/cpu/runtime). Each returns nullptr for what it does not support.
#ifndef JITD_DEVICES_CPU_RUNTIME_INTERNAL_OPS_H_
#define JITD_DEVICES_CPU_RUNTIME_INTERNAL_OPS_H_

#include <memory>

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
LibraryOpOr CreateReduceWindowOp(const ir::Op& op);    // reduce_window.cc
LibraryOpOr CreateGatherOp(const ir::Op& op);          // indexing.cc
LibraryOpOr CreateScatterOp(const ir::Op& op);         // indexing.cc
LibraryOpOr CreateSelectAndScatterOp(const ir::Op& op);  // select_and_scatter.cc
LibraryOpOr CreateSortOp(const ir::Op& op, const LibraryOpOptions& options);  // sort.cc

// "line:col: 'stablehlo.x' op message" as an INVALID_ARGUMENT status.
Status OpError(const ir::Op& op, const std::string& message);

}  // namespace jitd::cpu::internal

#endif  // JITD_DEVICES_CPU_RUNTIME_INTERNAL_OPS_H_
