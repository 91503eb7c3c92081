// Integer dot_general and convolution with a wider result type (JAX's
// preferred_element_type): i8 x i8 -> i32 accumulates without wrapping.
func.func @main() {
  %a = stablehlo.constant dense<[[100, -128], [127, 3]]> : tensor<2x2xi8>
  %b = stablehlo.constant dense<[[100, 2], [127, -128]]> : tensor<2x2xi8>
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2xi8>, tensor<2x2xi8>) -> tensor<2x2xi32>
  check.expect_eq_const %d, dense<[[-6256, 16584], [13081, -130]]> : tensor<2x2xi32>
  %l = stablehlo.constant dense<[[[[100], [127], [-128]]]]> : tensor<1x1x3x1xi8>
  %k = stablehlo.constant dense<[[[[100]], [[127]]]]> : tensor<1x2x1x1xi8>
  %c = stablehlo.convolution(%l, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x3x1xi8>, tensor<1x2x1x1xi8>) -> tensor<1x1x2x1xi32>
  check.expect_eq_const %c, dense<[[[[26129], [-3556]]]]> : tensor<1x1x2x1xi32>
  %u = stablehlo.constant dense<[[200, 255]]> : tensor<1x2xui8>
  %v = stablehlo.constant dense<[[255], [255]]> : tensor<2x1xui8>
  %du = stablehlo.dot_general %u, %v, contracting_dims = [1] x [0] : (tensor<1x2xui8>, tensor<2x1xui8>) -> tensor<1x1xui32>
  check.expect_eq_const %du, dense<[[116025]]> : tensor<1x1xui32>
  %h = stablehlo.constant dense<[[1.0, 2.0]]> : tensor<1x2xbf16>
  %hb = stablehlo.constant dense<[[3.0], [4.0]]> : tensor<2x1xbf16>
  %dh = stablehlo.dot_general %h, %hb, contracting_dims = [1] x [0] : (tensor<1x2xbf16>, tensor<2x1xbf16>) -> tensor<1x1xf32>
  check.expect_eq_const %dh, dense<[[11.0]]> : tensor<1x1xf32>
  return
}
