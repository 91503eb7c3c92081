// cuBLASLt descriptor building offline: dot_general dimension numbers to
// column-major matmul shapes, transposes, strides and batch counts; types
// and compute types per precision; layouts the plan refuses; the encoded
// plan's round trip and its checks.
#include "devices/cuda/cublaslt_plan.h"

#include <gtest/gtest.h>

#include <memory>

#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

using ir::DType;

MatmulProblem Problem(DType t, std::vector<int64_t> lhs, std::vector<int64_t> rhs, std::vector<int64_t> lb,
                      std::vector<int64_t> rb, std::vector<int64_t> lc, std::vector<int64_t> rc) {
  MatmulProblem p;
  p.lhs_type = p.rhs_type = p.result_type = t;
  p.lhs_dims = std::move(lhs);
  p.rhs_dims = std::move(rhs);
  p.lhs_batching = std::move(lb);
  p.rhs_batching = std::move(rb);
  p.lhs_contracting = std::move(lc);
  p.rhs_contracting = std::move(rc);
  return p;
}

TEST(CublasLtPlanTest, PlainMatmulIsTheTransposedColumnMajorProduct) {
  // lhs [m=3, k=4] x rhs [k=4, n=5] row-major: C^T (5 x 3) = rhs_cm (5 x 4) * lhs_cm (4 x 3).
  auto plan = PlanCublasLtMatmul(Problem(DType::kF32, {3, 4}, {4, 5}, {}, {}, {1}, {0}), false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->m, 5);
  EXPECT_EQ(plan->n, 3);
  EXPECT_EQ(plan->k, 4);
  EXPECT_EQ(plan->batch, 1);
  EXPECT_FALSE(plan->trans_a);
  EXPECT_FALSE(plan->trans_b);
  EXPECT_EQ(plan->a_rows, 5);
  EXPECT_EQ(plan->a_cols, 4);
  EXPECT_EQ(plan->lda, 5);
  EXPECT_EQ(plan->b_rows, 4);
  EXPECT_EQ(plan->b_cols, 3);
  EXPECT_EQ(plan->ldb, 4);
  EXPECT_EQ(plan->c_rows, 5);
  EXPECT_EQ(plan->c_cols, 3);
  EXPECT_EQ(plan->ldc, 5);
  EXPECT_EQ(plan->workspace_bytes, kCublasLtWorkspaceBytes);
}

TEST(CublasLtPlanTest, ContractingFirstOrLastSetsTheTransposes) {
  // lhs [k=4, m=3] (contracting first): B transposed, stored 3 x 4 ld 3.
  auto lhs_t = PlanCublasLtMatmul(Problem(DType::kF32, {4, 3}, {4, 5}, {}, {}, {0}, {0}), false);
  ASSERT_TRUE(lhs_t.ok()) << lhs_t.status().message();
  EXPECT_TRUE(lhs_t->trans_b);
  EXPECT_FALSE(lhs_t->trans_a);
  EXPECT_EQ(lhs_t->b_rows, 3);
  EXPECT_EQ(lhs_t->b_cols, 4);
  EXPECT_EQ(lhs_t->ldb, 3);
  // rhs [n=5, k=4] (contracting last): A transposed, stored 4 x 5 ld 4.
  auto rhs_t = PlanCublasLtMatmul(Problem(DType::kF32, {3, 4}, {5, 4}, {}, {}, {1}, {1}), false);
  ASSERT_TRUE(rhs_t.ok()) << rhs_t.status().message();
  EXPECT_TRUE(rhs_t->trans_a);
  EXPECT_FALSE(rhs_t->trans_b);
  EXPECT_EQ(rhs_t->a_rows, 4);
  EXPECT_EQ(rhs_t->a_cols, 5);
  EXPECT_EQ(rhs_t->lda, 4);
  EXPECT_EQ(rhs_t->m, 5);
  EXPECT_EQ(rhs_t->n, 3);
}

TEST(CublasLtPlanTest, BatchDimsGiveStridedBatches) {
  // [2, 3, 7, 4] x [2, 3, 4, 5]: batch 6, m 5, n 7, k 4.
  auto plan =
      PlanCublasLtMatmul(Problem(DType::kF64, {2, 3, 7, 4}, {2, 3, 4, 5}, {0, 1}, {0, 1}, {3}, {2}), false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->batch, 6);
  EXPECT_EQ(plan->stride_a, 20);
  EXPECT_EQ(plan->stride_b, 28);
  EXPECT_EQ(plan->stride_c, 35);
  EXPECT_EQ(plan->compute, LibCompute::k64F);
  EXPECT_EQ(plan->scale_type, LibType::kF64);
}

