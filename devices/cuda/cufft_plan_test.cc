// cuFFT plan building offline: fft_type and shapes to transform kinds,
// extents, batch counts and element counts; normalization and input copies
// for inverse transforms; what the plan refuses; the encoded round trip.
#include "devices/cuda/cufft_plan.h"

#include <gtest/gtest.h>

#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

StatusOr<CufftPlan> PlanOf(const std::string& fft, const std::string& in, const std::string& out) {
  const std::string text = "func.func @main(%x: " + in + ") -> " + out + " {\n  %0 = stablehlo.fft %x, " + fft +
                           " : (" + in + ") -> " + out + "\n  return %0 : " + out + "\n}";
  auto module = frontend::ParseModule(text);
  if (!module.ok()) return module.status();
  return PlanCufft(*(*module)->EntryFunction()->entry()->ops().front());
}

TEST(CufftPlanTest, ThreeAxisIrfftIsOneC2RPlan) {
  // The corpus's fft_complex64_14_15_16_17: IRFFT over [15, 16, 32].
  auto plan = PlanOf("type = IRFFT, length = [15, 16, 32]", "tensor<14x15x16x17xcomplex<f32>>",
                     "tensor<14x15x16x32xf32>");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->kind, FftKind::kC2R);
  EXPECT_TRUE(plan->inverse);
  EXPECT_EQ(plan->n, (std::vector<int64_t>{15, 16, 32}));
  EXPECT_EQ(plan->batch, 14);
  EXPECT_EQ(plan->input_elements, 15 * 16 * 17);
  EXPECT_EQ(plan->output_elements, 15 * 16 * 32);
  EXPECT_TRUE(plan->normalize);
  EXPECT_TRUE(plan->copy_input);
  EXPECT_EQ(DescribeFftPlan(*plan), "cufft C2R inverse [15x16x32] x 14, normalized, input copied");
}

TEST(CufftPlanTest, EveryFftTypeMapsToItsKind) {
  auto fft = PlanOf("type = FFT, length = [8]", "tensor<3x8xcomplex<f32>>", "tensor<3x8xcomplex<f32>>");
  ASSERT_TRUE(fft.ok()) << fft.status().message();
  EXPECT_EQ(fft->kind, FftKind::kC2C);
  EXPECT_FALSE(fft->inverse);
  EXPECT_FALSE(fft->normalize);
  EXPECT_FALSE(fft->copy_input);
  auto ifft = PlanOf("type = IFFT, length = [4, 8]", "tensor<3x4x8xcomplex<f64>>", "tensor<3x4x8xcomplex<f64>>");
  ASSERT_TRUE(ifft.ok()) << ifft.status().message();
  EXPECT_EQ(ifft->kind, FftKind::kZ2Z);
  EXPECT_TRUE(ifft->inverse);
  EXPECT_TRUE(ifft->normalize);
  EXPECT_EQ(ifft->batch, 3);
  auto rfft = PlanOf("type = RFFT, length = [8]", "tensor<2x8xf64>", "tensor<2x5xcomplex<f64>>");
  ASSERT_TRUE(rfft.ok()) << rfft.status().message();
  EXPECT_EQ(rfft->kind, FftKind::kD2Z);
  EXPECT_EQ(rfft->input_elements, 8);
  EXPECT_EQ(rfft->output_elements, 5);
  auto rfft32 = PlanOf("type = RFFT, length = [9]", "tensor<9xf32>", "tensor<5xcomplex<f32>>");
  ASSERT_TRUE(rfft32.ok()) << rfft32.status().message();
  EXPECT_EQ(rfft32->kind, FftKind::kR2C);
  EXPECT_EQ(rfft32->batch, 1);
  auto irfft = PlanOf("type = IRFFT, length = [8]", "tensor<2x5xcomplex<f64>>", "tensor<2x8xf64>");
  ASSERT_TRUE(irfft.ok()) << irfft.status().message();
  EXPECT_EQ(irfft->kind, FftKind::kZ2D);
}

TEST(CufftPlanTest, RefusesEmptyTransformsAsNotFound) {
  auto empty = PlanOf("type = FFT, length = [8]", "tensor<0x8xcomplex<f32>>", "tensor<0x8xcomplex<f32>>");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound) << empty.status().message();
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
}

TEST(CufftPlanTest, EncodedPlanRoundTripsAndIsChecked) {
  auto plan = PlanOf("type = IRFFT, length = [15, 16, 32]", "tensor<14x15x16x17xcomplex<f32>>",
                     "tensor<14x15x16x32xf32>");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::vector<int64_t> encoded = EncodeFftPlan(*plan);
  auto back = DecodeFftPlan(encoded);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *plan);
  for (size_t i : {0, 1, 2, 4, 5, 8, 9}) {  // the batch (3) is CheckFftBuffers' part
    std::vector<int64_t> broken = encoded;
    broken[i] += 1000;
    EXPECT_FALSE(DecodeFftPlan(broken).ok()) << "field " << i;
  }
  std::vector<int64_t> zero_extent = encoded;
  zero_extent[9] = 0;
  EXPECT_FALSE(DecodeFftPlan(zero_extent).ok());
  // 14 x 15 x 16 x 17 complex<f32> in, 14 x 15 x 16 x 32 f32 out.
  EXPECT_TRUE(CheckFftBuffers(*plan, 14 * 15 * 16 * 17 * 8, 14 * 15 * 16 * 32 * 4).ok());
  auto bad = CheckFftBuffers(*plan, 14 * 15 * 16 * 17 * 4, 14 * 15 * 16 * 32 * 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("input buffer"), std::string::npos) << bad.message();
  EXPECT_FALSE(CheckFftBuffers(*plan, 14 * 15 * 16 * 17 * 8, 14 * 15 * 16 * 32 * 8).ok());
}

}  // namespace
}  // namespace jitd::devices::cuda
