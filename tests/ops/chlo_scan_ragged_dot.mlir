// chlo.scan (a running sum along dimension 0, forwards and in reverse, and
// a scan with two inputs and no carries) and chlo.ragged_dot in its three
// modes.
func.func @main() {
  %x = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<2xf32>
  %out, %carry = chlo.scan(%x) inits(%zero) dimension=0 {
  ^bb0(%e: tensor<2xf32>, %c: tensor<2xf32>):
    %s = stablehlo.add %c, %e : tensor<2xf32>
    stablehlo.return %s, %s : tensor<2xf32>, tensor<2xf32>
  } : (tensor<3x2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>)
  check.expect_eq_const %out, dense<[[1.0, 2.0], [4.0, 6.0], [9.0, 12.0]]> : tensor<3x2xf32>
  check.expect_eq_const %carry, dense<[9.0, 12.0]> : tensor<2xf32>
  %rout, %rcarry = chlo.scan(%x) inits(%zero) dimension=0 {
  ^bb0(%e: tensor<2xf32>, %c: tensor<2xf32>):
    %s = stablehlo.add %c, %e : tensor<2xf32>
    stablehlo.return %s, %s : tensor<2xf32>, tensor<2xf32>
  } {is_reverse = true} : (tensor<3x2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>)
  check.expect_eq_const %rout, dense<[[9.0, 12.0], [8.0, 10.0], [5.0, 6.0]]> : tensor<3x2xf32>
  check.expect_eq_const %rcarry, dense<[9.0, 12.0]> : tensor<2xf32>
  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %b = stablehlo.constant dense<[[10, 20, 30]]> : tensor<1x3xi32>
  %prod = chlo.scan(%a, %b) inits() dimension=1 {
  ^bb0(%col: tensor<2xi32>, %k: tensor<1xi32>):
    %kk = stablehlo.broadcast_in_dim %k, dims = [0] : (tensor<1xi32>) -> tensor<2xi32>
    %m = stablehlo.multiply %col, %kk : tensor<2xi32>
    stablehlo.return %m : tensor<2xi32>
  } : (tensor<2x3xi32>, tensor<1x3xi32>) -> tensor<2x3xi32>
  check.expect_eq_const %prod, dense<[[10, 40, 90], [40, 100, 180]]> : tensor<2x3xi32>
  return
}

// -----

func.func @main() {
  // Mode 1: rows [0, 1) use rhs group 0, rows [1, 3) group 1, row 3 none.
  %lhs = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %rhs = stablehlo.constant dense<[[[1.0], [0.0]], [[0.0], [1.0]]]> : tensor<2x2x1xf32>
  %sizes = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r1 = "chlo.ragged_dot"(%lhs, %rhs, %sizes) {ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>} : (tensor<4x2xf32>, tensor<2x2x1xf32>, tensor<2xi64>) -> tensor<4x1xf32>
  check.expect_eq_const %r1, dense<[[1.0], [4.0], [6.0], [0.0]]> : tensor<4x1xf32>
  // Mode 2: the contraction split into k = [0, 1) and [1, 4).
  %l2 = stablehlo.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8]]> : tensor<2x4xi32>
  %r2in = stablehlo.constant dense<1> : tensor<4x1xi32>
  %s2 = stablehlo.constant dense<[1, 3]> : tensor<2xi32>
  %r2 = "chlo.ragged_dot"(%l2, %r2in, %s2) {ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0], lhs_ragged_dimensions = [1], rhs_group_dimensions = []>} : (tensor<2x4xi32>, tensor<4x1xi32>, tensor<2xi32>) -> tensor<2x2x1xi32>
  check.expect_eq_const %r2, dense<[[[1], [5]], [[9], [21]]]> : tensor<2x2x1xi32>
  // Mode 3: ragged batch; batch 1 lies past the one group of size 1.
  %l3 = stablehlo.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf64>
  %r3in = stablehlo.constant dense<[[[1.0], [1.0]], [[2.0], [2.0]]]> : tensor<2x2x1xf64>
  %s3 = stablehlo.constant dense<[1]> : tensor<1xi64>
  %r3 = "chlo.ragged_dot"(%l3, %r3in, %s3) {ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1], lhs_ragged_dimensions = [0], rhs_group_dimensions = []>} : (tensor<2x1x2xf64>, tensor<2x2x1xf64>, tensor<1xi64>) -> tensor<2x1x1xf64>
  check.expect_eq_const %r3, dense<[[[3.0]], [[0.0]]]> : tensor<2x1x1xf64>
  return
}
