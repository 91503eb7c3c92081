// stablehlo.reduce_window with one input whose body is one elementwise
// add, multiply, maximum, minimum, and, or or xor of its two arguments (the
// bodies jit/eval folds directly), and — given a compiled body
// (LibraryOpOptions::compiled_window_body) — any number of inputs of any
// element type with any body codegen compiles (complex folds, argmax-style
// selections); every other body is declined.
//
// Semantics are jit/eval's: for each result element, a left fold from the
// init value over the window in row-major window order; positions in the
// padding or between base-dilated elements fold the init value. The
// accumulator is rounded to the element type after every step. f32/f64 fold
// natively; f16/bf16 fold in float and round to the type each step, which
// equals jit/eval's double arithmetic rounded once (float has more than
// twice their precision plus two bits, so the double rounding is
// innocuous). Integers wrap; i1 add/or and multiply/and coincide.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/fold.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

// max / min of two floats exactly as Apply computes them (NaN wins, +0
// beats -0 for max), without branches so that row loops vectorize.
template <bool kMax, typename V>
inline V MaxMinStep(V l, V r) {
  V m = (kMax ? l > r : l < r) ? l : r;
  m = l == r ? ((kMax != std::signbit(l)) ? l : r) : m;
  m = r != r ? r : m;
  return l != l ? l : m;
}

// acc[c] = Round(fold(acc[c], Load(src[c]))) for c < n: Apply's step, with
// loops the compiler vectorizes for f32 / f64.
template <typename C, typename S, typename A>
void FoldRow(FoldOp fold, A* acc, const S* src, int64_t n) {
  if constexpr (std::is_floating_point_v<A> && std::is_same_v<S, A>) {
    switch (fold) {
      case FoldOp::kAdd:
        for (int64_t c = 0; c < n; ++c) acc[c] = acc[c] + src[c];
        return;
      case FoldOp::kMultiply:
        for (int64_t c = 0; c < n; ++c) acc[c] = acc[c] * src[c];
        return;
      case FoldOp::kMaximum:
        for (int64_t c = 0; c < n; ++c) acc[c] = MaxMinStep<true>(acc[c], src[c]);
        return;
      case FoldOp::kMinimum:
        for (int64_t c = 0; c < n; ++c) acc[c] = MaxMinStep<false>(acc[c], src[c]);
        return;
      default:
        break;
    }
  }
  for (int64_t c = 0; c < n; ++c) acc[c] = C::Round(Apply(fold, acc[c], C::Load(src[c])));
}

struct WindowPlan {
  ir::Type in, out;
  FoldOp fold = FoldOp::kAdd;
  std::vector<int64_t> window;
  // positions[d][o * window[d] + w]: input index along d, or -1 (padding).
  std::vector<std::vector<int64_t>> positions;
  std::vector<int64_t> in_strides;
  // The last dimension passes through (window 1, stride 1, no padding or
  // dilation: pooling over a feature-last image): each window tap folds a
  // contiguous row of that dimension's elements at once. Same fold order
  // per element as the general path.
  bool last_passes_through = false;
};

