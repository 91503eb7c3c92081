// i8 x i8 -> i32 dot_general through oneDNN's int8 matmul (Debian's libdnnl
// 2.6): the form jit/passes' lower-quantized pass gives a symmetric
// quantized dot_general, and any plain integer one of these types; also
// the patch-matrix product of convolution.cc for i8 x i8 -> i32
// convolutions (Int8Gemm).
//
// Exactness: the products and sums are integer arithmetic modulo 2^32 in
// any order, so the result is the interpreter's bit for bit -- provided no
// partial sum saturates. oneDNN's AVX2/AVX-512 kernels without VNNI
// multiply with vpmaddubsw, which saturates pairs to 16 bits; with VNNI
// (vpdpbusd, avx2_vnni / avx512_core_vnni and newer) every partial sum is
// 32-bit and wraps. So this op is offered only when oneDNN's effective ISA
// has VNNI; elsewhere dot.cc's exact loops run.
//
// Planned once: operands that are [batch, M, K] / [batch, K, M] and
// [batch, K, N] / [batch, N, K] in memory (dot.cc's in-place layouts) are
// described to oneDNN by strides; others are left to dot.cc. The rows of M
// are cut into as many slices as LibraryThreads(), each a primitive of its
// own, run on the device's pool; oneDNN itself runs single-threaded (see
// internal/dnnl_support.h for why), with a per-thread user scratchpad so
// concurrent runs never share one.

#include <algorithm>
#include <cstdlib>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "devices/cpu/runtime/blas_core.h"
#include "devices/cpu/runtime/internal/dnnl_support.h"
#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/gemm.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

using dnnl::memory;

bool HasVnni() {
  static const bool vnni = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx2_vnni:
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx:
        return true;
      default:
        return false;
    }
  }();
  return vnni;
}

struct Slice {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  int64_t src_offset = 0, dst_offset = 0;  // elements
};

// The product of `batch` [m, k] x [k, n] matrices with these element
// strides ({batch, row, column}), cut into row slices; empty where oneDNN
// would not be exact (no VNNI), not pay off, or only has reference code.
std::vector<Slice> MakeSlices(int64_t b, int64_t m, int64_t n, int64_t k, const memory::dims& src_strides,
                              const memory::dims& weight_strides, const memory::dims& dst_strides) {
  if (!HasVnni()) return {};
  if (b <= 0 || m <= 0 || n <= 0 || k <= 0) return {};
  if (b * m * n * k < kBlasMinMultiplyAdds) return {};
  const int threads = std::max(1, LibraryThreads());
  // Slices of at least 16 rows, at most one per thread.
  const int64_t count = std::max<int64_t>(1, std::min<int64_t>(threads, m / 16));
  std::vector<Slice> slices;
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::desc weights({b, k, n}, memory::data_type::s8, weight_strides);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t m0 = i * m / count, m1 = (i + 1) * m / count;
      const memory::desc src({b, m1 - m0, k}, memory::data_type::s8, src_strides);
      const memory::desc dst({b, m1 - m0, n}, memory::data_type::s32, dst_strides);
      Slice s;
      s.pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, DnnlEngine());
      if (std::string(s.pd.impl_info_str()).rfind("ref", 0) == 0) return {};
      s.matmul = dnnl::matmul(s.pd);
      s.src_offset = m0 * src_strides[1];
      s.dst_offset = m0 * dst_strides[1];
      slices.push_back(std::move(s));
    }
  } catch (const dnnl::error&) {
    return {};
  }
  return slices;
}

// Runs the slices, concurrently on the device's pool when there is one.
void RunSlices(const std::vector<Slice>& slices, const int8_t* src, const int8_t* weights, int32_t* dst,
               const RunContext& context) {
  auto run = [&](int64_t begin, int64_t end) {
    SingleThreadedOpenMp one;
    dnnl::stream stream(DnnlEngine());
    for (int64_t i = begin; i < end; ++i) {
      const Slice& s = slices[static_cast<size_t>(i)];
      const memory::desc scratch_desc = s.pd.scratchpad_desc();
      memory scratch(scratch_desc, DnnlEngine(), DnnlThreadBuffer(DnnlSlot::kMatmulScratchpad, std::max<size_t>(scratch_desc.get_size(), 64)));
      memory a(s.pd.src_desc(), DnnlEngine(), const_cast<int8_t*>(src) + s.src_offset);
      memory b(s.pd.weights_desc(), DnnlEngine(), const_cast<int8_t*>(weights));
      memory c(s.pd.dst_desc(), DnnlEngine(), dst + s.dst_offset);
      s.matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c},
                                {DNNL_ARG_SCRATCHPAD, scratch}});
    }
    stream.wait();
  };
  const int64_t n = static_cast<int64_t>(slices.size());
  if (n > 1 && context.parallel_for != nullptr) {
    (*context.parallel_for)(n, run);
  } else {
    run(0, n);
  }
}

class DnnlInt8DotOp final : public LibraryOp {
 public:
  explicit DnnlInt8DotOp(std::vector<Slice> slices) : slices_(std::move(slices)) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    if (PastDeadline(context)) return Status(StatusCode::kDeadlineExceeded, "dot_general ran past its deadline");
    RunSlices(slices_, static_cast<const int8_t*>(operands[0]), static_cast<const int8_t*>(operands[1]),
              static_cast<int32_t*>(results[0]), context);
    return Status::Ok();
  }

 private:
  std::vector<Slice> slices_;
};

class DnnlInt8Gemm final : public Int8Gemm {
 public:
  explicit DnnlInt8Gemm(std::vector<Slice> slices) : slices_(std::move(slices)) {}
  void Run(const int8_t* a, const int8_t* b, int32_t* c, const RunContext& context) const override {
    RunSlices(slices_, a, b, c, context);
  }

 private:
  std::vector<Slice> slices_;
};

}  // namespace

bool IsDnnlInt8Dot(const LibraryOp& op) { return dynamic_cast<const DnnlInt8DotOp*>(&op) != nullptr; }

LibraryOpOr CreateDnnlInt8DotOp(const Int8DotShape& shape) {
  const int64_t b = shape.batch, m = shape.m, n = shape.n, k = shape.k;
  // src [b, M, K]: row-major or stored [b, K, M]; weights [b, K, N]: stored
  // [b, N, K] (canonical) or [b, K, N]; dst row-major [b, M, N].
  const memory::dims src_strides = shape.lhs_km ? memory::dims{m * k, 1, m} : memory::dims{m * k, k, 1};
  const memory::dims weight_strides = shape.rhs_kn ? memory::dims{k * n, n, 1} : memory::dims{n * k, 1, k};
  std::vector<Slice> slices = MakeSlices(b, m, n, k, src_strides, weight_strides, {m * n, n, 1});
  if (slices.empty()) return Declined();
  return std::unique_ptr<LibraryOp>(new DnnlInt8DotOp(std::move(slices)));
}

std::unique_ptr<Int8Gemm> CreateInt8Gemm(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  std::vector<Slice> slices = MakeSlices(1, m, n, k, {m * lda, lda, 1}, {k * ldb, ldb, 1}, {m * ldc, ldc, 1});
  if (slices.empty()) return nullptr;
  return std::make_unique<DnnlInt8Gemm>(std::move(slices));
}

}  // namespace jitd::cpu::internal