TEST(CublasLtPlanTest, SeveralFreeAndContractingDimsFlatten) {
  // lhs [2, 3, 4, 5] with contracting {2, 3} (k = 20), free {0, 1} (n = 6);
  // rhs [4, 5, 7] with contracting {0, 1}, free {2} (m = 7).
  auto plan = PlanCublasLtMatmul(Problem(DType::kF32, {2, 3, 4, 5}, {4, 5, 7}, {}, {}, {2, 3}, {0, 1}), false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->k, 20);
  EXPECT_EQ(plan->n, 6);
  EXPECT_EQ(plan->m, 7);
  // A vector-matrix dot: no lhs free dims (n = 1).
  auto vec = PlanCublasLtMatmul(Problem(DType::kF32, {4}, {4, 5}, {}, {}, {0}, {0}), false);
  ASSERT_TRUE(vec.ok()) << vec.status().message();
  EXPECT_EQ(vec->n, 1);
  EXPECT_EQ(vec->m, 5);
}

TEST(CublasLtPlanTest, PrecisionPicksTheComputeType) {
  MatmulProblem p = Problem(DType::kF32, {8, 8}, {8, 8}, {}, {}, {1}, {0});
  for (MatmulPrecision precision : {MatmulPrecision::kDefault, MatmulPrecision::kHigh}) {
    p.precision = precision;
    EXPECT_EQ(PlanCublasLtMatmul(p, false)->compute, LibCompute::k32FFastTF32);
    EXPECT_EQ(PlanCublasLtMatmul(p, true)->compute, LibCompute::k32F);  // --cuda-exact-f32
  }
  p.precision = MatmulPrecision::kHighest;
  EXPECT_EQ(PlanCublasLtMatmul(p, false)->compute, LibCompute::k32F);
}

TEST(CublasLtPlanTest, HalfTypesAccumulateInF32) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    MatmulProblem p = Problem(t, {8, 8}, {8, 8}, {}, {}, {1}, {0});
    auto same = PlanCublasLtMatmul(p, false);
    ASSERT_TRUE(same.ok()) << same.status().message();
    EXPECT_EQ(same->compute, LibCompute::k32F);
    EXPECT_EQ(same->scale_type, LibType::kF32);
    EXPECT_EQ(same->c_type, same->a_type);
    p.result_type = DType::kF32;
    auto wide = PlanCublasLtMatmul(p, false);
    ASSERT_TRUE(wide.ok()) << wide.status().message();
    EXPECT_EQ(wide->c_type, LibType::kF32);
  }
  auto c64 = PlanCublasLtMatmul(Problem(DType::kC64, {2, 2}, {2, 2}, {}, {}, {1}, {0}), false);
  ASSERT_TRUE(c64.ok());
  EXPECT_EQ(c64->scale_type, LibType::kC64);
  EXPECT_EQ(c64->compute, LibCompute::k32F);
  auto c128 = PlanCublasLtMatmul(Problem(DType::kC128, {2, 2}, {2, 2}, {}, {}, {1}, {0}), false);
  ASSERT_TRUE(c128.ok());
  EXPECT_EQ(c128->compute, LibCompute::k64F);
}

TEST(CublasLtPlanTest, RefusesWhatItCannotLayOutByName) {
  auto expect_not_found = [](const MatmulProblem& p, const std::string& words) {
    auto plan = PlanCublasLtMatmul(p, false);
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::kNotFound) << plan.status().message();
    EXPECT_NE(plan.status().message().find(words), std::string::npos) << plan.status().message();
  };
  // Integer dots keep the exact kernel.
  expect_not_found(Problem(DType::kS32, {2, 2}, {2, 2}, {}, {}, {1}, {0}), "types");
  // A batch dimension that does not lead.
  expect_not_found(Problem(DType::kF32, {3, 2, 4}, {2, 4, 5}, {1}, {0}, {2}, {1}), "batch dimensions");
  // Contracting dimensions paired in different orders.
  expect_not_found(Problem(DType::kF32, {3, 4, 5}, {5, 4, 6}, {}, {}, {1, 2}, {1, 0}), "same order");
  // Contracting dims split around a free dim.
  expect_not_found(Problem(DType::kF32, {4, 3, 5}, {4, 5, 6}, {}, {}, {0, 2}, {0, 1}), "one block");
  // Empty.
  expect_not_found(Problem(DType::kF32, {0, 4}, {4, 5}, {}, {}, {1}, {0}), "empty");
  // f32 operands with an f64 result.
  MatmulProblem mixed = Problem(DType::kF32, {2, 2}, {2, 2}, {}, {}, {1}, {0});
  mixed.result_type = DType::kF64;
  expect_not_found(mixed, "result");
  // Malformed numbers are INVALID_ARGUMENT.
  auto bad = PlanCublasLtMatmul(Problem(DType::kF32, {2, 3}, {4, 5}, {}, {}, {1}, {0}), false);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto out_of_range = PlanCublasLtMatmul(Problem(DType::kF32, {2, 3}, {3, 5}, {}, {}, {2}, {0}), false);
  EXPECT_EQ(out_of_range.status().code(), StatusCode::kInvalidArgument);
}

