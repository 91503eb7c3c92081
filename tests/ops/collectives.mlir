// Collectives on several processes, written for the StableHLO reference
// interpreter's multi-process driver (interpreter.run_parallel: a grid of
// functions, rows = replicas, columns = partitions; operands and results in
// process order (0, 0), (0, 1), ...). Covers the spec examples whose text
// has typos (corrected here) and the modes the examples miss: partitions,
// channel ids, use_global_device_ids, send / recv, infeed queues, probe.

// all_reduce's spec example, with %operand1 as its results say.
func.func @all_reduce(%operand0: tensor<4xi64>, %operand1: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %result:2 = "stablehlo.all_reduce"(%operand0, %operand1) ({
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%0) : (tensor<i64>) -> ()
  }) {
    replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
  } : (tensor<4xi64>, tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>)
  return %result#0, %result#1 : tensor<4xi64>, tensor<4xi64>
}
func.func @main() {
  %a0 = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %b0 = stablehlo.constant dense<[9, 10, 11, 12]> : tensor<4xi64>
  %a1 = stablehlo.constant dense<[5, 6, 7, 8]> : tensor<4xi64>
  %b1 = stablehlo.constant dense<[13, 14, 15, 16]> : tensor<4xi64>
  %r:4 = "interpreter.run_parallel"(%a0, %b0, %a1, %b1) {programs = [[@all_reduce], [@all_reduce]]} : (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>)
  check.expect_eq_const %r#0, dense<[6, 8, 10, 12]> : tensor<4xi64>
  check.expect_eq_const %r#1, dense<[22, 24, 26, 28]> : tensor<4xi64>
  check.expect_eq_const %r#2, dense<[6, 8, 10, 12]> : tensor<4xi64>
  check.expect_eq_const %r#3, dense<[22, 24, 26, 28]> : tensor<4xi64>
  return
}

// -----
// collective_broadcast's spec example (its `tensor1x2xi64>` corrected):
// group [[2, 1]] of 4 replicas; replicas 0 and 3 are in none and get zeros.
func.func @broadcast(%operand: tensor<1x2xi64>) -> tensor<1x2xi64> {
  %result = "stablehlo.collective_broadcast"(%operand) {
    replica_groups = dense<[[2, 1]]> : tensor<1x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>
  } : (tensor<1x2xi64>) -> tensor<1x2xi64>
  return %result : tensor<1x2xi64>
}
func.func @main() {
  %x0 = stablehlo.constant dense<[[1, 2]]> : tensor<1x2xi64>
  %x1 = stablehlo.constant dense<[[3, 4]]> : tensor<1x2xi64>
  %x2 = stablehlo.constant dense<[[5, 6]]> : tensor<1x2xi64>
  %x3 = stablehlo.constant dense<[[7, 8]]> : tensor<1x2xi64>
  %r:4 = "interpreter.run_parallel"(%x0, %x1, %x2, %x3) {programs = [[@broadcast], [@broadcast], [@broadcast], [@broadcast]]} : (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>) -> (tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>, tensor<1x2xi64>)
  check.expect_eq_const %r#0, dense<[[0, 0]]> : tensor<1x2xi64>
  check.expect_eq_const %r#1, dense<[[5, 6]]> : tensor<1x2xi64>
  check.expect_eq_const %r#2, dense<[[5, 6]]> : tensor<1x2xi64>
  check.expect_eq_const %r#3, dense<[[0, 0]]> : tensor<1x2xi64>
  return
}

