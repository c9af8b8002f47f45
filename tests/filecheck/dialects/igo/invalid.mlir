// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The verifier rejects a pair whose gradients do not share dY.
func.func @no_shared_dy(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += H[m,n] * X[m,k]" (%dy, %w, %x) order "interleave" : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}
// CHECK: invalid.mlir:5:3: error: 'igo.grad_pair' op the gradients do not share dY: dX reads G, W and dW reads H, X

// -----

func.func @bad_order(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "zigzag" : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}
// CHECK: invalid.mlir:13:3: error: 'igo.grad_pair' op unknown order 'zigzag' (known: sequential, interleave, dx-major, dw-major, dx-major-dw-first, dw-major-dw-first)

// -----

func.func @not_a_contraction(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] + W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "interleave" : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}
// CHECK: invalid.mlir:21:3: error: 'igo.grad_pair' op the dX expression 'DX[m,k] += G[m,n] + W[k,n]' is not a contraction of two tensors (+= A * B)

// -----

func.func @wrong_shape(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x7xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "interleave" : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x7xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x7xf32>, tensor<6x5xf32>
}
// CHECK: invalid.mlir:29:3: error: 'igo.grad_pair' op the dX expression 'DX[m,k] += G[m,n] * W[k,n]': W[...] reads axis 'k' over [0, 6] (DX (dim 1)) past the end of W (dim 0), which has size 6

// -----

func.func @bad_partition(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "interleave" {partition = "batch", parts = 2 : i64} : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}
// CHECK: invalid.mlir:37:3: error: 'igo.grad_pair' op partition must be one of weight-sharing, dy-sharing, ifmap-sharing, got "batch"
