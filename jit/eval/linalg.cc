// Linear algebra and friends: dot_general, dot, convolution, fft,
// triangular_solve, cholesky, batch_norm_{inference,training,grad},
// rng_bit_generator and rng.
//
// Dot products (dot_general, dot, convolution) follow the spec's
// decomposition: multiply, then add in ascending index order, each operation
// rounded in the result's element type (never fused): f32 and f64 in float
// and double, complex<f32> and complex<f64> component-wise in float and
// double. Narrower floats (f16, bf16, f8) accumulate in float and round once
// when stored, as XLA computes them; integers and i1 accumulate in uint64
// with two's-complement wraparound, truncated to the result width (for i1 an
// OR of ANDs). Inputs of another element type are converted to the result's
// first (floats to integers saturate, NaN -> 0). These orders reproduce the
// corpus' XLA-computed expectations. precision_config does not change
// results. FFT, triangular_solve and cholesky work in long double and round
// once.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jit/eval/internal/kernels.h"
#include "jit/eval/rng_bits.h"

namespace jitd::eval::internal {
namespace {

using ir::DType;
using ir::Literal;

// ---- Element domains ------------------------------------------------------

// Every element of `lit` converted into the arithmetic domain T of a result
// of element type `result`.
template <typename T>
std::vector<T> LoadAll(const Literal& lit, DType result) {
  const int64_t n = lit.num_elements();
  std::vector<T> out(static_cast<size_t>(n));
  const DType t = lit.dtype();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, uint64_t>) {
      out[i] =
          ir::IsFloat(t) || ir::IsComplex(t)
              ? static_cast<uint64_t>(SaturatingToInt(lit.GetDouble(i), ir::IsUnsignedInt(result)))
              : lit.GetUInt(i);  // sign- or zero-extended
    } else if constexpr (std::is_floating_point_v<T>) {
      out[i] = static_cast<T>(lit.GetDouble(i));
    } else {
      const std::complex<double> v = lit.GetComplex(i);
      out[i] = T(static_cast<typename T::value_type>(v.real()),
                 static_cast<typename T::value_type>(v.imag()));
    }
  }
  return out;
}

// acc + a * b with each operation rounded in T (never fused), as the spec's
// multiply-then-add decomposition of dot products computes it.
template <typename T>
T MultiplyAdd(T acc, T a, T b) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return acc + a * b;  // wraps
  } else if constexpr (std::is_floating_point_v<T>) {
    const T product = a * b;
    return acc + product;
  } else {
    using R = typename T::value_type;
    const R real_real = a.real() * b.real(), imag_imag = a.imag() * b.imag();
    const R real_imag = a.real() * b.imag(), imag_real = a.imag() * b.real();
    const R re = real_real - imag_imag, im = real_imag + imag_real;
    return T(acc.real() + re, acc.imag() + im);
  }
}

// Stores a domain value, rounding (floats) or truncating (integers) once.
template <typename T>
void StoreValue(Literal& lit, int64_t i, T v) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    lit.SetInt(i, static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    lit.SetDouble(i, static_cast<double>(v));
  } else {
    lit.SetComplex(i, {static_cast<double>(v.real()), static_cast<double>(v.imag())});
  }
}

// Calls fn.template operator()<T>() with T the arithmetic domain of `dtype`:
// integers and i1 in uint64 (wrapping); f64 and complex<f64> in double;
// every narrower float type in float, as XLA computes f16 and bf16 dots in
// f32 and rounds once.
template <typename F>
void WithDomain(DType dtype, F&& fn) {
  if (dtype == DType::kC128) {
    fn.template operator()<std::complex<double>>();
  } else if (dtype == DType::kC64) {
    fn.template operator()<std::complex<float>>();
  } else if (dtype == DType::kF64) {
    fn.template operator()<double>();
  } else if (ir::IsFloat(dtype)) {
    fn.template operator()<float>();
  } else {
    fn.template operator()<uint64_t>();
  }
}

// An i64 array attribute, or `rank` copies of `fill` when absent.
std::vector<int64_t> I64sOr(const OpContext& ctx, std::string_view name, size_t rank,
                            int64_t fill) {
  std::vector<int64_t> v = ctx.I64s(name);
  if (v.size() != rank) v.assign(rank, fill);
  return v;
}

// ---- dot_general, dot -----------------------------------------------------

struct DotDims {
  std::vector<int64_t> lhs_batching, rhs_batching, lhs_contracting, rhs_contracting;
};

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batching,
                              const std::vector<int64_t>& contracting) {
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (int64_t d : batching) used[static_cast<size_t>(d)] = true;
  for (int64_t d : contracting) used[static_cast<size_t>(d)] = true;
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (!used[static_cast<size_t>(d)]) free.push_back(d);
  }
  return free;
}

// `lit` converted to the domain T with its dimensions permuted to `order`
// (row-major), so that the dimensions a dot product runs over can be made
// the contiguous, innermost ones.
template <typename T>
std::vector<T> PermutedCopy(const Literal& lit, DType result, const std::vector<int64_t>& order) {
  const std::vector<T> values = LoadAll<T>(lit, result);
  const std::vector<int64_t> strides = Strides(lit.type().dims());
  std::vector<int64_t> dims, steps;
  for (int64_t d : order) {
    dims.push_back(lit.type().dim(d));
    steps.push_back(strides[d]);
  }
  std::vector<T> out;
  out.reserve(values.size());
  (void)ForEachIndex(dims, [&](const std::vector<int64_t>& index) {
    out.push_back(values[Offset(index, steps)]);
    return Status::Ok();
  });
  return out;
}

