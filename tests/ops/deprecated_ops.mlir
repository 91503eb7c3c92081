// The deprecated ops spec.md still lists: einsum, unary_einsum,
// torch_index_select (and broadcast, dot, create_token, map, rng, tuple,
// get_tuple_element, which the corpus and the spec examples cover).
func.func @main() {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %mm = stablehlo.einsum %a, %b, config = "ab,bc->ac" : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  check.expect_eq_const %mm, dense<[[19.0, 22.0], [43.0, 50.0]]> : tensor<2x2xf32>
  %i = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %j = stablehlo.constant dense<[[1, 1], [2, 2]]> : tensor<2x2xi32>
  %rows = stablehlo.einsum %i, %j, config = "ij,ij->i" : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2xi32>
  check.expect_eq_const %rows, dense<[3, 14]> : tensor<2xi32>
  %t = stablehlo.unary_einsum %i, config = "ab->ba" : (tensor<2x2xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %t, dense<[[1, 3], [2, 4]]> : tensor<2x2xi32>
  %s = stablehlo.unary_einsum %i, config = "ab->a" : (tensor<2x2xi32>) -> tensor<2xi32>
  check.expect_eq_const %s, dense<[3, 7]> : tensor<2xi32>
  %x = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]> : tensor<3x3xf32>
  %idx = stablehlo.constant dense<[2, 0]> : tensor<2xi32>
  %r0 = "stablehlo.torch_index_select"(%x, %idx) {dim = 0 : i64, batch_dims = 0 : i64} : (tensor<3x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  check.expect_eq_const %r0, dense<[[7.0, 8.0, 9.0], [1.0, 2.0, 3.0]]> : tensor<2x3xf32>
  %r1 = "stablehlo.torch_index_select"(%x, %idx) {dim = 1 : i64, batch_dims = 0 : i64} : (tensor<3x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  check.expect_eq_const %r1, dense<[[3.0, 1.0], [6.0, 4.0], [9.0, 7.0]]> : tensor<3x2xf32>
  %y = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %bidx = stablehlo.constant dense<[[0, 2], [1, 1]]> : tensor<2x2xi64>
  %rb = "stablehlo.torch_index_select"(%y, %bidx) {dim = 1 : i64, batch_dims = 1 : i64} : (tensor<2x3xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  check.expect_eq_const %rb, dense<[[1, 3], [5, 5]]> : tensor<2x2xi64>
  return
}
