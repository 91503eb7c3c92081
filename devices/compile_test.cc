#include "devices/compile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "devices/testing.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices {
namespace {

using frontend::testing::ParseOrFail;
using testing::F32RampArgs;

// A call (inlined by the pipeline), a constant subexpression (folded) and
// real work for a kernel.
constexpr std::string_view kProgram = R"(
func.func private @scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %c = stablehlo.add %two, %one : tensor<4xf32>
  %y = stablehlo.multiply %x, %c : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @scale(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %t = stablehlo.tanh %r : tensor<4xf32>
  return %t : tensor<4xf32>
})";

std::vector<std::string> Names(const std::vector<CompileDump>& dumps) {
  std::vector<std::string> names;
  for (const CompileDump& d : dumps) names.push_back(d.name);
  return names;
}

// Target passes are known only with their device: the cpu device's
// `fusion` is a pass a user pipeline may name there, not on the interpreter.
TEST(CompileProgramTest, CheckPipelineKnowsTheDevicesOwnPasses) {
  auto cpu = CreateDevice("cpu");
  auto interpreter = CreateDevice("interpreter");
  ASSERT_TRUE(cpu.ok() && interpreter.ok());
  EXPECT_TRUE(CheckPipeline(**cpu, "inline,fusion").ok());
  EXPECT_TRUE(CheckPipeline(**cpu, "").ok());
  const Status refused = CheckPipeline(**interpreter, "inline,fusion");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("fusion"), std::string::npos) << refused.message();
  const Status unknown = CheckPipeline(**cpu, "inline,bogus");
  EXPECT_NE(unknown.message().find("'bogus'"), std::string::npos) << unknown.message();
  // And the cpu device compiles and runs what it accepted.
  auto exe = CompileProgram(**cpu, ParseOrFail(kProgram), {.pipeline = "inline,fusion"});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto out = (*exe)->Execute(F32RampArgs(4, 0.1), {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
}

TEST(CompileProgramTest, InterpreterRunsNoPassesAndDumpsInputAndOutput) {
  auto device = CreateDevice("interpreter");
  ASSERT_TRUE(device.ok());
  std::vector<CompileDump> dumps;
  auto exe =
      CompileProgram(**device, ParseOrFail(kProgram), {.pipeline = std::nullopt, .dumps = &dumps});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(Names(dumps), (std::vector<std::string>{"000-input.mlir", "optimized.mlir"}));
  EXPECT_EQ(dumps[0].text, dumps[1].text);
  EXPECT_NE(dumps[0].text.find("call @scale"), std::string::npos) << dumps[0].text;
}

TEST(CompileProgramTest, CpuRunsTheDefaultPipelineAndDumpsEveryPassAndLlvm) {
  auto device = CreateDevice("cpu");
  ASSERT_TRUE(device.ok());
  EXPECT_EQ((*device)->pipeline(), "default");
  std::vector<CompileDump> dumps;
  auto exe =
      CompileProgram(**device, ParseOrFail(kProgram), {.pipeline = std::nullopt, .dumps = &dumps});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::vector<std::string> names = Names(dumps);
  ASSERT_GE(names.size(), 6u);
  EXPECT_EQ(names[0], "000-input.mlir");
  EXPECT_EQ(names[1], "001-inline.mlir");
  // Then one dump per pass, numbered in order, then the device's.
  const size_t optimized = names.size() - 6;
  for (size_t i = 1; i < optimized; ++i) {
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "%03zu-", i);
    EXPECT_EQ(names[i].rfind(prefix, 0), 0u) << names[i];
  }
  EXPECT_EQ(names[optimized], "optimized.mlir");
  EXPECT_EQ(names[optimized + 1], "kernels.txt");
  EXPECT_EQ(names[optimized + 2], "buffers.txt");
  EXPECT_EQ(names[optimized + 3], "llvm.ll");
  EXPECT_EQ(names[optimized + 4], "llvm.opt.ll");
  EXPECT_EQ(names[optimized + 5], "asm.s");
  // Each kernel with the ops it computes and where its root is.
  EXPECT_NE(dumps[optimized + 1].text.find("jitd_k0 tanh <- multiply @"), std::string::npos)
      << dumps[optimized + 1].text;
  // The passes ran: the call is inlined and 2 + 1 folded.
  const std::string& final_text = dumps[optimized].text;
  EXPECT_EQ(final_text.find("call @"), std::string::npos) << final_text;
  EXPECT_NE(final_text.find("3.000000e+00"), std::string::npos) << final_text;
  EXPECT_NE(dumps[optimized + 2].text.find("arena="), std::string::npos);
  EXPECT_NE(dumps[optimized + 3].text.find("define"), std::string::npos);
  EXPECT_FALSE(dumps[optimized + 5].text.empty());

  // And the compiled program computes tanh(3x).
  auto out = (*exe)->Execute(F32RampArgs(4, 0.1), {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NEAR((*out)[0].literal().GetDouble(3), std::tanh(3 * 0.3f), 1e-6);
}

TEST(CompileProgramTest, PipelineOverrideAndBadPipelineName) {
  auto device = CreateDevice("cpu");
  ASSERT_TRUE(device.ok());
  std::vector<CompileDump> dumps;
  auto exe = CompileProgram(**device, ParseOrFail(kProgram), {.pipeline = "", .dumps = &dumps});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(Names(dumps)[1], "optimized.mlir");
  EXPECT_NE(dumps[1].text.find("call @"), std::string::npos);

  auto bad = CompileProgram(**device, ParseOrFail(kProgram), {.pipeline = "inline,no-such-pass"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no-such-pass"), std::string::npos)
      << bad.status().message();
}

TEST(CompileProgramTest, InvalidModuleIsAnErrorBeforeAnyPass) {
  auto device = CreateDevice("cpu");
  ASSERT_TRUE(device.ok());
  auto exe = CompileProgram(**device, ParseOrFail(R"(
func.func @main(%a: tensor<2xi32>) -> tensor<3xi32> {
  return %a : tensor<2xi32>
})"));
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument) << exe.status().ToString();
}

// Both devices report where an execution's time went when asked, and only
// then.
TEST(CompileProgramTest, ProfilesNameOpsOrKernels) {
  for (const char* name : {"interpreter", "cpu"}) {
    SCOPED_TRACE(name);
    auto device = CreateDevice(name);
    ASSERT_TRUE(device.ok());
    auto exe = CompileProgram(**device, ParseOrFail(kProgram));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    std::vector<ProfileEntry> profile = {{"stale", 1, 1}};
    ExecuteOptions options;
    options.profile = &profile;
    auto out = (*exe)->Execute(F32RampArgs(4, 0.1), options);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_FALSE(profile.empty());
    bool tanh_or_kernel = false;
    for (size_t i = 0; i < profile.size(); ++i) {
      EXPECT_NE(profile[i].name, "stale");
      EXPECT_GE(profile[i].count, 1);
      if (i > 0) EXPECT_GE(profile[i - 1].nanos, profile[i].nanos);
      // Rows name their call site: the op's line:column in kProgram.
      tanh_or_kernel |= profile[i].name == "stablehlo.tanh @11:3" ||
                        profile[i].name.rfind("kernel jitd_k0 tanh <- multiply @11:3", 0) == 0;
    }
    EXPECT_TRUE(tanh_or_kernel) << profile[0].name;
  }
}

// ExecuteOptions::trace: every op (interpreter) or kernel / library call
// (cpu) of the execution as a span within it, named with its call site; a
// loop's body once per iteration; past max_events the rest only counted.
TEST(CompileProgramTest, TracesEveryOpOrKernelWithItsCallSite) {
  constexpr std::string_view kLoop = R"(
func.func @main(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<8x8xf32>
   cond {
    %three = stablehlo.constant dense<3> : tensor<i32>
    %go = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %go : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    %y = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    stablehlo.return %next, %y : tensor<i32>, tensor<8x8xf32>
  }
  return %r#1 : tensor<8x8xf32>
})";
  ir::Literal a = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {8, 8}));
  for (int64_t i = 0; i < 64; ++i) a.SetDouble(i, 0.01 * static_cast<double>(i % 7));
  std::vector<eval::RuntimeValue> args;
  args.emplace_back(std::move(a));
  for (const char* name : {"interpreter", "cpu"}) {
    SCOPED_TRACE(name);
    auto device = CreateDevice(name);
    ASSERT_TRUE(device.ok());
    auto exe = CompileProgram(**device, ParseOrFail(kLoop));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    ExecutionTrace trace;
    ExecuteOptions options;
    options.trace = &trace;
    auto nanos = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
    const int64_t before = nanos();
    auto out = (*exe)->Execute(args, options);
    const int64_t after = nanos();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_FALSE(trace.events.empty());
    EXPECT_EQ(trace.dropped, 0u);
    int dots = 0, whiles = 0;
    for (const TraceEvent& e : trace.events) {
      EXPECT_GE(e.start_nanos, before) << e.name;
      EXPECT_GE(e.duration_nanos, 0) << e.name;
      EXPECT_LE(e.start_nanos + e.duration_nanos, after) << e.name;
      EXPECT_EQ(e.thread, static_cast<uint64_t>(::gettid()));
      const auto [what, site] = SplitCallSite(e.name);
      if (what.find("dot_general") != std::string_view::npos) {
        ++dots;
        EXPECT_EQ(site, "12:5") << e.name;
      }
      if (what.find("while") != std::string_view::npos) {
        ++whiles;
        EXPECT_EQ(site, "4:3") << e.name;
      }
    }
    EXPECT_EQ(dots, 3);  // once per iteration
    EXPECT_EQ(whiles, 1);
    // The loop's span encloses the spans of its body, which end first.
    const TraceEvent& loop = *std::find_if(trace.events.begin(), trace.events.end(),
                                           [](const TraceEvent& e) {
                                             return e.name.find("while") != std::string::npos;
                                           });
    for (const TraceEvent& e : trace.events) {
      if (e.name.find("dot_general") == std::string::npos) continue;
      EXPECT_GE(e.start_nanos, loop.start_nanos);
      EXPECT_LE(e.start_nanos + e.duration_nanos, loop.start_nanos + loop.duration_nanos);
    }

    ExecutionTrace capped;
    capped.max_events = 2;
    options.trace = &capped;
    ASSERT_TRUE((*exe)->Execute(args, options).ok());
    EXPECT_EQ(capped.events.size(), 2u);
    EXPECT_EQ(capped.events.size() + capped.dropped, trace.events.size());
  }
}

// ProgramCompileOptions::steps: verify, each pass of the pipeline (the
// names its dumps carry), the device's compile; one after another.
TEST(CompileProgramTest, StepsTimeEachPass) {
  auto cpu = CreateDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  std::vector<CompileStep> steps;
  std::vector<CompileDump> dumps;
  ProgramCompileOptions options;
  options.dumps = &dumps;
  options.steps = &steps;
  auto exe = CompileProgram(**cpu, ParseOrFail(kProgram), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  ASSERT_GE(steps.size(), 3u);
  EXPECT_EQ(steps.front().name, "verify");
  EXPECT_EQ(steps.back().name, "device compile (cpu)");
  // One step per pass dump ("001-inline.mlir" -> "inline").
  std::vector<std::string> passes;
  for (const CompileDump& d : dumps) {
    if (d.name.size() > 9 && d.name[3] == '-' && d.name.substr(0, 4) != "000-") {
      passes.push_back(d.name.substr(4, d.name.size() - 4 - 5));
    }
  }
  ASSERT_EQ(steps.size(), passes.size() + 2);
  for (size_t i = 0; i < passes.size(); ++i) EXPECT_EQ(steps[i + 1].name, passes[i]);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_GE(steps[i].duration_nanos, 0);
    if (i > 0) {
      EXPECT_GE(steps[i].start_nanos, steps[i - 1].start_nanos + steps[i - 1].duration_nanos);
    }
  }
  // No pipeline: verify and the device's compile.
  auto interpreter = CreateDevice("interpreter");
  steps.clear();
  options.dumps = nullptr;
  ASSERT_TRUE(CompileProgram(**interpreter, ParseOrFail(kProgram), options).ok());
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].name, "device compile (interpreter)");
}

