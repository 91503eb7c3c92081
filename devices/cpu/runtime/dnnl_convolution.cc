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
// the activations in the caller's layout and the weights in the layout
// oneDNN prefers (format_tag::any: blocked, e.g. Acdb32a for brgconv);
// only when no optimized implementation accepts the caller's activation
// layout does it fall back to oneDNN's preferred activation layout too, with
// reorders around the primitive. The weights are reordered every run, or
// once per weights buffer when RunContext marks the operand immutable
// (constants: ResNet's 100 MB of weights would otherwise cost ~15% of the
// convolutions' time per inference).
//
// oneDNN sums in its own blocked order: results differ from the
// interpreter's by rounding only, within the tolerance of OpenBLAS products
// (differential_testing.h). Small convolutions (below
// kBlasMinMultiplyAdds) stay on the exact path of convolution.cc.
//
// Threading: Debian builds oneDNN on OpenMP (libgomp). The OpenMP team of the
// thread that calls Run does the work; its size is set before each call to
// the cpu device's thread count (LibraryThreads()) unless OMP_NUM_THREADS
// is set.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "devices/cpu/runtime/blas_core.h"
#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/gemm.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

using dnnl::memory;

const dnnl::engine& CpuEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Sizes the calling thread's OpenMP team (the ICV is per thread) to the cpu
// device's thread count. The OpenMP entry points are looked up at run time:
// libdnnl brings libgomp, and a oneDNN built on another runtime has none.
void BoundOpenMpTeam() {
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  static const bool user_set = std::getenv("OMP_NUM_THREADS") != nullptr;
  static const SetFn set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  static const GetFn get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  const int threads = LibraryThreads();
  if (user_set || threads <= 0 || set == nullptr || get == nullptr) return;
  if (get() != threads) set(threads);
}

// Per-thread, per-purpose scratch storage (64-byte aligned, grown as
// needed, kept between runs so its pages are touched once).
enum Slot { kScratchpad, kSrc, kWeights, kDst, kSlots };
void* ThreadBuffer(Slot slot, size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[kSlots];
  Buffer& b = buffers[slot];
  if (b.size < bytes) {
    std::free(b.data);
    const size_t rounded = (bytes + 63) / 64 * 64;
    b.data = std::aligned_alloc(64, rounded);
    b.size = b.data ? rounded : 0;
  }
  return b.data;
}

// A plain strided descriptor: logical dimension d of oneDNN is dimension
// axes[d] of the row-major jitd tensor with shape `shape`.
memory::desc Strided(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  std::vector<int64_t> row_major(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) row_major[i - 1] = row_major[i] * shape[i];
  memory::dims dims, strides;
  for (int64_t a : axes) {
    dims.push_back(shape[static_cast<size_t>(a)]);
    strides.push_back(row_major[static_cast<size_t>(a)]);
  }
  return memory::desc(dims, memory::data_type::f32, strides);
}

bool IsReference(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) == 0;
}

class DnnlConvolutionOp final : public LibraryOp {
 public:
  struct Plan {
    memory::desc src, weights, dst;  // the caller's layouts
    dnnl::convolution_forward::primitive_desc pd;
  };

