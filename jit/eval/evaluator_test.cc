#include "jit/eval/eval.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <cmath>

#include <tuple>

#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::EvalText;

TEST(EvaluatorTest, ConstantsCallsAndTuples) {
  auto r = EvalText(R"(
func.func @main() -> (tensor<2xi32>, tensor<i32>) {
  %c = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %0:2 = call @pair(%c) : (tensor<2xi32>) -> (tensor<2xi32>, tensor<i32>)
  %t = stablehlo.tuple %0#0, %0#1 : tuple<tensor<2xi32>, tensor<i32>>
  %e = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xi32>, tensor<i32>>) -> tensor<i32>
  return %0#0, %e : tensor<2xi32>, tensor<i32>
}
func.func private @pair(%a: tensor<2xi32>) -> (tensor<2xi32>, tensor<i32>) {
  %c = stablehlo.constant dense<7> : tensor<i32>
  return %a, %c : tensor<2xi32>, tensor<i32>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].literal().GetInt(1), 4);
  EXPECT_EQ((*r)[1].literal().GetInt(0), 7);
}

TEST(EvaluatorTest, CaseClampsItsIndexToTheLastBranch) {
  const char* text = R"(
func.func @main(%i: tensor<i32>) -> tensor<i32> {
  %0 = "stablehlo.case"(%i) ({
    %c = stablehlo.constant dense<10> : tensor<i32>
    stablehlo.return %c : tensor<i32>
  }, {
    %c = stablehlo.constant dense<20> : tensor<i32>
    stablehlo.return %c : tensor<i32>
  }) : (tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
})";
  for (auto [index, expected] : {std::pair{0, 10}, {1, 20}, {5, 20}, {-1, 20}}) {
    ir::Literal arg = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
    arg.SetInt(0, index);
    std::vector<RuntimeValue> args;
    args.emplace_back(std::move(arg));
    auto r = EvalText(text, std::move(args));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].literal().GetInt(0), expected) << index;
  }
}

TEST(EvaluatorTest, ArgumentsAreChecked) {
  auto r = EvalText("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n return %a : tensor<2xf32>\n}");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("takes 1 arguments, got 0"), std::string::npos);
}

TEST(EvaluatorTest, ElidedResourcesNeedAFillSeed) {
  const char* text = R"(
func.func @main() -> tensor<3xf32> {
  %c = stablehlo.constant dense_resource<__elided__> : tensor<3xf32>
  return %c : tensor<3xf32>
})";
  auto r = EvalText(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no data"), std::string::npos);
  EvalOptions options;
  options.resource_fill_seed = 42;
  auto a = EvalText(text, {}, options);
  auto b = EvalText(text, {}, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].literal(), (*b)[0].literal());  // reproducible
  const double v = (*a)[0].literal().GetDouble(0);
  EXPECT_TRUE(v >= -1.0 && v < 1.0);
}

// Elided weights share one name; each gets its own fill, told apart by its
// place among them, never by its source line: the same program respelled
// (moved lines, renamed values) fills the same way.
TEST(EvaluatorTest, ElidedResourcesFillByPlaceNotByLine) {
  const char* text = R"(
func.func @main() -> (tensor<8xf32>, tensor<8xf32>) {
  %a = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>
  %b = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
})";
  const char* moved = R"(


// a comment, and the ops on other lines
func.func @main() -> (tensor<8xf32>, tensor<8xf32>) {

  %first = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>


  %second = stablehlo.constant dense_resource<__elided__> : tensor<8xf32>
  return %first, %second : tensor<8xf32>, tensor<8xf32>
})";
  EvalOptions options;
  options.resource_fill_seed = 7;
  auto a = EvalText(text, {}, options);
  auto b = EvalText(moved, {}, options);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_NE((*a)[0].literal(), (*a)[1].literal());  // two weights, two fills
  EXPECT_EQ((*a)[0].literal(), (*b)[0].literal());
  EXPECT_EQ((*a)[1].literal(), (*b)[1].literal());
}