TEST(CompileProgramTest, SplitCallSiteFindsTheTrailingLineAndColumn) {
  EXPECT_EQ(SplitCallSite("stablehlo.add @12:5"),
            std::make_pair(std::string_view("stablehlo.add"), std::string_view("12:5")));
  EXPECT_EQ(SplitCallSite("kernel jitd_k1 reduce <- exponential @3:9").second, "3:9");
  EXPECT_EQ(SplitCallSite("copy").second, "");
  EXPECT_EQ(SplitCallSite("copy").first, "copy");
  EXPECT_EQ(SplitCallSite("custom_call @check.expect_eq").second, "");
}

// send / recv compile on both devices (issue 17; they were refused at
// compile before) and run between the processes of a replicated execution
// (devices/replicated_test.cc, tests/ops/collectives.mlir); a program run
// as one process has nobody to talk to and says so, naming the op.
TEST(CompileProgramTest, SendAndRecvRunOnBothDevices) {
  constexpr std::string_view send = R"(
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %t0 = stablehlo.create_token : !stablehlo.token
  %t1 = "stablehlo.send"(%a, %t0) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>, is_host_transfer = true} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %a : tensor<2xf32>
})";
  constexpr std::string_view recv = R"(
func.func @main() -> tensor<2xf32> {
  %t0 = stablehlo.create_token : !stablehlo.token
  %v, %t1 = "stablehlo.recv"(%t0) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>, is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  return %v : tensor<2xf32>
})";
  for (const char* name : {"interpreter", "cpu"}) {
    auto device = CreateDevice(name);
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    auto sender = CompileProgram(**device, ParseOrFail(send));
    ASSERT_TRUE(sender.ok()) << name << ": " << sender.status().ToString();
    std::vector<eval::RuntimeValue> args;
    args.emplace_back(*ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2})));
    auto sent = (*sender)->Execute(args, {});
    ASSERT_FALSE(sent.ok()) << name;
    EXPECT_NE(sent.status().message().find("'stablehlo.send' op talks to other processes over channel 1 but "
                                           "the program runs as one process"),
              std::string::npos)
        << sent.status().ToString();
    auto receiver = CompileProgram(**device, ParseOrFail(recv));
    ASSERT_TRUE(receiver.ok()) << name << ": " << receiver.status().ToString();
    ExecuteOptions options;
    options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    auto out = (*receiver)->Execute({}, options);
    ASSERT_FALSE(out.ok()) << name;
    EXPECT_NE(out.status().message().find("recv"), std::string::npos) << out.status().ToString();
  }
}

}  // namespace
}  // namespace jitd::devices
