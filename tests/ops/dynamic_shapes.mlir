// Shape-polymorphic programs (dynamism.md): `?` dimensions, bounds, and the
// dynamic ops with dynamic results, refined at compile time for the shapes
// that reach them (jit/passes/refine_shapes.h). Conformance programs take no
// arguments, so @main casts its static constants to `?` types (a convert
// between compatible shapes) and calls the polymorphic functions, as
// jax.export's @main calls its wrapped function, and casts the results back
// to the static types its checks compare.

// dynamism.md's add_one_dynamic.
func.func private @add_one(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %2 = stablehlo.dynamic_broadcast_in_dim %cst, %1, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
  %3 = stablehlo.add %arg0, %2 : tensor<?xf32>
  return %3 : tensor<?xf32>
}

// jax.export's form of `sum(x @ w + 0.5, axis=0), (x @ w + 0.5) * iota`
// for x of shape (b, 4): the dimension variable b arrives as an argument,
// a shape assertion checks it.
func.func private @dense(%b: tensor<i64>, %x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>) {
  %c = stablehlo.constant dense<1> : tensor<i64>
  %ok = stablehlo.compare  GE, %b, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%ok, %b) {error_message = "Expected value >= 1 for dimension variable 'b', got {0}.", has_side_effect = true} : (tensor<i1>, tensor<i64>) -> ()
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  %half = stablehlo.constant dense<5.000000e-01> : tensor<f32>
  %1 = stablehlo.convert %b : (tensor<i64>) -> tensor<i32>
  %2 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %3 = stablehlo.concatenate %2, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %4 = stablehlo.dynamic_broadcast_in_dim %half, %3, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x3xf32>
  %5 = stablehlo.add %0, %4 : tensor<?x3xf32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %6 = stablehlo.reduce(%5 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
  %7 = stablehlo.dynamic_iota %3, dim = 0 : (tensor<2xi32>) -> tensor<?x3xf32>
  %8 = stablehlo.multiply %5, %7 : tensor<?x3xf32>
  return %6, %8 : tensor<3xf32>, tensor<?x3xf32>
}

