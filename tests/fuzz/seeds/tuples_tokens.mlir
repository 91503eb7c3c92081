// Hand-written fuzz seed: tuples, tokens, infeed/outfeed, after_all.
func.func @main(%arg0: tensor<f32>, %arg1: tensor<2xi32>) -> tuple<tensor<f32>, tuple<tensor<2xi32>>> {
  %0 = "stablehlo.tuple"(%arg1) : (tensor<2xi32>) -> tuple<tensor<2xi32>>
  %1 = "stablehlo.tuple"(%arg0, %0) : (tensor<f32>, tuple<tensor<2xi32>>) -> tuple<tensor<f32>, tuple<tensor<2xi32>>>
  %2 = "stablehlo.get_tuple_element"(%1) <{index = 0 : i32}> : (tuple<tensor<f32>, tuple<tensor<2xi32>>>) -> tensor<f32>
  %3 = "stablehlo.create_token"() : () -> !stablehlo.token
  %4 = "stablehlo.after_all"(%3, %3) : (!stablehlo.token, !stablehlo.token) -> !stablehlo.token
  %5:2 = "stablehlo.infeed"(%4) <{infeed_config = "", layout = [[0]]}> : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %6 = "stablehlo.outfeed"(%2, %5#1) <{outfeed_config = ""}> : (tensor<f32>, !stablehlo.token) -> !stablehlo.token
  %7 = "stablehlo.replica_id"() : () -> tensor<ui32>
  %8 = "stablehlo.partition_id"() : () -> tensor<ui32>
  %9:2 = "stablehlo.optimization_barrier"(%arg0, %arg1) : (tensor<f32>, tensor<2xi32>) -> (tensor<f32>, tensor<2xi32>)
  return %1 : tuple<tensor<f32>, tuple<tensor<2xi32>>>
}