TEST(CublasLtPlanTest, CanonicalizingPermutesIntoAPlannableLayout) {
  // lhs [k=4, b=2, m=3] batch {1} contracting {0}; rhs [n=5, b=2, k=4]
  // batch {1} contracting {2}.
  MatmulProblem p = Problem(DType::kF32, {4, 2, 3}, {5, 2, 4}, {1}, {1}, {0}, {2});
  EXPECT_EQ(PlanCublasLtMatmul(p, false).status().code(), StatusCode::kNotFound);
  const CanonicalMatmul c = CanonicalizeMatmul(p);
  EXPECT_EQ(c.lhs_permutation, (std::vector<int64_t>{1, 2, 0}));  // [b, m, k]
  EXPECT_EQ(c.rhs_permutation, (std::vector<int64_t>{1, 2, 0}));  // [b, k, n]
  EXPECT_EQ(c.problem.lhs_dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(c.problem.rhs_dims, (std::vector<int64_t>{2, 4, 5}));
  auto plan = PlanCublasLtMatmul(c.problem, false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_FALSE(plan->trans_a);
  EXPECT_FALSE(plan->trans_b);
  EXPECT_EQ(plan->batch, 2);
  // Contracting dims paired in another order than their positions.
  MatmulProblem q = Problem(DType::kF32, {3, 4, 5}, {5, 4, 6}, {}, {}, {1, 2}, {1, 0});
  const CanonicalMatmul cq = CanonicalizeMatmul(q);
  EXPECT_TRUE(cq.lhs_permutation.empty());  // [m, k0, k1] already
  EXPECT_EQ(cq.rhs_permutation, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_TRUE(PlanCublasLtMatmul(cq.problem, false).ok());
  // Already canonical: no permutation.
  const CanonicalMatmul same = CanonicalizeMatmul(Problem(DType::kF32, {3, 4}, {4, 5}, {}, {}, {1}, {0}));
  EXPECT_TRUE(same.lhs_permutation.empty());
  EXPECT_TRUE(same.rhs_permutation.empty());
}

TEST(CublasLtPlanTest, ProblemFromTheOp) {
  auto module = frontend::ParseModule(R"(
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
})");
  ASSERT_TRUE(module.ok()) << module.status().message();
  const ir::Op& dot = *(*module)->EntryFunction()->entry()->ops().front();
  auto problem = MatmulProblemOf(dot);
  ASSERT_TRUE(problem.ok()) << problem.status().message();
  EXPECT_EQ(problem->precision, MatmulPrecision::kHighest);
  EXPECT_EQ(problem->lhs_batching, std::vector<int64_t>{0});
  EXPECT_EQ(problem->rhs_contracting, std::vector<int64_t>{1});
  auto plan = PlanCublasLtMatmul(*problem, false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->compute, LibCompute::k32F);  // HIGHEST wins
  EXPECT_EQ(plan->batch, 2);
  EXPECT_EQ(DescribeMatmulPlan(*plan), "matmul 2 x [3x4 * 4x5] f32 compute 32F");
}

TEST(CublasLtPlanTest, EncodedPlanRoundTripsAndIsChecked) {
  auto plan = PlanCublasLtMatmul(Problem(DType::kBF16, {2, 4, 3}, {2, 5, 4}, {0}, {0}, {1}, {2}), false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::vector<int64_t> encoded = EncodeMatmulPlan(*plan);
  auto back = DecodeMatmulPlan(encoded);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *plan);
  // Every field changed alone breaks a rule (or the tag / length).
  for (size_t i = 0; i + 2 < encoded.size(); ++i) {
    if (i == 4 || i == 24) continue;  // batch, workspace bytes: CheckMatmulBuffers' part
    std::vector<int64_t> broken = encoded;
    broken[i] = broken[i] * 3 + 1000;
    EXPECT_FALSE(DecodeMatmulPlan(broken).ok()) << "field " << i;
  }
  std::vector<int64_t> shorter(encoded.begin(), encoded.end() - 1);
  EXPECT_FALSE(DecodeMatmulPlan(shorter).ok());
}

TEST(CublasLtPlanTest, BuffersAreCheckedAgainstThePlan) {
  // bf16 [2, 4, 3] x [2, 5, 4] -> [2, 3, 5].
  auto plan = PlanCublasLtMatmul(Problem(DType::kBF16, {2, 4, 3}, {2, 5, 4}, {0}, {0}, {1}, {2}), false);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(CheckMatmulBuffers(*plan, 2 * 4 * 3 * 2, 2 * 5 * 4 * 2, 2 * 3 * 5 * 2).ok());
  auto bad = CheckMatmulBuffers(*plan, 2 * 4 * 3 * 2, 2 * 5 * 4 * 2, 2 * 3 * 5 * 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("result buffer holds 120 bytes"), std::string::npos) << bad.message();
  CublasLtMatmulPlan more = *plan;
  more.batch = 3;
  EXPECT_FALSE(CheckMatmulBuffers(more, 2 * 4 * 3 * 2, 2 * 5 * 4 * 2, 2 * 3 * 5 * 2).ok());
}

}  // namespace
}  // namespace jitd::devices::cuda