// The other dynamic ops, their shape operands computed from `?` sizes.
func.func private @reshape_pad_slice_gather(%x: tensor<?x?xi32>) -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>) {
  %d0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x?xi32>) -> tensor<i32>
  %d1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<?x?xi32>) -> tensor<i32>
  %r0 = stablehlo.reshape %d0 : (tensor<i32>) -> tensor<1xi32>
  %r1 = stablehlo.reshape %d1 : (tensor<i32>) -> tensor<1xi32>
  %swapped = stablehlo.concatenate %r1, %r0, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %reshaped = stablehlo.dynamic_reshape %x, %swapped : (tensor<?x?xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<2xi32>
  %none = stablehlo.constant dense<0> : tensor<2xi32>
  %padded = stablehlo.dynamic_pad %x, %zero, %one, %none, %none : (tensor<?x?xi32>, tensor<i32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  %limit = stablehlo.concatenate %r0, %r1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %stride = stablehlo.constant dense<[2, 1]> : tensor<2xi32>
  %sliced = stablehlo.real_dynamic_slice %x, %none, %limit, %stride : (tensor<?x?xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  %idx = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi64>
  %c1 = stablehlo.constant dense<1> : tensor<1xi32>
  %sizes = stablehlo.concatenate %c1, %r1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %gathered = "stablehlo.dynamic_gather"(%x, %idx, %sizes) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false} : (tensor<?x?xi32>, tensor<2x1xi64>, tensor<2xi32>) -> tensor<?x?xi32>
  return %reshaped, %padded, %sliced, %gathered : tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>
}

// shape_poly.md's `jnp.concatenate([x, x], axis=1)` for x: i32[a, b], whose
// result is i32[a, 2*b], then a reshape to (a*b, 2) whose shape is
// computed as jax computes one: products and a floor division (divide of
// non-negative sizes), folded at refinement.
func.func private @concat_reshape(%x: tensor<?x?xi32>) -> (tensor<?x?xi32>, tensor<?x2xi32>) {
  %c = stablehlo.concatenate %x, %x, dim = 1 : (tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<?x?xi32>
  %a = stablehlo.get_dimension_size %c, dim = 0 : (tensor<?x?xi32>) -> tensor<i32>
  %b2 = stablehlo.get_dimension_size %c, dim = 1 : (tensor<?x?xi32>) -> tensor<i32>
  %n = stablehlo.multiply %a, %b2 : tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %rows = stablehlo.divide %n, %two : tensor<i32>
  %r = stablehlo.reshape %rows : (tensor<i32>) -> tensor<1xi32>
  %c2 = stablehlo.constant dense<2> : tensor<1xi32>
  %shape = stablehlo.concatenate %r, %c2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %y = stablehlo.dynamic_reshape %c, %shape : (tensor<?x?xi32>, tensor<2xi32>) -> tensor<?x2xi32>
  return %c, %y : tensor<?x?xi32>, tensor<?x2xi32>
}

// A bounded dimension, and a loop carrying a `?` value.
func.func private @bounded_loop(%x: tensor<?x2xf32, #stablehlo.bounds<4, ?>>) -> tensor<?x2xf32, #stablehlo.bounds<4, ?>> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<?x2xf32, #stablehlo.bounds<4, ?>>
  cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %lt = stablehlo.compare  LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %w = stablehlo.add %v, %v : tensor<?x2xf32, #stablehlo.bounds<4, ?>>
    stablehlo.return %n, %w : tensor<i32>, tensor<?x2xf32, #stablehlo.bounds<4, ?>>
  }
  return %r#1 : tensor<?x2xf32, #stablehlo.bounds<4, ?>>
}

func.func @main() {
  %v = stablehlo.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
  %vd = stablehlo.convert %v : (tensor<3xf32>) -> tensor<?xf32>
  %a = call @add_one(%vd) : (tensor<?xf32>) -> tensor<?xf32>
  %as = stablehlo.convert %a : (tensor<?xf32>) -> tensor<3xf32>
  check.expect_eq_const %as, dense<[2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<3xf32>

  %x = stablehlo.constant dense<[[1.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 2.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<2x4xf32>
  %w = stablehlo.constant dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 1.000000e+00, 1.000000e+00], [5.000000e+00, 5.000000e+00, 5.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00]]> : tensor<4x3xf32>
  %xd = stablehlo.convert %x : (tensor<2x4xf32>) -> tensor<?x4xf32>
  %b0 = stablehlo.get_dimension_size %xd, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
  %b = stablehlo.convert %b0 : (tensor<i32>) -> tensor<i64>
  %s:2 = call @dense(%b, %xd, %w) : (tensor<i64>, tensor<?x4xf32>, tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>)
  // rows of x @ w + 0.5: [1.5, 3.5, 3.5] and [2.5, 2.5, 2.5]
  check.expect_eq_const %s#0, dense<[4.000000e+00, 6.000000e+00, 6.000000e+00]> : tensor<3xf32>
  %s1 = stablehlo.convert %s#1 : (tensor<?x3xf32>) -> tensor<2x3xf32>
  check.expect_eq_const %s1, dense<[[0.000000e+00, 0.000000e+00, 0.000000e+00], [2.500000e+00, 2.500000e+00, 2.500000e+00]]> : tensor<2x3xf32>

  %m = stablehlo.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  %md = stablehlo.convert %m : (tensor<3x2xi32>) -> tensor<?x?xi32>
  %g:4 = call @reshape_pad_slice_gather(%md) : (tensor<?x?xi32>) -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>)
  %g0 = stablehlo.convert %g#0 : (tensor<?x?xi32>) -> tensor<2x3xi32>
  check.expect_eq_const %g0, dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %g1 = stablehlo.convert %g#1 : (tensor<?x?xi32>) -> tensor<4x3xi32>
  check.expect_eq_const %g1, dense<[[0, 0, 0], [0, 1, 2], [0, 3, 4], [0, 5, 6]]> : tensor<4x3xi32>
  %g2 = stablehlo.convert %g#2 : (tensor<?x?xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %g2, dense<[[1, 2], [5, 6]]> : tensor<2x2xi32>
  %g3 = stablehlo.convert %g#3 : (tensor<?x?xi32>) -> tensor<2x2xi32>
  check.expect_eq_const %g3, dense<[[5, 6], [1, 2]]> : tensor<2x2xi32>

  %cr:2 = call @concat_reshape(%md) : (tensor<?x?xi32>) -> (tensor<?x?xi32>, tensor<?x2xi32>)
  %cr0 = stablehlo.convert %cr#0 : (tensor<?x?xi32>) -> tensor<3x4xi32>
  check.expect_eq_const %cr0, dense<[[1, 2, 1, 2], [3, 4, 3, 4], [5, 6, 5, 6]]> : tensor<3x4xi32>
  %cr1 = stablehlo.convert %cr#1 : (tensor<?x2xi32>) -> tensor<6x2xi32>
  check.expect_eq_const %cr1, dense<[[1, 2], [1, 2], [3, 4], [3, 4], [5, 6], [5, 6]]> : tensor<6x2xi32>

  %f = stablehlo.constant dense<[[1.000000e+00, -1.000000e+00], [5.000000e-01, 0.000000e+00]]> : tensor<2x2xf32>
  %fd = stablehlo.convert %f : (tensor<2x2xf32>) -> tensor<?x2xf32, #stablehlo.bounds<4, ?>>
  %l = call @bounded_loop(%fd) : (tensor<?x2xf32, #stablehlo.bounds<4, ?>>) -> tensor<?x2xf32, #stablehlo.bounds<4, ?>>
  %ls = stablehlo.convert %l : (tensor<?x2xf32, #stablehlo.bounds<4, ?>>) -> tensor<2x2xf32>
  check.expect_eq_const %ls, dense<[[8.000000e+00, -8.000000e+00], [4.000000e+00, 0.000000e+00]]> : tensor<2x2xf32>
  return
}
