// Quantized programs the cpu device lowers (jit/passes/lower_quantized.h)
// and the interpreter runs directly; both must give these bits. Expected
// values computed with numpy (float32) from real = scale * (storage -
// zero_point) and
// quantize = round_half_even(clamp(x / scale + zero_point)).

// Round half to even at ties, clamping to the storage range (full and
// narrowed), NaN to the zero point, u8 storage.
func.func @main() {
  %x = stablehlo.constant dense<[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300.0, -300.0, 0x7FC00000, 0x7F800000, 0xFF800000, 126.5]> : tensor<12xf32>
  %a = stablehlo.uniform_quantize %x : (tensor<12xf32>) -> tensor<12x!quant.uniform<i8:f32, 1.0>>
  %ai = stablehlo.bitcast_convert %a : (tensor<12x!quant.uniform<i8:f32, 1.0>>) -> tensor<12xi8>
  check.expect_eq_const %ai, dense<[0, 2, 2, 0, -2, -2, 127, -128, 0, 127, -128, 126]> : tensor<12xi8>
  %b = stablehlo.uniform_quantize %x : (tensor<12xf32>) -> tensor<12x!quant.uniform<i8<-100:100>:f32, 0.5:7>>
  %bi = stablehlo.bitcast_convert %b : (tensor<12x!quant.uniform<i8<-100:100>:f32, 0.5:7>>) -> tensor<12xi8>
  check.expect_eq_const %bi, dense<[8, 10, 12, 6, 4, 2, 100, -100, 7, 100, -100, 100]> : tensor<12xi8>
  %c = stablehlo.uniform_quantize %x : (tensor<12xf32>) -> tensor<12x!quant.uniform<u8:f32, 0.25:128>>
  %ci = stablehlo.bitcast_convert %c : (tensor<12x!quant.uniform<u8:f32, 0.25:128>>) -> tensor<12xui8>
  check.expect_eq_const %ci, dense<[130, 134, 138, 126, 122, 118, 255, 0, 128, 255, 0, 255]> : tensor<12xui8>
  %d = stablehlo.uniform_dequantize %c : (tensor<12x!quant.uniform<u8:f32, 0.25:128>>) -> tensor<12xf32>
  check.expect_eq_const %d, dense<[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 31.75, -32.0, 0.0, 31.75, -32.0, 31.75]> : tensor<12xf32>
  return
}

// -----

// Per-axis parameters: quantize, dequantize, requantize (the spec's
// example: [10, 10] with {0.1:-30, 0.5:-20} requantized to {0.1:-20,
// 0.2:0} gives [20, 75]), and an add of differently quantized operands.
func.func @main() {
  %q = stablehlo.constant dense<[10, 10]> : tensor<2x!quant.uniform<i8:f32:0, {0.1:-30, 0.5:-20}>>
  %r = stablehlo.uniform_quantize %q : (tensor<2x!quant.uniform<i8:f32:0, {0.1:-30, 0.5:-20}>>) -> tensor<2x!quant.uniform<i8:f32:0, {0.1:-20, 0.2:0}>>
  %ri = stablehlo.bitcast_convert %r : (tensor<2x!quant.uniform<i8:f32:0, {0.1:-20, 0.2:0}>>) -> tensor<2xi8>
  check.expect_eq_const %ri, dense<[20, 75]> : tensor<2xi8>
  %x = stablehlo.constant dense<[[1.0, -2.0, 3.0], [0.25, 0.5, -0.75]]> : tensor<2x3xf32>
  %p = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32:1, {0.5:2, 0.25:-4, 2.0:0}>>
  %pi = stablehlo.bitcast_convert %p : (tensor<2x3x!quant.uniform<i8:f32:1, {0.5:2, 0.25:-4, 2.0:0}>>) -> tensor<2x3xi8>
  check.expect_eq_const %pi, dense<[[4, -12, 2], [2, -2, 0]]> : tensor<2x3xi8>
  %pd = stablehlo.uniform_dequantize %p : (tensor<2x3x!quant.uniform<i8:f32:1, {0.5:2, 0.25:-4, 2.0:0}>>) -> tensor<2x3xf32>
  check.expect_eq_const %pd, dense<[[1.0, -2.0, 4.0], [0.0, 0.5, 0.0]]> : tensor<2x3xf32>
  %a = stablehlo.constant dense<[2, 4, -10, 127, 0]> : tensor<5x!quant.uniform<i8:f32, 0.5:-2>>
  %b = stablehlo.constant dense<[14, 10, 2, 127, 8]> : tensor<5x!quant.uniform<i8:f32, 0.25:10>>
  %s = stablehlo.add %a, %b : (tensor<5x!quant.uniform<i8:f32, 0.5:-2>>, tensor<5x!quant.uniform<i8:f32, 0.25:10>>) -> tensor<5x!quant.uniform<i8:f32, 0.1:5>>
  %si = stablehlo.bitcast_convert %s : (tensor<5x!quant.uniform<i8:f32, 0.1:5>>) -> tensor<5xi8>
  check.expect_eq_const %si, dense<[35, 35, -55, 127, 10]> : tensor<5xi8>
  return
}

// -----

