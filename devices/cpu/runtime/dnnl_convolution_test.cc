// The oneDNN convolution (dnnl_convolution.cc) against jit/eval: which
// convolutions it takes, that each layout / window attribute it takes gives
// the interpreter's results within the OpenBLAS tolerance (f32: 1e-5 of
// the largest magnitude, differential_testing.h), that what it declines
// still runs (im2col), and that cached weights follow operand_stamps.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <cstring>
#include <functional>
#include <thread>
#include <string>
#include <string_view>
#include <vector>

#include "devices/cpu/runtime/differential_testing.h"
#include "devices/cpu/runtime/internal/ops.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd::cpu {
namespace {

using testing::Tolerance;

constexpr Tolerance kF32{1e-5};

std::string Conv(std::string_view lhs, std::string_view rhs, std::string_view out,
                 std::string_view dims, std::string_view window, int64_t feature_groups = 1,
                 int64_t batch_groups = 1, std::string_view t = "f32") {
  const std::string a = "tensor<" + std::string(lhs) + "x" + std::string(t) + ">";
  const std::string b = "tensor<" + std::string(rhs) + "x" + std::string(t) + ">";
  const std::string o = "tensor<" + std::string(out) + "x" + std::string(t) + ">";
  return "func.func @main(%a: " + a + ", %b: " + b + ") -> " + o + " {\n  " +
         "%0 = stablehlo.convolution(%a, %b) dim_numbers = " + std::string(dims) + ", window = {" +
         std::string(window) + "} {batch_group_count = " + std::to_string(batch_groups) +
         " : i64, feature_group_count = " + std::to_string(feature_groups) + " : i64} : (" + a +
         ", " + b + ") -> " + o + "\n  return %0 : " + o + "\n}\n";
}

// Parses `text`, checks which implementation the library picks for its
// convolution, and compares that with the interpreter.
void Expect(std::string_view text, bool dnnl, Tolerance tolerance = kF32,
            const RunContext& context = {}) {
  SCOPED_TRACE(std::string(text));
  auto module = frontend::ParseModule(text);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ASSERT_TRUE(ir::VerifyModule(**module).ok()) << ir::VerifyModule(**module).ToString();
  ir::Function& fn = *(*module)->EntryFunction();
  const ir::Op& op = *fn.entry()->ops()[0];
  auto library = CreateLibraryOp(op);
  ASSERT_TRUE(library.ok()) << library.status().ToString();
  ASSERT_NE(*library, nullptr);
  EXPECT_EQ(internal::IsDnnlConvolution(**library), dnnl);
  std::vector<eval::RuntimeValue> args;
  for (size_t i = 0; i < fn.arg_types().size(); ++i) {
    args.emplace_back(*eval::RandomLiteral(fn.arg_types()[i], 11 + i));
  }
  auto d = testing::RunDifferential(**module, fn, 0, std::move(args), tolerance, {}, context);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->mismatch, "");
}

constexpr std::string_view kNhwc = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]";
constexpr std::string_view kNchw = "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]";

