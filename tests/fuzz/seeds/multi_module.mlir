// Hand-written fuzz seed: several modules split by `// -----`, bare funcs.
func.func @main(%arg0: tensor<2xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}"}) -> (tensor<2xf32> {jax.result_info = ""}) {
  %0 = func.call @helper(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.sqrt %arg0 : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

module @second attributes {mhlo.num_partitions = 1 : i32, mhlo.frontend_attributes = {a = "b\22\n", nested = {x = [1, 2.5, "s", unit, @sym]}}} {
  func.func public @main(%arg0: tensor<3xi32>) -> tensor<3xi32> {
    %0 = stablehlo.abs %arg0 : tensor<3xi32>
    return %0 : tensor<3xi32>
  }
}
// -----
module @third {
}
