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

std::vector<int64_t> I64sOr(const ir::Op& op, std::string_view name, size_t rank, int64_t fill) {
  auto v = op.GetI64Array(name);
  if (!v || v->size() != rank) return std::vector<int64_t>(rank, fill);
  return *v;
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> PaddingPairs(const ir::Op& op, size_t rank) {
  std::vector<std::pair<int64_t, int64_t>> padding(rank, {0, 0});
  if (const ir::Attribute* a = op.attr("padding")) {
    if (const auto* dense = a->get_if<ir::DenseElementsAttr>()) {
      auto lit = ir::DenseElementsToLiteral(*dense);
      if (!lit.ok()) return OpError(op, "has an unreadable padding attribute");
      for (size_t d = 0; d < rank && static_cast<int64_t>(2 * d + 1) < lit->num_elements(); ++d) {
        padding[d] = {lit->GetInt(static_cast<int64_t>(2 * d)),
                      lit->GetInt(static_cast<int64_t>(2 * d + 1))};
      }
    }
  }
  return padding;
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
      return internal::CreateReduceWindowOp(op, options);
    case ir::OpCode::kGather:
      return internal::CreateGatherOp(op);
    case ir::OpCode::kScatter:
      return internal::CreateScatterOp(op);
    case ir::OpCode::kSelectAndScatter:
      return internal::CreateSelectAndScatterOp(op);
    case ir::OpCode::kSort:
      return internal::CreateSortOp(op, options);
    case ir::OpCode::kRngBitGenerator:
      return internal::CreateRngBitGeneratorOp(op);
    default:
      return std::unique_ptr<LibraryOp>();
  }
}

}  // namespace jitd::cpu