class ReduceWindowOp final : public LibraryOp {
 public:
  explicit ReduceWindowOp(WindowPlan plan) : p_(std::move(plan)) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    Status status = Unimplemented("reduce_window: unsupported element type");
    WithCodec(p_.in.dtype(), [&]<typename C>() {
      status = RunAs<C, typename C::Storage>(operands, results, context);
    });
    return status;
  }

 private:
  template <typename C, typename S>
  Status RunAs(std::span<const void* const> operands, std::span<void* const> results,
               const RunContext& context) const {
    const S* in = static_cast<const S*>(operands[0]);
    S init_s;
    std::memcpy(&init_s, operands[1], sizeof(S));
    S* out = static_cast<S*>(results[0]);
    const auto init = C::Load(init_s);
    const int64_t count = p_.out.num_elements();
    const size_t rank = p_.window.size();
    int64_t window_size = 1;
    for (int64_t w : p_.window) window_size *= w;
    if (p_.last_passes_through && count > 0) {
      RunRows<C, S>(in, init, out, window_size, context);
      return Status::Ok();
    }
    ParallelRange(context, count, window_size, [&](int64_t begin, int64_t end) {
      // The multi-index of `begin`, then an odometer.
      std::vector<int64_t> r(rank, 0), w(rank, 0);
      int64_t rest = begin;
      for (size_t d = rank; d-- > 0;) {
        r[d] = rest % p_.out.dim(d);
        rest /= p_.out.dim(d);
      }
      for (int64_t o = begin; o < end; ++o) {
        auto acc = init;
        std::fill(w.begin(), w.end(), 0);
        for (int64_t k = 0; k < window_size; ++k) {
          int64_t offset = 0;
          for (size_t d = 0; d < rank && offset >= 0; ++d) {
            const int64_t q = p_.positions[d][r[d] * p_.window[d] + w[d]];
            offset = q < 0 ? -1 : offset + q * p_.in_strides[d];
          }
          acc = C::Round(Apply(p_.fold, acc, offset < 0 ? init : C::Load(in[offset])));
          for (size_t d = rank; d-- > 0;) {
            if (++w[d] < p_.window[d]) break;
            w[d] = 0;
          }
        }
        out[o] = C::Store(acc);
        for (size_t d = rank; d-- > 0;) {
          if (++r[d] < p_.out.dim(d)) break;
          r[d] = 0;
        }
      }
    });
    return Status::Ok();
  }

  // The last_passes_through path: parallel over output rows (all but the
  // last dimension); each row's accumulators fold one input row per tap.
  template <typename C, typename S, typename A>
  void RunRows(const S* in, A init, S* out, int64_t window_size, const RunContext& context) const {
    const size_t rank = p_.window.size();
    const int64_t row = p_.out.dim(static_cast<int64_t>(rank - 1));
    const int64_t rows = p_.out.num_elements() / row;
    ParallelRange(context, rows, window_size * row, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> r(rank - 1, 0), w(rank - 1, 0);
      int64_t rest = begin;
      for (size_t d = rank - 1; d-- > 0;) {
        r[d] = rest % p_.out.dim(static_cast<int64_t>(d));
        rest /= p_.out.dim(static_cast<int64_t>(d));
      }
      std::unique_ptr<A[]> acc(new A[static_cast<size_t>(row)]);  // not vector<bool>
      for (int64_t o = begin; o < end; ++o) {
        std::fill(acc.get(), acc.get() + row, init);
        std::fill(w.begin(), w.end(), 0);
        for (int64_t k = 0; k < window_size; ++k) {
          int64_t offset = 0;
          for (size_t d = 0; d + 1 < rank && offset >= 0; ++d) {
            const int64_t q = p_.positions[d][r[d] * p_.window[d] + w[d]];
            offset = q < 0 ? -1 : offset + q * p_.in_strides[d];
          }
          if (offset < 0) {
            for (int64_t c = 0; c < row; ++c) acc[c] = C::Round(Apply(p_.fold, acc[c], init));
          } else {
            FoldRow<C>(p_.fold, acc.get(), in + offset, row);
          }
          for (size_t d = rank - 1; d-- > 0;) {
            if (++w[d] < p_.window[d]) break;
            w[d] = 0;
          }
        }
        S* dst = out + o * row;
        for (int64_t c = 0; c < row; ++c) dst[c] = C::Store(acc[c]);
        for (size_t d = rank - 1; d-- > 0;) {
          if (++r[d] < p_.out.dim(static_cast<int64_t>(d))) break;
          r[d] = 0;
        }
      }
    });
  }

  WindowPlan p_;
};

