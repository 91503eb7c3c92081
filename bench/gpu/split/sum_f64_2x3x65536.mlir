func.func @main(%x: tensor<2x65536x3xf64>) -> tensor<3xf64> {
  %init = stablehlo.constant dense<1.000000e+00> : tensor<f64>
  %sq = stablehlo.multiply %x, %x : tensor<2x65536x3xf64>
  %0 = stablehlo.reduce(%sq init: %init) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x65536x3xf64>, tensor<f64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}
