#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::kInf;
using testing::kNaN;
using testing::RunAndCompare;
using testing::Tensor;


TEST(CanonicalizeTest, ComposesAndRemovesDataMovement) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>, tensor<3x4x2xf32>, tensor<2x3x4xf32>) {
    %0 = stablehlo.reshape %a : (tensor<2x3x4xf32>) -> tensor<24xf32>
    %1 = stablehlo.reshape %0 : (tensor<24xf32>) -> tensor<6x4xf32>
    %2 = stablehlo.transpose %a, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %3 = stablehlo.transpose %2, dims = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
    %4 = stablehlo.transpose %3, dims = [2, 0, 1] : (tensor<4x2x3xf32>) -> tensor<3x4x2xf32>
    %5 = stablehlo.convert %a : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %6 = stablehlo.slice %5 [0:2, 0:3, 0:4] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %1, %2, %4, %7 : tensor<6x4xf32>, tensor<2x3x4xf32>, tensor<3x4x2xf32>, tensor<2x3x4xf32>
  }
}
)", "canonicalize,dce", {Tensor(ir::Type::Tensor(ir::DType::kF32, {2, 3, 4}),
                               {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                20, 21, 22, 23, 24})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.reshape"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.transpose"), 1);  // [2,0,1] then [2,0,1] = [1,2,0]
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.convert"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.slice"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.broadcast_in_dim"), 0);
}

// Values 1, 2, 3, ... scaled so that sums are inexact in f32 (a changed
// summation order would show).
eval::RuntimeValue Ramp(std::vector<int64_t> dims, double scale) {
  ir::Type type = ir::Type::Tensor(ir::DType::kF32, dims);
  std::vector<double> v(static_cast<size_t>(type.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<double>(i + 1) + 1.0 / 3;
  return Tensor(type, v);
}

TEST(CanonicalizeTest, TransposesFoldIntoDotGeneral) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%x: tensor<3x4xf32>, %w: tensor<5x4xf32>, %b: tensor<2x4x3xf32>, %c: tensor<2x5x4xf32>, %d: tensor<3x2x4xf32>) -> (tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>) {
    %wt = stablehlo.transpose %w, dims = [1, 0] : (tensor<5x4xf32>) -> tensor<4x5xf32>
    %0 = stablehlo.dot_general %x, %wt, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
    %bt = stablehlo.transpose %b, dims = [0, 2, 1] : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
    %ct = stablehlo.transpose %c, dims = [0, 2, 1] : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
    %1 = stablehlo.dot_general %bt, %ct, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    %dt = stablehlo.transpose %d, dims = [1, 0, 2] : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
    %2 = stablehlo.dot_general %dt, %wt, contracting_dims = [2] x [0] : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
    return %0, %1, %2 : tensor<3x5xf32>, tensor<2x3x5xf32>, tensor<2x3x5xf32>
  }
}
)", "canonicalize,dce", {Ramp({3, 4}, 0.1), Ramp({5, 4}, 0.7), Ramp({2, 4, 3}, 0.3),
                               Ramp({2, 5, 4}, 1.1), Ramp({3, 2, 4}, 0.9)});
  ASSERT_TRUE(m);
  // %wt and %bt, %ct fold away; %dt stays: its free dimensions (0, 1) come
  // from %d's (1, 0), so folding would change the result's layout.
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.transpose"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.dot_general"), 3);
}

TEST(CanonicalizeTest, BroadcastsOfBroadcastsAndOfSplats) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<3xf32>) -> (tensor<2x4x3xf32>, tensor<5x5xi32>) {
    %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [1, 2] : (tensor<1x3xf32>) -> tensor<2x4x3xf32>
    %c = stablehlo.constant dense<7> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x5xi32>
    return %1, %2 : tensor<2x4x3xf32>, tensor<5x5xi32>
  }
}
)", "canonicalize,dce", {Tensor(ir::Type::Tensor(ir::DType::kF32, {3}), {1, -0.0, kNaN})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.broadcast_in_dim"), 1);
  EXPECT_NE(ir::PrintModule(*m).find("dense<7> : tensor<5x5xi32>"), std::string::npos);
}

TEST(CanonicalizeTest, IntegerIdentitiesGoFloatOnesStay) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%i: tensor<3xi32>, %f: tensor<3xf32>) -> (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
    %z = stablehlo.constant dense<0> : tensor<3xi32>
    %one = stablehlo.constant dense<1> : tensor<3xi32>
    %m1 = stablehlo.constant dense<-1> : tensor<3xi32>
    %0 = stablehlo.add %i, %z : tensor<3xi32>
    %1 = stablehlo.multiply %one, %0 : tensor<3xi32>
    %2 = stablehlo.subtract %1, %z : tensor<3xi32>
    %3 = stablehlo.and %2, %m1 : tensor<3xi32>
    %4 = stablehlo.xor %3, %z : tensor<3xi32>
    %5 = stablehlo.negate %4 : tensor<3xi32>
    %6 = stablehlo.negate %5 : tensor<3xi32>
    %fz = stablehlo.constant dense<0.0> : tensor<3xf32>
    %fnz = stablehlo.constant dense<-0.0> : tensor<3xf32>
    %fone = stablehlo.constant dense<1.0> : tensor<3xf32>
    %7 = stablehlo.add %f, %fz : tensor<3xf32>
    %8 = stablehlo.add %f, %fnz : tensor<3xf32>
    %9 = stablehlo.multiply %f, %fone : tensor<3xf32>
    %10 = stablehlo.subtract %f, %fz : tensor<3xf32>
    return %6, %7, %8, %9, %10 : tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  }
}
)", "canonicalize,dce", {Tensor(ir::Type::Tensor(ir::DType::kS32, {3}), {5, -2147483648.0, 0}),
                          Tensor(ir::Type::Tensor(ir::DType::kF32, {3}), {-0.0, kNaN, -kInf})});
  ASSERT_TRUE(m);
  // Every integer op is gone: the first result is %i itself.
  for (const char* op : {"stablehlo.and", "stablehlo.xor", "stablehlo.negate"}) {
    EXPECT_EQ(CountOpsNamed(*m, op), 0) << op;
  }
  // The float ones all stay (x + 0.0 turns -0.0 into +0.0, and the others
  // quiet signaling NaNs).
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 2);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.multiply"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.subtract"), 1);
  const ir::Function& main = *m->EntryFunction();
  EXPECT_EQ(main.entry()->terminator()->operand(0), main.entry()->arg(0));
}

