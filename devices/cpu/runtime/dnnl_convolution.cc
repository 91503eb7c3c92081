// stablehlo.convolution through oneDNN (Debian's libdnnl, 2.6): f32
// convolutions with 1-3 spatial dimensions, any dimension numbers, window
// strides, padding >= 0, kernel (rhs) dilation and feature groups. What
// oneDNN cannot express — lhs dilation (transposed convolution), window
// reversal, batch groups, negative padding — and other element types stay
// with the im2col op of convolution.cc.
//
// Planned once: jitd's dense row-major operands are described to oneDNN as
// strided plain memory (logical N,C,spatial / O,I,spatial, or
// G,O/G,I/G,spatial when grouped), so NHWC/HWIO, NCHW/OIHW and every other
// permutation are the same code. The convolution primitive is created with
// the weights in the layout oneDNN prefers (format_tag::any: blocked, e.g.
// Acdb32a for brgconv) and the activations in the first layout that gets a
// direct kernel: the caller's, channels-last (reorders around the
// primitive: NCHW gets brgconv this way instead of gemm:jit), or oneDNN's
// own choice. The weights are reordered every run, or once per weights
// buffer when RunContext marks the operand immutable (constants:
// ResNet-50's 100 MB of weights would otherwise cost ~15% of the
// convolutions' time per inference). Large convolutions on plain layouts
// are cut into slices (batch, or output rows of one image) that run
// concurrently on the device's pool.
//
// oneDNN sums in its own blocked order: results differ from the
// interpreter's by rounding only, within the tolerance of OpenBLAS products
// (differential_testing.h). Small convolutions (below
// kBlasMinMultiplyAdds) stay on the exact path of convolution.cc.
//
// Threading: Debian builds oneDNN on OpenMP (libgomp). Every primitive runs
// single-threaded (SingleThreadedOpenMp); the slices use the cpu device's
// pool through RunContext::parallel_for, as many as LibraryThreads().

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "devices/cpu/runtime/blas_core.h"
#include "devices/cpu/runtime/internal/dnnl_support.h"
#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/gemm.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

using dnnl::memory;

// A plain strided layout: logical dims (oneDNN order) and element strides.
struct Layout {
  memory::dims dims, strides;
  memory::desc desc() const { return memory::desc(dims, memory::data_type::f32, strides); }
};

// Logical dimension d of oneDNN is dimension axes[d] of the row-major jitd
// tensor with shape `shape`.
Layout Strided(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  std::vector<int64_t> row_major(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) row_major[i - 1] = row_major[i] * shape[i];
  Layout l;
  for (int64_t a : axes) {
    l.dims.push_back(shape[static_cast<size_t>(a)]);
    l.strides.push_back(row_major[static_cast<size_t>(a)]);
  }
  return l;
}

bool IsReference(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) == 0;
}

// The window of the convolution in oneDNN's terms.
struct Window {
  memory::dims strides, dilation, pad_l, pad_r;
};

dnnl::convolution_forward::primitive_desc MakeConvolution(const memory::desc& src,
                                                          const memory::desc& weights,
                                                          const memory::desc& dst, const Window& w) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_direct, src, weights, dst,
                                       w.strides, w.dilation, w.pad_l, w.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, attr, DnnlEngine());
}

// One piece of the convolution: output images [n0, n1) or, for one image,
// output rows [r0, r1) of the first spatial dimension, with the input rows
// they read. Slices run concurrently on the device's pool.
struct Slice {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  int64_t src_offset = 0, dst_offset = 0;  // elements
};

