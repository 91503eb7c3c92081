// async_start / async_done through CompileProgram: the interpreter runs
// futures, the cpu device the ops the inline pass puts in their place; a
// future at the program's boundary, or a compiled pipeline without the
// inline pass, is refused by name.
#include <gtest/gtest.h>

#include <string>

#include "devices/compile.h"
#include "devices/testing.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices {
namespace {

using frontend::testing::ParseOrFail;
using testing::F32RampArgs;

constexpr std::string_view kStart = R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 4>,
                                strides = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
)";

std::string Awaiting() {
  return "func.func @main(%a: tensor<4xf32>) -> tensor<2xf32> {" + std::string(kStart) +
         "  %d = \"stablehlo.async_done\"(%f) : (!stablehlo.future<tensor<2xf32>>) -> "
         "tensor<2xf32>\n  %n = stablehlo.negate %d : tensor<2xf32>\n"
         "  return %n : tensor<2xf32>\n}\n";
}

TEST(CompileAsyncTest, BothDevicesRunTheAwaitedOp) {
  for (const char* name : {"interpreter", "cpu"}) {
    SCOPED_TRACE(name);
    auto device = CreateDevice(name);
    ASSERT_TRUE(device.ok());
    auto exe = CompileProgram(**device, ParseOrFail(Awaiting()));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    auto out = (*exe)->Execute(F32RampArgs(4, 1.5), {});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].literal().GetDouble(0), -1.5);  // -a[1]
    EXPECT_EQ((*out)[0].literal().GetDouble(1), -4.5);  // -a[3]
  }
}

TEST(CompileAsyncTest, FuturesAtTheProgramBoundaryAreRefused) {
  const std::string returns = "func.func @main(%a: tensor<4xf32>) -> "
                              "!stablehlo.future<tensor<2xf32>> {" +
                              std::string(kStart) +
                              "  return %f : !stablehlo.future<tensor<2xf32>>\n}\n";
  for (const char* name : {"interpreter", "cpu"}) {
    SCOPED_TRACE(name);
    auto device = CreateDevice(name);
    ASSERT_TRUE(device.ok());
    auto exe = CompileProgram(**device, ParseOrFail(returns));
    ASSERT_FALSE(exe.ok());
    EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(exe.status().message().find("@main returns a !stablehlo.future<tensor<2xf32>>"),
              std::string::npos)
        << exe.status().ToString();
  }
}

TEST(CompileAsyncTest, CompiledPipelineWithoutInlineIsRefused) {
  auto cpu = CreateDevice("cpu");
  ASSERT_TRUE(cpu.ok());
  auto exe = CompileProgram(**cpu, ParseOrFail(Awaiting()), {.pipeline = "cse,dce"});
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(exe.status().message().find("'stablehlo.async_start'"), std::string::npos)
      << exe.status().ToString();
  EXPECT_NE(exe.status().message().find("'inline' pass"), std::string::npos)
      << exe.status().ToString();
  // With it, the same pipeline compiles.
  auto ok = CompileProgram(**cpu, ParseOrFail(Awaiting()), {.pipeline = "inline,cse,dce"});
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

}  // namespace
}  // namespace jitd::devices