TEST(CanonicalizeTest, SelectWithConstantPredicateOrEqualSides) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%p: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %t = stablehlo.constant dense<true> : tensor<i1>
    %f = stablehlo.constant dense<false> : tensor<2xi1>
    %0 = stablehlo.select %t, %a, %b : tensor<i1>, tensor<2xf32>
    %1 = stablehlo.select %f, %a, %b : tensor<2xi1>, tensor<2xf32>
    %2 = stablehlo.select %p, %a, %a : tensor<2xi1>, tensor<2xf32>
    %3 = stablehlo.select %p, %a, %b : tensor<2xi1>, tensor<2xf32>
    return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
)", "canonicalize,dce", {Tensor(ir::Type::Tensor(ir::DType::kPred, {2}), {1, 0}),
                          Tensor(ir::Type::Tensor(ir::DType::kF32, {2}), {1, 2}),
                          Tensor(ir::Type::Tensor(ir::DType::kF32, {2}), {3, 4})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.select"), 1);  // only the real choice
}

TEST(CanonicalizeTest, SlicesComposeAndConstantDynamicSlicesBecomeSlices) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<10x7xi32>) -> (tensor<2x2xi32>, tensor<3x2xi32>, tensor<0x2xi32>) {
    %0 = stablehlo.slice %a [1:10:2, 0:7:3] : (tensor<10x7xi32>) -> tensor<5x3xi32>
    %1 = stablehlo.slice %0 [1:5:2, 1:3] : (tensor<5x3xi32>) -> tensor<2x2xi32>
    %i = stablehlo.constant dense<9> : tensor<i64>
    %j = stablehlo.constant dense<-4> : tensor<i64>
    %2 = stablehlo.dynamic_slice %a, %i, %j, sizes = [3, 2] : (tensor<10x7xi32>, tensor<i64>, tensor<i64>) -> tensor<3x2xi32>
    %3 = stablehlo.slice %0 [3:3, 0:2] : (tensor<5x3xi32>) -> tensor<0x2xi32>
    return %1, %2, %3 : tensor<2x2xi32>, tensor<3x2xi32>, tensor<0x2xi32>
  }
}
)", "canonicalize,dce", {Tensor(ir::Type::Tensor(ir::DType::kS32, {10, 7}), [] {
                          std::vector<double> v;
                          for (int i = 0; i < 70; ++i) v.push_back(i);
                          return v;
                        }())});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.dynamic_slice"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.slice"), 3);  // each straight from %a
  ir::WalkOps(static_cast<const ir::Region&>(m->EntryFunction()->body()), [&](const ir::Op& op) {
    if (op.code() == ir::OpCode::kSlice) EXPECT_EQ(op.operand(0), m->EntryFunction()->entry()->arg(0));
  });
}

TEST(CanonicalizeTest, GetTupleElementOfTuple) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<2xf32>, %b: tensor<i32>) -> tensor<i32> {
    %t = "stablehlo.tuple"(%a, %b) : (tensor<2xf32>, tensor<i32>) -> tuple<tensor<2xf32>, tensor<i32>>
    %0 = "stablehlo.get_tuple_element"(%t) <{index = 1 : i32}> : (tuple<tensor<2xf32>, tensor<i32>>) -> tensor<i32>
    return %0 : tensor<i32>
  }
}
)", "canonicalize,dce", {Tensor(ir::Type::Tensor(ir::DType::kF32, {2}), {1, 2}),
                          Tensor(ir::Type::Scalar(ir::DType::kS32), {7})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.get_tuple_element"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.tuple"), 0);
}

TEST(CanonicalizeTest, ReshapeOfConstantKeepsItsBytes) {
  auto m = RunAndCompare(R"(module {
  func.func @main() -> tensor<2x2xi32> {
    %c = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
    %0 = stablehlo.reshape %c : (tensor<4xi32>) -> tensor<2x2xi32>
    return %0 : tensor<2x2xi32>
  }
}
)", "canonicalize,dce");
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.reshape"), 0);
  EXPECT_NE(ir::PrintModule(*m).find("dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>"),
            std::string::npos)
      << ir::PrintModule(*m);
}

}  // namespace
}  // namespace jitd::passes