// RandomFill::kWeights: vectors (batch-norm variances, scales) in
// [0.5, 1.5); kernels within +-sqrt(3 / fan_in), fan_in = all dims but the
// last; a different distribution from the default for the same seed.
TEST(EvaluatorTest, WeightsFillIsValidForNormalisationAndScaledByFanIn) {
  const char* text = R"(
func.func @main() -> (tensor<64xf32>, tensor<3x3x16x8xf32>) {
  %v = stablehlo.constant dense_resource<__elided__> : tensor<64xf32>
  %k = stablehlo.constant dense_resource<__elided__> : tensor<3x3x16x8xf32>
  return %v, %k : tensor<64xf32>, tensor<3x3x16x8xf32>
})";
  EvalOptions options;
  options.resource_fill_seed = 42;
  auto uniform = EvalText(text, {}, options);
  options.resource_fill = RandomFill::kWeights;
  auto weights = EvalText(text, {}, options);
  ASSERT_TRUE(uniform.ok() && weights.ok());
  EXPECT_NE((*uniform)[0].literal(), (*weights)[0].literal());
  const ir::Literal& v = (*weights)[0].literal();
  for (int64_t i = 0; i < v.num_elements(); ++i) {
    EXPECT_GE(v.GetDouble(i), 0.5);
    EXPECT_LT(v.GetDouble(i), 1.5);
  }
  const ir::Literal& k = (*weights)[1].literal();
  const double bound = std::sqrt(3.0 / (3 * 3 * 16));
  double max_abs = 0, sum = 0;
  for (int64_t i = 0; i < k.num_elements(); ++i) {
    max_abs = std::max(max_abs, std::fabs(k.GetDouble(i)));
    sum += k.GetDouble(i);
  }
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.9 * bound);  // spans the range (1152 samples)
  EXPECT_LT(std::fabs(sum / static_cast<double>(k.num_elements())), 0.1 * bound);  // centred
  EXPECT_EQ(ParseRandomFill("weights").value(), RandomFill::kWeights);
  EXPECT_EQ(RandomFillName(*ParseRandomFill("uniform")), "uniform");
  EXPECT_FALSE(ParseRandomFill("normal").ok());
}
TEST(EvaluatorTest, DeadlineStopsInfiniteLoops) {
  EvalOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  auto r = EvalText(R"(
func.func @main() -> tensor<i1> {
  %t = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.while(%it = %t) : tensor<i1>
   cond {
    stablehlo.return %it : tensor<i1>
  } do {
    stablehlo.return %it : tensor<i1>
  }
  return %0 : tensor<i1>
})",
               {}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
}

TEST(EvaluatorTest, RecursionIsBounded) {
  auto r = EvalText(R"(
func.func @main() -> tensor<i32> {
  %0 = call @main() : () -> tensor<i32>
  return %0 : tensor<i32>
})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

// Recursion through regions (a call inside an if inside the callee) counts
// every level, calls and regions alike, against one limit: the evaluation
// fails cleanly within a 1 MiB stack (each level takes ~3 KiB of native
// stack; counting calls only, 256 calls here were 512 levels).
TEST(EvaluatorTest, RecursionThroughRegionsIsBounded) {
  const char* text = R"(
func.func @main(%x: tensor<i32>) -> tensor<i32> {
  %0 = call @f(%x) : (tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
}
func.func private @f(%x: tensor<i32>) -> tensor<i32> {
  %t = stablehlo.constant dense<true> : tensor<i1>
  %r = "stablehlo.if"(%t) ({
    %y = func.call @f(%x) : (tensor<i32>) -> tensor<i32>
    stablehlo.return %y : tensor<i32>
  }, {
    stablehlo.return %x : tensor<i32>
  }) : (tensor<i1>) -> tensor<i32>
  return %r : tensor<i32>
})";
  Status status;
  auto run = [&] {
    ir::Literal arg = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
    std::vector<RuntimeValue> args;
    args.emplace_back(std::move(arg));
    status = EvalText(text, std::move(args)).status();
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{1} << 20);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, [](void* f) -> void* {
              (*static_cast<decltype(run)*>(f))();
              return nullptr;
            }, &run), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("nested deeper than 256 levels, the limit (recursion?)"),
            std::string::npos)
      << status.message();
}

TEST(EvaluatorTest, EvaluateDetachedOpRunsOneOpWithItsRegions) {
  auto m = frontend::ParseModule(R"(
func.func @main(%x: tensor<3xi32>, %init: tensor<i32>) -> tensor<i32> {
  %0 = stablehlo.reduce(%x init: %init) across dimensions = [0] : (tensor<3xi32>, tensor<i32>) -> tensor<i32>
   reducer(%p: tensor<i32>, %q: tensor<i32>) {
    %s = stablehlo.add %p, %q : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }
  return %0 : tensor<i32>
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Op& reduce = *(*m)->EntryFunction()->entry()->ops()[0];
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kS32, {3}));
  for (int i = 0; i < 3; ++i) x.SetInt(i, i + 1);
  ir::Literal init = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
  init.SetInt(0, 10);
  std::vector<RuntimeValue> operands;
  operands.emplace_back(x);
  operands.emplace_back(init);
  auto r = EvaluateDetachedOp(**m, reduce, operands);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].literal().GetInt(0), 16);
  // Wrong operand count or type: an error, not a crash.
  operands.pop_back();
  EXPECT_FALSE(EvaluateDetachedOp(**m, reduce, operands).ok());
  operands.emplace_back(x);
  EXPECT_FALSE(EvaluateDetachedOp(**m, reduce, operands).ok());
  // A terminator alone is refused.
  const ir::Op& ret = *(*m)->EntryFunction()->entry()->terminator();
  EXPECT_FALSE(EvaluateDetachedOp(**m, ret, {RuntimeValue(init)}).ok());
}

