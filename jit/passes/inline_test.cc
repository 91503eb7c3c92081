#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::Evaluate;
using testing::ParseVerifiedOrFail;
using testing::RunAndCompare;
using testing::RunPipeline;
using testing::S32;
using testing::Tensor;


TEST(InlineTest, InlinesCallChainsAndRemovesUnusedPrivateFunctions) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
    %0 = call @outer(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %1:2 = call @pair(%0) : (tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
    %2 = stablehlo.add %1#0, %1#1 : tensor<2xi32>
    return %2, %0 : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @outer(%x: tensor<2xi32>, %y: tensor<2xi32>) -> tensor<2xi32> {
    %0 = call @inner(%x) : (tensor<2xi32>) -> tensor<2xi32>
    %1 = stablehlo.multiply %0, %y : tensor<2xi32>
    return %1 : tensor<2xi32>
  }
  func.func private @inner(%x: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.add %x, %x : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func private @pair(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
    %c = stablehlo.constant dense<[5, 6]> : tensor<2xi32>
    return %c, %x : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @never_called(%x: tensor<2xi32>) -> tensor<2xi32> {
    return %x : tensor<2xi32>
  }
}
)", "inline", {Tensor(S32({2}), {1, 2}), Tensor(S32({2}), {3, 4})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 0);
  ASSERT_EQ(m->functions().size(), 1u);
  EXPECT_EQ(m->functions()[0]->name(), "main");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 2);  // inner's and main's
}

TEST(InlineTest, InlinesCallsInsideRegionsAndKeepsPublicFunctions) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%p: tensor<i1>, %a: tensor<2xi32>) -> tensor<2xi32> {
    %0 = "stablehlo.if"(%p) ({
      %1 = func.call @double(%a) : (tensor<2xi32>) -> tensor<2xi32>
      stablehlo.return %1 : tensor<2xi32>
    }, {
      stablehlo.return %a : tensor<2xi32>
    }) : (tensor<i1>) -> tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func private @double(%x: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.add %x, %x : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func public @exported(%x: tensor<2xi32>) -> tensor<2xi32> {
    return %x : tensor<2xi32>
  }
}
)", "inline", {Tensor(ir::Type::Scalar(ir::DType::kPred), {1}), Tensor(S32({2}), {7, -3})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 0);
  EXPECT_EQ(m->FindFunction("double"), nullptr);
  EXPECT_NE(m->FindFunction("exported"), nullptr);  // public: part of the interface
}

TEST(InlineTest, LeavesRecursiveCallsAlone) {
  // The verifier allows recursion (the evaluator bounds its depth); the
  // pass must not loop, and keeps the recursive functions.
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main(%a: tensor<i32>) -> tensor<i32> {
    %0 = call @ping(%a) : (tensor<i32>) -> tensor<i32>
    %1 = call @leaf(%0) : (tensor<i32>) -> tensor<i32>
    return %1 : tensor<i32>
  }
  func.func private @ping(%x: tensor<i32>) -> tensor<i32> {
    %0 = call @pong(%x) : (tensor<i32>) -> tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @pong(%x: tensor<i32>) -> tensor<i32> {
    %0 = call @ping(%x) : (tensor<i32>) -> tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @leaf(%x: tensor<i32>) -> tensor<i32> {
    return %x : tensor<i32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "inline");
  EXPECT_NE(m->FindFunction("ping"), nullptr);
  EXPECT_NE(m->FindFunction("pong"), nullptr);
  EXPECT_EQ(m->FindFunction("leaf"), nullptr);
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 3);  // main->ping, ping->pong, pong->ping
}

// @main calls @f0, @f_i calls @f_{i+1} (adding one), `n` functions; when
// `tree`, each @f_i calls @f_{i+1} twice and adds the results.
std::string CallChain(int n, bool tree) {
  std::string s = "func.func @main(%x: tensor<i32>) -> tensor<i32> {\n"
                  "  %r = func.call @f0(%x) : (tensor<i32>) -> tensor<i32>\n"
                  "  return %r : tensor<i32>\n}\n";
  for (int i = 0; i < n; ++i) {
    const std::string next = "@f" + std::to_string(i + 1);
    s += "func.func private @f" + std::to_string(i) + "(%x: tensor<i32>) -> tensor<i32> {\n";
    if (i + 1 == n) {
      s += "  return %x : tensor<i32>\n}\n";
    } else if (tree) {
      s += "  %a = func.call " + next + "(%x) : (tensor<i32>) -> tensor<i32>\n";
      s += "  %b = func.call " + next + "(%x) : (tensor<i32>) -> tensor<i32>\n";
      s += "  %r = stablehlo.add %a, %b : tensor<i32>\n  return %r : tensor<i32>\n}\n";
    } else {
      s += "  %one = stablehlo.constant dense<1> : tensor<i32>\n";
      s += "  %a = stablehlo.add %x, %one : tensor<i32>\n";
      s += "  %r = func.call " + next + "(%a) : (tensor<i32>) -> tensor<i32>\n";
      s += "  return %r : tensor<i32>\n}\n";
    }
  }
  return s;
}

// A chain of calls 20,000 deep is inlined in linear time and memory (each
// body copied once, no native recursion per call level), down to @main.
TEST(InlineTest, LongCallChainsInlineInLinearTime) {
  auto m = ParseVerifiedOrFail(CallChain(20000, /*tree=*/false));
  ASSERT_TRUE(m);
  RunPipeline(*m, "inline");
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 0);
  EXPECT_EQ(m->functions().size(), 1u);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 19999);
  const auto r = Evaluate(*m, {Tensor(ir::Type::Scalar(ir::DType::kS32), {5})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].literal().GetInt(0), 5 + 19999);
}

