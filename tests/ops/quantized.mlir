// Quantized values: an op on them means dequantize -> op -> quantize
// (spec.md, "Quantization"), never the storage integers' own arithmetic.
// With zero point 10, adding the stored integers would give 24 for 1 + 1.
func.func @main() {
  %a = stablehlo.constant dense<[1.0, 2.0, -3.0]> : tensor<3xf32>
  %q = stablehlo.uniform_quantize %a : (tensor<3xf32>) -> tensor<3x!quant.uniform<i8:f32, 5.000000e-01:10>>
  %s = stablehlo.add %q, %q : tensor<3x!quant.uniform<i8:f32, 5.000000e-01:10>>
  %ds = stablehlo.uniform_dequantize %s : (tensor<3x!quant.uniform<i8:f32, 5.000000e-01:10>>) -> tensor<3xf32>
  check.expect_eq_const %ds, dense<[2.0, 4.0, -6.0]> : tensor<3xf32>
  %m = stablehlo.multiply %q, %q : tensor<3x!quant.uniform<i8:f32, 5.000000e-01:10>>
  %dm = stablehlo.uniform_dequantize %m : (tensor<3x!quant.uniform<i8:f32, 5.000000e-01:10>>) -> tensor<3xf32>
  check.expect_eq_const %dm, dense<[1.0, 4.0, 9.0]> : tensor<3xf32>
  return
}
