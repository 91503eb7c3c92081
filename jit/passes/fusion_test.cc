#include "jit/passes/fusion.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using ir::Op;
using ir::OpCode;
using testing::CountOpsNamed;
using testing::F32;
using testing::RunAndCompare;
using testing::Tensor;

bool IsSplat(const Op& op) {
  if (op.code() != OpCode::kConstant) return false;
  const auto* dense = op.attr("value")->get_if<ir::DenseElementsAttr>();
  return dense && (dense->splat || dense->type.num_elements() == 1);
}

// A target like jit/codegen's, small enough to read: pointwise ops, index
// maps, splat constants and iota fuse; any reduce roots a kernel.
PipelineOptions TestOptions(bool multi_output = true) {
  FusionPolicy policy;
  policy.is_fusible = [](const Op& op) {
    const OpCode c = op.code();
    return ir::IsElementwiseUnary(c) || ir::IsElementwiseBinary(c) || c == OpCode::kSelect || c == OpCode::kCompare ||
           c == OpCode::kBroadcastInDim || c == OpCode::kReshape || c == OpCode::kTranspose ||
           c == OpCode::kIota || IsSplat(op);
  };
  policy.is_fusible_reduce = [](const Op& op) { return op.code() == OpCode::kReduce; };
  policy.is_cheap_to_duplicate = [](const Op& op) {
    if (op.code() == OpCode::kConstant || op.code() == OpCode::kIota) return true;
    return op.code() == OpCode::kBroadcastInDim && op.operand(0)->type().num_elements() == 1;
  };
  policy.multi_output = multi_output;
  PipelineOptions options;
  options.fusion = std::make_shared<const FusionPolicy>(policy);
  return options;
}

std::vector<const Op*> Fusions(const ir::Module& m) {
  std::vector<const Op*> out;
  ir::WalkOps(static_cast<const ir::Region&>(m.EntryFunction()->body()), [&](const Op& op) {
    if (op.code() == OpCode::kFusion) out.push_back(&op);
  });
  return out;
}

std::string Kind(const Op& fusion) { return fusion.attr("kind")->as<ir::StringAttr>().value; }


// Prints, parses, verifies and prints again: the same text. The generic
// form too (`generic_fixpoint` false: it must parse and verify; the models'
// convolution paddings print as dense<[[1, 1], [1, 1]]> and come back as
// splats, an attribute matter outside fusion).
void ExpectRoundTrip(const ir::Module& m, bool generic_fixpoint = true) {
  const std::string text = ir::PrintModule(m);
  auto reparsed = testing::ParseVerifiedOrFail(text);
  ASSERT_TRUE(reparsed);
  EXPECT_EQ(ir::PrintModule(*reparsed), text);
  ir::PrintOptions generic;
  generic.generic = true;
  const std::string generic_text = ir::PrintModule(m, generic);
  auto from_generic = testing::ParseVerifiedOrFail(generic_text);
  ASSERT_TRUE(from_generic);
  if (generic_fixpoint) EXPECT_EQ(ir::PrintModule(*from_generic, generic), generic_text);
}

TEST(FusionTest, ElementwiseChainIsOneLoopFusion) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
    %c = stablehlo.constant dense<2.0> : tensor<8xf32>
    %0 = stablehlo.multiply %a, %c : tensor<8xf32>
    %1 = stablehlo.add %0, %b : tensor<8xf32>
    %2 = stablehlo.tanh %1 : tensor<8xf32>
    return %2 : tensor<8xf32>
  }
}
)", "fusion", {Tensor(F32({8}), {1, 2, 3, 4, 5, 6, 7, 8}), Tensor(F32({8}), {-1, 0, 1, 2, 3, 4, 5, 6})},
                         TestOptions());
  ASSERT_TRUE(m);
  const auto fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(Kind(*fusions[0]), "loop");
  EXPECT_EQ(fusions[0]->num_operands(), 2u);  // a, b; the splat constant is inside
  EXPECT_EQ(fusions[0]->num_results(), 1u);
  // Only the fusion and the return are left at the top level.
  EXPECT_EQ(m->EntryFunction()->entry()->ops().size(), 2u);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.tanh"), 1);
  ExpectRoundTrip(*m);
}

