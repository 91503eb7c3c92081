// Programs shared by the daemon, client and integration tests (tests only).
#ifndef JITD_DAEMON_TEST_PROGRAMS_H_
#define JITD_DAEMON_TEST_PROGRAMS_H_

namespace jitd::daemon::testing {

// Softmax over the last axis of a 2x4 f32 argument.
inline constexpr char kSoftmax[] = R"(
func.func public @main(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %2 = stablehlo.subtract %arg0, %1 : tensor<2x4xf32>
  %3 = stablehlo.exponential %2 : tensor<2x4xf32>
  %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %6 = stablehlo.divide %3, %5 : tensor<2x4xf32>
  return %6 : tensor<2x4xf32>
}
)";

inline constexpr float kSoftmaxInput[8] = {1, 2, 3, 4, -2, 0.5f, 0, 1.5f};

}  // namespace jitd::daemon::testing

#endif  // JITD_DAEMON_TEST_PROGRAMS_H_
