// chlo.broadcast_* in stablehlo-opt's pretty form: numpy broadcasting
// (trailing dimensions aligned, size-1 dimensions stretched) and explicit
// broadcast_dimensions for the lower-ranked operand.
func.func @main() {
  %m = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %row = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %col = stablehlo.constant dense<[100.0, 200.0]> : tensor<2xf32>
  %add = chlo.broadcast_add %m, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  check.expect_eq_const %add, dense<[[11.0, 22.0, 33.0], [14.0, 25.0, 36.0]]> : tensor<2x3xf32>
  %sub = chlo.broadcast_subtract %m, %col {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  check.expect_eq_const %sub, dense<[[-99.0, -98.0, -97.0], [-196.0, -195.0, -194.0]]> : tensor<2x3xf32>
  %mul = chlo.broadcast_multiply %row, %m : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  check.expect_eq_const %mul, dense<[[10.0, 40.0, 90.0], [40.0, 100.0, 180.0]]> : tensor<2x3xf32>
  %div = chlo.broadcast_divide %m, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  check.expect_almost_eq_const %div, dense<[[0.1, 0.1, 0.1], [0.4, 0.25, 0.2]]> : tensor<2x3xf32>
  %max = chlo.broadcast_maximum %m, %col {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  check.expect_eq_const %max, dense<[[100.0, 100.0, 100.0], [200.0, 200.0, 200.0]]> : tensor<2x3xf32>
  %min = chlo.broadcast_minimum %m, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  check.expect_eq %min, %m : tensor<2x3xf32>
  %cmp = chlo.broadcast_compare %m, %row {comparison_direction = #chlo<comparison_direction GT>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  check.expect_eq_const %cmp, dense<false> : tensor<2x3xi1>
  %three = stablehlo.constant dense<3.0> : tensor<f32>
  %ge = chlo.broadcast_compare %m, %three {comparison_direction = #chlo<comparison_direction GE>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  check.expect_eq_const %ge, dense<[[false, false, true], [true, true, true]]> : tensor<2x3xi1>
  %sel = chlo.broadcast_select %ge, %m, %three : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  check.expect_eq_const %sel, dense<[[3.0, 3.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %pow = chlo.broadcast_power %m, %three : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  check.expect_almost_eq_const %pow, dense<[[1.0, 8.0, 27.0], [64.0, 125.0, 216.0]]> : tensor<2x3xf32>
  %rem = chlo.broadcast_remainder %m, %three : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  check.expect_eq_const %rem, dense<[[1.0, 2.0, 0.0], [1.0, 2.0, 0.0]]> : tensor<2x3xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %atan2 = chlo.broadcast_atan2 %one, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  check.expect_almost_eq_const %atan2, dense<0.785398185> : tensor<f32>
  %cplx = chlo.broadcast_complex %col, %one : (tensor<2xf32>, tensor<f32>) -> tensor<2xcomplex<f32>>
  check.expect_eq_const %cplx, dense<[(100.0, 1.0), (200.0, 1.0)]> : tensor<2xcomplex<f32>>
  %next = chlo.broadcast_next_after %one, %three : (tensor<f32>, tensor<f32>) -> tensor<f32>
  check.expect_eq_const %next, dense<1.00000012> : tensor<f32>
  return
}

// -----

// The integer and boolean chlo.broadcast_* ops.
func.func @main() {
  %m = stablehlo.constant dense<[[1, 2], [-8, 16]]> : tensor<2x2xi32>
  %s = stablehlo.constant dense<[[1, 2]]> : tensor<1x2xi32>
  %shl = chlo.broadcast_shift_left %m, %s : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %shl, dense<[[2, 8], [-16, 64]]> : tensor<2x2xi32>
  %sra = chlo.broadcast_shift_right_arithmetic %m, %s : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %sra, dense<[[0, 0], [-4, 4]]> : tensor<2x2xi32>
  %srl = chlo.broadcast_shift_right_logical %m, %s : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %srl, dense<[[0, 0], [2147483644, 4]]> : tensor<2x2xi32>
  %and = chlo.broadcast_and %m, %s : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %and, dense<[[1, 2], [0, 0]]> : tensor<2x2xi32>
  %or = chlo.broadcast_or %m, %s : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %or, dense<[[1, 2], [-7, 18]]> : tensor<2x2xi32>
  %xor = chlo.broadcast_xor %m, %s : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %xor, dense<[[0, 0], [-7, 18]]> : tensor<2x2xi32>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %b = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %band = chlo.broadcast_and %b, %t : (tensor<2xi1>, tensor<i1>) -> tensor<2xi1>
  check.expect_eq_const %band, dense<[true, false]> : tensor<2xi1>
  return
}

// -----

// polygamma and zeta, element-wise and broadcast: psi(1) = -euler_gamma,
// psi'(1) = zeta(2) = pi^2/6, psi''(1) = -2 zeta(3), zeta(2, 2) = pi^2/6 - 1.
func.func @main() {
  %n = stablehlo.constant dense<[0.0, 1.0, 2.0]> : tensor<3xf64>
  %one = stablehlo.constant dense<1.0> : tensor<f64>
  %ones = stablehlo.constant dense<1.0> : tensor<3xf64>
  %pg = chlo.polygamma %n, %ones : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  check.expect_almost_eq_const %pg, dense<[-0.57721566490153287, 1.6449340668482264, -2.4041138063191885]> : tensor<3xf64>
  %bpg = chlo.broadcast_polygamma %n, %one : (tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
  check.expect_almost_eq_const %bpg, dense<[-0.57721566490153287, 1.6449340668482264, -2.4041138063191885]> : tensor<3xf64>
  %s = stablehlo.constant dense<[2.0, 2.0, 3.0]> : tensor<3xf64>
  %q = stablehlo.constant dense<[1.0, 2.0, 1.0]> : tensor<3xf64>
  %z = chlo.zeta %s, %q : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  check.expect_almost_eq_const %z, dense<[1.6449340668482264, 0.64493406684822641, 1.2020569031595942]> : tensor<3xf64>
  %two = stablehlo.constant dense<2.0> : tensor<f64>
  %bz = chlo.broadcast_zeta %two, %q : (tensor<f64>, tensor<3xf64>) -> tensor<3xf64>
  check.expect_almost_eq_const %bz, dense<[1.6449340668482264, 0.64493406684822641, 1.6449340668482264]> : tensor<3xf64>
  return
}
