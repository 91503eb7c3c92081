// The oneDNN int8 matmul (dnnl_matmul.cc) against jit/eval: i8 x i8 -> i32
// dot_generals in every in-place layout, batched, sliced over a pool, and
// convolutions through convolution.cc's int8 GEMM, on full-range operands
// (-128 and 127 included) -- bit for bit. Where the CPU
// has no VNNI the op is declined and dot.cc's exact loops run instead; the
// comparison then covers those.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "devices/cpu/runtime/blas_core.h"
#include "devices/cpu/runtime/differential_testing.h"
#include "devices/cpu/runtime/internal/ops.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd::cpu {
namespace {

// Full-range i8 values; every 7th one is -128 (the extreme product).
eval::RuntimeValue FullRange(const ir::Type& type, uint32_t seed) {
  ir::Literal lit = *ir::Literal::Create(type);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  for (int64_t i = 0; i < lit.num_elements(); ++i) lit.SetInt(i, i % 7 == 0 ? -128 : dist(gen));
  return eval::RuntimeValue(std::move(lit));
}

// Whether the library took oneDNN for the op in `text`, after
// checking its results against the interpreter's exactly.
bool RunsExactly(const std::string& text, const RunContext& context = {}) {
  SCOPED_TRACE(text);
  auto module = frontend::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return false;
  EXPECT_TRUE(ir::VerifyModule(**module).ok());
  ir::Function& fn = *(*module)->EntryFunction();
  auto library = CreateLibraryOp(*fn.entry()->ops()[0]);
  EXPECT_TRUE(library.ok() && *library);
  if (!library.ok() || !*library) return false;
  const bool dnnl = internal::IsDnnlInt8Dot(**library) || internal::IsInt8GemmConvolution(**library);
  std::vector<eval::RuntimeValue> args;
  for (size_t i = 0; i < fn.arg_types().size(); ++i) args.push_back(FullRange(fn.arg_types()[i], 7 + i));
  auto d = testing::RunDifferential(**module, fn, 0, std::move(args), testing::Tolerance{0}, {}, context);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (d.ok()) EXPECT_EQ(d->mismatch, "");
  return dnnl;
}

std::string Dot(std::string_view lhs, std::string_view rhs, std::string_view out, std::string_view dims) {
  const std::string a = "tensor<" + std::string(lhs) + "xi8>";
  const std::string b = "tensor<" + std::string(rhs) + "xi8>";
  const std::string o = "tensor<" + std::string(out) + "xi32>";
  return "func.func @main(%a: " + a + ", %b: " + b + ") -> " + o + " {\n  %0 = stablehlo.dot_general %a, %b, " +
         std::string(dims) + " : (" + a + ", " + b + ") -> " + o + "\n  return %0 : " + o + "\n}\n";
}

// Whether oneDNN takes int8 products on this machine (VNNI): the tests
// expect it exactly then.
bool Vnni() {
  static const bool vnni = [] {
    auto module = frontend::ParseModule(Dot("64x64", "64x64", "64x64", "contracting_dims = [1] x [0]"));
    auto library = CreateLibraryOp(*(*module)->EntryFunction()->entry()->ops()[0]);
    return library.ok() && *library && internal::IsDnnlInt8Dot(**library);
  }();
  return vnni;
}

TEST(DnnlInt8MatmulTest, LayoutsAndBatchesBitForBit) {
  const bool vnni = Vnni();
  // [M, K] x [K, N], then each operand transposed in memory.
  EXPECT_EQ(RunsExactly(Dot("40x300", "300x50", "40x50", "contracting_dims = [1] x [0]")), vnni);
  EXPECT_EQ(RunsExactly(Dot("300x40", "300x50", "40x50", "contracting_dims = [0] x [0]")), vnni);
  EXPECT_EQ(RunsExactly(Dot("40x300", "50x300", "40x50", "contracting_dims = [1] x [1]")), vnni);
  EXPECT_EQ(RunsExactly(Dot("300x40", "50x300", "40x50", "contracting_dims = [0] x [1]")), vnni);
  // Batched.
  EXPECT_EQ(RunsExactly(Dot("3x33x70", "3x70x65", "3x33x65",
                            "batching_dims = [0] x [0], contracting_dims = [2] x [1]")),
            vnni);
}

TEST(DnnlInt8MatmulTest, SumsBeyondSixteenBitsStayExact) {
  // K = 4096 of (-128) * (-128): 67M per element, far past any 16-bit
  // intermediate; a saturating kernel would be caught here.
  RunsExactly(Dot("64x4096", "4096x64", "64x64", "contracting_dims = [1] x [0]"));
}

TEST(DnnlInt8MatmulTest, SlicesRunOnThePool) {
  const ParallelFor parallel_for = [](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    std::vector<std::thread> threads;
    for (int64_t i = 0; i < n; ++i) threads.emplace_back(fn, i, i + 1);
    for (std::thread& t : threads) t.join();
  };
  RunContext context;
  context.parallel_for = &parallel_for;
  const int previous = LibraryThreads();
  SetBlasThreads(4);
  EXPECT_EQ(RunsExactly(Dot("130x96", "96x40", "130x40", "contracting_dims = [1] x [0]"), context), Vnni());
  SetBlasThreads(previous);
}

TEST(DnnlInt8MatmulTest, WhatItDeclinesStaysExact) {
  // Small products, and a layout neither in place (K between M's dims).
  EXPECT_FALSE(RunsExactly(Dot("4x8", "8x4", "4x4", "contracting_dims = [1] x [0]")));
  EXPECT_FALSE(RunsExactly(Dot("8x200x8", "200x40", "8x8x40", "contracting_dims = [1] x [0]")));
}

TEST(DnnlInt8MatmulTest, PlannedGemmWithRowStrides) {
  // C (ldc 70) = A (lda 90) x B (ldb 64): the sub-matrix views of
  // convolution.cc's im2col, against a plain loop.
  const int64_t m = 50, n = 40, k = 80, lda = 90, ldb = 64, ldc = 70;
  auto gemm = internal::CreateInt8Gemm(m, n, k, lda, ldb, ldc);
  EXPECT_EQ(gemm != nullptr, Vnni());
  if (!gemm) GTEST_SKIP() << "no VNNI: the int8 GEMM is not offered";
  std::mt19937 gen(3);
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(k * ldb));
  for (int8_t& x : a) x = static_cast<int8_t>(dist(gen));
  for (int8_t& x : b) x = static_cast<int8_t>(dist(gen));
  std::vector<int32_t> c(static_cast<size_t>(m * ldc), -7);
  gemm->Run(a.data(), b.data(), c.data(), {});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      int32_t want = -7;  // outside the n columns: untouched
      if (j < n) {
        want = 0;
        for (int64_t p = 0; p < k; ++p) want += int32_t{a[static_cast<size_t>(i * lda + p)]} * b[static_cast<size_t>(p * ldb + j)];
      }
      ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], want) << i << "," << j;
    }
  }
}