TEST(FusionTest, ReduceTakesItsElementwiseProducers) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4x8xf32>) -> tensor<4xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.exponential %a : tensor<4x8xf32>
    %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
)", "fusion", {Tensor(F32({4, 8}), std::vector<double>(32, 0.5))}, TestOptions());
  ASSERT_TRUE(m);
  const auto fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(Kind(*fusions[0]), "reduction");
  ExpectRoundTrip(*m);
}

// x = a + b feeds a consumer of its shape and is read again later: the
// consumer's kernel writes x too, instead of x getting a kernel of its own.
TEST(FusionTest, MultiOutputElementwise) {
  const char* text = R"(module {
  func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %x = stablehlo.add %a, %b : tensor<8xf32>
    %y = stablehlo.exponential %x : tensor<8xf32>
    %z = stablehlo.multiply %y, %x : tensor<8xf32>
    return %z, %x : tensor<8xf32>, tensor<8xf32>
  }
}
)";
  const std::vector<eval::RuntimeValue> args = {Tensor(F32({8}), {1, 2, 3, 4, 5, 6, 7, 8}),
                                                Tensor(F32({8}), {0.5, 0, 1, 2, 3, 4, 5, 6})};
  auto m = RunAndCompare(text, "fusion", args, TestOptions());
  ASSERT_TRUE(m);
  auto fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 1u);
  EXPECT_EQ(Kind(*fusions[0]), "multi_output");
  EXPECT_EQ(fusions[0]->num_results(), 2u);
  ExpectRoundTrip(*m);
  // Without multi-output fusion x is a kernel of its own.
  auto single = RunAndCompare(text, "fusion", args, TestOptions(/*multi_output=*/false));
  ASSERT_TRUE(single);
  EXPECT_EQ(Fusions(*single).size(), 2u);
}

// Layer norm's shape: the residual add feeds the mean's reduce and the
// centering subtract; the reduce kernel writes the sum as a second output.
TEST(FusionTest, MultiOutputReduceWritesItsInput) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %x = stablehlo.add %a, %b : tensor<4x8xf32>
    %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
    %m = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %d = stablehlo.subtract %x, %m : tensor<4x8xf32>
    return %d : tensor<4x8xf32>
  }
}
)", "fusion", {Tensor(F32({4, 8}), std::vector<double>(32, 0.25)), Tensor(F32({4, 8}), std::vector<double>(32, 1.5))},
                         TestOptions());
  ASSERT_TRUE(m);
  const auto fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 2u);
  EXPECT_EQ(Kind(*fusions[0]), "multi_output");
  EXPECT_EQ(fusions[0]->num_results(), 2u);  // the sum and x
  EXPECT_EQ(Kind(*fusions[1]), "loop");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 2);  // x, and the reduce body's
  ExpectRoundTrip(*m);
}

// A reader of x before the consumer: the fusion op (at the consumer's
// place) would come too late, so x keeps its own kernel.
TEST(FusionTest, NoMultiOutputWhenAReaderComesFirst) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %x = stablehlo.exponential %a : tensor<8xf32>
    %c = stablehlo.reverse %x, dims = [0] : tensor<8xf32>
    %y = stablehlo.negate %x : tensor<8xf32>
    return %y, %c : tensor<8xf32>, tensor<8xf32>
  }
}
)", "fusion", {Tensor(F32({8}), {1, 2, 3, 4, 5, 6, 7, 8})}, TestOptions());
  ASSERT_TRUE(m);
  const auto fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 2u);
  EXPECT_EQ(Kind(*fusions[0]), "loop");
  EXPECT_EQ(Kind(*fusions[1]), "loop");
}

