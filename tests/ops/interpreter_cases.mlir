// The reference interpreter's test forms jitd conformance runs (issue 38):
// chlo.scan's `attributes {...}` keyword form, collective_broadcast over
// several operands (with and without has_dynamic_root), reduce_precision of
// f64 NaN / infinities, a module of test functions without @main,
// interpreter.probe with check.expect_serialized_eq, outfeed with no daemon.
// Values worked out by hand.

// Suffix sums: is_reverse scans from the end.
func.func @main() {
  %x = stablehlo.constant dense<[[1, 2, 3], [10, 20, 30]]> : tensor<2x3xi32>
  %init = stablehlo.constant dense<0> : tensor<2xi32>
  %0:2 = chlo.scan(%x) inits(%init) dimension=1 attributes {is_reverse = true} {
  ^bb0(%a: tensor<2xi32>, %c: tensor<2xi32>):
    %1 = stablehlo.add %a, %c : tensor<2xi32>
    stablehlo.return %1, %1 : tensor<2xi32>, tensor<2xi32>
  } : (tensor<2x3xi32>, tensor<2xi32>) -> (tensor<2x3xi32>, tensor<2xi32>)
  check.expect_eq_const %0#0, dense<[[6, 5, 3], [60, 50, 30]]> : tensor<2x3xi32>
  check.expect_eq_const %0#1, dense<[6, 60]> : tensor<2xi32>
  func.return
}

// -----

// has_dynamic_root over two data operands: roots [1, 0] take data0 from
// process 1 and data1 from process 0.
module {
  func.func @bcast(%d0: tensor<2xi64>, %d1: tensor<1x2xf32>, %root: tensor<2xi32>) -> (tensor<2xi64>, tensor<1x2xf32>) {
    %r:2 = "stablehlo.collective_broadcast"(%d0, %d1, %root) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, has_dynamic_root} : (tensor<2xi64>, tensor<1x2xf32>, tensor<2xi32>) -> (tensor<2xi64>, tensor<1x2xf32>)
    func.return %r#0, %r#1 : tensor<2xi64>, tensor<1x2xf32>
  }
  func.func @main() {
    %a0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %a1 = stablehlo.constant dense<[[0.5, 1.5]]> : tensor<1x2xf32>
    %b0 = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
    %b1 = stablehlo.constant dense<[[2.5, 3.5]]> : tensor<1x2xf32>
    %root = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
    %res:4 = "interpreter.run_parallel"(%a0, %a1, %root, %b0, %b1, %root) {programs = [[@bcast], [@bcast]]} : (tensor<2xi64>, tensor<1x2xf32>, tensor<2xi32>, tensor<2xi64>, tensor<1x2xf32>, tensor<2xi32>) -> (tensor<2xi64>, tensor<1x2xf32>, tensor<2xi64>, tensor<1x2xf32>)
    check.expect_eq_const %res#0, dense<[3, 4]> : tensor<2xi64>
    check.expect_eq_const %res#1, dense<[[0.5, 1.5]]> : tensor<1x2xf32>
    check.expect_eq_const %res#2, dense<[3, 4]> : tensor<2xi64>
    check.expect_eq_const %res#3, dense<[[0.5, 1.5]]> : tensor<1x2xf32>
    func.return
  }
}

// -----

// Two operands without a root: group [1, 0] broadcasts process 1's values;
// process 2 is in no group and gets zeros.
module {
  func.func @bcast(%d0: tensor<2xi32>, %d1: tensor<f64>) -> (tensor<2xi32>, tensor<f64>) {
    %r:2 = "stablehlo.collective_broadcast"(%d0, %d1) {replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>} : (tensor<2xi32>, tensor<f64>) -> (tensor<2xi32>, tensor<f64>)
    func.return %r#0, %r#1 : tensor<2xi32>, tensor<f64>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %b = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
    %c = stablehlo.constant dense<[5, 6]> : tensor<2xi32>
    %x = stablehlo.constant dense<1.0> : tensor<f64>
    %y = stablehlo.constant dense<2.0> : tensor<f64>
    %z = stablehlo.constant dense<3.0> : tensor<f64>
    %res:6 = "interpreter.run_parallel"(%a, %x, %b, %y, %c, %z) {programs = [[@bcast], [@bcast], [@bcast]]} : (tensor<2xi32>, tensor<f64>, tensor<2xi32>, tensor<f64>, tensor<2xi32>, tensor<f64>) -> (tensor<2xi32>, tensor<f64>, tensor<2xi32>, tensor<f64>, tensor<2xi32>, tensor<f64>)
    check.expect_eq_const %res#0, dense<[3, 4]> : tensor<2xi32>
    check.expect_eq_const %res#1, dense<2.0> : tensor<f64>
    check.expect_eq_const %res#2, dense<[3, 4]> : tensor<2xi32>
    check.expect_eq_const %res#3, dense<2.0> : tensor<f64>
    check.expect_eq_const %res#4, dense<0> : tensor<2xi32>
    check.expect_eq_const %res#5, dense<0.0> : tensor<f64>
    func.return
  }
}

