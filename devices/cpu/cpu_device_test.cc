// The CPU device against the interpreter (the golden model), bit for bit
// where the spec is exact: edge values of every integer and float rule,
// index maps, reductions, control flow, the fallback, the raw-buffer Run
// API, serialization and concurrent runs.
#include "devices/cpu/cpu_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <complex>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "devices/compile.h"
#include "devices/interpreter/interpreter_device.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::cpu {
namespace {

using frontend::testing::ParseOrFail;

using eval::RuntimeValue;

const CpuDevice& Device() {
  static CpuDevice* device = [] {
    CpuDeviceOptions options;
    options.num_threads = 2;
    return CpuDevice::Create(options).value().release();
  }();
  return *device;
}

std::vector<RuntimeValue> RunOn(const devices::Device& device, const std::string& text,
                                const std::vector<RuntimeValue>& args,
                                const devices::Executable** keep = nullptr) {
  auto exe = device.Compile(ParseOrFail(text));
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  if (!exe.ok()) return {};
  auto out = (*exe)->Execute(args, {});
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : std::vector<RuntimeValue>{};
}

// Bytes equal, except that any NaN equals any NaN.
void ExpectSameValues(const std::vector<RuntimeValue>& a, const std::vector<RuntimeValue>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].is_tensor() && b[i].is_tensor());
    const ir::Literal& x = a[i].literal();
    const ir::Literal& y = b[i].literal();
    ASSERT_EQ(x.type(), y.type());
    for (int64_t e = 0; e < x.num_elements(); ++e) {
      if (ir::IsFloat(x.dtype()) && std::isnan(x.GetDouble(e)) && std::isnan(y.GetDouble(e))) continue;
      ASSERT_EQ(x.GetBits(e), y.GetBits(e))
          << "result " << i << " element " << e << ": cpu " << x.GetDouble(e) << " vs interpreter "
          << y.GetDouble(e);
    }
  }
}

void ExpectLikeInterpreter(const std::string& text, const std::vector<RuntimeValue>& args = {}) {
  devices::InterpreterDevice interpreter;
  ExpectSameValues(RunOn(Device(), text, args), RunOn(interpreter, text, args));
}

ir::Literal Ints(ir::DType t, const std::vector<int64_t>& v) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(t, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) lit.SetInt(static_cast<int64_t>(i), v[i]);
  return lit;
}

ir::Literal Floats(ir::DType t, const std::vector<double>& v) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(t, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), v[i]);
  return lit;
}

std::string BinaryProgram(const std::string& op, const std::string& type, int n) {
  const std::string t = "tensor<" + std::to_string(n) + "x" + type + ">";
  return "func.func @main(%a: " + t + ", %b: " + t + ") -> " + t + " {\n  %0 = stablehlo." + op +
         " %a, %b : " + t + "\n  return %0 : " + t + "\n}\n";
}

TEST(CpuDeviceTest, IntegerEdgeCasesMatchInterpreter) {
  const int64_t kMin32 = std::numeric_limits<int32_t>::min();
  const std::vector<int64_t> a = {7, -7, kMin32, 5, 0, -1, 123456, kMin32};
  const std::vector<int64_t> b = {0, 2, -1, -3, 0, 40, 33, 31};
  for (const char* op : {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                         "and", "or", "xor", "shift_left", "shift_right_logical",
                         "shift_right_arithmetic"}) {
    SCOPED_TRACE(op);
    ExpectLikeInterpreter(BinaryProgram(op, "i32", 8), {RuntimeValue(Ints(ir::DType::kS32, a)),
                                                        RuntimeValue(Ints(ir::DType::kS32, b))});
    ExpectLikeInterpreter(BinaryProgram(op, "ui8", 8), {RuntimeValue(Ints(ir::DType::kU8, a)),
                                                        RuntimeValue(Ints(ir::DType::kU8, b))});
  }
}

TEST(CpuDeviceTest, FloatEdgeCasesMatchInterpreter) {
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<double> a = {1.5, -0.0, 0.0, nan, inf, -inf, 3.0, 1e30};
  const std::vector<double> b = {0.0, 0.0, -0.0, 1.0, nan, 2.0, -inf, 7.0};
  for (const char* op : {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                         "power", "atan2"}) {
    SCOPED_TRACE(op);
    for (auto [name, t] : {std::pair{"f32", ir::DType::kF32}, std::pair{"f64", ir::DType::kF64}}) {
      ExpectLikeInterpreter(BinaryProgram(op, name, 8),
                            {RuntimeValue(Floats(t, a)), RuntimeValue(Floats(t, b))});
    }
  }
}

TEST(CpuDeviceTest, HalfTypesRoundAfterEveryOpLikeTheInterpreter) {
  const double nan = std::nan("");
  // Denormals, values that round differently in f16 and bf16, NaN, -0.
  const std::vector<double> a = {1e-7, 3.14159, -0.0, nan, 65504, 1.0 / 3, 6e-5, 1000.5};
  const std::vector<double> b = {3e-6, 2.71828, 0.0, 1.0, 2, 3.0, -7e-5, 0.0078125};
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder"}) {
    SCOPED_TRACE(op);
    ExpectLikeInterpreter(BinaryProgram(op, "f16", 8), {RuntimeValue(Floats(ir::DType::kF16, a)),
                                                        RuntimeValue(Floats(ir::DType::kF16, b))});
    ExpectLikeInterpreter(BinaryProgram(op, "bf16", 8), {RuntimeValue(Floats(ir::DType::kBF16, a)),
                                                         RuntimeValue(Floats(ir::DType::kBF16, b))});
  }
  // A fused chain: each op rounds to bf16 before the next one.
  const std::string chain = R"(
func.func @main(%x: tensor<8xbf16>, %y: tensor<8xbf16>) -> (tensor<8xbf16>, tensor<8xf16>, tensor<8xi16>, tensor<8xi1>) {
  %0 = stablehlo.multiply %x, %y : tensor<8xbf16>
  %1 = stablehlo.add %0, %x : tensor<8xbf16>
  %2 = stablehlo.divide %1, %y : tensor<8xbf16>
  %3 = stablehlo.convert %2 : (tensor<8xbf16>) -> tensor<8xf16>
  %4 = stablehlo.convert %3 : (tensor<8xf16>) -> tensor<8xi16>
  %5 = stablehlo.compare LT, %x, %y, TOTALORDER : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xi1>
  return %2, %3, %4, %5 : tensor<8xbf16>, tensor<8xf16>, tensor<8xi16>, tensor<8xi1>
}
)";
  ExpectLikeInterpreter(chain, {RuntimeValue(Floats(ir::DType::kBF16, a)),
                                RuntimeValue(Floats(ir::DType::kBF16, b))});
}

TEST(CpuDeviceTest, ConvertSaturatesAndCompareTotalOrder) {
  const double nan = std::nan("");
  const std::string text = R"(
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xi8>, tensor<8xui16>, tensor<8xi1>, tensor<8xi1>, tensor<8xf64>) {
  %0 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xi8>
  %1 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xui16>
  %2 = stablehlo.compare LT, %x, %y, TOTALORDER : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %3 = stablehlo.compare NE, %x, %y, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %4 = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xf64>
  return %0, %1, %2, %3, %4 : tensor<8xi8>, tensor<8xui16>, tensor<8xi1>, tensor<8xi1>, tensor<8xf64>
}
)";
  ExpectLikeInterpreter(text, {RuntimeValue(Floats(ir::DType::kF32, {nan, 300.7, -300.2, -0.0, 0.0, 1e9, -2.5, 70000})),
                               RuntimeValue(Floats(ir::DType::kF32, {1, nan, 0.0, 0.0, -0.0, -1e9, -2.5, 3}))});
}

TEST(CpuDeviceTest, TranscendentalsWithinTolerance) {
  const std::string text = R"(
func.func @main(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %0 = stablehlo.tanh %x : tensor<64xf32>
  %1 = stablehlo.exponential %x : tensor<64xf32>
  %2 = stablehlo.sine %x : tensor<64xf32>
  %3 = stablehlo.logistic %x : tensor<64xf32>
  return %0, %1, %2, %3 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
)";
  std::vector<double> x;
  for (int i = 0; i < 64; ++i) x.push_back(-8.0 + 0.25 * i + 0.01 * i * i);
  devices::InterpreterDevice interpreter;
  auto cpu = RunOn(Device(), text, {RuntimeValue(Floats(ir::DType::kF32, x))});
  auto ref = RunOn(interpreter, text, {RuntimeValue(Floats(ir::DType::kF32, x))});
  ASSERT_EQ(cpu.size(), ref.size());
  for (size_t r = 0; r < cpu.size(); ++r) {
    for (int64_t e = 0; e < 64; ++e) {
      const auto a = static_cast<int64_t>(static_cast<int32_t>(cpu[r].literal().GetBits(e)));
      const auto b = static_cast<int64_t>(static_cast<int32_t>(ref[r].literal().GetBits(e)));
      EXPECT_LE(std::abs(a - b), 3) << "result " << r << " element " << e;
    }
  }
}

TEST(CpuDeviceTest, IndexMapsFuseIntoOneKernel) {
  const std::string text = R"(
func.func @main(%x: tensor<4x6xf32>, %v: tensor<6xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = stablehlo.broadcast_in_dim %v, dims = [0] : (tensor<6xf32>) -> tensor<6x4xf32>
  %2 = stablehlo.add %0, %1 : tensor<6x4xf32>
  %3 = stablehlo.slice %2 [1:6:2, 0:4] : (tensor<6x4xf32>) -> tensor<3x4xf32>
  %4 = stablehlo.iota dim = 1 : tensor<3x4xf32>
  %5 = stablehlo.reverse %4, dims = [0, 1] : tensor<3x4xf32>
  %6 = stablehlo.multiply %3, %5 : tensor<3x4xf32>
  return %6 : tensor<3x4xf32>
}
)";
  std::vector<double> x, v;
  for (int i = 0; i < 24; ++i) x.push_back(i * 0.5 - 3);
  for (int i = 0; i < 6; ++i) v.push_back(i * 10);
  ir::Literal xl = Floats(ir::DType::kF32, x);
  xl = *ir::Literal::FromBytes(ir::Type::Tensor(ir::DType::kF32, {4, 6}),
                               std::vector<uint8_t>(xl.bytes().begin(), xl.bytes().end()));
  ExpectLikeInterpreter(text, {RuntimeValue(xl), RuntimeValue(Floats(ir::DType::kF32, v))});
  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok());
  const auto& stats = static_cast<const CpuExecutable&>(**exe).stats();
  EXPECT_EQ(stats.kernels, 1);
  EXPECT_EQ(stats.fallback_ops, 0);
}

// Batch norm's per-channel factor rsqrt(var + eps) * scale is computed once
// per channel in a kernel of its own, not once per pixel inside the big
// kernel behind the broadcast; data movement (reshape) and splat constants
// still fuse through it, and the values are the interpreter's.
TEST(CpuDeviceTest, ArithmeticBehindAnExpandingBroadcastGetsItsOwnKernel) {
  const std::string text = R"(
func.func @main(%x: tensor<2x8x8x4xf32>, %var: tensor<4xf32>, %scale: tensor<4xf32>) -> tensor<2x8x8x4xf32> {
  %eps = stablehlo.constant dense<1.0e-05> : tensor<1x1x1x4xf32>
  %v = stablehlo.reshape %var : (tensor<4xf32>) -> tensor<1x1x1x4xf32>
  %a = stablehlo.add %v, %eps : tensor<1x1x1x4xf32>
  %r = stablehlo.rsqrt %a : tensor<1x1x1x4xf32>
  %s = stablehlo.reshape %scale : (tensor<4xf32>) -> tensor<1x1x1x4xf32>
  %f = stablehlo.multiply %r, %s : tensor<1x1x1x4xf32>
  %b = stablehlo.broadcast_in_dim %f, dims = [0, 1, 2, 3] : (tensor<1x1x1x4xf32>) -> tensor<2x8x8x4xf32>
  %y = stablehlo.multiply %x, %b : tensor<2x8x8x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<2x8x8x4xf32>
  %out = stablehlo.maximum %y, %zero : tensor<2x8x8x4xf32>
  return %out : tensor<2x8x8x4xf32>
}
)";
  std::vector<double> x, var, scale;
  for (int i = 0; i < 2 * 8 * 8 * 4; ++i) x.push_back(std::sin(i * 0.37) * 2);
  for (int i = 0; i < 4; ++i) var.push_back(0.5 + i);
  for (int i = 0; i < 4; ++i) scale.push_back(1.5 - 0.25 * i);
  ir::Literal xl = Floats(ir::DType::kF32, x);
  xl = *ir::Literal::FromBytes(ir::Type::Tensor(ir::DType::kF32, {2, 8, 8, 4}),
                               std::vector<uint8_t>(xl.bytes().begin(), xl.bytes().end()));
  ExpectLikeInterpreter(text, {RuntimeValue(xl), RuntimeValue(Floats(ir::DType::kF32, var)),
                               RuntimeValue(Floats(ir::DType::kF32, scale))});
  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const auto& stats = static_cast<const CpuExecutable&>(**exe).stats();
  // One kernel for the 4 per-channel factors, one for the 512 outputs.
  EXPECT_EQ(stats.kernels, 2);
  EXPECT_EQ(stats.fallback_ops, 0);
}

TEST(CpuDeviceTest, ReductionsMatchInterpreter) {
  const std::string text = R"(
func.func @main(%x: tensor<3x4x5xf32>, %i: tensor<3x4x5xi32>) -> (tensor<4xf32>, tensor<3x5xi32>, tensor<3x4xf32>, tensor<3x4xi32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zi = stablehlo.constant dense<0> : tensor<i32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<3x4x5xf32>
  %0 = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0, 2] : (tensor<3x4x5xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.reduce(%i init: %zi) applies stablehlo.maximum across dimensions = [1] : (tensor<3x4x5xi32>, tensor<i32>) -> tensor<3x5xi32>
  %2:2 = stablehlo.reduce(%x init: %ninf), (%i init: %zi) across dimensions = [2] : (tensor<3x4x5xf32>, tensor<3x4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<3x4xf32>, tensor<3x4xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>) {
      %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %v = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>
      %w = stablehlo.select %gt, %ai, %bi : tensor<i1>, tensor<i32>
      stablehlo.return %v, %w : tensor<f32>, tensor<i32>
    }
  return %0, %1, %2#0, %2#1 : tensor<4xf32>, tensor<3x5xi32>, tensor<3x4xf32>, tensor<3x4xi32>
}
)";
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {3, 4, 5}));
  ir::Literal i = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kS32, {3, 4, 5}));
  for (int64_t k = 0; k < 60; ++k) {
    x.SetDouble(k, std::sin(k * 1.7) * 3);
    i.SetInt(k, (k * 37) % 23 - 11);
  }
  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ(static_cast<const CpuExecutable&>(**exe).stats().fallback_ops, 0);
  // exp goes through libm on both sides; the sum order is the interpreter's
  // (short reductions keep it), so the results are identical.
  ExpectLikeInterpreter(text, {RuntimeValue(x), RuntimeValue(i)});
}