// Splits the convolution into up to `count` slices along the batch (when it
// has several images) or the first spatial dimension of one image, all using
// the weights layout `weights`. Empty when a slice would need oneDNN's
// reference code (a strided view no optimized kernel takes) or cannot be
// formed; the caller then runs the whole convolution as one primitive.
std::vector<Slice> MakeSlices(const Layout& src, const Layout& dst, const memory::desc& weights,
                              const Window& w, int64_t count) {
  std::vector<Slice> slices;
  const bool by_batch = src.dims[0] > 1;
  const size_t axis = by_batch ? 0 : 2;
  const int64_t extent = dst.dims[axis];
  count = std::min(count, extent);
  if (count < 2) return {};
  for (int64_t i = 0; i < count; ++i) {
    const int64_t o0 = i * extent / count, o1 = (i + 1) * extent / count;
    Layout s = src, d = dst;
    Window win = w;
    d.dims[axis] = o1 - o0;
    int64_t in0 = o0;
    if (by_batch) {
      s.dims[0] = o1 - o0;
    } else {
      const int64_t stride = w.strides[0], pad = w.pad_l[0];
      const int64_t kernel = weights.dims()[weights.dims().size() - (src.dims.size() - 2)];
      const int64_t reach = (kernel - 1) * (w.dilation[0] + 1) + 1;
      const int64_t raw = o0 * stride - pad;
      const int64_t pad_top = std::max<int64_t>(0, -raw);
      in0 = std::max<int64_t>(0, raw);
      const int64_t in1 = std::min(src.dims[2], (o1 - 1) * stride - pad + reach);
      if (in1 <= in0) return {};
      s.dims[2] = in1 - in0;
      win.pad_l[0] = pad_top;
      win.pad_r[0] = (o1 - o0 - 1) * stride + reach - s.dims[2] - pad_top;
      if (win.pad_r[0] < 0) return {};
      // One image: its batch stride does not address anything; make it the
      // dense one so the slice matches oneDNN's plain formats.
      for (Layout* l : {&s, &d}) {
        int64_t outer = 1;
        for (size_t k = 1; k < l->dims.size(); ++k) outer = std::max(outer, l->strides[k] * l->dims[k]);
        l->strides[0] = outer;
      }
    }
    Slice slice;
    try {
      slice.pd = MakeConvolution(s.desc(), weights, d.desc(), win);
    } catch (const dnnl::error&) {
      return {};
    }
    if (IsReference(slice.pd) || slice.pd.weights_desc() != weights) return {};
    slice.conv = dnnl::convolution_forward(slice.pd);
    slice.src_offset = in0 * src.strides[axis];
    slice.dst_offset = o0 * dst.strides[axis];
    slices.push_back(std::move(slice));
  }
  return slices;
}

class DnnlConvolutionOp final : public LibraryOp {
 public:
  struct Plan {
    Layout src, dst;
    memory::desc weights;  // the caller's layouts
    dnnl::convolution_forward::primitive_desc pd;
    std::vector<Slice> slices;  // empty: pd on the calling thread
  };

