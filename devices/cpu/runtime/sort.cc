// stablehlo.sort: every 1-d slice along `dimension`, all operands permuted
// together, with the same bottom-up merge sort jit/eval uses. That makes the
// result identical to the interpreter's for any comparator, including
// inconsistent ones (the sort only ever compares elements in bounds, so an
// inconsistent comparator yields the interpreter's permutation, never
// undefined behaviour). Always stable, which is valid for is_stable = false.
//
// A slice is first gathered into records (one element of every operand,
// each at an offset aligned to its size) and the merge sort moves records,
// so comparisons read contiguous memory instead of chasing a permutation;
// the comparison sequence is the interpreter's, comparison for comparison.
//
// The comparator is LibraryOpOptions::compiled_comparator (JIT code, called
// directly) or ::comparator when given, else the comparator region evaluated
// by jit/eval (eval::RegionEvaluator) on scalar values.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/ops.h"
#include "jit/eval/eval.h"

namespace jitd::cpu::internal {
namespace {

using ir::DType;

Status DeadlineError() {
  return Status(StatusCode::kDeadlineExceeded, "sort ran past its deadline");
}

// Copies one record of kSize bytes (0: `size`, known at run time only).
template <size_t kSize>
inline void CopyRecord(uint8_t* to, const uint8_t* from, size_t size) {
  if constexpr (kSize != 0) {
    std::memcpy(to, from, kSize);
  } else {
    std::memcpy(to, from, size);
  }
}

// Stable bottom-up merge sort of `count` records of `size` bytes in `data`
// (`buffer` as large) under `less(a, b)` (bool, or StatusOr<bool> for a
// comparator that may fail): the interpreter's MergeSort, comparison for
// comparison. The sorted records end in `data`. `past_deadline` is asked
// every ~64k records moved.
template <size_t kSize, typename Less, typename Deadline>
Status MergeSortRecords(uint8_t* data, uint8_t* buffer, size_t count, size_t size, Less&& less,
                        Deadline&& past_deadline) {
  constexpr size_t kCheckEvery = size_t{1} << 16;
  size_t moved = 0;
  uint8_t* from = data;
  uint8_t* to = buffer;
  for (size_t width = 1; width < count; width *= 2) {
    for (size_t lo = 0; lo < count; lo += 2 * width) {
      const size_t mid = std::min(lo + width, count), hi = std::min(lo + 2 * width, count);
      size_t a = lo, b = mid, out = lo;
      while (a < mid && b < hi) {
        bool right_first;
        if constexpr (std::is_same_v<std::invoke_result_t<Less&, const uint8_t*, const uint8_t*>, bool>) {
          right_first = less(from + b * size, from + a * size);
        } else {
          JITD_ASSIGN_OR_RETURN(right_first, less(from + b * size, from + a * size));
        }
        const size_t take = right_first ? b++ : a++;
        CopyRecord<kSize>(to + out++ * size, from + take * size, size);
      }
      if (a < mid) std::memcpy(to + out * size, from + a * size, (mid - a) * size);
      out += mid - a;
      if (b < hi) std::memcpy(to + out * size, from + b * size, (hi - b) * size);
      moved += hi - lo;
      if (moved >= kCheckEvery) {
        moved = 0;
        if (past_deadline()) return DeadlineError();
      }
    }
    std::swap(from, to);
  }
  if (from != data) std::memcpy(data, from, count * size);
  return Status::Ok();
}

template <typename Less, typename Deadline>
Status MergeSortRecords(uint8_t* data, uint8_t* buffer, size_t count, size_t size, Less&& less,
                        Deadline&& past_deadline) {
  switch (size) {
    case 4: return MergeSortRecords<4>(data, buffer, count, size, less, past_deadline);
    case 8: return MergeSortRecords<8>(data, buffer, count, size, less, past_deadline);
    case 16: return MergeSortRecords<16>(data, buffer, count, size, less, past_deadline);
    default: return MergeSortRecords<0>(data, buffer, count, size, less, past_deadline);
  }
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

class SortOp final : public LibraryOp {
 public:
  SortOp(const ir::Op& op, std::vector<ir::Type> types, int64_t dimension, const LibraryOpOptions& options)
      : region_(options.compiled_comparator || options.comparator ? nullptr : &op.region(0)),
        types_(std::move(types)), dimension_(dimension),
        compiled_(options.compiled_comparator), comparator_(options.comparator) {
    const auto& dims = types_[0].dims();
    length_ = dims[static_cast<size_t>(dimension_)];
    stride_ = RowMajorStrides(dims)[static_cast<size_t>(dimension_)];
    slices_ = length_ == 0 ? 0 : types_[0].num_elements() / length_;
    size_t offset = 0, align = 1;
    for (const ir::Type& t : types_) {
      const size_t bytes = static_cast<size_t>(ir::StorageBytes(t.dtype()));
      const size_t a = std::min<size_t>(std::max<size_t>(bytes, 1), 8);
      offset = (offset + a - 1) / a * a;
      bytes_.push_back(static_cast<int64_t>(bytes));
      offsets_.push_back(offset);
      offset += bytes;
      align = std::max(align, a);
    }
    record_ = std::max<size_t>(1, (offset + align - 1) / align * align);
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
    std::vector<uint8_t> records(static_cast<size_t>(length_) * record_), buffer(records.size());
    auto past_deadline = [&] { return PastDeadline(context); };
    int64_t calls = 0;  // interpreted comparisons (deadline every 256)
    for (int64_t s = begin; s < end; ++s) {
      if (failed) return Status::Ok();  // another chunk reports its error
      const int64_t base = SliceBase(s);
      for (size_t i = 0; i < n; ++i) {
        const auto* in = static_cast<const uint8_t*>(operands[i]);
        const size_t bytes = static_cast<size_t>(bytes_[i]);
        for (int64_t j = 0; j < length_; ++j) {
          std::memcpy(&records[static_cast<size_t>(j) * record_ + offsets_[i]],
                      in + (base + j * stride_) * bytes_[i], bytes);
        }
      }
      Status sorted;
      if (compiled_ != nullptr) {
        const ComparatorFn fn = *compiled_;
        if (n == 1) {
          sorted = MergeSortRecords(
              records.data(), buffer.data(), static_cast<size_t>(length_), record_,
              [fn](const uint8_t* a, const uint8_t* b) {
                const void* l = a;
                const void* r = b;
                return fn(&l, &r) != 0;
              },
              past_deadline);
        } else {
          sorted = MergeSortRecords(
              records.data(), buffer.data(), static_cast<size_t>(length_), record_,
              [&](const uint8_t* a, const uint8_t* b) {
                for (size_t i = 0; i < n; ++i) {
                  lhs[i] = a + offsets_[i];
                  rhs[i] = b + offsets_[i];
                }
                return fn(lhs.data(), rhs.data()) != 0;
              },
              past_deadline);
        }
      } else if (comparator_) {
        sorted = MergeSortRecords(
            records.data(), buffer.data(), static_cast<size_t>(length_), record_,
            [&](const uint8_t* a, const uint8_t* b) {
              for (size_t i = 0; i < n; ++i) {
                lhs[i] = a + offsets_[i];
                rhs[i] = b + offsets_[i];
              }
              return comparator_(lhs.data(), rhs.data());
            },
            past_deadline);
      } else {
        sorted = MergeSortRecords(
            records.data(), buffer.data(), static_cast<size_t>(length_), record_,
            [&](const uint8_t* a, const uint8_t* b) -> StatusOr<bool> {
              if ((++calls & 255) == 0 && PastDeadline(context)) return DeadlineError();
              for (size_t i = 0; i < n; ++i) {
                std::memcpy(args[2 * i].literal().mutable_element_ptr(0), a + offsets_[i],
                            static_cast<size_t>(bytes_[i]));
                std::memcpy(args[2 * i + 1].literal().mutable_element_ptr(0), b + offsets_[i],
                            static_cast<size_t>(bytes_[i]));
              }
              JITD_ASSIGN_OR_RETURN(std::vector<eval::RuntimeValue> out, evaluator->Run(*region_, args));
              if (out.size() != 1 || !out[0].is_tensor() || out[0].literal().num_elements() != 1) {
                return InvalidArgument("'stablehlo.sort' op comparator must return one tensor<i1>");
              }
              return out[0].literal().GetPred(0);
            },
            past_deadline);
      }
      JITD_RETURN_IF_ERROR(sorted);
      for (size_t i = 0; i < n; ++i) {
        auto* out = static_cast<uint8_t*>(results[i]);
        const size_t bytes = static_cast<size_t>(bytes_[i]);
        for (int64_t j = 0; j < length_; ++j) {
          std::memcpy(out + (base + j * stride_) * bytes_[i],
                      &records[static_cast<size_t>(j) * record_ + offsets_[i]], bytes);
        }
      }
    }
    return Status::Ok();
  }

  const ir::Region* region_;  // the comparator region when no other comparator
  std::vector<ir::Type> types_;
  std::vector<int64_t> bytes_;
  std::vector<size_t> offsets_;  // of each operand in a record
  size_t record_ = 1;            // bytes per record
  int64_t dimension_, length_ = 0, stride_ = 1, slices_ = 0;
  const ComparatorFn* compiled_;
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
  if (!options.comparator && !options.compiled_comparator) {
    if (op.num_regions() != 1 || op.region(0).num_blocks() != 1 ||
        op.region(0).block(0).num_args() != 2 * types.size() ||
        !IsSelfContained(op.region(0))) {
      return Declined();
    }
  }
  return std::unique_ptr<LibraryOp>(new SortOp(op, std::move(types), dimension, options));
}

}  // namespace jitd::cpu::internal