TEST(CpuDeviceTest, ControlFlowAndFallback) {
  // A loop whose body swaps two state values and calls a function; then a
  // sort (the runtime library), a concatenate and a pad (kernels) and a
  // round trip through f8E8M0FNU (the interpreter fallback: kernels do not
  // compute that exponent-only type).
  const std::string text = R"(
func.func @main(%x: tensor<5xf32>, %y: tensor<5xf32>) -> (tensor<i32>, tensor<10xf32>, tensor<12xf32>, tensor<5xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c5 = stablehlo.constant dense<5> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %a = %x, %b = %y) : tensor<i32>, tensor<5xf32>, tensor<5xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %c5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %s = func.call @twice(%a) : (tensor<5xf32>) -> tensor<5xf32>
      stablehlo.return %n, %b, %s : tensor<i32>, tensor<5xf32>, tensor<5xf32>
    }
  %sorted = "stablehlo.sort"(%r#1) ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %lt = stablehlo.compare LT, %p, %q, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<5xf32>) -> tensor<5xf32>
  %pred = stablehlo.compare GT, %r#0, %c1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %sel = "stablehlo.if"(%pred) ({
    stablehlo.return %r#2 : tensor<5xf32>
  }, {
    stablehlo.return %r#1 : tensor<5xf32>
  }) : (tensor<i1>) -> tensor<5xf32>
  %cat = stablehlo.concatenate %sorted, %r#2, dim = 0 : (tensor<5xf32>, tensor<5xf32>) -> tensor<10xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %pad = stablehlo.pad %sel, %zero, low = [1], high = [2], interior = [1] : (tensor<5xf32>, tensor<f32>) -> tensor<12xf32>
  %f8 = stablehlo.convert %pad : (tensor<12xf32>) -> tensor<12xf8E8M0FNU>
  %rp = stablehlo.convert %f8 : (tensor<12xf8E8M0FNU>) -> tensor<12xf32>
  return %r#0, %cat, %rp, %sel : tensor<i32>, tensor<10xf32>, tensor<12xf32>, tensor<5xf32>
}
func.func private @twice(%v: tensor<5xf32>) -> tensor<5xf32> {
  %0 = stablehlo.add %v, %v : tensor<5xf32>
  return %0 : tensor<5xf32>
}
)";
  ExpectLikeInterpreter(text, {RuntimeValue(Floats(ir::DType::kF32, {3, -1, 4, 1, -5})),
                               RuntimeValue(Floats(ir::DType::kF32, {9, 2, -6, 5, 3}))});
  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok());
  const auto& stats = static_cast<const CpuExecutable&>(**exe).stats();
  EXPECT_EQ(stats.fallback_ops, 2);  // the f8 converts
  EXPECT_EQ(stats.library_ops, 1);   // the sort
  EXPECT_GE(stats.control_ops, 3);   // while, call, if
}

const char* kLarge = R"(
func.func @main(%x: tensor<1048576xf32>, %s: tensor<f32>) -> (tensor<1048576xf32>, tensor<f32>) {
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
  %0 = stablehlo.multiply %x, %sb : tensor<1048576xf32>
  %1 = stablehlo.tanh %0 : tensor<1048576xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<1048576xf32>, tensor<f32>) -> tensor<f32>
  return %1, %2 : tensor<1048576xf32>, tensor<f32>
}
)";

TEST(CpuDeviceTest, RunOnRawBuffersMatchesExecuteAndSplitsAcrossThreads) {
  auto exe = Device().Compile(ParseOrFail(kLarge));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const auto& cpu = static_cast<const CpuExecutable&>(**exe);
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {1 << 20}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, std::cos(i * 0.001));
  ir::Literal s = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kF32));
  s.SetDouble(0, 1.5);
  auto executed = cpu.Execute(std::vector<RuntimeValue>{RuntimeValue(x), RuntimeValue(s)}, {});
  ASSERT_TRUE(executed.ok());
  std::vector<float> y(1 << 20);
  float sum = 0;
  const void* args[] = {x.bytes().data(), s.bytes().data()};
  void* results[] = {y.data(), &sum};
  ASSERT_TRUE(cpu.Run(args, results, {}).ok());
  EXPECT_EQ(std::memcmp(y.data(), (*executed)[0].literal().bytes().data(), y.size() * 4), 0);
  EXPECT_EQ(sum, static_cast<float>((*executed)[1].literal().GetDouble(0)));

  // One thread gives the same bytes.
  CpuDeviceOptions one;
  one.num_threads = 1;
  auto single = CpuDevice::Create(one).value();
  auto exe1 = single->Compile(ParseOrFail(kLarge));
  ASSERT_TRUE(exe1.ok());
  auto out1 = (*exe1)->Execute(std::vector<RuntimeValue>{RuntimeValue(x), RuntimeValue(s)}, {});
  ASSERT_TRUE(out1.ok());
  ExpectSameValues(*out1, *executed);

  // The long float sum is reassociated (vectorized): close to the exact sum.
  double exact = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) exact += static_cast<float>(x.GetDouble(i));
  EXPECT_NEAR(sum, exact, 1e-3 * std::abs(exact) + 1);
}

// Elementwise outputs of kStreamStoreMinBytes or more are written with
// non-temporal stores after a head loop up to the first 64-byte-aligned
// element: every alignment of the caller's result buffer (and every split
// across threads) must give the same bytes, touching nothing around them.
TEST(CpuDeviceTest, LargeOutputsStreamTheirStoresAtAnyAlignment) {
  constexpr int64_t kN = codegen::kStreamStoreMinBytes / 4 + 5;
  const std::string t = "tensor<" + std::to_string(kN) + "xf32>";
  const std::string text = "func.func @main(%x: " + t + ") -> " + t +
                           " {\n  %c = stablehlo.constant dense<3.0> : " + t + "\n  %0 = stablehlo.multiply %x, %c : " +
                           t + "\n  %1 = stablehlo.tanh %0 : " + t + "\n  return %1 : " + t + "\n}\n";
  std::vector<devices::CompileDump> dumps;
  auto exe = Device().Compile(ParseOrFail(text), devices::CompileOptions{.dumps = &dumps});
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto assembly = std::find_if(dumps.begin(), dumps.end(), [](const auto& d) { return d.name == "asm.s"; });
  ASSERT_NE(assembly, dumps.end());
#if defined(__x86_64__)
  EXPECT_NE(assembly->text.find("movntps"), std::string::npos) << "no streaming store in the kernel";
#endif
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {kN}));
  for (int64_t i = 0; i < kN; ++i) x.SetDouble(i, std::sin(i * 0.37));
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> args{RuntimeValue(x)};
  const std::vector<RuntimeValue> expected = RunOn(interpreter, text, args);
  ASSERT_EQ(expected.size(), 1u);
  const auto* want = reinterpret_cast<const float*>(expected[0].literal().bytes().data());
  const auto& cpu = static_cast<const CpuExecutable&>(**exe);
  for (int64_t shift : {0, 1, 3, 15}) {  // in floats from a 64-byte boundary
    std::vector<float> out(kN + 32, -7.0f);
    auto* base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(out.data()) + 63) / 64 * 64);
    const int64_t at = (base - out.data()) + shift;
    const void* in[] = {x.bytes().data()};
    void* results[] = {out.data() + at};
    ASSERT_TRUE(cpu.Run(in, results, {}).ok());
    for (int64_t i = 0; i < at; ++i) ASSERT_EQ(out[i], -7.0f) << "shift " << shift << ": wrote before the buffer";
    for (int64_t i = at + kN; i < static_cast<int64_t>(out.size()); ++i) {
      ASSERT_EQ(out[i], -7.0f) << "shift " << shift << ": wrote past the buffer";
    }
    // tanh through libmvec: within the corpus tolerance of the interpreter.
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_NEAR(out[at + i], want[i], 4 * std::numeric_limits<float>::epsilon()) << "shift " << shift << " element " << i;
    }
  }
}

TEST(CpuDeviceTest, ConcurrentRunsShareOneExecutable) {
  auto exe = Device().Compile(ParseOrFail(kLarge));
  ASSERT_TRUE(exe.ok());
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {1 << 20}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, std::sin(i * 0.01));
  ir::Literal s = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kF32));
  s.SetDouble(0, 0.5);
  const std::vector<RuntimeValue> args = {RuntimeValue(x), RuntimeValue(s)};
  auto reference = (*exe)->Execute(args, {});
  ASSERT_TRUE(reference.ok());
  std::vector<std::thread> threads;
  std::vector<bool> same(4, false);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto out = (*exe)->Execute(args, {});
      same[static_cast<size_t>(t)] = out.ok() && (*out)[0].literal() == (*reference)[0].literal() &&
                                     (*out)[1].literal() == (*reference)[1].literal();
    });
  }
  for (auto& th : threads) th.join();
  for (bool b : same) EXPECT_TRUE(b);
}

TEST(CpuDeviceTest, SerializedExecutableLoadsWithoutCodegen) {
  auto exe = Device().Compile(ParseOrFail(kLarge));
  ASSERT_TRUE(exe.ok());
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto loaded = Device().Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {1 << 20}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, i % 7 - 3.0);
  ir::Literal s = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kF32));
  s.SetDouble(0, 0.25);
  const std::vector<RuntimeValue> args = {RuntimeValue(x), RuntimeValue(s)};
  auto a = (*exe)->Execute(args, {});
  auto b = (*loaded)->Execute(args, {});
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectSameValues(*a, *b);

  EXPECT_FALSE(Device().Deserialize("garbage").ok());
  EXPECT_FALSE(Device().Deserialize(bytes->substr(0, bytes->size() / 2)).ok());
  std::string other = *bytes;
  other[9] ^= 1;  // inside the CPU feature string's length or text
  EXPECT_FALSE(Device().Deserialize(other).ok());
}

// Elided weights fill the same way from a fresh compile and from the disk
// cache's form (Serialize prints the module again, on other lines), and
// the same as the interpreter's: their seed comes from the resource's name
// and place, never from a source line.
TEST(CpuDeviceTest, ElidedWeightsFillTheSameAfterSerializeAndLoad) {
  const std::string text = R"(


func.func @main(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  // the disk cache's text has no comments and other line numbers
  %w1 = stablehlo.constant dense_resource<__elided__> : tensor<16xf32>

  %w2 = stablehlo.constant dense_resource<__elided__> : tensor<16xf32>
  %a = stablehlo.multiply %x, %w1 : tensor<16xf32>
  %b = stablehlo.add %x, %w2 : tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
})";
  auto exe = devices::CompileProgram(Device(), std::shared_ptr<ir::Module>(frontend::ParseModule(text).value()));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto loaded = Device().Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {16}));
  for (int64_t i = 0; i < 16; ++i) x.SetDouble(i, 1.0);
  const std::vector<RuntimeValue> args = {RuntimeValue(x)};
  for (eval::RandomFill fill : {eval::RandomFill::kUniform, eval::RandomFill::kWeights}) {
    devices::ExecuteOptions options;
    options.resource_fill_seed = 5;
    options.resource_fill = fill;
    auto fresh = (*exe)->Execute(args, options);
    auto from_cache = (*loaded)->Execute(args, options);
    auto interpreted = devices::InterpreterDevice().Compile(ParseOrFail(text)).value()->Execute(args, options);
    ASSERT_TRUE(fresh.ok() && from_cache.ok() && interpreted.ok());
    ExpectSameValues(*fresh, *from_cache);
    ExpectSameValues(*fresh, *interpreted);
    // x * w1 and x + w2 - 1: the two weights differ.
    EXPECT_NE((*fresh)[0].literal().GetDouble(3), (*fresh)[1].literal().GetDouble(3) - 1.0);
  }
}

// stablehlo.rng draws the same numbers from a fresh compile and from the
// disk cache's reprinted module, and when the program moves to other lines:
// its stream is seeded by its place among the rng ops, not its line. Two
// rng ops draw different streams.
TEST(CpuDeviceTest, RngDrawsTheSameAfterSerializeAndLoad) {
  const std::string text = R"(
func.func @main() -> (tensor<16xf32>, tensor<16xf32>) {
  %a = stablehlo.constant dense<0.0> : tensor<f32>
  %b = stablehlo.constant dense<1.0> : tensor<f32>
  %s = stablehlo.constant dense<16> : tensor<1xi64>
  %r1 = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<16xf32>
  %r2 = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<16xf32>
  return %r1, %r2 : tensor<16xf32>, tensor<16xf32>
})";
  auto exe = devices::CompileProgram(Device(), std::shared_ptr<ir::Module>(frontend::ParseModule(text).value()));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto loaded = Device().Deserialize(Device().Serialize(**exe).value());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto moved = devices::CompileProgram(
      Device(), std::shared_ptr<ir::Module>(frontend::ParseModule("\n\n// moved\n" + text).value()));
  ASSERT_TRUE(moved.ok());
  auto fresh = (*exe)->Execute({}, {});
  auto from_cache = (*loaded)->Execute({}, {});
  auto from_moved = (*moved)->Execute({}, {});
  auto interpreted = devices::InterpreterDevice().Compile(ParseOrFail(text)).value()->Execute({}, {});
  ASSERT_TRUE(fresh.ok() && from_cache.ok() && from_moved.ok() && interpreted.ok());
  ExpectSameValues(*fresh, *from_cache);
  ExpectSameValues(*fresh, *from_moved);
  ExpectSameValues(*fresh, *interpreted);
  EXPECT_NE((*fresh)[0].literal(), (*fresh)[1].literal());
}

// Elided weights in a function called once, defined before @main: inlined
// on cpu, called by the interpreter; both count them in the same order (the
// order inlining lays out), so both fill them alike.
TEST(CpuDeviceTest, ElidedWeightsInACalledFunctionFillAsTheInterpreterDoes) {
  const std::string text = R"(
func.func private @layer(%x: tensor<8xf32>) -> tensor<8xf32> {
  %k = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>
  %y = stablehlo.multiply %x, %k : tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %b = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>
  %h = stablehlo.add %x, %b : tensor<8xf32>
  %y = func.call @layer(%h) : (tensor<8xf32>) -> tensor<8xf32>
  %c = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>
  %z = stablehlo.add %y, %c : tensor<8xf32>
  return %y, %z : tensor<8xf32>, tensor<8xf32>
})";
  auto exe = devices::CompileProgram(Device(), std::shared_ptr<ir::Module>(frontend::ParseModule(text).value()));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {8}));
  for (int64_t i = 0; i < 8; ++i) x.SetDouble(i, 0.5 * static_cast<double>(i));
  const std::vector<RuntimeValue> args = {RuntimeValue(x)};
  devices::ExecuteOptions options;
  options.resource_fill_seed = 11;
  auto compiled = (*exe)->Execute(args, options);
  auto interpreted = devices::InterpreterDevice().Compile(ParseOrFail(text)).value()->Execute(args, options);
  ASSERT_TRUE(compiled.ok() && interpreted.ok());
  ExpectSameValues(*compiled, *interpreted);
}

