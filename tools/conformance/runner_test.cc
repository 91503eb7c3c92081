#include "tools/conformance/runner.h"

#include <gtest/gtest.h>

namespace jitd::conformance {
namespace {

std::vector<CaseResult> RunCases(std::string_view text) {
  auto device = devices::CreateDevice("interpreter");
  EXPECT_TRUE(device.ok());
  return RunText("t.mlir", text, **device, RunnerOptions{});
}

TEST(RunnerTest, PassingAndFailingChecksInBothSpellings) {
  auto r = RunCases(R"(// RUN-DISABLED(reason) whatever
module {
  func.func public @main() -> tensor<2xi32> {
    %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %1 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    stablehlo.custom_call @check.expect_eq(%0, %1) {has_side_effect = true} : (tensor<2xi32>, tensor<2xi32>) -> ()
    check.expect_eq_const %0, dense<[1, 2]> : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
}
// -----
func.func public @main() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_almost_eq_const %0, dense<[1.0, 2.5]> : tensor<2xf32>
  return
}
// -----
func.func public @main() {
  %0 = stablehlo.frobnicate
  return
}
// -----
func.func public @main() {
  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %1 = stablehlo.custom_call @unknown_target(%0) : (tensor<2xf32>) -> tensor<2xf32>
  return
}
)");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].passed()) << r[0].detail;
  EXPECT_TRUE(r[0].disabled);
  EXPECT_EQ(r[0].num_modules, 4);
  EXPECT_EQ(r[1].outcome, Outcome::kCheckFailed);
  EXPECT_NE(r[1].detail.find("element 1 [1]: actual 2.000000e+00, expected 2.500000e+00"),
            std::string::npos)
      << r[1].detail;
  EXPECT_EQ(r[2].outcome, Outcome::kParseError);
  EXPECT_NE(r[2].detail.find("19:8: unknown op"), std::string::npos) << r[2].detail;  // file line numbers
  EXPECT_EQ(r[3].outcome, Outcome::kUnsupported);
  EXPECT_EQ(r[3].name(), "t.mlir#3");
}

TEST(RunnerTest, VerifyErrorsAreReportedAsSuch) {
  auto r = RunCases(R"(func.func public @main() -> tensor<3xi32> {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  return %0 : tensor<2xi32>
})");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].outcome, Outcome::kVerifyError);
}

TEST(RunnerTest, ReportsAreWellFormed) {
  auto r = RunCases("func.func public @main() {\n  return\n}\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].passed()) << r[0].detail;
  std::string json = ToJson(r, "interpreter", 0.5);
  EXPECT_NE(json.find("\"passed\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"result\": \"passed\""), std::string::npos) << json;
  std::string md = ToMarkdown(r, "interpreter");
  EXPECT_NE(md.find("1 of 1 cases pass"), std::string::npos) << md;
}

TEST(RunnerTest, CollectFilesReportsMissingPaths) {
  auto files = CollectFiles({"/nonexistent/dir"});
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace jitd::conformance
