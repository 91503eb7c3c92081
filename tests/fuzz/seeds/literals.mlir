// Hand-written fuzz seed: dense<...> in its forms, special floats, every dtype.
module {
  func.func @main() -> tensor<2x2xcomplex<f32>> {
    %0 = stablehlo.constant dense<[[(1.000000e+00,-2.500000e+00), (0.000000e+00,0x7FC00000)], [(0x7F800000,0xFF800000), (-0.000000e+00,1.0E+10)]]> : tensor<2x2xcomplex<f32>>
    %1 = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<3xcomplex<f64>>
    %2 = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %3 = stablehlo.constant dense<"0x0000803F000000400000404000008040"> : tensor<4xf32>
    %4 = stablehlo.constant dense<0xFFC00000> : tensor<1000000x1000000xf32>
    %5 = stablehlo.constant dense<[-128, 127, 0]> : tensor<3xi8>
    %6 = stablehlo.constant dense<18446744073709551615> : tensor<ui64>
    %7 = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
    %8 = stablehlo.constant dense<[1.000000e+00, -1.100000e+00, 6.550400e+04]> : tensor<3xf16>
    %9 = stablehlo.constant dense<[1.000000e+00, 3.389530e+38]> : tensor<2xbf16>
    %10 = stablehlo.constant dense<> : tensor<0xf32>
    %11 = stablehlo.constant dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xui16>
    %12 = stablehlo.constant dense<0x7FF8000000000001> : tensor<f64>
    %13 = stablehlo.constant dense_resource<__elided__> : tensor<7x7x3x64xf32>
    %14 = stablehlo.constant dense<1.0e-45> : tensor<0x3xf32>
    %15 = stablehlo.iota dim = 1 : tensor<4x1000000xi32>
    return %0 : tensor<2x2xcomplex<f32>>
  }
}