// A program with many distinct kernels compiles in parts on the device's
// two threads (CpuJitOptions::compile_threads); its executable keeps one
// object file per part, serializes them all and loads back without codegen.
TEST(CpuDeviceTest, BigProgramsCompileInConcurrentPartsAndSerializeEveryPart) {
  const char* ops[] = {"abs", "exponential", "log", "negate", "sqrt", "tanh", "sine", "cosine", "floor", "ceil",
                       "exponential_minus_one", "log_plus_one", "logistic", "rsqrt", "cbrt", "round_nearest_even",
                       "round_nearest_afz", "sign"};
  const std::string t = "tensor<1000xf32>";
  std::string body, results, types;
  int k = 0;
  for (const char* op : ops) {
    body += "  %r" + std::to_string(k) + " = stablehlo." + op + " %x : " + t + "\n";
    results += (k ? ", %r" : "%r") + std::to_string(k);
    types += (k ? ", " : "") + t;
    ++k;
  }
  const std::string text =
      "func.func @main(%x: " + t + ") -> (" + types + ") {\n" + body + "  return " + results + " : " + types + "\n}\n";
  std::vector<devices::CompileDump> dumps;
  auto exe = Device().Compile(ParseOrFail(text), devices::CompileOptions{.dumps = &dumps});
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto optimized = std::find_if(dumps.begin(), dumps.end(), [](const auto& d) { return d.name == "llvm.opt.ll"; });
  ASSERT_NE(optimized, dumps.end());
  EXPECT_NE(optimized->text.find("; ---- part 1 of 2"), std::string::npos) << "compiled as one part";

  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {1000}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, 0.01 * i + 0.005);
  const std::vector<RuntimeValue> args{RuntimeValue(x)};
  auto compiled = (*exe)->Execute(args, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> expected = RunOn(interpreter, text, args);
  ASSERT_EQ(compiled->size(), expected.size());
  for (size_t r = 0; r < expected.size(); ++r) {
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const double want = expected[r].literal().GetDouble(i);
      ASSERT_NEAR((*compiled)[r].literal().GetDouble(i), want, 1e-6 * std::max(1.0, std::abs(want)))
          << ops[r] << " element " << i;
    }
  }

  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto loaded = Device().Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto reloaded = (*loaded)->Execute(args, {});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().message();
  ExpectSameValues(*reloaded, *compiled);
  // A count of object files beyond any compile's is refused, not allocated.
  std::string corrupt = *bytes;
  const size_t features = 8 + 8 + static_cast<size_t>(*reinterpret_cast<const uint64_t*>(corrupt.data() + 8));
  const size_t text_size = *reinterpret_cast<const uint64_t*>(corrupt.data() + features);
  const size_t count_at = features + 8 + text_size;
  ASSERT_LT(count_at + 8, corrupt.size());
  EXPECT_EQ(*reinterpret_cast<const uint64_t*>(corrupt.data() + count_at), 2u);
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(corrupt.data() + count_at, &huge, 8);
  auto refused = Device().Deserialize(corrupt);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("object files"), std::string::npos) << refused.status().message();
}

// Disk caches written before compiling in parts hold version 1 blobs (one
// object file, no count): they still load.
TEST(CpuDeviceTest, VersionOneSerializedExecutablesStillLoad) {
  auto exe = Device().Compile(ParseOrFail(kLarge));
  ASSERT_TRUE(exe.ok());
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  // v2: magic, features, text (each length-prefixed), count, objects.
  std::string_view in(*bytes);
  ASSERT_EQ(in.substr(0, 8), "JITDCPU2");
  in.remove_prefix(8);
  auto take = [&in](size_t n) {
    std::string_view out = in.substr(0, n);
    in.remove_prefix(n);
    return out;
  };
  auto take_string = [&]() {
    uint64_t n = 0;
    std::memcpy(&n, take(8).data(), 8);
    return take(n);
  };
  const std::string_view features = take_string(), text = take_string();
  uint64_t count = 0;
  std::memcpy(&count, take(8).data(), 8);
  ASSERT_EQ(count, 1u);
  const std::string_view object = take_string();
  ASSERT_TRUE(in.empty());
  std::string v1 = "JITDCPU1";
  for (std::string_view part : {features, text, object}) {
    const uint64_t n = part.size();
    v1.append(reinterpret_cast<const char*>(&n), 8);
    v1.append(part);
  }
  auto loaded = Device().Deserialize(v1);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {1 << 20}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, i % 5 - 2.0);
  ir::Literal s = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kF32));
  s.SetDouble(0, 0.5);
  const std::vector<RuntimeValue> args = {RuntimeValue(x), RuntimeValue(s)};
  auto a = (*exe)->Execute(args, {});
  auto b = (*loaded)->Execute(args, {});
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectSameValues(*a, *b);
}

TEST(CpuDeviceTest, WrongArgumentsAreRejected) {
  auto exe = Device().Compile(ParseOrFail(BinaryProgram("add", "f32", 4)));
  ASSERT_TRUE(exe.ok());
  auto out = (*exe)->Execute(std::vector<RuntimeValue>{RuntimeValue(Floats(ir::DType::kF32, {1, 2, 3}))}, {});
  EXPECT_FALSE(out.ok());
  out = (*exe)->Execute(std::vector<RuntimeValue>{RuntimeValue(Floats(ir::DType::kF32, {1, 2, 3})),
                                                  RuntimeValue(Floats(ir::DType::kF32, {1, 2, 3}))},
                        {});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
}


const CpuExecutable& AsCpu(const devices::Executable& exe) { return static_cast<const CpuExecutable&>(exe); }

std::unique_ptr<CpuDevice> DeviceWith(int threads, bool compile_comparators = true) {
  CpuDeviceOptions options;
  options.num_threads = threads;
  options.compile_sort_comparators = compile_comparators;
  return CpuDevice::Create(options).value();
}

ir::Literal Tensor(ir::DType t, const std::vector<int64_t>& dims) {
  return *ir::Literal::Create(ir::Type::Tensor(t, dims));
}

// Reductions with few outputs and long extents run as per-chunk partials
// plus a combine: exact ones (integers, maximum / minimum, pred) equal the
// interpreter bit for bit, on any thread count.
TEST(CpuDeviceTest, SplitReductionsMatchInterpreter) {
  struct Case {
    std::string text;
    std::vector<RuntimeValue> args;
  };
  std::vector<Case> cases;
  {  // i32 sum with wrap-around and a non-identity init from an argument.
    ir::Literal x = Tensor(ir::DType::kS32, {3, 100000});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetInt(i, (i * 2654435761LL) % 2000000000 - 1000000000);
    ir::Literal init = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
    init.SetInt(0, 5);
    cases.push_back({R"(
func.func @main(%x: tensor<3x100000xi32>, %i: tensor<i32>) -> tensor<3xi32> {
  %0 = stablehlo.reduce(%x init: %i) applies stablehlo.add across dimensions = [1] : (tensor<3x100000xi32>, tensor<i32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
})", {RuntimeValue(x), RuntimeValue(init)}});
  }
  {  // f32 maximum over two reduced dims around a kept one, with a fused
     // producer, NaN in one output's slice and -0 / +0 ties.
    ir::Literal x = Tensor(ir::DType::kF32, {300, 2, 400});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, std::sin(i * 0.37) * 100);
    x.SetDouble(2 * 400 * 123 + 400 + 17, std::nan(""));  // output 1
    cases.push_back({R"(
func.func @main(%x: tensor<300x2x400xf32>) -> tensor<2xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %n = stablehlo.negate %x : tensor<300x2x400xf32>
  %0 = stablehlo.reduce(%n init: %ninf) applies stablehlo.maximum across dimensions = [0, 2] : (tensor<300x2x400xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})", {RuntimeValue(x)}});
    ir::Literal z = Tensor(ir::DType::kF32, {70000});
    for (int64_t i = 0; i < z.num_elements(); ++i) z.SetDouble(i, i % 2 ? -0.0 : 0.0);
    cases.push_back({R"(
func.func @main(%x: tensor<70000xf32>) -> (tensor<f32>, tensor<f32>) {
  %pz = stablehlo.constant dense<0.0> : tensor<f32>
  %nz = stablehlo.constant dense<-0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %nz) applies stablehlo.maximum across dimensions = [0] : (tensor<70000xf32>, tensor<f32>) -> tensor<f32>
  %1 = stablehlo.reduce(%x init: %pz) applies stablehlo.minimum across dimensions = [0] : (tensor<70000xf32>, tensor<f32>) -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
})", {RuntimeValue(z)}});
  }
  {  // ui8 minimum, i64 multiply and pred and over 3-d inputs.
    ir::Literal u = Tensor(ir::DType::kU8, {4, 256, 300});
    for (int64_t i = 0; i < u.num_elements(); ++i) u.SetInt(i, 17 + (i * 7919) % 200);
    u.SetInt(3 * 256 * 300 + 5000, 3);
    ir::Literal m = Tensor(ir::DType::kS64, {2, 40000});
    for (int64_t i = 0; i < m.num_elements(); ++i) m.SetInt(i, i % 5 == 0 ? 3 : (i % 7 == 0 ? -1 : 1));
    ir::Literal p = Tensor(ir::DType::kPred, {5, 80000});
    for (int64_t i = 0; i < p.num_elements(); ++i) p.SetInt(i, i != 2 * 80000 + 79999);
    cases.push_back({R"(
func.func @main(%u: tensor<4x256x300xui8>, %m: tensor<2x40000xi64>, %p: tensor<5x80000xi1>) -> (tensor<4xui8>, tensor<2xi64>, tensor<5xi1>) {
  %umax = stablehlo.constant dense<250> : tensor<ui8>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.reduce(%u init: %umax) applies stablehlo.minimum across dimensions = [1, 2] : (tensor<4x256x300xui8>, tensor<ui8>) -> tensor<4xui8>
  %1 = stablehlo.reduce(%m init: %one) applies stablehlo.multiply across dimensions = [1] : (tensor<2x40000xi64>, tensor<i64>) -> tensor<2xi64>
  %2 = stablehlo.reduce(%p init: %t) applies stablehlo.and across dimensions = [1] : (tensor<5x80000xi1>, tensor<i1>) -> tensor<5xi1>
  return %0, %1, %2 : tensor<4xui8>, tensor<2xi64>, tensor<5xi1>
})", {RuntimeValue(u), RuntimeValue(m), RuntimeValue(p)}});
  }
  devices::InterpreterDevice interpreter;
  auto one = DeviceWith(1), three = DeviceWith(3);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto exe = one->Compile(ParseOrFail(c.text));
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    EXPECT_GE(AsCpu(**exe).stats().split_reductions, 1);
    const auto reference = RunOn(interpreter, c.text, c.args);
    ExpectSameValues(RunOn(*one, c.text, c.args), reference);
    ExpectSameValues(RunOn(*three, c.text, c.args), reference);
  }
}

// A split float sum is reassociated (chunk partials combined in ascending
// order): the same bytes on any thread count, close to the exact sum.
TEST(CpuDeviceTest, SplitFloatSumIsIndependentOfThreadCount) {
  const std::string text = R"(
func.func @main(%x: tensor<3000001xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<3000001xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})";
  ir::Literal x = Tensor(ir::DType::kF32, {3000001});
  double exact = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.SetDouble(i, std::cos(i * 0.001) + 0.25);
    exact += x.GetDouble(i);
  }
  const std::vector<RuntimeValue> args = {RuntimeValue(x)};
  const auto reference = RunOn(*DeviceWith(1), text, args);
  ASSERT_EQ(reference.size(), 1u);
  for (int threads : {2, 3, 5}) ExpectSameValues(RunOn(*DeviceWith(threads), text, args), reference);
  EXPECT_NEAR(reference[0].literal().GetDouble(0), exact, 1e-5 * std::abs(exact));
}

// Descending by key (NaN above +inf, -0 == +0 as in the corpus's
// comparators), ties by the second operand ascending; the third operand is
// carried along.
const char* kCustomSort = R"(
func.func @main(%k: tensor<37x500xf32>, %v: tensor<37x500xi32>, %w: tensor<37x500xf64>) -> (tensor<37x500xf32>, tensor<37x500xi32>, tensor<37x500xf64>) {
  %r:3 = "stablehlo.sort"(%k, %v, %w) <{dimension = 1 : i64, is_stable = false}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>, %e: tensor<f64>, %f: tensor<f64>):
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %nan = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %az = stablehlo.compare EQ, %a, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %a1 = stablehlo.select %az, %z, %a : tensor<i1>, tensor<f32>
    %an = stablehlo.compare NE, %a, %a, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %a2 = stablehlo.select %an, %nan, %a1 : tensor<i1>, tensor<f32>
    %bz = stablehlo.compare EQ, %b, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %b1 = stablehlo.select %bz, %z, %b : tensor<i1>, tensor<f32>
    %bn = stablehlo.compare NE, %b, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %b2 = stablehlo.select %bn, %nan, %b1 : tensor<i1>, tensor<f32>
    %gt = stablehlo.compare GT, %a2, %b2, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %a2, %b2, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %c, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %res = stablehlo.or %gt, %tie : tensor<i1>
    stablehlo.return %res : tensor<i1>
  }) : (tensor<37x500xf32>, tensor<37x500xi32>, tensor<37x500xf64>) -> (tensor<37x500xf32>, tensor<37x500xi32>, tensor<37x500xf64>)
  return %r#0, %r#1, %r#2 : tensor<37x500xf32>, tensor<37x500xi32>, tensor<37x500xf64>
})";

std::vector<RuntimeValue> CustomSortArgs() {
  ir::Literal k = Tensor(ir::DType::kF32, {37, 500}), v = Tensor(ir::DType::kS32, {37, 500}),
              w = Tensor(ir::DType::kF64, {37, 500});
  const double specials[] = {std::nan(""), -std::nan(""), INFINITY, -INFINITY, 0.0, -0.0};
  for (int64_t i = 0; i < k.num_elements(); ++i) {
    k.SetDouble(i, i % 11 == 0 ? specials[(i / 11) % 6] : static_cast<double>((i * 7) % 13) - 6);
    v.SetInt(i, (i * 31) % 17 - 8);
    w.SetDouble(i, i * 0.5);
  }
  return {RuntimeValue(k), RuntimeValue(v), RuntimeValue(w)};
}

