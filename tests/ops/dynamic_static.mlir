// The dynamic ops (dynamism.md) with static result types: their shape
// operands are read when the op runs and must agree with the result type.
func.func @main() {
  %s1 = stablehlo.constant dense<[4]> : tensor<1xi64>
  %iota = stablehlo.dynamic_iota %s1, dim = 0 : (tensor<1xi64>) -> tensor<4xi32>
  check.expect_eq_const %iota, dense<[0, 1, 2, 3]> : tensor<4xi32>
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %s23 = stablehlo.constant dense<[2, 3]> : tensor<2xi32>
  %r = stablehlo.dynamic_reshape %x, %s23 : (tensor<6xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  check.expect_eq_const %r, dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %v = stablehlo.constant dense<[7, 8, 9]> : tensor<3xi64>
  %s33 = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %b = stablehlo.dynamic_broadcast_in_dim %v, %s33, dims = [1] : (tensor<3xi64>, tensor<2xi64>) -> tensor<2x3xi64>
  check.expect_eq_const %b, dense<[[7, 8, 9], [7, 8, 9]]> : tensor<2x3xi64>
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %lo = stablehlo.constant dense<[1]> : tensor<1xi64>
  %hi = stablehlo.constant dense<[0]> : tensor<1xi64>
  %in = stablehlo.constant dense<[1]> : tensor<1xi64>
  %p = stablehlo.dynamic_pad %v, %zero, %lo, %hi, %in : (tensor<3xi64>, tensor<i64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6xi64>
  check.expect_eq_const %p, dense<[0, 7, 0, 8, 0, 9]> : tensor<6xi64>
  %start = stablehlo.constant dense<[1]> : tensor<1xi32>
  %limit = stablehlo.constant dense<[6]> : tensor<1xi32>
  %stride = stablehlo.constant dense<[2]> : tensor<1xi32>
  %sl = stablehlo.real_dynamic_slice %x, %start, %limit, %stride : (tensor<6xf32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xf32>
  check.expect_eq_const %sl, dense<[2.0, 4.0, 6.0]> : tensor<3xf32>
  %m = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi32>
  %idx = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi32>
  %sizes = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %g = "stablehlo.dynamic_gather"(%m, %idx, %sizes) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>} : (tensor<3x3xi32>, tensor<2x1xi32>, tensor<2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %g, dense<[[7, 8], [1, 2]]> : tensor<2x2xi32>
  return
}

// -----

// dynamic_conv: a convolution whose padding is an operand.
func.func @main() {
  %lhs = stablehlo.constant dense<[[[[1.0], [2.0], [3.0]]]]> : tensor<1x1x3x1xf32>
  %rhs = stablehlo.constant dense<[[[[1.0]], [[10.0]]]]> : tensor<1x2x1x1xf32>
  %pad = stablehlo.constant dense<[[0, 0], [1, 1]]> : tensor<2x2xi32>
  %c = "stablehlo.dynamic_conv"(%lhs, %rhs, %pad) {dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, batch_group_count = 1 : i64} : (tensor<1x1x3x1xf32>, tensor<1x2x1x1xf32>, tensor<2x2xi32>) -> tensor<1x1x4x1xf32>
  check.expect_eq_const %c, dense<[[[[10.0], [21.0], [32.0], [3.0]]]]> : tensor<1x1x4x1xf32>
  return
}
