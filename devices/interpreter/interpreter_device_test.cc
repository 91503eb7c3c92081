#include "devices/interpreter/interpreter_device.h"

#include <gtest/gtest.h>

#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::devices {
namespace {

using frontend::testing::ParseOrFail;

TEST(InterpreterDeviceTest, CompileVerifiesAndExecuteRuns) {
  auto device = CreateDevice("interpreter");
  ASSERT_TRUE(device.ok());
  auto exe = (*device)->Compile(ParseOrFail(R"(
func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
  return %a : tensor<2xi32>
})"));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ((*exe)->argument_types().size(), 1u);
  ir::Literal arg = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kS32, {2}));
  arg.SetInt(1, 9);
  std::vector<eval::RuntimeValue> args;
  args.emplace_back(arg);
  auto out = (*exe)->Execute(args, {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].literal(), arg);
}

TEST(InterpreterDeviceTest, CompileRejectsInvalidModules) {
  auto device = CreateDevice("interpreter");
  auto exe = (*device)->Compile(ParseOrFail(R"(
func.func @main(%a: tensor<2xi32>) -> tensor<3xi32> {
  return %a : tensor<2xi32>
})"));
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("'func.return' op"), std::string::npos);
}

TEST(InterpreterDeviceTest, UnknownDeviceNamesTheKnownOnes) {
  auto device = CreateDevice("tpu");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kNotFound);
  EXPECT_NE(device.status().message().find("interpreter"), std::string::npos);
}

}  // namespace
}  // namespace jitd::devices
