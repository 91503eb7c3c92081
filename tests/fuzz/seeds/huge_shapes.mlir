// Hand-written fuzz seed: declared shapes beyond the limits must be refused
// with a message, never allocated.
func.func @main() -> tensor<1000000000x1000000000xf32> {
  %0 = stablehlo.constant dense<0.000000e+00> : tensor<1000000000x1000000000xf32>
  %1 = stablehlo.iota dim = 0 : tensor<4294967296x4294967296xi32>
  %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1000000000x1000000000xf32>) -> tensor<1000000000x1000000000x9223372036854775807xf32>
  return %0 : tensor<1000000000x1000000000xf32>
}
