// Deep programs (issue 13, item 1), in process: chains and trees of 10^5
// and 10^6 ops, generated here, through every walk a program takes — parse
// and verify (`jitd check`), print (`jitd fmt`), the passes (`jitd opt`, the
// cpu device's pipeline with fusion), then compile and execute on the
// interpreter and the cpu device — on a thread with a 512 KiB stack, so a
// walk that recursed once per op would overflow it. Results are exact
// (integer-valued floats) and checked against their closed form.
//
// Regions nest and calls chain up to limits instead (each walk over them
// recurses once per level): those programs run at the limits on a thread
// with a daemon worker's 8 MiB stack, and one level past them is refused
// with a clear error.
#include <pthread.h>

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "devices/compile.h"
#include "devices/device.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/pass_manager.h"

namespace jitd::devices {
namespace {

using frontend::testing::ParseVerifiedOrFail;

using eval::RuntimeValue;

constexpr size_t kSmallStack = size_t{512} << 10;
constexpr size_t kWorkerStack = size_t{8} << 20;

// Runs `fn` on a new thread with a `bytes` stack and waits for it.
void RunOnStack(size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  auto start = [](void* f) -> void* {
    (*static_cast<const std::function<void()>*>(f))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, start, const_cast<std::function<void()>*>(&fn)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

// A generated program, its argument and the expected elements of result 0.
struct Program {
  std::string text;
  ir::Type arg_type;
  std::vector<double> arg;
  std::vector<double> expected;
};

std::string V(const std::string& prefix, int64_t i) { return "%" + prefix + std::to_string(i); }

// x + 1, `n` times: x + n (f32, exact for integer-valued x below 2^24).
Program AddChain(int64_t n) {
  Program p;
  p.text = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
           "  %c = stablehlo.constant dense<1.0> : tensor<4xf32>\n";
  p.text.reserve(static_cast<size_t>(n) * 56 + 200);
  std::string prev = "%x";
  for (int64_t i = 0; i < n; ++i) {
    p.text += "  " + V("v", i) + " = stablehlo.add " + prev + ", %c : tensor<4xf32>\n";
    prev = V("v", i);
  }
  p.text += "  return " + prev + " : tensor<4xf32>\n}\n";
  p.arg_type = ir::Type::Tensor(ir::DType::kF32, {4});
  p.arg = {0, 1, -3, 100};
  for (double x : p.arg) p.expected.push_back(x + static_cast<double>(n));
  return p;
}

// About `ops` ops: the sum of x[0..n) (n = ops / 2 leaves, each a slice of
// x) by a balanced tree of adds, or by a left-deep one (`skewed`: ((x0 +
// x1) + x2) + ...). f64 of integers: exact in any order.
Program SliceTree(int64_t ops, bool skewed) {
  const int64_t n = ops / 2;
  const std::string vec = "tensor<" + std::to_string(n) + "xf64>";
  Program p;
  p.text = "func.func @main(%x: " + vec + ") -> tensor<1xf64> {\n";
  p.text.reserve(static_cast<size_t>(ops) * 80 + 200);
  for (int64_t i = 0; i < n; ++i) {
    p.text += "  " + V("l", i) + " = stablehlo.slice %x [" + std::to_string(i) + ":" +
              std::to_string(i + 1) + "] : (" + vec + ") -> tensor<1xf64>\n";
  }
  int64_t t = 0;
  auto add = [&](const std::string& a, const std::string& b) {
    p.text += "  " + V("t", t) + " = stablehlo.add " + a + ", " + b + " : tensor<1xf64>\n";
    return V("t", t++);
  };
  std::string root;
  if (skewed) {
    root = V("l", 0);
    for (int64_t i = 1; i < n; ++i) root = add(root, V("l", i));
  } else {
    std::vector<std::string> level;
    for (int64_t i = 0; i < n; ++i) level.push_back(V("l", i));
    while (level.size() > 1) {
      std::vector<std::string> next;
      for (size_t j = 0; j + 1 < level.size(); j += 2) next.push_back(add(level[j], level[j + 1]));
      if (level.size() % 2) next.push_back(level.back());
      level = std::move(next);
    }
    root = level[0];
  }
  p.text += "  return " + root + " : tensor<1xf64>\n}\n";
  p.arg_type = ir::Type::Tensor(ir::DType::kF64, {n});
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    p.arg.push_back(static_cast<double>(i % 7) - 3);
    sum += p.arg.back();
  }
  p.expected = {sum};
  return p;
}

// `n` cycles of 12 different ops, each cycle adding 1: add, negate,
// multiply, converts to f64 and back, reshapes, transposes, a broadcast, a
// pad and a slice.
Program MixedChain(int64_t cycles) {
  Program p;
  p.text = R"(func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %two = stablehlo.constant dense<2.0> : tensor<4xf64>
  %half = stablehlo.constant dense<-0.5> : tensor<4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
)";
  std::string v = "%x";
  int64_t k = 0;
  auto op = [&](const std::string& body) {
    const std::string name = V("m", k++);
    p.text += "  " + name + " = " + body + "\n";
    return name;
  };
  for (int64_t c = 0; c < cycles; ++c) {
    v = op("stablehlo.add " + v + ", %one : tensor<4xf32>");
    v = op("stablehlo.negate " + v + " : tensor<4xf32>");
    v = op("stablehlo.convert " + v + " : (tensor<4xf32>) -> tensor<4xf64>");
    v = op("stablehlo.multiply " + v + ", %two : tensor<4xf64>");
    v = op("stablehlo.reshape " + v + " : (tensor<4xf64>) -> tensor<2x2xf64>");
    v = op("stablehlo.transpose " + v + ", dims = [1, 0] : (tensor<2x2xf64>) -> tensor<2x2xf64>");
    v = op("stablehlo.broadcast_in_dim " + v +
           ", dims = [2, 1] : (tensor<2x2xf64>) -> tensor<1x2x2xf64>");
    v = op("stablehlo.reshape " + v + " : (tensor<1x2x2xf64>) -> tensor<4xf64>");
    v = op("stablehlo.convert " + v + " : (tensor<4xf64>) -> tensor<4xf32>");
    v = op("stablehlo.pad " + v +
           ", %zero, low = [1], high = [2], interior = [0] : (tensor<4xf32>, tensor<f32>) -> "
           "tensor<7xf32>");
    v = op("stablehlo.slice " + v + " [1:5] : (tensor<7xf32>) -> tensor<4xf32>");
    v = op("stablehlo.multiply " + v + ", %half : tensor<4xf32>");
  }
  p.text += "  return " + v + " : tensor<4xf32>\n}\n";
  p.arg_type = ir::Type::Tensor(ir::DType::kF32, {4});
  p.arg = {0, 1, -3, 100};
  for (double x : p.arg) p.expected.push_back(x + static_cast<double>(cycles));
  return p;
}

RuntimeValue Tensor(const ir::Type& type, const std::vector<double>& values) {
  ir::Literal lit = *ir::Literal::Create(type);
  for (size_t i = 0; i < values.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), values[i]);
  return RuntimeValue(std::move(lit));
}

// Compiles `module` on `device` and runs it on `p`'s argument; checks the
// result against p.expected.
void CompileAndRun(const std::string& device_name, std::shared_ptr<ir::Module> module,
                   const Program& p) {
  auto device = CreateDevice(device_name);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  auto exe = CompileProgram(**device, std::move(module));
  ASSERT_TRUE(exe.ok()) << device_name << ": " << exe.status().ToString();
  std::vector<RuntimeValue> args;
  args.push_back(Tensor(p.arg_type, p.arg));
  auto results = (*exe)->Execute(args, {});
  ASSERT_TRUE(results.ok()) << device_name << ": " << results.status().ToString();
  ASSERT_EQ(results->size(), 1u);
  const ir::Literal& r = (*results)[0].literal();
  ASSERT_EQ(r.num_elements(), static_cast<int64_t>(p.expected.size()));
  for (size_t i = 0; i < p.expected.size(); ++i) {
    EXPECT_EQ(r.GetDouble(static_cast<int64_t>(i)), p.expected[i]) << device_name << " element " << i;
  }
}

// The whole in-process path on a small stack: check, fmt (and, when
// `round_trip`, the printed text parses back to the same text), opt's
// default pipeline (when `round_trip`), then both devices (the cpu device
// through its own pipeline: the default passes and fusion).
void RunEverywhere(const Program& p, bool round_trip) {
  RunOnStack(kSmallStack, [&] {
    std::shared_ptr<ir::Module> m = ParseVerifiedOrFail(p.text);
    ASSERT_TRUE(m);
    const std::string printed = ir::PrintModule(*m);
    ASSERT_FALSE(printed.empty());
    if (round_trip) {
      std::shared_ptr<ir::Module> again = ParseVerifiedOrFail(printed);
      ASSERT_TRUE(again);
      EXPECT_TRUE(ir::PrintModule(*again) == printed) << "print is not a fixpoint";
      passes::PassManager manager;
      ASSERT_TRUE(passes::AddPipeline(manager, "default").ok());
      const Status optimized = manager.Run(*again);
      ASSERT_TRUE(optimized.ok()) << optimized.ToString();
      ASSERT_TRUE(ir::VerifyModule(*again).ok());
      EXPECT_FALSE(ir::PrintModule(*again).empty());
    }
    CompileAndRun("interpreter", std::move(m), p);
    CompileAndRun("cpu", ParseVerifiedOrFail(p.text), p);
  });
}

// The 10^6-op cases take minutes and ~11 GB here: run by hand with
// --gtest_also_run_disabled_tests, not in ctest.
TEST(DeepProgramTest, AddChain100k) { RunEverywhere(AddChain(100'000), /*round_trip=*/true); }
TEST(DeepProgramTest, DISABLED_AddChain1M) { RunEverywhere(AddChain(1'000'000), /*round_trip=*/false); }
TEST(DeepProgramTest, BalancedTree100k) { RunEverywhere(SliceTree(100'000, false), true); }
TEST(DeepProgramTest, DISABLED_BalancedTree1M) { RunEverywhere(SliceTree(1'000'000, false), false); }
TEST(DeepProgramTest, SkewedTree100k) { RunEverywhere(SliceTree(100'000, true), true); }
TEST(DeepProgramTest, DISABLED_SkewedTree1M) { RunEverywhere(SliceTree(1'000'000, true), false); }
TEST(DeepProgramTest, MixedChain100k) { RunEverywhere(MixedChain(100'000 / 12), true); }

// concatenate(v, v) then a slice of it reads v at two indices: a chain of
// those makes a fused kernel compute its producers twice per step (2^n per
// element). The cpu device interprets such a fusion instead of emitting it
// (codegen::kMaxKernelComputations); the result stays exact.
TEST(DeepProgramTest, RecomputingChain) {
  Program p;
  p.text = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
           "  %one = stablehlo.constant dense<1.0> : tensor<4xf32>\n";
  std::string v = "%x";
  const int cycles = 2000;
  for (int c = 0; c < cycles; ++c) {
    const std::string a = V("a", c), b = V("b", c), s = V("s", c);
    p.text += "  " + a + " = stablehlo.concatenate " + v + ", " + v +
              ", dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>\n";
    p.text += "  " + b + " = stablehlo.slice " + a + " [2:6] : (tensor<8xf32>) -> tensor<4xf32>\n";
    p.text += "  " + s + " = stablehlo.add " + b + ", %one : tensor<4xf32>\n";
    v = s;
  }
  p.text += "  return " + v + " : tensor<4xf32>\n}\n";
  p.arg_type = ir::Type::Tensor(ir::DType::kF32, {4});
  p.arg = {0, 1, -3, 100};
  // Each cycle rotates by two and adds one; 2000 rotations by two: none.
  for (double x : p.arg) p.expected.push_back(x + cycles);
  const auto start = std::chrono::steady_clock::now();
  RunEverywhere(p, /*round_trip=*/false);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

// ---- Limits: region nesting, call depth ---------------------------------

// `depth` whiles nested in each other's bodies, each running once; the
// innermost adds 1: x + 1.
Program NestedWhiles(int depth) {
  Program p;
  p.text = "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
           "  %zero = stablehlo.constant dense<0> : tensor<i32>\n"
           "  %onei = stablehlo.constant dense<1> : tensor<i32>\n"
           "  %one = stablehlo.constant dense<1.0> : tensor<f32>\n";
  std::string v = "%x";
  for (int d = 0; d < depth; ++d) {
    const std::string i = V("i", d), w = V("w", d), c = V("c", d), n = V("n", d), a = V("a", d);
    p.text += "  " + w + ":2 = stablehlo.while(" + i + " = %zero, " + a + " = " + v +
              ") : tensor<i32>, tensor<f32>\n   cond {\n";
    p.text += "    " + c + " = stablehlo.compare LT, " + i + ", %onei, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n";
    p.text += "    stablehlo.return " + c + " : tensor<i1>\n   } do {\n";
    p.text += "    " + n + " = stablehlo.add " + i + ", %onei : tensor<i32>\n";
    v = a;
  }
  p.text += "  %r = stablehlo.add " + v + ", %one : tensor<f32>\n";
  std::string result = "%r";
  for (int d = depth; d-- > 0;) {
    p.text += "    stablehlo.return " + V("n", d) + ", " + result + " : tensor<i32>, tensor<f32>\n   }\n";
    result = V("w", d) + "#1";
  }
  p.text += "  return " + result + " : tensor<f32>\n}\n";
  p.arg_type = ir::Type::Scalar(ir::DType::kF32);
  p.arg = {41};
  p.expected = {42};
  return p;
}

TEST(DeepProgramTest, RegionsNestedToTheLimitRunEverywhere) {
  const Program p = NestedWhiles(ir::kMaxRegionNesting);
  RunOnStack(kWorkerStack, [&] {
    std::shared_ptr<ir::Module> m = ParseVerifiedOrFail(p.text);
    ASSERT_TRUE(m);
    std::shared_ptr<ir::Module> again = ParseVerifiedOrFail(ir::PrintModule(*m));
    ASSERT_TRUE(again);
    CompileAndRun("interpreter", std::move(m), p);
    CompileAndRun("cpu", std::move(again), p);
  });
}

TEST(DeepProgramTest, RegionsNestedPastTheLimitAreRefused) {
  RunOnStack(kWorkerStack, [&] {
    for (int depth : {ir::kMaxRegionNesting + 1, 100'000}) {
      auto m = frontend::ParseModule(NestedWhiles(depth).text);
      ASSERT_FALSE(m.ok());
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
      // Refused at the first region past the limit, with its line:col.
      const std::string& message = m.status().message();
      const std::string tail = ": regions nested deeper than the limit of 64 levels";
      EXPECT_TRUE(message.size() > tail.size() && std::isdigit(message[0]) &&
                  message.compare(message.size() - tail.size(), tail.size(), tail) == 0)
          << message;
    }
  });
}

// @main -> @f0 -> ... -> @f{n-1}, each adding 1.
Program CallChain(int n) {
  Program p;
  p.text = "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
           "  %r = func.call @f0(%x) : (tensor<f32>) -> tensor<f32>\n"
           "  return %r : tensor<f32>\n}\n";
  for (int i = 0; i < n; ++i) {
    p.text += "func.func private @f" + std::to_string(i) + "(%x: tensor<f32>) -> tensor<f32> {\n"
              "  %one = stablehlo.constant dense<1.0> : tensor<f32>\n"
              "  %a = stablehlo.add %x, %one : tensor<f32>\n";
    p.text += i + 1 < n ? "  %r = func.call @f" + std::to_string(i + 1) +
                              "(%a) : (tensor<f32>) -> tensor<f32>\n  return %r : tensor<f32>\n}\n"
                        : std::string("  return %a : tensor<f32>\n}\n");
  }
  p.arg_type = ir::Type::Scalar(ir::DType::kF32);
  p.arg = {5};
  p.expected = {5.0 + n};
  return p;
}

// A chain of 100,000 calls: the cpu device's pipeline inlines it (linear
// work, no native recursion per call: a small stack will do); the
// interpreter, which runs calls as calls, recurses once per call up to its
// depth limit (256 levels, ~3 KiB of stack each: a daemon worker's stack)
// and stops there with RESOURCE_EXHAUSTED.
TEST(DeepProgramTest, CallChains) {
  const Program p = CallChain(100'000);
  RunOnStack(kSmallStack, [&] { CompileAndRun("cpu", ParseVerifiedOrFail(p.text), p); });
  RunOnStack(kWorkerStack, [&] {
    auto interpreter = CreateDevice("interpreter");
    ASSERT_TRUE(interpreter.ok());
    auto exe = CompileProgram(**interpreter, ParseVerifiedOrFail(p.text));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    std::vector<RuntimeValue> args;
    args.push_back(Tensor(p.arg_type, p.arg));
    auto r = (*exe)->Execute(args, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(r.status().message().find("calls nested deeper than 256 levels, the limit"),
              std::string::npos)
        << r.status().message();
  });
}

// A tree of calls 40 deep (2^40 adds when inlined): compiling stays within
// budgets (the inline pass and the cpu planner leave calls in place), and
// running it ends at its deadline on both devices.
TEST(DeepProgramTest, CallTreesCompileWithinBudgetsAndRunToTheirDeadline) {
  std::string text = "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
                     "  %r = func.call @f0(%x) : (tensor<f32>) -> tensor<f32>\n"
                     "  return %r : tensor<f32>\n}\n";
  const int depth = 40;
  for (int i = 0; i < depth; ++i) {
    const std::string next = "@f" + std::to_string(i + 1);
    text += "func.func private @f" + std::to_string(i) + "(%x: tensor<f32>) -> tensor<f32> {\n";
    text += i + 1 < depth ? "  %a = func.call " + next + "(%x) : (tensor<f32>) -> tensor<f32>\n"
                            "  %b = func.call " + next + "(%x) : (tensor<f32>) -> tensor<f32>\n"
                            "  %r = stablehlo.add %a, %b : tensor<f32>\n  return %r : tensor<f32>\n}\n"
                          : std::string("  return %x : tensor<f32>\n}\n");
  }
  RunOnStack(kWorkerStack, [&] {
    for (const char* name : {"interpreter", "cpu"}) {
      auto device = CreateDevice(name);
      ASSERT_TRUE(device.ok());
      const auto start = std::chrono::steady_clock::now();
      auto exe = CompileProgram(**device, ParseVerifiedOrFail(text));
      ASSERT_TRUE(exe.ok()) << name << ": " << exe.status().ToString();
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30)) << name;
      std::vector<RuntimeValue> args;
      args.push_back(Tensor(ir::Type::Scalar(ir::DType::kF32), {1}));
      ExecuteOptions options;
      options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      auto r = (*exe)->Execute(args, options);
      ASSERT_FALSE(r.ok()) << name;
      EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << name << ": " << r.status().ToString();
    }
  });
}

}  // namespace
}  // namespace jitd::devices