TEST(CpuDeviceTest, SortComparatorIsCompiledAndMatchesInterpreter) {
  const auto args = CustomSortArgs();
  devices::InterpreterDevice interpreter;
  const auto reference = RunOn(interpreter, kCustomSort, args);
  auto exe = Device().Compile(ParseOrFail(kCustomSort));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ(AsCpu(**exe).stats().compiled_comparators, 1);
  auto out = (*exe)->Execute(args, {});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectSameValues(*out, reference);

  // The interpreted comparator gives the same permutation.
  auto interpreted = DeviceWith(2, /*compile_comparators=*/false);
  auto exe2 = interpreted->Compile(ParseOrFail(kCustomSort));
  ASSERT_TRUE(exe2.ok());
  EXPECT_EQ(AsCpu(**exe2).stats().compiled_comparators, 0);
  ExpectSameValues(RunOn(*interpreted, kCustomSort, args), reference);

  // Loaded from its serialized form (object code, no codegen), the
  // comparator symbol resolves and sorts the same.
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto loaded = Device().Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(AsCpu(**loaded).stats().compiled_comparators, 1);
  auto out2 = (*loaded)->Execute(args, {});
  ASSERT_TRUE(out2.ok()) << out2.status().message();
  ExpectSameValues(*out2, reference);
}

TEST(CpuDeviceTest, SortComparatorCodegenCannotHandleStaysInterpreted) {
  // A rank-0 reshape in the comparator: not compiled, still correct.
  const std::string text = R"(
func.func @main(%k: tensor<64xi32>) -> tensor<64xi32> {
  %r = "stablehlo.sort"(%k) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %a1 = stablehlo.reshape %a : (tensor<i32>) -> tensor<i32>
    %lt = stablehlo.compare GT, %a1, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<64xi32>) -> tensor<64xi32>
  return %r : tensor<64xi32>
})";
  ir::Literal k = Tensor(ir::DType::kS32, {64});
  for (int64_t i = 0; i < 64; ++i) k.SetInt(i, (i * 37) % 23 - 11);
  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ(AsCpu(**exe).stats().compiled_comparators, 0);
  ExpectLikeInterpreter(text, {RuntimeValue(k)});
}

// ---- pad, dynamic_slice, dynamic_update_slice and converts into f16/bf16
// as kernels (no fallback), bit for bit against the interpreter.

const CpuProgramStats& StatsOf(const std::string& text) {
  static std::vector<std::unique_ptr<devices::Executable>>* keep =
      new std::vector<std::unique_ptr<devices::Executable>>();
  auto exe = Device().Compile(ParseOrFail(text));
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  keep->push_back(std::move(*exe));
  return static_cast<const CpuExecutable&>(*keep->back()).stats();
}

ir::Literal Shaped(ir::Literal lit, std::vector<int64_t> dims) {
  return *ir::Literal::FromBytes(ir::Type::Tensor(lit.dtype(), std::move(dims)),
                                 std::vector<uint8_t>(lit.bytes().begin(), lit.bytes().end()));
}

ir::Literal ScalarInt(ir::DType t, int64_t v) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Scalar(t));
  lit.SetBits(0, static_cast<uint64_t>(v));  // the low bits: ui64 max from -1
  return lit;
}

TEST(CpuDeviceTest, PadIsAFusedIndexMap) {
  // Negative edge padding (dropping elements), interior padding, both at
  // once, an exp producer and a multiply consumer fused into the pads.
  const std::string text = R"(
func.func @main(%x: tensor<3x4xf32>, %p: tensor<f32>) -> (tensor<8x6xf32>, tensor<2x9xf32>, tensor<2xi8>, tensor<4x3xf32>, tensor<0x4xf32>) {
  %e = stablehlo.exponential %x : tensor<3x4xf32>
  %0 = stablehlo.pad %e, %p, low = [1, -2], high = [2, 1], interior = [1, 1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<8x6xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<8x6xf32>
  %2 = stablehlo.pad %x, %p, low = [-1, 3], high = [0, -4], interior = [0, 2] : (tensor<3x4xf32>, tensor<f32>) -> tensor<2x9xf32>
  %c = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi8>
  %m = stablehlo.constant dense<-5> : tensor<i8>
  %3 = stablehlo.pad %c, %m, low = [-3], high = [2], interior = [0] : (tensor<3xi8>, tensor<i8>) -> tensor<2xi8>
  %z = stablehlo.constant dense<0.0> : tensor<0x3xf32>
  %4 = stablehlo.pad %z, %p, low = [1, 0], high = [3, 0], interior = [5, 0] : (tensor<0x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %5 = stablehlo.pad %x, %p, low = [-2, 0], high = [-1, 0], interior = [0, 0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<0x4xf32>
  return %1, %2, %3, %4, %5 : tensor<8x6xf32>, tensor<2x9xf32>, tensor<2xi8>, tensor<4x3xf32>, tensor<0x4xf32>
}
)";
  std::vector<double> x;
  for (int i = 0; i < 12; ++i) x.push_back(0.3 * i - 1.7);
  ExpectLikeInterpreter(text, {RuntimeValue(Shaped(Floats(ir::DType::kF32, x), {3, 4})),
                               RuntimeValue(Shaped(Floats(ir::DType::kF32, {-9.5}), {}))});
  const CpuProgramStats& stats = StatsOf(text);
  EXPECT_EQ(stats.fallback_ops, 0);
  EXPECT_EQ(stats.kernels, 5);  // exp and multiply fused into the first pad
}

std::string DynamicSlices(const std::string& it) {
  const std::string s = "tensor<" + it + ">";
  return R"(
func.func @main(%x: tensor<4x5xi32>, %u: tensor<2x3xi32>, %i: )" + s + ", %j: " + s + R"() -> (tensor<2x3xi32>, tensor<4x5xi32>, tensor<0x5xi32>, tensor<4x5xi32>, tensor<4x5xi32>) {
  %0 = stablehlo.dynamic_slice %x, %i, %j, sizes = [2, 3] : (tensor<4x5xi32>, )" + s + ", " + s + R"() -> tensor<2x3xi32>
  %1 = stablehlo.dynamic_update_slice %x, %u, %i, %j : (tensor<4x5xi32>, tensor<2x3xi32>, )" + s + ", " + s + R"() -> tensor<4x5xi32>
  %2 = stablehlo.dynamic_slice %x, %i, %j, sizes = [0, 5] : (tensor<4x5xi32>, )" + s + ", " + s + R"() -> tensor<0x5xi32>
  %e = stablehlo.constant dense<0> : tensor<0x2xi32>
  %3 = stablehlo.dynamic_update_slice %x, %e, %i, %j : (tensor<4x5xi32>, tensor<0x2xi32>, )" + s + ", " + s + R"() -> tensor<4x5xi32>
  %n = stablehlo.negate %u : tensor<2x3xi32>
  %4 = stablehlo.dynamic_update_slice %x, %n, %j, %i : (tensor<4x5xi32>, tensor<2x3xi32>, )" + s + ", " + s + R"() -> tensor<4x5xi32>
  %5 = stablehlo.add %4, %x : tensor<4x5xi32>
  return %0, %1, %2, %3, %5 : tensor<2x3xi32>, tensor<4x5xi32>, tensor<0x5xi32>, tensor<4x5xi32>, tensor<4x5xi32>
}
)";
}

TEST(CpuDeviceTest, DynamicSlicesClampStartsOfEveryIndexType) {
  std::vector<int64_t> x, u;
  for (int i = 0; i < 20; ++i) x.push_back(i + 100);
  for (int i = 0; i < 6; ++i) u.push_back(-i - 1);
  const RuntimeValue xv(Shaped(Ints(ir::DType::kS32, x), {4, 5}));
  const RuntimeValue uv(Shaped(Ints(ir::DType::kS32, u), {2, 3}));
  const std::vector<std::pair<const char*, ir::DType>> types = {
      {"i8", ir::DType::kS8},  {"i16", ir::DType::kS16}, {"i32", ir::DType::kS32}, {"i64", ir::DType::kS64},
      {"ui8", ir::DType::kU8}, {"ui16", ir::DType::kU16}, {"ui32", ir::DType::kU32}, {"ui64", ir::DType::kU64}};
  // In range, negative (huge when unsigned), past the end, the extremes.
  const std::vector<std::pair<int64_t, int64_t>> starts = {
      {1, 2}, {0, 0}, {2, 2}, {-1, 1}, {3, -7}, {100, 200}, {-128, 127},
      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}, {-1, -1}};
  for (const auto& [name, t] : types) {
    SCOPED_TRACE(name);
    const std::string text = DynamicSlices(name);
    const CpuProgramStats& stats = StatsOf(text);
    EXPECT_EQ(stats.fallback_ops, 0);
    EXPECT_EQ(stats.kernels, 5);  // negate and add fused into the last update
    for (const auto& [i, j] : starts) {
      SCOPED_TRACE(std::to_string(i) + ", " + std::to_string(j));
      ExpectLikeInterpreter(text, {xv, uv, RuntimeValue(ScalarInt(t, i)), RuntimeValue(ScalarInt(t, j))});
    }
  }
}

TEST(CpuDeviceTest, ConvertIntoHalfTypesRoundsOnce) {
  // Values where rounding through f32 first (double rounding) differs from
  // one rounding: 1 + 2^-11 + 2^-40 is just above an f16 tie, f32 drops
  // the 2^-40 and makes it a tie (which goes to even, 1.0). Likewise for
  // bf16 (1 + 2^-8 + 2^-30) and for integers above 2^24 into bf16.
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<double> f = {1 + 0x1p-11 + 0x1p-40, -(1 + 0x1p-11 + 0x1p-40), 1 + 0x1p-8 + 0x1p-30,
                                 -(1 + 0x1p-8 + 0x1p-30), 1 + 0x1p-11, 65519.99, 65520, 1e300, -1e300,
                                 nan, -nan, inf, -inf, 0x1p-25, 0x1p-25 + 0x1p-60, -0x1p-25 - 0x1p-70,
                                 1e-320, -0.0, 0x1p-133 + 0x1p-150, 3.4028235677973366e38, 1.0 / 3};
  const int64_t n = static_cast<int64_t>(f.size());
  const std::vector<int64_t> ints = {16842753, -16842753, (int64_t{1} << 24) + (int64_t{1} << 16),
                                     65519, 65520, -65520, 2049, 2051,
                                     std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                     -1, 0, (int64_t{1} << 40) + (int64_t{1} << 32) + 1,
                                     std::numeric_limits<int32_t>::min(), 0x7FFFFFFF, 0x00FFFFFF,
                                     0x01000003, 0x7F7FFFFF, 0x12345678, 1 << 30, -3};
  const int64_t m = static_cast<int64_t>(ints.size());
  const std::string fn = std::to_string(n), im = std::to_string(m);
  const std::string text = R"(
func.func @main(%x: tensor<)" + fn + R"(xf64>, %i: tensor<)" + im + R"(xi64>) -> (tensor<)" + fn + R"(xf16>, tensor<)" + fn + R"(xbf16>, tensor<)" + im + R"(xf16>, tensor<)" + im + R"(xbf16>, tensor<)" + im + R"(xbf16>, tensor<)" + im + R"(xbf16>, tensor<)" + im + R"(xf16>, tensor<)" + fn + R"(xbf16>) {
  %0 = stablehlo.convert %x : (tensor<)" + fn + R"(xf64>) -> tensor<)" + fn + R"(xf16>
  %1 = stablehlo.convert %x : (tensor<)" + fn + R"(xf64>) -> tensor<)" + fn + R"(xbf16>
  %2 = stablehlo.convert %i : (tensor<)" + im + R"(xi64>) -> tensor<)" + im + R"(xf16>
  %3 = stablehlo.convert %i : (tensor<)" + im + R"(xi64>) -> tensor<)" + im + R"(xbf16>
  %i32 = stablehlo.convert %i : (tensor<)" + im + R"(xi64>) -> tensor<)" + im + R"(xi32>
  %4 = stablehlo.convert %i32 : (tensor<)" + im + R"(xi32>) -> tensor<)" + im + R"(xbf16>
  %u64 = stablehlo.convert %i : (tensor<)" + im + R"(xi64>) -> tensor<)" + im + R"(xui64>
  %5 = stablehlo.convert %u64 : (tensor<)" + im + R"(xui64>) -> tensor<)" + im + R"(xbf16>
  %u32 = stablehlo.convert %i : (tensor<)" + im + R"(xi64>) -> tensor<)" + im + R"(xui32>
  %6 = stablehlo.convert %u32 : (tensor<)" + im + R"(xui32>) -> tensor<)" + im + R"(xf16>
  %h = stablehlo.convert %x : (tensor<)" + fn + R"(xf64>) -> tensor<)" + fn + R"(xf32>
  %7 = stablehlo.convert %h : (tensor<)" + fn + R"(xf32>) -> tensor<)" + fn + R"(xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<)" + fn + R"(xf16>, tensor<)" + fn + R"(xbf16>, tensor<)" + im + R"(xf16>, tensor<)" + im + R"(xbf16>, tensor<)" + im + R"(xbf16>, tensor<)" + im + R"(xbf16>, tensor<)" + im + R"(xf16>, tensor<)" + fn + R"(xbf16>
}
)";
  EXPECT_EQ(StatsOf(text).fallback_ops, 0);
  const std::vector<RuntimeValue> args = {RuntimeValue(Floats(ir::DType::kF64, f)),
                                          RuntimeValue(Ints(ir::DType::kS64, ints))};
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> got = RunOn(Device(), text, args);
  const std::vector<RuntimeValue> want = RunOn(interpreter, text, args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    // Exact bits, NaN included (both write the canonical quiet NaN).
    for (int64_t e = 0; e < got[r].literal().num_elements(); ++e) {
      EXPECT_EQ(got[r].literal().GetBits(e), want[r].literal().GetBits(e)) << "result " << r << " element " << e;
    }
  }
  // Independent of the interpreter: the correctly rounded bits.
  EXPECT_EQ(got[0].literal().GetBits(0), 0x3C01u);  // f16 1 + 2^-10
  EXPECT_EQ(got[1].literal().GetBits(2), 0x3F81u);  // bf16 1 + 2^-7
  EXPECT_EQ(got[3].literal().GetBits(0), 0x4B81u);  // bf16 2^24 + 2^17
  EXPECT_EQ(got[4].literal().GetBits(0), 0x4B81u);
  EXPECT_EQ(got[0].literal().GetBits(9), 0x7E00u);  // canonical NaN
}


