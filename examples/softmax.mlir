// Softmax over the last axis of a 2x4 f32 tensor, as JAX exports
// `jax.nn.softmax(x, axis=-1)`: subtract the row maximum, exponentiate,
// divide by the row sum. @main feeds a constant input and checks the result
// (the conformance corpus's `check.expect_almost_eq` spelling), so the file
// is self-contained.
//
//   build/bin/jitd check examples/softmax.mlir
//   build/bin/jitd fmt examples/softmax.mlir

module @jit_softmax attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<2x4xf32> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [-2.000000e+00, 5.000000e-01, 0.000000e+00, 1.500000e+00]]> : tensor<2x4xf32>
    %cst_0 = stablehlo.constant dense<[[0.032058604, 0.087144315, 0.23688282, 0.6439143], [0.018626483, 0.22691701, 0.13763212, 0.6168244]]> : tensor<2x4xf32>
    %0 = call @softmax(%cst) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    stablehlo.custom_call @check.expect_almost_eq(%0, %cst_0) {has_side_effect = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> ()
    return %0 : tensor<2x4xf32>
  }
  func.func private @softmax(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
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
}
