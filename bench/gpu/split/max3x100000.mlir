func.func @main(%x: tensor<3x100000xf32>) -> tensor<3xf32> {
  %init = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.maximum across dimensions = [1] : (tensor<3x100000xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
