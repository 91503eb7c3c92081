// async_start / async_done (!stablehlo.future values): spec.md's all_gather
// example with values, on 4 replicas; futures of several values; a future
// awaited twice and inside a region; async ops in a loop; every op (C2)
// allows in the body: collectives on several processes, slices on one; a
// per-tensor quantized future.

// spec.md's example shape, smaller: groups {0, 2} and {1, 3} of 4 replicas.
func.func @gather(%arg0: tensor<2x2xf32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.async_start"(%arg0) ({
    %1 = "stablehlo.all_gather"(%arg0) {
      all_gather_dim = 1 : i64,
      replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>
    } : (tensor<2x2xf32>) -> tensor<2x4xf32>
    "stablehlo.return"(%1) : (tensor<2x4xf32>) -> ()
  }) : (tensor<2x2xf32>) -> !stablehlo.future<tensor<2x4xf32>>
  %2 = "stablehlo.async_done"(%0) : (!stablehlo.future<tensor<2x4xf32>>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
func.func @main() {
  %a0 = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a1 = stablehlo.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %a2 = stablehlo.constant dense<[[9.0, 10.0], [11.0, 12.0]]> : tensor<2x2xf32>
  %a3 = stablehlo.constant dense<[[13.0, 14.0], [15.0, 16.0]]> : tensor<2x2xf32>
  %r:4 = "interpreter.run_parallel"(%a0, %a1, %a2, %a3) {programs = [[@gather], [@gather], [@gather], [@gather]]} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  check.expect_eq_const %r#0, dense<[[1.0, 2.0, 9.0, 10.0], [3.0, 4.0, 11.0, 12.0]]> : tensor<2x4xf32>
  check.expect_eq_const %r#1, dense<[[5.0, 6.0, 13.0, 14.0], [7.0, 8.0, 15.0, 16.0]]> : tensor<2x4xf32>
  check.expect_eq_const %r#2, dense<[[1.0, 2.0, 9.0, 10.0], [3.0, 4.0, 11.0, 12.0]]> : tensor<2x4xf32>
  check.expect_eq_const %r#3, dense<[[5.0, 6.0, 13.0, 14.0], [7.0, 8.0, 15.0, 16.0]]> : tensor<2x4xf32>
  return
}

// -----
// A future of two values (all_reduce of two operands, its reducer region
// inside the body), awaited twice; collective_permute through block
// arguments; on 2 replicas.
func.func @reduce_permute(%a: tensor<2xi64>, %b: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {
  %f = "stablehlo.async_start"(%a, %b) ({
    %s:2 = "stablehlo.all_reduce"(%a, %b) ({
      ^bb0(%x: tensor<i64>, %y: tensor<i64>):
        %m = stablehlo.maximum %x, %y : tensor<i64>
        stablehlo.return %m : tensor<i64>
    }) {
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
    "stablehlo.return"(%s#0, %s#1) : (tensor<2xi64>, tensor<2xi64>) -> ()
  }) : (tensor<2xi64>, tensor<2xi64>) -> !stablehlo.future<tensor<2xi64>, tensor<2xi64>>
  %p = "stablehlo.async_start"(%a) ({
  ^bb0(%x: tensor<2xi64>):
    %q = "stablehlo.collective_permute"(%x) {
      source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>
    } : (tensor<2xi64>) -> tensor<2xi64>
    "stablehlo.return"(%q) : (tensor<2xi64>) -> ()
  }) : (tensor<2xi64>) -> !stablehlo.future<tensor<2xi64>>
  %d:2 = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xi64>, tensor<2xi64>>) -> (tensor<2xi64>, tensor<2xi64>)
  %e:2 = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xi64>, tensor<2xi64>>) -> (tensor<2xi64>, tensor<2xi64>)
  %sum = stablehlo.add %d#1, %e#1 : tensor<2xi64>
  %perm = "stablehlo.async_done"(%p) : (!stablehlo.future<tensor<2xi64>>) -> tensor<2xi64>
  return %d#0, %sum, %perm : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
}
func.func @main() {
  %a0 = stablehlo.constant dense<[1, 20]> : tensor<2xi64>
  %b0 = stablehlo.constant dense<[-5, 7]> : tensor<2xi64>
  %a1 = stablehlo.constant dense<[10, 2]> : tensor<2xi64>
  %b1 = stablehlo.constant dense<[3, -8]> : tensor<2xi64>
  %r:6 = "interpreter.run_parallel"(%a0, %b0, %a1, %b1) {programs = [[@reduce_permute], [@reduce_permute]]} : (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %r#0, dense<[10, 20]> : tensor<2xi64>
  check.expect_eq_const %r#1, dense<[6, 14]> : tensor<2xi64>
  check.expect_eq_const %r#2, dense<[10, 2]> : tensor<2xi64>
  check.expect_eq_const %r#3, dense<[10, 20]> : tensor<2xi64>
  check.expect_eq_const %r#4, dense<[6, 14]> : tensor<2xi64>
  check.expect_eq_const %r#5, dense<[1, 20]> : tensor<2xi64>
  return
}

// -----
// The slices (C2) on one process: a future awaited inside an if branch, an
// async_start nothing waits on, dynamic_update_slice in a while loop.
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %i = stablehlo.constant dense<3> : tensor<i32>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 5>,
                                strides = array<i64: 2>} : (tensor<5xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<5xf32>) -> !stablehlo.future<tensor<2xf32>>
  %g = "stablehlo.async_start"(%a, %i) ({
    %s = "stablehlo.dynamic_slice"(%a, %i) {slice_sizes = array<i64: 2>} : (tensor<5xf32>, tensor<i32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<5xf32>, tensor<i32>) -> !stablehlo.future<tensor<2xf32>>
  %unwaited = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 0>, limit_indices = array<i64: 1>,
                                strides = array<i64: 1>} : (tensor<5xf32>) -> tensor<1xf32>
    "stablehlo.return"(%s) : (tensor<1xf32>) -> ()
  }) : (tensor<5xf32>) -> !stablehlo.future<tensor<1xf32>>
  %r = "stablehlo.if"(%t) ({
    %d = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
    stablehlo.return %d : tensor<2xf32>
  }, {
    %z = stablehlo.constant dense<0.0> : tensor<2xf32>
    stablehlo.return %z : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  %ds = "stablehlo.async_done"(%g) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %w:2 = stablehlo.while(%k = %zero, %x = %a) : tensor<i32>, tensor<5xf32>
  cond {
    %three = stablehlo.constant dense<3> : tensor<i32>
    %c = stablehlo.compare LT, %k, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %u = stablehlo.constant dense<[-1.0]> : tensor<1xf32>
    %h = "stablehlo.async_start"(%x, %u, %k) ({
    ^bb0(%xx: tensor<5xf32>, %uu: tensor<1xf32>, %kk: tensor<i32>):
      %s = "stablehlo.dynamic_update_slice"(%xx, %uu, %kk) : (tensor<5xf32>, tensor<1xf32>, tensor<i32>) -> tensor<5xf32>
      "stablehlo.return"(%s) : (tensor<5xf32>) -> ()
    }) : (tensor<5xf32>, tensor<1xf32>, tensor<i32>) -> !stablehlo.future<tensor<5xf32>>
    %y = "stablehlo.async_done"(%h) : (!stablehlo.future<tensor<5xf32>>) -> tensor<5xf32>
    %n = stablehlo.add %k, %one : tensor<i32>
    stablehlo.return %n, %y : tensor<i32>, tensor<5xf32>
  }
  check.expect_eq_const %r, dense<[2.0, 4.0]> : tensor<2xf32>
  check.expect_eq_const %ds, dense<[4.0, 5.0]> : tensor<2xf32>
  check.expect_eq_const %w#1, dense<[-1.0, -1.0, -1.0, 4.0, 5.0]> : tensor<5xf32>
  return
}

// -----
// A future of a per-tensor quantized value (I1): the slice keeps storage
// values and parameters.
func.func @main() {
  %c = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a = stablehlo.uniform_quantize %c : (tensor<2x2xf32>) -> tensor<2x2x!quant.uniform<i8:f32, 0.5:3>>
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1, 0>, limit_indices = array<i64: 2, 2>,
                                strides = array<i64: 1, 1>} : (tensor<2x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.5:3>>
    "stablehlo.return"(%s) : (tensor<1x2x!quant.uniform<i8:f32, 0.5:3>>) -> ()
  }) : (tensor<2x2x!quant.uniform<i8:f32, 0.5:3>>) -> !stablehlo.future<tensor<1x2x!quant.uniform<i8:f32, 0.5:3>>>
  %d = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<1x2x!quant.uniform<i8:f32, 0.5:3>>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.5:3>>
  %r = stablehlo.uniform_dequantize %d : (tensor<1x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x2xf32>
  check.expect_eq_const %r, dense<[[3.0, 4.0]]> : tensor<1x2xf32>
  return
}
