// stablehlo.sort: every 1-d slice along `dimension`, all operands permuted
// together, with the same bottom-up merge sort jit/eval uses. That makes the
// result identical to the interpreter's for any comparator, including
// inconsistent ones (the sort only ever compares elements in bounds, so an
// inconsistent comparator yields the interpreter's permutation, never
// undefined behaviour). Always stable, which is valid for is_stable = false.
//
// The comparator is LibraryOpOptions::comparator when given, else the
// comparator region evaluated by jit/eval (eval::RegionEvaluator) on scalar
// values.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/ops.h"
#include "jit/eval/eval.h"

namespace jitd::cpu::internal {
namespace {

using ir::DType;

// Stable bottom-up merge sort of `order` under `less` (which may fail):
// the interpreter's MergeSort, comparison for comparison.
template <typename Less>
Status MergeSort(std::vector<int64_t>& order, std::vector<int64_t>& buffer, Less&& less) {
  const size_t size = order.size();
  buffer.resize(size);
  for (size_t width = 1; width < size; width *= 2) {
    for (size_t lo = 0; lo < size; lo += 2 * width) {
      const size_t mid = std::min(lo + width, size), hi = std::min(lo + 2 * width, size);
      size_t a = lo, b = mid, out = lo;
      while (a < mid && b < hi) {
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

// Whether every value `region` uses is defined inside it (so it can run
// alone) and it calls no function (a standalone run has no module).
bool IsSelfContained(const ir::Region& region) {
  std::vector<const ir::Value*> defined;
  std::function<bool(const ir::Region&)> visit = [&](const ir::Region& r) {
    for (size_t bi = 0; bi < r.num_blocks(); ++bi) {
      const ir::Block& block = r.block(bi);
      for (size_t i = 0; i < block.num_args(); ++i) defined.push_back(block.arg(i));
      for (const auto& op : block.ops()) {
        if (op->code() == ir::OpCode::kFuncCall) return false;
        for (const ir::Value* v : op->operands()) {
          if (std::find(defined.begin(), defined.end(), v) == defined.end()) return false;
        }
        for (size_t i = 0; i < op->num_regions(); ++i) {
          if (!visit(op->region(i))) return false;
        }
        for (size_t i = 0; i < op->num_results(); ++i) defined.push_back(op->result(i));
      }
    }
    return true;
  };
  return visit(region);
}

const ir::Module& EmptyModule() {
  static const ir::Module* module = new ir::Module();
  return *module;
}

Status DeadlineError() {
  return Status(StatusCode::kDeadlineExceeded, "sort ran past its deadline");
}

class SortOp final : public LibraryOp {
 public:
  SortOp(const ir::Op& op, std::vector<ir::Type> types, int64_t dimension, Comparator comparator)
      : region_(comparator ? nullptr : &op.region(0)), types_(std::move(types)),
        dimension_(dimension), comparator_(std::move(comparator)) {
    const auto& dims = types_[0].dims();
    length_ = dims[static_cast<size_t>(dimension_)];
    stride_ = RowMajorStrides(dims)[static_cast<size_t>(dimension_)];
    slices_ = length_ == 0 ? 0 : types_[0].num_elements() / length_;
    for (const ir::Type& t : types_) bytes_.push_back(ir::StorageBytes(t.dtype()));
  }

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    if (slices_ == 0) return Status::Ok();
    std::mutex mu;
    Status first_error = Status::Ok();
    std::atomic<bool> failed{false};
    ParallelRange(context, slices_, length_ * 64, [&](int64_t begin, int64_t end) {
      Status s = SortSlices(begin, end, operands, results, context, failed);
      if (!s.ok()) {
        failed = true;
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = std::move(s);
      }
    });
    return first_error;
  }

 private:
  // Slice s starts at this linear offset: slices are indexed over the
  // dimensions before and after `dimension`.
  int64_t SliceBase(int64_t s) const { return (s / stride_) * stride_ * length_ + s % stride_; }

  Status SortSlices(int64_t begin, int64_t end, std::span<const void* const> operands,
                    std::span<void* const> results, const RunContext& context,
                    const std::atomic<bool>& failed) const {
    const size_t n = types_.size();
    std::unique_ptr<eval::RegionEvaluator> evaluator;
    std::vector<eval::RuntimeValue> args;
    if (region_ != nullptr) {
      eval::EvalOptions options;
      options.deadline = context.deadline;
      evaluator = std::make_unique<eval::RegionEvaluator>(EmptyModule(), options);
      for (size_t i = 0; i < 2 * n; ++i) {
        JITD_ASSIGN_OR_RETURN(ir::Literal scalar,
                              ir::Literal::Create(ir::Type::Scalar(types_[i / 2].dtype())));
        args.emplace_back(std::move(scalar));
      }
    }
    std::vector<const void*> lhs(n), rhs(n);
    std::vector<int64_t> order, buffer;
    int64_t calls = 0;
    for (int64_t s = begin; s < end; ++s) {
      if (failed) return Status::Ok();  // another chunk reports its error
      const int64_t base = SliceBase(s);
      auto element = [&](size_t i, int64_t index) {
        return static_cast<const uint8_t*>(operands[i]) + (base + index * stride_) * bytes_[i];
      };
      auto less = [&](int64_t a, int64_t b) -> StatusOr<bool> {
        if ((++calls & 255) == 0 && PastDeadline(context)) return DeadlineError();
        if (comparator_) {
          for (size_t i = 0; i < n; ++i) {
            lhs[i] = element(i, a);
            rhs[i] = element(i, b);
          }
          return comparator_(lhs.data(), rhs.data());
        }
        for (size_t i = 0; i < n; ++i) {
          std::memcpy(args[2 * i].literal().mutable_element_ptr(0), element(i, a),
                      static_cast<size_t>(bytes_[i]));
          std::memcpy(args[2 * i + 1].literal().mutable_element_ptr(0), element(i, b),
                      static_cast<size_t>(bytes_[i]));
        }
        JITD_ASSIGN_OR_RETURN(std::vector<eval::RuntimeValue> out, evaluator->Run(*region_, args));
        if (out.size() != 1 || !out[0].is_tensor() || out[0].literal().num_elements() != 1) {
          return InvalidArgument("'stablehlo.sort' op comparator must return one tensor<i1>");
        }
        return out[0].literal().GetPred(0);
      };
      order.resize(static_cast<size_t>(length_));
      std::iota(order.begin(), order.end(), 0);
      JITD_RETURN_IF_ERROR(MergeSort(order, buffer, less));
      for (size_t i = 0; i < n; ++i) {
        auto* out = static_cast<uint8_t*>(results[i]);
        for (int64_t j = 0; j < length_; ++j) {
          std::memcpy(out + (base + j * stride_) * bytes_[i], element(i, order[j]),
                      static_cast<size_t>(bytes_[i]));
        }
      }
    }
    return Status::Ok();
  }

  const ir::Region* region_;  // the comparator region when no comparator_
  std::vector<ir::Type> types_;
  std::vector<int64_t> bytes_;
  int64_t dimension_, length_ = 0, stride_ = 1, slices_ = 0;
  Comparator comparator_;
};

}  // namespace

LibraryOpOr CreateSortOp(const ir::Op& op, const LibraryOpOptions& options) {
  if (op.num_operands() == 0 || op.num_results() != op.num_operands()) return Declined();
  std::vector<ir::Type> types;
  for (size_t i = 0; i < op.num_operands(); ++i) {
    const ir::Type& t = op.operand(i)->type();
    if (!t.is_tensor() || t.dims() != op.operand(0)->type().dims()) {
      return OpError(op, "operands must be tensors of one shape");
    }
    types.push_back(t);
  }
  const int64_t rank = types[0].rank();
  if (rank == 0) return Declined();
  int64_t dimension = op.GetInt("dimension").value_or(-1);
  if (dimension < 0) dimension += rank;
  if (dimension < 0 || dimension >= rank) return OpError(op, "dimension is out of range");
  if (!options.comparator) {
    if (op.num_regions() != 1 || op.region(0).num_blocks() != 1 ||
        op.region(0).block(0).num_args() != 2 * types.size() ||
        !IsSelfContained(op.region(0))) {
      return Declined();
    }
  }
  return std::unique_ptr<LibraryOp>(new SortOp(op, std::move(types), dimension, options.comparator));
}

}  // namespace jitd::cpu::internal