// Up to kLanes dot products of length n at once: acc[m] += a[m][k] * b[m][k]
// for k in order. Each sum keeps its own left-to-right order (so results are
// those of one product at a time); the independent chains just overlap in
// the CPU. Lanes past `lanes` repeat lane 0 and are ignored by callers.
constexpr int kLanes = 4;

template <typename T>
void DotLanes(const std::array<const T*, kLanes>& a, const std::array<const T*, kLanes>& b,
              int64_t n, std::array<T, kLanes>& acc) {
  for (int64_t k = 0; k < n; ++k) {
    for (int m = 0; m < kLanes; ++m) acc[m] = MultiplyAdd(acc[m], a[m][k], b[m][k]);
  }
}

KernelResult DotGeneralWith(OpContext& ctx, const DotDims& dims) {
  const Literal& lhs = ctx.operand(0);
  const Literal& rhs = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::vector<int64_t> lhs_free_dims =
      FreeDims(lhs.type().rank(), dims.lhs_batching, dims.lhs_contracting);
  const std::vector<int64_t> rhs_free_dims =
      FreeDims(rhs.type().rank(), dims.rhs_batching, dims.rhs_contracting);
  auto product = [](const ir::Type& t, const std::vector<int64_t>& ds) {
    int64_t p = 1;
    for (int64_t d : ds) p *= t.dim(d);
    return p;
  };
  const int64_t batch = product(lhs.type(), dims.lhs_batching);
  const int64_t contract = product(lhs.type(), dims.lhs_contracting);
  const int64_t lhs_free = product(lhs.type(), lhs_free_dims);
  const int64_t rhs_free = product(rhs.type(), rhs_free_dims);
  // The spec's transposed operands: batching + free + contracting.
  auto order = [](std::vector<int64_t> batching, const std::vector<int64_t>& free,
                  const std::vector<int64_t>& contracting) {
    batching.insert(batching.end(), free.begin(), free.end());
    batching.insert(batching.end(), contracting.begin(), contracting.end());
    return batching;
  };
  const DType rtype = result.dtype();
  WithDomain(rtype, [&]<typename T>() {
    const std::vector<T> l =
        PermutedCopy<T>(lhs, rtype, order(dims.lhs_batching, lhs_free_dims, dims.lhs_contracting));
    const std::vector<T> r =
        PermutedCopy<T>(rhs, rtype, order(dims.rhs_batching, rhs_free_dims, dims.rhs_contracting));
    // Result element (b, i, j), row-major, is row (b, i) of l dotted with
    // row (b, j) of r; j advances kLanes at a time.
    int64_t out = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < lhs_free; ++i) {
        const T* lp = l.data() + (b * lhs_free + i) * contract;
        for (int64_t j = 0; j < rhs_free; j += kLanes) {
          const int64_t lanes = std::min<int64_t>(kLanes, rhs_free - j);
          std::array<const T*, kLanes> a, c;
          for (int m = 0; m < kLanes; ++m) {
            a[m] = lp;
            c[m] = r.data() + (b * rhs_free + j + (m < lanes ? m : 0)) * contract;
          }
          std::array<T, kLanes> acc{};
          DotLanes(a, c, contract, acc);
          for (int m = 0; m < lanes; ++m) StoreValue(result, out++, acc[m]);
        }
      }
    }
  });
  return Single(std::move(result));
}

KernelResult DotGeneralKernel(OpContext& ctx) {
  constexpr std::string_view kAttr = "dot_dimension_numbers";
  return DotGeneralWith(ctx, {ctx.StructField(kAttr, "lhs_batching_dimensions"),
                              ctx.StructField(kAttr, "rhs_batching_dimensions"),
                              ctx.StructField(kAttr, "lhs_contracting_dimensions"),
                              ctx.StructField(kAttr, "rhs_contracting_dimensions")});
}

// Legacy dot: vector/matrix products contracting lhs's last dimension with
// rhs's first.
KernelResult DotKernel(OpContext& ctx) {
  return DotGeneralWith(ctx, {{}, {}, {ctx.operand(0).type().rank() - 1}, {0}});
}

// ---- convolution ----------------------------------------------------------

