// stablehlo.convolution as im2col + matrix product: the fallback for what
// dnnl_convolution.cc (oneDNN, f32) does not take.
//
// Planned once: for every output spatial position and kernel tap, the lhs
// element offset it reads (or -1 for padding and lhs-dilation holes), as
// jit/eval's reframing computes it. At run time, for each output batch
// element and each block of output features that shares one feature group
// and one batch group, the touched lhs windows are gathered into a patch
// matrix P [output positions x (taps * input features)] and multiplied
// with the kernel as W [(taps * input features) x output features]. The
// column order (tap-major, feature-minor) is the interpreter's summation
// order, so the exact path of Gemm reproduces it bit for bit; large float
// products go through OpenBLAS, large i8 x i8 -> i32 ones with a
// feature-last output through oneDNN's int8 matmul (Int8Gemm: integer
// sums, exact in any order).
#include <algorithm>
#include <complex>
#include <cstring>
#include <memory>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/gemm.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

using ir::DType;

struct ConvPlan {
  ir::Type lhs, kernel, out;
  int64_t out_batch = 0, k_out = 0, k_in = 0, taps = 0, out_positions = 0;
  int64_t block = 0;  // output features per (feature group, batch group) block
  int64_t out_per_feature_group = 0, out_per_batch_group = 0, batch_per_group = 0;
  int64_t lhs_batch_stride = 0, lhs_feature_stride = 0;
  int64_t out_batch_stride = 0, out_feature_stride = 0;
  // tap_offsets[pos * taps + t]: lhs spatial offset (elements) or -1.
  std::vector<int64_t> tap_offsets;
  // Offset of each output position (row-major over the output's spatial
  // dimensions in dimension-number order) within one output image.
  std::vector<int64_t> out_position_offsets;
  std::vector<int64_t> kernel_to_w;  // permutation: kernel -> [spatial..., in, out]
  enum class OutLayout { kFeatureLast, kFeatureFirst, kOther } out_layout = OutLayout::kOther;
  // The patch matrix is the lhs image itself (1x1 windows over a
  // feature-last lhs with no stride, padding or dilation gaps): no im2col.
  bool patches_are_image = false;
  // The kernel is already W ([spatial..., in, out], e.g. HWIO): used as is
  // (after any domain conversion), without a per-run copy of the weights.
  bool kernel_is_w = false;
  // i8 x i8 -> i32 with a feature-last output: P [positions x kk] times
  // W's block [kk x block] (row stride k_out) into the output's block.
  std::shared_ptr<const Int8Gemm> int8_gemm;
};

