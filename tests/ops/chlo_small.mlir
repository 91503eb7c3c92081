// chlo.mulhi, chlo.constant, chlo.constant_like and chlo.top_k.
func.func @main() {
  %a = stablehlo.constant dense<[2147483647, -2147483648, 65536, -3]> : tensor<4xi32>
  %b = stablehlo.constant dense<[2147483647, 2, 65536, 5]> : tensor<4xi32>
  %hi = chlo.mulhi %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  check.expect_eq_const %hi, dense<[1073741823, -1, 1, -1]> : tensor<4xi32>
  %ua = stablehlo.constant dense<[255, 16, 200]> : tensor<3xui8>
  %uhi = chlo.mulhi %ua, %ua : tensor<3xui8>, tensor<3xui8> -> tensor<3xui8>
  check.expect_eq_const %uhi, dense<[254, 1, 156]> : tensor<3xui8>
  %la = stablehlo.constant dense<[9223372036854775807, -9223372036854775808]> : tensor<2xi64>
  %lhi = chlo.mulhi %la, %la : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  check.expect_eq_const %lhi, dense<[4611686018427387903, 4611686018427387904]> : tensor<2xi64>
  %c = chlo.constant dense<[1.5, -2.0]> : tensor<2xf32>
  check.expect_eq_const %c, dense<[1.5, -2.0]> : tensor<2xf32>
  %like = "chlo.constant_like"(%a) {value = 7 : i32} : (tensor<4xi32>) -> tensor<4xi32>
  check.expect_eq_const %like, dense<7> : tensor<4xi32>
  %flike = "chlo.constant_like"(%c) {value = 0.25 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %flike, dense<0.25> : tensor<2xf32>
  %x = stablehlo.constant dense<[[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]]> : tensor<2x5xf32>
  %v, %i = chlo.top_k(%x, k = 2) : tensor<2x5xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)
  check.expect_eq_const %v, dense<[[5.0, 4.0], [9.0, 6.0]]> : tensor<2x2xf32>
  check.expect_eq_const %i, dense<[[4, 2], [0, 2]]> : tensor<2x2xi32>
  return
}

// -----

// chlo._asin_acos_kernel: re w = re(sqrt(1 - z) sqrt(1 + z)), im w =
// |im asin(z)|.
func.func @main() {
  %z = stablehlo.constant dense<[(0.5, 0.0), (0.0, 1.0), (2.0, 0.0)]> : tensor<3xcomplex<f64>>
  %w = chlo._asin_acos_kernel %z : tensor<3xcomplex<f64>> -> tensor<3xcomplex<f64>>
  check.expect_almost_eq_const %w, dense<[(0.8660254037844386, 0.0), (1.4142135623730951, 0.88137358701954305), (0.0, 1.3169578969248166)]> : tensor<3xcomplex<f64>>
  %x = stablehlo.constant dense<[0.6, -0.8, 1.0]> : tensor<3xf32>
  %v = chlo._asin_acos_kernel %x : tensor<3xf32> -> tensor<3xf32>
  check.expect_almost_eq_const %v, dense<[0.8, 0.6, 0.0]> : tensor<3xf32>
  return
}