  explicit DnnlConvolutionOp(Plan plan)
      : p_(std::move(plan)),
        conv_(p_.pd),
        reorder_src_(p_.pd.src_desc() != p_.src),
        reorder_weights_(p_.pd.weights_desc() != p_.weights),
        reorder_dst_(p_.pd.dst_desc() != p_.dst) {
    const dnnl::engine& engine = CpuEngine();
    if (reorder_src_) src_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p_.src, engine, p_.pd.src_desc()));
    if (reorder_weights_) {
      weights_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p_.weights, engine, p_.pd.weights_desc()));
    }
    if (reorder_dst_) dst_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine, p_.pd.dst_desc(), engine, p_.dst));
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
    BoundOpenMpTeam();
    const dnnl::engine& engine = CpuEngine();
    dnnl::stream stream(engine);
    void* src_data = const_cast<void*>(operands[0]);
    void* weights_data = const_cast<void*>(operands[1]);
    if (reorder_src_) {
      memory user(p_.src, engine, src_data);
      memory mine(p_.pd.src_desc(), engine, ThreadBuffer(kSrc, p_.pd.src_desc().get_size()));
      src_reorder_.execute(stream, user, mine);
      src_data = mine.get_data_handle();
    }
    std::shared_ptr<const Weights> cached;
    if (reorder_weights_) {
      const uint64_t stamp = operands.size() > 1 && context.operand_stamps.size() > 1
                                 ? context.operand_stamps[1]
                                 : 0;
      if (stamp != 0) {
        cached = CachedWeights(operands[1], stamp, stream);
        weights_data = cached->data.get();
      } else {
        memory user(p_.weights, engine, weights_data);
        memory mine(p_.pd.weights_desc(), engine,
                    ThreadBuffer(kWeights, p_.pd.weights_desc().get_size()));
        weights_reorder_.execute(stream, user, mine);
        weights_data = mine.get_data_handle();
      }
    }
    void* dst_data = reorder_dst_ ? ThreadBuffer(kDst, p_.pd.dst_desc().get_size()) : results[0];
    memory src(p_.pd.src_desc(), engine, src_data);
    memory weights(p_.pd.weights_desc(), engine, weights_data);
    memory dst(p_.pd.dst_desc(), engine, dst_data);
    memory scratchpad(p_.pd.scratchpad_desc(), engine,
                      ThreadBuffer(kScratchpad, p_.pd.scratchpad_desc().get_size()));
    conv_.execute(stream, {{DNNL_ARG_SRC, src},
                           {DNNL_ARG_WEIGHTS, weights},
                           {DNNL_ARG_DST, dst},
                           {DNNL_ARG_SCRATCHPAD, scratchpad}});
    if (reorder_dst_) {
      memory user(p_.dst, engine, results[0]);
      dst_reorder_.execute(stream, dst, user);
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
    const dnnl::engine& engine = CpuEngine();
    memory user(p_.weights, engine, const_cast<void*>(source));
    memory mine(p_.pd.weights_desc(), engine, w->data.get());
    weights_reorder_.execute(stream, user, mine);
    stream.wait();
    std::lock_guard<std::mutex> lock(mu_);
    cached_ = w;  // one entry: a program runs one weights buffer per op
    return w;
  }

  Plan p_;
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
  if (ot.num_elements() * taps * k_in < kBlasMinMultiplyAdds) return Declined();

  std::vector<int64_t> src_axes = {dn.input_batch_dimension, dn.input_feature_dimension};
  std::vector<int64_t> dst_axes = {dn.output_batch_dimension, dn.output_feature_dimension};
  src_axes.insert(src_axes.end(), dn.input_spatial_dimensions.begin(), dn.input_spatial_dimensions.end());
  dst_axes.insert(dst_axes.end(), dn.output_spatial_dimensions.begin(), dn.output_spatial_dimensions.end());
  const memory::desc src = Strided(lt.dims(), src_axes);
  const memory::desc dst = Strided(ot.dims(), dst_axes);
  memory::desc weights;
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
    memory::dims dims = {groups, k_out / groups, k_in};
    memory::dims strides = {o_stride * (k_out / groups), o_stride,
                            row_major[static_cast<size_t>(dn.kernel_input_feature_dimension)]};
    for (int64_t d : dn.kernel_spatial_dimensions) {
      dims.push_back(kt.dim(d));
      strides.push_back(row_major[static_cast<size_t>(d)]);
    }
    weights = memory::desc(dims, memory::data_type::f32, strides);
  }
  memory::dims strides, dilation, pad_l, pad_r;
  for (size_t s = 0; s < spatial; ++s) {
    strides.push_back(w.strides[s]);
    dilation.push_back(w.rhs_dilation[s] - 1);  // oneDNN counts the gaps
    pad_l.push_back(w.padding[s].first);
    pad_r.push_back(w.padding[s].second);
  }
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    auto make = [&](const memory::desc& s, const memory::desc& d) {
      const memory::desc any_weights(weights.dims(), memory::data_type::f32, memory::format_tag::any);
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           dnnl::algorithm::convolution_direct, s, any_weights, d,
                                           strides, dilation, pad_l, pad_r);
      return dnnl::convolution_forward::primitive_desc(desc, attr, CpuEngine());
    };
    // The caller's activation layout first; oneDNN's own when only a
    // reference implementation takes the caller's.
    dnnl::convolution_forward::primitive_desc pd;
    bool have = false;
    try {
      pd = make(src, dst);
      have = !IsReference(pd);
    } catch (const dnnl::error&) {
    }
    if (!have) {
      const memory::desc any_src(src.dims(), memory::data_type::f32, memory::format_tag::any);
      const memory::desc any_dst(dst.dims(), memory::data_type::f32, memory::format_tag::any);
      pd = make(any_src, any_dst);
      if (IsReference(pd)) return Declined();  // im2col + OpenBLAS is faster
    }
    DnnlConvolutionOp::Plan plan{src, weights, dst, pd};
    return std::unique_ptr<LibraryOp>(new DnnlConvolutionOp(std::move(plan)));
  } catch (const dnnl::error&) {
    return Declined();  // shapes or attributes oneDNN does not take
  } catch (const std::bad_alloc&) {
    return Declined();
  }
}

}  // namespace jitd::cpu::internal
