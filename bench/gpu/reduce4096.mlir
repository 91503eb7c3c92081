func.func @main(%x: tensor<4096x4096xf32>) -> tensor<4096xf32> {
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4096x4096xf32>, tensor<f32>) -> tensor<4096xf32>
  return %0 : tensor<4096xf32>
}