// -----
// A 2 x 2 grid (processes (0,0) (0,1) (1,0) (1,1)), process (r, p)
// contributing 10 r + p + 1:
//  - channel_id 0: cross_replica, groups {(0,p), (1,p)};
//  - channel_id 1: cross_replica_and_partition, all four;
//  - channel_id 1 and use_global_device_ids: flattened ids [[0, 3], [1, 2]];
//  - all_gather over partitions (channel 2, replica_groups [[0]] of
//    cross_replica_and_partition: each replica's two partitions);
//  - replica_id and partition_id.
func.func @grid(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<4xi32>, tensor<ui32>, tensor<ui32>) {
  %cross_replica = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.add %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi32>) -> tensor<2xi32>
  %everyone = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.maximum %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2xi32>) -> tensor<2xi32>
  %flattened = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = stablehlo.multiply %a, %b : tensor<i32>
      stablehlo.return %s : tensor<i32>
  }) {replica_groups = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (tensor<2xi32>) -> tensor<2xi32>
  %gathered = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0], [1]]> : tensor<2x1xi64>, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>} : (tensor<2xi32>) -> tensor<4xi32>
  %r = stablehlo.replica_id : tensor<ui32>
  %p = stablehlo.partition_id : tensor<ui32>
  return %cross_replica, %everyone, %flattened, %gathered, %r, %p : tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<4xi32>, tensor<ui32>, tensor<ui32>
}
func.func @main() {
  %x00 = stablehlo.constant dense<[1, -1]> : tensor<2xi32>
  %x01 = stablehlo.constant dense<[2, -2]> : tensor<2xi32>
  %x10 = stablehlo.constant dense<[11, -11]> : tensor<2xi32>
  %x11 = stablehlo.constant dense<[12, -12]> : tensor<2xi32>
  %o:24 = "interpreter.run_parallel"(%x00, %x01, %x10, %x11) {programs = [[@grid, @grid], [@grid, @grid]]} : (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<4xi32>, tensor<ui32>, tensor<ui32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<4xi32>, tensor<ui32>, tensor<ui32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<4xi32>, tensor<ui32>, tensor<ui32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<4xi32>, tensor<ui32>, tensor<ui32>)
  // process (0, 0)
  check.expect_eq_const %o#0, dense<[12, -12]> : tensor<2xi32>
  check.expect_eq_const %o#1, dense<[12, -1]> : tensor<2xi32>
  check.expect_eq_const %o#2, dense<[12, 12]> : tensor<2xi32>
  check.expect_eq_const %o#3, dense<[1, -1, 2, -2]> : tensor<4xi32>
  check.expect_eq_const %o#4, dense<0> : tensor<ui32>
  check.expect_eq_const %o#5, dense<0> : tensor<ui32>
  // process (0, 1)
  check.expect_eq_const %o#6, dense<[14, -14]> : tensor<2xi32>
  check.expect_eq_const %o#7, dense<[12, -1]> : tensor<2xi32>
  check.expect_eq_const %o#8, dense<[22, 22]> : tensor<2xi32>
  check.expect_eq_const %o#9, dense<[1, -1, 2, -2]> : tensor<4xi32>
  check.expect_eq_const %o#10, dense<0> : tensor<ui32>
  check.expect_eq_const %o#11, dense<1> : tensor<ui32>
  // process (1, 0)
  check.expect_eq_const %o#12, dense<[12, -12]> : tensor<2xi32>
  check.expect_eq_const %o#14, dense<[22, 22]> : tensor<2xi32>
  check.expect_eq_const %o#15, dense<[11, -11, 12, -12]> : tensor<4xi32>
  check.expect_eq_const %o#16, dense<1> : tensor<ui32>
  check.expect_eq_const %o#17, dense<0> : tensor<ui32>
  // process (1, 1)
  check.expect_eq_const %o#18, dense<[14, -14]> : tensor<2xi32>
  check.expect_eq_const %o#19, dense<[12, -1]> : tensor<2xi32>
  check.expect_eq_const %o#20, dense<[12, 12]> : tensor<2xi32>
  check.expect_eq_const %o#21, dense<[11, -11, 12, -12]> : tensor<4xi32>
  check.expect_eq_const %o#23, dense<1> : tensor<ui32>
  return
}