TEST(DnnlConvolutionTest, LayoutsAndWindowsItTakes) {
  // ResNet's shapes: NHWC/HWIO 7x7 stride 2, 3x3, 1x1 stride 2.
  Expect(Conv("1x32x32x3", "7x7x3x16", "1x16x16x16", kNhwc, "stride = [2, 2], pad = [[3, 3], [3, 3]]"), true);
  Expect(Conv("2x12x12x32", "3x3x32x16", "2x12x12x16", kNhwc, "pad = [[1, 1], [1, 1]]"), true);
  Expect(Conv("1x14x14x64", "1x1x64x128", "1x7x7x128", kNhwc, "stride = [2, 2]"), true);
  // NCHW/OIHW, strided, asymmetric padding.
  Expect(Conv("2x32x12x12", "16x32x3x3", "2x16x7x6", kNchw, "stride = [2, 2], pad = [[2, 1], [1, 0]]"), true);
  // Kernel dilation.
  Expect(Conv("1x20x20x16", "3x3x16x24", "1x16x16x24", kNhwc, "rhs_dilate = [2, 2]"), true);
  // A permuted layout on every operand.
  Expect(Conv("10x2x12x24", "24x3x3x16", "16x9x2x10", "[0, b, 1, f]x[i, 0, 1, o]->[f, 0, b, 1]",
              "stride = [1, 1], pad = [[1, 0], [0, 0]]"),
         true);
  // Feature groups (grouped and depthwise).
  Expect(Conv("1x16x16x32", "3x3x8x32", "1x14x14x32", kNhwc, "", 4), true);
  Expect(Conv("1x24x24x64", "3x3x1x64", "1x24x24x64", kNhwc, "pad = [[1, 1], [1, 1]]", 64), true);
  // One and three spatial dimensions.
  Expect(Conv("2x16x100", "32x16x5", "2x32x48", "[b, f, 0]x[o, i, 0]->[b, f, 0]", "stride = [2]"), true);
  Expect(Conv("1x8x10x10x16", "3x3x3x16x8", "1x6x8x8x8", "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]", ""),
         true);
}

TEST(DnnlConvolutionTest, WhatItDeclinesRunsThroughIm2col) {
  // lhs dilation, window reversal, negative padding, batch groups, f64,
  // and a product below kBlasMinMultiplyAdds.
  Expect(Conv("1x12x12x32", "3x3x32x16", "1x21x21x16", kNhwc, "lhs_dilate = [2, 2]"), false);
  Expect(Conv("1x12x12x32", "3x3x32x16", "1x10x10x16", kNhwc, "reverse = [true, false]"), false);
  Expect(Conv("1x12x12x32", "3x3x32x16", "1x9x10x16", kNhwc, "pad = [[-1, 0], [0, 0]]"), false);
  Expect(Conv("4x12x12x32", "3x3x32x16", "2x10x10x16", kNhwc, "", 1, 2), false);
  Expect(Conv("1x12x12x32", "3x3x32x16", "1x10x10x16", kNhwc, "", 1, 1, "f64"), false, Tolerance{1e-13});
  Expect(Conv("1x5x5x4", "3x3x4x4", "1x3x3x4", kNhwc, ""), false, Tolerance{0});
}

TEST(DnnlConvolutionTest, SlicesRunConcurrentlyOnThePool) {
  // Big enough to be split for the device's threads: one image by rows
  // (stride 2 with padding, so slices have their own padding), two images
  // by batch, and an NCHW one (its row slices are strided views).
  const ParallelFor parallel_for = [](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    std::vector<std::thread> threads;
    for (int64_t i = 0; i < n; ++i) threads.emplace_back(fn, i, i + 1);
    for (std::thread& t : threads) t.join();
  };
  RunContext context;
  context.parallel_for = &parallel_for;
  Expect(Conv("1x29x30x64", "3x3x64x64", "1x15x15x64", kNhwc, "stride = [2, 2], pad = [[1, 1], [1, 1]]"), true,
         kF32, context);
  Expect(Conv("1x28x28x64", "5x5x64x32", "1x26x26x32", kNhwc, "pad = [[1, 1], [1, 1]]"), true, kF32, context);
  Expect(Conv("2x14x14x64", "3x3x64x64", "2x14x14x64", kNhwc, "pad = [[1, 1], [1, 1]]"), true, kF32, context);
  Expect(Conv("1x64x28x28", "64x64x3x3", "1x64x28x28", kNchw, "pad = [[1, 1], [1, 1]]"), true, kF32, context);
}

TEST(DnnlConvolutionTest, LeavesTheCallersOpenMpSettingAsItWas) {
  // oneDNN runs on one OpenMP thread inside Run; an application's own
  // setting on the calling thread is restored after.
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  const auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (set == nullptr || get == nullptr) GTEST_SKIP() << "oneDNN without OpenMP";
  const int before = get();
  set(3);
  Expect(Conv("1x28x28x64", "3x3x64x64", "1x28x28x64", kNhwc, "pad = [[1, 1], [1, 1]]"), true);
  EXPECT_EQ(get(), 3);
  set(before);
}