// Follows the spec's reframing: each result element is the dot product of
// one padded, dilated (and possibly reversed) lhs window with the kernel,
// contracting the spatial dimensions and then the input feature, restricted
// to the feature group and batch group of its output feature. Padding and
// dilation holes are zeros that take part in the products.
KernelResult ConvolutionKernel(OpContext& ctx) {
  const Literal& lhs = ctx.operand(0);
  const Literal& rhs = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const auto& dn = ctx.op().attr("dimension_numbers")->as<ir::ConvDimensionNumbers>();
  const size_t spatial = dn.input_spatial_dimensions.size();
  const std::vector<int64_t> strides = I64sOr(ctx, "window_strides", spatial, 1);
  const std::vector<int64_t> lhs_dilation = I64sOr(ctx, "lhs_dilation", spatial, 1);
  const std::vector<int64_t> rhs_dilation = I64sOr(ctx, "rhs_dilation", spatial, 1);
  const std::vector<int64_t> reversal = I64sOr(ctx, "window_reversal", spatial, 0);
  const auto padding = ctx.Padding("padding", static_cast<int64_t>(spatial));
  // Bounded so that position arithmetic stays far from int64 overflow
  // (materialized dimensions are below 2^32).
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (size_t s = 0; s < spatial; ++s) {
    for (int64_t v : {strides[s], lhs_dilation[s], rhs_dilation[s], padding[s].first}) {
      if (v <= -kLimit || v >= kLimit) {
        return ctx.Unimplemented("window attributes beyond 2^24 are not supported");
      }
    }
  }
  const int64_t feature_groups = ctx.Int("feature_group_count", 1);
  const int64_t batch_groups = ctx.Int("batch_group_count", 1);

  const ir::Type& lt = lhs.type();
  const ir::Type& kt = rhs.type();
  const ir::Type& ot = result.type();
  if (ot.num_elements() == 0) return Single(std::move(result));
  const int64_t in_features = lt.dim(dn.input_feature_dimension);
  const int64_t k_in = kt.dim(dn.kernel_input_feature_dimension);
  const int64_t k_out = kt.dim(dn.kernel_output_feature_dimension);
  const int64_t out_per_feature_group = k_out / feature_groups;
  const int64_t out_per_batch_group = k_out / batch_groups;
  const int64_t batch_per_group = lt.dim(dn.input_batch_dimension) / batch_groups;

  // Along spatial dimension s, output position o and kernel position k read
  // lhs position positions[s][o * K + k], or -1 for padding and holes.
  std::vector<int64_t> kernel_sizes, in_sizes;
  std::vector<std::vector<int64_t>> positions(spatial);
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t k_size = kt.dim(dn.kernel_spatial_dimensions[s]);
    const int64_t in_size = lt.dim(dn.input_spatial_dimensions[s]);
    kernel_sizes.push_back(k_size);
    in_sizes.push_back(in_size);
    for (int64_t o = 0; o < ot.dim(dn.output_spatial_dimensions[s]); ++o) {
      for (int64_t k = 0; k < k_size; ++k) {
        const int64_t tap = reversal[s] ? k_size - 1 - k : k;
        const int64_t p = o * strides[s] + tap * rhs_dilation[s] - padding[s].first;
        const bool hit = p >= 0 && p % lhs_dilation[s] == 0 && p / lhs_dilation[s] < in_size;
        positions[s].push_back(hit ? p / lhs_dilation[s] : -1);
      }
    }
  }
  std::vector<std::vector<int64_t>> taps;  // every kernel spatial index, in order
  (void)ForEachIndex(kernel_sizes, [&](const std::vector<int64_t>& k) {
    taps.push_back(k);
    return Status::Ok();
  });
  const std::vector<int64_t> in_spatial_strides = Strides(in_sizes);
  int64_t in_spatial_size = 1;
  for (int64_t d : in_sizes) in_spatial_size *= d;

  // The result is visited with its feature dimension pinned to 0; features
  // are then computed kLanes at a time.
  std::vector<int64_t> visit = ot.dims();
  visit[dn.output_feature_dimension] = 1;
  const std::vector<int64_t> out_strides = Strides(ot.dims());
  const int64_t out_feature_stride = out_strides[dn.output_feature_dimension];

  const DType rtype = result.dtype();
  WithDomain(rtype, [&]<typename T>() {
    // lhs as [batch][spatial...][feature] and the kernel as
    // [output feature][spatial...][input feature]: features contiguous.
    std::vector<int64_t> lhs_order = {dn.input_batch_dimension};
    lhs_order.insert(lhs_order.end(), dn.input_spatial_dimensions.begin(),
                     dn.input_spatial_dimensions.end());
    lhs_order.push_back(dn.input_feature_dimension);
    std::vector<int64_t> kernel_order = {dn.kernel_output_feature_dimension};
    kernel_order.insert(kernel_order.end(), dn.kernel_spatial_dimensions.begin(),
                        dn.kernel_spatial_dimensions.end());
    kernel_order.push_back(dn.kernel_input_feature_dimension);
    const std::vector<T> l = PermutedCopy<T>(lhs, rtype, lhs_order);
    const std::vector<T> k = PermutedCopy<T>(rhs, rtype, kernel_order);
    const std::vector<T> zeros(static_cast<size_t>(k_in), T{});
    const int64_t tap_count = static_cast<int64_t>(taps.size());

    std::vector<int64_t> tap_offsets(taps.size());  // lhs spatial offset or -1
    (void)ForEachIndex(visit, [&](const std::vector<int64_t>& o) {
      for (size_t t = 0; t < taps.size(); ++t) {
        int64_t off = 0;
        for (size_t s = 0; s < spatial && off >= 0; ++s) {
          const int64_t p =
              positions[s][o[dn.output_spatial_dimensions[s]] * kernel_sizes[s] + taps[t][s]];
          off = p < 0 ? -1 : off + p * in_spatial_strides[s];
        }
        tap_offsets[t] = off;
      }
      const int64_t out_base = Offset(o, out_strides);
      for (int64_t f = 0; f < k_out; f += kLanes) {
        const int64_t lanes = std::min<int64_t>(kLanes, k_out - f);
        std::array<const T*, kLanes> window_base, kernel_row;
        for (int m = 0; m < kLanes; ++m) {
          const int64_t feature = f + (m < lanes ? m : 0);
          const int64_t group = feature / out_per_feature_group;
          const int64_t batch =
              (feature / out_per_batch_group) * batch_per_group + o[dn.output_batch_dimension];
          window_base[m] = l.data() + batch * in_spatial_size * in_features + group * k_in;
          kernel_row[m] = k.data() + feature * tap_count * k_in;
        }
        std::array<T, kLanes> acc{};
        for (int64_t t = 0; t < tap_count; ++t) {
          std::array<const T*, kLanes> a, b;
          for (int m = 0; m < kLanes; ++m) {
            a[m] =
                tap_offsets[t] < 0 ? zeros.data() : window_base[m] + tap_offsets[t] * in_features;
            b[m] = kernel_row[m] + t * k_in;
          }
          DotLanes(a, b, k_in, acc);
        }
        for (int m = 0; m < lanes; ++m) {
          StoreValue(result, out_base + (f + m) * out_feature_stride, acc[m]);
        }
      }
      return Status::Ok();
    });
  });
  return Single(std::move(result));
}

