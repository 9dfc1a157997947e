module @jit_lm_head_128x768x32000_bf16 {
  func.func public @main(%arg0: tensor<128x768xbf16>, %arg1: tensor<768x32000xbf16>) -> (tensor<128x32000xbf16>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<128x768xbf16>, tensor<768x32000xbf16>) -> tensor<128x32000xbf16>
    return %0 : tensor<128x32000xbf16>
  }
}
