#include "jit/ir/literal.h"

#include <gtest/gtest.h>

#include "jit/ir/attribute.h"

namespace jitd::ir {
namespace {

TEST(LiteralTest, IntegersWrapAndExtend) {
  auto lit = Literal::Create(Type::Tensor(DType::kS8, {3}));
  ASSERT_TRUE(lit.ok());
  lit->SetInt(0, -1);
  lit->SetInt(1, 300);  // wraps to 44
  lit->SetInt(2, 127);
  EXPECT_EQ(lit->GetInt(0), -1);
  EXPECT_EQ(lit->GetInt(1), 44);
  EXPECT_EQ(lit->GetUInt(0), ~uint64_t{0});  // sign-extended
  auto u4 = Literal::Create(Type::Tensor(DType::kU4, {1}));
  u4->SetInt(0, 17);
  EXPECT_EQ(u4->GetUInt(0), 1u);
  auto s4 = Literal::Create(Type::Tensor(DType::kS4, {1}));
  s4->SetInt(0, 9);  // 0b1001 = -7
  EXPECT_EQ(s4->GetInt(0), -7);
}

TEST(LiteralTest, FloatsAndComplex) {
  auto lit = Literal::Create(Type::Tensor(DType::kBF16, {2}));
  lit->SetDouble(0, 1.0);
  lit->SetDouble(1, -2.5);
  EXPECT_EQ(lit->GetDouble(0), 1.0);
  EXPECT_EQ(lit->GetDouble(1), -2.5);
  EXPECT_EQ(lit->GetBits(0), 0x3F80u);
  auto c = Literal::Create(Type::Tensor(DType::kC64, {1}));
  c->SetComplex(0, {1.5, -2.0});
  EXPECT_EQ(c->GetComplex(0), std::complex<double>(1.5, -2.0));
}

TEST(LiteralTest, RefusesHugeAllocations) {
  auto lit = Literal::Create(Type::Tensor(DType::kF32, {int64_t{1} << 36}));
  EXPECT_FALSE(lit.ok());
  EXPECT_EQ(lit.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(Literal::Create(Type::Token()).ok());
  EXPECT_FALSE(Literal::FromBytes(Type::Tensor(DType::kF32, {2}), {1, 2, 3}).ok());
}

TEST(LiteralTest, SplatDetectionAndDenseRoundTrip) {
  auto lit = Literal::Create(Type::Tensor(DType::kS32, {4}));
  EXPECT_TRUE(lit->IsSplat());
  DenseElementsAttr splat = MakeDenseElements(*lit);
  EXPECT_TRUE(splat.splat);
  EXPECT_EQ(splat.data->size(), 4u);
  lit->SetInt(2, 7);
  EXPECT_FALSE(lit->IsSplat());
  DenseElementsAttr full = MakeDenseElements(*lit);
  auto back = DenseElementsToLiteral(full);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *lit);
  auto expanded = DenseElementsToLiteral(splat);
  ASSERT_TRUE(expanded.ok());
  EXPECT_EQ(expanded->num_elements(), 4);
}

TEST(TypeTest, CheckedTensorLimits) {
  EXPECT_TRUE(Type::CheckedTensor(DType::kF32, {2, 3}).ok());
  EXPECT_TRUE(Type::CheckedTensor(DType::kF32, {0, int64_t{1} << 40}).ok());
  EXPECT_FALSE(Type::CheckedTensor(DType::kF32, {int64_t{1} << 21, int64_t{1} << 21}).ok());
  EXPECT_FALSE(Type::CheckedTensor(DType::kF32, {-1}).ok());
  EXPECT_FALSE(Type::CheckedTensor(DType::kF32, std::vector<int64_t>(65, 1)).ok());
  EXPECT_EQ(Type::Tensor(DType::kC64, {2, 3}).ToString(), "tensor<2x3xcomplex<f32>>");
  EXPECT_EQ(Type::Tuple({Type::Token(), Type::Scalar(DType::kPred)}).ToString(),
            "tuple<!stablehlo.token, tensor<i1>>");
}

}  // namespace
}  // namespace jitd::ir

namespace jitd::ir {
namespace {

TEST(LiteralTest, GenericAccessorsAreDefinedForEveryInput) {
  auto ints = Literal::Create(Type::Tensor(DType::kS32, {3}));
  ints->SetDouble(0, NAN);
  ints->SetDouble(1, 1e300);
  ints->SetDouble(2, -2.7);
  EXPECT_EQ(ints->GetInt(0), 0);
  EXPECT_EQ(ints->GetInt(1), -1);  // saturates to INT64_MAX, then wraps to i32
  EXPECT_EQ(ints->GetInt(2), -2);
  auto floats = Literal::Create(Type::Tensor(DType::kF64, {1}));
  floats->SetDouble(0, -1e300);
  EXPECT_EQ(floats->GetInt(0), INT64_MIN);
  EXPECT_EQ(floats->GetUInt(0), 0u);
}

}  // namespace
}  // namespace jitd::ir