// ---- fft ------------------------------------------------------------------

using Cx = std::complex<long double>;

// exp(sign * 2*pi*i * m / n). The angle is reduced exactly to a quadrant
// and then to at most pi/4 before calling sin/cos, so multiples of pi/2 come
// out exact and symmetric angles give symmetric values.
Cx Twiddle(int64_t m, int64_t n, int sign) {
  const int64_t k = m % n;
  const int64_t quadrant = 4 * k / n;  // 2*pi*k/n = (pi/2) * (quadrant + t/n)
  int64_t t = 4 * k - quadrant * n;    // 0 <= t < n
  const bool complement = 2 * t > n;   // use pi/2 - x to stay below pi/4
  if (complement) t = n - t;
  const long double x = std::numbers::pi_v<long double> / 2 * static_cast<long double>(t) /
                        static_cast<long double>(n);
  long double c = std::cos(x), s = std::sin(x);
  if (complement) std::swap(c, s);
  switch (quadrant) {
    case 1: std::tie(c, s) = std::pair(-s, c); break;
    case 2: std::tie(c, s) = std::pair(-c, -s); break;
    case 3: std::tie(c, s) = std::pair(s, -c); break;
    default: break;
  }
  return {c, sign * s};
}

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// In-place radix-2 transform; n must be a power of two.
void Radix2(std::vector<Cx>& x, int sign) {
  const size_t n = x.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(x[i], x[j]);
  }
  std::vector<Cx> w(n / 2);
  for (size_t m = 0; m < n / 2; ++m) {
    w[m] = Twiddle(static_cast<int64_t>(m), static_cast<int64_t>(n), sign);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t step = n / len;
    for (size_t start = 0; start < n; start += len) {
      for (size_t k = 0; k < len / 2; ++k) {
        const Cx a = x[start + k];
        const Cx b = x[start + k + len / 2] * w[k * step];
        x[start + k] = a + b;
        x[start + k + len / 2] = a - b;
      }
    }
  }
}

// In place: X[k] = sum_j x[j] exp(sign * 2*pi*i * j*k / n), unscaled. Short
// lengths use the direct sum (the most accurate); long ones radix-2, or
// Bluestein's chirp-z through a radix-2 convolution.
void Dft(std::vector<Cx>& x, int sign) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (n <= 1) return;
  if (n <= 64) {
    std::vector<Cx> w(static_cast<size_t>(n));
    for (int64_t m = 0; m < n; ++m) w[m] = Twiddle(m, n, sign);
    std::vector<Cx> out(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      Cx acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += x[j] * w[(j * k) % n];
      out[k] = acc;
    }
    x = std::move(out);
    return;
  }
  if (IsPowerOfTwo(n)) {
    Radix2(x, sign);
    return;
  }
  // Bluestein: jk = (j^2 + k^2 - (k-j)^2) / 2, so the sum is a convolution
  // with the chirp exp(-sign*pi*i*m^2/n), scaled by chirps on both sides.
  auto chirp = [&](int64_t m) {  // exp(sign*pi*i*m^2/n), m^2 reduced mod 2n
    const auto wide = static_cast<unsigned __int128>(m);
    const int64_t q = static_cast<int64_t>(wide * wide % static_cast<unsigned __int128>(2 * n));
    const long double angle =
        std::numbers::pi_v<long double> * static_cast<long double>(q) / static_cast<long double>(n);
    return Cx(std::cos(angle), sign * std::sin(angle));
  };
  size_t m = 1;
  while (m < static_cast<size_t>(2 * n - 1)) m <<= 1;
  std::vector<Cx> a(m, 0), b(m, 0);
  for (int64_t j = 0; j < n; ++j) {
    const Cx c = chirp(j);
    a[j] = x[j] * c;
    b[j] = std::conj(c);
    if (j > 0) b[m - j] = std::conj(c);
  }
  Radix2(a, -1);
  Radix2(b, -1);
  for (size_t i = 0; i < m; ++i) a[i] *= b[i];
  Radix2(a, +1);
  const long double scale = 1.0L / static_cast<long double>(m);
  for (int64_t k = 0; k < n; ++k) x[k] = chirp(k) * a[k] * scale;
}