std::string Conv(std::string_view lhs, std::string_view rhs, std::string_view out, std::string_view window,
                 int64_t groups = 1) {
  const std::string a = "tensor<" + std::string(lhs) + "xi8>";
  const std::string b = "tensor<" + std::string(rhs) + "xi8>";
  const std::string o = "tensor<" + std::string(out) + "xi32>";
  return "func.func @main(%a: " + a + ", %b: " + b + ") -> " + o + " {\n  %0 = stablehlo.convolution(%a, %b) " +
         "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {" + std::string(window) +
         "} {batch_group_count = 1 : i64, feature_group_count = " + std::to_string(groups) + " : i64} : (" + a +
         ", " + b + ") -> " + o + "\n  return %0 : " + o + "\n}\n";
}

TEST(DnnlInt8MatmulTest, I8ConvolutionsBitForBit) {
  // NHWC convolutions whose im2col product takes the int8 GEMM: padded and
  // strided, a 1x1 (patches are the image), grouped, two images.
  const bool vnni = Vnni();
  EXPECT_EQ(RunsExactly(Conv("1x12x12x16", "3x3x16x32", "1x6x6x32", "stride = [2, 2], pad = [[1, 1], [1, 1]]")),
            vnni);
  EXPECT_EQ(RunsExactly(Conv("1x16x16x32", "1x1x32x24", "1x16x16x24", "")), vnni);
  EXPECT_EQ(RunsExactly(Conv("2x10x10x32", "3x3x8x32", "2x8x8x32", "", 4)), vnni);
  // Small: the exact loops.
  EXPECT_FALSE(RunsExactly(Conv("1x4x4x2", "3x3x2x2", "1x2x2x2", "")));
}

}  // namespace
}  // namespace jitd::cpu