TEST(CpuDeviceTest, WideRowsTakeTheVectorizedPadAndUpdatePaths) {
  // Rows long enough for the vectorized loops (masked loads at the edges
  // of the operand / update window), odd sizes for the remainder loops.
  const std::string text = R"(
func.func @main(%x: tensor<5x67xf32>, %u: tensor<3x37xf32>, %i: tensor<ui32>, %j: tensor<ui32>) -> (tensor<7x73xf32>, tensor<5x67xf32>, tensor<5x133xf32>) {
  %p = stablehlo.constant dense<-2.5> : tensor<f32>
  %0 = stablehlo.pad %x, %p, low = [1, -3], high = [1, 9], interior = [0, 0] : (tensor<5x67xf32>, tensor<f32>) -> tensor<7x73xf32>
  %1 = stablehlo.dynamic_update_slice %x, %u, %i, %j : (tensor<5x67xf32>, tensor<3x37xf32>, tensor<ui32>, tensor<ui32>) -> tensor<5x67xf32>
  %2 = stablehlo.pad %x, %p, low = [0, 0], high = [0, 0], interior = [0, 1] : (tensor<5x67xf32>, tensor<f32>) -> tensor<5x133xf32>
  return %0, %1, %2 : tensor<7x73xf32>, tensor<5x67xf32>, tensor<5x133xf32>
}
)";
  std::vector<double> x, u;
  for (int k = 0; k < 5 * 67; ++k) x.push_back(std::sin(k * 0.37));
  for (int k = 0; k < 3 * 37; ++k) u.push_back(100 + k);
  EXPECT_EQ(StatsOf(text).fallback_ops, 0);
  for (const auto& [i, j] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 13}, {2, 30}, {7, 31}, {3, -4}}) {
    SCOPED_TRACE(std::to_string(i) + ", " + std::to_string(j));
    ExpectLikeInterpreter(text, {RuntimeValue(Shaped(Floats(ir::DType::kF32, x), {5, 67})),
                                 RuntimeValue(Shaped(Floats(ir::DType::kF32, u), {3, 37})),
                                 RuntimeValue(ScalarInt(ir::DType::kU32, i)), RuntimeValue(ScalarInt(ir::DType::kU32, j))});
  }
}


TEST(CpuDeviceTest, ComplexElementwiseKernelsMatchTheInterpreterBitForBit) {
  // add / subtract / negate / real / imag / complex / convert / select and
  // index maps (pad, dynamic_update_slice, broadcast, reverse) on
  // complex<f32> and complex<f64>, fused; edge values: -0, inf, overflow of
  // the sum, subnormals, values that round when narrowed to complex<f32>.
  const std::string text = R"(
func.func @main(%a: tensor<8xf64>, %b: tensor<8xf64>, %k: tensor<i32>, %p: tensor<8xi1>) -> (tensor<8xcomplex<f64>>, tensor<8xcomplex<f32>>, tensor<8xf32>, tensor<8xf64>, tensor<11xcomplex<f32>>, tensor<8xcomplex<f64>>, tensor<8xi32>, tensor<8xbf16>, tensor<8xcomplex<f32>>) {
  %z = stablehlo.complex %a, %b : tensor<8xcomplex<f64>>
  %w = stablehlo.complex %b, %a : tensor<8xcomplex<f64>>
  %s = stablehlo.add %z, %w : tensor<8xcomplex<f64>>
  %d = stablehlo.subtract %s, %z : tensor<8xcomplex<f64>>
  %n = stablehlo.negate %d : tensor<8xcomplex<f64>>
  %c = stablehlo.convert %n : (tensor<8xcomplex<f64>>) -> tensor<8xcomplex<f32>>
  %c2 = stablehlo.add %c, %c : tensor<8xcomplex<f32>>
  %re = stablehlo.real %c2 : (tensor<8xcomplex<f32>>) -> tensor<8xf32>
  %im = stablehlo.imag %z : (tensor<8xcomplex<f64>>) -> tensor<8xf64>
  %pv = stablehlo.constant dense<(1.5, -2.0)> : tensor<complex<f32>>
  %pad = stablehlo.pad %c2, %pv, low = [2], high = [1], interior = [0] : (tensor<8xcomplex<f32>>, tensor<complex<f32>>) -> tensor<11xcomplex<f32>>
  %u = stablehlo.slice %w [0:3] : (tensor<8xcomplex<f64>>) -> tensor<3xcomplex<f64>>
  %dus = stablehlo.dynamic_update_slice %z, %u, %k : (tensor<8xcomplex<f64>>, tensor<3xcomplex<f64>>, tensor<i32>) -> tensor<8xcomplex<f64>>
  %toi = stablehlo.convert %z : (tensor<8xcomplex<f64>>) -> tensor<8xi32>
  %tob = stablehlo.convert %z : (tensor<8xcomplex<f64>>) -> tensor<8xbf16>
  %fc = stablehlo.convert %re : (tensor<8xf32>) -> tensor<8xcomplex<f32>>
  %rv = stablehlo.reverse %c, dims = [0] : tensor<8xcomplex<f32>>
  %sel = stablehlo.select %p, %fc, %rv : tensor<8xi1>, tensor<8xcomplex<f32>>
  return %s, %c, %re, %im, %pad, %dus, %toi, %tob, %sel : tensor<8xcomplex<f64>>, tensor<8xcomplex<f32>>, tensor<8xf32>, tensor<8xf64>, tensor<11xcomplex<f32>>, tensor<8xcomplex<f64>>, tensor<8xi32>, tensor<8xbf16>, tensor<8xcomplex<f32>>
}
)";
  const double inf = INFINITY;
  const std::vector<double> a = {1.0 / 3, -0.0, inf, 1e308, 4.9e-324, 3.4028235677973366e38, -7.25, 1e-40};
  const std::vector<double> b = {2.0 / 3, 0.0, -1.0, 1e308, -4.9e-324, 1 + 0x1p-30, 1e10, -3e9};
  const CpuProgramStats& stats = StatsOf(text);
  EXPECT_EQ(stats.fallback_ops, 0);
  for (int64_t k : {0, 3, 7, -2}) {
    SCOPED_TRACE(k);
    const std::vector<RuntimeValue> args = {
        RuntimeValue(Floats(ir::DType::kF64, a)), RuntimeValue(Floats(ir::DType::kF64, b)),
        RuntimeValue(ScalarInt(ir::DType::kS32, k)),
        RuntimeValue(Ints(ir::DType::kPred, {1, 0, 1, 1, 0, 0, 1, 0}))};
    devices::InterpreterDevice interpreter;
    const std::vector<RuntimeValue> got = RunOn(Device(), text, args);
    const std::vector<RuntimeValue> want = RunOn(interpreter, text, args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t r = 0; r < got.size(); ++r) {
      // Bytes equal; the one NaN (inf - inf) is the same default NaN on
      // both, computed in the same IEEE operation.
      const auto x = got[r].literal().bytes(), y = want[r].literal().bytes();
      EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << "result " << r;
    }
  }
}


TEST(CpuDeviceTest, PadAndDynamicSliceFuseIntoReductions) {
  // The guarded reads of pad / dynamic_update_slice inside a reduce's
  // nested loops, and a dynamic_slice producer of a reduce.
  const std::string text = R"(
func.func @main(%x: tensor<3x5xf32>, %u: tensor<2x2xf32>, %i: tensor<i64>) -> (tensor<7xf32>, tensor<3xf32>, tensor<3xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = stablehlo.pad %x, %one, low = [2, -1], high = [2, 3], interior = [0, 1] : (tensor<3x5xf32>, tensor<f32>) -> tensor<7x11xf32>
  %0 = stablehlo.reduce(%p init: %z) applies stablehlo.add across dimensions = [1] : (tensor<7x11xf32>, tensor<f32>) -> tensor<7xf32>
  %d = stablehlo.dynamic_update_slice %x, %u, %i, %i : (tensor<3x5xf32>, tensor<2x2xf32>, tensor<i64>, tensor<i64>) -> tensor<3x5xf32>
  %1 = stablehlo.reduce(%d init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<3x5xf32>, tensor<f32>) -> tensor<3xf32>
  %s = stablehlo.dynamic_slice %x, %i, %i, sizes = [3, 2] : (tensor<3x5xf32>, tensor<i64>, tensor<i64>) -> tensor<3x2xf32>
  %2 = stablehlo.reduce(%s init: %z) applies stablehlo.add across dimensions = [1] : (tensor<3x2xf32>, tensor<f32>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<7xf32>, tensor<3xf32>, tensor<3xf32>
}
)";
  std::vector<double> x;
  for (int k = 0; k < 15; ++k) x.push_back(std::cos(k * 1.3) * 10);
  const CpuProgramStats& stats = StatsOf(text);
  EXPECT_EQ(stats.fallback_ops, 0);
  EXPECT_EQ(stats.kernels, 3);  // each producer inside its reduce
  for (int64_t i : {0, 1, 4, -3}) {
    SCOPED_TRACE(i);
    ExpectLikeInterpreter(text, {RuntimeValue(Shaped(Floats(ir::DType::kF32, x), {3, 5})),
                                 RuntimeValue(Shaped(Floats(ir::DType::kF32, {100, 200, -300, 400}), {2, 2})),
                                 RuntimeValue(ScalarInt(ir::DType::kS64, i))});
  }
}


TEST(CpuDeviceTest, ComplexMultiplyAndDivideAreTheInterpretersLongDoubleOps) {
  // Rounding (random-ish parts; complex<f32> rounds long double -> double
  // -> float like jit/eval), overflow, C99 Annex G's infinity recovery
  // when both parts come out NaN, division by zero / infinity and the
  // scaling of huge and tiny divisors (__divxc3).
  const double inf = INFINITY, nan = std::nan("");
  std::vector<double> a = {inf, nan, 1e300, 1e200, inf, 0.0, 3e38, -0.0, inf, nan, 1e308, 1.0, 1.0, 5e-324, 1e-300};
  std::vector<double> b = {nan, nan, 1e300, 1e200, inf, inf, 3e38, 0.0, 0.0, 1.0, 1e308, -inf, 2.0, 0.0, 3.0};
  std::vector<double> c = {1.0, inf, 1e300, 1e200, inf, 0.0, 3e38, inf, 0.0, 0.0, 1e308, nan, 0.0, 1e-310, 1e300};
  std::vector<double> d = {2.0, 0.0, -1e300, 1e200, -inf, inf, -3e38, nan, 0.0, inf, -1e308, 2.0, 0.0, 1e-320, -1e-300};
  for (int k = 0; k < 49; ++k) {
    a.push_back(std::sin(k * 0.91) * std::exp(k % 7));
    b.push_back(std::cos(k * 1.37) / 3);
    c.push_back(std::sin(k * 2.11 + 1) * 1e3);
    d.push_back(1.0 / (k + 1.5));
  }
  const std::string text = R"(
func.func @main(%a: tensor<64xf64>, %b: tensor<64xf64>, %c: tensor<64xf64>, %d: tensor<64xf64>) -> (tensor<64xcomplex<f64>>, tensor<64xcomplex<f32>>, tensor<64xcomplex<f64>>, tensor<64xcomplex<f32>>) {
  %x = stablehlo.complex %a, %b : tensor<64xcomplex<f64>>
  %y = stablehlo.complex %c, %d : tensor<64xcomplex<f64>>
  %0 = stablehlo.multiply %x, %y : tensor<64xcomplex<f64>>
  %x32 = stablehlo.convert %x : (tensor<64xcomplex<f64>>) -> tensor<64xcomplex<f32>>
  %y32 = stablehlo.convert %y : (tensor<64xcomplex<f64>>) -> tensor<64xcomplex<f32>>
  %1 = stablehlo.multiply %x32, %y32 : tensor<64xcomplex<f32>>
  %2 = stablehlo.divide %x, %y : tensor<64xcomplex<f64>>
  %3 = stablehlo.divide %x32, %y32 : tensor<64xcomplex<f32>>
  return %0, %1, %2, %3 : tensor<64xcomplex<f64>>, tensor<64xcomplex<f32>>, tensor<64xcomplex<f64>>, tensor<64xcomplex<f32>>
}
)";
  EXPECT_EQ(StatsOf(text).fallback_ops, 0);
  const std::vector<RuntimeValue> args = {
      RuntimeValue(Floats(ir::DType::kF64, a)), RuntimeValue(Floats(ir::DType::kF64, b)),
      RuntimeValue(Floats(ir::DType::kF64, c)), RuntimeValue(Floats(ir::DType::kF64, d))};
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> got = RunOn(Device(), text, args);
  const std::vector<RuntimeValue> want = RunOn(interpreter, text, args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    for (int64_t e = 0; e < 64; ++e) {
      const std::complex<double> x = got[r].literal().GetComplex(e), y = want[r].literal().GetComplex(e);
      for (auto [p, q] : {std::pair{x.real(), y.real()}, std::pair{x.imag(), y.imag()}}) {
        if (std::isnan(p) && std::isnan(q)) continue;
        EXPECT_EQ(std::bit_cast<uint64_t>(p), std::bit_cast<uint64_t>(q))
            << "result " << r << " element " << e << ": " << p << " vs " << q;
      }
    }
  }
}


TEST(CpuDeviceTest, ComplexCompareAndAbsMatchTheInterpreter) {
  // compare: both parts equal (NaN never, -0 == +0), lexicographic order;
  // abs: hypotl in long double, narrowed through double (no overflow for
  // 1e308 parts in complex<f64>, inf for 3e38 parts in complex<f32>).
  const double inf = INFINITY, nan = std::nan("");
  const std::vector<double> a = {1, 1, -0.0, nan, 2, 1e308, 3e38, inf, 1, 5, 0x1p-1074, 3};
  const std::vector<double> b = {2, 2, 0.0, 1, -1, 1e308, 3e38, nan, 3, 5, 0x1p-1074, 4};
  const std::vector<double> c = {1, 1, 0.0, nan, 2, 1e308, 3e38, 1, 1, 4, 0.0, 3};
  const std::vector<double> d = {2, 3, -0.0, 1, -2, -1e308, 3e38, nan, 2, 9, 0x1p-1074, 4};
  std::string outs, types, body;
  int k = 0;
  for (const char* dir : {"EQ", "NE", "GE", "GT", "LE", "LT"}) {
    for (const char* t : {"f64", "f32"}) {
      const std::string x = std::string("%x") + t, y = std::string("%y") + t;
      body += "  %r" + std::to_string(k) + " = stablehlo.compare " + dir + ", " + x + ", " + y +
              ", FLOAT : (tensor<12xcomplex<" + t + ">>, tensor<12xcomplex<" + t + ">>) -> tensor<12xi1>\n";
      outs += (k ? ", %r" : "%r") + std::to_string(k);
      types += (k ? ", " : "") + std::string("tensor<12xi1>");
      ++k;
    }
  }
  const std::string text = R"(
func.func @main(%a: tensor<12xf64>, %b: tensor<12xf64>, %c: tensor<12xf64>, %d: tensor<12xf64>) -> ()" + types + R"(, tensor<12xf64>, tensor<12xf32>) {
  %xf64 = stablehlo.complex %a, %b : tensor<12xcomplex<f64>>
  %yf64 = stablehlo.complex %c, %d : tensor<12xcomplex<f64>>
  %xf32 = stablehlo.convert %xf64 : (tensor<12xcomplex<f64>>) -> tensor<12xcomplex<f32>>
  %yf32 = stablehlo.convert %yf64 : (tensor<12xcomplex<f64>>) -> tensor<12xcomplex<f32>>
)" + body + R"(  %abs64 = stablehlo.abs %xf64 : (tensor<12xcomplex<f64>>) -> tensor<12xf64>
  %abs32 = stablehlo.abs %xf32 : (tensor<12xcomplex<f32>>) -> tensor<12xf32>
  return )" + outs + ", %abs64, %abs32 : " + types + R"(, tensor<12xf64>, tensor<12xf32>
}
)";
  EXPECT_EQ(StatsOf(text).fallback_ops, 0);
  ExpectLikeInterpreter(text, {RuntimeValue(Floats(ir::DType::kF64, a)), RuntimeValue(Floats(ir::DType::kF64, b)),
                               RuntimeValue(Floats(ir::DType::kF64, c)), RuntimeValue(Floats(ir::DType::kF64, d))});
}

