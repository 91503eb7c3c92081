// CreateLibraryOp: dispatch on the op code to the per-op planners.
#include "devices/cpu/runtime/library_op.h"

#include <string>

#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu {

namespace internal {

Status OpError(const ir::Op& op, const std::string& message) {
  return InvalidArgument(op.loc().ToString() + ": '" + std::string(op.name()) + "' op " +
                         message);
}

}  // namespace internal

StatusOr<std::unique_ptr<LibraryOp>> CreateLibraryOp(const ir::Op& op,
                                                     const LibraryOpOptions& options) {
  switch (op.code()) {
    case ir::OpCode::kDotGeneral:
    case ir::OpCode::kDot:
      return internal::CreateDotOp(op);
    case ir::OpCode::kConvolution:
      return internal::CreateConvolutionOp(op);
    case ir::OpCode::kFft:
      return internal::CreateFftOp(op);
    case ir::OpCode::kTriangularSolve:
      return internal::CreateTriangularSolveOp(op);
    case ir::OpCode::kCholesky:
      return internal::CreateCholeskyOp(op);
    case ir::OpCode::kReduceWindow:
      return internal::CreateReduceWindowOp(op);
    case ir::OpCode::kGather:
      return internal::CreateGatherOp(op);
    case ir::OpCode::kScatter:
      return internal::CreateScatterOp(op);
    case ir::OpCode::kSelectAndScatter:
      return internal::CreateSelectAndScatterOp(op);
    case ir::OpCode::kSort:
      return internal::CreateSortOp(op, options);
    default:
      return std::unique_ptr<LibraryOp>();
  }
}

}  // namespace jitd::cpu
