func.func @main(%x: tensor<16777216xf32>, %y: tensor<16777216xf32>) -> tensor<16777216xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<16777216xf32>
  %1 = stablehlo.add %0, %x : tensor<16777216xf32>
  %2 = stablehlo.tanh %1 : tensor<16777216xf32>
  %3 = stablehlo.multiply %2, %y : tensor<16777216xf32>
  return %3 : tensor<16777216xf32>
}
