// Hand-written fuzz seed: everything in MLIR's generic form.
"builtin.module"() <{sym_name = "generic"}> ({
  "func.func"() <{function_type = (tensor<2x4xf32>) -> tensor<2x4xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<2x4xf32>):
    %0 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %0) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %6 = "stablehlo.maximum"(%arg1, %arg2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x4xf32>
    %3 = "stablehlo.subtract"(%arg0, %2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %4 = "stablehlo.exponential"(%3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %5 = "stablehlo.compare"(%4, %4) <{comparison_direction = #stablehlo<comparison_direction EQ>, compare_type = #stablehlo<comparison_type FLOAT>}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    "func.return"(%4) : (tensor<2x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
