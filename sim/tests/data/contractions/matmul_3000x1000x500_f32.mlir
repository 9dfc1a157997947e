module @jit_matmul_3000x1000x500_f32 {
  func.func public @main(%arg0: tensor<3000x1000xf32>, %arg1: tensor<1000x500xf32>) -> (tensor<3000x500xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3000x1000xf32>, tensor<1000x500xf32>) -> tensor<3000x500xf32>
    return %0 : tensor<3000x500xf32>
  }
}
