module @jit_matmul_3000x1000x500_bf16 {
  func.func public @main(%arg0: tensor<3000x1000xbf16>, %arg1: tensor<1000x500xbf16>) -> (tensor<3000x500xbf16>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3000x1000xbf16>, tensor<1000x500xbf16>) -> tensor<3000x500xbf16>
    return %0 : tensor<3000x500xbf16>
  }
}
