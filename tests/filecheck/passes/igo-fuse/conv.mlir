// RUN: irc-opt %s -p 'igo-fuse{order=dx-major}' | filecheck %s

// A convolution's gradient pair, written by hand (dY an argument): dX, the transposed
// convolution reading W, and dW reading X, share dY. In the im2col view (§6.1) the
// forward GEMM is M = N·H·W = 9, K = C·R·S = 18, N = F = 3.
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %[[Y:.*]] = te.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]"
// CHECK-NEXT:    %[[DX:.*]], %[[DW:.*]] = igo.grad_pair dx "DX[n,c,h+r,w+s] += DY[n,f,h,w] * W[f,c,r,s]" dw "DW[f,c,r,s] += DY[n,f,h,w] * X[n,c,h+r,w+s]" (%dy, %w, %x) order "dx-major" {irc.gemm = "M=9 K=18 N=3", tiles = array<i64: 9, 18, 3>}
// CHECK-NEXT:    func.return %[[Y]], %[[DX]], %[[DW]]
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %dy: tensor<1x3x3x3xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) {
  %y = te.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %dx = te.op "DX[n,c,h+r,w+s] += DY[n,f,h,w] * W[f,c,r,s]" (%dy, %w) : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %dw = te.op "DW[f,c,r,s] += DY[n,f,h,w] * X[n,c,h+r,w+s]" (%dy, %x) : (tensor<1x3x3x3xf32>, tensor<1x2x5x5xf32>) -> tensor<3x2x3x3xf32>
  func.return %y, %dx, %dw : tensor<1x3x3x3xf32>, tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>
}

// Two gradients that read different dYs are no pair: both stay.
// CHECK-LABEL: func.func @different_dy
// CHECK-NOT:     igo.grad_pair
func.func @different_dy(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %dy1: tensor<4x5xf32>, %dy2: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x6xf32>, tensor<6x5xf32>) {
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %dx = te.op "DX[m,k] += G[m,n] * W[k,n]" (%dy1, %w) : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %dw = te.op "DW[k,n] += G[m,n] * X[m,k]" (%dy2, %x) : (tensor<4x5xf32>, tensor<4x6xf32>) -> tensor<6x5xf32>
  func.return %y, %dx, %dw : tensor<4x5xf32>, tensor<4x6xf32>, tensor<6x5xf32>
}