// oneDNN fixes a primitive's OpenMP thread count when it is made: made
// under a team size of 4, a convolution run on one thread must still start
// no OpenMP team (libgomp keeps a master thread's team workers alive, so a
// team shows as new threads of the process).
TEST(DnnlConvolutionTest, StartsNoOpenMpThreadsWhateverTheTeamSizeWhenMade) {
  using SetFn = void (*)(int);
  const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set == nullptr) GTEST_SKIP() << "oneDNN without OpenMP";
  auto count_threads = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
  };
  size_t before = 0, after = 0;
  std::thread master([&] {
    set(4);
    before = count_threads();
    Expect(Conv("1x28x28x64", "3x3x64x64", "1x28x28x64", kNhwc, "pad = [[1, 1], [1, 1]]"), true);
    Expect(Conv("2x14x14x64", "3x3x64x64", "2x14x14x64", kNhwc, "pad = [[1, 1], [1, 1]]"), true);
    after = count_threads();
  });
  master.join();
  EXPECT_EQ(after, before) << "oneDNN started an OpenMP team";
}

// Runs `op` on (lhs, weights) with the given stamp for the weights.
std::vector<float> RunWith(const LibraryOp& op, const std::vector<float>& lhs, const std::vector<float>& weights,
                           size_t out_count, uint64_t stamp) {
  std::vector<float> out(out_count, -1.0f);
  const void* in[] = {lhs.data(), weights.data()};
  void* results[] = {out.data()};
  const uint64_t stamps[] = {0, stamp};
  RunContext context;
  if (stamp != 0) context.operand_stamps = stamps;
  EXPECT_TRUE(op.Run(in, results, context).ok());
  return out;
}

TEST(DnnlConvolutionTest, StampedWeightsAreCachedPerAddressAndStamp) {
  auto module = frontend::ParseModule(Conv("1x8x8x32", "3x3x32x16", "1x6x6x16", kNhwc, ""));
  ASSERT_TRUE(module.ok());
  const ir::Op& op = *(*module)->EntryFunction()->entry()->ops()[0];
  auto library = CreateLibraryOp(op);
  ASSERT_TRUE(library.ok() && *library && internal::IsDnnlConvolution(**library));
  const LibraryOp& conv = **library;
  std::vector<float> lhs(8 * 8 * 32), w1(3 * 3 * 32 * 16), w2(w1.size());
  for (size_t i = 0; i < lhs.size(); ++i) lhs[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < w1.size(); ++i) {
    w1[i] = static_cast<float>(i % 5) - 2;
    w2[i] = static_cast<float>(i % 3) - 1;
  }
  const size_t n = 6 * 6 * 16;
  const std::vector<float> plain1 = RunWith(conv, lhs, w1, n, 0);
  const std::vector<float> plain2 = RunWith(conv, lhs, w2, n, 0);
  ASSERT_NE(plain1, plain2);
  // Integer-valued data: every summation order gives the same floats.
  EXPECT_EQ(RunWith(conv, lhs, w1, n, 1), plain1);
  EXPECT_EQ(RunWith(conv, lhs, w1, n, 1), plain1);  // from the cache
  // Same address, new stamp (the caller refilled the buffer): reordered again.
  std::vector<float> reused = w1;
  EXPECT_EQ(RunWith(conv, lhs, reused, n, 7), plain1);
  std::memcpy(reused.data(), w2.data(), w2.size() * sizeof(float));
  EXPECT_EQ(RunWith(conv, lhs, reused, n, 8), plain2);
  // Another buffer with the first stamp: a different address, not a hit.
  EXPECT_EQ(RunWith(conv, lhs, w2, n, 1), plain2);
}

}  // namespace
}  // namespace jitd::cpu
