// Hand-written fuzz seed: rarer ops in generic form, locations, check ops.
#loc1 = loc("model.py":10:4)
module @misc {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<3x3xf32>) -> tensor<2x3xf32> {
    %0 = "stablehlo.batch_norm_inference"(%arg0, %arg1, %arg1, %arg1, %arg1) <{epsilon = 1.000000e-05 : f32, feature_index = 1 : i64}> : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("bn")
    %1 = "stablehlo.cholesky"(%arg2) <{lower = true}> : (tensor<3x3xf32>) -> tensor<3x3xf32> loc(#loc1)
    %2 = "stablehlo.map"(%arg1, %arg1) <{dimensions = array<i64: 0>}> ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = stablehlo.add %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %c = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = "stablehlo.rng"(%cst, %cst_0, %c) <{rng_distribution = #stablehlo<rng_distribution UNIFORM>}> : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
    %4 = stablehlo.custom_call @my_target(%3) {api_version = 2 : i32, backend_config = "cfg", has_side_effect = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = chlo.erf_inv %4 : tensor<2x3xf32> -> tensor<2x3xf32>
    %6 = stablehlo.dot_general %5, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, HIGHEST] : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    check.expect_almost_eq %6, %6 : tensor<2x3xf32>
    check.expect_eq_const %c, dense<[2, 3]> : tensor<2xi64>
    "check.expect_close"(%6, %0) {max_ulp_difference = 3 : i64, min_ulp_difference = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
    return %6 : tensor<2x3xf32> loc(fused["a", "b"])
  } loc(unknown)
} loc(#loc1)
