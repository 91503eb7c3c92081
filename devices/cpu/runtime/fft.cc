// stablehlo.fft (FFT, IFFT, RFFT, IRFFT) through KISS FFT's C++ template
// (kissfft.hh), with jit/eval's structure: RFFT transforms the last axis of
// the real input and keeps n/2 + 1 outputs; IRFFT rebuilds the Hermitian
// spectrum of the last axis and keeps the real part; the other axes are
// complex transforms; inverse transforms are scaled by 1/n per axis.
// complex<f32>/f32 data is transformed in double and f64/complex<f64> in
// long double, then rounded once (the interpreter works in long double), so
// results agree with it to rounding.
#include <kissfft/kissfft.hh>

#include <complex>
#include <string>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

using ir::DType;

enum class FftType { kFft, kIfft, kRfft, kIrfft };

struct FftPlan {
  FftType type = FftType::kFft;
  ir::Type in, out;
  std::vector<int64_t> lengths;
  std::vector<int64_t> cdims;  // the complex side's shape
};

// Transforms `line` (length n) in place; `fft` has length n.
template <typename R>
void Transform(const kissfft<R>* fft, std::vector<std::complex<R>>& line,
               std::vector<std::complex<R>>& scratch) {
  if (line.size() <= 1 || fft == nullptr) return;
  scratch.resize(line.size());
  fft->transform(line.data(), scratch.data());
  line.swap(scratch);
}

class FftOp final : public LibraryOp {
 public:
  explicit FftOp(FftPlan plan) : p_(std::move(plan)) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    const DType component = ir::ComplexComponent(p_.in.dtype());
    if (component == DType::kF64) return RunIn<long double>(operands[0], results[0], context);
    return RunIn<double>(operands[0], results[0], context);
  }

 private:
  template <typename R>
  Status RunIn(const void* input, void* result, const RunContext& context) const {
    using C = std::complex<R>;
    const int64_t in_count = p_.in.num_elements(), out_count = p_.out.num_elements();
    if (in_count == 0 || out_count == 0) {
      if (out_count > 0) std::memset(result, 0, static_cast<size_t>(p_.out.byte_size()));
      return Status::Ok();
    }
    const bool real_in = p_.type == FftType::kRfft, real_out = p_.type == FftType::kIrfft;
    const bool inverse = p_.type == FftType::kIfft || p_.type == FftType::kIrfft;
    const size_t rank = p_.cdims.size(), count = p_.lengths.size(), last = rank - 1;
    const int64_t n_last = p_.lengths.back();
    // Objects are built per run: kissfft keeps mutable scratch, so one
    // object must not be shared between threads.
    auto make = [](int64_t n, bool inv) {
      return n > 1 ? std::make_unique<kissfft<R>>(static_cast<size_t>(n), inv) : nullptr;
    };
    std::vector<C> line, scratch;
    std::vector<C> data;
    if (real_in) {
      std::vector<double> x(static_cast<size_t>(in_count));
      LoadDomain<double>(input, p_.in.dtype(), p_.in.dtype(), in_count, x.data());
      const int64_t lines = in_count / n_last, half = n_last / 2 + 1;
      data.resize(static_cast<size_t>(lines * half));
      auto fft = make(n_last, false);
      line.resize(static_cast<size_t>(n_last));
      for (int64_t b = 0; b < lines; ++b) {
        if ((b & 15) == 15 && PastDeadline(context)) {
          return Status(StatusCode::kDeadlineExceeded, "fft ran past its deadline");
        }
        for (int64_t i = 0; i < n_last; ++i) line[i] = C(x[b * n_last + i], 0);
        Transform(fft.get(), line, scratch);
        for (int64_t k = 0; k < half; ++k) data[b * half + k] = line[k];
      }
    } else {
      // In pieces of 2^16 elements, with the deadline between them.
      constexpr int64_t kPiece = int64_t{1} << 16;
      const int64_t element_bytes = ir::StorageBytes(p_.in.dtype());
      // (data grows piece by piece: its pages are touched there, not all at
      // once before the first check).
      std::vector<std::complex<double>> x(static_cast<size_t>(std::min(in_count, kPiece)));
      data.reserve(static_cast<size_t>(in_count));
      for (int64_t begin = 0; begin < in_count; begin += kPiece) {
        if (begin > 0 && PastDeadline(context)) {
          return Status(StatusCode::kDeadlineExceeded, "fft ran past its deadline");
        }
        const int64_t n = std::min(kPiece, in_count - begin);
        data.resize(static_cast<size_t>(begin + n));
        LoadDomain<std::complex<double>>(static_cast<const uint8_t*>(input) + begin * element_bytes,
                                         p_.in.dtype(), p_.in.dtype(), n, x.data());
        for (int64_t i = 0; i < n; ++i) data[begin + i] = C(x[i].real(), x[i].imag());
      }
    }
    if (PastDeadline(context)) {
      return Status(StatusCode::kDeadlineExceeded, "fft ran past its deadline");
    }
    // Complex passes, in the interpreter's order: forward from the last
    // axis outward, inverse from the outermost inward.
    const std::vector<int64_t> strides = RowMajorStrides(p_.cdims);
    int64_t lines_done = 0;
    for (size_t i = 0; i < count; ++i) {
      const size_t axis = inverse ? rank - count + i : last - i;
      if ((real_in || real_out) && axis == last) continue;
      const int64_t n = p_.cdims[axis], stride = strides[axis];
      const R scale = inverse ? R(1) / static_cast<R>(n) : R(1);
      auto fft = make(n, inverse);
      line.resize(static_cast<size_t>(n));
      const int64_t total = static_cast<int64_t>(data.size());
      const int64_t outer_step = n * stride;
      for (int64_t outer = 0; outer < total; outer += outer_step) {
        for (int64_t inner = 0; inner < stride; ++inner) {
          // The deadline every 16 lines (one line's transform is not cut).
          if ((++lines_done & 15) == 0 && PastDeadline(context)) {
            return Status(StatusCode::kDeadlineExceeded, "fft ran past its deadline");
          }
          const int64_t base = outer + inner;
          for (int64_t j = 0; j < n; ++j) line[j] = data[base + j * stride];
          Transform(fft.get(), line, scratch);
          for (int64_t j = 0; j < n; ++j) {
            data[base + j * stride] = inverse ? line[j] * scale : line[j];
          }
        }
      }
    }
    if (real_out) {
      const int64_t half = p_.cdims[last], lines = out_count / n_last;
      const R scale = R(1) / static_cast<R>(n_last);
      auto fft = make(n_last, true);
      std::vector<double> out(static_cast<size_t>(out_count));
      line.resize(static_cast<size_t>(n_last));
      for (int64_t b = 0; b < lines; ++b) {
        if ((b & 15) == 15 && PastDeadline(context)) {
          return Status(StatusCode::kDeadlineExceeded, "fft ran past its deadline");
        }
        for (int64_t k = 0; k < n_last; ++k) {
          line[k] = k < half ? data[b * half + k] : std::conj(data[b * half + (n_last - k)]);
        }
        Transform(fft.get(), line, scratch);
        for (int64_t i = 0; i < n_last; ++i) {
          out[b * n_last + i] = static_cast<double>(line[i].real() * scale);
        }
      }
      StoreDomain<double>(out.data(), out_count, p_.out.dtype(), result);
      return Status::Ok();
    }
    std::vector<std::complex<double>> out(static_cast<size_t>(out_count));
    for (int64_t i = 0; i < out_count; ++i) {
      out[i] = {static_cast<double>(data[i].real()), static_cast<double>(data[i].imag())};
    }
    StoreDomain<std::complex<double>>(out.data(), out_count, p_.out.dtype(), result);
    return Status::Ok();
  }

  FftPlan p_;
};

}  // namespace