class ConvolutionOp final : public LibraryOp {
 public:
  explicit ConvolutionOp(ConvPlan plan) : p_(std::move(plan)) {}
  bool uses_int8_gemm() const { return p_.int8_gemm != nullptr; }

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    if (p_.int8_gemm) {
      return RunInt8(static_cast<const int8_t*>(operands[0]), static_cast<const int8_t*>(operands[1]),
                     static_cast<int32_t*>(results[0]), context);
    }
    return WithDomain(DomainOf(p_.out.dtype()), [&]<typename T>() {
      return RunIn<T>(operands[0], operands[1], results[0], context);
    });
  }

 private:
  template <typename T>
  const T* AsDomain(const ir::Type& type, const void* data, std::vector<T>& storage) const {
    if (IsNative<T>(type.dtype())) return static_cast<const T*>(data);
    storage.resize(static_cast<size_t>(type.num_elements()));
    LoadDomain<T>(data, type.dtype(), p_.out.dtype(), type.num_elements(), storage.data());
    return storage.data();
  }

  template <typename T>
  Status RunIn(const void* lhs_data, const void* kernel_data, void* result,
               const RunContext& context) const {
    const int64_t out_count = p_.out.num_elements();
    if (out_count == 0) return Status::Ok();
    std::vector<T> lhs_storage, kernel_storage, out_storage;
    const T* lhs = AsDomain<T>(p_.lhs, lhs_data, lhs_storage);
    const T* kernel = AsDomain<T>(p_.kernel, kernel_data, kernel_storage);
    const int64_t kk = p_.taps * p_.k_in;
    std::vector<T> w_storage;
    const T* w = kernel;
    if (!p_.kernel_is_w) {
      w_storage.resize(static_cast<size_t>(kk * p_.k_out));
      Permute(kernel, p_.kernel.dims(), p_.kernel_to_w, w_storage.data());
      w = w_storage.data();
    }
    T* out = static_cast<T*>(result);
    if (!IsNative<T>(p_.out.dtype())) {
      out_storage.resize(static_cast<size_t>(out_count));
      out = out_storage.data();
    }
    const int64_t positions = p_.out_positions;
    // Every element of the patch matrix is written by the gather below
    // (no zero-initialisation: that was a memset of megabytes per run).
    std::unique_ptr<T[]> patches(p_.patches_are_image ? nullptr : new T[static_cast<size_t>(positions * kk)]);
    std::vector<T> scratch;
    if (p_.out_layout == ConvPlan::OutLayout::kOther) {
      scratch.resize(static_cast<size_t>(positions * p_.block));
    }
    const int64_t blocks = p_.block == 0 ? 0 : p_.k_out / p_.block;
    for (int64_t ob = 0; ob < p_.out_batch; ++ob) {
      for (int64_t q = 0; q < blocks; ++q) {
        if (PastDeadline(context)) {
          return Status(StatusCode::kDeadlineExceeded, "convolution ran past its deadline");
        }
        const int64_t f0 = q * p_.block;
        const int64_t group = f0 / p_.out_per_feature_group;
        const int64_t batch = (f0 / p_.out_per_batch_group) * p_.batch_per_group + ob;
        const T* image = lhs + batch * p_.lhs_batch_stride + group * p_.k_in * p_.lhs_feature_stride;
        const T* patch_matrix = p_.patches_are_image ? image : patches.get();
        // im2col: row = output position, column = tap * k_in + feature.
        auto gather_rows = [&](int64_t begin, int64_t end) {
          for (int64_t pos = begin; pos < end; ++pos) {
            T* row = patches.get() + pos * kk;
            const int64_t* offsets = p_.tap_offsets.data() + pos * p_.taps;
            for (int64_t t = 0; t < p_.taps; ++t) {
              T* dst = row + t * p_.k_in;
              if (offsets[t] < 0) {
                std::fill(dst, dst + p_.k_in, T{});
              } else if (p_.lhs_feature_stride == 1) {  // feature-last lhs
                std::memcpy(dst, image + offsets[t], static_cast<size_t>(p_.k_in) * sizeof(T));
              } else {
                const T* src = image + offsets[t];
                for (int64_t c = 0; c < p_.k_in; ++c) dst[c] = src[c * p_.lhs_feature_stride];
              }
            }
          }
        };
        if (!p_.patches_are_image) ParallelRange(context, positions, kk, gather_rows);
        T* image_out = out + ob * p_.out_batch_stride;
        switch (p_.out_layout) {
          case ConvPlan::OutLayout::kFeatureLast:  // out[pos][f] = P W
            Gemm<T>(positions, p_.block, kk, patch_matrix, kk, false, w + f0, p_.k_out,
                    false, image_out + f0, p_.k_out, context);
            break;
          case ConvPlan::OutLayout::kFeatureFirst:  // out[f][pos] = W^T P^T
            Gemm<T>(p_.block, positions, kk, w + f0, p_.k_out, true, patch_matrix, kk,
                    true, image_out + f0 * positions, positions, context);
            break;
          case ConvPlan::OutLayout::kOther:
            Gemm<T>(positions, p_.block, kk, patch_matrix, kk, false, w + f0, p_.k_out,
                    false, scratch.data(), p_.block, context);
            for (int64_t pos = 0; pos < positions; ++pos) {
              for (int64_t j = 0; j < p_.block; ++j) {
                image_out[p_.out_position_offsets[pos] + (f0 + j) * p_.out_feature_stride] =
                    scratch[pos * p_.block + j];
              }
            }
            break;
        }
      }
    }
    if (!IsNative<T>(p_.out.dtype())) StoreDomain<T>(out, out_count, p_.out.dtype(), result);
    return Status::Ok();
  }

  // RunIn's kFeatureLast case on the int8 operands as they are, the
  // product through p_.int8_gemm.
  Status RunInt8(const int8_t* lhs, const int8_t* kernel, int32_t* out, const RunContext& context) const {
    if (p_.out.num_elements() == 0) return Status::Ok();
    const int64_t kk = p_.taps * p_.k_in;
    std::vector<int8_t> w_storage;
    const int8_t* w = kernel;
    if (!p_.kernel_is_w) {
      w_storage.resize(static_cast<size_t>(kk * p_.k_out));
      Permute(kernel, p_.kernel.dims(), p_.kernel_to_w, w_storage.data());
      w = w_storage.data();
    }
    const int64_t positions = p_.out_positions;
    std::unique_ptr<int8_t[]> patches(p_.patches_are_image ? nullptr
                                                           : new int8_t[static_cast<size_t>(positions * kk)]);
    const int64_t blocks = p_.block == 0 ? 0 : p_.k_out / p_.block;
    for (int64_t ob = 0; ob < p_.out_batch; ++ob) {
      for (int64_t q = 0; q < blocks; ++q) {
        if (PastDeadline(context)) {
          return Status(StatusCode::kDeadlineExceeded, "convolution ran past its deadline");
        }
        const int64_t f0 = q * p_.block;
        const int64_t group = f0 / p_.out_per_feature_group;
        const int64_t batch = (f0 / p_.out_per_batch_group) * p_.batch_per_group + ob;
        const int8_t* image = lhs + batch * p_.lhs_batch_stride + group * p_.k_in * p_.lhs_feature_stride;
        auto gather_rows = [&](int64_t begin, int64_t end) {
          for (int64_t pos = begin; pos < end; ++pos) {
            int8_t* row = patches.get() + pos * kk;
            const int64_t* offsets = p_.tap_offsets.data() + pos * p_.taps;
            for (int64_t t = 0; t < p_.taps; ++t) {
              int8_t* dst = row + t * p_.k_in;
              if (offsets[t] < 0) {
                std::fill(dst, dst + p_.k_in, int8_t{0});
              } else if (p_.lhs_feature_stride == 1) {
                std::memcpy(dst, image + offsets[t], static_cast<size_t>(p_.k_in));
              } else {
                const int8_t* src = image + offsets[t];
                for (int64_t c = 0; c < p_.k_in; ++c) dst[c] = src[c * p_.lhs_feature_stride];
              }
            }
          }
        };
        if (!p_.patches_are_image) ParallelRange(context, positions, kk, gather_rows);
        p_.int8_gemm->Run(p_.patches_are_image ? image : patches.get(), w + f0,
                          out + ob * p_.out_batch_stride + f0, context);
      }
    }
    return Status::Ok();
  }

  ConvPlan p_;
};

}  // namespace

