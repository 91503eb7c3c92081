// Deadlines and cancellation inside long executions (issue 13, item 5): an
// endless while loop, a long kernel, long library calls stop soon after the
// deadline passes or the cancel flag is set (devices/device.h lists the
// check points). Every execution here is bounded by its deadline or by a
// thread that sets the flag; a device that ignored both would hang the test
// until ctest's timeout, so each case also carries a far backstop deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "devices/compile.h"
#include "devices/device.h"
#include "jit/frontend/parser.h"

namespace jitd::devices {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// How far past the deadline (or the cancel) an execution may return:
// generous for a loaded 2-core machine; the measured overshoot is printed.
constexpr double kSlackMs = 250;

StatusOr<std::unique_ptr<Executable>> Compile(const std::string& device_name, const std::string& text) {
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<Device> device, CreateDevice(device_name));
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, frontend::ParseModule(text));
  // The executable keeps its device alive (cpu) or needs none (interpreter).
  return CompileProgram(*device, std::shared_ptr<ir::Module>(std::move(module)));
}

// Zero-filled arguments of the executable's types.
std::vector<eval::RuntimeValue> ZeroArgs(const Executable& exe) {
  std::vector<eval::RuntimeValue> args;
  for (const ir::Type& t : exe.argument_types()) args.emplace_back(*ir::Literal::Create(t));
  return args;
}

// The condition is always true (the loop counts past overflow, in i64).
constexpr char kEndlessWhile[] = R"(
func.func @main(%x: tensor<i64>) -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r = stablehlo.while(%i = %x) : tensor<i64>
    cond {
      %t = stablehlo.compare GE, %i, %i, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %n = stablehlo.add %i, %one : tensor<i64>
      stablehlo.return %n : tensor<i64>
    }
  return %r : tensor<i64>
})";

// One fused elementwise kernel over 2^24 f32 with a chain of 64
// transcendental ops per element: seconds of work without a deadline.
std::string LongKernel() {
  std::string text =
      "func.func @main(%x: tensor<16777216xf32>) -> tensor<16777216xf32> {\n"
      "  %v0 = stablehlo.sine %x : tensor<16777216xf32>\n";
  for (int i = 1; i < 64; ++i) {
    const char* op = i % 2 ? "stablehlo.exponential" : "stablehlo.sine";
    text += "  %v" + std::to_string(i) + " = " + op + " %v" + std::to_string(i - 1) + " : tensor<16777216xf32>\n";
  }
  return text + "  return %v63 : tensor<16777216xf32>\n}\n";
}

// A loop-free reduction of 2^26 elements, each a chain of transcendentals
// of an iota (no big argument): a split reduction kernel.
std::string LongReduce() {
  std::string text =
      "func.func @main() -> tensor<f32> {\n"
      "  %x = stablehlo.iota dim = 0 : tensor<67108864xf32>\n"
      "  %v0 = stablehlo.sine %x : tensor<67108864xf32>\n";
  for (int i = 1; i < 16; ++i) {
    const char* op = i % 2 ? "stablehlo.exponential" : "stablehlo.sine";
    text += "  %v" + std::to_string(i) + " = " + op + " %v" + std::to_string(i - 1) + " : tensor<67108864xf32>\n";
  }
  return text +
         "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
         "  %r = stablehlo.reduce(%v15 init: %zero) applies stablehlo.add across dimensions = [0] : "
         "(tensor<67108864xf32>, tensor<f32>) -> tensor<f32>\n"
         "  return %r : tensor<f32>\n}\n";
}

// A library call: reduce_window summing 64x64 windows into 2048x2048
// results (~1.7e10 additions).
constexpr char kLongReduceWindow[] = R"(
func.func @main(%x: tensor<2111x2111xf32>) -> tensor<2048x2048xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %zero) <{window_dimensions = array<i64: 64, 64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) : (tensor<2111x2111xf32>, tensor<f32>) -> tensor<2048x2048xf32>
  return %r : tensor<2048x2048xf32>
})";