// i8 x i8 dot_general into i32 with the product scale: exact integer sums
// (per-axis rhs and result), with zero points, and clamped to i8 storage.
func.func @main() {
  %a = stablehlo.constant dense<[[3, 5, -128], [127, -1, 9]]> : tensor<2x3x!quant.uniform<i8:f32, 0.5>>
  %b = stablehlo.constant dense<[[4, 2], [8, -6], [127, -128]]> : tensor<3x2x!quant.uniform<i8:f32:1, {0.25, 0.5}>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.25, 0.5}>>) -> tensor<2x2x!quant.uniform<i32:f32:1, {0.125, 0.25}>>
  %ri = stablehlo.bitcast_convert %r : (tensor<2x2x!quant.uniform<i32:f32:1, {0.125, 0.25}>>) -> tensor<2x2xi32>
  check.expect_eq_const %ri, dense<[[-16204, 16360], [1643, -892]]> : tensor<2x2xi32>
  %c = stablehlo.constant dense<[[1, 2, 3], [-4, 5, 6]]> : tensor<2x3x!quant.uniform<i8:f32, 0.5:3>>
  %d = stablehlo.constant dense<[[4, 2], [8, -6], [0, -2]]> : tensor<3x2x!quant.uniform<i8:f32, 0.5:-2>>
  %e = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 0.5:3>>, tensor<3x2x!quant.uniform<i8:f32, 0.5:-2>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.25:-1>>
  %ei = stablehlo.bitcast_convert %e : (tensor<2x2x!quant.uniform<i8:f32, 0.25:-1>>) -> tensor<2x2xi8>
  check.expect_eq_const %ei, dense<[[-23, -5], [-17, -37]]> : tensor<2x2xi8>
  return
}

// -----

// Convolution with a padded window in integers: the padding contributes
// nothing (it is the zero point's real value 0), per-axis kernel.
func.func @main() {
  %a = stablehlo.constant dense<[[[1, -2], [3, 127], [-128, 6], [0, 9]]]> : tensor<1x4x2x!quant.uniform<i8:f32, 0.5:2>>
  %b = stablehlo.constant dense<[[[4, -2, 1], [8, 3, -7]], [[1, 1, 1], [-128, 127, 0]]]> : tensor<2x2x3x!quant.uniform<i8:f32:2, {0.25, 0.5, 0.125}>>
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x2x!quant.uniform<i8:f32, 0.5:2>>, tensor<2x2x3x!quant.uniform<i8:f32:2, {0.25, 0.5, 0.125}>>) -> tensor<1x4x3x!quant.uniform<i32:f32:2, {0.125, 0.25, 0.0625}>>
  %ri = stablehlo.bitcast_convert %r : (tensor<1x4x3x!quant.uniform<i32:f32:2, {0.125, 0.25, 0.0625}>>) -> tensor<1x4x3xi32>
  check.expect_eq_const %ri, dense<[[[511, -509, -1], [-16035, 15866, 28], [362, 751, -1004], [-1386, 1159, -160]]]> : tensor<1x4x3xi32>
  return
}

// -----

// i32 storage: f32 rounds its limit 2^31 - 1 up to 2^31, which must still
// quantize to 2^31 - 1 (and -3e9 to -2^31); 2147483520 is the largest f32
// below 2^31.
func.func @main() {
  %x = stablehlo.constant dense<[3.0e9, -3.0e9, 2147483520.0, -2147483648.0, 1.5]> : tensor<5xf32>
  %q = stablehlo.uniform_quantize %x : (tensor<5xf32>) -> tensor<5x!quant.uniform<i32:f32, 1.0>>
  %qi = stablehlo.bitcast_convert %q : (tensor<5x!quant.uniform<i32:f32, 1.0>>) -> tensor<5xi32>
  check.expect_eq_const %qi, dense<[2147483647, -2147483648, 2147483520, -2147483648, 2]> : tensor<5xi32>
  return
}

// -----

// A symmetric (zero points 0) i8 convolution into i32: lowered to an
// i8 x i8 -> i32 convolution; the padding is storage 0 = real 0.
func.func @main() {
  %a = stablehlo.constant dense<[[[1, -2], [3, 127], [-128, 6], [0, 9], [-128, -128]]]> : tensor<1x5x2x!quant.uniform<i8:f32, 0.5>>
  %b = stablehlo.constant dense<[[[4, -2], [8, 3]], [[1, 1], [-128, 127]], [[-1, 0], [2, -3]]]> : tensor<3x2x2x!quant.uniform<i8:f32, 0.25>>
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x2x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x5x2x!quant.uniform<i32:f32, 0.125>>
  %ri = stablehlo.bitcast_convert %r : (tensor<1x5x2x!quant.uniform<i32:f32, 0.125>>) -> tensor<1x5x2xi32>
  check.expect_eq_const %ri, dense<[[[508, -634], [-16125, 16106], [150, 982], [-1744, 1801], [16328, -16357]]]> : tensor<1x5x2xi32>
  return
}

// -----

// Asymmetric lhs (zero point 10), symmetric per-axis rhs: the i8 product
// less 10 times the rhs column sums, plus the result's zero point 3.
func.func @main() {
  %a = stablehlo.constant dense<[[3, 5, -128, 7], [127, -1, 9, -100]]> : tensor<2x4x!quant.uniform<i8:f32, 0.5:10>>
  %b = stablehlo.constant dense<[[4, 2], [8, -6], [127, -128], [-5, 9]]> : tensor<4x2x!quant.uniform<i8:f32:1, {0.25, 0.5}>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x4x!quant.uniform<i8:f32, 0.5:10>>, tensor<4x2x!quant.uniform<i8:f32:1, {0.25, 0.5}>>) -> tensor<2x2x!quant.uniform<i32:f32:1, {0.125:3, 0.25:3}>>
  %ri = stablehlo.bitcast_convert %r : (tensor<2x2x!quant.uniform<i32:f32:1, {0.125:3, 0.25:3}>>) -> tensor<2x2xi32>
  check.expect_eq_const %ri, dense<[[-17576, 17656], [806, -559]]> : tensor<2x2xi32>
  return
}