TEST(EvaluatorTest, RegionEvaluatorRunsAComparatorRegionRepeatedly) {
  auto module = frontend::ParseModule(R"(
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.sort"(%a) <{dimension = 0 : i64}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.compare GT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
})");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const ir::Region& region = (*module)->EntryFunction()->entry()->ops()[0]->region(0);
  RegionEvaluator evaluator(**module);
  auto scalar = [](double v) {
    ir::Literal l = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kF32));
    l.SetDouble(0, v);
    return RuntimeValue(std::move(l));
  };
  for (auto [x, y, want] : {std::tuple{2.0, 1.0, true}, {1.0, 2.0, false}, {3.0, 3.0, false}}) {
    auto r = evaluator.Run(region, {scalar(x), scalar(y)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].literal().GetPred(0), want);
  }
  EXPECT_FALSE(evaluator.Run(region, {scalar(1)}).ok());  // wrong argument count
}

constexpr const char* kFeedProgram = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:3 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, tensor<i32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  %t2 = "stablehlo.outfeed"(%s, %v#1, %v#2) : (tensor<2xf32>, tensor<i32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
})";

TEST(EvaluatorTest, InfeedAndOutfeedGoThroughTheHooks) {
  std::vector<ir::Literal> outfed;
  std::vector<ir::Type> asked;
  EvalOptions options;
  options.infeed = [&](const std::vector<ir::Type>& types,
                       std::optional<std::chrono::steady_clock::time_point>)
      -> StatusOr<std::vector<ir::Literal>> {
    asked = types;
    ir::Literal a = *ir::Literal::Create(types[0]);
    a.SetDouble(0, 10);
    a.SetDouble(1, 20);
    ir::Literal b = *ir::Literal::Create(types[1]);
    b.SetInt(0, 7);
    return std::vector<ir::Literal>{a, b};
  };
  options.outfeed = [&](std::vector<ir::Literal> values,
                        std::optional<std::chrono::steady_clock::time_point>) -> Status {
    outfed = std::move(values);
    return Status::Ok();
  };
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2}));
  x.SetDouble(0, 1);
  x.SetDouble(1, 2);
  std::vector<RuntimeValue> args;
  args.emplace_back(x);
  auto r = EvalText(kFeedProgram, std::move(args), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].ToString(), "tensor<2xf32>");
  EXPECT_EQ(asked[1].ToString(), "tensor<i32>");
  EXPECT_EQ(testing::Doubles((*r)[0].literal()), (std::vector<double>{11, 22}));
  ASSERT_EQ(outfed.size(), 2u);
  EXPECT_EQ(testing::Doubles(outfed[0]), (std::vector<double>{11, 22}));
  EXPECT_EQ(testing::Ints(outfed[1]), (std::vector<int64_t>{7}));
}

TEST(EvaluatorTest, InfeedErrorsNameTheOp) {
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2}));
  auto args = [&] {
    std::vector<RuntimeValue> a;
    a.emplace_back(x);
    return a;
  };
  // No hooks: UNIMPLEMENTED.
  auto r = EvalText(kFeedProgram, args());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("'stablehlo.infeed' op has no infeed queue"),
            std::string::npos)
      << r.status().message();
  // A hook that times out: its code and message come through with the op's place.
  EvalOptions options;
  options.infeed = [](const std::vector<ir::Type>&,
                      std::optional<std::chrono::steady_clock::time_point>)
      -> StatusOr<std::vector<ir::Literal>> { return Status(StatusCode::kDeadlineExceeded, "nobody fed it"); };
  r = EvalText(kFeedProgram, args(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("4:"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("nobody fed it"), std::string::npos);
  // A hook that gives the wrong type is refused.
  options.infeed = [](const std::vector<ir::Type>& types,
                      std::optional<std::chrono::steady_clock::time_point>)
      -> StatusOr<std::vector<ir::Literal>> {
    return std::vector<ir::Literal>{*ir::Literal::Create(types[1]),
                                    *ir::Literal::Create(types[1])};
  };
  r = EvalText(kFeedProgram, args(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the infeed gave tensor<i32>"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace jitd::eval