// Applies `fn` to every line of `data` (row-major, `dims`) along `axis`.
template <typename F>
void ForEachLine(std::vector<Cx>& data, const std::vector<int64_t>& dims, size_t axis, F&& fn) {
  const std::vector<int64_t> strides = Strides(dims);
  std::vector<int64_t> outer = dims;
  outer[axis] = 1;
  std::vector<Cx> line(static_cast<size_t>(dims[axis]));
  (void)ForEachIndex(outer, [&](const std::vector<int64_t>& index) {
    const int64_t base = Offset(index, strides);
    for (int64_t i = 0; i < dims[axis]; ++i) line[i] = data[base + i * strides[axis]];
    fn(line);
    for (int64_t i = 0; i < dims[axis]; ++i) data[base + i * strides[axis]] = line[i];
    return Status::Ok();
  });
}

// A complex-to-complex transform along `axis`; the inverse is scaled by 1/n.
void TransformAxis(std::vector<Cx>& data, const std::vector<int64_t>& dims, size_t axis,
                   bool inverse) {
  const long double scale = inverse ? 1.0L / static_cast<long double>(dims[axis]) : 1.0L;
  ForEachLine(data, dims, axis, [&](std::vector<Cx>& line) {
    Dft(line, inverse ? +1 : -1);
    if (inverse) {
      for (Cx& v : line) v *= scale;
    }
  });
}

KernelResult FftKernel(OpContext& ctx) {
  const Literal& x = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const std::string_view type = ctx.Enum("fft_type", "FFT");
  const std::vector<int64_t> length = ctx.I64s("fft_length");
  const size_t rank = static_cast<size_t>(x.type().rank());
  const size_t count = length.size();
  if (count == 0 || count > rank) return ctx.Error("fft_length does not fit the operand");
  const size_t last = rank - 1;
  const bool real_in = type == "RFFT", real_out = type == "IRFFT";
  const bool inverse = type == "IFFT" || type == "IRFFT";
  // The complex side's shape; its trailing dims must be the transform
  // lengths, except the last one of RFFT/IRFFT (n / 2 + 1).
  const std::vector<int64_t>& cdims = real_in ? result.type().dims() : x.type().dims();
  for (size_t i = 0; i < count; ++i) {
    const size_t axis = rank - count + i;
    const bool halved = (real_in || real_out) && axis == last;
    const int64_t want = halved ? (length[i] == 0 ? 0 : length[i] / 2 + 1) : length[i];
    if (cdims[axis] != want) {
      return ctx.Error("fft_length " + std::to_string(length[i]) + " does not match dimension " +
                       std::to_string(axis) + " of the operand");
    }
  }
  if (result.num_elements() == 0 || x.num_elements() == 0) return Single(std::move(result));

  std::vector<Cx> data(static_cast<size_t>(real_in ? result.num_elements() : x.num_elements()));
  const int64_t n_last = length.back();
  if (real_in) {
    // rfft along the last axis: keep the first n/2 + 1 outputs.
    const int64_t lines = x.num_elements() / n_last;
    const int64_t half = n_last / 2 + 1;
    std::vector<Cx> line(static_cast<size_t>(n_last));
    for (int64_t b = 0; b < lines; ++b) {
      for (int64_t i = 0; i < n_last; ++i) line[i] = x.GetDouble(b * n_last + i);
      Dft(line, -1);
      for (int64_t k = 0; k < half; ++k) data[b * half + k] = line[k];
    }
  } else {
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const std::complex<double> v = x.GetComplex(i);
      data[i] = Cx(v.real(), v.imag());
    }
  }
  // The complex-to-complex passes: every fft axis, except the last one for
  // RFFT (done above) and IRFFT (done below). Forward passes run from the
  // last axis outward, inverse passes from the outermost inward.
  for (size_t i = 0; i < count; ++i) {
    const size_t axis = inverse ? rank - count + i : last - i;
    if ((real_in || real_out) && axis == last) continue;
    TransformAxis(data, cdims, axis, inverse);
  }
  if (real_out) {
    // irfft along the last axis: rebuild the Hermitian spectrum, invert,
    // keep the real part.
    const int64_t half = cdims[last];
    const int64_t lines = result.num_elements() / n_last;
    const long double scale = 1.0L / static_cast<long double>(n_last);
    std::vector<Cx> line(static_cast<size_t>(n_last));
    for (int64_t b = 0; b < lines; ++b) {
      for (int64_t k = 0; k < n_last; ++k) {
        line[k] = k < half ? data[b * half + k] : std::conj(data[b * half + (n_last - k)]);
      }
      Dft(line, +1);
      for (int64_t i = 0; i < n_last; ++i) {
        result.SetDouble(b * n_last + i, static_cast<double>(line[i].real() * scale));
      }
    }
    return Single(std::move(result));
  }
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    result.SetComplex(i,
                      {static_cast<double>(data[i].real()), static_cast<double>(data[i].imag())});
  }
  return Single(std::move(result));
}

// ---- triangular_solve, cholesky -------------------------------------------

// One batch of square matrices in long double (complex when the type is).
struct Matrices {
  std::vector<Cx> values;
  int64_t rows = 0, cols = 0, batch = 0;
  Cx& at(int64_t b, int64_t i, int64_t j) { return values[(b * rows + i) * cols + j]; }
};

