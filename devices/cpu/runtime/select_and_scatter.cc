// stablehlo.select_and_scatter whose `select` body is one compare of its two
// arguments (default comparison type) and whose `scatter` body is a
// recognized fold (internal/fold.h); other bodies are declined.
//
// Semantics are jit/eval's: for each source element in row-major order,
// the window's in-bounds operand elements are visited in row-major window
// order, keeping the current choice while select(current, next) holds
// (padding is never selected); the source element is then folded into the
// result, which starts as the init value, at the selected position.
#include <cstring>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/fold.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

enum class Direction { kEq, kNe, kGe, kGt, kLe, kLt };

template <typename V>
bool Holds(Direction d, V a, V b) {
  switch (d) {
    case Direction::kEq: return a == b;
    case Direction::kNe: return a != b;
    case Direction::kGe: return a >= b;
    case Direction::kGt: return a > b;
    case Direction::kLe: return a <= b;
    case Direction::kLt: return a < b;
  }
  return false;
}

// Region 0 of `op` as `compare DIR, %arg0, %arg1` (or with the arguments
// swapped, turned into the mirrored direction) with the default comparison
// type of `t`, returned.
std::optional<Direction> RecognizeSelect(const ir::Op& op, DType t) {
  if (op.num_regions() != 2 || op.region(0).num_blocks() != 1) return std::nullopt;
  const ir::Block& b = op.region(0).block(0);
  if (b.num_args() != 2 || b.ops().size() != 2) return std::nullopt;
  const ir::Op& cmp = *b.ops()[0];
  const ir::Op& ret = *b.ops()[1];
  if (cmp.code() != ir::OpCode::kCompare || cmp.num_operands() != 2 ||
      ret.code() != ir::OpCode::kReturn || ret.num_operands() != 1 ||
      ret.operand(0) != cmp.result(0) || b.arg(0)->type() != ir::Type::Scalar(t) ||
      b.arg(1)->type() != ir::Type::Scalar(t)) {
    return std::nullopt;
  }
  const bool straight = cmp.operand(0) == b.arg(0) && cmp.operand(1) == b.arg(1);
  const bool swapped = cmp.operand(0) == b.arg(1) && cmp.operand(1) == b.arg(0);
  if (!straight && !swapped) return std::nullopt;
  const std::string default_type =
      ir::IsFloat(t) ? "FLOAT" : (ir::IsSignedInt(t) ? "SIGNED" : "UNSIGNED");
  if (const ir::EnumAttr* ct = cmp.GetEnum("compare_type"); ct && ct->value != default_type) {
    return std::nullopt;
  }
  const ir::EnumAttr* dir = cmp.GetEnum("comparison_direction");
  if (!dir) return std::nullopt;
  const std::string& v = dir->value;
  Direction d;
  if (v == "EQ") d = Direction::kEq;
  else if (v == "NE") d = Direction::kNe;
  else if (v == "GE") d = swapped ? Direction::kLe : Direction::kGe;
  else if (v == "GT") d = swapped ? Direction::kLt : Direction::kGt;
  else if (v == "LE") d = swapped ? Direction::kGe : Direction::kLe;
  else if (v == "LT") d = swapped ? Direction::kGt : Direction::kLt;
  else return std::nullopt;
  return d;
}

struct SelectScatterPlan {
  ir::Type operand, source;
  Direction select = Direction::kGe;
  FoldOp scatter = FoldOp::kAdd;
  std::vector<int64_t> window;
  // positions[d][s * window[d] + w]: operand index along d, or -1.
  std::vector<std::vector<int64_t>> positions;
  std::vector<int64_t> operand_strides;
};