TEST(FusionTest, CheapProducersAreClonedIntoEachUser) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<8xf32>, %s: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %0 = stablehlo.add %a, %b : tensor<8xf32>
    %1 = stablehlo.dot_general %0, %0, contracting_dims = [0] x [0] : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %3 = stablehlo.multiply %2, %b : tensor<8xf32>
    return %0, %3 : tensor<8xf32>, tensor<8xf32>
  }
}
)", "fusion", {Tensor(F32({8}), {1, 2, 3, 4, 5, 6, 7, 8}), Tensor(F32({}), {0.5})}, TestOptions());
  ASSERT_TRUE(m);
  // The scalar broadcast %b is recomputed in both kernels (no buffer).
  EXPECT_EQ(Fusions(*m).size(), 2u);
  int top_level_broadcasts = 0;
  for (const auto& op : m->EntryFunction()->entry()->ops()) {
    top_level_broadcasts += op->code() == OpCode::kBroadcastInDim;
  }
  EXPECT_EQ(top_level_broadcasts, 0);
  ExpectRoundTrip(*m);
}

TEST(FusionTest, FusesInsideWhileBodies) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %3:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32>
     cond {
      %4 = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %5 = stablehlo.add %i, %c1 : tensor<i32>
      %6 = stablehlo.multiply %x, %x : tensor<4xf32>
      %7 = stablehlo.tanh %6 : tensor<4xf32>
      stablehlo.return %5, %7 : tensor<i32>, tensor<4xf32>
    }
    return %3#1 : tensor<4xf32>
  }
}
)", "fusion", {Tensor(F32({4}), {0.1, 0.2, 0.3, 0.4}), Tensor(ir::Type::Scalar(ir::DType::kS32), {3})},
                         TestOptions());
  ASSERT_TRUE(m);
  // cond's compare, body's add and multiply-tanh.
  const auto fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 3u);
  // The splat constant %c1 from outside the body is cloned in, not read.
  EXPECT_EQ(fusions[1]->num_operands(), 1u);
  ExpectRoundTrip(*m);
}

TEST(FusionTest, PassNeedsAPolicy) {
  PassManager manager;
  Status s = AddPipeline(manager, "fusion");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  PassManager with_policy;
  EXPECT_TRUE(AddPipeline(with_policy, "default", TestOptions()).ok());
  EXPECT_EQ(with_policy.PassNames().back(), "fusion");
}

TEST(FusionTest, VerifierChecksFusionOps) {
  // A region reading an outer value.
  auto outer = frontend::ParseModule(R"(module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "jitd.fusion"(%a) <{kind = "loop"}> ({
    ^bb0(%x: tensor<4xf32>):
      %1 = stablehlo.add %x, %a : tensor<4xf32>
      stablehlo.return %1 : tensor<4xf32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  Status s = ir::VerifyModule(**outer);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside"), std::string::npos) << s.ToString();
  auto no_kind = frontend::ParseModule(R"(module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "jitd.fusion"(%a) ({
    ^bb0(%x: tensor<4xf32>):
      %1 = stablehlo.add %x, %x : tensor<4xf32>
      stablehlo.return %1 : tensor<4xf32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(no_kind.ok());
  EXPECT_FALSE(ir::VerifyModule(**no_kind).ok());
  auto wrong_type = frontend::ParseModule(R"(module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "jitd.fusion"(%a) <{kind = "loop"}> ({
    ^bb0(%x: tensor<4xf32>):
      %1 = stablehlo.add %x, %x : tensor<4xf32>
      stablehlo.return %1 : tensor<4xf32>
    }) : (tensor<4xf32>) -> tensor<4xf64>
    return %0 : tensor<4xf32>
  }
}
)");
  if (wrong_type.ok()) EXPECT_FALSE(ir::VerifyModule(**wrong_type).ok());
}