// ---- Multi-output fusion (jit/passes/fusion.h): a producer read by more
// than its consumer's kernel is written by that kernel as an extra output,
// every element exactly once however the work is split.

ir::Literal Pattern(ir::DType t, const std::vector<int64_t>& dims, int salt) {
  ir::Literal lit = Tensor(t, dims);
  for (int64_t i = 0; i < lit.num_elements(); ++i) {
    if (ir::IsFloat(t)) {
      lit.SetDouble(i, std::sin(static_cast<double>(i * (salt + 3) % 1009)) * 4);
    } else {
      lit.SetInt(i, (i * 2654435761LL + salt) % 2000003 - 1000001);
    }
  }
  return lit;
}

std::string KernelListing(const std::string& text, int threads = 2) {
  auto device = DeviceWith(threads);
  std::vector<devices::CompileDump> dumps;
  devices::CompileOptions options;
  options.dumps = &dumps;
  auto exe = device->Compile(ParseOrFail(text), options);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  for (const auto& d : dumps) {
    if (d.name == "kernels.txt") return d.text;
  }
  return "";
}

TEST(CpuDeviceTest, MultiOutputElementwiseKernelsWriteEveryElementOnce) {
  // Flat loop (x read again by the reduce), rows (transposed consumer), on
  // 1 and 2 threads with enough elements to split.
  const std::string text = R"(
func.func @main(%a: tensor<512x1024xf32>, %b: tensor<512x1024xf32>) -> (tensor<512x1024xf32>, tensor<512xf32>, tensor<1024x512xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %x = stablehlo.add %a, %b : tensor<512x1024xf32>
  %e = stablehlo.exponential %x : tensor<512x1024xf32>
  %y = stablehlo.multiply %e, %x : tensor<512x1024xf32>
  %t = stablehlo.transpose %y, dims = [1, 0] : (tensor<512x1024xf32>) -> tensor<1024x512xf32>
  %m = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<512x1024xf32>, tensor<f32>) -> tensor<512xf32>
  return %y, %m, %t : tensor<512x1024xf32>, tensor<512xf32>, tensor<1024x512xf32>
}
)";
  const std::vector<RuntimeValue> args = {RuntimeValue(Pattern(ir::DType::kF32, {512, 1024}, 1)),
                                          RuntimeValue(Pattern(ir::DType::kF32, {512, 1024}, 2))};
  devices::InterpreterDevice interpreter;
  const auto want = RunOn(interpreter, text, args);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    ExpectSameValues(RunOn(*DeviceWith(threads), text, args), want);
  }
  const std::string listing = KernelListing(text);
  EXPECT_NE(listing.find("[+"), std::string::npos) << listing;
}

TEST(CpuDeviceTest, MultiOutputReductionsWriteTheirInput) {
  // Layer norm's start: the residual add feeds the mean and the centering;
  // the reduce kernel writes the sum too. Row sums of 512 keep the
  // interpreter's order (bit for bit); the i32 case is a split reduction.
  const std::string layer_norm = R"(
func.func @main(%a: tensor<64x512xf32>, %b: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<512.0> : tensor<64xf32>
  %x = stablehlo.add %a, %b : tensor<64x512xf32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<64x512xf32>, tensor<f32>) -> tensor<64xf32>
  %mean = stablehlo.divide %s, %n : tensor<64xf32>
  %m = stablehlo.broadcast_in_dim %mean, dims = [0] : (tensor<64xf32>) -> tensor<64x512xf32>
  %d = stablehlo.subtract %x, %m : tensor<64x512xf32>
  return %d : tensor<64x512xf32>
}
)";
  ExpectLikeInterpreter(layer_norm, {RuntimeValue(Pattern(ir::DType::kF32, {64, 512}, 3)),
                                     RuntimeValue(Pattern(ir::DType::kF32, {64, 512}, 4))});
  const std::string listing = KernelListing(layer_norm);
  EXPECT_NE(listing.find("reduce <- add [+add]"), std::string::npos) << listing;

  const std::string split = R"(
func.func @main(%a: tensor<3x100000xi32>, %b: tensor<3x100000xi32>) -> (tensor<3xi32>, tensor<3x100000xi32>) {
  %z = stablehlo.constant dense<0> : tensor<i32>
  %x = stablehlo.multiply %a, %b : tensor<3x100000xi32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<3x100000xi32>, tensor<i32>) -> tensor<3xi32>
  %y = stablehlo.negate %x : tensor<3x100000xi32>
  return %s, %y : tensor<3xi32>, tensor<3x100000xi32>
}
)";
  const std::vector<RuntimeValue> args = {RuntimeValue(Pattern(ir::DType::kS32, {3, 100000}, 5)),
                                          RuntimeValue(Pattern(ir::DType::kS32, {3, 100000}, 6))};
  devices::InterpreterDevice interpreter;
  const auto want = RunOn(interpreter, split, args);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    ExpectSameValues(RunOn(*DeviceWith(threads), split, args), want);
  }
  EXPECT_EQ(StatsOf(split).split_reductions, 1);
  EXPECT_NE(KernelListing(split).find("[+multiply]"), std::string::npos);
}

// Through the device's pipeline: the fusion pass is its last (the dumps
// show the jitd.fusion ops), and the fused program serializes and loads.
TEST(CpuDeviceTest, PipelineFusesAndSerializedFusedProgramsLoad) {
  const std::string text = R"(
func.func @main(%a: tensor<64x512xf32>, %b: tensor<64x512xf32>) -> (tensor<64x512xf32>, tensor<64xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %x = stablehlo.add %a, %b : tensor<64x512xf32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<64x512xf32>, tensor<f32>) -> tensor<64xf32>
  %m = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<64xf32>) -> tensor<64x512xf32>
  %d = stablehlo.subtract %x, %m : tensor<64x512xf32>
  %e = stablehlo.exponential %d : tensor<64x512xf32>
  return %e, %s : tensor<64x512xf32>, tensor<64xf32>
}
)";
  std::vector<devices::CompileDump> dumps;
  devices::ProgramCompileOptions options;
  options.dumps = &dumps;
  options.verify_each = true;
  auto module = frontend::ParseModule(text);
  ASSERT_TRUE(module.ok());
  auto exe = devices::CompileProgram(Device(), std::shared_ptr<ir::Module>(std::move(*module)), options);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  bool fused_dump = false;
  for (const auto& d : dumps) {
    if (d.name.find("-fusion.mlir") != std::string::npos) {
      fused_dump = d.text.find("\"jitd.fusion\"") != std::string::npos &&
                   d.text.find("multi_output") != std::string::npos;
    }
  }
  EXPECT_TRUE(fused_dump);
  EXPECT_EQ(AsCpu(**exe).stats().kernels, 2);
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto loaded = Device().Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::vector<RuntimeValue> args = {RuntimeValue(Pattern(ir::DType::kF32, {64, 512}, 7)),
                                          RuntimeValue(Pattern(ir::DType::kF32, {64, 512}, 8))};
  auto a = (*exe)->Execute(args, {});
  auto b = (*loaded)->Execute(args, {});
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectSameValues(*a, *b);
  devices::InterpreterDevice interpreter;
  ExpectSameValues(*a, RunOn(interpreter, text, args));
}

// A fusion op codegen cannot emit (written by hand) runs on the
// interpreter's fallback, which evaluates its region.
TEST(CpuDeviceTest, UnemittableFusionOpFallsBack) {
  const std::string text = R"(
func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "jitd.fusion"(%a) <{kind = "loop"}> ({
  ^bb0(%x: tensor<4x4xf32>):
    %1 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.add %1, %x : tensor<4x4xf32>
    stablehlo.return %2 : tensor<4x4xf32>
  }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
)";
  ExpectLikeInterpreter(text, {RuntimeValue(Pattern(ir::DType::kF32, {4, 4}, 9))});
  EXPECT_EQ(StatsOf(text).fallback_ops, 1);
  EXPECT_EQ(StatsOf(text).kernels, 0);
}

TEST(CpuDeviceTest, RngBitGeneratorRunsInTheLibraryWithTheInterpretersBits) {
  // Every algorithm, the state threaded through two generators, the bits
  // consumed by a kernel (uniform floats in [1, 2) from the top mantissa bits).
  for (const char* algorithm : {"THREE_FRY", "PHILOX", "DEFAULT"}) {
    SCOPED_TRACE(algorithm);
    const std::string text = std::string(R"(
func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<5x7xui32>, tensor<9xf32>, tensor<3x4xui8>) {
  %s1, %bits = stablehlo.rng_bit_generator %s, algorithm = )") + algorithm + R"( : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5x7xui32>)
  %s2, %more = stablehlo.rng_bit_generator %s1, algorithm = )" + algorithm + R"( : (tensor<2xui64>) -> (tensor<2xui64>, tensor<9xui32>)
  %nine = stablehlo.constant dense<9> : tensor<9xui32>
  %one = stablehlo.constant dense<1065353216> : tensor<9xui32>
  %m = stablehlo.shift_right_logical %more, %nine : tensor<9xui32>
  %o = stablehlo.or %m, %one : tensor<9xui32>
  %f = stablehlo.bitcast_convert %o : (tensor<9xui32>) -> tensor<9xf32>
  %s3, %bytes = stablehlo.rng_bit_generator %s2, algorithm = )" + algorithm + R"( : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x4xui8>)
  return %s3, %bits, %f, %bytes : tensor<2xui64>, tensor<5x7xui32>, tensor<9xf32>, tensor<3x4xui8>
}
)";
    const CpuProgramStats& stats = StatsOf(text);
    EXPECT_EQ(stats.fallback_ops, 0);
    EXPECT_EQ(stats.library_ops, 3);
    ir::Literal state = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kU64, {2}));
    state.SetBits(0, 0x243F6A8885A308D3ull);
    state.SetBits(1, ~uint64_t{0} - 20);  // the counter wraps inside the program
    ExpectLikeInterpreter(text, {RuntimeValue(std::move(state))});
  }
}

// Literal of `t` and `dims` from raw element bits.
ir::Literal FromBits(ir::DType t, std::vector<int64_t> dims, const std::vector<uint64_t>& bits) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(t, std::move(dims)));
  for (size_t i = 0; i < bits.size(); ++i) lit.SetBits(static_cast<int64_t>(i), bits[i]);
  return lit;
}

// Every result byte for byte equal (NaN payloads included).
void ExpectSameBytes(const std::string& text, const std::vector<RuntimeValue>& args) {
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> got = RunOn(Device(), text, args);
  const std::vector<RuntimeValue> want = RunOn(interpreter, text, args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    const auto x = got[r].literal().bytes(), y = want[r].literal().bytes();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i], y[i]) << "result " << r << " byte " << i;
    }
  }
}

TEST(CpuDeviceTest, BitcastConvertAcrossWidthsIsAKernelBitForBit) {
  // Narrowing (a new minor dimension of pieces, low bits first), widening
  // (the minor dimension joined), equal widths between every kind of type,
  // fused with index maps on both sides; f16 / bf16 operands are read as
  // bits (signalling NaNs included), not through their f32 value, and
  // half results keep signalling NaNs too.
  const std::string text = R"(
func.func @main(%f: tensor<2x3xf32>, %h: tensor<8xf16>, %b: tensor<4x2xbf16>, %u: tensor<3xui64>, %z: tensor<2xcomplex<f32>>, %p: tensor<3xi1>) -> (tensor<3x2x2xf16>, tensor<2x3x4xi8>, tensor<4xui32>, tensor<2x4xui16>, tensor<3xf64>, tensor<3x2xui32>, tensor<3x4xbf16>, tensor<3xui64>, tensor<2xcomplex<f32>>, tensor<3xi1>, tensor<ui64>, tensor<2xf32>, tensor<8xf16>, tensor<2x4xbf16>, tensor<3x4xf16>) {
  %t = stablehlo.transpose %f, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %halves = stablehlo.bitcast_convert %t : (tensor<3x2xf32>) -> tensor<3x2x2xf16>
  %bytes = stablehlo.bitcast_convert %f : (tensor<2x3xf32>) -> tensor<2x3x4xi8>
  %hr = stablehlo.reshape %h : (tensor<8xf16>) -> tensor<4x2xf16>
  %words = stablehlo.bitcast_convert %hr : (tensor<4x2xf16>) -> tensor<4xui32>
  %bt = stablehlo.transpose %b, dims = [1, 0] : (tensor<4x2xbf16>) -> tensor<2x4xbf16>
  %bbits = stablehlo.bitcast_convert %bt : (tensor<2x4xbf16>) -> tensor<2x4xui16>
  %d = stablehlo.bitcast_convert %u : (tensor<3xui64>) -> tensor<3xf64>
  %pairs = stablehlo.bitcast_convert %u : (tensor<3xui64>) -> tensor<3x2xui32>
  %four = stablehlo.bitcast_convert %u : (tensor<3xui64>) -> tensor<3x4xbf16>
  %zr = stablehlo.reverse %z, dims = [0] : tensor<2xcomplex<f32>>
  %zz = stablehlo.bitcast_convert %zr : (tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
  %zb = stablehlo.bitcast_convert %d : (tensor<3xf64>) -> tensor<3xui64>
  %pp = stablehlo.bitcast_convert %p : (tensor<3xi1>) -> tensor<3xi1>
  %s = stablehlo.slice %pairs [1:2, 0:2] : (tensor<3x2xui32>) -> tensor<1x2xui32>
  %sr = stablehlo.reshape %s : (tensor<1x2xui32>) -> tensor<2xui32>
  %joined = stablehlo.bitcast_convert %sr : (tensor<2xui32>) -> tensor<ui64>
  %one = stablehlo.constant dense<1.5> : tensor<2xf32>
  %hh = stablehlo.slice %hr [1:2, 0:2] : (tensor<4x2xf16>) -> tensor<1x2xf16>
  %hh2 = stablehlo.reshape %hh : (tensor<1x2xf16>) -> tensor<2xf16>
  %w = stablehlo.bitcast_convert %hh2 : (tensor<2xf16>) -> tensor<f32>
  %wb = stablehlo.broadcast_in_dim %w, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %sum = stablehlo.add %wb, %one : tensor<2xf32>
  %hmoved = stablehlo.reverse %h, dims = [0] : tensor<8xf16>
  %bmoved = stablehlo.transpose %b, dims = [1, 0] : (tensor<4x2xbf16>) -> tensor<2x4xbf16>
  %hb = stablehlo.bitcast_convert %u : (tensor<3xui64>) -> tensor<3x4xf16>
  return %halves, %bytes, %words, %bbits, %d, %pairs, %four, %zb, %zz, %pp, %joined, %sum, %hmoved, %bmoved, %hb : tensor<3x2x2xf16>, tensor<2x3x4xi8>, tensor<4xui32>, tensor<2x4xui16>, tensor<3xf64>, tensor<3x2xui32>, tensor<3x4xbf16>, tensor<3xui64>, tensor<2xcomplex<f32>>, tensor<3xi1>, tensor<ui64>, tensor<2xf32>, tensor<8xf16>, tensor<2x4xbf16>, tensor<3x4xf16>
}
)";
  const CpuProgramStats& stats = StatsOf(text);
  EXPECT_EQ(stats.fallback_ops, 0);
  // f32: 1, -0, a subnormal, +inf, a quiet NaN with payload, 65504.
  const std::vector<uint64_t> f = {0x3F800000, 0x80000000, 0x00000001, 0x7F800000, 0x7FC01234, 0x477FE000};
  // f16: signalling NaNs (0x7C01, 0xFD55), quiet NaN, inf, -0, max, a subnormal, 1.
  const std::vector<uint64_t> h = {0x7C01, 0xFD55, 0x7E01, 0x7C00, 0x8000, 0x7BFF, 0x0001, 0x3C00};
  const std::vector<uint64_t> b = {0x7F81, 0xFFC1, 0x3F80, 0x0001, 0x8000, 0x7F80, 0x7F7F, 0x4049};
  const std::vector<uint64_t> u = {0x3FF0000000000000ull, 0x7FF0000000000001ull, 0x7C01FD5501237D01ull};
  const std::vector<uint64_t> z = {0xFF8000003F800000ull, 0x000000027FC00001ull};
  ExpectSameBytes(text, {RuntimeValue(FromBits(ir::DType::kF32, {2, 3}, f)),
                         RuntimeValue(FromBits(ir::DType::kF16, {8}, h)),
                         RuntimeValue(FromBits(ir::DType::kBF16, {4, 2}, b)),
                         RuntimeValue(FromBits(ir::DType::kU64, {3}, u)),
                         RuntimeValue(FromBits(ir::DType::kC64, {2}, z)),
                         RuntimeValue(FromBits(ir::DType::kPred, {3}, {1, 0, 1}))});
}