class SelectAndScatterOp final : public LibraryOp {
 public:
  explicit SelectAndScatterOp(SelectScatterPlan plan) : p_(std::move(plan)) {}

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
    const S* operand = static_cast<const S*>(operands[0]);
    const S* source = static_cast<const S*>(operands[1]);
    S init;
    std::memcpy(&init, operands[2], sizeof(S));
    S* out = static_cast<S*>(results[0]);
    const int64_t out_count = p_.operand.num_elements();
    for (int64_t i = 0; i < out_count; ++i) out[i] = init;
    const size_t rank = p_.window.size();
    int64_t window_size = 1;
    for (int64_t w : p_.window) window_size *= w;
    std::vector<int64_t> s(rank, 0), w(rank, 0);
    const int64_t count = p_.source.num_elements();
    for (int64_t e = 0; e < count; ++e) {
      if ((e & 0xfff) == 0xfff && PastDeadline(context)) {
        return Status(StatusCode::kDeadlineExceeded, "select_and_scatter ran past its deadline");
      }
      int64_t selected = -1;
      typename C::Value best{};
      std::fill(w.begin(), w.end(), 0);
      for (int64_t k = 0; k < window_size; ++k) {
        int64_t offset = 0;
        for (size_t d = 0; d < rank && offset >= 0; ++d) {
          const int64_t q = p_.positions[d][s[d] * p_.window[d] + w[d]];
          offset = q < 0 ? -1 : offset + q * p_.operand_strides[d];
        }
        if (offset >= 0) {
          const auto v = C::Load(operand[offset]);
          if (selected < 0 || !Holds(p_.select, best, v)) {
            selected = offset;
            best = v;
          }
        }
        for (size_t d = rank; d-- > 0;) {
          if (++w[d] < p_.window[d]) break;
          w[d] = 0;
        }
      }
      if (selected >= 0) {
        out[selected] = C::Store(Apply(p_.scatter, C::Load(out[selected]), C::Load(source[e])));
      }
      for (size_t d = rank; d-- > 0;) {
        if (++s[d] < p_.source.dim(static_cast<int64_t>(d))) break;
        s[d] = 0;
      }
    }
    return Status::Ok();
  }

  SelectScatterPlan p_;
};

}  // namespace

LibraryOpOr CreateSelectAndScatterOp(const ir::Op& op) {
  if (op.num_operands() != 3 || op.num_results() != 1) return Declined();
  SelectScatterPlan p;
  p.operand = op.operand(0)->type();
  p.source = op.operand(1)->type();
  const ir::Type& init = op.operand(2)->type();
  const ir::Type& result = op.result(0)->type();
  if (!p.operand.is_tensor() || !p.source.is_tensor() || !init.is_tensor() ||
      !result.is_tensor()) {
    return Declined();
  }
  const DType t = p.operand.dtype();
  if (p.source.dtype() != t || init.dtype() != t || result.dtype() != t || init.rank() != 0 ||
      result.dims() != p.operand.dims() || p.source.rank() != p.operand.rank()) {
    return Declined();
  }
  bool has_codec = false;
  WithCodec(t, [&]<typename C>() { has_codec = true; });
  if (!has_codec) return Declined();
  const std::optional<Direction> select = RecognizeSelect(op, t);
  const std::optional<FoldOp> scatter = RecognizeFold(op, 1, t);
  if (!select || !scatter) return Declined();
  p.select = *select;
  p.scatter = *scatter;
  const size_t rank = static_cast<size_t>(p.operand.rank());
  p.window = I64sOr(op, "window_dimensions", rank, 1);
  const std::vector<int64_t> strides = I64sOr(op, "window_strides", rank, 1);
  JITD_ASSIGN_OR_RETURN(const auto padding, PaddingPairs(op, rank));
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t v : {p.window[d], strides[d], padding[d].first, padding[d].second}) {
      if (v <= -kLimit || v >= kLimit) return Declined();
    }
    if (strides[d] < 1 || p.window[d] < 0) return OpError(op, "has a window stride or size out of range");
  }
  p.operand_strides = RowMajorStrides(p.operand.dims());
  p.positions.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t s = 0; s < p.source.dim(static_cast<int64_t>(d)); ++s) {
      for (int64_t w = 0; w < p.window[d]; ++w) {
        const int64_t q = s * strides[d] + w - padding[d].first;
        p.positions[d].push_back(q >= 0 && q < p.operand.dim(static_cast<int64_t>(d)) ? q : -1);
      }
    }
  }
  return std::unique_ptr<LibraryOp>(new SelectAndScatterOp(std::move(p)));
}

}  // namespace jitd::cpu::internal