// A tree of calls 40 levels deep would inline to 2^40 ops: the pass copies
// ops up to its budget (four times the module, at least 2^18) and leaves the
// remaining calls in place, which still compute the same result.
TEST(InlineTest, CallTreesStopAtTheBudget) {
  auto m = ParseVerifiedOrFail(CallChain(40, /*tree=*/true));
  ASSERT_TRUE(m);
  RunPipeline(*m, "inline");
  EXPECT_GT(CountOpsNamed(*m, "func.call"), 0);
  EXPECT_LE(CountOps(*m), 2 * (int64_t{1} << 18));
  // A shallower tree inlines completely (2^14 adds).
  auto small = RunAndCompare(CallChain(15, /*tree=*/true), "inline",
                             {Tensor(ir::Type::Scalar(ir::DType::kS32), {3})});
  ASSERT_TRUE(small);
  EXPECT_EQ(CountOpsNamed(*small, "func.call"), 0);
}

// Inlining never nests regions past ir::kMaxRegionNesting: a call inside a
// while body, 100 functions deep, stops being inlined at the limit.
TEST(InlineTest, CallsInsideRegionsStopAtTheNestingLimit) {
  std::string s = "func.func @main(%x: tensor<i32>) -> tensor<i32> {\n"
                  "  %r = func.call @f0(%x) : (tensor<i32>) -> tensor<i32>\n"
                  "  return %r : tensor<i32>\n}\n";
  const int n = 100;
  for (int i = 0; i < n; ++i) {
    s += "func.func private @f" + std::to_string(i) + R"((%x: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %w:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i32>, tensor<i32>
   cond {
    %c = stablehlo.compare LT, %i, %one, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
   } do {
    %n = stablehlo.add %i, %one : tensor<i32>
    %a = stablehlo.add %v, %one : tensor<i32>
)";
    s += i + 1 < n ? "    %r = func.call @f" + std::to_string(i + 1) + "(%a)"
                   : std::string("    %r = stablehlo.add %a, %one");
    s += i + 1 < n ? " : (tensor<i32>) -> tensor<i32>\n" : " : tensor<i32>\n";
    s += "    stablehlo.return %n, %r : tensor<i32>, tensor<i32>\n   }\n"
         "  return %w#1 : tensor<i32>\n}\n";
  }
  auto m = ParseVerifiedOrFail(s);
  ASSERT_TRUE(m);
  RunPipeline(*m, "inline");  // verifies after the pass: nesting within the limit
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 1);
  int deepest = 0;
  for (const auto& op : m->EntryFunction()->entry()->ops()) {
    deepest = std::max(deepest, ir::RegionNesting(*op));
  }
  EXPECT_EQ(deepest, ir::kMaxRegionNesting);
}

}  // namespace
}  // namespace jitd::passes
