// RUN: stablehlo-translate %s --interpret --args="[dense<[1, -2, 3]> : tensor<3xi32>, dense<4> : tensor<i32>]"
// @main takes arguments: jitd conformance reads them from the RUN line's
// --args, as the reference interpreter does.
func.func @main(%x: tensor<3xi32>, %k: tensor<i32>) -> tensor<3xi32> {
  %kb = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<i32>) -> tensor<3xi32>
  %0 = stablehlo.multiply %x, %kb : tensor<3xi32>
  check.expect_eq_const %0, dense<[4, -8, 12]> : tensor<3xi32>
  return %0 : tensor<3xi32>
}