Matrices LoadMatrices(const Literal& lit) {
  const auto& dims = lit.type().dims();
  Matrices m;
  m.rows = dims[dims.size() - 2];
  m.cols = dims[dims.size() - 1];
  m.batch = m.rows * m.cols == 0 ? 0 : lit.num_elements() / (m.rows * m.cols);
  m.values.resize(static_cast<size_t>(lit.num_elements()));
  for (int64_t i = 0; i < lit.num_elements(); ++i) {
    const std::complex<double> v = lit.GetComplex(i);
    m.values[i] = Cx(v.real(), v.imag());
  }
  return m;
}

void StoreMatrices(const Matrices& m, Literal& lit) {
  for (int64_t i = 0; i < lit.num_elements(); ++i) {
    const Cx v = m.values[i];
    lit.SetComplex(i, {static_cast<double>(v.real()), static_cast<double>(v.imag())});
  }
}

// Solves op(a) x = b (left_side) or x op(a) = b, reading only a's `lower`
// (or upper) triangle. Substitution runs in long double and rounds once;
// the triangle of op(a) decides the direction.
KernelResult TriangularSolveKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  Matrices a = LoadMatrices(ctx.operand(0));
  Matrices x = LoadMatrices(ctx.operand(1));
  const bool left = ctx.Bool("left_side", false);
  const bool lower = ctx.Bool("lower", false);
  const bool unit = ctx.Bool("unit_diagonal", false);
  const std::string_view transpose = ctx.Enum("transpose_a", "NO_TRANSPOSE");
  const bool transposed = transpose != "NO_TRANSPOSE";
  const bool conjugate = transpose == "ADJOINT";
  const int64_t n = a.rows;
  // op(a) is lower triangular when a's triangle, after any transpose, is.
  const bool op_lower = lower != transposed;
  for (int64_t b = 0; b < x.batch; ++b) {
    auto op = [&](int64_t i, int64_t j) {  // op(a)[i, j], within its triangle
      Cx v = transposed ? a.at(b, j, i) : a.at(b, i, j);
      return conjugate ? std::conj(v) : v;
    };
    // Left: rows of x in the order the triangle allows; right: columns.
    const int64_t others = left ? x.cols : x.rows;
    for (int64_t step = 0; step < n; ++step) {
      // Left side with lower op(a), and right side with upper op(a), go
      // forward; the other two backward.
      const bool forward = left == op_lower;
      const int64_t i = forward ? step : n - 1 - step;
      for (int64_t o = 0; o < others; ++o) {
        Cx& xi = left ? x.at(b, i, o) : x.at(b, o, i);
        Cx sum = xi;
        for (int64_t k = 0; k < n; ++k) {
          const bool solved = forward ? k < i : k > i;
          if (!solved) continue;
          sum -= left ? op(i, k) * x.at(b, k, o) : x.at(b, o, k) * op(k, i);
        }
        xi = unit ? sum : sum / op(i, i);
      }
    }
  }
  StoreMatrices(x, result);
  return Single(std::move(result));
}

// The Cholesky factor in the requested triangle (the other is zero):
// a = l l^H with l lower, or a = u^H u with u upper, reading only that
// triangle of a. A matrix that is not positive definite yields NaNs.
KernelResult CholeskyKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const Matrices a = LoadMatrices(ctx.operand(0));
  Matrices l = a;
  std::fill(l.values.begin(), l.values.end(), Cx(0));
  const bool lower = ctx.Bool("lower", false);
  const int64_t n = a.rows;
  for (int64_t b = 0; b < a.batch; ++b) {
    // Work on the lower factor; for upper, a's upper triangle is the
    // conjugate transpose of the lower one, and u = l^H.
    auto in = [&](int64_t i, int64_t j) {  // a[i, j] for i >= j
      return lower ? a.values[(b * n + i) * n + j] : std::conj(a.values[(b * n + j) * n + i]);
    };
    auto out = [&](int64_t i, int64_t j) -> Cx& { return l.at(b, i, j); };
    for (int64_t j = 0; j < n; ++j) {
      long double d = in(j, j).real();
      for (int64_t k = 0; k < j; ++k) d -= std::norm(out(j, k));
      const long double ljj = d >= 0 ? std::sqrt(d) : std::numeric_limits<long double>::quiet_NaN();
      out(j, j) = ljj;
      for (int64_t i = j + 1; i < n; ++i) {
        Cx s = in(i, j);
        for (int64_t k = 0; k < j; ++k) s -= out(i, k) * std::conj(out(j, k));
        out(i, j) = s / ljj;
      }
    }
    if (!lower) {  // u = l^H
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < i; ++j) {
          l.at(b, j, i) = std::conj(l.at(b, i, j));
          l.at(b, i, j) = 0;
        }
        l.at(b, i, i) = std::conj(l.at(b, i, i));
      }
    }
  }
  StoreMatrices(l, result);
  return Single(std::move(result));
}

// ---- batch_norm_* ---------------------------------------------------------
//
// The spec's decompositions, computed in double and rounded once per output
// element (the decomposition rounds after every op; f64 is exact the same
// way up to summation order, narrower types are within an ulp or two).

struct FeatureLayout {
  int64_t feature_index = 0;
  int64_t features = 0;
  int64_t per_feature = 0;          // elements per feature
  std::vector<int64_t> feature_of;  // feature of each operand element
};

