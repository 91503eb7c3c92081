// Collectives in a program run as one process (one replica, one
// partition): every group holds process 0 alone, so all_reduce, all_gather,
// all_to_all, reduce_scatter, collective_broadcast, collective_reduce and
// cross-replica-sum give back their operand, and collective_permute its
// operand when (0, 0) is a pair.
func.func @main() {
  %x = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %y = stablehlo.constant dense<[5.0, 6.0]> : tensor<2xf32>
  %ar:2 = "stablehlo.all_reduce"(%x, %x) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %s = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2x2xi64>, tensor<2x2xi64>) -> (tensor<2x2xi64>, tensor<2x2xi64>)
  check.expect_eq_const %ar#0, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  check.expect_eq_const %ar#1, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %ag = "stablehlo.all_gather"(%x) {all_gather_dim = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %ag, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %a2a = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %a2a, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %rs = "stablehlo.reduce_scatter"(%y) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {scatter_dimension = 0 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %rs, dense<[5.0, 6.0]> : tensor<2xf32>
  %cb = "stablehlo.collective_broadcast"(%y) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %cb, dense<[5.0, 6.0]> : tensor<2xf32>
  %cp = "stablehlo.collective_permute"(%y) {source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %cp, dense<[5.0, 6.0]> : tensor<2xf32>
  %crs = "stablehlo.cross-replica-sum"(%y) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %crs, dense<[5.0, 6.0]> : tensor<2xf32>
  %cr = "stablehlo.collective_reduce"(%x) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %s = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %cr, dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %rid = stablehlo.replica_id : tensor<ui32>
  check.expect_eq_const %rid, dense<0> : tensor<ui32>
  return
}