// Any body, compiled: for each result element the accumulators start at the
// init values and the body folds in every window position in row-major
// window order (init values at padding and base-dilation holes), as
// jit/eval's general path does. `p_.in` / `p_.out` describe input and
// result 0 (all inputs share the shape, all results theirs).
class CompiledBodyReduceWindowOp final : public LibraryOp {
 public:
  CompiledBodyReduceWindowOp(WindowPlan plan, std::vector<int64_t> element_bytes, const WindowBodyFn* body)
      : p_(std::move(plan)), bytes_(std::move(element_bytes)), body_(body) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    const WindowBodyFn body = *body_;
    if (body == nullptr) return Internal("reduce_window: the compiled body is not linked");
    const size_t n = bytes_.size();
    const int64_t count = p_.out.num_elements();
    const size_t rank = p_.window.size();
    int64_t window_size = 1;
    for (int64_t w : p_.window) window_size *= w;
    ParallelRange(context, count, window_size * 4, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> r(rank, 0), w(rank, 0);
      int64_t rest = begin;
      for (size_t d = rank; d-- > 0;) {
        r[d] = rest % p_.out.dim(static_cast<int64_t>(d));
        rest /= p_.out.dim(static_cast<int64_t>(d));
      }
      // Accumulators: 16 bytes each (complex<f64> at most), aligned.
      std::vector<std::array<uint64_t, 2>> acc(n);
      std::vector<void*> acc_ptrs(n);
      std::vector<const void*> x(n);
      for (size_t i = 0; i < n; ++i) acc_ptrs[i] = acc[i].data();
      for (int64_t o = begin; o < end; ++o) {
        for (size_t i = 0; i < n; ++i) std::memcpy(acc[i].data(), operands[n + i], static_cast<size_t>(bytes_[i]));
        std::fill(w.begin(), w.end(), 0);
        for (int64_t k = 0; k < window_size; ++k) {
          int64_t offset = 0;
          for (size_t d = 0; d < rank && offset >= 0; ++d) {
            const int64_t q = p_.positions[d][static_cast<size_t>(r[d] * p_.window[d] + w[d])];
            offset = q < 0 ? -1 : offset + q * p_.in_strides[d];
          }
          for (size_t i = 0; i < n; ++i) {
            x[i] = offset < 0 ? operands[n + i]
                              : static_cast<const uint8_t*>(operands[i]) + offset * bytes_[i];
          }
          body(acc_ptrs.data(), x.data());
          for (size_t d = rank; d-- > 0;) {
            if (++w[d] < p_.window[d]) break;
            w[d] = 0;
          }
        }
        for (size_t i = 0; i < n; ++i) {
          std::memcpy(static_cast<uint8_t*>(results[i]) + o * bytes_[i], acc[i].data(), static_cast<size_t>(bytes_[i]));
        }
        for (size_t d = rank; d-- > 0;) {
          if (++r[d] < p_.out.dim(static_cast<int64_t>(d))) break;
          r[d] = 0;
        }
      }
    });
    return Status::Ok();
  }

 private:
  WindowPlan p_;
  std::vector<int64_t> bytes_;  // per input / result
  const WindowBodyFn* body_;
};

}  // namespace

