func.func @main(%x: tensor<1048576xi32>) -> tensor<i32> {
  %init = stablehlo.constant dense<7> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [0] : (tensor<1048576xi32>, tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
}