bool IsInt8GemmConvolution(const LibraryOp& op) {
  const auto* conv = dynamic_cast<const ConvolutionOp*>(&op);
  return conv != nullptr && conv->uses_int8_gemm();
}

LibraryOpOr CreateConvolutionOp(const ir::Op& op) {
  if (op.num_operands() != 2 || op.num_results() != 1) return Declined();
  const ir::Attribute* dn_attr = op.attr("dimension_numbers");
  if (!dn_attr || !dn_attr->is<ir::ConvDimensionNumbers>()) return Declined();
  const auto& dn = dn_attr->as<ir::ConvDimensionNumbers>();
  ConvPlan p;
  p.lhs = op.operand(0)->type();
  p.kernel = op.operand(1)->type();
  p.out = op.result(0)->type();
  if (!p.lhs.is_tensor() || !p.kernel.is_tensor() || !p.out.is_tensor()) return Declined();
  const size_t spatial = dn.input_spatial_dimensions.size();
  if (dn.kernel_spatial_dimensions.size() != spatial ||
      dn.output_spatial_dimensions.size() != spatial) {
    return OpError(op, "has inconsistent dimension numbers");
  }
  const std::vector<int64_t> strides = I64sOr(op, "window_strides", spatial, 1);
  const std::vector<int64_t> lhs_dilation = I64sOr(op, "lhs_dilation", spatial, 1);
  const std::vector<int64_t> rhs_dilation = I64sOr(op, "rhs_dilation", spatial, 1);
  const std::vector<int64_t> reversal = I64sOr(op, "window_reversal", spatial, 0);
  JITD_ASSIGN_OR_RETURN(const auto padding, PaddingPairs(op, spatial));
  // The interpreter refuses window attributes beyond 2^24; so do we (the
  // caller falls back and reports the interpreter's error).
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (size_t s = 0; s < spatial; ++s) {
    for (int64_t v : {strides[s], lhs_dilation[s], rhs_dilation[s], padding[s].first}) {
      if (v <= -kLimit || v >= kLimit) return Declined();
    }
    if (strides[s] < 1 || lhs_dilation[s] < 1 || rhs_dilation[s] < 1) {
      return OpError(op, "has a window stride or dilation below 1");
    }
  }
  const int64_t feature_groups = op.GetInt("feature_group_count").value_or(1);
  const int64_t batch_groups = op.GetInt("batch_group_count").value_or(1);
  if (feature_groups < 1 || batch_groups < 1) return OpError(op, "has a group count below 1");
  if (feature_groups > 1 && batch_groups > 1) return Declined();  // the spec forbids it

  const ir::Type& lt = p.lhs;
  const ir::Type& kt = p.kernel;
  const ir::Type& ot = p.out;
  p.k_in = kt.dim(dn.kernel_input_feature_dimension);
  p.k_out = kt.dim(dn.kernel_output_feature_dimension);
  p.out_batch = ot.dim(dn.output_batch_dimension);
  if (p.k_out % feature_groups != 0 || p.k_out % batch_groups != 0 ||
      lt.dim(dn.input_batch_dimension) % batch_groups != 0 ||
      ot.dim(dn.output_feature_dimension) != p.k_out ||
      lt.dim(dn.input_feature_dimension) != p.k_in * feature_groups) {
    return OpError(op, "has feature or batch counts that do not match its groups");
  }
  p.out_per_feature_group = p.k_out / feature_groups;
  p.out_per_batch_group = p.k_out / batch_groups;
  p.batch_per_group = lt.dim(dn.input_batch_dimension) / batch_groups;
  p.block = std::min(p.out_per_feature_group, p.out_per_batch_group);

  // f32 convolutions oneDNN runs well go there; the rest is planned below.
  {
    JITD_ASSIGN_OR_RETURN(auto dnnl_op,
                          CreateDnnlConvolutionOp(op, ConvWindow{strides, lhs_dilation, rhs_dilation, reversal,
                                                                 padding, feature_groups, batch_groups}));
    if (dnnl_op) return dnnl_op;
  }

  const std::vector<int64_t> lhs_strides = RowMajorStrides(lt.dims());
  const std::vector<int64_t> out_strides = RowMajorStrides(ot.dims());
  p.lhs_batch_stride = lhs_strides[dn.input_batch_dimension];
  p.lhs_feature_stride = lhs_strides[dn.input_feature_dimension];
  p.out_batch_stride = out_strides[dn.output_batch_dimension];
  p.out_feature_stride = out_strides[dn.output_feature_dimension];

  // Along spatial dimension s, output position o and kernel position k
  // read lhs position positions[s][o * K + k], or -1 (as jit/eval).
  std::vector<int64_t> kernel_sizes, out_sizes;
  std::vector<std::vector<int64_t>> positions(spatial);
  p.taps = 1;
  p.out_positions = 1;
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t k_size = kt.dim(dn.kernel_spatial_dimensions[s]);
    const int64_t in_size = lt.dim(dn.input_spatial_dimensions[s]);
    const int64_t o_size = ot.dim(dn.output_spatial_dimensions[s]);
    kernel_sizes.push_back(k_size);
    out_sizes.push_back(o_size);
    p.taps *= k_size;
    p.out_positions *= o_size;
    for (int64_t o = 0; o < o_size; ++o) {
      for (int64_t k = 0; k < k_size; ++k) {
        const int64_t tap = reversal[s] ? k_size - 1 - k : k;
        const int64_t q = o * strides[s] + tap * rhs_dilation[s] - padding[s].first;
        const bool hit = q >= 0 && q % lhs_dilation[s] == 0 && q / lhs_dilation[s] < in_size;
        positions[s].push_back(hit ? q / lhs_dilation[s] : -1);
      }
    }
  }
  // Plans past ~1 GiB of offsets are not worth it; the caller falls back.
  if (p.out_positions * p.taps > (int64_t{1} << 27)) return Declined();
  if (ot.num_elements() > 0) {
    p.tap_offsets.resize(static_cast<size_t>(p.out_positions * p.taps));
    p.out_position_offsets.resize(static_cast<size_t>(p.out_positions));
    std::vector<int64_t> o(spatial, 0), k(spatial, 0);
    for (int64_t pos = 0; pos < p.out_positions; ++pos) {
      int64_t out_off = 0;
      for (size_t s = 0; s < spatial; ++s) out_off += o[s] * out_strides[dn.output_spatial_dimensions[s]];
      p.out_position_offsets[pos] = out_off;
      std::fill(k.begin(), k.end(), 0);
      for (int64_t t = 0; t < p.taps; ++t) {
        int64_t off = 0;
        for (size_t s = 0; s < spatial && off >= 0; ++s) {
          const int64_t q = positions[s][o[s] * kernel_sizes[s] + k[s]];
          off = q < 0 ? -1 : off + q * lhs_strides[dn.input_spatial_dimensions[s]];
        }
        p.tap_offsets[pos * p.taps + t] = off;
        for (size_t s = spatial; s-- > 0;) {  // next tap, row-major
          if (++k[s] < kernel_sizes[s]) break;
          k[s] = 0;
        }
      }
      for (size_t s = spatial; s-- > 0;) {  // next output position
        if (++o[s] < out_sizes[s]) break;
        o[s] = 0;
      }
    }
  }
  // Row `pos` of the patch matrix is image + pos * k_in when every output
  // position reads exactly the next lhs pixel and features are contiguous.
  if (p.taps == 1 && p.lhs_feature_stride == 1 && feature_groups == 1 &&
      lt.dim(dn.input_feature_dimension) == p.k_in && !p.tap_offsets.empty()) {
    bool identity = true;
    for (int64_t pos = 0; pos < p.out_positions && identity; ++pos) {
      identity = p.tap_offsets[pos] == pos * p.k_in;
    }
    p.patches_are_image = identity;
  }
  p.kernel_to_w = dn.kernel_spatial_dimensions;
  p.kernel_to_w.push_back(dn.kernel_input_feature_dimension);
  p.kernel_to_w.push_back(dn.kernel_output_feature_dimension);
  p.kernel_is_w = true;
  for (size_t i = 0; i < p.kernel_to_w.size(); ++i) {
    p.kernel_is_w = p.kernel_is_w && p.kernel_to_w[i] == static_cast<int64_t>(i);
  }

  // Output layouts the product can write in place.
  std::vector<int64_t> last = {dn.output_batch_dimension}, first = {dn.output_batch_dimension,
                                                                    dn.output_feature_dimension};
  last.insert(last.end(), dn.output_spatial_dimensions.begin(), dn.output_spatial_dimensions.end());
  last.push_back(dn.output_feature_dimension);
  first.insert(first.end(), dn.output_spatial_dimensions.begin(),
               dn.output_spatial_dimensions.end());
  auto identity = [](const std::vector<int64_t>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  if (identity(last)) {
    p.out_layout = ConvPlan::OutLayout::kFeatureLast;
  } else if (identity(first)) {
    p.out_layout = ConvPlan::OutLayout::kFeatureFirst;
  }
  if (lt.dtype() == ir::DType::kS8 && kt.dtype() == ir::DType::kS8 && ot.dtype() == ir::DType::kS32 &&
      p.out_layout == ConvPlan::OutLayout::kFeatureLast && ot.num_elements() > 0) {
    const int64_t kk = p.taps * p.k_in;
    p.int8_gemm = CreateInt8Gemm(p.out_positions, p.block, kk, kk, p.k_out, p.k_out);
  }
  return std::unique_ptr<LibraryOp>(new ConvolutionOp(std::move(p)));
}

}  // namespace jitd::cpu::internal