// -----
// Across partitions (channel_id > 0): all_to_all and collective_permute
// over 1 replica x 3 partitions; reduce_scatter of f32 over 3 replicas
// with a subtract body (not associative: the left fold in group order
// [2, 0, 1] is visible).
func.func @partitions(%x: tensor<3x2xf32>) -> (tensor<1x6xf32>, tensor<3x2xf32>) {
  %t = "stablehlo.all_to_all"(%x) {split_dimension = 0 : i64, concat_dimension = 1 : i64, split_count = 3 : i64,
    replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>, channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>} : (tensor<3x2xf32>) -> tensor<1x6xf32>
  %p = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 2], [2, 1]]> : tensor<2x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 8, type = 1>} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %t, %p : tensor<1x6xf32>, tensor<3x2xf32>
}
func.func @replicas(%x: tensor<3xf32>) -> tensor<1xf32> {
  %r = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.subtract %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {scatter_dimension = 0 : i64, replica_groups = dense<[[2, 0, 1]]> : tensor<1x3xi64>} : (tensor<3xf32>) -> tensor<1xf32>
  return %r : tensor<1xf32>
}
func.func @main() {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %b = stablehlo.constant dense<[[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]]> : tensor<3x2xf32>
  %c = stablehlo.constant dense<[[100.0, 200.0], [300.0, 400.0], [500.0, 600.0]]> : tensor<3x2xf32>
  %o:6 = "interpreter.run_parallel"(%a, %b, %c) {programs = [[@partitions, @partitions, @partitions]]} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> (tensor<1x6xf32>, tensor<3x2xf32>, tensor<1x6xf32>, tensor<3x2xf32>, tensor<1x6xf32>, tensor<3x2xf32>)
  check.expect_eq_const %o#0, dense<[[1.0, 2.0, 10.0, 20.0, 100.0, 200.0]]> : tensor<1x6xf32>
  check.expect_eq_const %o#2, dense<[[3.0, 4.0, 30.0, 40.0, 300.0, 400.0]]> : tensor<1x6xf32>
  check.expect_eq_const %o#4, dense<[[5.0, 6.0, 50.0, 60.0, 500.0, 600.0]]> : tensor<1x6xf32>
  check.expect_eq_const %o#1, dense<0.0> : tensor<3x2xf32>
  check.expect_eq_const %o#3, dense<[[100.0, 200.0], [300.0, 400.0], [500.0, 600.0]]> : tensor<3x2xf32>
  check.expect_eq_const %o#5, dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %x0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %x1 = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %x2 = stablehlo.constant dense<[100.0, 200.0, 300.0]> : tensor<3xf32>
  %s:3 = "interpreter.run_parallel"(%x0, %x1, %x2) {programs = [[@replicas], [@replicas], [@replicas]]} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>)
  // Element k: x2[k] - x0[k] - x1[k]; replica i of group [2, 0, 1] gets
  // part i of its position: replica 2 part 0, replica 0 part 1, replica 1 part 2.
  check.expect_eq_const %s#2, dense<[89.0]> : tensor<1xf32>
  check.expect_eq_const %s#0, dense<[178.0]> : tensor<1xf32>
  check.expect_eq_const %s#1, dense<[267.0]> : tensor<1xf32>
  return
}

// -----
// send / recv between different programs (MPMD): replica 0 sends on a
// channel with source_target_pairs, replica 1 receives, probes and sends
// back on another channel without pairs (the reference interpreter's
// channel queue, is_host_transfer).
func.func @sender(%x: tensor<2xi64>, %t: !stablehlo.token) -> tensor<2xi64> {
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
    is_host_transfer = false, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
  %v, %t2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 2, type = 3>,
    is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  return %v : tensor<2xi64>
}
func.func @receiver(%x: tensor<2xi64>, %t: !stablehlo.token) -> tensor<2xi64> {
  %v, %t2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
    is_host_transfer = false, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  %w = interpreter.probe %v, probe_id = "received" : tensor<2xi64>
  %y = stablehlo.add %w, %x : tensor<2xi64>
  %s = "stablehlo.send"(%y, %t2) {channel_handle = #stablehlo.channel_handle<handle = 2, type = 2>,
    is_host_transfer = true} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
  return %v : tensor<2xi64>
}
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %b = stablehlo.constant dense<[100, 200]> : tensor<2xi64>
  %t = stablehlo.after_all : !stablehlo.token
  %o:2 = "interpreter.run_parallel"(%a, %t, %b, %t) {programs = [[@sender], [@receiver]]} : (tensor<2xi64>, !stablehlo.token, tensor<2xi64>, !stablehlo.token) -> (tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %o#0, dense<[101, 202]> : tensor<2xi64>
  check.expect_eq_const %o#1, dense<[1, 2]> : tensor<2xi64>
  return
}