TEST(CpuDeviceTest, ReducePrecisionIsAKernelBitForBit) {
  // Rounding ties to even at the new mantissa width, overflow to infinity,
  // flush to zero below the new exponent range, NaN payloads unchanged, for
  // every float type and several formats (some wider than the type).
  const std::vector<std::pair<const char*, const char*>> formats = {
      {"e5m2", "format = e5m2"}, {"e8m7", "format = e8m7"}, {"e4m3", "format = e4m3"},
      {"e1m0", "format = e1m0"}, {"e11m52", "format = e11m52"}, {"e2m30", "format = e2m30"}};
  struct Case {
    const char* type;
    ir::DType dtype;
    std::vector<uint64_t> bits;
  };
  const std::vector<Case> cases = {
      {"f32", ir::DType::kF32,
       {0x3F800000, 0x3F900000, 0x3FB00000, 0x3FA00000, 0x7F7FFFFF, 0x00000001, 0x80800000, 0x7FC01234,
        0xFFA00001, 0x7F800000, 0x477FF000, 0x38800000, 0x3DFFFFFF, 0xC2F80000, 0x00000000, 0x80000000}},
      {"f64", ir::DType::kF64,
       {0x3FF0000000000000ull, 0x3FF1800000000000ull, 0x7FEFFFFFFFFFFFFFull, 0x0000000000000001ull,
        0x7FF0000000000001ull, 0xFFF8000000000123ull, 0xC0E0000000000000ull, 0x3F1FFFFFFFFFFFFFull,
        0x7FF0000000000000ull, 0x8000000000000000ull, 0x4321234567898765ull, 0x3E9FFFFFFF000000ull,
        0x0010000000000000ull, 0x40FFFFF000000000ull, 0x3FF0000010000000ull, 0xBFF0000018000000ull}},
      {"f16", ir::DType::kF16,
       {0x3C00, 0x3C80, 0x3D80, 0x7BFF, 0x0001, 0x8400, 0x7E01, 0xFE55, 0x7C00, 0x4B80, 0x2000, 0x37FF,
        0x0000, 0x8000, 0x5A5A, 0xC3C3}},
      {"bf16", ir::DType::kBF16,
       {0x3F80, 0x3F90, 0x3FB0, 0x7F7F, 0x0001, 0x8080, 0x7FC1, 0xFFC5, 0x7F80, 0x4380, 0x3800, 0x3DFF,
        0x0000, 0x8000, 0x5A5A, 0xC3C3}},
  };
  for (const Case& c : cases) {
    for (const auto& [name, attrs] : formats) {
      SCOPED_TRACE(std::string(c.type) + " " + name);
      const std::string t = std::string("tensor<4x4x") + c.type + ">";
      // Also through a transpose and as the operand of a bitcast (bits in
      // an integer result).
      const std::string it = std::string("tensor<4x4x") + (ir::StorageBytes(c.dtype) == 8 ? "ui64" : ir::StorageBytes(c.dtype) == 4 ? "ui32" : "ui16") + ">";
      const std::string text = "func.func @main(%x: " + t + ") -> (" + t + ", " + it + ") {\n" +
                               "  %0 = stablehlo.reduce_precision %x, " + attrs + " : " + t + "\n" +
                               "  %1 = stablehlo.transpose %x, dims = [1, 0] : (" + t + ") -> " + t + "\n" +
                               "  %2 = stablehlo.reduce_precision %1, " + attrs + " : " + t + "\n" +
                               "  %3 = stablehlo.bitcast_convert %2 : (" + t + ") -> " + it + "\n" +
                               "  return %0, %3 : " + t + ", " + it + "\n}\n";
      EXPECT_EQ(StatsOf(text).fallback_ops, 0);
      std::vector<uint64_t> bits = c.bits;
      const RuntimeValue x(FromBits(c.dtype, {4, 4}, bits));
      devices::InterpreterDevice interpreter;
      const std::vector<RuntimeValue> got = RunOn(Device(), text, {x});
      const std::vector<RuntimeValue> want = RunOn(interpreter, text, {x});
      ASSERT_EQ(got.size(), 2u);
      ASSERT_EQ(want.size(), 2u);
      // Both results in every bit (NaN payloads, signalling ones included).
      EXPECT_TRUE(got[1].literal() == want[1].literal());
      const ir::Literal& g = got[0].literal();
      const ir::Literal& w = want[0].literal();
      for (int64_t i = 0; i < g.num_elements(); ++i) EXPECT_EQ(g.GetBits(i), w.GetBits(i)) << i;
    }
  }
}

TEST(CpuDeviceTest, ComplexTranscendentalsCallTheInterpretersFunctionsBitForBit) {
  // Kernels call jit/eval's own per-element functions (jit/eval/scalar_math.h),
  // so even the inexact ones agree with the interpreter in every bit: zeros,
  // infinities, NaNs, huge and tiny parts, branch cuts.
  const double inf = INFINITY, nan = std::nan("");
  const std::vector<double> re = {0.5, -0.0, 0.0, inf, -inf, nan, 1e300, -3.25, 1e-310, 0.0, 2.0, -1.0};
  const std::vector<double> im = {-1.25, 0.0, -0.0, 1.0, nan, 2.0, -1e300, 0.0, 1e-300, inf, -0.0, 1e-20};
  const char* unary[] = {"stablehlo.exponential", "stablehlo.exponential_minus_one", "stablehlo.log",
                         "stablehlo.log_plus_one", "stablehlo.logistic", "stablehlo.sqrt", "stablehlo.rsqrt",
                         "stablehlo.cbrt", "stablehlo.sine", "stablehlo.cosine", "stablehlo.tan",
                         "stablehlo.tanh", "stablehlo.sign", "chlo.acos", "chlo.acosh", "chlo.asin",
                         "chlo.asinh", "chlo.atan", "chlo.atanh", "chlo.cosh", "chlo.sinh", "chlo.tan",
                         "chlo.square"};
  const char* binary[] = {"stablehlo.power", "stablehlo.atan2", "stablehlo.remainder"};
  for (const char* ct : {"complex<f32>", "complex<f64>"}) {
    const std::string t = std::string("tensor<12x") + ct + ">";
    std::string body, results, types;
    int k = 0;
    auto add = [&](const std::string& line) {
      body += "  %r" + std::to_string(k) + " = " + line + "\n";
      results += (k ? ", %r" : "%r") + std::to_string(k);
      types += (k ? ", " : "") + t;
      ++k;
    };
    for (const char* op : unary) {
      const bool chlo = std::string_view(op).substr(0, 5) == "chlo.";
      add(std::string(op) + " %z : " + t + (chlo ? " -> " + t : ""));
    }
    for (const char* op : binary) add(std::string(op) + " %z, %w : " + t);
    // Fused behind other kernel ops.
    add("stablehlo.add %r0, %r2 : " + t);
    const std::string text = "func.func @main(%a: tensor<12xf64>, %b: tensor<12xf64>) -> (" + types + ") {\n" +
                             "  %c = stablehlo.complex %a, %b : tensor<12xcomplex<f64>>\n" +
                             "  %z = stablehlo.convert %c : (tensor<12xcomplex<f64>>) -> " + t + "\n" +
                             "  %w = stablehlo.reverse %z, dims = [0] : " + t + "\n" + body +
                             "  return " + results + " : " + types + "\n}\n";
    SCOPED_TRACE(text);
    EXPECT_EQ(StatsOf(text).fallback_ops, 0);
    ExpectSameBytes(text, {RuntimeValue(Floats(ir::DType::kF64, re)), RuntimeValue(Floats(ir::DType::kF64, im))});
  }
}

TEST(CpuDeviceTest, SpecialFunctionsCallTheInterpretersFunctionsBitForBit) {
  // lgamma, digamma, erf_inv, bessel_i1e and CHLO's cosh / sinh (f32
  // lowering for f32 / f16 / bf16, f64 for f64), rounded once into the type.
  const double inf = INFINITY, nan = std::nan("");
  const std::vector<double> x = {0.5, -0.0, 0.0, inf, -inf, nan, -3.0, 2.5, 1e-30, -0.75, 0.999, 30.0,
                                 -1.5, 170.5, 1e5, 0.1};
  for (const char* ft : {"f32", "f64", "f16", "bf16"}) {
    const std::string t = std::string("tensor<16x") + ft + ">";
    std::string body, results, types;
    int k = 0;
    for (const char* op : {"chlo.lgamma", "chlo.digamma", "chlo.erf_inv", "chlo.bessel_i1e", "chlo.cosh", "chlo.sinh"}) {
      body += "  %r" + std::to_string(k) + " = " + op + " %x : " + t + " -> " + t + "\n";
      results += (k ? ", %r" : "%r") + std::to_string(k);
      types += (k ? ", " : "") + t;
      ++k;
    }
    const std::string text = "func.func @main(%a: tensor<16xf64>) -> (" + types + ") {\n" +
                             "  %x = stablehlo.convert %a : (tensor<16xf64>) -> " + t + "\n" + body +
                             "  return " + results + " : " + types + "\n}\n";
    SCOPED_TRACE(text);
    EXPECT_EQ(StatsOf(text).fallback_ops, 0);
    ExpectSameBytes(text, {RuntimeValue(Floats(ir::DType::kF64, x))});
  }
}

TEST(CpuDeviceTest, KernelsCallingTheInterpretersMathLoadFromASerializedExecutable) {
  // The object file names jit/eval's functions; a fresh device (its own
  // JIT) resolves them when it links the deserialized kernels.
  const std::string text = R"(
func.func @main(%z: tensor<6xcomplex<f64>>, %x: tensor<6xf32>) -> (tensor<6xcomplex<f64>>, tensor<6xf32>) {
  %e = stablehlo.exponential %z : tensor<6xcomplex<f64>>
  %p = stablehlo.power %e, %z : tensor<6xcomplex<f64>>
  %l = chlo.lgamma %x : tensor<6xf32> -> tensor<6xf32>
  return %p, %l : tensor<6xcomplex<f64>>, tensor<6xf32>
}
)";
  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ(static_cast<const CpuExecutable&>(**exe).stats().fallback_ops, 0);
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto other = CpuDevice::Create(CpuDeviceOptions{});
  ASSERT_TRUE(other.ok());
  auto loaded = (*other)->Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ir::Literal z = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kC128, {6}));
  for (int64_t i = 0; i < 6; ++i) z.SetComplex(i, {0.3 * static_cast<double>(i) - 1, 0.7 - 0.2 * static_cast<double>(i)});
  const std::vector<RuntimeValue> args = {RuntimeValue(z),
                                          RuntimeValue(Floats(ir::DType::kF32, {0.5, -2.5, 3, 1e-3, 7.25, -0.1}))};
  auto b = (*loaded)->Execute(args, {});
  ASSERT_TRUE(b.ok()) << b.status().message();
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> want = RunOn(interpreter, text, args);
  ASSERT_EQ(b->size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE((*b)[r].literal() == want[r].literal()) << r;
}

TEST(CpuDeviceTest, ComplexReductionsAreKernelsStepByStepLikeTheInterpreter) {
  // Sums (component-wise, rounded every step), products (the long double
  // multiply) and a lexicographic maximum with an index, in the
  // interpreter's order: long ones are neither reassociated nor split.
  for (const char* ct : {"complex<f32>", "complex<f64>"}) {
    SCOPED_TRACE(ct);
    const std::string c = ct;
    const std::string text = R"(
func.func @main(%a: tensor<3x70000xf64>, %b: tensor<3x70000xf64>) -> (tensor<3xCT>, tensor<70000xCT>, tensor<3xCT>, tensor<3xi32>) {
  %c = stablehlo.complex %a, %b : tensor<3x70000xcomplex<f64>>
  %z = stablehlo.convert %c : (tensor<3x70000xcomplex<f64>>) -> tensor<3x70000xCT>
  %zero = stablehlo.constant dense<(0.0, -0.0)> : tensor<CT>
  %one = stablehlo.constant dense<(1.0, 0.0)> : tensor<CT>
  %sum = stablehlo.reduce(%z init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<3x70000xCT>, tensor<CT>) -> tensor<3xCT>
  %prod = stablehlo.reduce(%z init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<3x70000xCT>, tensor<CT>) -> tensor<70000xCT>
  %iota = stablehlo.iota dim = 1 : tensor<3x70000xi32>
  %ninf = stablehlo.constant dense<(0xFF800000, 0.0)> : tensor<CT>
  %m0 = stablehlo.constant dense<-1> : tensor<i32>
  %max:2 = stablehlo.reduce(%z init: %ninf), (%iota init: %m0) across dimensions = [1] : (tensor<3x70000xCT>, tensor<3x70000xi32>, tensor<CT>, tensor<i32>) -> (tensor<3xCT>, tensor<3xi32>)
   reducer(%x: tensor<CT>, %y: tensor<CT>) (%i: tensor<i32>, %j: tensor<i32>) {
    %gt = stablehlo.compare GT, %x, %y : (tensor<CT>, tensor<CT>) -> tensor<i1>
    %v = stablehlo.select %gt, %x, %y : tensor<i1>, tensor<CT>
    %k = stablehlo.select %gt, %i, %j : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<CT>, tensor<i32>
  }
  return %sum, %prod, %max#0, %max#1 : tensor<3xCT>, tensor<70000xCT>, tensor<3xCT>, tensor<3xi32>
}
)";
    std::string program = text;
    for (size_t pos; (pos = program.find("CT")) != std::string::npos;) program.replace(pos, 2, c);
    const CpuProgramStats& stats = StatsOf(program);
    EXPECT_EQ(stats.fallback_ops, 0);
    EXPECT_EQ(stats.split_reductions, 0);
    ir::Literal a = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF64, {3, 70000}));
    ir::Literal b = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF64, {3, 70000}));
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      a.SetDouble(i, std::sin(0.37 * static_cast<double>(i)) * 1.3 + 1e-9 * static_cast<double>(i % 11));
      b.SetDouble(i, std::cos(0.11 * static_cast<double>(i)) * 0.9);
    }
    ExpectSameBytes(program, {RuntimeValue(std::move(a)), RuntimeValue(std::move(b))});
  }
}

