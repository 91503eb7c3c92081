func.func @main(%x: tensor<40000x8xf32>, %y: tensor<40000x8xf32>) -> tensor<8xf32> {
  %init = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %s = stablehlo.subtract %x, %y : tensor<40000x8xf32>
  %0 = stablehlo.reduce(%s init: %init) applies stablehlo.minimum across dimensions = [0] : (tensor<40000x8xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
