module @jit_lm_head_tied_128x768x50257_f32 {
  func.func public @main(%arg0: tensor<1x128x768xf32>, %arg1: tensor<50257x768xf32>) -> (tensor<1x128x50257xf32>) {
    %0 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<50257x768xf32>) -> tensor<768x50257xf32>
    %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x768xf32>, tensor<768x50257xf32>) -> tensor<1x128x50257xf32>
    return %1 : tensor<1x128x50257xf32>
  }
}
