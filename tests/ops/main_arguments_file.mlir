// @main takes arguments from the companion main_arguments_file.mlir.args.
func.func @main(%x: tensor<2x2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  check.expect_almost_eq_const %0, dense<[5.0, -1.5]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}