// -----
// The run_parallel infeed queue: each infeed op takes the next function's
// values; both replicas read twice, then sum what they read.
func.func @queue0() -> tensor<2xi64> {
  %v = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  return %v : tensor<2xi64>
}
func.func @queue1() -> tensor<2xi64> {
  %v = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  return %v : tensor<2xi64>
}
func.func @reader(%t: !stablehlo.token) -> tensor<2xi64> {
  %a, %t1 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  %b, %t2 = "stablehlo.infeed"(%t1) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  %s = stablehlo.add %a, %b : tensor<2xi64>
  %r = "stablehlo.all_reduce"(%s) ({
    ^bb0(%x: tensor<i64>, %y: tensor<i64>):
      %z = stablehlo.add %x, %y : tensor<i64>
      stablehlo.return %z : tensor<i64>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}
func.func @main() {
  %t = stablehlo.after_all : !stablehlo.token
  %o:2 = "interpreter.run_parallel"(%t, %t) {infeed = [@queue0, @queue1, @queue0, @queue1], programs = [[@reader], [@reader]]} : (!stablehlo.token, !stablehlo.token) -> (tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %o#0, dense<[8, 12]> : tensor<2xi64>
  check.expect_eq_const %o#1, dense<[8, 12]> : tensor<2xi64>
  return
}

// -----
// A constant operand: folding at compile time (one process) would give the
// one-process value; it must run as every process.
func.func @process() -> tensor<2xi64> {
  %c = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r = "stablehlo.all_reduce"(%c) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2xi64>) -> tensor<2xi64>
  return %r : tensor<2xi64>
}
func.func @main() {
  %o:2 = "interpreter.run_parallel"() {programs = [[@process, @process]]} : () -> (tensor<2xi64>, tensor<2xi64>)
  check.expect_eq_const %o#0, dense<[2, 4]> : tensor<2xi64>
  check.expect_eq_const %o#1, dense<[2, 4]> : tensor<2xi64>
  return
}

// -----
// An all_reduce in a while loop: each iteration meets its own (3 rounds of
// x <- x0 + x1), and an all_gather after the loop.
func.func @loop(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<4xi64>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %three = stablehlo.constant dense<3> : tensor<i64>
  %r:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i64>, tensor<2xi64>
    cond {
      %c = stablehlo.compare LT, %i, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %s = "stablehlo.all_reduce"(%v) ({
        ^bb0(%a: tensor<i64>, %b: tensor<i64>):
          %t = stablehlo.add %a, %b : tensor<i64>
          stablehlo.return %t : tensor<i64>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<2xi64>
      %j = stablehlo.add %i, %one : tensor<i64>
      stablehlo.return %j, %s : tensor<i64>, tensor<2xi64>
    }
  %g = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>} : (tensor<2xi64>) -> tensor<4xi64>
  return %r#1, %g : tensor<2xi64>, tensor<4xi64>
}
func.func @main() {
  %a = stablehlo.constant dense<[1, 10]> : tensor<2xi64>
  %b = stablehlo.constant dense<[2, 20]> : tensor<2xi64>
  %o:4 = "interpreter.run_parallel"(%a, %b) {programs = [[@loop], [@loop]]} : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<4xi64>, tensor<2xi64>, tensor<4xi64>)
  check.expect_eq_const %o#0, dense<[12, 120]> : tensor<2xi64>
  check.expect_eq_const %o#1, dense<[2, 20, 1, 10]> : tensor<4xi64>
  check.expect_eq_const %o#2, dense<[12, 120]> : tensor<2xi64>
  check.expect_eq_const %o#3, dense<[2, 20, 1, 10]> : tensor<4xi64>
  return
}