TEST(CpuDeviceTest, ReduceWindowBodiesTheLibraryDoesNotFoldAreCompiled) {
  // Complex sums and products, a lexicographic complex maximum and a
  // two-input selection (value and index) over windows with strides,
  // padding and base / window dilation: the library runs them with a
  // compiled body, in the interpreter's window order, bit for bit; also
  // from a serialized executable on a fresh device.
  const std::string text = R"(
func.func @main(%a: tensor<6x7xf64>, %b: tensor<6x7xf64>) -> (tensor<3x4xcomplex<f32>>, tensor<6x7xcomplex<f64>>, tensor<4x5xcomplex<f32>>, tensor<4x3xf32>, tensor<4x3xi32>) {
  %c = stablehlo.complex %a, %b : tensor<6x7xcomplex<f64>>
  %z = stablehlo.convert %c : (tensor<6x7xcomplex<f64>>) -> tensor<6x7xcomplex<f32>>
  %zero = stablehlo.constant dense<(0.0, 0.0)> : tensor<complex<f32>>
  %one = stablehlo.constant dense<(1.0, 0.0)> : tensor<complex<f64>>
  %sum = "stablehlo.reduce_window"(%z, %zero) <{window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 2, 2>, padding = dense<[[1, 0], [0, 1]]> : tensor<2x2xi64>}> ({
  ^bb0(%x: tensor<complex<f32>>, %y: tensor<complex<f32>>):
    %s = stablehlo.add %x, %y : tensor<complex<f32>>
    stablehlo.return %s : tensor<complex<f32>>
  }) : (tensor<6x7xcomplex<f32>>, tensor<complex<f32>>) -> tensor<3x4xcomplex<f32>>
  %prod = "stablehlo.reduce_window"(%c, %one) <{window_dimensions = array<i64: 8, 1>, padding = dense<[[7, 0], [0, 0]]> : tensor<2x2xi64>}> ({
  ^bb0(%x: tensor<complex<f64>>, %y: tensor<complex<f64>>):
    %p = stablehlo.multiply %x, %y : tensor<complex<f64>>
    stablehlo.return %p : tensor<complex<f64>>
  }) : (tensor<6x7xcomplex<f64>>, tensor<complex<f64>>) -> tensor<6x7xcomplex<f64>>
  %ninf = stablehlo.constant dense<(0xFF800000, 0.0)> : tensor<complex<f32>>
  %max = "stablehlo.reduce_window"(%z, %ninf) <{window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 1, 3>, base_dilations = array<i64: 1, 2>, window_dilations = array<i64: 2, 1>, padding = dense<[[0, 0], [1, 2]]> : tensor<2x2xi64>}> ({
  ^bb0(%x: tensor<complex<f32>>, %y: tensor<complex<f32>>):
    %gt = stablehlo.compare GT, %x, %y : (tensor<complex<f32>>, tensor<complex<f32>>) -> tensor<i1>
    %m = stablehlo.select %gt, %x, %y : tensor<i1>, tensor<complex<f32>>
    stablehlo.return %m : tensor<complex<f32>>
  }) : (tensor<6x7xcomplex<f32>>, tensor<complex<f32>>) -> tensor<4x5xcomplex<f32>>
  %f = stablehlo.convert %a : (tensor<6x7xf64>) -> tensor<6x7xf32>
  %i = stablehlo.iota dim = 1 : tensor<6x7xi32>
  %big = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %m1 = stablehlo.constant dense<-1> : tensor<i32>
  %sel:2 = "stablehlo.reduce_window"(%f, %i, %big, %m1) <{window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 1, 2>, padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 2, 1>}> ({
  ^bb0(%x: tensor<f32>, %k: tensor<i32>, %y: tensor<f32>, %l: tensor<i32>):
    %le = stablehlo.compare LE, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %le, %x, %y : tensor<i1>, tensor<f32>
    %j = stablehlo.select %le, %k, %l : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }) : (tensor<6x7xf32>, tensor<6x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<4x3xf32>, tensor<4x3xi32>)
  return %sum, %prod, %max, %sel#0, %sel#1 : tensor<3x4xcomplex<f32>>, tensor<6x7xcomplex<f64>>, tensor<4x5xcomplex<f32>>, tensor<4x3xf32>, tensor<4x3xi32>
}
)";
  const CpuProgramStats& stats = StatsOf(text);
  EXPECT_EQ(stats.fallback_ops, 0);
  EXPECT_EQ(stats.library_ops, 4);
  std::vector<double> a, b;
  for (int i = 0; i < 42; ++i) {
    a.push_back(std::sin(1.7 * i) * 3 + (i % 5 == 0 ? 1.0 / 3 : 0.0));
    b.push_back(std::cos(0.9 * i) * (i % 7 == 3 ? 0.0 : 2.0));
  }
  a[10] = INFINITY;
  b[11] = std::nan("");
  auto shaped = [](std::vector<double> v) {
    ir::Literal l = Floats(ir::DType::kF64, v);
    return RuntimeValue(*ir::Literal::FromBytes(ir::Type::Tensor(ir::DType::kF64, {6, 7}),
                                                std::vector<uint8_t>(l.bytes().begin(), l.bytes().end())));
  };
  const std::vector<RuntimeValue> args = {shaped(a), shaped(b)};
  ExpectSameBytes(text, args);

  auto exe = Device().Compile(ParseOrFail(text));
  ASSERT_TRUE(exe.ok());
  auto bytes = Device().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto other = CpuDevice::Create(CpuDeviceOptions{});
  ASSERT_TRUE(other.ok());
  auto loaded = (*other)->Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto got = (*loaded)->Execute(args, {});
  ASSERT_TRUE(got.ok()) << got.status().message();
  devices::InterpreterDevice interpreter;
  const std::vector<RuntimeValue> want = RunOn(interpreter, text, args);
  ASSERT_EQ(got->size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    const auto x = (*got)[r].literal().bytes(), y = want[r].literal().bytes();
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << "result " << r;
  }
}

TEST(CpuDeviceTest, EightBitFloatsComputeInKernelsBitForBit) {
  // Every 8-bit float kernels take: arithmetic rounded once per op (in f32,
  // then jit/ir's EncodeFloat), saturation / overflow, NaN encodings, no
  // negative zero in the FNUZ types, converts from f64 / f32 / i32 and back,
  // compare, select, max / min, constants, index maps.
  const double inf = INFINITY, nan = std::nan("");
  const std::vector<double> a = {1.0, -0.0, 0.3, 448.0, 500.0, -1e6, nan, inf, 1.0 / 64, 3e-3, -2.75, 57344.0,
                                 0.0625, 1e-9, 240.0, 7.5};
  const std::vector<double> b = {3.0, 0.0, -0.1, 2.0, -448.0, 1e-3, 1.0, -inf, 1.0 / 1024, 0.5, 2.75, 1.5,
                                 -0.0625, 8.0, 16.0, nan};
  for (const char* t : {"f8E3M4", "f8E4M3", "f8E4M3FN", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E5M2", "f8E5M2FNUZ"}) {
    SCOPED_TRACE(t);
    std::string text = R"(
func.func @main(%a: tensor<16xf64>, %b: tensor<16xf64>, %i: tensor<16xi32>) -> (tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xf32>, tensor<16xi32>, tensor<16xi1>, tensor<4x4xT>, tensor<16xT>, tensor<16xT>) {
  %x = stablehlo.convert %a : (tensor<16xf64>) -> tensor<16xT>
  %bf = stablehlo.convert %b : (tensor<16xf64>) -> tensor<16xf32>
  %y = stablehlo.convert %bf : (tensor<16xf32>) -> tensor<16xT>
  %s = stablehlo.add %x, %y : tensor<16xT>
  %d = stablehlo.subtract %x, %y : tensor<16xT>
  %m = stablehlo.multiply %x, %y : tensor<16xT>
  %q = stablehlo.divide %x, %y : tensor<16xT>
  %n = stablehlo.negate %x : tensor<16xT>
  %ab = stablehlo.abs %n : tensor<16xT>
  %sq = stablehlo.sqrt %ab : tensor<16xT>
  %mx = stablehlo.maximum %s, %q : tensor<16xT>
  %back = stablehlo.convert %mx : (tensor<16xT>) -> tensor<16xf32>
  %toi = stablehlo.convert %m : (tensor<16xT>) -> tensor<16xi32>
  %lt = stablehlo.compare LT, %x, %y, FLOAT : (tensor<16xT>, tensor<16xT>) -> tensor<i1>
  %sel = stablehlo.select %lt, %x, %y : tensor<16xi1>, tensor<16xT>
  %r = stablehlo.reshape %sel : (tensor<16xT>) -> tensor<4x4xT>
  %tr = stablehlo.transpose %r, dims = [1, 0] : (tensor<4x4xT>) -> tensor<4x4xT>
  %fi = stablehlo.convert %i : (tensor<16xi32>) -> tensor<16xT>
  %c = stablehlo.constant dense<1.5> : tensor<16xT>
  %fc = stablehlo.multiply %fi, %c : tensor<16xT>
  return %s, %d, %q, %n, %sq, %mx, %back, %toi, %lt, %tr, %fi, %fc : tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xf32>, tensor<16xi32>, tensor<16xi1>, tensor<4x4xT>, tensor<16xT>, tensor<16xT>
}
)";
    for (size_t pos; (pos = text.find("xT>")) != std::string::npos;) text.replace(pos, 3, std::string("x") + t + ">");
    // compare's result type is i1 per element, select's predicate too.
    for (size_t pos; (pos = text.find("-> tensor<i1>")) != std::string::npos;) text.replace(pos, 13, "-> tensor<16xi1>");
    EXPECT_EQ(StatsOf(text).fallback_ops, 0);
    ExpectSameBytes(text, {RuntimeValue(Floats(ir::DType::kF64, a)), RuntimeValue(Floats(ir::DType::kF64, b)),
                           RuntimeValue(Ints(ir::DType::kS32, {0, 1, -3, 17, 300, -1000, 100000, 9, 33, 65, 129, -129,
                                                               255, 511, 7, -7}))});
  }
}

TEST(CpuDeviceTest, SubByteIntegersComputeInKernelsBitForBit) {
  // i2 / i4 / ui2 / ui4 wrap in their width; division and remainder by zero
  // and MIN / -1, shifts by the width or more, saturating float converts,
  // counts, a reduction; stored one per byte, zero-extended, as jit/ir does.
  for (const char* t : {"i4", "ui4", "i2", "ui2"}) {
    SCOPED_TRACE(t);
    std::string text = R"(
func.func @main(%a: tensor<16xi32>, %b: tensor<16xi32>, %f: tensor<16xf32>) -> (tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xi32>, tensor<16xf32>, tensor<16xi1>, tensor<16xT>, tensor<T>, tensor<16xT>) {
  %x = stablehlo.convert %a : (tensor<16xi32>) -> tensor<16xT>
  %y = stablehlo.convert %b : (tensor<16xi32>) -> tensor<16xT>
  %s = stablehlo.add %x, %y : tensor<16xT>
  %m = stablehlo.multiply %x, %y : tensor<16xT>
  %q = stablehlo.divide %x, %y : tensor<16xT>
  %r = stablehlo.remainder %x, %y : tensor<16xT>
  %sl = stablehlo.shift_left %x, %y : tensor<16xT>
  %sr = stablehlo.shift_right_arithmetic %x, %y : tensor<16xT>
  %srl = stablehlo.shift_right_logical %x, %y : tensor<16xT>
  %n = stablehlo.negate %x : tensor<16xT>
  %pc = stablehlo.popcnt %x : tensor<16xT>
  %cl = stablehlo.count_leading_zeros %y : tensor<16xT>
  %wide = stablehlo.convert %s : (tensor<16xT>) -> tensor<16xi32>
  %fl = stablehlo.convert %m : (tensor<16xT>) -> tensor<16xf32>
  %lt = stablehlo.compare LT, %x, %y : (tensor<16xT>, tensor<16xT>) -> tensor<16xi1>
  %fx = stablehlo.convert %f : (tensor<16xf32>) -> tensor<16xT>
  %zero = stablehlo.constant dense<0> : tensor<T>
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<16xT>, tensor<T>) -> tensor<T>
  %mx = stablehlo.maximum %x, %fx : tensor<16xT>
  return %s, %m, %q, %r, %sl, %sr, %srl, %n, %pc, %cl, %wide, %fl, %lt, %fx, %sum, %mx : tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xi32>, tensor<16xf32>, tensor<16xi1>, tensor<16xT>, tensor<T>, tensor<16xT>
}
)";
    for (size_t pos; (pos = text.find("xT>")) != std::string::npos;) text.replace(pos, 3, std::string("x") + t + ">");
    for (size_t pos; (pos = text.find("<T>")) != std::string::npos;) text.replace(pos, 3, std::string("<") + t + ">");
    EXPECT_EQ(StatsOf(text).fallback_ops, 0);
    ExpectSameBytes(text, {RuntimeValue(Ints(ir::DType::kS32, {7, -8, 3, -1, 0, 5, -3, 2, 15, 1, -2, 6, 4, -5, 8, 9})),
                           RuntimeValue(Ints(ir::DType::kS32, {0, -1, 2, 0, 3, 4, 1, -4, 1, 7, 2, 5, -1, 3, 2, 16})),
                           RuntimeValue(Floats(ir::DType::kF32, {1.5, -9, 100, -0.5, NAN, INFINITY, -INFINITY, 2.99,
                                                                 7.5, -7.5, 0, 3, -3, 1e9, -1e9, 1}))});
  }
}

}  // namespace
}  // namespace jitd::cpu