// The interpreter evaluates a fusion op as its region.
TEST(FusionTest, EvaluatorRunsFusionOps) {
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0:2 = "jitd.fusion"(%a) <{kind = "multi_output"}> ({
    ^bb0(%x: tensor<4xf32>):
      %1 = stablehlo.add %x, %x : tensor<4xf32>
      %2 = stablehlo.multiply %1, %x : tensor<4xf32>
      stablehlo.return %2, %1 : tensor<4xf32>, tensor<4xf32>
    }) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(m);
  auto r = testing::Evaluate(*m, {Tensor(F32({4}), {1, 2, 3, -1})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].literal() == Tensor(F32({4}), {2, 8, 18, 2}).literal());
  EXPECT_TRUE(r[1].literal() == Tensor(F32({4}), {2, 4, 6, -2}).literal());
}

// The models through the default pipeline and fusion, verified after every
// pass: every fusible op ends up inside a fusion, and the fused module
// prints, parses and verifies again, printing the same text.
TEST(FusionTest, ModelsFuseAndRoundTrip) {
  namespace fs = std::filesystem;
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(JITD_SHARED_DIR) / "models")) {
    if (entry.path().extension() != ".mlir") continue;
    ++seen;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto m = testing::ParseVerifiedOrFail(text.str());
    ASSERT_TRUE(m) << entry.path();
    const PipelineOptions options = TestOptions();
    testing::RunPipeline(*m, "default", options);
    EXPECT_GT(Fusions(*m).size(), 10u) << entry.path();
    int loose = 0;
    for (const auto& op : m->EntryFunction()->entry()->ops()) {
      loose += op->code() != OpCode::kConstant && options.fusion->is_fusible(*op);
    }
    EXPECT_EQ(loose, 0) << entry.path();
    ExpectRoundTrip(*m, /*generic_fixpoint=*/false);
  }
  EXPECT_EQ(seen, 3);
}

// FusionPolicy::max_ops (300 here): a chain of 1,000 adds (on one splat
// constant, which does not count) becomes kernels of at most 300 adds; a
// chain adding 400 slices of the argument (all defined first, so the walk
// from a root meets every add before any slice) kernels of 150 adds with
// their 150 slices, no slice left alone; a balanced tree of 1,024 slices
// full subtrees, no kernel of fewer than 100 ops. All compute the same
// results.
TEST(FusionTest, KernelsHoldAtMostMaxOps) {
  PipelineOptions options = TestOptions();
  FusionPolicy policy = *options.fusion;
  policy.is_fusible = [base = policy.is_fusible](const Op& op) {
    return op.code() == OpCode::kSlice || base(op);
  };
  policy.max_ops = 300;
  options.fusion = std::make_shared<const FusionPolicy>(policy);
  auto ops_in = [](const Op* fusion, OpCode code) {
    int n = 0;
    for (const auto& op : fusion->region(0).block(0).ops()) n += op->code() == code;
    return n;
  };

  std::string text = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                     "  %c = stablehlo.constant dense<1.0> : tensor<4xf32>\n";
  std::string prev = "%x";
  for (int i = 0; i < 1000; ++i) {
    text += "  %v" + std::to_string(i) + " = stablehlo.add " + prev + ", %c : tensor<4xf32>\n";
    prev = "%v" + std::to_string(i);
  }
  text += "  return " + prev + " : tensor<4xf32>\n}\n";
  auto m = RunAndCompare(text, "fusion", {Tensor(F32({4}), {0, 1, -3, 100})}, options);
  ASSERT_TRUE(m);
  std::vector<const Op*> fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 4u);  // 3 * 300 + 100
  for (const Op* f : fusions) EXPECT_LE(ops_in(f, OpCode::kAdd), 300);

  text = "func.func @main(%x: tensor<400xf32>) -> tensor<1xf32> {\n";
  for (int i = 0; i < 400; ++i) {
    text += "  %l" + std::to_string(i) + " = stablehlo.slice %x [" + std::to_string(i) + ":" +
            std::to_string(i + 1) + "] : (tensor<400xf32>) -> tensor<1xf32>\n";
  }
  prev = "%l0";
  for (int i = 1; i < 400; ++i) {
    text += "  %t" + std::to_string(i) + " = stablehlo.add " + prev + ", %l" + std::to_string(i) +
            " : tensor<1xf32>\n";
    prev = "%t" + std::to_string(i);
  }
  text += "  return " + prev + " : tensor<1xf32>\n}\n";
  std::vector<double> x(400);
  for (int i = 0; i < 400; ++i) x[static_cast<size_t>(i)] = i % 7;
  m = RunAndCompare(text, "fusion", {Tensor(F32({400}), x)}, options);
  ASSERT_TRUE(m);
  fusions = Fusions(*m);
  ASSERT_EQ(fusions.size(), 3u);
  for (const Op* f : fusions) {
    EXPECT_LE(ops_in(f, OpCode::kAdd) + ops_in(f, OpCode::kSlice), 300);
    EXPECT_GE(ops_in(f, OpCode::kAdd), 99);
  }

  text = "func.func @main(%x: tensor<1024xf32>) -> tensor<1xf32> {\n";
  std::vector<std::string> level;
  for (int i = 0; i < 1024; ++i) {
    text += "  %l" + std::to_string(i) + " = stablehlo.slice %x [" + std::to_string(i) + ":" +
            std::to_string(i + 1) + "] : (tensor<1024xf32>) -> tensor<1xf32>\n";
    level.push_back("%l" + std::to_string(i));
  }
  int t = 0;
  while (level.size() > 1) {
    std::vector<std::string> next;
    for (size_t j = 0; j < level.size(); j += 2) {
      next.push_back("%t" + std::to_string(t++));
      text += "  " + next.back() + " = stablehlo.add " + level[j] + ", " + level[j + 1] +
              " : tensor<1xf32>\n";
    }
    level = std::move(next);
  }
  text += "  return " + level[0] + " : tensor<1xf32>\n}\n";
  x.assign(1024, 0);
  for (int i = 0; i < 1024; ++i) x[static_cast<size_t>(i)] = i % 5;
  m = RunAndCompare(text, "fusion", {Tensor(F32({1024}), x)}, options);
  ASSERT_TRUE(m);
  fusions = Fusions(*m);
  EXPECT_LE(fusions.size(), 16u);
  for (const Op* f : fusions) {
    const int n = ops_in(f, OpCode::kAdd) + ops_in(f, OpCode::kSlice);
    EXPECT_LE(n, 300);
    EXPECT_GE(n, 100) << "a tiny kernel";
  }
}