  explicit DnnlConvolutionOp(Plan plan)
      : p_(std::move(plan)),
        src_desc_(p_.src.desc()),
        dst_desc_(p_.dst.desc()),
        // Sliced: only the slices' primitives run (no JIT code for this one).
        conv_(p_.slices.empty() ? dnnl::convolution_forward(p_.pd) : dnnl::convolution_forward()),
        reorder_src_(p_.pd.src_desc() != src_desc_),
        reorder_weights_(p_.pd.weights_desc() != p_.weights),
        reorder_dst_(p_.pd.dst_desc() != dst_desc_) {
    const dnnl::engine& engine = DnnlEngine();
    if (reorder_src_) {
      src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, src_desc_, engine, p_.pd.src_desc()));
    }
    if (reorder_weights_) {
      weights_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p_.weights, engine, p_.pd.weights_desc()));
    }
    if (reorder_dst_) {
      dst_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p_.pd.dst_desc(), engine, dst_desc_));
    }
  }

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    if (PastDeadline(context)) {
      return Status(StatusCode::kDeadlineExceeded, "convolution ran past its deadline");
    }
    try {
      RunOrThrow(operands, results, context);
    } catch (const dnnl::error& e) {
      return Internal(std::string("oneDNN convolution failed: ") + e.what());
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kResourceExhausted, "oneDNN convolution: out of memory");
    }
    return Status::Ok();
  }

 private:
  void RunOrThrow(std::span<const void* const> operands, std::span<void* const> results,
                  const RunContext& context) const {
    const SingleThreadedOpenMp single_threaded;
    const dnnl::engine& engine = DnnlEngine();
    dnnl::stream stream(engine);
    void* src_data = const_cast<void*>(operands[0]);
    void* weights_data = const_cast<void*>(operands[1]);
    std::shared_ptr<const Weights> cached;
    if (reorder_weights_) {
      const uint64_t stamp = context.operand_stamps.size() > 1 ? context.operand_stamps[1] : 0;
      if (stamp != 0) {
        cached = CachedWeights(operands[1], stamp, stream);
        weights_data = cached->data.get();
      } else {
        memory user(p_.weights, engine, weights_data);
        memory mine(p_.pd.weights_desc(), engine,
                    DnnlThreadBuffer(DnnlSlot::kConvWeights, p_.pd.weights_desc().get_size()));
        weights_reorder_.execute(stream, user, mine);
        stream.wait();
        weights_data = mine.get_data_handle();
      }
    }
    if (reorder_src_) {
      memory user(src_desc_, engine, src_data);
      memory mine(p_.pd.src_desc(), engine, DnnlThreadBuffer(DnnlSlot::kConvSrc, p_.pd.src_desc().get_size()));
      src_reorder_.execute(stream, user, mine);
      stream.wait();
      src_data = mine.get_data_handle();
    }
    void* dst_data = reorder_dst_ ? DnnlThreadBuffer(DnnlSlot::kConvDst, p_.pd.dst_desc().get_size()) : results[0];
    if (!p_.slices.empty()) {
      std::exception_ptr failure;
      std::mutex failure_mu;
      auto run_slices = [&](int64_t begin, int64_t end) {
        try {
          const SingleThreadedOpenMp single_threaded;
          dnnl::stream slice_stream(engine);
          for (int64_t i = begin; i < end; ++i) {
            const Slice& s = p_.slices[static_cast<size_t>(i)];
            memory src(s.pd.src_desc(), engine, static_cast<float*>(src_data) + s.src_offset);
            memory weights(s.pd.weights_desc(), engine, weights_data);
            memory dst(s.pd.dst_desc(), engine, static_cast<float*>(dst_data) + s.dst_offset);
            memory scratchpad(s.pd.scratchpad_desc(), engine,
                              DnnlThreadBuffer(DnnlSlot::kConvScratchpad, s.pd.scratchpad_desc().get_size()));
            s.conv.execute(slice_stream, {{DNNL_ARG_SRC, src},
                                          {DNNL_ARG_WEIGHTS, weights},
                                          {DNNL_ARG_DST, dst},
                                          {DNNL_ARG_SCRATCHPAD, scratchpad}});
            slice_stream.wait();
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mu);
          if (!failure) failure = std::current_exception();
        }
      };
      const int64_t n = static_cast<int64_t>(p_.slices.size());
      if (context.parallel_for != nullptr) {
        (*context.parallel_for)(n, run_slices);
      } else {
        run_slices(0, n);
      }
      if (failure) std::rethrow_exception(failure);
    } else {
      memory src(p_.pd.src_desc(), engine, src_data);
      memory weights(p_.pd.weights_desc(), engine, weights_data);
      memory dst(p_.pd.dst_desc(), engine, dst_data);
      memory scratchpad(p_.pd.scratchpad_desc(), engine,
                        DnnlThreadBuffer(DnnlSlot::kConvScratchpad, p_.pd.scratchpad_desc().get_size()));
      conv_.execute(stream, {{DNNL_ARG_SRC, src},
                             {DNNL_ARG_WEIGHTS, weights},
                             {DNNL_ARG_DST, dst},
                             {DNNL_ARG_SCRATCHPAD, scratchpad}});
    }
    if (reorder_dst_) {
      memory mine(p_.pd.dst_desc(), engine, dst_data);
      memory user(dst_desc_, engine, results[0]);
      dst_reorder_.execute(stream, mine, user);
    }
    stream.wait();
  }

  // Weights in the primitive's layout, reordered from one immutable buffer.
  struct Weights {
    const void* source = nullptr;
    uint64_t stamp = 0;
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
  };

  std::shared_ptr<const Weights> CachedWeights(const void* source, uint64_t stamp,
                                               dnnl::stream& stream) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ && cached_->source == source && cached_->stamp == stamp) return cached_;
    }
    auto w = std::make_shared<Weights>();
    w->source = source;
    w->stamp = stamp;
    const size_t bytes = (p_.pd.weights_desc().get_size() + 63) / 64 * 64;
    w->data.reset(std::aligned_alloc(64, bytes));
    if (!w->data) throw std::bad_alloc();
    const dnnl::engine& engine = DnnlEngine();
    memory user(p_.weights, engine, const_cast<void*>(source));
    memory mine(p_.pd.weights_desc(), engine, w->data.get());
    weights_reorder_.execute(stream, user, mine);
    stream.wait();
    std::lock_guard<std::mutex> lock(mu_);
    cached_ = w;  // one entry: a program runs one weights buffer per op
    return w;
  }

  Plan p_;
  memory::desc src_desc_, dst_desc_;
  dnnl::convolution_forward conv_;
  bool reorder_src_, reorder_weights_, reorder_dst_;
  dnnl::reorder src_reorder_, weights_reorder_, dst_reorder_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Weights> cached_;
};

}  // namespace