LibraryOpOr CreateReduceWindowOp(const ir::Op& op, const LibraryOpOptions& options) {
  const size_t n = op.num_results();
  if (n == 0 || op.num_operands() != 2 * n) return Declined();
  WindowPlan p;
  p.in = op.operand(0)->type();
  p.out = op.result(0)->type();
  for (size_t i = 0; i < 2 * n; ++i) {
    if (!op.operand(i)->type().is_tensor() || op.operand(i)->type().dtype() != op.result(i % n)->type().dtype()) {
      return Declined();
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!op.result(i)->type().is_tensor() || op.operand(n + i)->type().rank() != 0 ||
        op.operand(i)->type().dims() != p.in.dims() || op.result(i)->type().dims() != p.out.dims()) {
      return Declined();
    }
  }
  const DType t = p.in.dtype();
  std::optional<FoldOp> fold;
  if (n == 1 && !ir::IsComplex(t) && !(ir::IsInteger(t) && ir::BitWidth(t) < 8) &&
      (!ir::IsFloat(t) || t == DType::kF16 || t == DType::kBF16 || t == DType::kF32 || t == DType::kF64)) {
    fold = RecognizeFold(op, 0, t);
  }
  const bool compiled = !fold && options.compiled_window_body != nullptr;
  if (!fold && !compiled) return Declined();
  if (fold) p.fold = *fold;
  const size_t rank = static_cast<size_t>(p.in.rank());
  if (p.out.rank() != p.in.rank()) return OpError(op, "result rank differs from the input's");
  p.window = I64sOr(op, "window_dimensions", rank, 1);
  const std::vector<int64_t> strides = I64sOr(op, "window_strides", rank, 1);
  const std::vector<int64_t> base_dilations = I64sOr(op, "base_dilations", rank, 1);
  const std::vector<int64_t> window_dilations = I64sOr(op, "window_dilations", rank, 1);
  JITD_ASSIGN_OR_RETURN(const auto padding, PaddingPairs(op, rank));
  // The interpreter refuses attributes beyond 2^24; decline them too.
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t v : {p.window[d], strides[d], base_dilations[d], window_dilations[d],
                      padding[d].first, padding[d].second}) {
      if (v <= -kLimit || v >= kLimit) return Declined();
    }
    if (strides[d] < 1 || base_dilations[d] < 1 || window_dilations[d] < 1 || p.window[d] < 0) {
      return OpError(op, "has a window stride, dilation or size out of range");
    }
  }
  // The position tables hold out_dim * window entries per dimension: a long
  // 1-d window over a long axis (4096 over 2^22 elements) would ask for
  // terabytes. Decline those (the interpreter's op computes positions as it
  // goes).
  constexpr int64_t kMaxPositions = int64_t{1} << 22;
  int64_t positions = 0;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t out_dim = p.out.dim(static_cast<int64_t>(d));
    if (p.window[d] > 0 && out_dim > (kMaxPositions - positions) / p.window[d]) return Declined();
    positions += out_dim * p.window[d];
  }
  p.in_strides = RowMajorStrides(p.in.dims());
  const bool general = compiled;
  p.positions.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t o = 0; o < p.out.dim(static_cast<int64_t>(d)); ++o) {
      for (int64_t w = 0; w < p.window[d]; ++w) {
        const int64_t q = o * strides[d] + w * window_dilations[d] - padding[d].first;
        const bool hit = q >= 0 && q % base_dilations[d] == 0 &&
                         q / base_dilations[d] < p.in.dim(static_cast<int64_t>(d));
        p.positions[d].push_back(hit ? q / base_dilations[d] : -1);
      }
    }
  }
  if (general) {
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < n; ++i) {
      const int64_t b = ir::StorageBytes(op.result(i)->type().dtype());
      if (b > 16) return Declined();
      bytes.push_back(b);
    }
    return std::unique_ptr<LibraryOp>(
        new CompiledBodyReduceWindowOp(std::move(p), std::move(bytes), options.compiled_window_body));
  }
  if (rank >= 1 && p.window[rank - 1] == 1 &&
      p.out.dim(static_cast<int64_t>(rank - 1)) == p.in.dim(static_cast<int64_t>(rank - 1))) {
    bool identity = true;
    const auto& last = p.positions[rank - 1];
    for (size_t o = 0; o < last.size() && identity; ++o) identity = last[o] == static_cast<int64_t>(o);
    p.last_passes_through = identity && p.out.dim(static_cast<int64_t>(rank - 1)) > 0;
  }
  return std::unique_ptr<LibraryOp>(new ReduceWindowOp(std::move(p)));
}

}  // namespace jitd::cpu::internal
