module @jit_lm_head_tied_embedded_128x768x50257_f32 {
  func.func public @main(%arg0: tensor<1x128xi32>, %arg1: tensor<50257x768xf32>, %arg2: tensor<1x128x768xf32>) -> (tensor<1x128x50257xf32>) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<1x128xi32>) -> tensor<1x128x1xi32>
    %1 = "stablehlo.gather"(%arg1, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 768>}> : (tensor<50257x768xf32>, tensor<1x128x1xi32>) -> tensor<1x128x768xf32>
    %2 = stablehlo.add %1, %arg2 : tensor<1x128x768xf32>
    %3 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<50257x768xf32>) -> tensor<768x50257xf32>
    %4 = stablehlo.dot_general %2, %3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1x128x768xf32>, tensor<768x50257xf32>) -> tensor<1x128x50257xf32>
    return %4 : tensor<1x128x50257xf32>
  }
}