// A dot_general of two 4096x4096 f32 matrices (OpenBLAS; ~7e10
// multiply-adds).
constexpr char kLongDot[] = R"(
func.func @main(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %r : tensor<4096x4096xf32>
})";

// A 2-d fft of 4096x4096 complex<f32> (KISS FFT, one thread: ~4 s).
constexpr char kLongFft[] = R"(
func.func @main(%x: tensor<4096x4096xcomplex<f32>>) -> tensor<4096x4096xcomplex<f32>> {
  %r = stablehlo.fft %x, type = FFT, length = [4096, 4096] : (tensor<4096x4096xcomplex<f32>>) -> tensor<4096x4096xcomplex<f32>>
  return %r : tensor<4096x4096xcomplex<f32>>
})";

// Runs `exe` on zeros with a deadline `deadline_ms` from the start (or only
// a far backstop) and, with `cancel_ms`, a thread that sets the cancel flag
// that long after the start (0: before it); returns the status and the milliseconds the
// execution took.
std::pair<Status, double> RunTimed(const Executable& exe, std::optional<int> deadline_ms,
                                   std::optional<int> cancel_ms = std::nullopt) {
  const std::vector<eval::RuntimeValue> args = ZeroArgs(exe);
  // A device that runs on buffers gets its results' buffers allocated and
  // touched before the clock starts, as the daemon's are (they live in the
  // client's shared memory): what is timed is the execution, not the first
  // touch of 128 MiB of result pages (300 ms and more on a paravirtualized
  // VM, before the first deadline check could run).
  std::vector<const void*> arg_ptrs;
  std::vector<std::vector<uint8_t>> out_buffers;
  std::vector<void*> out_ptrs;
  if (exe.runs_on_buffers()) {
    for (const eval::RuntimeValue& a : args) arg_ptrs.push_back(a.literal().bytes().data());
    for (const ir::Type& t : exe.result_types()) {
      out_buffers.emplace_back(static_cast<size_t>(t.byte_size()), uint8_t{1});
      out_ptrs.push_back(out_buffers.back().data());
    }
  }
  std::atomic<bool> cancel{false};
  ExecuteOptions options;
  const Clock::time_point start = Clock::now();
  // The backstop: a device that ignored the cancel flag would still return.
  options.deadline = start + milliseconds(deadline_ms.value_or(20'000));
  if (cancel_ms) options.cancel = &cancel;
  if (cancel_ms == 0) cancel.store(true);  // cancelled before it starts
  std::thread canceller([&] {
    if (!cancel_ms || *cancel_ms == 0) return;
    std::this_thread::sleep_until(start + milliseconds(*cancel_ms));
    cancel.store(true);
  });
  Status status = exe.runs_on_buffers() ? exe.Run(arg_ptrs, out_ptrs, options)
                                        : exe.Execute(args, options).status();
  const double ms = MillisSince(start);
  canceller.join();
  return {status, ms};
}

class DeadlineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeadlineTest, EndlessWhileStopsAtTheDeadline) {
  auto exe = Compile(GetParam(), kEndlessWhile);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  constexpr int kDeadlineMs = 200;
  auto [status, ms] = RunTimed(**exe, kDeadlineMs);
  std::printf("%s endless while: %s after %.1f ms (deadline %d ms)\n", GetParam().c_str(),
              status.ToString().c_str(), ms, kDeadlineMs);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_GE(ms, kDeadlineMs);
  EXPECT_LT(ms, kDeadlineMs + kSlackMs);
}

TEST_P(DeadlineTest, EndlessWhileStopsWhenCancelled) {
  auto exe = Compile(GetParam(), kEndlessWhile);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  constexpr int kCancelMs = 100;
  auto [status, ms] = RunTimed(**exe, std::nullopt, kCancelMs);
  std::printf("%s endless while, cancelled at %d ms: %s after %.1f ms\n", GetParam().c_str(), kCancelMs,
              status.ToString().c_str(), ms);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("cancelled"), std::string::npos) << status.ToString();
  EXPECT_GE(ms, kCancelMs);
  EXPECT_LT(ms, kCancelMs + kSlackMs);
}