// A block nested ir::kMaxRegionNesting deep is left unfused: a fusion op
// there would nest one level deeper than the limit.
TEST(FusionTest, NoFusionAtTheNestingLimit) {
  std::string text = "func.func @main(%p: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {\n";
  const int depth = ir::kMaxRegionNesting;
  for (int d = 0; d < depth; ++d) {
    text += "%r" + std::to_string(d) + " = \"stablehlo.if\"(%p) ({\n";
  }
  text += "%n = stablehlo.negate %x : tensor<4xf32>\n%e = stablehlo.exponential %n : tensor<4xf32>\n"
          "stablehlo.return %e : tensor<4xf32>\n";
  for (int d = depth; d-- > 0;) {
    text += "}, {\n%m" + std::to_string(d) + " = stablehlo.negate %x : tensor<4xf32>\n" +
            "stablehlo.return %m" + std::to_string(d) + " : tensor<4xf32>\n" +
            "}) : (tensor<i1>) -> tensor<4xf32>\n";
    text += d == 0 ? std::string("return %r0") : "stablehlo.return %r" + std::to_string(d);
    text += " : tensor<4xf32>\n";
  }
  text += "}\n";
  const std::vector<eval::RuntimeValue> args = {Tensor(ir::Type::Scalar(ir::DType::kPred), {1}),
                                                Tensor(F32({4}), {0, 1, 2, 3})};
  auto m = RunAndCompare(text, "fusion", args, TestOptions());
  ASSERT_TRUE(m);
  // The else-branch negates nested less deeply are fused (one kernel each);
  // the two blocks at nesting 64 are not (that would be 65 kernels).
  EXPECT_EQ(CountOpsNamed(*m, "jitd.fusion"), depth - 1);
}

}  // namespace
}  // namespace jitd::passes