// -----

// reduce_precision of f64 NaN and infinities: infinities stay, a NaN stays
// a NaN (its payload too) while a mantissa bit is left, 7e4 overflows
// half precision to infinity, -1e-300 underflows to -0, 1 + 2^-10 is kept
// (bit patterns compared: IEEE equality never holds for NaN).
func.func @main() {
  %x = stablehlo.constant dense<[0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF0000000000001, 7.0e+04, -1.0e-300, 1.0009765625]> : tensor<7xf64>
  %half = stablehlo.reduce_precision %x, format = e5m10 : tensor<7xf64>
  %single = stablehlo.reduce_precision %x, format = e8m23 : tensor<7xf64>
  %same = stablehlo.reduce_precision %x, format = e11m52 : tensor<7xf64>
  %bits_half = stablehlo.bitcast_convert %half : (tensor<7xf64>) -> tensor<7xui64>
  %bits_single = stablehlo.bitcast_convert %single : (tensor<7xf64>) -> tensor<7xui64>
  %bits_same = stablehlo.bitcast_convert %same : (tensor<7xf64>) -> tensor<7xui64>
  check.expect_eq_const %bits_half, dense<[9218868437227405312, 18442240474082181120, 9221120237041090560, 18442240474082181121, 9218868437227405312, 9223372036854775808, 4607186816846528512]> : tensor<7xui64>
  check.expect_eq_const %bits_single, dense<[9218868437227405312, 18442240474082181120, 9221120237041090560, 18442240474082181121, 4679546776582094848, 9223372036854775808, 4607186816846528512]> : tensor<7xui64>
  check.expect_eq_const %bits_same, dense<[9218868437227405312, 18442240474082181120, 9221120237041090560, 18442240474082181121, 4679546776582094848, 9341994084744098649, 4607186816846528512]> : tensor<7xui64>
  func.return
}

// -----

// No @main: each public function is a test of its own.
func.func @solve_lower() {
  %a = stablehlo.constant dense<[[2.0, 0.0], [1.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[2.0], [9.0]]> : tensor<2x1xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  check.expect_almost_eq_const %r, dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  func.return
}
func.func @solve_upper_right() {
  %a = stablehlo.constant dense<[[2.0, 2.0], [0.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[2.0, 10.0]]> : tensor<1x2xf32>
  %r = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<2x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  check.expect_almost_eq_const %r, dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  func.return
}

// -----

// interpreter.probe reports each value it passes on; expect_serialized_eq
// compares a value with the iter-th one (a loop probes three times).
func.func @main() {
  %x = stablehlo.constant dense<[(1.0, -2.0), (0.5, 0.25)]> : tensor<2xcomplex<f32>>
  %y = stablehlo.add %x, %x : tensor<2xcomplex<f32>>
  %p = interpreter.probe %y, probe_id = "sum" : tensor<2xcomplex<f32>>
  %b = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %q = interpreter.probe %b, probe_id = "flags" : tensor<2xi1>
  %zero = stablehlo.constant dense<0> : tensor<ui16>
  %one = stablehlo.constant dense<1> : tensor<ui16>
  %three = stablehlo.constant dense<3> : tensor<ui16>
  %r:2 = stablehlo.while(%i = %zero, %acc = %zero) : tensor<ui16>, tensor<ui16>
  cond {
    %c = stablehlo.compare LT, %i, %three : (tensor<ui16>, tensor<ui16>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %n = stablehlo.add %i, %one : tensor<ui16>
    %s = stablehlo.add %acc, %n : tensor<ui16>
    %seen = interpreter.probe %s, probe_id = "running_sum" : tensor<ui16>
    stablehlo.return %n, %seen : tensor<ui16>, tensor<ui16>
  }
  %want0 = stablehlo.constant dense<1> : tensor<ui16>
  %want2 = stablehlo.constant dense<6> : tensor<ui16>
  check.expect_serialized_eq %p, probe_id = "sum" : tensor<2xcomplex<f32>>
  check.expect_serialized_eq %q, probe_id = "flags", iter = 0 : tensor<2xi1>
  check.expect_serialized_eq %want0, probe_id = "running_sum", iter = 0 : tensor<ui16>
  check.expect_serialized_eq %one, probe_id = "running_sum", iter = 0 : tensor<ui16>
  check.expect_serialized_eq %want2, probe_id = "running_sum", iter = 2 : tensor<ui16>
  check.expect_eq_const %r#1, dense<6> : tensor<ui16>
  func.return
}

// -----

// outfeed with no daemon behind it: the runner takes the values.
func.func @main() {
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %t = stablehlo.create_token : !stablehlo.token
  %t2 = "stablehlo.outfeed"(%x, %t) {outfeed_config = ""} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %y = stablehlo.multiply %x, %x : tensor<2xf32>
  check.expect_eq_const %y, dense<[1.0, 4.0]> : tensor<2xf32>
  func.return
}