bool IsDnnlConvolution(const LibraryOp& op) {
  return dynamic_cast<const DnnlConvolutionOp*>(&op) != nullptr;
}

LibraryOpOr CreateDnnlConvolutionOp(const ir::Op& op, const ConvWindow& w) {
  const ir::Type& lt = op.operand(0)->type();
  const ir::Type& kt = op.operand(1)->type();
  const ir::Type& ot = op.result(0)->type();
  if (lt.dtype() != ir::DType::kF32 || kt.dtype() != ir::DType::kF32 ||
      ot.dtype() != ir::DType::kF32) {
    return Declined();
  }
  const auto& dn = op.attr("dimension_numbers")->as<ir::ConvDimensionNumbers>();
  const size_t spatial = dn.input_spatial_dimensions.size();
  if (spatial < 1 || spatial > 3 || w.batch_groups != 1) return Declined();
  if (lt.num_elements() == 0 || kt.num_elements() == 0 || ot.num_elements() == 0) {
    return Declined();
  }
  for (size_t s = 0; s < spatial; ++s) {
    if (w.lhs_dilation[s] != 1 || w.reversal[s] != 0 || w.padding[s].first < 0 ||
        w.padding[s].second < 0) {
      return Declined();
    }
  }
  // Small products keep the interpreter's exact summation order.
  const int64_t k_in = kt.dim(dn.kernel_input_feature_dimension);
  int64_t taps = 1;
  for (int64_t d : dn.kernel_spatial_dimensions) taps *= kt.dim(d);
  const int64_t multiply_adds = ot.num_elements() * taps * k_in;
  if (multiply_adds < kBlasMinMultiplyAdds) return Declined();

  std::vector<int64_t> src_axes = {dn.input_batch_dimension, dn.input_feature_dimension};
  std::vector<int64_t> dst_axes = {dn.output_batch_dimension, dn.output_feature_dimension};
  src_axes.insert(src_axes.end(), dn.input_spatial_dimensions.begin(), dn.input_spatial_dimensions.end());
  dst_axes.insert(dst_axes.end(), dn.output_spatial_dimensions.begin(), dn.output_spatial_dimensions.end());
  const Layout src = Strided(lt.dims(), src_axes);
  const Layout dst = Strided(ot.dims(), dst_axes);
  Layout weights;
  if (w.feature_groups == 1) {
    std::vector<int64_t> axes = {dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension};
    axes.insert(axes.end(), dn.kernel_spatial_dimensions.begin(), dn.kernel_spatial_dimensions.end());
    weights = Strided(kt.dims(), axes);
  } else {
    // Grouped: the output feature dimension splits into (group, feature).
    const int64_t groups = w.feature_groups;
    const int64_t k_out = kt.dim(dn.kernel_output_feature_dimension);
    std::vector<int64_t> row_major(kt.dims().size(), 1);
    for (size_t i = row_major.size(); i-- > 1;) row_major[i - 1] = row_major[i] * kt.dims()[i];
    const int64_t o_stride = row_major[static_cast<size_t>(dn.kernel_output_feature_dimension)];
    weights.dims = {groups, k_out / groups, k_in};
    weights.strides = {o_stride * (k_out / groups), o_stride,
                       row_major[static_cast<size_t>(dn.kernel_input_feature_dimension)]};
    for (int64_t d : dn.kernel_spatial_dimensions) {
      weights.dims.push_back(kt.dim(d));
      weights.strides.push_back(row_major[static_cast<size_t>(d)]);
    }
  }
  Window window;
  for (size_t s = 0; s < spatial; ++s) {
    window.strides.push_back(w.strides[s]);
    window.dilation.push_back(w.rhs_dilation[s] - 1);  // oneDNN counts the gaps
    window.pad_l.push_back(w.padding[s].first);
    window.pad_r.push_back(w.padding[s].second);
  }
  try {
    // oneDNN fixes a primitive's thread count when its descriptor is made
    // (omp_get_max_threads() then): made single-threaded, the primitives
    // run on the calling thread only (the device's pool runs the slices).
    const SingleThreadedOpenMp single_threaded;
    const memory::desc any_weights(weights.dims, memory::data_type::f32, memory::format_tag::any);
    // Activation layouts in order of preference: the caller's; channels-last
    // (NHWC-like, what oneDNN's brgconv kernels take) with reorders around
    // the primitive; oneDNN's own choice (blocked). The first that gets an
    // optimized direct kernel wins; a gemm-based one (im2col inside
    // oneDNN, which NCHW gets) only when nothing better takes the shape;
    // oneDNN's reference code never (the im2col op is faster).
    Layout channels_last_src = src, channels_last_dst = dst;
    for (Layout* l : {&channels_last_src, &channels_last_dst}) {
      // Dense with the feature dimension innermost, then spatial, batch.
      int64_t stride = 1;
      l->strides[1] = stride;
      stride *= l->dims[1];
      for (size_t d = l->dims.size(); d-- > 2;) {
        l->strides[d] = stride;
        stride *= l->dims[d];
      }
      l->strides[0] = stride;
    }
    struct Candidate {
      dnnl::convolution_forward::primitive_desc pd;
      bool sliceable = false;  // explicit plain layouts: row/batch slices possible
      Layout conv_src, conv_dst;
    };
    std::vector<Candidate> candidates;
    auto consider = [&](const memory::desc& s, const memory::desc& d, bool sliceable, const Layout& ls,
                        const Layout& ld) {
      try {
        Candidate c{MakeConvolution(s, any_weights, d, window), sliceable, ls, ld};
        if (!IsReference(c.pd)) candidates.push_back(std::move(c));
      } catch (const dnnl::error&) {
      }
    };
    consider(src.desc(), dst.desc(), true, src, dst);
    consider(channels_last_src.desc(), channels_last_dst.desc(), true, channels_last_src, channels_last_dst);
    consider(memory::desc(src.dims, memory::data_type::f32, memory::format_tag::any),
             memory::desc(dst.dims, memory::data_type::f32, memory::format_tag::any), false, src, dst);
    if (candidates.empty()) return Declined();
    const Candidate* chosen = &candidates[0];
    for (const Candidate& c : candidates) {
      if (std::string_view(c.pd.impl_info_str()).find("gemm") == std::string_view::npos) {
        chosen = &c;
        break;
      }
    }
    DnnlConvolutionOp::Plan plan{src, dst, weights.desc(), chosen->pd, {}};
    // Slices for the device's threads, when the primitive works on plain
    // layouts and each slice has enough work (~2M multiply-adds: a pool
    // hand-off costs microseconds).
    int64_t threads = LibraryThreads();
    if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
    constexpr int64_t kMinSliceMultiplyAdds = int64_t{1} << 21;
    int64_t count = threads < 2 ? 1 : threads;
    count = std::min(count, multiply_adds / kMinSliceMultiplyAdds);
    if (chosen->sliceable && count >= 2) {
      plan.slices = MakeSlices(chosen->conv_src, chosen->conv_dst, chosen->pd.weights_desc(), window, count);
    }
    return std::unique_ptr<LibraryOp>(new DnnlConvolutionOp(std::move(plan)));
  } catch (const dnnl::error&) {
    return Declined();  // shapes or attributes oneDNN does not take
  } catch (const std::bad_alloc&) {
    return Declined();
  }
}

}  // namespace jitd::cpu::internal
