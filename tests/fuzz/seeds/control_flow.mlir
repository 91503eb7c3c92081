// Hand-written fuzz seed: while (pretty), if and case (generic), %x:2 / %x#1.
module @control_flow {
  func.func public @main(%arg0: tensor<i64>, %arg1: tensor<4xf32>) -> (tensor<i64>, tensor<4xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %c_0 = stablehlo.constant dense<10> : tensor<i64>
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %arg1) : tensor<i64>, tensor<4xf32>
     cond {
      %1 = stablehlo.compare  LT, %iterArg, %c_0,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.add %iterArg, %c : tensor<i64>
      %2 = stablehlo.multiply %iterArg_1, %iterArg_1 : tensor<4xf32>
      stablehlo.return %1, %2 : tensor<i64>, tensor<4xf32>
    }
    %3 = stablehlo.compare  GT, %0#0, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %4 = "stablehlo.if"(%3) ({
      stablehlo.return %0#1 : tensor<4xf32>
    }, {
      %5 = stablehlo.negate %0#1 : tensor<4xf32>
      stablehlo.return %5 : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %6 = stablehlo.convert %0#0 : (tensor<i64>) -> tensor<i32>
    %7:2 = "stablehlo.case"(%6) ({
      stablehlo.return %0#0, %4 : tensor<i64>, tensor<4xf32>
    }, {
      stablehlo.return %c, %arg1 : tensor<i64>, tensor<4xf32>
    }) : (tensor<i32>) -> (tensor<i64>, tensor<4xf32>)
    return %7#0, %7#1 : tensor<i64>, tensor<4xf32>
  }
}