TEST_P(DeadlineTest, CancelledBeforeItStartsRunsNothing) {
  auto exe = Compile(GetParam(), kEndlessWhile);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto [status, ms] = RunTimed(**exe, std::nullopt, 0);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_LT(ms, kSlackMs);
}

INSTANTIATE_TEST_SUITE_P(Devices, DeadlineTest, ::testing::Values("interpreter", "cpu"),
                         [](const auto& info) { return info.param; });

// The cpu device checks inside kernels and library calls, between slices.
struct LongCase {
  const char* name;
  std::string text;
};

class CpuLongOpTest : public ::testing::TestWithParam<int> {
 protected:
  static LongCase Case(int i) {
    switch (i) {
      case 0: return {"elementwise kernel", LongKernel()};
      case 1: return {"split reduction kernel", LongReduce()};
      case 2: return {"reduce_window library call", kLongReduceWindow};
      case 3: return {"dot_general (BLAS) library call", kLongDot};
      default: return {"fft library call", kLongFft};
    }
  }
};

TEST_P(CpuLongOpTest, StopsNearTheDeadline) {
  const LongCase c = Case(GetParam());
  auto exe = Compile("cpu", c.text);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  constexpr int kDeadlineMs = 100;
  auto [status, ms] = RunTimed(**exe, kDeadlineMs);
  std::printf("cpu %s: %s after %.1f ms (deadline %d ms)\n", c.name, status.ToString().c_str(), ms, kDeadlineMs);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_LT(ms, kDeadlineMs + kSlackMs);
}

TEST_P(CpuLongOpTest, StopsWhenCancelled) {
  const LongCase c = Case(GetParam());
  auto exe = Compile("cpu", c.text);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  constexpr int kCancelMs = 100;
  auto [status, ms] = RunTimed(**exe, std::nullopt, kCancelMs);
  std::printf("cpu %s, cancelled at %d ms: %s after %.1f ms\n", c.name, kCancelMs, status.ToString().c_str(), ms);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_LT(ms, kCancelMs + kSlackMs);
}

INSTANTIATE_TEST_SUITE_P(Ops, CpuLongOpTest, ::testing::Values(0, 1, 2, 3, 4));

// With a deadline (far away) kernels run in slices and library loops check
// between slices: the results are those of a run without one, bit for bit.
TEST(CpuSlicedRunTest, SameResultsWithAFarDeadline) {
  const std::string programs[] = {
      // Elementwise over 2^21, a split reduction over 2^22, a reduce_window.
      R"(
func.func @main(%x: tensor<2097152xf32>) -> tensor<2097152xf32> {
  %0 = stablehlo.sine %x : tensor<2097152xf32>
  %1 = stablehlo.exponential %0 : tensor<2097152xf32>
  return %1 : tensor<2097152xf32>
})",
      R"(
func.func @main(%x: tensor<4194304xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.sine %x : tensor<4194304xf32>
  %r = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<4194304xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
})",
      R"(
func.func @main(%x: tensor<515x515xf32>) -> tensor<512x512xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %zero) <{window_dimensions = array<i64: 4, 4>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) : (tensor<515x515xf32>, tensor<f32>) -> tensor<512x512xf32>
  return %r : tensor<512x512xf32>
})"};
  for (const std::string& text : programs) {
    auto exe = Compile("cpu", text);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    std::vector<eval::RuntimeValue> args;
    for (const ir::Type& t : (*exe)->argument_types()) args.emplace_back(*eval::RandomLiteral(t, 3));
    auto plain = (*exe)->Execute(args, {});
    ExecuteOptions options;
    std::atomic<bool> cancel{false};
    options.deadline = Clock::now() + std::chrono::seconds(60);
    options.cancel = &cancel;
    auto sliced = (*exe)->Execute(args, options);
    ASSERT_TRUE(plain.ok() && sliced.ok()) << plain.status().ToString() << " / " << sliced.status().ToString();
    EXPECT_EQ((*plain)[0].literal(), (*sliced)[0].literal()) << text;
  }
}

}  // namespace
}  // namespace jitd::devices
