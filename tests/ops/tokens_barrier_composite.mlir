// optimization_barrier, create_token, after_all and composite in the form
// stablehlo-opt prints them.
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = stablehlo.constant dense<[4, 5]> : tensor<2xi32>
  %t0 = stablehlo.create_token : !stablehlo.token
  %t1 = stablehlo.after_all %t0, %t0 : !stablehlo.token
  %t2 = stablehlo.after_all : !stablehlo.token
  %r:3 = stablehlo.optimization_barrier %a, %b, %t1 : tensor<3xf32>, tensor<2xi32>, !stablehlo.token
  check.expect_eq_const %r#0, dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  check.expect_eq_const %r#1, dense<[4, 5]> : tensor<2xi32>
  %c = stablehlo.composite "jitd.square_plus" %r#0, %a {composite_attributes = {note = "x * x + y"}, decomposition = @square_plus, version = 2 : i32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  check.expect_eq_const %c, dense<[2.0, 6.0, 12.0]> : tensor<3xf32>
  return
}
func.func private @square_plus(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<3xf32>
  %1 = stablehlo.add %0, %y : tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// A composite whose decomposition returns two results and calls another
// function.
func.func @main() {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %r:2 = stablehlo.composite "jitd.sum_and_transpose" %a {decomposition = @sum_and_transpose} : (tensor<2x2xi64>) -> (tensor<i64>, tensor<2x2xi64>)
  check.expect_eq_const %r#0, dense<10> : tensor<i64>
  check.expect_eq_const %r#1, dense<[[1, 3], [2, 4]]> : tensor<2x2xi64>
  return
}
func.func private @sum_and_transpose(%x: tensor<2x2xi64>) -> (tensor<i64>, tensor<2x2xi64>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x2xi64>, tensor<i64>) -> tensor<i64>
  %t = call @transpose(%x) : (tensor<2x2xi64>) -> tensor<2x2xi64>
  return %s, %t : tensor<i64>, tensor<2x2xi64>
}
func.func private @transpose(%x: tensor<2x2xi64>) -> tensor<2x2xi64> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x2xi64>) -> tensor<2x2xi64>
  return %t : tensor<2x2xi64>
}