FeatureLayout LayoutOf(const OpContext& ctx, const Literal& operand) {
  FeatureLayout f;
  f.feature_index = ctx.Int("feature_index", 0);
  f.features = operand.type().dim(f.feature_index);
  f.per_feature = f.features == 0 ? 0 : operand.num_elements() / f.features;
  const int64_t stride = Strides(operand.type().dims())[f.feature_index];
  f.feature_of.resize(static_cast<size_t>(operand.num_elements()));
  for (int64_t i = 0; i < operand.num_elements(); ++i) {
    f.feature_of[i] = (i / stride) % f.features;
  }
  return f;
}

double Epsilon(const OpContext& ctx) {
  const ir::Attribute* a = ctx.op().attr("epsilon");
  const auto* f = a ? a->get_if<ir::FloatAttr>() : nullptr;
  // epsilon is an f32 constant; the decomposition converts it to the
  // operand's element type.
  return f ? static_cast<double>(static_cast<float>(f->value)) : 0.0;
}

// Per-feature mean of `values` (one per operand element).
std::vector<double> FeatureMeans(const FeatureLayout& f, const std::vector<double>& values) {
  std::vector<double> sum(static_cast<size_t>(f.features), 0.0);
  for (size_t i = 0; i < values.size(); ++i) sum[f.feature_of[i]] += values[i];
  for (double& s : sum) s /= static_cast<double>(f.per_feature);
  return sum;
}

std::vector<double> AsDoubles(const Literal& lit) { return LoadAll<double>(lit, DType::kF64); }

// The epsilon converted to the operand's type, as the decomposition does.
double EpsilonAs(const OpContext& ctx, DType dtype) {
  Literal e = *Literal::Create(ir::Type::Scalar(dtype));
  e.SetDouble(0, Epsilon(ctx));
  return e.GetDouble(0);
}

KernelResult BatchNormInferenceKernel(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const FeatureLayout f = LayoutOf(ctx, operand);
  const std::vector<double> x = AsDoubles(operand), scale = AsDoubles(ctx.operand(1)),
                            offset = AsDoubles(ctx.operand(2)), mean = AsDoubles(ctx.operand(3)),
                            variance = AsDoubles(ctx.operand(4));
  const double eps = EpsilonAs(ctx, operand.dtype());
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = f.feature_of[i];
    result.SetDouble(static_cast<int64_t>(i),
                     scale[c] * ((x[i] - mean[c]) / std::sqrt(variance[c] + eps)) + offset[c]);
  }
  return Single(std::move(result));
}

KernelResult BatchNormTrainingKernel(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const FeatureLayout f = LayoutOf(ctx, operand);
  const std::vector<double> x = AsDoubles(operand), scale = AsDoubles(ctx.operand(1)),
                            offset = AsDoubles(ctx.operand(2));
  const double eps = EpsilonAs(ctx, operand.dtype());
  const std::vector<double> mean = FeatureMeans(f, x);
  std::vector<double> squares(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double centered = x[i] - mean[f.feature_of[i]];
    squares[i] = centered * centered;
  }
  const std::vector<double> variance = FeatureMeans(f, squares);
  JITD_ASSIGN_OR_RETURN(Literal output, ctx.NewResult(0));
  JITD_ASSIGN_OR_RETURN(Literal batch_mean, ctx.NewResult(1));
  JITD_ASSIGN_OR_RETURN(Literal batch_var, ctx.NewResult(2));
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = f.feature_of[i];
    output.SetDouble(static_cast<int64_t>(i),
                     scale[c] * ((x[i] - mean[c]) / std::sqrt(variance[c] + eps)) + offset[c]);
  }
  for (int64_t c = 0; c < f.features; ++c) {
    batch_mean.SetDouble(c, mean[c]);
    batch_var.SetDouble(c, variance[c]);
  }
  std::vector<RuntimeValue> out;
  out.emplace_back(std::move(output));
  out.emplace_back(std::move(batch_mean));
  out.emplace_back(std::move(batch_var));
  return out;
}

// XLA's batchnorm_expander formulas, as the spec writes them.
KernelResult BatchNormGradKernel(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const FeatureLayout f = LayoutOf(ctx, operand);
  const std::vector<double> x = AsDoubles(operand), scale = AsDoubles(ctx.operand(1)),
                            mean = AsDoubles(ctx.operand(2)), variance = AsDoubles(ctx.operand(3)),
                            grad = AsDoubles(ctx.operand(4));
  const double eps = EpsilonAs(ctx, operand.dtype());
  const double count = static_cast<double>(f.per_feature);
  std::vector<double> sum_grad(static_cast<size_t>(f.features), 0.0);
  std::vector<double> sum_grad_centered(static_cast<size_t>(f.features), 0.0);
  std::vector<double> grad_scale(static_cast<size_t>(f.features), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = f.feature_of[i];
    const double centered = x[i] - mean[c];
    sum_grad[c] += grad[i];
    sum_grad_centered[c] += grad[i] * centered;
    grad_scale[c] += grad[i] * (centered / std::sqrt(variance[c] + eps));
  }
  JITD_ASSIGN_OR_RETURN(Literal grad_operand, ctx.NewResult(0));
  JITD_ASSIGN_OR_RETURN(Literal grad_scale_out, ctx.NewResult(1));
  JITD_ASSIGN_OR_RETURN(Literal grad_offset_out, ctx.NewResult(2));
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = f.feature_of[i];
    const double centered = x[i] - mean[c];
    const double var_eps = variance[c] + eps;
    const double i6 = grad[i] * count - sum_grad[c] - sum_grad_centered[c] * centered / var_eps;
    grad_operand.SetDouble(static_cast<int64_t>(i), scale[c] / std::sqrt(var_eps) / count * i6);
  }
  for (int64_t c = 0; c < f.features; ++c) {
    grad_scale_out.SetDouble(c, grad_scale[c]);
    grad_offset_out.SetDouble(c, sum_grad[c]);
  }
  std::vector<RuntimeValue> out;
  out.emplace_back(std::move(grad_operand));
  out.emplace_back(std::move(grad_scale_out));
  out.emplace_back(std::move(grad_offset_out));
  return out;
}

