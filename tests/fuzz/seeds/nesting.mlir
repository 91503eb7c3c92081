func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.constant dense<[[[[[[[[[[[[[[[[1.0]]]]]]]]]]]]]]]]> : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>
  return %arg0 : tensor<2xf32>
}