LibraryOpOr CreateFftOp(const ir::Op& op) {
  if (op.num_operands() != 1 || op.num_results() != 1) return Declined();
  FftPlan p;
  p.in = op.operand(0)->type();
  p.out = op.result(0)->type();
  if (!p.in.is_tensor() || !p.out.is_tensor()) return Declined();
  const ir::EnumAttr* type = op.GetEnum("fft_type");
  const std::string kind = type ? type->value : "FFT";
  if (kind == "FFT") {
    p.type = FftType::kFft;
  } else if (kind == "IFFT") {
    p.type = FftType::kIfft;
  } else if (kind == "RFFT") {
    p.type = FftType::kRfft;
  } else if (kind == "IRFFT") {
    p.type = FftType::kIrfft;
  } else {
    return OpError(op, "has an unknown fft_type '" + kind + "'");
  }
  const bool real_in = p.type == FftType::kRfft, real_out = p.type == FftType::kIrfft;
  auto supported = [](DType t, bool real) {
    return real ? (t == DType::kF32 || t == DType::kF64) : ir::IsComplex(t);
  };
  if (!supported(p.in.dtype(), real_in) || !supported(p.out.dtype(), real_out)) return Declined();
  p.lengths = op.GetI64Array("fft_length").value_or(std::vector<int64_t>{});
  const size_t rank = static_cast<size_t>(p.in.rank()), count = p.lengths.size();
  if (count == 0 || count > rank) return OpError(op, "fft_length does not fit the operand");
  p.cdims = real_in ? p.out.dims() : p.in.dims();
  for (size_t i = 0; i < count; ++i) {
    const size_t axis = rank - count + i;
    const bool halved = (real_in || real_out) && axis == rank - 1;
    const int64_t want =
        halved ? (p.lengths[i] == 0 ? 0 : p.lengths[i] / 2 + 1) : p.lengths[i];
    if (p.cdims[axis] != want) {
      return OpError(op, "fft_length " + std::to_string(p.lengths[i]) +
                             " does not match dimension " + std::to_string(axis) +
                             " of the operand");
    }
  }
  return std::unique_ptr<LibraryOp>(new FftOp(std::move(p)));
}

}  // namespace jitd::cpu::internal