// ---- rng_bit_generator ----------------------------------------------------
//
// XLA's bit streams; the algorithms live in jit/eval/rng_bits.h, shared with
// the CPU device's runtime library.

KernelResult RngBitGeneratorKernel(OpContext& ctx) {
  const Literal& initial = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal state, ctx.NewResult(0));
  JITD_ASSIGN_OR_RETURN(Literal output, ctx.NewResult(1));
  std::vector<uint64_t> words(static_cast<size_t>(initial.num_elements()));
  for (int64_t i = 0; i < initial.num_elements(); ++i) words[static_cast<size_t>(i)] = initial.GetUInt(i);
  const RngBitStream stream(ctx.Enum("rng_algorithm", "DEFAULT") == "THREE_FRY", words,
                            output.type().dims(), ir::BitWidth(output.dtype()));
  stream.Generate(0, stream.blocks(), [&](int64_t i, uint64_t bits) { output.SetBits(i, bits); });
  const std::vector<uint64_t> new_state = stream.NewState();
  for (int64_t i = 0; i < initial.num_elements(); ++i) state.SetBits(i, new_state[static_cast<size_t>(i)]);
  std::vector<RuntimeValue> out;
  out.emplace_back(std::move(state));
  out.emplace_back(std::move(output));
  return out;
}

// ---- rng ------------------------------------------------------------------
//
// The spec leaves rng's numbers implementation-defined. Here they are
// deterministic: a splitmix64 stream seeded from the op's place among the
// program's rng ops (OpContext::PlaceInProgram; never its source line, which
// the disk cache's reprinted module changes), so each rng op yields the
// same values every time it runs (also inside a loop). UNIFORM draws from [a, b) (a when the interval is empty); NORMAL
// uses the Box-Muller transform with mean a and standard deviation b.

KernelResult RngKernel(OpContext& ctx) {
  const Literal& a = ctx.operand(0);
  const Literal& b = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  const DType t = result.dtype();
  uint64_t seed = 0x6A09E667F3BCC909ull ^ ((ctx.PlaceInProgram() + 1) * 0x9E3779B97F4A7C15ull);
  const bool normal = ctx.Enum("rng_distribution", "UNIFORM") == "NORMAL";
  for (int64_t i = 0; i < result.num_elements(); ++i) {
    const uint64_t r = SplitMix(seed);
    if (ir::IsFloat(t)) {
      const double lo = a.GetDouble(0), hi = b.GetDouble(0);
      if (normal) {
        const double u1 = 1.0 - UnitInterval(r), u2 = UnitInterval(SplitMix(seed));
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
        result.SetDouble(i, lo + hi * z);
      } else {
        result.SetDouble(i, lo + (hi - lo) * UnitInterval(r));
        // Rounding may land on b itself; keep the interval half-open.
        if (!(lo < hi) || !(result.GetDouble(i) < hi)) result.SetDouble(i, lo);
      }
    } else {
      // Integers and i1: a + r mod (b - a), in wrapping 64-bit arithmetic.
      const bool is_signed = ir::IsSignedInt(t);
      const uint64_t lo = a.GetUInt(0), hi = b.GetUInt(0);
      const bool empty =
          is_signed ? static_cast<int64_t>(lo) >= static_cast<int64_t>(hi) : lo >= hi;
      const uint64_t range = hi - lo;
      result.SetInt(i, static_cast<int64_t>(empty ? lo : lo + r % range));
    }
  }
  return Single(std::move(result));
}

}  // namespace

void RegisterLinalgKernels(KernelTable& table) {
  Register(table, ir::OpCode::kDotGeneral, DotGeneralKernel);
  Register(table, ir::OpCode::kDot, DotKernel);
  Register(table, ir::OpCode::kConvolution, ConvolutionKernel);
  Register(table, ir::OpCode::kFft, FftKernel);
  Register(table, ir::OpCode::kTriangularSolve, TriangularSolveKernel);
  Register(table, ir::OpCode::kCholesky, CholeskyKernel);
  Register(table, ir::OpCode::kBatchNormInference, BatchNormInferenceKernel);
  Register(table, ir::OpCode::kBatchNormTraining, BatchNormTrainingKernel);
  Register(table, ir::OpCode::kBatchNormGrad, BatchNormGradKernel);
  Register(table, ir::OpCode::kRngBitGenerator, RngBitGeneratorKernel);
  Register(table, ir::OpCode::kRng, RngKernel);
}

}  // namespace jitd::eval::internal
