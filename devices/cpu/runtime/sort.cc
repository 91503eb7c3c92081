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
#include <functional>
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

// One pass of the bottom-up merge sort over `count` records of `size` bytes
// (kSize: the same, known at compile time; 0 = only at run time): merges
// the pairs of sorted runs of `width` records numbered [first, last) from
// `from` into `to` under `less(a, b)` (bool, or StatusOr<bool> for a
// comparator that may fail), comparison for comparison the interpreter's
// MergeSort. `past_deadline` is asked every ~64k records moved.
template <size_t kSize, typename Less, typename Deadline>
Status MergePairs(const uint8_t* from, uint8_t* to, size_t count, size_t size, size_t width,
                  size_t first, size_t last, Less& less, Deadline& past_deadline) {
  constexpr size_t kCheckEvery = size_t{1} << 16;
  size_t moved = 0;
  for (size_t pair = first; pair < last; ++pair) {
    const size_t lo = pair * 2 * width;
    const size_t mid = std::min(lo + width, count), hi = std::min(lo + 2 * width, count);
    size_t a = lo, b = mid, out = lo;
    while (a < mid && b < hi) {
      bool right_first;
      if constexpr (std::is_same_v<std::invoke_result_t<Less&, const uint8_t*, const uint8_t*>, bool>) {
        right_first = less(from + b * size, from + a * size);
      } else {
        JITD_ASSIGN_OR_RETURN(right_first, less(from + b * size, from + a * size));
      }
      // Branch-free: on random keys the outcome is a coin flip.
      const size_t take = right_first ? b : a;
      b += right_first;
      a += !right_first;
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
  return Status::Ok();
}

// Pairs of runs of `width` records in a pass over `count` records.
size_t NumPairs(size_t count, size_t width) { return (count + 2 * width - 1) / (2 * width); }

// The passes of widths [first_width, end_width) (powers of two) over
// `data`, `buffer` as large; the records end in `data`.
template <size_t kSize, typename Less, typename Deadline>
Status MergePasses(uint8_t* data, uint8_t* buffer, size_t count, size_t size, size_t first_width,
                   size_t end_width, Less& less, Deadline& past_deadline) {
  uint8_t* from = data;
  uint8_t* to = buffer;
  for (size_t width = first_width; width < count && width < end_width; width *= 2) {
    JITD_RETURN_IF_ERROR(MergePairs<kSize>(from, to, count, size, width, 0, NumPairs(count, width), less,
                                           past_deadline));
    std::swap(from, to);
  }
  if (from != data) std::memcpy(data, from, count * size);
  return Status::Ok();
}

// Calls fn.template operator()<kSize>() with kSize = `size` for the common
// record sizes, else 0.
template <typename Fn>
Status DispatchRecordSize(size_t size, Fn&& fn) {
  switch (size) {
    case 4: return fn.template operator()<4>();
    case 8: return fn.template operator()<8>();
    case 16: return fn.template operator()<16>();
    default: return fn.template operator()<0>();
  }
}

// The whole stable merge sort of `count` records.
template <typename Less, typename Deadline>
Status MergeSortRecords(uint8_t* data, uint8_t* buffer, size_t count, size_t size, Less&& less,
                        Deadline&& past_deadline) {
  return DispatchRecordSize(size, [&]<size_t kSize>() {
    return MergePasses<kSize>(data, buffer, count, size, 1, count, less, past_deadline);
  });
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
    if (slices_ == 1 && region_ == nullptr && context.parallel_for != nullptr &&
        length_ >= 2 * static_cast<int64_t>(kParallelBlock)) {
      return SortOneSliceInParallel(operands, results, context);
    }
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

  // Records of an aligned block that one task sorts alone (a power of two).
  static constexpr size_t kParallelBlock = size_t{1} << 15;

  void Gather(int64_t base, std::span<const void* const> operands, std::vector<uint8_t>& records) const {
    for (size_t i = 0; i < types_.size(); ++i) {
      const auto* in = static_cast<const uint8_t*>(operands[i]);
      const size_t bytes = static_cast<size_t>(bytes_[i]);
      for (int64_t j = 0; j < length_; ++j) {
        std::memcpy(&records[static_cast<size_t>(j) * record_ + offsets_[i]], in + (base + j * stride_) * bytes_[i],
                    bytes);
      }
    }
  }

  void Scatter(int64_t base, const uint8_t* records, std::span<void* const> results) const {
    for (size_t i = 0; i < types_.size(); ++i) {
      auto* out = static_cast<uint8_t*>(results[i]);
      const size_t bytes = static_cast<size_t>(bytes_[i]);
      for (int64_t j = 0; j < length_; ++j) {
        std::memcpy(out + (base + j * stride_) * bytes_[i], records + static_cast<size_t>(j) * record_ + offsets_[i],
                    bytes);
      }
    }
  }

  // Calls f(less) with the compiled or callable comparator over records.
  template <typename F>
  Status WithFastLess(F&& f) const {
    const size_t n = types_.size();
    std::vector<const void*> lhs(n), rhs(n);
    if (compiled_ != nullptr) {
      const ComparatorFn fn = *compiled_;
      if (n == 1) {
        auto less = [fn](const uint8_t* a, const uint8_t* b) {
          const void* l = a;
          const void* r = b;
          return fn(&l, &r) != 0;
        };
        return f(less);
      }
      auto less = [&](const uint8_t* a, const uint8_t* b) {
        for (size_t i = 0; i < n; ++i) {
          lhs[i] = a + offsets_[i];
          rhs[i] = b + offsets_[i];
        }
        return fn(lhs.data(), rhs.data()) != 0;
      };
      return f(less);
    }
    auto less = [&](const uint8_t* a, const uint8_t* b) {
      for (size_t i = 0; i < n; ++i) {
        lhs[i] = a + offsets_[i];
        rhs[i] = b + offsets_[i];
      }
      return comparator_(lhs.data(), rhs.data());
    };
    return f(less);
  }

  // One long slice with a compiled or callable comparator, on the
  // parallel_for: the passes narrower than kParallelBlock stay inside
  // aligned blocks, which are sorted independently; the merges of every
  // wider pass are independent of each other. The comparison sequence is the
  // sequential sort's, so the result is too.
  Status SortOneSliceInParallel(std::span<const void* const> operands, std::span<void* const> results,
                                const RunContext& context) const {
    const size_t count = static_cast<size_t>(length_);
    std::vector<uint8_t> records(count * record_), buffer(records.size());
    Gather(0, operands, records);
    std::mutex mu;
    Status first_error = Status::Ok();
    auto past_deadline = [&context] { return PastDeadline(context); };
    auto run = [&](size_t tasks, const std::function<Status(size_t)>& task) {
      (*context.parallel_for)(static_cast<int64_t>(tasks), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          Status st = task(static_cast<size_t>(t));
          if (!st.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            if (first_error.ok()) first_error = std::move(st);
            return;
          }
        }
      });
      return first_error;
    };
    JITD_RETURN_IF_ERROR(run((count + kParallelBlock - 1) / kParallelBlock, [&](size_t block) {
      const size_t lo = block * kParallelBlock;
      return WithFastLess([&](auto& less) {
        return MergeSortRecords(records.data() + lo * record_, buffer.data() + lo * record_,
                                std::min(kParallelBlock, count - lo), record_, less, past_deadline);
      });
    }));
    uint8_t* from = records.data();
    uint8_t* to = buffer.data();
    for (size_t width = kParallelBlock; width < count; width *= 2) {
      JITD_RETURN_IF_ERROR(run(NumPairs(count, width), [&](size_t pair) {
        return WithFastLess([&](auto& less) {
          return DispatchRecordSize(record_, [&]<size_t kSize>() {
            return MergePairs<kSize>(from, to, count, record_, width, pair, pair + 1, less, past_deadline);
          });
        });
      }));
      std::swap(from, to);
    }
    Scatter(0, from, results);
    return Status::Ok();
  }

  Status SortSlices(int64_t begin, int64_t end, std::span<const void* const> operands,
                    std::span<void* const> results, const RunContext& context,
                    const std::atomic<bool>& failed) const {
    const size_t n = types_.size();
    std::unique_ptr<eval::RegionEvaluator> evaluator;
    std::vector<eval::RuntimeValue> args;
    if (region_ != nullptr) {
      eval::EvalOptions options;
      options.deadline = context.deadline;
      options.cancel = context.cancel;
      evaluator = std::make_unique<eval::RegionEvaluator>(EmptyModule(), options);
      for (size_t i = 0; i < 2 * n; ++i) {
        JITD_ASSIGN_OR_RETURN(ir::Literal scalar,
                              ir::Literal::Create(ir::Type::Scalar(types_[i / 2].dtype())));
        args.emplace_back(std::move(scalar));
      }
    }
    std::vector<uint8_t> records(static_cast<size_t>(length_) * record_), buffer(records.size());
    auto past_deadline = [&] { return PastDeadline(context); };
    int64_t calls = 0;  // interpreted comparisons (deadline every 256)
    for (int64_t s = begin; s < end; ++s) {
      if (failed) return Status::Ok();  // another chunk reports its error
      const int64_t base = SliceBase(s);
      Gather(base, operands, records);
      Status sorted;
      if (region_ == nullptr) {
        sorted = WithFastLess([&](auto& less) {
          return MergeSortRecords(records.data(), buffer.data(), static_cast<size_t>(length_), record_, less,
                                  past_deadline);
        });
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
      Scatter(base, records.data(), results);
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
